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


def scanned_decision(p, now, held, tick):
    """The decision time by looking at every tick up to the horizon (what the skipping scan
    must equal exactly, float for float)."""
    from acomms_core.mac.tdma import MAX_DECISION_SCAN_TICKS

    duration = held.packet_duration_s if held else p.shortest_packet_s()
    horizon = max(1, min(MAX_DECISION_SCAN_TICKS, int(p.scan_horizon_s() / tick) + 1))
    for k in range(1, horizon + 1):
        t = now + k * tick
        if p.pending is not None and t >= p.pending[1]:
            return t
        if p.could_act(t, duration):
            return t
    return now + horizon * tick


def test_stepping_over_closed_stretches_gives_the_tick_by_tick_time_exactly():
    """Random schedules (slots, skews, guards, ticks, transmissions, pending changes): the scan
    that steps over ticks the schedule keeps closed returns the very float of the full scan."""
    import random

    rng = random.Random(7)
    for _case in range(400):
        num_slots = rng.randint(1, 70)
        slot_s = rng.choice([2.0, 5.0, 7.3, 10.0, 12.5])
        active = sorted(rng.sample(range(num_slots), rng.randint(1, min(3, num_slots))))
        guard = rng.choice([0.0, 0.5, 1.0])
        values = {"num_slots": num_slots, "slot_duration_seconds": slot_s,
                  "active_slots": ",".join(map(str, active)), "guard_time_seconds": guard,
                  "packet_length_seconds": min(3.0, slot_s - guard - 0.1),
                  "skew_seconds": rng.choice([0.0, 0.37, -1.9])}
        p, merged = policy(**values)
        tick = rng.choice([0.05, 0.1, 0.2, 0.5, 1.0 / 3.0])
        now = 1_795_000_000.0 + rng.uniform(0, 3 * num_slots * slot_s)
        if rng.random() < 0.4:
            p.on_transmit(p.config.frames, now - rng.uniform(0, 5.0))
        if rng.random() < 0.2:
            change = {**merged, "active_slots": str(rng.randrange(num_slots))}
            p.apply(change, {"active_slots"}, now, active=True)
        held = p.config.frames if rng.random() < 0.3 else None
        assert p.next_decision_time_s(now, held, tick) == scanned_decision(p, now, held, tick), (
            values, tick, now)
