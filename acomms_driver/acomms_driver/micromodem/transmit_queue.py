"""The driver's transmit queue: queued packets, the one in flight, the one awaiting its $CAXST.

pyacomms silently drops a packet handed over while its state machine is not Idle and never times a
transmission out, so the driver keeps its own queue and in-flight packet. A packet in flight when
the link drops goes back to the head of the queue (at-least-once delivery). ROS-free; the caller
passes the lock it also uses for its other transmit decisions (pings).
"""

from __future__ import annotations

import collections
import threading
import time

from acomms_driver.micromodem.packet_rules import ModemPacket


class TransmitQueue:
    def __init__(self, lock: threading.RLock, counters: collections.Counter):
        self._lock = lock
        self.counters = counters
        self._queue: collections.deque[ModemPacket] = collections.deque()
        self._in_flight: ModemPacket | None = None
        self._in_flight_since = 0.0
        self.in_flight_fdp = False
        self.in_flight_kind = ""  # "fdp", "tdp" or "legacy" (modem_status.TRANSMIT_COMMANDS)
        self._awaiting_xst: ModemPacket | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue) + (1 if self._in_flight is not None else 0)

    @property
    def busy(self) -> bool:
        """A packet is with the modem (handed over, no $CATXF yet)."""
        return self._in_flight is not None

    def push(self, packet: ModemPacket, at_head: bool, capacity: int) -> tuple[bool, int, str]:
        """(accepted, position_in_queue, reason if refused)."""
        with self._lock:
            if len(self._queue) >= capacity:
                self.counters["tx_refused_queue_full"] += 1
                return False, -1, f"transmit queue full ({capacity} packets)"
            if at_head:
                self._queue.appendleft(packet)
                position = 0
            else:
                self._queue.append(packet)
                position = len(self._queue) - 1
            self.counters["tx_queued"] += 1
        return True, position, ""

    def expire_in_flight(self, timeout_s: float) -> bool:
        """Drop the packet in flight if it waited longer than timeout_s for $CATXF."""
        with self._lock:
            if self._in_flight is None:
                return False
            if time.monotonic() - self._in_flight_since <= timeout_s:
                return False
            self.counters["tx_timeouts"] += 1
            self._in_flight = None
            return True

    def start_next(self) -> ModemPacket | None:
        """The next packet, now in flight; None if one is in flight already or none is queued."""
        with self._lock:
            if self._in_flight is not None or not self._queue:
                return None
            self._in_flight = self._queue.popleft()
            self._in_flight_since = time.monotonic()
            return self._in_flight

    def mark_sent(self) -> None:
        """$CATXF for the packet in flight: it awaits its $CAXST now."""
        with self._lock:
            if self._in_flight is not None:
                self._awaiting_xst, self._in_flight = self._in_flight, None
                self.counters["tx_sent"] += 1

    def take_transmitted(self) -> ModemPacket | None:
        """The packet a $CAXST reports (the one sent, else the one in flight)."""
        with self._lock:
            packet = self._awaiting_xst or self._in_flight
            self._awaiting_xst = None
            return packet

    def requeue_in_flight(self, counter: str = "tx_requeued_after_link_loss") -> bool:
        """The link dropped (or the modem rebooted) before $CATXF: back to the head of the queue
        to be sent again; True if there was one."""
        with self._lock:
            if self._in_flight is None:
                return False
            self._queue.appendleft(self._in_flight)
            self._in_flight = None
            self.counters[counter] += 1
            return True

    def reject_in_flight(self) -> ModemPacket | None:
        """The modem refused the packet in flight ($CAERR): released now, not at the timeout."""
        with self._lock:
            packet, self._in_flight = self._in_flight, None
            if packet is not None:
                self.counters["tx_rejected_by_modem"] += 1
            return packet
