"""Bridge timing without ROS (acomms_bringup.bridges.timing): latest-only decimation per period,
times counted from the run's start (not from the clock's absolute reading), renamed parameters."""

import pytest

from acomms_bringup.bridges.timing import LatestOnly, renamed_parameter, run_start_s, seconds_until

START_2025 = 1735689600.0  # 2025-01-01T00:00:00Z, the simulated clock's default start


def test_each_period_forwards_the_newest_record_once_and_counts_the_rest():
    d = LatestOnly(["pb", "bc"])
    for seq in range(1, 6):           # pb 1..5 arrive within one period
        d.record("pb", seq)
    d.record("bc", "b1")
    assert d.period("pb") == 5        # the newest
    assert d.period("pb") is None     # nothing new since: an idle period
    d.record("pb", 6)
    assert d.period("pb") == 6 and d.period("bc") == "b1"
    assert d.counts == {"pb_received": 6, "pb_forwarded": 2, "pb_decimated": 4,
                        "bc_received": 1, "bc_forwarded": 1, "bc_decimated": 0,
                        "idle_periods": 1}
    d.record("pb", 7)
    d.clear()                         # released: nothing left to forward
    assert d.period("pb") is None and d.counts["idle_periods"] == 2


def test_a_period_of_an_unknown_topic_is_a_caller_bug_not_an_idle_period():
    """What a timer callback that got rclpy's TimerInfo as its topic did: every period counted
    idle and nothing forwarded. Now it fails loudly."""
    d = LatestOnly(["pb"])
    d.record("pb", 1)
    with pytest.raises(KeyError, match="unknown topic"):
        d.period(object())
    with pytest.raises(KeyError, match="unknown topic"):
        d.record("bc", 1)
    assert d.counts["idle_periods"] == 0 and d.period("pb") == 1


@pytest.mark.parametrize("start,activation,now,after,expected", [
    (START_2025, START_2025, START_2025, 100.0, 100.0),        # sim time, activated at start
    (START_2025, START_2025 + 30, START_2025 + 30, 100.0, 70.0),   # activated late
    (START_2025, 0.0, 0.0, 100.0, START_2025 + 100.0),         # clock not received yet (0)
    (-1.0, 5000.0, 5000.0, 100.0, 100.0),                      # no start given: activation
    (START_2025, START_2025, START_2025 + 150, 100.0, 0.0),    # already past: at once
    (START_2025, START_2025, START_2025, -1.0, None),          # never
])
def test_times_after_the_start_count_from_the_start_stamp(start, activation, now, after,
                                                          expected):
    assert seconds_until(after, run_start_s(start, activation), now) == expected


def test_a_renamed_parameter_takes_the_old_name_with_a_note():
    assert renamed_parameter({"old_s": None, "new_s": 5.0}, "old_s", "new_s") == (5.0, None)
    value, note = renamed_parameter({"old_s": 100.0, "new_s": 5.0}, "old_s", "new_s")
    assert value == 100.0
    assert note == "parameter old_s is deprecated, use new_s: old_s=100.0 taken as new_s"
