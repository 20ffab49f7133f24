"""Two vehicles' queue and dispatch code on a lossy link, without ROS (tests, bench).

Each `LinkEnd` holds the objects the nodes hold: `MessageQueues` with its
`FragmentationSender` (message_queue_node) and a `FragmentReceiver` (packet_dispatch_node).
`receive` does what packet_dispatch_node does with a packet (match the packet codecs, decode
with the reserved readers, hand pieces to `FragmentReceiver.handle`, publish complete messages)
and hands acks across as the EncodedAck topics do (acks to send -> own queue, acks heard -> own
queue). Only ROS transport is missing; every byte goes through the same code.

Two exchanges: `run_transfer` (the sender's packets, then one of the receiver's, in turn) and
`run_tdma_transfer` (two vehicles on a basic TDMA schedule, asked for packets as the tdma MAC
asks: `TdmaSchedule.may_transmit` at every tick, a packet's on-air time plus the guard between
packets, nothing outside the vehicle's slot).
"""

from __future__ import annotations

import dataclasses
import random

from acomms_core.fragmentation.dispatch_hooks import FragmentReceiver
from acomms_core.fragmentation.queue_hooks import FragmentationSender
from acomms_core.fragmentation.settings import FragmentationSettings
from acomms_core.mac.tdma_schedule import TdmaSchedule
from acomms_core.queue.message_queue import MessageQueues, PacketRequest, QueuedMessage


class LinkEnd:
    def __init__(self, address: int, codec_config, settings: FragmentationSettings,
                 max_packet_bytes: int = 2144):
        self.address = address
        self.config = codec_config
        self.queues = MessageQueues(codec_config, max_packet_bytes=max_packet_bytes)
        by_id = codec_config.by_id()
        self.queues.fragmentation = FragmentationSender(
            dataclasses.replace(settings, own_address=address),
            lambda cid: by_id[cid].packet_codec.packet_codec if cid in by_id else None,
            QueuedMessage, src=address)
        self.receiver = FragmentReceiver(dataclasses.replace(settings, own_address=address))
        self.published: list = []        # (time, codec id, message)
        self.errors: list = []

    @property
    def sender(self) -> FragmentationSender:
        return self.queues.fragmentation

    def next_packet(self, mini: int, data: int, now: float, dest: int | None = None):
        request = PacketRequest(mini, data, match_dest=dest is not None, dest=dest or 0)
        return self.queues.next_packet(request, now)

    def receive(self, src: int, dest: int, mini: bytes, data: bytes, now: float) -> None:
        for packet_config in self.config.packet_codecs:
            if not packet_config.matches(src, dest, mini, data):
                continue
            codecs = self.receiver.decoders(packet_config, src)
            result = packet_config.packet_codec.decode(mini, data, codecs)
            for codec_id, piece in result.messages:
                if codec_id not in self.receiver.reserved_ids:
                    self.published.append((now, codec_id, piece))
                    continue
                outcome = self.receiver.handle(src, dest, codec_id, piece, codecs, now)
                with self.queues.lock:
                    if outcome.ack_out is not None:
                        self.sender.queue_ack(*outcome.ack_out)
                    if outcome.ack_heard is not None:
                        self.sender.on_ack(src, dest, outcome.ack_heard, now)
                if outcome.message is not None:
                    self.published.append((now, outcome.codec_id, outcome.message))
                if outcome.error:
                    self.errors.append(outcome.error)


@dataclasses.dataclass
class LinkRun:
    """Counts of one transfer over `run_transfer`."""

    data_packets: int = 0          # packets from the sender holding fragments
    ack_packets: int = 0           # packets from the receiver holding acks
    ack_bytes: int = 0             # bytes of the receiver's packets (acks only)
    lost_packets: int = 0
    completion_s: float | None = None
    delivered: int = 0


