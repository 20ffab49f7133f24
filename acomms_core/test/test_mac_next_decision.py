"""MAC policies say when their next decision can be (the node sleeps through ticks before it):
the time must be exactly the first tick at which next_action stops being None."""

from collections import Counter

import pytest

from acomms_core.mac.tdma import TdmaPolicy
from acomms_core.mac.tdma_advanced import TdmaAdvancedPolicy
from acomms_core.ros.parameter_spec import defaults


class Log:
    def info(self, text, **options):
        pass

    warning = error = info


def policy(cls=TdmaPolicy, **values):
    merged = {**defaults(cls.PARAMETERS), "cycle_start_time": 0, "num_slots": 3,
              "slot_duration_seconds": 10.0, "guard_time_seconds": 1.0,
              "packet_length_seconds": 3.0, **values}
    p = cls(Log(), Counter())
    p.configure(merged)
    return p, merged


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
