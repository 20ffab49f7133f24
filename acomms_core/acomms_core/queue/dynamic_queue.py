"""Dynamic queues (ros_acomms parity), ROS-free: messages a user node offers at packet-build time.

A codec-config entry with `dynamic_queue_service` instead of `subscribe_topic` is a dynamic queue:
message_queue_node keeps no messages for it but asks that service (GetNextQueuedMessage) while it
builds a packet, and tells the user node on `dynamic_update_topic` (UpdateQueuedMessage) what
became of the messages it offered (`QueueEvent`, below). The ROS calls are the node's
(`acomms_core.nodes.dynamic_queue_link`); this module decides what to ask and what to take.

How a packet is built (`PacketBuild`, a step machine: it returns the queries to make, the node
answers them, until the packet is done):
- every active dynamic queue is asked once at the start, with the room left in the packet
  (`max_size_in_bits`: the largest message the packet codec still fits), the request's
  minimum priority and tags, the packet's dest and packet codec once fixed (0 / '' before), and
  the ids of that queue's messages already in the packet (`exclude_message_ids`);
- the packet is filled by priority, highest first; at one priority the static (subscribed)
  queues' messages go first (static queues win ties, as in ros_acomms), then the dynamic offers
  in codec-config order; a taken offer makes its queue be asked again for its next message;
- an offer that no longer fits (room, dest or packet codec fixed since) is asked for again with
  the new limits, once per change of limits;
- an offer is refused, counted (`counts`, "dynamic_refused_<why>") and never sent when it is
  larger than asked, its size does not match its data, its priority is below the minimum, its
  tags break the slot's require/exclude tags, it repeats an excluded id, or (match_dest) it is for
  another dest; no answer (service missing, call failed or late) counts as no offer.
An offer's dest is its `dest_address`, or the entry's default_dest (else the node's) when 0.
At most MAX_QUERIES_PER_PACKET queries are made for one packet.

Events (`PacketBuild.take_events()`, in order; ros_acomms defines the three events but its
message_queue_node sends only TRANSMITTED; here each accepted offer gets a QUEUED and then exactly
one DEQUEUED or TRANSMITTED):
- QUEUED: an offer passed the checks; the link holds that message for the packet being built
  (refused offers and no-answers get no event: they are counted instead);
- DEQUEUED: the link let a held message go without sending it (it no longer fits the packet's
  room, dest or packet codec, the packet was full or done without it, or the build was
  abandoned): the user node keeps it and may offer it again (then a new QUEUED follows);
- TRANSMITTED: the message is in the packet handed to the MAC.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from bitstring import Bits

from acomms_core.codecs import CodecConfig, MessageCodecConfig
from acomms_core.queue.message_queue import (
    MessageQueues,
    PacketData,
    PacketRequest,
    QueuedMessage,
    _PacketFill,
)

MAX_QUERIES_PER_PACKET = 64

# What became of an offered message (module doc); the node maps these to UpdateQueuedMessage.
QUEUED, DEQUEUED, TRANSMITTED = "queued", "dequeued", "transmitted"


@dataclasses.dataclass(frozen=True)
class QueueEvent:
    """One UpdateQueuedMessage to send: `event` of `message_id` of the queue at `service`."""

    service: str
    message_id: int
    event: str


class DynamicQueue:
    """One dynamic codec-config entry: its service, update topic, codecs and defaults."""

    def __init__(self, config: MessageCodecConfig, order: int):
        self.service = config.dynamic_queue_service
        self.update_topic = config.dynamic_update_topic
        self.codec_id = config.id
        self.codec = config.codec
        self.packet_codec = config.packet_codec.packet_codec
        self.config_dest = config.default_dest
        self.active = config.is_active
        self.order = order  # position in the codec config: tie order between dynamic queues

    @staticmethod
    def shortest_bits() -> int:
        """What the packet filler asks of a queue whose message did not fit (nothing kept)."""
        return 0


@dataclasses.dataclass
class Query:
    """One GetNextQueuedMessage request."""

    queue: DynamicQueue
    max_size_in_bits: int
    minimum_priority: int
    dest_address: int
    packet_codec: str
    exclude_message_ids: list
    require_tags: list
    exclude_tags: list


@dataclasses.dataclass
class Offer:
    """One GetNextQueuedMessage response with has_message true."""

    message_id: int
    dest_address: int
    priority: int
    data: bytes
    data_size_in_bits: int
    msg_tags: tuple = ()


class DynamicMessage:
    """An accepted offer as the packet filler sees a message."""

    def __init__(self, queue: DynamicQueue, offer: Offer, dest: int):
        self.queue = queue
        self.message_id = offer.message_id
        self.priority = offer.priority
        self.bits = Bits(bytes=offer.data, length=offer.data_size_in_bits)
        self.dest = dest

    @property
    def length_bits(self) -> int:
        return len(self.bits)

    @property
    def key(self) -> tuple[str, int]:
        return self.queue.service, self.message_id


class DynamicQueues:
    """The dynamic queues of one node, their counters and the node's default dest."""

    def __init__(self, config: CodecConfig, default_dest: int):
        self.queues = [DynamicQueue(m, i) for i, m in enumerate(config.message_codecs)
                       if m.dynamic_queue_service]
        self.default_dest = default_dest
        self.counts: Counter[str] = Counter()
        self.last_error = ""

    def __bool__(self) -> bool:
        return bool(self.queues)

    def set_active(self, queue_id: int, active: bool) -> bool:
        """queue_enable for a dynamic queue (False: no such id)."""
        found = [q for q in self.queues if q.codec_id == queue_id]
        for queue in found:
            queue.active = bool(active)
        return bool(found)

    def refuse(self, queue: DynamicQueue, why: str, detail: str) -> None:
        self.counts[f"dynamic_refused_{why}"] += 1
        self.last_error = f"{queue.service}: offer refused: {detail}"


