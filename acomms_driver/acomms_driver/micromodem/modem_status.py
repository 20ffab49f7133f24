"""What the modem says about itself: errors, revisions and reboots, clock replies, and a count of
every sentence type it sent. ROS-free; the protocol adapter feeds it, /diagnostics reads it.

Formats (WHOI Micro-Modem software interface):
- `$CAERR,HHMMSS,module,number,message`: an error; the driver reports the last one.
- `$CAREV,HHMMSS,ident,version`: `INIT` after a (re)boot, `AUV` (and others) as a periodic
  revision report (a heartbeat when REV is on).
- `$CCTMS,YYYY-MM-DDTHH:MM:SSZ,mode` sets the clock at the next second; the modem answers
  `$CATMS,timed_out,time` (timed_out 0: the clock was set to that time).
- `$CAACK,src,dest,frame,ack`: the acknowledgement of a frame sent with the ack flag.
- clock sources: `$CATMQ,time,clock_source,pps_source` (reply to `$CCTMQ`) and `$CATMG` (the
  same, when a source changes) name them; every `$CACST` carries them as bits of its clock status
  field (bits 0-1 RTC source, bits 2-4 PPS source; `RTC_SOURCES`, `PPS_SOURCES`). A modem whose
  PPS source is EXT / EXT_SYNC times PPS-queued transmissions to the external pulse.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import math
import re
import threading
import time

# A hostile stream can invent sentence types with valid checksums: counts stop growing new keys.
MAX_SENTENCE_TYPES = 64
OTHER_SENTENCE_TYPES = "other"
# The sentence a transmit error can name, per kind of packet in flight.
TRANSMIT_COMMANDS = {"fdp": ("TFP",), "tdp": ("TDP",), "legacy": ("CYC", "TXD"), "janus": ("TJN",)}
RTC_SOURCES = {0: "none", 1: "RTC", 2: "user_command", 3: "GPS"}
PPS_SOURCES = {0: "none", 1: "RTC", 2: "CAL", 3: "EXT", 4: "EXT_SYNC"}
_ISO_TIME_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z?$")


@dataclasses.dataclass(frozen=True)
class ModemError:
    time_text: str
    module: str
    number: str
    text: str

    def __str__(self) -> str:
        return f"{self.module} {self.number}: {self.text}".strip()

    def names_command(self, commands: tuple[str, ...]) -> bool:
        """True if the error is about one of these commands (e.g. 'TFP' for $CCTFP)."""
        where = f"{self.module} {self.text}".upper()
        return any(command in where for command in commands)


def parse_error(fields) -> ModemError:
    padded = list(fields) + [""] * 4
    return ModemError(*(str(f)[:80] for f in padded[:3]), ",".join(fields[3:])[:120])


def format_clock_time(unix_seconds: float) -> str:
    """The $CCTMS time: whole seconds, UTC, one trailing Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix_seconds))


def clock_sources(clock_status: int) -> tuple[str, str]:
    """The (RTC source, PPS source) names of a $CACST clock status field."""
    status = int(clock_status)
    return (RTC_SOURCES.get(status & 0x3, "unknown"),
            PPS_SOURCES.get((status >> 2) & 0x7, "unknown"))


def parse_clock_time(text: str) -> float | None:
    """'2026-01-02T03:04:05[.ffffff]Z' to Unix seconds; None if it is not such a time."""
    match = _ISO_TIME_RE.match(text.strip())
    if match is None:
        return None
    try:
        stamp = datetime.datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    fraction = float("0" + match.group(2)) if match.group(2) else 0.0
    return stamp.replace(tzinfo=datetime.timezone.utc).timestamp() + fraction


class ModemStatus:
    """Thread-safe record of the modem's own reports."""

    def __init__(self):
        self._lock = threading.Lock()
        self.sentence_counts: collections.Counter = collections.Counter()
        self.errors = 0
        self.last_error: ModemError | None = None
        self.last_error_monotonic = -math.inf
        self.revision = ""
        self.reboots = 0
        self.clock_offset_s = math.nan
        self.clock_set = False
        self.clock_source = ""
        self.pps_source = ""
        self._clock_reply: tuple[bool, float] | None = None

    def count(self, sentence_type: str) -> None:
        with self._lock:
            counts = self.sentence_counts
            if sentence_type not in counts and len(counts) >= MAX_SENTENCE_TYPES:
                sentence_type = OTHER_SENTENCE_TYPES
            counts[sentence_type] += 1

    def on_error(self, fields) -> ModemError:
        error = parse_error(fields)
        with self._lock:
            self.errors += 1
            self.last_error = error
            self.last_error_monotonic = time.monotonic()
            if error.names_command(("TMS",)):  # the clock set was refused
                self._clock_reply = (False, math.nan)
        return error

    def on_revision(self, fields) -> bool:
        """A $CAREV; True if it reports a reboot (INIT)."""
        ident = fields[1] if len(fields) > 1 else ""
        if ident == "INIT":
            with self._lock:
                self.reboots += 1
                self.clock_set = False
            return True
        if len(fields) > 2 and fields[2]:
            self.revision = fields[2][:40]
        return False

    # ------------------------------------------------------------------ clock
    def expect_clock_reply(self) -> None:
        with self._lock:
            self._clock_reply = None

    def on_clock_reply(self, fields, host_now: float, allowed_skew_s: float) -> None:
        """$CATMS,timed_out,time: the clock is set if not timed out and within the skew."""
        reported = parse_clock_time(fields[1]) if len(fields) > 1 else None
        ok = bool(fields) and fields[0] == "0" and reported is not None
        offset = reported - host_now if reported is not None else math.nan
        ok = ok and abs(offset) <= allowed_skew_s
        with self._lock:
            self._clock_reply = (ok, offset)
            self.clock_offset_s = offset
            self.clock_set = ok

    def on_clock_query(self, fields, host_now: float) -> None:
        """$CATMQ,time,clock_source,pps_source: the modem clock's offset from the host and its
        sources ($CATMG has the same fields and no offset worth keeping: host_now None)."""
        reported = parse_clock_time(fields[0]) if fields else None
        with self._lock:
            if reported is not None and host_now is not None:
                self.clock_offset_s = reported - host_now
            if len(fields) > 2:
                self.clock_source, self.pps_source = fields[1][:24], fields[2][:24]

    def on_cst_clock(self, clock_status) -> None:
        """The clock sources a $CACST reports."""
        try:
            sources = clock_sources(clock_status)
        except (TypeError, ValueError):
            return
        with self._lock:
            self.clock_source, self.pps_source = sources

    @property
    def clock_reply(self) -> tuple[bool, float] | None:
        return self._clock_reply

    def error_age_s(self) -> float:
        return time.monotonic() - self.last_error_monotonic

    def snapshot(self) -> dict[str, str]:
        """Diagnostic values."""
        with self._lock:
            counts = sorted(self.sentence_counts.items())
            values = {
                "modem_errors": str(self.errors),
                "last_modem_error": str(self.last_error) if self.last_error else "",
                "modem_revision": self.revision,
                "modem_reboots": str(self.reboots),
                "clock_set": str(self.clock_set).lower(),
                "clock_offset_s": "nan" if math.isnan(self.clock_offset_s)
                else f"{self.clock_offset_s:.3f}",
                "clock_source": self.clock_source,
                "pps_source": self.pps_source,
            }
        values.update({f"sentences_{name}": str(count) for name, count in counts})
        return values
