"""The Micromodem handshake, run on every connection and after every modem reboot. ROS-free.

1. identity: `$CCCFQ,SRC` (retried), `TAT`, `info` (firmware version, with a fallback);
2. configuration: the settings the driver depends on (`REQUIRED_CONFIG`: cycle statistics, transmit
   statistics and revision reports on, so receptions are closed by `$CACST`, transmissions reported
   by `$CAXST` and reboots announced by `$CAREV,...,INIT`), then `modem_config`; each is confirmed
   by its `$CACFG` echo;
3. clock (`set_modem_time`): `$CCTMS,YYYY-MM-DDTHH:MM:SSZ,0` with the next whole second, sent just
   after the top of a second (as Goby does); the `$CATMS` reply must say not timed out and report a
   time within `clock_skew_allowed_s` of the host, else it is tried again and finally reported;
4. `$CCCFQ,<config_query>` (ALL or TOP): the modem's full parameter list, logged with the NMEA log;
5. `$CCTMQ` (`query_clock`): the modem clock's offset and its clock / PPS sources, for /diagnostics.
"""

from __future__ import annotations

import math
import threading
import time

from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.modem_status import ModemStatus, format_clock_time

FALLBACK_FIRMWARE_VERSION = "v3.0.0"
HANDSHAKE_ATTEMPTS = 3
CLOCK_ATTEMPTS = 2
# Modem settings the driver needs, sent before modem_config (which may not contradict them).
REQUIRED_CONFIG = {"CST": "1", "XST": "1", "REV": "1"}
# Send $CCTMS in this window after the top of a second.
CLOCK_SEND_WINDOW_S = (0.05, 0.1)
CLOCK_REPLY_TIMEOUT_S = 4.0


class SessionSetup:
    """Runs the handshake in the link supervisor thread; `on_config_echo` runs in the reader."""

    def __init__(self, protocol):
        self.protocol = protocol
        self.status: ModemStatus = protocol.status
        self._lock = threading.Lock()
        self._confirmed: dict[str, str] = {}
        self.unconfirmed_config: list[str] = []

    @property
    def settings(self):
        return self.protocol.settings

    def on_config_echo(self, name: str, value: str) -> None:
        with self._lock:
            self._confirmed[name] = value

    def run(self) -> str | None:
        """The whole handshake; the reason it failed, or None."""
        reason = self._query_identity()
        if reason:
            return reason
        self._send_config()
        if self.settings.set_modem_time:
            self.set_clock()
        if self.settings.config_query:
            self.protocol.write(nmea.format_sentence("CCCFQ", [self.settings.config_query]))
        if self.settings.query_clock:
            self.protocol.write(nmea.format_sentence("CCTMQ", []))
        return None

    def _query_identity(self) -> str | None:
        modem, link = self.protocol.modem, self.protocol.link
        timeout = self.settings.handshake_timeout_s
        modem.id = -1
        for _ in range(HANDSHAKE_ATTEMPTS):
            modem.get_config_param("SRC")
            if link.wait_for(lambda: modem.id >= 0, timeout):
                break
        else:
            return "modem silent: no reply to $CCCFQ,SRC"
        modem.get_config_param("TAT")  # turn-around time, reported with ping replies
        modem.fw_version = None
        modem.get_config_param("info")
        if not link.wait_for(lambda: bool(modem.fw_version), timeout):
            modem.fw_version = FALLBACK_FIRMWARE_VERSION
            self.protocol.notifier.log("warn", f"modem did not report info.firmware_version; "
                                               f"assuming {FALLBACK_FIRMWARE_VERSION}")
        return None

    def config_to_send(self) -> dict[str, str]:
        user = {str(k): str(v) for k, v in self.settings.modem_config.items()}
        return {**REQUIRED_CONFIG, **user}

    def _send_config(self) -> None:
        config = self.config_to_send()
        with self._lock:
            self._confirmed = {}
        for name, value in config.items():
            self.protocol.write(nmea.format_sentence("CCCFG", [name, value]))

        def missing() -> list[str]:
            with self._lock:
                return [n for n in config if n not in self._confirmed]

        self.protocol.link.wait_for(lambda: not missing(), self.settings.handshake_timeout_s)
        self.unconfirmed_config = missing()
        if self.unconfirmed_config:
            self.protocol.counters["config_unconfirmed"] += len(self.unconfirmed_config)
            self.protocol.notifier.log(
                "warn", f"modem did not confirm $CCCFG for {self.unconfirmed_config}")

    def set_clock(self) -> bool:
        """$CCTMS until a $CATMS confirms it (CLOCK_ATTEMPTS); False (counted, logged) if not."""
        counters, link = self.protocol.counters, self.protocol.link
        for _ in range(CLOCK_ATTEMPTS):
            link.wait_for(lambda: False, _delay_to_send_window(time.time()))
            self.status.expect_clock_reply()
            target = math.floor(time.time()) + 1
            counters["clock_set_requests"] += 1
            self.protocol.write(nmea.format_sentence("CCTMS", [format_clock_time(target), 0]))
            if link.wait_for(lambda: self.status.clock_reply is not None, CLOCK_REPLY_TIMEOUT_S) \
                    and self.status.clock_reply[0]:
                return True
        counters["clock_set_failures"] += 1
        reply = self.status.clock_reply
        detail = "no $CATMS reply" if reply is None else f"$CATMS offset {reply[1]:.3f} s"
        self.protocol.notifier.log("error", f"modem clock not set: {detail}")
        return False


def _delay_to_send_window(now: float) -> float:
    """Seconds from now to the start of the next send window after a top of second."""
    fraction = now % 1.0
    low, high = CLOCK_SEND_WINDOW_S
    if low <= fraction < high:
        return 0.0
    return (low - fraction) % 1.0
