"""The receiving side: fragments reassembled per (src, session id), acks for the sender.

Bounded: at most `max_open_sessions` sessions, each at most `max_blocks` blocks and
`max_session_bytes`; recently completed sessions are remembered (COMPLETED_MEMORY keys, no data)
so late duplicates are acknowledged again instead of starting over. Every piece that is not used
is counted (RECEIVER_COUNTERS): duplicates, reordered pieces (used, counted), continuations
without a start header (answered by a null ack), start headers reusing an open session's id
for another transfer (the 8-bit id wrapped: the old session is replaced), oversized sessions,
pieces for other destinations. Nothing is released before every block arrived.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, OrderedDict

from bitstring import BitArray, Bits

from acomms_core.fragmentation.ack import build_ack, null_ack
from acomms_core.fragmentation.settings import FragmentationSettings
from acomms_core.fragmentation.wire import Ack, Fragment, StartHeader

COMPLETED_MEMORY = 64
RECEIVER_COUNTERS = ("pieces_received", "sessions_started", "sessions_completed",
                     "sessions_expired", "sessions_replaced", "sessions_refused_full",
                     "too_many_blocks", "session_too_large", "duplicate_pieces",
                     "pieces_reordered", "continuation_without_start",
                     "pieces_not_for_us", "pieces_truncated", "pieces_corrupt",
                     "acks_invalid", "acks_queued")


@dataclasses.dataclass(eq=False)
class IncomingSession:
    src: int
    codec_id: int
    header: StartHeader
    last_progress_s: float
    blocks: list = None
    received: int = 0
    highest: int = -1

    def __post_init__(self):
        self.blocks = [None] * self.header.size_blocks

    def received_blocks(self) -> list[int]:
        return [b for b, data in enumerate(self.blocks) if data is not None]

    def message_bits(self) -> Bits:
        joined = BitArray()
        for data in self.blocks:
            joined.append(data)
        return Bits(joined)


@dataclasses.dataclass
class Received:
    """What one piece led to: an ack to send (to `ack_dest`) and/or a complete message."""

    outcome: str
    ack: Ack | None = None
    ack_dest: int = 0
    codec_id: int = 0
    message_bits: Bits | None = None
    session: IncomingSession | None = None


class Reassembler:
    """Every incoming session of one node (one caller at a time: the dispatch lock)."""

    def __init__(self, settings: FragmentationSettings, broadcast_address: int = 255):
        self.settings = settings
        self.broadcast_address = broadcast_address
        self.sessions: dict[tuple[int, int], IncomingSession] = {}
        self.completed: OrderedDict = OrderedDict()   # key -> (codec id, StartHeader)
        self.counts: Counter = Counter(dict.fromkeys(RECEIVER_COUNTERS, 0))

    def block_size_of(self, src: int, session_id: int) -> int | None:
        session = self.sessions.get((src, session_id))
        if session is not None:
            return session.header.block_size_bits
        done = self.completed.get((src, session_id))
        return None if done is None else done[1].block_size_bits

    def _for_us(self, dest: int) -> bool:
        own = self.settings.own_address
        return own < 0 or dest in (own, self.broadcast_address)

    def receive(self, src: int, packet_dest: int, fragment: Fragment, now: float) -> Received:
        self.counts["pieces_received"] += 1
        dest = fragment.header.dest if fragment.is_start else packet_dest
        if not self._for_us(dest):
            return self._count("pieces_not_for_us")
        key = (src, fragment.session_id)
        if fragment.is_start:
            refused = self._start(key, fragment, now)
            if refused is not None:
                return refused
        done = self.completed.get(key)
        if key not in self.sessions and done is not None:
            if fragment.is_start and not done[1].same_session(fragment.header):
                return self._count("pieces_corrupt")   # unreachable: _start replaced it
            self.counts["duplicate_pieces"] += 1
            return self._ack_for(src, done[0], done[1], range(done[1].size_blocks),
                                 "duplicate_pieces")
        session = self.sessions.get(key)
        if session is None:
            self.counts["continuation_without_start"] += 1
            return Received("continuation_without_start", null_ack(fragment.codec_id,
                                                                    fragment.session_id), src)
        return self._store(session, fragment, now)

    def _start(self, key, fragment: Fragment, now: float) -> Received | None:
        header, settings = fragment.header, self.settings
        done = self.completed.get(key)
        if done is not None and done[1].same_session(header):
            return None                      # a late duplicate of a finished session
        self.completed.pop(key, None)
        session = self.sessions.get(key)
        if session is not None:
            if session.header.same_session(header):
                return None
            del self.sessions[key]           # the 8-bit id wrapped with this one still open
            self.counts["sessions_replaced"] += 1
        if header.size_blocks > settings.max_blocks:
            return self._count("too_many_blocks")
        if header.size_blocks * header.block_size_bits > 8 * settings.max_session_bytes:
            return self._count("session_too_large")
        if len(self.sessions) >= settings.max_open_sessions:
            return self._count("sessions_refused_full")
        self.sessions[key] = IncomingSession(key[0], fragment.codec_id, header, now)
        self.counts["sessions_started"] += 1
        return None

    def _store(self, session: IncomingSession, fragment: Fragment, now: float) -> Received:
        header = fragment.header
        if header.last_block >= session.header.size_blocks or fragment.codec_id != \
                session.codec_id:
            return self._count("pieces_corrupt")
        size = session.header.block_size_bits
        new = 0
        for index, block in enumerate(range(header.first_block, header.last_block + 1)):
            if session.blocks[block] is None:
                session.blocks[block] = fragment.data[index * size:(index + 1) * size]
                new += 1
        outcome = "stored"
        if not new:
            outcome = "duplicate_pieces"
            self.counts[outcome] += 1
        elif header.first_block < session.highest:
            outcome = "pieces_reordered"
            self.counts[outcome] += 1
        if new:
            session.received += new
            session.last_progress_s = now
        session.highest = max(session.highest, header.last_block)
        result = self._ack_for(session.src, session.codec_id, session.header,
                               session.received_blocks(), outcome)
        result.session = session
        if session.received == session.header.size_blocks:
            key = (session.src, session.header.session_id)
            del self.sessions[key]
            self.completed[key] = (session.codec_id, session.header)
            while len(self.completed) > COMPLETED_MEMORY:
                self.completed.popitem(last=False)
            self.counts["sessions_completed"] += 1
            result.outcome, result.message_bits = "completed", session.message_bits()
        return result

    def _ack_for(self, src: int, codec_id: int, header: StartHeader, received,
                 outcome: str) -> Received:
        if header.dest == self.broadcast_address:
            return Received(outcome, codec_id=codec_id)   # broadcast sessions are not acked
        ack = build_ack(codec_id, header.session_id, received, header.size_blocks,
                        self.settings.max_ack_ranges)
        return Received(outcome, ack, src, codec_id)

    def _count(self, counter: str) -> Received:
        self.counts[counter] += 1
        return Received(counter)

    def next_expiry_s(self) -> float | None:
        """When the first session runs out of session_ttl_s (it ends at the first `expire` after
        that); None without sessions."""
        ttl = self.settings.session_ttl_s
        return min((s.last_progress_s + ttl for s in self.sessions.values()), default=None)

    def expire(self, now: float) -> list[str]:
        """End sessions without a new block for session_ttl_s; the log lines."""
        lines = []
        for key, session in list(self.sessions.items()):
            idle = now - session.last_progress_s
            if idle > self.settings.session_ttl_s:
                del self.sessions[key]
                self.counts["sessions_expired"] += 1
                lines.append(f"fragment session {key[1]} from {key[0]} expired: no new block "
                             f"for {idle:.0f} s (fragment_session_ttl_s), "
                             f"{session.received}/{session.header.size_blocks} blocks received")
        return lines
