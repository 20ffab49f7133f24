"""The emulated Micromodem's session side: clock, revision reports and reboots, transponder pings,
and the faults a test can ask for (part of `micromodem_model.MicromodemModel`). ROS-free.

- clock: `$CCTMS,YYYY-MM-DDTHH:MM:SSZ,mode` (anything else is refused with `$CAERR`); mode 0 sets
  the clock at the next top of a second and answers `$CATMS,0,<time>`, mode 1 waits for an
  external PPS that never comes and answers `$CATMS,1,<time>` after 3 s; `$CCTMQ` -> `$CATMQ` with
  the emulated clock;
- `reboot()`: the transmission in flight is lost, configuration back to its start-up values
  (`reset_config`), clock unset; `$CAREV,HHMMSS,INIT,<fw>` then `$CAREV,HHMMSS,AUV,<fw>`;
- `$CCPDT` -> `$SNTTA` with the travel times of `transponders` ({"A": s, ...}) that are enabled;
- statistics switches: `CST` 0 silences `$CACST`, `XST` 0 `$CAXST`, `REV` 0 `$CAREV`;
- faults on demand: `reject_sentences` ({"CCTFP": n}: refuse the next n with `$CAERR`),
  `heartbeat_mid_cycle` (a `$CAREV,...,AUV` between `$CACYC` and `$CADRQ`), `line_end` ("\\r"
  for CR-only lines), `crc32` (8-digit checksums).
"""

from __future__ import annotations

import collections
import math
import time

from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.modem_status import parse_clock_time

# Which configuration switch silences which report.
STATISTICS_SWITCHES = {"CACST": "CST", "CAXST": "XST", "CAREV": "REV", "CARXP": "RXP"}
PPS_WAIT_S = 3.0
TRANSPONDER_NAMES = ("A", "B", "C", "D")


class _SessionSentences:
    config: dict
    counters: collections.Counter

    def _init_session(self) -> None:
        self._initial_config = dict(self.config)
        self.clock_offset_s = 0.0
        self.clock_set = False
        self.reject_sentences: dict[str, int] = {}
        self.heartbeat_mid_cycle = False
        self.line_end = "\r\n"
        self.crc32 = False
        self.transponders: dict[str, float] = {}

    # ------------------------------------------------------------------ output switches
    def silenced(self, sentence_type: str) -> bool:
        switch = STATISTICS_SWITCHES.get(sentence_type)
        return switch is not None and self.config.get(switch, "1") == "0"

    def format_output(self, sentence_type: str, fields) -> str:
        return nmea.format_sentence(sentence_type, fields, crc32=self.crc32,
                                    line_end=self.line_end)

    def refused_on_demand(self, sentence_type: str) -> bool:
        """True (and $CAERR sent) if a test asked to refuse this sentence."""
        remaining = self.reject_sentences.get(sentence_type, 0)
        if remaining <= 0:
            return False
        self.reject_sentences[sentence_type] = remaining - 1
        self.counters["rejected_on_demand"] += 1
        self._error(sentence_type[2:], 5, f"{sentence_type} refused")
        return True

    def modem_time(self) -> float:
        return time.time() + self.clock_offset_s

    # ------------------------------------------------------------------ clock
    def _on_CCTMS(self, fields) -> None:
        text = fields[0] if fields else ""
        requested = parse_clock_time(text) if text.endswith("Z") else None
        mode = fields[1] if len(fields) > 1 else "0"
        if requested is None or mode not in ("0", "1"):
            raise ValueError(f"bad time {text[:32]!r} or mode {mode[:4]!r}")
        if mode == "1":
            self._later(PPS_WAIT_S, self.emit, "CATMS", [1, nmea.format_iso_time(requested)])
            return
        self._later(math.ceil(time.time()) - time.time(), self._apply_clock, requested)

    def _apply_clock(self, requested: float) -> None:
        self.clock_offset_s = requested - time.time()
        self.clock_set = True
        self.emit("CATMS", [0, nmea.format_iso_time(requested)])

    def _on_CCTMQ(self, fields) -> None:
        self.emit("CATMQ", [nmea.format_iso_time(self.modem_time()), *self.clock_sources()])

    # ------------------------------------------------------------------ revision, reboot
    def emit_revision(self, ident: str = "AUV") -> None:
        self.emit("CAREV", [_hhmmss(), ident, self.config.get("info.firmware_version", "")])

    def reboot(self, reset_config: bool = True) -> None:
        """The modem restarts: what it was doing is lost; it announces itself with $CAREV."""
        with self._lock:
            timers, self._timers = self._timers, set()
            for timer in timers:
                timer.cancel()
            self._busy_until, self._legacy, self._ping_pending = 0.0, None, None
            self._held = None
            if reset_config:
                self.config.clear()
                self.config.update(self._initial_config)
            self.clock_offset_s, self.clock_set = 0.0, False
            self.counters["reboots"] += 1
            self.emit_revision("INIT")
            self.emit_revision("AUV")

    # ------------------------------------------------------------------ transponders
    def _on_CCPDT(self, fields) -> None:
        timeout_s = int(fields[4]) / 1000.0
        enabled = [f == "1" for f in fields[5:9]]
        if len(enabled) != len(TRANSPONDER_NAMES):
            raise ValueError("CCPDT needs four transponder flags")
        times = ["" if not on or name not in self.transponders
                 else f"{self.transponders[name]:.4f}"
                 for name, on in zip(TRANSPONDER_NAMES, enabled, strict=True)]
        self._later(timeout_s * self.airtime_scale, self.emit, "SNTTA",
                    times + [time.strftime("%H%M%S.00", time.gmtime())])


def _hhmmss() -> str:
    return time.strftime("%H%M%S", time.gmtime())
