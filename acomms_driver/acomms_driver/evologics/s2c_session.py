"""A host session with an EvoLogics S2C modem over the AT protocol, ROS-free.

`S2CSession` runs on `link_supervisor.LinkSupervisor` (serial or TCP link, reconnect with
backoff, silence probe) with the protocol's framer (`at_stream.AtStreamReader("modem")`, hostile
lines counted by reason and skipped). At each connection it queries the local address (`AT?AL`)
and sets it (`AT!AL<n>`) when `address` is given, then turns on the extended notifications
(`AT@ZX1`; refused: logged, counted, the session goes on without `RECVSTART`). Each `RECVSTART`
(the modem synchronised on an arriving packet) calls `on_reception_start`. Packets queued with
`queue_packet` go out one at a time: up to 64 bytes as an instant message (acknowledgement
requested for a unicast destination), larger ones as burst data (`evologics_s2c.packet_kind`).
A packet is in flight from the modem's `OK` until its `DELIVERED*` / `FAILED*` (or,
unacknowledged, its airtime); `BUSY` puts it back at the head of the queue, `ERROR` drops it
(counted, logged).

`ping(dest, timeout_s)` (from any thread; blocks up to timeout_s, wall clock): an instant message
with acknowledgement (`PING_DATA` unless data is given; the remote's host receives it as an
instant message) goes before the queued packets; after its `DELIVEREDIM` the session asks
`AT?T`, the modem's measured one-way propagation time in microseconds, and answers it in
seconds. `FAILEDIM`, a refusal or no answer in time: None and the reason.

Replies: in command mode any printable line parses as a value, so a reply is accepted only while
a command is pending; any other is counted as `unexpected_replies` and skipped. Every callback
runs in a link thread and must be quick.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable

from acomms_core.modems import evologics_s2c as s2c
from acomms_core.modems.profile import PacketRefused
from acomms_driver.evologics import at_protocol as at
from acomms_driver.evologics.at_stream import AtStreamReader
from acomms_driver.micromodem.client_config import ClientCallbacks, ClientSettings, Notifier
from acomms_driver.micromodem.link_supervisor import LinkSupervisor, SessionEnded
from acomms_driver.micromodem.modem_link import ModemLink

REPLY_TIMEOUT_S = 2.0
PING_DATA = b"\x00"  # the ping's instant message, when the caller gives no data


@dataclasses.dataclass
class S2CSettings:
    link_factory: Callable[[], ModemLink]
    address: int = 0                  # 0: keep the modem's own address
    reconnect_initial_s: float = 0.5
    reconnect_max_s: float = 10.0
    silence_timeout_s: float = 30.0   # wall clock; the modem is probed at half of it
    delivery_timeout_s: float = 20.0  # wall clock: longest wait for DELIVERED/FAILED
    max_queue: int = 100


@dataclasses.dataclass(frozen=True)
class OutgoingPacket:
    dest: int
    data: bytes
    kind: str        # "im" or "burst"
    ack: bool
    ping: bool = False  # the instant message of a ping (not a queued packet)


class _Ping:
    """One ping: queued -> in_flight (OK) -> delivered (DELIVEREDIM) -> answered (AT?T)."""

    def __init__(self, packet: OutgoingPacket):
        self.packet = packet
        self.state = "queued"
        self.done = threading.Event()
        self.travel_time_s: float | None = None
        self.reason = ""

    def finish(self, travel_time_s: float | None, reason: str = "") -> None:
        self.travel_time_s, self.reason, self.state = travel_time_s, reason, "done"
        self.done.set()


@dataclasses.dataclass
class S2CCallbacks:
    """Called from link threads; a failing callback is counted (callback_errors), never raised."""

    on_packet: Callable[[object], None] | None = None          # InstantMessage | BurstData
    on_sent: Callable[[OutgoingPacket], None] | None = None     # the modem took it (OK)
    on_delivery: Callable[[at.DeliveryReport], None] | None = None
    on_usbl: Callable[[object], None] | None = None             # UsblLong | UsblAngles
    on_reception_start: Callable[[], None] | None = None        # RECVSTART
    on_raw: Callable[[str, bytes], None] | None = None          # ("to_modem"|"from_modem", bytes)
    on_connection: Callable[[bool, str], None] | None = None
    on_log: Callable[[str, str], None] | None = None


def outgoing(dest: int, data: bytes, broadcast: int = at.BROADCAST_ADDRESS) -> OutgoingPacket:
    """The packet as the modem sends it; PacketRefused with the reason if it cannot."""
    if not 0 <= dest <= at.BROADCAST_ADDRESS:
        raise PacketRefused(f"dest {dest} outside 0..{at.BROADCAST_ADDRESS}")
    if not data:
        raise PacketRefused("an S2C packet carries at least one data byte")
    kind = s2c.packet_kind(len(data))
    return OutgoingPacket(dest, bytes(data), kind, dest != broadcast)


class _RawReader(AtStreamReader):
    """The modem framer, reporting every chunk read (raw/from_modem)."""

    def __init__(self, on_chunk: Callable[[bytes], None]):
        super().__init__("modem")
        self._on_chunk = on_chunk

    def feed(self, chunk: bytes) -> list:
        self._on_chunk(chunk)
        return super().feed(chunk)


class S2CSession:
    def __init__(self, settings: S2CSettings, callbacks: S2CCallbacks | None = None):
        self.settings = settings
        self.callbacks = callbacks or S2CCallbacks()
        self.notifier = Notifier(ClientCallbacks(on_connection=self.callbacks.on_connection,
                                                 on_log=self.callbacks.on_log))
        self.counters: collections.Counter = self.notifier.counters
        self.reader = _RawReader(lambda chunk: self._call("on_raw", "from_modem", chunk))
        self.supervisor = LinkSupervisor(ClientSettings(
            link_factory=settings.link_factory, reconnect_initial_s=settings.reconnect_initial_s,
            reconnect_max_s=settings.reconnect_max_s,
            silence_timeout_s=settings.silence_timeout_s), self, self.notifier, self.reader)
        self.modem_address = -1
        self._lock = threading.Lock()
        self._queue: collections.deque[OutgoingPacket] = collections.deque()
        self._pending_command = ""
        self._reply: at.Reply | None = None
        self._in_flight: tuple[OutgoingPacket, float] | None = None
        self._ping: _Ping | None = None
        self._ping_lock = threading.Lock()  # one ping at a time

    # ------------------------------------------------------------------ public
    def start(self) -> None:
        self.supervisor.start()

    def stop(self) -> None:
        self.supervisor.stop()

    close = stop  # ManagedNode closes its worker

    @property
    def connected(self) -> bool:
        return self.supervisor.connected

    def queue_packet(self, packet: OutgoingPacket, at_head: bool = False) -> int:
        """Queue position; ValueError when the queue is full."""
        with self._lock:
            if len(self._queue) >= self.settings.max_queue:
                self.counters["queue_full_refusals"] += 1
                raise ValueError(f"transmit queue full ({self.settings.max_queue} packets)")
            if at_head:
                self._queue.appendleft(packet)
            else:
                self._queue.append(packet)
            position = 0 if at_head else len(self._queue) - 1
        self.supervisor.wake()
        return position

    def queue_length(self) -> int:
        return len(self._queue)

    def ping(self, dest: int, timeout_s: float, data: bytes = b"") -> tuple[float | None, str]:
        """(one-way travel time s, "") or (None, reason); waits up to timeout_s (wall clock)."""
        if not 0 <= dest < at.BROADCAST_ADDRESS or dest == self.modem_address:
            return None, f"cannot ping address {dest} (another modem's, 0..254)"
        if not self.connected:
            return None, "modem not connected"
        try:
            packet = OutgoingPacket(dest, bytes(data or PING_DATA), "im", True, ping=True)
            at.format_sendim(dest, packet.data)
        except at.AtFormatError as exc:
            return None, str(exc)
        if not self._ping_lock.acquire(blocking=False):
            return None, "a ping is already running"
        try:
            ping = self._ping = _Ping(packet)
            self.counters["pings"] += 1
            self.supervisor.wake()
            if not ping.done.wait(timeout_s):
                self.counters["ping_timeouts"] += 1
                return None, f"no answer within {timeout_s:g} s (state {ping.state})"
            return ping.travel_time_s, ping.reason
        finally:
            self._ping = None
            self._ping_lock.release()

    def all_counters(self) -> dict:
        return {**self.counters, **{f"reader_{k}": v for k, v in self.reader.counters.items()},
                "queue_length": len(self._queue), "modem_address": self.modem_address,
                "in_flight": int(self._in_flight is not None)}

    # ------------------------------------------------------------------ commands
    def _call(self, name: str, *args) -> None:
        func = getattr(self.callbacks, name)
        if func is None:
            return
        try:
            func(*args)
        except Exception as exc:  # noqa: BLE001 - a callback bug must not kill a link thread
            self.counters["callback_errors"] += 1
            self.notifier.log("error", f"callback {name} failed: {exc!r}")

    def _write(self, data: bytes) -> bool:
        self._call("on_raw", "to_modem", data)
        return self.supervisor.write_bytes(data)

    def command(self, data: bytes, name: str, timeout_s: float = REPLY_TIMEOUT_S):
        """Write a command and wait for its reply (supervisor thread): the Reply or None."""
        self._reply, self._pending_command = None, name
        if not self._write(data):
            self._pending_command = ""
            return None
        try:
            self.supervisor.wait_for(lambda: self._reply is not None, timeout_s)
        finally:
            self._pending_command = ""
        if self._reply is None:
            self.counters["reply_timeouts"] += 1
        return self._reply

    # ------------------------------------------------------------------ Session protocol
    def handshake(self) -> str | None:
        reply = self.command(at.format_command("?AL"), "?AL")
        if reply is None or not reply.text.strip().isdigit():
            return f"no address reply to AT?AL ({reply.text if reply else 'timeout'})"
        self.modem_address = int(reply.text)
        wanted = self.settings.address
        if wanted and wanted != self.modem_address:
            reply = self.command(at.format_command("!AL", str(wanted)), "!AL")
            if reply is None or reply.kind != "ok":
                return f"AT!AL{wanted} refused ({reply.text if reply else 'timeout'})"
            self.modem_address = wanted
        reply = self.command(at.format_command("@ZX", "1"), "@ZX")
        if reply is None or reply.kind != "ok":
            self.counters["extended_notifications_refused"] += 1
            self.notifier.log("warn", f"AT@ZX1 refused ({reply.text if reply else 'timeout'}): "
                                      "no reception_start from this modem")
        self.notifier.log("info", f"S2C modem address {self.modem_address}")
        return None

    def handle_sentence(self, item) -> None:
        if isinstance(item, at.Reply):
            if self._pending_command and self._reply is None:
                self._reply = item
            else:
                self.counters["unexpected_replies"] += 1
        elif isinstance(item, (at.InstantMessage, at.BurstData)):
            self.counters["packets_received"] += 1
            self._call("on_packet", item)
        elif isinstance(item, at.DeliveryReport):
            self._delivery(item)
        elif isinstance(item, at.Notification) and item.name == "RECVSTART":
            self.counters["reception_starts"] += 1
            self._call("on_reception_start")
        elif isinstance(item, (at.UsblLong, at.UsblAngles)):
            self.counters["usbl_fixes"] += 1
            self._call("on_usbl", item)
        else:
            self.counters["notifications"] += 1

    def _delivery(self, report: at.DeliveryReport) -> None:
        flight, ping = self._in_flight, self._ping
        self._in_flight = None
        if flight is not None and flight[0].ping and ping is not None \
                and ping.packet is flight[0] and report.kind == "im":
            self.counters["ping_delivered" if report.delivered else "ping_failed"] += 1
            if report.delivered:
                ping.state = "delivered"  # the supervisor asks AT?T next
            else:
                ping.finish(None, f"FAILEDIM: no acknowledgement from {report.dest}")
        else:
            self.counters["delivered" if report.delivered else "delivery_failed"] += 1
            self._call("on_delivery", report)
        self.supervisor.wake()

    def probe(self) -> None:
        try:
            self.command(at.format_command("?AL"), "?AL")
        except SessionEnded:
            pass  # the supervisor sees the failed session itself

    def tick(self) -> None:
        ping = self._ping
        if ping is not None and ping.state == "delivered":
            self._ask_propagation_time(ping)
        flight = self._in_flight
        if flight is not None and time.monotonic() < flight[1]:
            return
        if flight is not None and flight[0].ack:
            self.counters["delivery_timeouts"] += 1
            if flight[0].ping and ping is not None and ping.packet is flight[0]:
                ping.finish(None, "no DELIVEREDIM/FAILEDIM within delivery_timeout_s")
        self._in_flight = None
        if ping is not None and ping.state == "queued":
            self._send(ping.packet)
            return
        with self._lock:
            packet = self._queue.popleft() if self._queue else None
        if packet is not None:
            self._send(packet)

    def _ask_propagation_time(self, ping: _Ping) -> None:
        ping.state = "asking"
        try:
            reply = self.command(at.format_command("?T"), "?T")
        except SessionEnded:
            ping.finish(None, "link lost before AT?T answered")
            return
        text = reply.text.strip() if reply is not None else ""
        if text.isdigit():
            ping.finish(int(text) * 1e-6)
        else:
            self.counters["ping_failed"] += 1
            ping.finish(None, f"no propagation time from AT?T ({text or 'timeout'})")

    def _send(self, packet: OutgoingPacket) -> None:
        if packet.kind == "im":
            data = at.format_sendim(packet.dest, packet.data, packet.ack)
        else:
            data = at.format_send(packet.dest, packet.data)
        try:
            reply = self.command(data, "*SENDIM" if packet.kind == "im" else "*SEND")
        except SessionEnded:  # the link went: the packet waits for the next connection
            if not packet.ping:  # a ping stays queued itself
                with self._lock:
                    self._queue.appendleft(packet)
            return
        if reply is not None and reply.kind == "ok":
            self.counters["packets_sent"] += 1
            waits_for_report = packet.ack or packet.kind == "burst" and packet.dest != 255
            rate = s2c.IM_RATE if packet.kind == "im" else s2c.BURST_RATE
            airtime = s2c.EVOLOGICS_S2C.packet_duration_s(False, 0, rate, 0, len(packet.data))
            wait = self.settings.delivery_timeout_s if waits_for_report else airtime
            self._in_flight = (packet, time.monotonic() + wait)
            self._sent(packet)
        elif reply is not None and reply.kind == "busy":
            self.counters["busy_replies"] += 1
            if not packet.ping:  # a ping stays queued and goes at a later tick
                with self._lock:
                    self._queue.appendleft(packet)
        else:
            self.counters["send_refusals"] += 1
            if packet.ping and self._ping is not None and self._ping.packet is packet:
                self._ping.finish(None, f"modem refused the ping: "
                                        f"{reply.text if reply else 'no reply'}")
            self.notifier.log("warn", f"modem refused a {packet.kind} to {packet.dest}: "
                                      f"{reply.text if reply else 'no reply'}")

    def _sent(self, packet: OutgoingPacket) -> None:
        ping = self._ping
        if packet.ping:
            if ping is not None and ping.packet is packet and ping.state == "queued":
                ping.state = "in_flight"
        else:
            self._call("on_sent", packet)

    def end_session(self) -> None:
        ping = self._ping
        if ping is not None and ping.state != "queued":
            ping.finish(None, "link lost during the ping")
        self._in_flight = None
        self._pending_command = ""
