"""The automatic ack timeout: how long blocks wait for an ack follows the MAC's cycle (issue 26).

A receiver can only ack in its own transmit opportunities, and in TDMA every vehicle's slot comes
once a cycle. A fixed timeout shorter than a few cycles resends blocks that arrived whenever an
ack is lost (the receiver's next ack, or its repeat, comes a cycle later); a much longer one only
makes the tail of a session wait. So with `fragment_ack_timeout_s` 0 (the default) the timeout is
`AUTO_CYCLES` x the period of this vehicle's transmit opportunities, learnt from the times the
MAC asks the queue for packets (`OpportunityClock`), and at least `AUTO_MIN_S` (the fixed default
before: short cycles keep it, and so does a first slot seen before a whole cycle, or no gap
between requests at all). Within that time the receiver had `AUTO_CYCLES` opportunities after
the block went out, each with its newest ack (a repeat, `fragment_ack_repeats`, when nothing new
arrived): blocks that arrived are resent only when all of those acks are lost (0.8 % at 20 %
PER; with two, 4 % of the cycles resent a whole slot of blocks that had arrived). An explicit
`fragment_ack_timeout_s` > 0 is used as it is.

How the period is learnt: requests come in runs (one run per stretch of active slots: a request
per packet, or one per MAC tick while there is nothing to send) separated by the slots of other
vehicles. Gaps of at least `MIN_GAP_S` (tick polls are not stored) are kept for `HISTORY_S` of
node time. A gap longer than `RUN_GAP_FRACTION` x the longest one starts a run (inside a run a
gap is at most a packet plus the guard; between runs the others' slots add at least as much
again). The period is the longest time between the starts of consecutive runs (the longest gap
while fewer than two runs were seen). Times are the node clock's (simulated or not); a clock
that jumps back starts the history again.
"""

from __future__ import annotations

from collections import deque
from itertools import pairwise

AUTO_CYCLES = 3.0      # automatic timeout, in periods of this vehicle's transmit opportunities
AUTO_MIN_S = 120.0     # least automatic timeout
MIN_GAP_S = 1.0        # shorter gaps between requests (MAC tick polls) are not stored
HISTORY_S = 3600.0     # gaps older than this are forgotten (a changed MAC schedule is learnt)
MAX_GAPS = 4096
RUN_GAP_FRACTION = 0.75  # a gap longer than this x the longest one starts a run


class OpportunityClock:
    """The period of this vehicle's transmit opportunities, from the MAC's packet requests."""

    def __init__(self):
        self._last: float | None = None
        self._gaps: deque = deque(maxlen=MAX_GAPS)   # (request time, gap before it)
        self._period: float | None = None

    def observe(self, now: float) -> None:
        """The MAC asked for a packet at `now` (node clock)."""
        if self._last is not None and now < self._last:
            self._gaps.clear()          # the clock jumped back (simulation restarted)
            self._period = None
        elif self._last is not None and now - self._last >= MIN_GAP_S:
            self._gaps.append((now, now - self._last))
            while self._gaps and self._gaps[0][0] < now - HISTORY_S:
                self._gaps.popleft()
            self._period = self._estimate()
        self._last = now

    def _estimate(self) -> float | None:
        if not self._gaps:
            return None
        longest = max(gap for _, gap in self._gaps)
        starts = [t for t, gap in self._gaps if gap > RUN_GAP_FRACTION * longest]
        return max([b - a for a, b in pairwise(starts)] + [longest])

    @property
    def period_s(self) -> float | None:
        """Seconds between the starts of this vehicle's transmit opportunities; None: unknown."""
        return self._period


def ack_timeout_s(configured_s: float, clock: OpportunityClock) -> float:
    """The ack timeout in use: `configured_s` when > 0, else the automatic one."""
    if configured_s > 0:
        return configured_s
    return max(AUTO_MIN_S, AUTO_CYCLES * (clock.period_s or 0.0))
