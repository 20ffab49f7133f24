"""The queue's side of fragmentation (ROS-free): sessions and acks offered into packets.

`MessageQueues.fragmentation` holds a `FragmentationSender`. It
- decides which messages become sessions (`wants`: an allow_fragmentation queue's message that
  has `fragment_always: true` in its codec config, never fits max_packet_bytes, or is longer
  than fragment_above_bytes when that is set, else does not fit the last packet the MAC asked
  for) and opens them;
- keeps the acks this vehicle owes (`queue_ack`, the latest one per session), and sends each
  again `fragment_ack_repeats` times, `fragment_ack_repeat_s` apart, unless a newer one for the
  same session replaces it (a lost ack would otherwise cost the sender an ack timeout and the
  link a round of needless retransmissions); a repeat goes only where queued messages leave room
  (or in a packet with nothing else), so it never steals a packet from other traffic;
- fills packets (`fill`): pieces are offered to the packet being filled like queued messages
  (same packet codec, same destination, reachability, room): before the queued messages those
  whose priority is at least the highest queued one, after them the rest (acks at
  fragment_ack_priority, a session at its queue's priority);
- applies received acks (`on_ack`) and reports finished sessions.
"""

from __future__ import annotations

import dataclasses

from bitstring import Bits, ConstBitStream

from acomms_core.fragmentation.sender import SENDER_COUNTERS, Fragmenter, OutgoingSession
from acomms_core.fragmentation.settings import FragmentationSettings
from acomms_core.fragmentation.wire import (
    MAX_BLOCK_SIZE_BITS,
    WireError,
    encode_fragment,
    piece_bits,
    read_ack,
)

DEFAULT_BLOCK_SIZE_BITS = 248
REPEAT_PRIORITY = -1   # repeated acks: after every queued message (never take a packet's dest)
# QueueCounters field -> counter (sender's own counters plus the acks this vehicle sent)
QUEUE_COUNTER_FIELDS = {f"fragment_{name}": name for name in SENDER_COUNTERS + ("acks_sent",)}


class _NoDestField:
    dest_field = None


class PieceQueue:
    """Stands in for a TopicQueue in a packet fill: a fragment or ack piece's slot id."""

    is_fragment = True
    lifo = False
    codec = _NoDestField()

    def __init__(self, codec_id: int, packet_codec, owner=None):
        self.codec_id, self.packet_codec, self.owner = codec_id, packet_codec, owner

    def remove(self, message) -> None:
        """Pieces are not queued: nothing to remove."""

    @staticmethod
    def shortest_bits() -> int:
        return 0


@dataclasses.dataclass
class _Planned:
    session: OutgoingSession | None
    pieces: list
    messages: list
    ack_key: tuple | None = None


