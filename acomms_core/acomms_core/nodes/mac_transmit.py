"""The one transmit pipeline of every MAC node: request data, hold, send, handle the result.

A MAC policy decides *when* and with which budget (`acomms_core.mac.policy` actions); this adapter
does the ROS part: `get_next_packet_data` from the message queue with the budget and the slot's
filter, a packet the queue returned too late to start inside its opportunity is held and sent at
the next one (never outside it), `queue_tx_packet` to the modem, and the counters of what was
sent, held or dropped. At most one service call is in flight. With a free-running clock one that
does not answer within service_timeout_seconds (wall clock; for a ping, after the ping's own
timeout on the node clock too) is abandoned. In a deterministic run no wall-clock timeout decides:
the queue and modem calls are `call_awaited` (the stepper holds simulated time until they are
answered) and no call is abandoned (acomms_core.ros.service_calls).
"""

from __future__ import annotations

import dataclasses
import time

from acomms_core.mac.policy import RequestData, SendHeld
from acomms_core.modems.profile import FrameBudget
from acomms_core.ros.ros_support import is_active, now_s
from acomms_core.ros.service_calls import AWAITED, call_awaited, forget, server_ready
from acomms_interfaces.msg import Packet
from acomms_interfaces.srv import GetNextPacketData, QueueTxPacket


@dataclasses.dataclass
class HeldPacket:
    packet: Packet
    frames: FrameBudget
    queued_message_ids: tuple[int, ...]


def make_packet(frames: FrameBudget, dest: int, miniframe: bytes, dataframe: bytes) -> Packet:
    return Packet(dest=dest, packet_type=Packet.PACKET_TYPE_AUTO,
                  miniframe_rate=frames.miniframe_rate, dataframe_rate=frames.dataframe_rate,
                  miniframe_bytes=miniframe, dataframe_bytes=dataframe)


