"""MAC policies say when their next decision can be (the node sleeps through ticks before it):
the time must be exactly the first tick at which next_action stops being None."""

import functools

import pytest
from test_mac_policy import policy as two_slot_policy

from acomms_core.mac.tdma_advanced import TdmaAdvancedPolicy

policy = functools.partial(two_slot_policy, num_slots=3)


def first_acting_tick(p, now, tick, held=None, limit=1000):
    for k in range(1, limit):
        if p.next_action(now + k * tick, held) is not None:
            return now + k * tick
    return None


@pytest.mark.parametrize("now", [1000.0, 1006.8, 1010.0, 1023.4, 1029.8])
def test_next_decision_is_the_first_tick_that_acts(now):
    p, _ = policy(active_slots=0)
    tick = 0.2
    expected = first_acting_tick(p, now, tick)
    assert p.next_decision_time_s(now, None, tick) == pytest.approx(expected)


def test_after_a_transmission_the_lockout_is_slept_through():
    p, _ = policy(active_slots=0)  # slot 0: 1020..1030 (cycles of 30 s from 0)
    p.on_transmit(p.config.frames, 1020.0)
    assert p.next_decision_time_s(1020.0, None, 0.2) == pytest.approx(1024.0)  # packet + guard
    assert first_acting_tick(p, 1020.0, 0.2) == pytest.approx(1024.0)
    held = p.config.frames
    assert p.next_decision_time_s(1027.0, held, 0.2) == pytest.approx(1050.0)  # next cycle
    assert first_acting_tick(p, 1027.0, 0.2, held) == pytest.approx(1050.0)


def test_a_pending_schedule_change_wakes_the_node_at_its_boundary():
    p, values = policy(active_slots=0)
    p.apply({**values, "active_slots": 1}, {"active_slots"}, 1012.0, active=True)
    assert p.next_decision_time_s(1012.0, None, 0.2) == pytest.approx(1020.0)


def test_policies_the_scan_does_not_cover_tick_as_usual():
    p, _ = policy(TdmaAdvancedPolicy, active_slots=0)
    assert p.next_decision_time_s(1012.0, None, 0.2) is None