def auto_block_size(capacity_bits: int, cost) -> int:
    """Largest block <= 255 bits tiling a packet of capacity_bits after continuation framing."""
    available = capacity_bits - cost(piece_bits(0, 1, False))
    if available < 1:
        return DEFAULT_BLOCK_SIZE_BITS
    count = -(-available // MAX_BLOCK_SIZE_BITS)
    return max(1, available // count)


class FragmentationSender:
    """Outgoing sessions and owed acks of one queue node (guarded by the queue's lock)."""

    def __init__(self, settings: FragmentationSettings, packet_codec_of, message_class,
                 broadcast_address: int = 255, src: int = -1):
        """packet_codec_of(message codec id) -> its PacketCodec (None: unknown id);
        message_class: the queue's QueuedMessage class."""
        self.settings = settings
        self.fragmenter = Fragmenter(settings, broadcast_address)
        self.packet_codec_of = packet_codec_of
        self.message_class = message_class
        self.src = src
        # (dest, codec, session) -> [dest, ack bits, not before (s), repeats left]
        self.pending_acks: dict[tuple, list] = {}
        self.last_request: tuple[int, int] | None = None   # (miniframe, dataframe) bytes
        self.acks_sent = 0

    # -- sessions -------------------------------------------------------------------------------
    def wants(self, queue, message_bits: int, never_fits: bool) -> bool:
        if not queue.config.allow_fragmentation:
            return False
        if queue.config.params.get("fragment_always"):
            return True
        above = self.settings.above_bytes
        if never_fits or above > 0:
            return never_fits or message_bits > 8 * above
        if self.last_request is None:
            return False
        codec = queue.packet_codec
        return codec.message_cost_bits(message_bits) > codec.payload_capacity_bits(
            *self.last_request)

    def block_size_bits(self, packet_codec) -> int:
        if self.settings.block_size_bits:
            return self.settings.block_size_bits
        if self.last_request is None:
            return DEFAULT_BLOCK_SIZE_BITS
        return auto_block_size(packet_codec.payload_capacity_bits(*self.last_request),
                               packet_codec.message_cost_bits)

    def open(self, queue, bits: Bits, dest: int, now: float, seq: int) -> OutgoingSession:
        """FragmentRefused (with the counter name) when it cannot."""
        return self.fragmenter.open(queue.codec_id, self.src, dest, bits, now,
                                    self.block_size_bits(queue.packet_codec), owner=queue,
                                    seq=seq)

    # -- acks -----------------------------------------------------------------------------------
    def queue_ack(self, dest: int, encoded: bytes) -> str | None:
        """An ack this vehicle owes (from its dispatch node); the reason when it is refused."""
        try:
            ack = read_ack(ConstBitStream(bytes=bytes(encoded)))
        except WireError as exc:
            return f"ack to send refused: {exc}"
        if self.packet_codec_of(ack.codec_id) is None:
            return f"ack to send refused: no message codec id {ack.codec_id}"
        self.pending_acks[(int(dest), ack.codec_id, ack.session_id)] = [
            int(dest), Bits(bytes=bytes(encoded)), float("-inf"), self.settings.ack_repeats]
        return None

    def on_ack(self, src: int, dest: int, encoded: bytes, now: float) -> str:
        """An ack heard from src (addressed to dest); the outcome (a counter name)."""
        if self.src >= 0 and dest != self.src:
            return "not_for_us"
        try:
            ack = read_ack(ConstBitStream(bytes=bytes(encoded)))
        except WireError:
            self.fragmenter.counts["acks_invalid"] += 1
            return "acks_invalid"
        return self.fragmenter.on_ack(int(src), ack, now)

    # -- packet filling -------------------------------------------------------------------------
    def _items(self, request, eligible, now: float):
        """(priority, order, kind, item) of everything that could go into this packet."""
        items = []
        for order, (key, value) in enumerate(self.pending_acks.items()):
            if value[2] <= now:   # a repeat only fills room queued messages leave
                repeat = value[3] < self.settings.ack_repeats
                items.append((REPEAT_PRIORITY if repeat else self.settings.ack_priority, 0,
                              order, "ack", (key, value)))
        for order, session in enumerate(self.fragmenter.sessions.values()):
            queue = session.owner
            if eligible(queue) and self.fragmenter.has_work(session, now):
                items.append((queue.priority, 1, order, "session", session))
        minimum = request.minimum_priority
        return sorted((i for i in items if not minimum or i[0] >= minimum),
                      key=lambda i: (-i[0], i[1], i[2]))

    def fill(self, packet, request, eligible, now: float, at_least: int | None = None) -> list:
        """Offer pieces to `packet` (a message_queue._PacketFill); at_least: only items of that
        priority or higher. Returns what was planned (for `commit`)."""
        if request.num_miniframe_bytes + request.num_dataframe_bytes > 0:
            self.last_request = (request.num_miniframe_bytes, request.num_dataframe_bytes)
            self.fragmenter.opportunities.observe(now)   # the automatic ack timeout learns
        planned = []
        for priority, _, _, kind, item in self._items(request, eligible, now):
            if at_least is not None and priority < at_least:
                break
            step = (self._offer_ack(packet, item, now) if kind == "ack"
                    else self._offer_session(packet, item, now))
            if step is not None:
                planned.append(step)
        return planned

    def _offer_ack(self, packet, item, now: float) -> _Planned | None:
        key, (dest, bits, _, _) = item
        message = self.message_class(0, PieceQueue(self.settings.ack_id,
                                                   self.packet_codec_of(key[1])), bits, dest, now)
        packet.offer(message)
        return _Planned(None, [], [message], key) if message in packet.chosen else None

    def _offer_session(self, packet, session: OutgoingSession, now: float) -> _Planned | None:
        packet_codec = session.owner.packet_codec
        if packet.packet_codec is not None and packet.packet_codec is not packet_codec:
            return None
        if (packet.dest is not None and packet.dest != session.dest) or not packet.is_reachable(
                session.dest):
            return None
        settings = self.settings
        start_queue = PieceQueue(settings.start_id, packet_codec, session.owner)
        room = packet.room_for(start_queue)
        pieces = self.fragmenter.plan(session, room, packet_codec.message_cost_bits, now)
        messages = []
        for piece in pieces:
            queue = start_queue if piece.is_start else PieceQueue(
                settings.continuation_id, packet_codec, session.owner)
            message = self.message_class(session.seq, queue, encode_fragment(piece),
                                         session.dest, now)
            packet.offer(message)
            if message not in packet.chosen:
                break
            messages.append(message)
        pieces = pieces[:len(messages)]
        return _Planned(session, pieces, messages) if pieces else None

    def commit(self, planned: list, now: float) -> None:
        """The planned pieces went into a packet."""
        for step in planned:
            if step.session is not None:
                self.fragmenter.commit(step.session, step.pieces, now)
            elif step.ack_key in self.pending_acks:
                self.acks_sent += 1
                pending = self.pending_acks[step.ack_key]
                if pending[3] <= 0:   # sent as often as fragment_ack_repeats asks
                    del self.pending_acks[step.ack_key]
                else:                 # sent again later unless a newer ack replaces it
                    pending[2], pending[3] = now + self.settings.ack_repeat_s, pending[3] - 1

    # -- reporting ------------------------------------------------------------------------------
    def expire(self, now: float) -> list[str]:
        return [line for _, line in self.fragmenter.expire(now)]

    def next_expiry_s(self, now: float) -> float | None:
        return self.fragmenter.next_expiry_s(now)

    def counters(self) -> dict:
        counts = dict(self.fragmenter.counts, acks_sent=self.acks_sent)
        return {name: counts[key] for name, key in QUEUE_COUNTER_FIELDS.items()}

    def take_finished(self) -> list:
        finished, self.fragmenter.finished = self.fragmenter.finished, []
        return finished