class TransmitPipeline:
    """Queue -> (hold) -> modem for one MAC node; call everything with the node's lock held."""

    def __init__(self, node, policy):
        self.node = node
        self.policy = policy
        self.counters = policy.counters
        self.log = node.get_logger()
        self.queue_client = None
        self.modem_client = None
        self.service_timeout_s = 5.0
        self.held: HeldPacket | None = None
        self.reset()

    def create_clients(self, resources) -> None:
        self.queue_client = resources.client(GetNextPacketData, "get_next_packet_data")
        self.modem_client = resources.client(QueueTxPacket, "queue_tx_packet")

    def forget_clients(self) -> None:
        self.queue_client = self.modem_client = None

    def reset(self, keep_held: bool = False) -> None:
        self.busy_future = None   # the service call in flight, if any
        self.busy_deadline = 0.0  # monotonic (wall) time after which that call is abandoned
        self.busy_until_s = 0.0  # node-clock time before which it is not abandoned either
        if not keep_held:
            self.held = None

    def drop_held(self, why: str) -> None:
        if self.held is not None:
            self.counters["dropped_packets"] += 1
            self.log.warning(f"dropping a held packet {why} (message ids "
                             f"{list(self.held.queued_message_ids)})")
        self.held = None

    @property
    def idle(self) -> bool:
        return self.busy_future is None

    @property
    def held_frames(self) -> FrameBudget | None:
        return None if self.held is None else self.held.frames

    def busy(self) -> bool:
        """A call is in flight and not yet overdue (an overdue one is abandoned here; never in
        a deterministic run, where the stepper waits for the answer)."""
        if self.busy_future is None:
            return False
        if (AWAITED.stepped or time.monotonic() < self.busy_deadline
                or now_s(self.node) < self.busy_until_s):
            return True
        self.counters["service_timeouts"] += 1
        self.log.warning("queue/modem service did not answer in time; giving up on that call")
        forget(self.busy_future)
        self.busy_future = None
        return False

    def track(self, future, node_clock_s: float = 0.0) -> None:
        """`future` is the call in flight: it is abandoned (free-running clock only) once both
        service_timeout_s + node_clock_s of wall time and node_clock_s (a ping's timeout) on the
        node clock have passed (a sim clock at warp < 1 is slower than the wall clock)."""
        self.busy_future = future
        self.busy_deadline = time.monotonic() + self.service_timeout_s + node_clock_s
        self.busy_until_s = now_s(self.node) + node_clock_s if node_clock_s else 0.0

    def run(self, action, now: float) -> bool:
        """Carry out a SendHeld or RequestData action; False for any other action."""
        if isinstance(action, SendHeld):
            held, self.held = self.held, None
            self.send(held, now)
        elif isinstance(action, RequestData):
            self.request(action.frames, action.tags, now, action.dest, action.fallback)
        else:
            return False
        return True

    def request(self, frames: FrameBudget, tags, now: float, dest: int | None = None,
                fallback: FrameBudget | None = None) -> None:
        """Ask the queue for a packet (only messages to `dest` when given; if it has none,
        ask again for any message with the `fallback` budget: rate adaptation)."""
        if not server_ready(self.queue_client):
            if self.policy.always_send_test_data:
                frames = fallback or frames  # broadcast: the robust rate under rate adaptation
                packet = make_packet(frames, self.policy.config.profile.broadcast_address,
                                     bytes(frames.maximum_miniframe_bytes),
                                     bytes(frames.maximum_dataframe_bytes))
                self.send(HeldPacket(packet, frames, ()), now)
                return
            self.counters["queue_unavailable"] += 1
            self.log.warning("get_next_packet_data service not available; skipping this "
                             "transmit opportunity", throttle_duration_sec=10.0)
            return
        request = GetNextPacketData.Request(
            num_miniframe_bytes=frames.maximum_miniframe_bytes,
            num_dataframe_bytes=frames.maximum_dataframe_bytes, match_dest=dest is not None,
            dest=0 if dest is None else dest,
            minimum_priority=tags.minimum_priority or 0, require_tags=list(tags.require_tags),
            exclude_tags=list(tags.exclude_tags))
        future = call_awaited(self.node, self.queue_client, request)
        self.track(future)
        if dest is not None:
            self.policy.rates.took_turn()
        retry = None if fallback is None else (fallback, tags)
        future.add_done_callback(
            lambda f: self.node.locked(self._on_packet_data, f, frames, retry))

    def _on_packet_data(self, future, frames: FrameBudget, retry=None) -> None:
        if future is not self.busy_future:
            self.counters["late_responses"] += 1  # abandoned after a timeout
            return
        try:
            self._handle_packet_data(future, frames, retry)
        finally:
            # Idle unless the packet went on to the modem (a new call in flight).
            if self.busy_future is future:
                self.busy_future = None

    def _response(self, future, service: str):
        try:
            return future.result()
        except Exception as exc:  # a failed service call must not kill the node
            self.log.error(f"{service} failed: {exc}")
            return None

    def _handle_packet_data(self, future, frames: FrameBudget, retry=None) -> None:
        response = self._response(future, "get_next_packet_data")
        if response is None:
            self.counters["queue_errors"] += 1
            return
        miniframe, dataframe = bytes(response.miniframe_bytes), bytes(response.dataframe_bytes)
        ids = tuple(response.queued_message_ids)
        if (len(miniframe) > frames.maximum_miniframe_bytes
                or len(dataframe) > frames.maximum_dataframe_bytes):
            self.counters["dropped_packets"] += 1
            self.log.error(f"queue returned {len(miniframe)}+{len(dataframe)} bytes for a "
                           f"{frames.maximum_miniframe_bytes}+{frames.maximum_dataframe_bytes} "
                           f"byte budget; packet dropped (message ids {list(ids)})")
            return
        now = now_s(self.node)
        padded = self.policy.always_send_test_data
        if response.num_messages == 0 and not miniframe and not dataframe and not padded:
            if retry is not None and is_active(self.node):
                fallback, tags = retry  # nothing for the adaptive rate's destination: any
                if self.policy.may_send(now, fallback.packet_duration_s):
                    self.counters["rate_fallback_requests"] += 1
                    self.request(fallback, tags, now)
                    return
            self.counters["empty_queue_responses"] += 1
            self.policy.on_nothing_to_send(now, frames)
            return
        self.counters["payload_bytes_from_queue"] += len(miniframe) + len(dataframe)
        if padded:
            miniframe += bytes(frames.maximum_miniframe_bytes - len(miniframe))
            dataframe += bytes(frames.maximum_dataframe_bytes - len(dataframe))
        held = HeldPacket(make_packet(frames, response.dest, miniframe, dataframe), frames, ids)
        if not is_active(self.node) or not self.policy.may_send(now, frames.packet_duration_s):
            # The answer came too late to start inside the slot: keep it for the next one.
            self.counters["held_packets"] += 1
            self.held = held
            self.log.warning("packet data arrived too late for this slot; holding it for the "
                             "next transmit opportunity")
            return
        self.send(held, now)

    def send(self, held: HeldPacket, now: float) -> None:
        if not server_ready(self.modem_client):
            self.counters["modem_unavailable"] += 1
            self.held = held
            self.log.warning("queue_tx_packet service not available; holding the packet",
                             throttle_duration_sec=10.0)
            return
        request = QueueTxPacket.Request(queue=QueueTxPacket.Request.QUEUE_IMMEDIATE,
                                        insert_at_head=False, packet=held.packet)
        self.policy.on_transmit(held.frames, now)
        future = call_awaited(self.node, self.modem_client, request)
        self.track(future)
        future.add_done_callback(lambda f: self.node.locked(self._on_modem_response, f, held))

    def _on_modem_response(self, future, held: HeldPacket) -> None:
        if future is self.busy_future:
            self.busy_future = None
        response = self._response(future, "queue_tx_packet")
        packet = held.packet
        if response is None or not response.success:
            self.counters["modem_refused_packets"] += 1
            self.log.error(f"modem did not accept the packet; dropped (message ids "
                           f"{list(held.queued_message_ids)})")
            return
        self.counters["packets_sent"] += 1
        self.counters["bytes_sent"] += len(packet.miniframe_bytes) + len(packet.dataframe_bytes)
        if response.position_in_queue > 0:
            # The modem still had packets queued: this one may start after our slot.
            self.counters["modem_backlog"] += 1
            self.log.warning(f"modem queued the packet at position {response.position_in_queue};"
                             " it may not start inside this slot", throttle_duration_sec=10.0)
        self.log.debug(f"queued packet for tx: dest {packet.dest}, {len(packet.miniframe_bytes)} "
                       f"miniframe + {len(packet.dataframe_bytes)} dataframe bytes, position "
                       f"{response.position_in_queue}")
