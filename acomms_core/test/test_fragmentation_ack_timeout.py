"""The automatic fragment ack timeout follows the MAC's cycle (ROS-free, issue 26)."""

from __future__ import annotations

import math

import pytest
from bitstring import Bits
from fragmentation_support import make_link, text_of
from std_msgs.msg import String

from acomms_core.fragmentation.ack_timeout import (
    AUTO_CYCLES,
    AUTO_MIN_S,
    OpportunityClock,
    ack_timeout_s,
)
from acomms_core.fragmentation.sender import Fragmenter
from acomms_core.fragmentation.settings import FragmentationSettings
from acomms_core.fragmentation.simulated_link import TdmaLink, run_tdma_transfer

PACKET_S = 3.0   # on-air time of one packet (a Micromodem rate-1 packet is about this long)


def _requests(link: TdmaLink, start_s: float, until_s: float, busy: bool):
    """When the sender's tdma MAC asks its queue for a packet: every tick of an opportunity
    while the queue has nothing (busy False), after each packet's on-air time plus the guard
    while it sends (busy True)."""
    schedule, t, last, times = link.schedule(link.sender_slots), start_s, None, []
    while t < until_s:
        if schedule.may_transmit(t, last, link.packet_s).allowed:
            times.append(t)
            if busy:
                last, t = t, t + link.packet_s + link.guard_s
                continue
        t += schedule.time_to_next_active(t) or link.tick_s
    return times


@pytest.mark.parametrize("cycle,num_slots,slots", [
    (20.0, 2, 0), (60.0, 2, 0), (60.0, 4, 0), (105.0, 3, 0), (200.0, 2, 0), (300.0, 6, 0),
    (105.0, 10, "0:8"), (300.0, 30, "0:28")])   # one slot of the others a cycle: the receiver's
@pytest.mark.parametrize("busy", [False, True])
def test_period_is_the_tdma_cycle_whether_idle_or_sending(cycle, num_slots, slots, busy):
    link = TdmaLink(cycle, PACKET_S, num_slots=num_slots, sender_slots=slots)
    clock = OpportunityClock()
    for t in _requests(link, 0.0, 4 * cycle, busy):
        clock.observe(t)
    assert clock.period_s == pytest.approx(cycle, abs=link.tick_s + 1e-6)


def test_two_slots_a_cycle_give_the_period_between_them():
    link = TdmaLink(120.0, PACKET_S, num_slots=4)
    schedule = link.schedule(0)
    clock = OpportunityClock()
    for t in (x for x in range(0, 480) if schedule.position(x).current_slot in (0, 2)):
        clock.observe(float(t))     # slots 0 and 2 of 4: one opportunity every half cycle
    assert clock.period_s == pytest.approx(link.cycle_s / 2, abs=1.0)


def test_timeout_explicit_value_wins_else_automatic_with_a_floor():
    clock = OpportunityClock()
    assert ack_timeout_s(0.0, clock) == AUTO_MIN_S          # nothing learnt yet
    assert ack_timeout_s(45.0, clock) == 45.0
    for t in (0.0, 100.0, 200.0, 300.0):
        clock.observe(t)
    assert ack_timeout_s(0.0, clock) == AUTO_CYCLES * 100.0
    assert ack_timeout_s(45.0, clock) == 45.0                # explicit wins
    short = OpportunityClock()
    for t in (0.0, 10.0, 20.0):
        short.observe(t)
    assert ack_timeout_s(0.0, short) == max(AUTO_MIN_S, AUTO_CYCLES * 10.0)


def test_clock_jumping_back_forgets_the_period():
    clock = OpportunityClock()
    for t in (1000.0, 1100.0, 1200.0):
        clock.observe(t)
    assert clock.period_s == 100.0
    clock.observe(10.0)
    assert clock.period_s is None
    for t in (30.0, 50.0):
        clock.observe(t)
    assert clock.period_s == 20.0


def _first_resend(cycle: float, ack_timeout: float) -> tuple[int, float]:
    """A sender in slot 0 of a 2-slot TDMA cycle whose receiver's acks are all lost: in which
    slot after the session opened (0: the first) blocks were first sent again, and the ack
    timeout in use then."""
    link = TdmaLink(cycle, PACKET_S)
    fragmenter = Fragmenter(FragmentationSettings.from_values(
        {"fragment_ack_timeout_s": ack_timeout}))
    start = 2 * cycle                     # the queue saw two cycles of requests first
    for t in _requests(link, 0.0, start, busy=False):
        fragmenter.opportunities.observe(t)
    session = fragmenter.open(101, 1, 2, Bits(2000 * 80), start, 80)
    for k in range(10):
        for t in _requests(link, start + k * cycle, start + (k + 1) * cycle, busy=True):
            fragmenter.opportunities.observe(t)
            pieces = fragmenter.plan(session, 8 * 264, lambda bits: bits + 8, t)
            fragmenter.commit(session, pieces, t)
            if fragmenter.counts["blocks_resent"]:
                return k, fragmenter.ack_timeout_s()
    raise AssertionError("nothing was sent again in 10 cycles")


@pytest.mark.parametrize("cycle", [20.0, 60.0, 105.0, 300.0])
def test_lost_acks_resend_nothing_before_the_receiver_had_three_opportunities(cycle):
    slot, timeout = _first_resend(cycle, 0.0)
    assert timeout >= AUTO_CYCLES * cycle
    assert slot == math.ceil(timeout / cycle) >= AUTO_CYCLES == 3   # the receiver's slots passed


def test_a_fixed_timeout_shorter_than_two_cycles_resends_in_the_next_slot():
    assert _first_resend(105.0, 120.0) == (1, 120.0)   # the fixed default before issue 26


def test_tdma_link_with_defaults_delivers_with_fewer_packets_than_a_fixed_short_timeout(tmp_path):
    """The whole queue and dispatch code over `run_tdma_transfer` (the bench's link): 300 s
    cycles of 10 s slots, the receiver's one of them; 20 % of the packets lost."""
    layout = {"num_slots": 30, "sender_slots": "0:28", "receiver_slots": 29}
    runs = {}
    for timeout in (0.0, 120.0):
        sender, receiver = make_link(tmp_path, ack_timeout_s=timeout)
        text = text_of(8000, 4)

        def add(now, sender=sender, text=text):
            assert sender.queues.add("blob", String(data=text), now) == "fragmented"

        run = run_tdma_transfer(sender, receiver, (72, 192), 0.2, 4,
                                TdmaLink(300.0, 4.646, **layout), add, add_at_s=600.0)
        assert [m.data for _, _, m in receiver.published] == [text]
        runs[timeout] = (run.data_packets, sender.sender.counters()["fragment_ack_timeouts"])
    assert runs[0.0][0] < runs[120.0][0] and runs[0.0][1] < runs[120.0][1]
