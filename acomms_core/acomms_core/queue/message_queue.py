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
- one lock guards the queues, so any number of concurrent callers are served one after another.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
from collections import Counter, deque

from bitstring import Bits

from acomms_core.codecs import CodecConfig, EncodeError, MessageCodecConfig
from acomms_core.codecs.packet_codec import ID_BITS


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
    last_error: str = ""


@dataclasses.dataclass
class PacketData:
    """What get_next_packet_data returns."""

    dest: int = 0
    miniframe_bytes: bytes = b""
    dataframe_bytes: bytes = b""
    message_seqs: list = dataclasses.field(default_factory=list)
    codec_ids: list = dataclasses.field(default_factory=list)

    @property
    def num_messages(self) -> int:
        return len(self.message_seqs)


@dataclasses.dataclass
class PacketRequest:
    num_miniframe_bytes: int
    num_dataframe_bytes: int
    match_dest: bool = False
    dest: int = 0
    minimum_priority: int = 0        # 0: no minimum (as in ros_acomms)
    require_tags: tuple = ()
    exclude_tags: tuple = ()


class MessageQueues:
    """All queues of one node, their counters and the packet filler."""

    def __init__(self, config: CodecConfig, default_dest: int = 121, default_priority: int = 10,
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
        self._seq = 0

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

    def set_reachable(self, dest: int, reachable: bool) -> None:
        with self.lock:
            self.destination_reachable[int(dest)] = bool(reachable)

    def is_reachable(self, dest: int) -> bool:
        return self.destination_reachable.get(dest, self.unknown_dests_are_reachable)

    def max_message_bits(self, queue: TopicQueue) -> int:
        """Largest message (without its id) a packet of max_packet_bytes can carry."""
        codec = queue.packet_codec
        header_bytes = len(codec.miniframe_header) + len(codec.dataframe_header)
        return 8 * (self.max_packet_bytes - header_bytes) - ID_BITS

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
                return "ignored_inactive"
        try:
            bits, metadata = queue.codec.encode(msg)   # outside the lock: encoding is the slow part
        except EncodeError as exc:
            with self.lock:
                return self._fail("encode_failures", f"{topic}: cannot encode: {exc}")
        dest = queue.dest
        if metadata and "dest" in metadata:
            dest = metadata["dest"]
        with self.lock:
            limit = self.max_message_bits(queue)
            if len(bits) > limit:
                return self._fail("rejected_too_large",
                                  f"{topic}: message is {len(bits)} bits, a packet of "
                                  f"{self.max_packet_bytes} bytes carries at most {limit}")
            self._seq += 1
            queued = QueuedMessage(self._seq, queue, bits, dest, now)
            outcome = "queued"
            if len(queue.messages) >= queue.maxsize:
                self.counts.dropped_queue_full += 1
                if not queue.lifo:
                    return "dropped_queue_full"
                queue.pop_oldest()
                outcome = "queued_dropped_oldest"
            queue.push(queued)
            self.counts.messages_queued += 1
            return outcome

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
                queue.pop_oldest()
                self.counts.expired_ttl += 1

    def expire(self, now: float) -> None:
        with self.lock:
            self._expire_locked(now)

    # -- packet filling -------------------------------------------------------------------------
    def next_packet(self, request: PacketRequest, now: float) -> PacketData:
        """Fill a packet with the highest-priority messages that fit; remove them from queues."""
        with self.lock:
            self.counts.packet_requests += 1
            self._expire_locked(now)
            chosen = self._select(request)
            if not chosen:
                return PacketData(dest=request.dest if request.match_dest else 0)
            packet_codec = chosen[0].queue.packet_codec
            mini, data = packet_codec.pack(
                [(m.queue.codec_id, m.bits) for m in chosen],
                request.num_miniframe_bytes, request.num_dataframe_bytes)
            for message in chosen:
                message.queue.remove(message)
            self.counts.messages_sent += len(chosen)
            return PacketData(dest=chosen[0].dest, miniframe_bytes=mini, dataframe_bytes=data,
                              message_seqs=[m.seq for m in chosen],
                              codec_ids=[m.queue.codec_id for m in chosen])

    def _eligible_queues(self, request: PacketRequest) -> list[TopicQueue]:
        require, exclude = set(request.require_tags), set(request.exclude_tags)
        eligible = []
        for queue in self.queues.values():
            if not queue.messages or not queue.active:
                continue
            if request.minimum_priority and queue.priority < request.minimum_priority:
                continue
            if require and not (queue.tags & require):
                continue
            if exclude and (queue.tags & exclude):
                continue
            eligible.append(queue)
        return eligible

    def _select(self, request: PacketRequest) -> list[QueuedMessage]:
        by_priority: dict[int, list[TopicQueue]] = {}
        for queue in self._eligible_queues(request):
            by_priority.setdefault(queue.priority, []).append(queue)
        chosen: list[QueuedMessage] = []
        packet_codec = None
        dest = request.dest if request.match_dest else None
        remaining = 0
        capacity_cache = {}
        for priority in sorted(by_priority, reverse=True):
            heap = []
            for index, queue in enumerate(by_priority[priority]):
                iterator = queue.in_send_order()
                first = next(iterator, None)
                if first is not None:
                    heap.append((self._order_key(first), index, first, iterator))
            heapq.heapify(heap)
            while heap:
                _, index, message, iterator = heapq.heappop(heap)
                queue = message.queue
                keep_queue = True
                if packet_codec is not None and queue.packet_codec is not packet_codec:
                    keep_queue = False
                elif dest is not None and message.dest != dest:
                    keep_queue = queue.codec.dest_field is not None  # per-message dests differ
                elif not self.is_reachable(message.dest):
                    keep_queue = queue.codec.dest_field is not None
                else:
                    if packet_codec is None:
                        codec = queue.packet_codec
                        if codec not in capacity_cache:
                            capacity_cache[codec] = codec.payload_capacity_bits(
                                request.num_miniframe_bytes, request.num_dataframe_bytes)
                        room = capacity_cache[codec]
                    else:
                        room = remaining
                    needed = ID_BITS + message.length_bits
                    if needed <= room:
                        if packet_codec is None:
                            packet_codec, dest = queue.packet_codec, message.dest
                            remaining = room
                        chosen.append(message)
                        remaining -= needed
                        if remaining < ID_BITS:
                            return chosen
                    elif ID_BITS + queue.shortest_bits() > room:
                        keep_queue = False  # none of its messages fits any more
                if keep_queue:
                    following = next(iterator, None)
                    if following is not None:
                        heapq.heappush(heap, (self._order_key(following), index, following,
                                              iterator))
        return chosen

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
