"""LBL transponder pings: `$CCPDT,GRP,CHANNEL,SF,STO,timeout_ms,AF,BF,CF,DF` (REMUS digital
transponders A-D) answered by `$SNTTA,TA,TB,TC,TD,hhmmss.ss` (travel times in s, empty for no
reply). One at a time; like a modem ping it waits for the packet in flight and holds the transmit
queue until it is answered or times out. ROS-free.
"""

from __future__ import annotations

import threading
import time

from acomms_driver.micromodem import nmea

TRANSPONDERS = 4
PDT_GROUP = 1
PDT_CHANNEL = 1
NO_REPLY = -1.0
REPLY_MARGIN_S = 1.0  # the $SNTTA follows the end of the listening window


def parse_travel_times(fields) -> list[float]:
    """SNTTA fields to the four travel times, NO_REPLY for an empty or bad one."""
    times = []
    for text in list(fields[:TRANSPONDERS]) + [""] * (TRANSPONDERS - len(fields)):
        try:
            value = float(text)
        except ValueError:
            value = NO_REPLY
        times.append(value if 0.0 <= value < 1e6 else NO_REPLY)
    return times


class TransponderPinger:
    def __init__(self, protocol):
        self.protocol = protocol
        self._lock = protocol._lock  # the transmit decisions' lock (tick checks `active`)
        self._reply: list[float] | None = None
        self._replied = threading.Event()
        self._active = False

    @property
    def active(self) -> bool:
        return self._active

    def ping(self, mask, timeout_s: float) -> tuple[list[float] | None, str]:
        """Ping the transponders whose mask entry is true: (travel times, "") or (None, reason)."""
        mask = [bool(m) for m in list(mask)[:TRANSPONDERS]]
        mask += [False] * (TRANSPONDERS - len(mask))
        if not any(mask):
            return None, "no transponder selected"
        with self._lock:
            if self._active:
                return None, "another transponder ping is in progress"
            self._active, self._reply = True, None
            self._replied.clear()
        try:
            return self._run(mask, timeout_s)
        finally:
            self._active = False
            if self.protocol.link is not None:
                self.protocol.link.wake()

    def _run(self, mask: list[bool], timeout_s: float) -> tuple[list[float] | None, str]:
        protocol, counters = self.protocol, self.protocol.counters
        deadline = time.monotonic() + timeout_s + REPLY_MARGIN_S
        while protocol.tx.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        if protocol.link is None or not protocol.link.connected or protocol.tx.busy:
            return None, "modem not connected" if not protocol.tx.busy else "modem busy"
        counters["transponder_pings"] += 1
        protocol.write(nmea.format_sentence("CCPDT", [
            PDT_GROUP, PDT_CHANNEL, 0, 0, int(timeout_s * 1000), *(int(m) for m in mask)]))
        if not self._replied.wait(max(0.0, deadline - time.monotonic())):
            counters["transponder_ping_timeouts"] += 1
            return None, "no $SNTTA before the timeout"
        return [t if on else NO_REPLY for t, on in zip(self._reply, mask, strict=True)], ""

    def on_sntta(self, sentence: nmea.Sentence) -> None:
        times = parse_travel_times(sentence.fields)
        if not self._active:
            self.protocol.counters["sntta_unmatched"] += 1
            return
        self._reply = times
        self._replied.set()
