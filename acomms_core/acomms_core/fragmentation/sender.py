"""The sending side: messages cut into blocks, sent in sessions, resent where acks show gaps.

Per block: unsent -> in flight (sent, waiting) -> acked, or -> lost (to send again). A block is
lost when (a) an ack acknowledges a block sent in a later packet (the link delivers in order, so
an earlier unacknowledged block did not arrive), or (b) it was sent the ack timeout ago and is
still not acknowledged (`ack_timeout`: `ack_timeout_s`, or with 0 the automatic timeout that
follows the MAC's cycle), or (c) a null ack says the start header never arrived (every block in
flight is then lost, since the receiver could not keep them). Only lost and unsent blocks are
ever sent, lost ones first; at most `window_blocks` are in flight. Until block 0 is
acknowledged, the first piece of the session's first `START_COPIES` packets carries a start
header (for whatever blocks it holds), and again after a null ack: a lost start then costs 9
bytes in a few packets instead of every continuation sent before the receiver learnt the session
(a start in every packet cost one block in eight of a whole TDMA slot before the first ack).
Broadcast sessions are sent once, without acks. A session without progress for `session_ttl_s`
ends (`expire`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from bitstring import BitArray, Bits

from acomms_core.fragmentation.ack import acked_blocks
from acomms_core.fragmentation.ack_timeout import OpportunityClock, ack_timeout_s
from acomms_core.fragmentation.ranges import to_ranges
from acomms_core.fragmentation.settings import FragmentationSettings
from acomms_core.fragmentation.wire import (
    MAX_BLOCK_SIZE_BITS,
    Ack,
    ContinuationHeader,
    Fragment,
    StartHeader,
    piece_bits,
)

UNSENT, IN_FLIGHT, LOST, ACKED = 0, 1, 2, 3
START_COPIES = 4   # packets with a start header before block 0 is acked (all lost: 0.16 % at 20 %)
SENDER_COUNTERS = ("sessions_opened", "sessions_completed", "sessions_expired",
                   "sessions_refused", "pieces_sent", "blocks_sent", "blocks_resent",
                   "acks_received", "acks_unknown_session", "acks_invalid", "null_acks_received",
                   "ack_timeouts")


class FragmentRefused(ValueError):
    """A message that cannot become a session; `counter` names the queue counter."""

    def __init__(self, counter: str, reason: str):
        super().__init__(reason)
        self.counter = counter


@dataclasses.dataclass(eq=False)
class OutgoingSession:
    session_id: int
    codec_id: int
    src: int
    dest: int
    timestamp_s: int
    block_size_bits: int
    size_blocks: int
    data: Bits
    created_s: float
    broadcast: bool = False
    owner: object = None          # the queue it came from (priority, tags)
    seq: int = 0                  # the queue's message number
    last_progress_s: float = 0.0
    state: bytearray = None
    sent_seq: list = None         # per block: the packet number it was last sent in
    sent_at: list = None          # per block: when it was last sent
    acked_count: int = 0
    start_copies: int = 0         # packets sent with a start header (since the last null ack)

    def __post_init__(self):
        self.state = bytearray(self.size_blocks)
        self.sent_seq = [0] * self.size_blocks
        self.sent_at = [0.0] * self.size_blocks
        self.last_progress_s = self.created_s

    @property
    def complete(self) -> bool:
        return self.acked_count == self.size_blocks

    def blocks(self, first: int, last: int) -> Bits:
        size = self.block_size_bits
        return self.data[first * size:(last + 1) * size]

    def ranges(self, states) -> list[tuple[int, int]]:
        return to_ranges(b for b, s in enumerate(self.state) if s in states)

    def fragment(self, first: int, last: int, as_start: bool) -> Fragment:
        if as_start:
            header = StartHeader(self.session_id, self.src, self.dest, self.timestamp_s,
                                 self.block_size_bits, self.size_blocks, first, last)
        else:
            header = ContinuationHeader(self.session_id, first, last)
        return Fragment(self.codec_id, header, self.blocks(first, last))


class Fragmenter:
    """Every outgoing session of one node (not thread-safe: the queue's lock guards it)."""

    def __init__(self, settings: FragmentationSettings, broadcast_address: int = 255):
        self.settings = settings
        self.broadcast_address = broadcast_address
        self.sessions: dict[int, OutgoingSession] = {}
        self.counts: Counter = Counter(dict.fromkeys(SENDER_COUNTERS, 0))
        self._next_id = 0
        self._packet_seq = 0
        self.finished: list[tuple[OutgoingSession, str]] = []   # (session, outcome) to report
        self.opportunities = OpportunityClock()   # fed with the MAC's packet requests

    # -- opening --------------------------------------------------------------------------------
    def open(self, codec_id: int, src: int, dest: int, bits: Bits, now: float,
             block_size_bits: int, owner=None, seq: int = 0) -> OutgoingSession:
        """A new session for the message bits; FragmentRefused says why not."""
        settings = self.settings
        if not 1 <= block_size_bits <= MAX_BLOCK_SIZE_BITS:
            raise ValueError(f"block size {block_size_bits} bits outside 1..255")
        size = max(1, -(-len(bits) // block_size_bits))
        if size > settings.max_blocks:
            self.counts["sessions_refused"] += 1
            raise FragmentRefused("rejected_too_large", f"message of {len(bits)} bits needs "
                                  f"{size} blocks of {block_size_bits} bits, more than "
                                  f"fragment_max_blocks {settings.max_blocks}")
        session_id = self._free_session_id()
        if session_id is None:
            self.counts["sessions_refused"] += 1
            raise FragmentRefused("fragment_sessions_full", f"{len(self.sessions)} fragment "
                                  "sessions already open (fragment_max_sessions)")
        padded = BitArray(bits)
        padded.append(Bits(size * block_size_bits - len(bits)))
        session = OutgoingSession(session_id, codec_id, max(src, 0), dest, int(now) & 0xFFFFFFFF,
                                  block_size_bits, size, Bits(padded), now,
                                  broadcast=dest == self.broadcast_address, owner=owner, seq=seq)
        self.sessions[session_id] = session
        self.counts["sessions_opened"] += 1
        return session

    def _free_session_id(self) -> int | None:
        if len(self.sessions) >= min(self.settings.max_sessions, 256):
            return None
        for _ in range(256):
            candidate, self._next_id = self._next_id, (self._next_id + 1) % 256
            if candidate not in self.sessions:
                return candidate
        return None

    # -- sending --------------------------------------------------------------------------------
    def ack_timeout_s(self) -> float:
        """The ack timeout in use (fragment_ack_timeout_s, or automatic when it is 0)."""
        return ack_timeout_s(self.settings.ack_timeout_s, self.opportunities)

    def _time_out(self, session: OutgoingSession, now: float) -> None:
        deadline = now - self.ack_timeout_s()
        timed_out = [b for b, s in enumerate(session.state)
                     if s == IN_FLIGHT and session.sent_at[b] <= deadline]
        for block in timed_out:
            session.state[block] = LOST
        if timed_out:
            self.counts["ack_timeouts"] += 1

    def candidates(self, session: OutgoingSession, now: float) -> list[int]:
        """Blocks that may go now, in sending order: lost ones, then unsent within the window."""
        self._time_out(session, now)
        state = session.state
        lost = [b for b, s in enumerate(state) if s == LOST]
        room = self.settings.window_blocks - state.count(IN_FLIGHT) - len(lost)
        unsent = [b for b, s in enumerate(state) if s == UNSENT][:max(room, 0)]
        return lost + unsent

    def has_work(self, session: OutgoingSession, now: float) -> bool:
        return bool(self.candidates(session, now))

    def plan(self, session: OutgoingSession, room_bits: int, cost, now: float) -> list[Fragment]:
        """Pieces that fit `room_bits` of a packet (cost(piece bits) -> packet bits, as the
        packet codec charges); the start header first while block 0 is owed."""
        blocks = self.candidates(session, now)
        pieces = []
        start_owed = session.state[0] != ACKED and session.start_copies < START_COPIES
        for index, (first, last) in enumerate(to_ranges(blocks)):   # block 0 first if owed
            as_start = first == 0 or (start_owed and index == 0)
            count = self._blocks_that_fit(session, as_start, room_bits, cost)
            if count <= 0:
                break
            last = min(last, first + count - 1)
            pieces.append(session.fragment(first, last, as_start))
            room_bits -= cost(piece_bits(last - first + 1, session.block_size_bits, as_start))
        return pieces

    @staticmethod
    def _blocks_that_fit(session, is_start: bool, room_bits: int, cost) -> int:
        size = session.block_size_bits
        overhead = cost(piece_bits(0, size, is_start))
        count = (room_bits - overhead) // size
        while count > 0 and cost(piece_bits(count, size, is_start)) > room_bits:
            count -= 1
        return count

    def commit(self, session: OutgoingSession, pieces: list[Fragment], now: float) -> None:
        """The pieces went into a packet."""
        self._packet_seq += 1
        session.start_copies += any(piece.is_start for piece in pieces)
        for piece in pieces:
            self.counts["pieces_sent"] += 1
            for block in range(piece.header.first_block, piece.header.last_block + 1):
                self.counts["blocks_resent" if session.state[block] != UNSENT
                            else "blocks_sent"] += 1
                session.state[block] = ACKED if session.broadcast else IN_FLIGHT
                session.sent_seq[block] = self._packet_seq
                session.sent_at[block] = now
        if session.broadcast:
            session.acked_count = session.state.count(ACKED)
            session.last_progress_s = now
            self._finish_if_complete(session)

    # -- acks -----------------------------------------------------------------------------------
    def on_ack(self, ack_src: int, ack: Ack, now: float) -> str:
        """Apply an ack from ack_src; returns the outcome (a counter name or 'applied')."""
        session = self.sessions.get(ack.session_id)
        if session is None or session.dest != ack_src or session.codec_id != ack.codec_id:
            self.counts["acks_unknown_session"] += 1
            return "acks_unknown_session"
        try:
            acked = acked_blocks(ack, session.size_blocks)
        except ValueError:
            self.counts["acks_invalid"] += 1
            return "acks_invalid"
        self.counts["acks_received"] += 1
        state = session.state
        if acked is None:   # null ack: the receiver has no start header, nor what followed it
            self.counts["null_acks_received"] += 1
            session.start_copies = 0
            for block, s in enumerate(state):
                if s == IN_FLIGHT or (block == 0 and s != ACKED):
                    state[block] = LOST
            return "null_ack"
        newest = max((session.sent_seq[b] for b in acked), default=0)
        for block in acked:
            if state[block] != ACKED:
                state[block] = ACKED
                session.acked_count += 1
                session.last_progress_s = now
        for block, s in enumerate(state):
            if s == IN_FLIGHT and session.sent_seq[block] < newest:
                state[block] = LOST
        self._finish_if_complete(session)
        return "applied"

    def _finish_if_complete(self, session: OutgoingSession) -> None:
        if session.complete and self.sessions.pop(session.session_id, None) is not None:
            self.counts["sessions_completed"] += 1
            self.finished.append((session, "completed"))

    def next_expiry_s(self, now: float) -> float | None:
        """When `expire` or the finished report next has work: now while finished sessions
        wait, else the earliest time a session runs out of `session_ttl_s`; None: never."""
        if self.finished:
            return now
        ttl = self.settings.session_ttl_s
        return min((s.last_progress_s + ttl for s in self.sessions.values()), default=None)

    def expire(self, now: float) -> list[tuple[OutgoingSession, str]]:
        """End sessions without progress for session_ttl_s; [(session, log line)]."""
        ended = []
        for session in list(self.sessions.values()):
            idle = now - session.last_progress_s
            if idle > self.settings.session_ttl_s:
                del self.sessions[session.session_id]
                self.counts["sessions_expired"] += 1
                self.finished.append((session, "expired"))
                ended.append((session, (
                    f"fragment session {session.session_id} to {session.dest} expired: no "
                    f"progress for {idle:.0f} s (fragment_session_ttl_s), "
                    f"{session.acked_count}/{session.size_blocks} blocks acknowledged")))
        return ended