def run_transfer(sender: LinkEnd, receiver: LinkEnd, packet_bytes: tuple[int, int],
                 per: float, seed: int, packets_per_cycle: int = 8, packet_s: float = 6.0,
                 max_cycles: int = 10000, ack_id: int = 254) -> LinkRun:
    """TDMA-like exchange: the sender may send `packets_per_cycle` packets, then the receiver one
    (acks); every packet is lost independently with probability `per` (seeded)."""
    rng = random.Random(seed)
    run, now = LinkRun(), 0.0
    for _ in range(max_cycles):
        for end, other in ((sender, receiver),) * packets_per_cycle + ((receiver, sender),):
            now += packet_s
            packet = end.next_packet(*packet_bytes, now)
            if not packet.num_messages:
                continue
            if end is sender:
                run.data_packets += 1
            else:
                run.ack_packets += 1
                run.ack_bytes += len(packet.miniframe_bytes) + len(packet.dataframe_bytes)
            if rng.random() < per:
                run.lost_packets += 1
                continue
            other.receive(end.address, packet.dest, packet.miniframe_bytes,
                          packet.dataframe_bytes, now)
        if not sender.sender.fragmenter.sessions:
            break
    run.completion_s = now if not sender.sender.fragmenter.sessions else None
    run.delivered = len(receiver.published)
    return run


@dataclasses.dataclass(frozen=True)
class TdmaLink:
    """A basic TDMA schedule of `num_slots` slots in `cycle_s`: the sender transmits in
    `sender_slots`, the receiver in `receiver_slots` (tdma's active_slots syntax; other slots:
    vehicles that stay silent)."""

    cycle_s: float
    packet_s: float               # on-air time of one packet
    guard_s: float = 5.0          # tdma's guard_time_seconds default
    num_slots: int = 2
    sender_slots: int | str = 0
    receiver_slots: int | str = 1
    tick_s: float = 0.2           # tdma's tick_period_seconds default

    def schedule(self, slots) -> TdmaSchedule:
        return TdmaSchedule.create(num_slots=self.num_slots,
                                   slot_duration_seconds=self.cycle_s / self.num_slots,
                                   active_slots=slots, guard_time_seconds=self.guard_s,
                                   packet_length_seconds=self.packet_s)


def run_tdma_transfer(sender: LinkEnd, receiver: LinkEnd, packet_bytes: tuple[int, int],
                      per: float, seed: int, link: TdmaLink, add_message, add_at_s: float = 0.0,
                      max_cycles: int = 2000) -> LinkRun:
    """From time 0 both MACs ask their queues for packets in their slots; `add_message(now)` is
    called at the first request at or after `add_at_s` (the queue has seen the MAC's requests
    until then, as a running queue node has). Every packet is lost independently with
    probability `per` (seeded); a packet arrives at the end of its on-air time."""
    rng = random.Random(seed)
    run, ends = LinkRun(), (sender, receiver)
    schedules = {id(sender): link.schedule(link.sender_slots),
                 id(receiver): link.schedule(link.receiver_slots)}
    next_s = {id(end): 0.0 for end in ends}
    last_tx: dict[int, float | None] = {id(end): None for end in ends}
    added, now = False, 0.0
    while now < max_cycles * link.cycle_s:
        end = min(ends, key=lambda e: next_s[id(e)])
        other, now = ends[end is sender], next_s[id(end)]
        schedule = schedules[id(end)]
        if not schedule.may_transmit(now, last_tx[id(end)], link.packet_s).allowed:
            next_s[id(end)] = now + (schedule.time_to_next_active(now) or link.tick_s)
            continue
        if end is sender and not added and now >= add_at_s:
            add_message(now)
            added = True
        packet = end.next_packet(*packet_bytes, now)
        if not packet.num_messages:
            next_s[id(end)] = now + link.tick_s
            continue
        last_tx[id(end)], next_s[id(end)] = now, now + link.packet_s + link.guard_s
        _count_packet(run, end is sender, packet)
        if rng.random() < per:
            run.lost_packets += 1
        else:
            other.receive(end.address, packet.dest, packet.miniframe_bytes,
                          packet.dataframe_bytes, now + link.packet_s)
        if added and not sender.sender.fragmenter.sessions:
            run.completion_s = now + link.packet_s - add_at_s
            break
    run.delivered = len(receiver.published)
    return run


def _count_packet(run: LinkRun, from_sender: bool, packet) -> None:
    if from_sender:
        run.data_packets += 1
    else:
        run.ack_packets += 1
        run.ack_bytes += len(packet.miniframe_bytes) + len(packet.dataframe_bytes)
