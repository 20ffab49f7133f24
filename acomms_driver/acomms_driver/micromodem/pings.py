"""Micromodem pings ($CCCMD,PNG -> $CACMR,PNR + its $CACST), matched without pyacomms' race.

pyacomms' `wait_for_fdp_ping_reply` attaches its CST queue only after the reply arrived and so
loses the CST: here the reply listener and the next CACST fill a waiter. One ping at a time; a
ping waits for the packet in flight (the modem cannot ping while it transmits) and holds back
the transmit queue until it is answered or times out. ROS-free.
"""

from __future__ import annotations

import collections
import threading
import time

from acomms_driver.micromodem.client_config import PingResult
from acomms_driver.micromodem.packet_rules import MAX_ADDRESS
from acomms_driver.micromodem.transmit_queue import TransmitQueue

MAX_PING_PAYLOAD_BYTES = 32
FDP_PING_CDR_RESERVED_BITS = 0b11000011
MIN_TIMEOUT_S = 1.0
CST_AFTER_REPLY_S = 1.0  # the CACST of a reply follows it


class _PingWaiter:
    def __init__(self, dest: int):
        self.dest = dest
        self.reply = None
        self.cst = None
        self.replied = threading.Event()
        self.cst_arrived = threading.Event()


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def ping_result(reply: dict, cst: dict | None) -> PingResult:
    """A $CACMR,PNR reply (pyacomms' dict) as a PingResult."""
    return PingResult(
        False, "", src=_int(reply.get("src")), dest=_int(reply.get("dest")),
        one_way_travel_time=_float(reply.get("owtt")), snr_in=_float(reply.get("snr_in")),
        snr_out=_float(reply.get("snr_out")), tx_level=_int(reply.get("tx_level")),
        timestamp_resolution=_int(reply.get("timestamp_res")),
        toa_mode=_int(reply.get("toa_mode")), snv_on=_int(reply.get("snv_on")),
        timestamp=_int(reply.get("timestamp")), cst=cst)


def check_ping(dest: int, cdr: int, hexdata: bytes) -> str | None:
    if not 0 <= dest <= MAX_ADDRESS:
        return f"dest {dest} outside 0..{MAX_ADDRESS}"
    if cdr & FDP_PING_CDR_RESERVED_BITS:
        return f"invalid cdr {cdr} for an FDP ping"
    if len(hexdata) > MAX_PING_PAYLOAD_BYTES:
        return f"ping payload {len(hexdata)} bytes > {MAX_PING_PAYLOAD_BYTES}"
    return None


class PingTracker:
    def __init__(self, modem, tx: TransmitQueue, lock: threading.RLock,
                 counters: collections.Counter):
        self.modem = modem
        self.tx = tx
        self.link = None  # the LinkSupervisor, set by MicromodemProtocol.attach
        self._lock = lock
        self.counters = counters
        self._waiter: _PingWaiter | None = None
        modem.ping_reply_listeners.append(self._on_ping_reply)

    @property
    def active(self) -> bool:
        return self._waiter is not None

    def ping(self, dest: int, rate: int = 1, cdr: int = 0, hexdata: bytes = b"",
             timeout: float = 5.0) -> PingResult:
        """Ping a remote modem and wait for its reply (blocks up to timeout)."""
        reason = check_ping(dest, cdr, hexdata)
        if reason:
            return PingResult(True, reason)
        deadline = time.monotonic() + max(MIN_TIMEOUT_S, timeout)
        waiter = _PingWaiter(dest)
        with self._lock:
            if self._waiter is not None:
                return PingResult(True, "another ping is in progress")
            self._waiter = waiter
        try:
            return self._run(waiter, dest, rate, cdr, hexdata, deadline)
        finally:
            with self._lock:
                self._waiter = None
            if self.link is not None:
                self.link.wake()

    def _run(self, waiter: _PingWaiter, dest: int, rate: int, cdr: int, hexdata: bytes,
             deadline: float) -> PingResult:
        while self.tx.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.link is None or not self.link.connected:
            return PingResult(True, "modem not connected")
        if self.tx.busy:
            return PingResult(True, "modem busy transmitting until the timeout")
        self.counters["pings_sent"] += 1
        self.modem.send_fdp_ping(dest, rate, cdr, bytearray(hexdata))
        if not waiter.replied.wait(max(0.0, deadline - time.monotonic())):
            self.counters["ping_timeouts"] += 1
            return PingResult(True, "no reply before the timeout")
        waiter.cst_arrived.wait(CST_AFTER_REPLY_S)
        return ping_result(waiter.reply, waiter.cst)

    def on_cst(self, cst: dict) -> None:
        """Every CACST: the first one after a reply belongs to it."""
        with self._lock:
            waiter = self._waiter
        if waiter is not None and waiter.reply is not None and waiter.cst is None:
            waiter.cst = cst
            waiter.cst_arrived.set()

    def _on_ping_reply(self, ping, msg) -> None:
        with self._lock:
            waiter = self._waiter
        if waiter is None or ping.get("dest") != self.modem.id:
            self.counters["ping_replies_unmatched"] += 1
            return
        waiter.reply = dict(ping)
        waiter.replied.set()
