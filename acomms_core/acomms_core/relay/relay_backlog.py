"""The packets a relay will forward, served by MessageQueues.next_packet (ROS-free).

A relayed packet goes out whole (its body untouched, hops left decremented), ahead of queued
messages of a lower priority than the relay priority, to its next hop, when the MAC's request
budget holds it (re-split between miniframe and dataframe if needed) and the request allows
the next hop and the relay priority. The backlog is bounded (the oldest is dropped, counted).
"""

from __future__ import annotations

import dataclasses
from collections import deque

from acomms_core.queue.message_queue import PacketData


@dataclasses.dataclass
class RelayedPacket:
    codec: object          # the RelayPacketCodec it was heard with
    miniframe: bytes
    dataframe: bytes
    next_hop: int
    hops_left: int
    time_added: float


class RelayBacklog:
    def __init__(self, policy, maxsize: int = 16, ttl_seconds: float = 0.0):
        self.policy = policy
        self.priority = policy.settings.priority
        self.maxsize = max(1, int(maxsize))
        self.ttl_seconds = float(ttl_seconds)
        self.packets: deque[RelayedPacket] = deque()

    def offer(self, codec, miniframe: bytes, dataframe: bytes, transmitter: int,
              now: float) -> str:
        """Decide on one received packet of a relayable codec; returns the outcome."""
        header = codec.parse_header(miniframe)
        if header is None:
            return "not_relayable"
        decision = self.policy.decide(header, codec.name, int(transmitter))
        if decision.outcome != "relayed":
            return decision.outcome
        if len(self.packets) >= self.maxsize:
            self.packets.popleft()
            self.policy.count("relay_backlog_full")
        self.packets.append(RelayedPacket(codec, bytes(miniframe), bytes(dataframe),
                                          decision.next_hop, decision.hops_left, now))
        return "relayed"

    def _expire(self, now: float) -> None:
        if self.ttl_seconds > 0:
            while self.packets and self.packets[0].time_added < now - self.ttl_seconds:
                self.packets.popleft()
                self.policy.count("relay_expired")

    def take(self, request, top_priority: int | None, is_reachable, now: float):
        """(next hop, miniframe, dataframe) of the first packet this request may carry, removed
        from the backlog; None when queued messages go first or nothing fits."""
        self._expire(now)
        if not self.packets or (top_priority is not None and top_priority > self.priority):
            return None
        if request.minimum_priority and self.priority < request.minimum_priority:
            return None
        for packet in list(self.packets):
            if request.match_dest and packet.next_hop != request.dest:
                continue
            if not is_reachable(packet.next_hop):
                continue
            try:
                frames = packet.codec.forward_frames(
                    packet.miniframe, packet.dataframe, packet.hops_left,
                    request.num_miniframe_bytes, request.num_dataframe_bytes)
            except ValueError:
                continue
            self.packets.remove(packet)
            return (packet.next_hop, *frames)
        return None

    def next_packet(self, queues, request, now: float) -> PacketData | None:
        """The packet for this request if a relayed one goes before the queues' messages (under
        the queues' lock; tells the queues' observer "relayed")."""
        if not self.packets:
            return None
        top = max((queue.priority for queue in queues._eligible_queues(request)), default=None)
        taken = self.take(request, top, queues.is_reachable, now)
        if taken is None:
            return None
        dest, mini, data = taken
        queues._observe("relayed", payload=mini + data, dest=dest, time_s=now)
        return PacketData(dest=dest, miniframe_bytes=mini, dataframe_bytes=data, relayed=True)
