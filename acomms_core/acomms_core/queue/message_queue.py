"""Per-topic priority message queues and packet filling, ROS-free (MessageQueueNode adapts it).

Behaviour follows ros_acomms: one queue per subscribed topic; messages are encoded when they
arrive; a full FIFO queue drops the arriving message, a full LIFO queue drops its oldest one;
a higher priority number is sent first; among equal priorities LIFO queues' messages go first
(newest first), then FIFO queues' messages (oldest first), exactly the order ros_acomms' shared
message list gives. A packet is filled greedily with every eligible message that still fits.

Beyond ros_acomms:
- every message in one packet has the same destination (the packet's dest) and packet codec;
- per-queue `ttl_seconds`: older messages expire (counted) instead of being sent stale;
- a message whose encoding can never fit `max_packet_bytes` is refused on arrival (counted)
  instead of sitting at the head of its queue;
- every size decision (what a budget holds, what a message costs in a packet, what can never
  fit) is asked of the queue's packet codec (`acomms_core.codecs.PacketCodec`), never assumed;
- one lock guards the queues, so any number of concurrent callers are served one after another;
- with `fragmentation` set (acomms_core.fragmentation.queue_hooks.FragmentationSender), an
  allow_fragmentation message larger than a packet becomes a fragment session, and its pieces
  and the acks this vehicle owes are offered into packets beside the queued messages;
- an optional `observer(event, **facts)` hears what happens to each message, under the lock (a
  run's accounting): "queued" (topic, msg, seq, time_s), "refused" (topic, msg, reason: the
  counter's name), "dropped_queue_full" (seq), "expired" (seq), "packed" (seqs, payload: the
  packet's bytes, time_s), "relayed" (payload, dest: the next hop, time_s);
- with `relay` set (acomms_core.relay.relay_backlog.RelayBacklog), packets heard for another
  destination are forwarded whole ahead of queued messages of a lower priority.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
from collections import Counter, deque

from bitstring import Bits

from acomms_core.codecs import CodecConfig, EncodeError, MessageCodecConfig
from acomms_core.fragmentation.sender import FragmentRefused
from acomms_core.modems.registry import DEFAULT_MODEM_PROFILE, modem_profile

BROADCAST_ADDRESS = modem_profile(DEFAULT_MODEM_PROFILE).broadcast_address


@dataclasses.dataclass(eq=False)
class QueuedMessage:
    seq: int               # arrival number, unique in the node
    queue: TopicQueue
    bits: Bits
    dest: int
    time_added: float      # seconds, on the node's clock

    @property
    def length_bits(self) -> int:
        return len(self.bits)


class TopicQueue:
    """The queue fed by one subscribe topic."""

    def __init__(self, topic: str, config: MessageCodecConfig, default_dest: int,
                 default_priority: int):
        self.topic = topic
        self.config = config
        self.codec_id = config.id
        self.codec = config.codec
        self.packet_codec = config.packet_codec.packet_codec
        self.dest_is_default = config.default_dest is None
        self.dest = default_dest if config.default_dest is None else config.default_dest
        self.priority_is_default = config.priority is None
        self.priority = default_priority if config.priority is None else config.priority
        self.lifo = config.queue_order == "lifo"
        self.maxsize = config.queue_maxsize
        self.active = config.is_active
        self.tags = frozenset(config.tags)
        self.ttl_seconds = config.ttl_seconds
        self.messages: deque[QueuedMessage] = deque()   # arrival order, oldest on the left
        self.bits_in_queue = 0
        self.length_counts: Counter = Counter()   # encoded length -> messages of that length

    def push(self, message: QueuedMessage) -> None:
        self.messages.append(message)
        self.bits_in_queue += message.length_bits
        self.length_counts[message.length_bits] += 1

    def _forget(self, message: QueuedMessage) -> None:
        self.bits_in_queue -= message.length_bits
        self.length_counts[message.length_bits] -= 1
        if not self.length_counts[message.length_bits]:
            del self.length_counts[message.length_bits]

    def pop_oldest(self) -> QueuedMessage:
        message = self.messages.popleft()
        self._forget(message)
        return message

    def remove(self, message: QueuedMessage) -> None:
        self.messages.remove(message)
        self._forget(message)

    def shortest_bits(self) -> int:
        """Length of the shortest queued message (lets the packet filler skip a whole queue)."""
        return min(self.length_counts) if self.length_counts else 0

    def in_send_order(self):
        return reversed(self.messages) if self.lifo else iter(self.messages)

    def next_message(self) -> QueuedMessage | None:
        if not self.messages:
            return None
        return self.messages[-1] if self.lifo else self.messages[0]


@dataclasses.dataclass
class QueueCounts:
    messages_received: int = 0
    messages_queued: int = 0
    messages_sent: int = 0
    dropped_queue_full: int = 0
    expired_ttl: int = 0
    rejected_too_large: int = 0
    encode_failures: int = 0
    ignored_inactive: int = 0
    packet_requests: int = 0
    non_ascii_replaced: int = 0     # characters sent as '?' by 7-bit string codecs
    dropped_on_arrival: int = 0     # messages lost before the node took them (middleware)
    incompatible_qos: int = 0       # publishers the middleware could not match (QoS policy)
    last_error: str = ""


@dataclasses.dataclass
class PacketData:
    """What get_next_packet_data returns."""

    dest: int = 0
    miniframe_bytes: bytes = b""
    dataframe_bytes: bytes = b""
    message_seqs: list = dataclasses.field(default_factory=list)
    codec_ids: list = dataclasses.field(default_factory=list)
    # (dynamic queue service, message id) of each dynamic queue's message in the packet
    dynamic_messages: list = dataclasses.field(default_factory=list)
    relayed: bool = False    # a packet this relay forwards whole (acomms_core.relay)

    @property
    def num_messages(self) -> int:
        """Messages in the packet (fragment pieces and acks included; a relayed packet: 1)."""
        return len(self.codec_ids) + int(self.relayed)


@dataclasses.dataclass
class PacketRequest:
    num_miniframe_bytes: int
    num_dataframe_bytes: int
    match_dest: bool = False
    dest: int = 0
    minimum_priority: int = 0        # 0: no minimum (as in ros_acomms)
    require_tags: tuple = ()
    exclude_tags: tuple = ()


class _PacketFill:
    """One packet being filled: the first message chosen fixes its packet codec and dest."""

    def __init__(self, request: PacketRequest, is_reachable):
        self.request = request
        self.is_reachable = is_reachable
        self.chosen: list[QueuedMessage] = []
        self.packet_codec = None
        self.dest = request.dest if request.match_dest else None
        self.remaining = 0
        self._capacity: dict = {}   # packet codec -> payload bits of the request's budget

    def room_for(self, queue: TopicQueue) -> int:
        if self.packet_codec is not None:
            return self.remaining
        codec = queue.packet_codec
        if codec not in self._capacity:
            self._capacity[codec] = codec.payload_capacity_bits(
                self.request.num_miniframe_bytes, self.request.num_dataframe_bytes)
        return self._capacity[codec]

    def offer(self, message: QueuedMessage) -> tuple[bool, bool]:
        """Take the message if it may and can go; (keep offering its queue, packet is full)."""
        queue = message.queue
        if self.packet_codec is not None and queue.packet_codec is not self.packet_codec:
            return False, False
        if (self.dest is not None and message.dest != self.dest) or not self.is_reachable(
                message.dest):
            return queue.codec.dest_field is not None, False  # per-message dests differ
        codec = queue.packet_codec
        room = self.room_for(queue)
        needed = codec.message_cost_bits(message.length_bits)
        if needed > room:
            # none of its messages fits any more when even its shortest does not
            return codec.message_cost_bits(queue.shortest_bits()) <= room, False
        if self.packet_codec is None:
            self.packet_codec, self.dest, self.remaining = codec, message.dest, room
        self.chosen.append(message)
        self.remaining -= needed
        return True, self.remaining < codec.message_cost_bits(0)


def queue_may_send(queue: TopicQueue, request: PacketRequest) -> bool:
    """Whether the request lets this queue send (active, priority, tags)."""
    if not queue.active:
        return False
    if request.minimum_priority and queue.priority < request.minimum_priority:
        return False
    require, exclude = set(request.require_tags), set(request.exclude_tags)
    if require and not (queue.tags & require):
        return False
    return not (exclude and (queue.tags & exclude))


def pack_frames(packet_codec, chosen: list, request: PacketRequest) -> tuple[bytes, bytes]:
    """The packet codec's frames of the chosen messages (one packet codec and dest). An
    authenticated codec (acomms_core.security) binds the packet's dest into its tag; a relayable
    one writes it in its relay header (acomms_core.relay)."""
    takes_dest = hasattr(packet_codec, "sealer") or getattr(packet_codec, "relayable", False)
    extra = {"dest": chosen[0].dest} if takes_dest else {}
    return packet_codec.pack([(m.queue.codec_id, m.bits) for m in chosen],
                             request.num_miniframe_bytes, request.num_dataframe_bytes, **extra)


class MessageQueues:
    """All queues of one node, their counters and the packet filler."""

    def __init__(self, config: CodecConfig, default_dest: int = BROADCAST_ADDRESS,
                 default_priority: int = 10,
                 unknown_dests_are_reachable: bool = True, max_packet_bytes: int = 2144):
        self.config = config
        self.lock = threading.Lock()
        self.queues: dict[str, TopicQueue] = {}
        for message_config in config.message_codecs:
            for topic in message_config.subscribe_topics():
                self.queues[topic] = TopicQueue(topic, message_config, default_dest,
                                                default_priority)
        self.unknown_dests_are_reachable = unknown_dests_are_reachable
        self.destination_reachable: dict[int, bool] = {}
        self.max_packet_bytes = max_packet_bytes
        self.counts = QueueCounts()
        # Codec warnings to log once (a time field's first clamp); the node takes them
        # (take_clamp_warnings) and logs them
        self.clamp_warnings: list[str] = []
        self._seq = 0
        self.observer = None  # optional callable(event, **facts), see the module docstring
        # optional acomms_core.fragmentation.queue_hooks.FragmentationSender (issue 15)
        self.fragmentation = None
        self.relay = None   # optional acomms_core.relay.relay_backlog.RelayBacklog (issue 32)

    def _observe(self, event: str, **facts) -> None:
        if self.observer is not None:
            self.observer(event, **facts)

    # -- settings -------------------------------------------------------------------------------
    def set_defaults(self, default_dest: int | None = None,
                     default_priority: int | None = None) -> None:
        with self.lock:
            for queue in self.queues.values():
                if default_dest is not None and queue.dest_is_default:
                    queue.dest = default_dest
                if default_priority is not None and queue.priority_is_default:
                    queue.priority = default_priority

    def set_priority(self, topic: str, priority: int) -> bool:
        with self.lock:
            queue = self.queues.get(topic)
            if queue is None:
                return False
            queue.priority = int(priority)
            queue.priority_is_default = False
            return True

    def set_active(self, topic: str, active: bool) -> bool:
        with self.lock:
            queue = self.queues.get(topic)
            if queue is None:
                return False
            queue.active = bool(active)
            return True

    def topic_of_queue_id(self, queue_id: int) -> str | None:
        """The subscribe topic of the queue whose message codec has this id (None: no such)."""
        return next((topic for topic, queue in self.queues.items()
                     if queue.codec_id == queue_id), None)

    def set_reachable(self, dest: int, reachable: bool) -> None:
        with self.lock:
            self.destination_reachable[int(dest)] = bool(reachable)

    def is_reachable(self, dest: int) -> bool:
        return self.destination_reachable.get(dest, self.unknown_dests_are_reachable)

    def largest_payload_bits(self, queue: TopicQueue) -> int:
        """Payload bits of a max_packet_bytes packet of the queue's packet codec."""
        return queue.packet_codec.total_capacity_bits(self.max_packet_bytes)

    def never_fits(self, queue: TopicQueue, message_bits: int) -> bool:
        """Whether a message of that many bits can never be sent (max_packet_bytes)."""
        return (queue.packet_codec.message_cost_bits(message_bits)
                > self.largest_payload_bits(queue))

    # -- arrival --------------------------------------------------------------------------------
    def add(self, topic: str, msg, now: float) -> str:
        """Encode and queue one message; returns what happened (queued, or why not)."""
        queue = self.queues.get(topic)
        with self.lock:
            self.counts.messages_received += 1
            if queue is None:
                return self._fail("encode_failures", f"no queue for topic '{topic}'")
            if not queue.active:
                self.counts.ignored_inactive += 1
                self._observe("refused", topic=topic, msg=msg, reason="ignored_inactive")
                return "ignored_inactive"
        try:
            bits, metadata = queue.codec.encode(msg)   # outside the lock: encoding is the slow part
        except EncodeError as exc:
            with self.lock:
                self._observe("refused", topic=topic, msg=msg, reason="encode_failures")
                return self._fail("encode_failures", f"{topic}: cannot encode: {exc}")
        dest = queue.dest
        metadata = metadata or {}
        if "dest" in metadata:
            dest = metadata["dest"]
        with self.lock:
            self.clamp_warnings.extend(metadata.get("clamp_warnings", ()))
            if metadata.get("non_ascii_replaced"):
                self.counts.non_ascii_replaced += metadata["non_ascii_replaced"]
                self.counts.last_error = (f"{topic}: {metadata['non_ascii_replaced']} non-ASCII "
                                          "characters sent as '?'")
            never_fits = self.never_fits(queue, len(bits))
            hooks = self.fragmentation
            if hooks is not None and hooks.wants(queue, len(bits), never_fits):
                return self._open_session(hooks, queue, topic, msg, bits, dest, now)
            if never_fits:
                self._observe("refused", topic=topic, msg=msg, reason="rejected_too_large")
                return self._fail("rejected_too_large",
                                  f"{topic}: message is {len(bits)} bits "
                                  f"({queue.packet_codec.message_cost_bits(len(bits))} in a "
                                  f"packet), a packet of {self.max_packet_bytes} bytes carries "
                                  f"at most {self.largest_payload_bits(queue)} payload bits")
            self._seq += 1
            queued = QueuedMessage(self._seq, queue, bits, dest, now)
            outcome = "queued"
            if len(queue.messages) >= queue.maxsize:
                self.counts.dropped_queue_full += 1
                if not queue.lifo:
                    self._observe("refused", topic=topic, msg=msg, reason="dropped_queue_full")
                    return "dropped_queue_full"
                self._observe("dropped_queue_full", seq=queue.pop_oldest().seq)
                outcome = "queued_dropped_oldest"
            queue.push(queued)
            self.counts.messages_queued += 1
            self._observe("queued", topic=topic, msg=msg, seq=queued.seq, time_s=now)
            return outcome

    def take_clamp_warnings(self) -> list[str]:
        """The codec warnings noted since the last call (each field's first clamp)."""
        with self.lock:
            warnings, self.clamp_warnings = self.clamp_warnings, []
        return warnings

    def _open_session(self, hooks, queue, topic, msg, bits, dest, now: float) -> str:
        """A message that becomes a fragment session (acomms_core.fragmentation)."""
        try:
            hooks.open(queue, bits, dest, now, self._seq + 1)
        except FragmentRefused as exc:
            self._observe("refused", topic=topic, msg=msg, reason="rejected_too_large")
            if exc.counter == "rejected_too_large":
                return self._fail("rejected_too_large", f"{topic}: {exc}")
            self.counts.last_error = f"{topic}: {exc}"
            return exc.counter
        self._seq += 1
        self.counts.messages_queued += 1
        self._observe("queued", topic=topic, msg=msg, seq=self._seq, time_s=now)
        return "fragmented"

    def _fail(self, counter: str, reason: str) -> str:
        setattr(self.counts, counter, getattr(self.counts, counter) + 1)
        self.counts.last_error = reason
        return counter

    # -- expiry ---------------------------------------------------------------------------------
    def _expire_locked(self, now: float) -> None:
        for queue in self.queues.values():
            if queue.ttl_seconds <= 0:
                continue
            oldest_allowed = now - queue.ttl_seconds
            while queue.messages and queue.messages[0].time_added < oldest_allowed:
                self._observe("expired", seq=queue.pop_oldest().seq)
                self.counts.expired_ttl += 1

    def expire(self, now: float) -> None:
        with self.lock:
            self._expire_locked(now)

    def next_expiry_s(self) -> float | None:
        """When the oldest message of a queue with a TTL is due to expire (it goes at the first
        check after that time); None when none will."""
        with self.lock:
            return min((queue.messages[0].time_added + queue.ttl_seconds
                        for queue in self.queues.values()
                        if queue.ttl_seconds > 0 and queue.messages), default=None)

    # -- packet filling -------------------------------------------------------------------------
    def next_packet(self, request: PacketRequest, now: float) -> PacketData:
        """Fill a packet with the highest-priority messages that fit; remove them from queues."""
        with self.lock:
            self.counts.packet_requests += 1
            self._expire_locked(now)
            if self.relay is not None and (relayed := self.relay.next_packet(self, request, now)):
                return relayed
            packet, planned = self._fill(request, now)
            return self.pack_locked(packet.chosen, request, now, planned)

    def pack_locked(self, chosen: list, request: PacketRequest, now: float,
                    planned: list = ()) -> PacketData:
        """Pack the chosen messages in order and take the queued ones out of their queues.
        `chosen` may hold fragment pieces and acks (QueuedMessages of a PieceQueue, committed
        through `planned`) and dynamic queues' messages (acomms_core.queue.dynamic_queue:
        anything that is not a QueuedMessage, with `queue`, `bits`, `dest` and `key`)."""
        if not chosen:
            return PacketData(dest=request.dest if request.match_dest else 0)
        packet_codec = chosen[0].queue.packet_codec
        mini, data = pack_frames(packet_codec, chosen, request)
        queued = [m for m in chosen if isinstance(m, QueuedMessage)]
        for message in queued:
            message.queue.remove(message)
        if planned:
            self.fragmentation.commit(planned, now)
        seqs = [m.seq for m in queued if m.seq]   # fragment acks have no message number
        self.counts.messages_sent += sum(not hasattr(m.queue, "is_fragment") for m in chosen)
        self._observe("packed", seqs=seqs, payload=mini + data, time_s=now)
        return PacketData(dest=chosen[0].dest, miniframe_bytes=mini, dataframe_bytes=data,
                          message_seqs=seqs,
                          codec_ids=[m.queue.codec_id for m in chosen],
                          dynamic_messages=[m.key for m in chosen
                                            if not isinstance(m, QueuedMessage)])

    def _fill(self, request: PacketRequest, now: float) -> tuple[_PacketFill, list]:
        """The packet's messages: fragment pieces and acks of at least the highest queued
        priority first, then queued messages, then the other pieces (fragmentation.queue_hooks)."""
        packet = _PacketFill(request, self.is_reachable)
        hooks = self.fragmentation
        if hooks is None:
            self._select(request, packet)
            return packet, []
        eligible = self._eligible_queues(request)
        def may_send(queue) -> bool:
            return queue_may_send(queue, request)
        top = max((queue.priority for queue in eligible), default=None)
        planned = hooks.fill(packet, request, may_send, now, at_least=top) if top is not None \
            else []
        self._select(request, packet)
        return packet, planned + hooks.fill(packet, request, may_send, now)

    def _eligible_queues(self, request: PacketRequest) -> list[TopicQueue]:
        return [queue for queue in self.queues.values()
                if queue.messages and queue_may_send(queue, request)]

    def _select(self, request: PacketRequest,
                packet: _PacketFill | None = None) -> list[QueuedMessage]:
        by_priority: dict[int, list[TopicQueue]] = {}
        for queue in self._eligible_queues(request):
            by_priority.setdefault(queue.priority, []).append(queue)
        if packet is None:
            packet = _PacketFill(request, self.is_reachable)
        for priority in sorted(by_priority, reverse=True):
            if self._fill_level(packet, by_priority[priority]):
                break
        return packet.chosen

    def _fill_level(self, packet: _PacketFill, queues: list[TopicQueue]) -> bool:
        """Offer the messages of these queues (one priority) in send order; True: full."""
        heap = []
        for index, queue in enumerate(queues):
            iterator = queue.in_send_order()
            first = next(iterator, None)
            if first is not None:
                heap.append((self._order_key(first), index, first, iterator))
        heapq.heapify(heap)
        while heap:
            _, index, message, iterator = heapq.heappop(heap)
            keep_queue, full = packet.offer(message)
            if full:
                return True
            if keep_queue:
                following = next(iterator, None)
                if following is not None:
                    heapq.heappush(heap, (self._order_key(following), index, following,
                                          iterator))
        return False

    @staticmethod
    def _order_key(message: QueuedMessage) -> tuple:
        """ros_acomms' tie order: LIFO queues first (newest first), then FIFO (oldest first)."""
        return (0, -message.seq) if message.queue.lifo else (1, message.seq)

    # -- status ---------------------------------------------------------------------------------
    def status(self, now: float) -> dict:
        """Snapshot for QueueStatus (expires stale messages first)."""
        with self.lock:
            self._expire_locked(now)
            groups = Counter()
            summaries = []
            for queue in self.queues.values():
                for message in queue.messages:
                    groups[(queue.priority, message.dest)] += 1
                head = queue.next_message()
                summaries.append({
                    "queue_id": queue.codec_id, "topic": queue.topic,
                    "priority": queue.priority, "enabled": queue.active,
                    "message_count": len(queue.messages),
                    "next_message_size_bits": head.length_bits if head else 0,
                    "total_bits_in_queue": queue.bits_in_queue})
            return {
                "total_message_count": sum(groups.values()),
                "highest_priority": max((p for p, _ in groups), default=-1),
                "queued_dest_addresses": sorted({d for _, d in groups}),
                "summary_message_counts": [
                    {"priority": p, "dest_address": d, "message_count": n}
                    for (p, d), n in sorted(groups.items(), key=lambda kv: (-kv[0][0], kv[0][1]))],
                "queue_summaries": summaries,
            }