def largest_message_bits(packet_codec, room_bits: int) -> int:
    """The longest message (bits) whose cost in a packet is at most room_bits (0: none)."""
    low, high = 0, max(room_bits, 0)
    if packet_codec.message_cost_bits(0) > room_bits:
        return 0
    while low < high:  # message_cost_bits never decreases as a message grows
        middle = (low + high + 1) // 2
        if packet_codec.message_cost_bits(middle) <= room_bits:
            low = middle
        else:
            high = middle - 1
    return low


class PacketBuild:
    """One packet built from static and dynamic queues (module doc). Use: `queries` to make
    now; `answer({service: Offer | None})` until `done`; then `result` (PacketData). Events
    (QUEUED / DEQUEUED / TRANSMITTED) pile up for `take_events()`; `abandon()` lets every held
    message go (a failed or cancelled build)."""

    def __init__(self, queues: MessageQueues, dynamic: DynamicQueues, request: PacketRequest,
                 now: float):
        self.queues, self.dynamic, self.request, self.now = queues, dynamic, request, now
        self.result: PacketData | None = None
        self.queries: list[Query] = []
        self.queries_made = 0
        with queues.lock:
            queues.counts.packet_requests += 1
            queues._expire_locked(now)
        self._fill = _PacketFill(request, queues.is_reachable)
        self._offers: dict[str, DynamicMessage | None] = {}
        self._asked_with: dict[str, tuple] = {}
        self._visited: set[int] = set()  # static queues already offered to the packet
        self._held: dict[tuple, DynamicMessage] = {}  # accepted offers not yet resolved
        self._events: list[QueueEvent] = []
        self._stale = [q for q in dynamic.queues if q.active]
        self._advance()

    @property
    def done(self) -> bool:
        return self.result is not None

    def answer(self, answers: dict[str, Offer | None]) -> None:
        for query in self.queries:
            service = query.queue.service
            self._let_go(self._offers.get(service))
            message = self._check(query, answers.get(service))
            self._offers[service] = message
            if message is not None:
                self._held[message.key] = message
                self._event(message.key, QUEUED)
        self.queries = []
        self._advance()

    def take_events(self) -> list[QueueEvent]:
        """The events since the last call, in the order they happened."""
        events, self._events = self._events, []
        return events

    def abandon(self) -> None:
        """The packet will not be sent: every held message is DEQUEUED."""
        for key in self._held:
            self._event(key, DEQUEUED)
        self._held.clear()
        self._offers.clear()

    def _event(self, key: tuple, event: str) -> None:
        self._events.append(QueueEvent(key[0], key[1], event))
        if event == DEQUEUED:
            self.dynamic.counts["dynamic_dequeued"] += 1

    def _let_go(self, message: DynamicMessage | None) -> None:
        """A held message that is not in the packet is DEQUEUED (none / chosen: nothing)."""
        if message is None or message in self._fill.chosen:
            return
        if self._held.pop(message.key, None) is not None:
            self._event(message.key, DEQUEUED)

    # ----- steps --------------------------------------------------------------------------

    def _advance(self) -> None:
        """Fill until the packet is done or dynamic queues must be asked."""
        while True:
            self._find_stale_offers()
            if self._stale and self.queries_made < MAX_QUERIES_PER_PACKET:
                stale, self._stale = self._stale, []
                queries = [self._query(q) for q in stale]
                self.queries = [q for q in queries if q.max_size_in_bits > 0][
                    :MAX_QUERIES_PER_PACKET - self.queries_made]
                self.queries_made += len(self.queries)
                for query in self.queries:
                    self._asked_with[query.queue.service] = self._limits(query.queue)
                if self.queries:
                    return
            self._stale = []
            if not self._fill_next_level():
                self._finish()
                return

    def _limits(self, queue: DynamicQueue) -> tuple:
        fill = self._fill
        return fill.room_for(queue), fill.dest, fill.packet_codec

    def _query(self, queue: DynamicQueue) -> Query:
        fill, request = self._fill, self.request
        taken = [m.message_id for m in fill.chosen
                 if isinstance(m, DynamicMessage) and m.queue is queue]
        codec = fill.packet_codec
        return Query(queue, largest_message_bits(queue.packet_codec, fill.room_for(queue)),
                     request.minimum_priority, 0 if fill.dest is None else fill.dest,
                     "" if codec is None else str(getattr(codec, "name", "")), taken,
                     list(request.require_tags), list(request.exclude_tags))

    def _find_stale_offers(self) -> None:
        """Offers that cannot go in any more are asked again, once per change of limits."""
        fill = self._fill
        for queue in self.dynamic.queues:
            message = self._offers.get(queue.service)
            if message is None or queue in self._stale:
                continue
            fits = ((fill.packet_codec is None or queue.packet_codec is fill.packet_codec)
                    and (fill.dest is None or message.dest == fill.dest)
                    and queue.packet_codec.message_cost_bits(message.length_bits)
                    <= fill.room_for(queue))
            if not fits:
                self._offers[queue.service] = None
                self._let_go(message)
                if self._asked_with.get(queue.service) != self._limits(queue):
                    self._stale.append(queue)

    def _fill_next_level(self) -> bool:
        """Offer everything of the highest priority left; False: nothing left or full."""
        queues = self.queues
        with queues.lock:
            static = [q for q in queues._eligible_queues(self.request)
                      if id(q) not in self._visited]
            offers = [m for m in self._offers.values() if m is not None]
            levels = {q.priority for q in static} | {m.priority for m in offers}
            if not levels:
                return False
            level = max(levels)
            at_level = [q for q in static if q.priority == level]
            self._visited.update(id(q) for q in at_level)
            if queues._fill_level(self._fill, at_level):
                return False
        for message in sorted((m for m in offers if m.priority == level),
                              key=lambda m: m.queue.order):
            queue = message.queue
            self._offers[queue.service] = None
            _, full = self._fill.offer(message)
            self._let_go(message)  # it did not fit after all
            if (message in self._fill.chosen  # ask for its next message
                    or self._asked_with.get(queue.service) != self._limits(queue)):
                self._stale.append(queue)
            if full:
                return False
        return True

    def _finish(self) -> None:
        queues = self.queues
        with queues.lock:
            # A queued message may have expired or been dropped while the dynamic queues
            # answered: it is no longer there to send.
            chosen = [m for m in self._fill.chosen
                      if not isinstance(m, QueuedMessage) or m in m.queue.messages]
            self.result = queues.pack_locked(chosen, self.request, self.now)
        self.dynamic.counts["dynamic_messages_sent"] += len(self.result.dynamic_messages)
        sent = set(self.result.dynamic_messages)
        for key in list(self._held):
            self._event(key, TRANSMITTED if key in sent else DEQUEUED)
        self._held.clear()

    # ----- offers -------------------------------------------------------------------------

    def _check(self, query: Query, offer: Offer | None) -> DynamicMessage | None:
        """The offer as a message for the packet, or None (refusals counted)."""
        if offer is None:
            return None
        queue, request = query.queue, self.request
        tags = set(offer.msg_tags)
        problem = None
        if offer.data_size_in_bits <= 0 or offer.data_size_in_bits > 8 * len(offer.data):
            problem = ("bad_size", f"data_size_in_bits {offer.data_size_in_bits} for "
                       f"{len(offer.data)} data bytes")
        elif offer.data_size_in_bits > query.max_size_in_bits:
            problem = ("too_large", f"{offer.data_size_in_bits} bits, asked for at most "
                       f"{query.max_size_in_bits}")
        elif request.minimum_priority and offer.priority < request.minimum_priority:
            problem = ("below_minimum_priority", f"priority {offer.priority} < minimum "
                       f"{request.minimum_priority}")
        elif (request.require_tags and not tags & set(request.require_tags)) or (
                tags & set(request.exclude_tags)):
            problem = ("tags", f"tags {sorted(tags)} for require {list(request.require_tags)}"
                       f", exclude {list(request.exclude_tags)}")
        elif offer.message_id in query.exclude_message_ids:
            problem = ("repeated", f"message id {offer.message_id} is already in the packet")
        dest = offer.dest_address or (queue.config_dest if queue.config_dest is not None
                                      else self.dynamic.default_dest)
        if problem is None and request.match_dest and dest != request.dest:
            problem = ("wrong_dest", f"dest {dest}, the slot sends to {request.dest}")
        if problem is not None:
            self.dynamic.refuse(queue, *problem)
            return None
        self.dynamic.counts["dynamic_offers"] += 1
        return DynamicMessage(queue, offer, dest)
