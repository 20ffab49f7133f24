"""ROS-free TDMA slot math: slots, remaining time, next active slot, ranges, skew, validation."""

import pytest

from acomms_core.mac.tdma_schedule import (
    ScheduleError,
    TdmaSchedule,
    format_slots,
    frame_settings,
    parse_cycle_start_time,
    parse_slot_tags,
    parse_slots,
    parse_test_plan,
)


def schedule(**overrides):
    values = dict(num_slots=4, slot_duration_seconds=10.0, active_slots=[1, 2],
                  cycle_start_time=1000.0, guard_time_seconds=2.0, packet_length_seconds=3.0)
    values.update(overrides)
    return TdmaSchedule.create(**values)


@pytest.mark.parametrize("value, expected", [
    (3, (3,)),
    ([0, 2, 2], (0, 2)),
    ("0,2,5:7", (0, 2, 5, 6, 7)),
    ("5-7", (5, 6, 7)),
    ("0:7:3", (0, 3, 6)),
    (":2", (0, 1, 2)),
    ("6:", (6, 7)),
    ("6:1", (0, 1, 6, 7)),          # wraps past the end of the cycle
    ("7:0", (0, 7)),
    (["1", "3:4"], (1, 3, 4)),
    ("4", (4,)),
    ("", ()),
])
def test_parse_slots(value, expected):
    assert parse_slots(value, num_slots=8) == expected


def test_wrapping_range_with_step_walks_the_cycle():
    assert parse_slots("5:2:2", num_slots=8) == (1, 5, 7)  # 5, 7, (0 skipped), 1


@pytest.mark.parametrize("value, words", [
    (8, "outside 0..7"),
    ("3:9", "outside 0..7"),
    ("a", "cannot read"),
    ([True], "not an integer"),
    (-1, "outside"),
    ("1:2:0", "step"),
])
def test_parse_slots_refuses_with_reason(value, words):
    with pytest.raises(ScheduleError, match=words):
        parse_slots(value, num_slots=8)


def test_format_slots():
    assert format_slots([0, 1, 2, 5, 7, 8]) == "0:2,5,7,8"
    assert format_slots([]) == ""


def test_position_slot_and_remaining():
    s = schedule()
    assert s.cycle_duration_seconds == 40.0
    here = s.position(1000.0 + 40 * 7 + 23.5)
    assert here.current_slot == 2
    assert here.in_cycle_seconds == pytest.approx(23.5)
    assert here.remaining_slot_seconds == pytest.approx(6.5)
    # before the cycle start the cycle still repeats backwards
    assert s.position(1000.0 - 1.0).current_slot == 3


def test_time_to_next_active_and_slot():
    s = schedule()  # active 1, 2 of 4 x 10 s
    assert s.time_to_next_active(1000.0 + 1.0) == pytest.approx(9.0)     # in slot 0
    assert s.time_to_next_active(1000.0 + 15.0) == 0.0                   # in slot 1
    assert s.time_to_next_active(1000.0 + 31.0) == pytest.approx(19.0)   # slot 3 -> wraps to 1
    assert s.time_to_slot(1000.0 + 31.0, 0) == pytest.approx(9.0)
    assert s.time_to_slot(1000.0 + 31.0, 3) == 0.0
    assert s.time_to_next_in(1000.0, []) == -1.0


def test_remaining_active_seconds_spans_consecutive_slots_and_wraps():
    s = schedule(active_slots="3:0")  # slots 3 and 0 are consecutive across the cycle end
    assert s.remaining_active_seconds(1000.0 + 32.0) == pytest.approx(18.0)
    assert s.remaining_active_seconds(1000.0 + 5.0) == pytest.approx(5.0)
    assert s.remaining_active_seconds(1000.0 + 15.0) == 0.0
    everything = schedule(active_slots="0:3")
    assert everything.remaining_active_seconds(1000.0 + 5.0) == pytest.approx(35.0)


def test_may_transmit_needs_active_slot_room_and_lockout():
    s = schedule()  # guard 2 + packet 3 = 5 s needed
    assert not s.may_transmit(1000.0 + 5.0, None).allowed                 # slot 0 inactive
    assert s.may_transmit(1000.0 + 10.0, None).allowed                    # start of slot 1
    assert s.may_transmit(1000.0 + 15.0, None).allowed                    # exactly 5 s left
    late = s.may_transmit(1000.0 + 15.5, None)
    assert not late.allowed and "left in slot 1" in late.reason
    # previous packet at 10.0: busy until 10 + 3 + 2
    assert not s.may_transmit(1000.0 + 14.9, 1010.0).allowed
    assert s.may_transmit(1000.0 + 15.0, 1010.0).allowed
    # a longer previous packet extends the lockout
    assert not s.may_transmit(1000.0 + 15.0, 1010.0, previous_packet_length_seconds=4.0).allowed
    # a shorter packet fits later in the slot
    assert s.may_transmit(1000.0 + 17.0, None, packet_length_seconds=1.0).allowed


def test_clock_jump_back_forgets_future_transmission():
    s = schedule()
    assert s.may_transmit(1000.0 + 10.0, last_transmit_start=5000.0).allowed


def test_skew_shifts_the_cycle():
    s = schedule(skew_seconds=5.0)
    assert s.position(1000.0 + 12.0).current_slot == 0
    assert s.position(1000.0 + 15.0).current_slot == 1
    assert s.time_to_next_active(1000.0 + 12.0) == pytest.approx(3.0)
    assert s.slot_serial(1000.0 + 15.0) == 1
    assert schedule(skew_seconds=-40.0).position(1000.0 + 12.0).current_slot == 1


@pytest.mark.parametrize("overrides, words", [
    (dict(packet_length_seconds=8.0), "must be less than slot_duration_seconds"),
    (dict(guard_time_seconds=7.0), "must be less than slot_duration_seconds"),
    (dict(active_slots=4), "outside 0..3"),
    (dict(active_slots=""), "empty"),
    (dict(num_slots=0), "num_slots"),
    (dict(slot_duration_seconds=0.0), "slot_duration_seconds"),
    (dict(cycle_start_time="yesterday"), "ISO 8601"),
])
def test_invalid_schedules_are_refused_with_reason(overrides, words):
    with pytest.raises(ScheduleError, match=words):
        schedule(**overrides)


def test_cycle_start_time_formats():
    assert parse_cycle_start_time("2024-01-01T00:00:00Z") == 1704067200.0
    assert parse_cycle_start_time("2024-01-01T00:00:00") == 1704067200.0   # UTC when no zone
    assert parse_cycle_start_time("2024-01-01T01:00:00+01:00") == 1704067200.0
    assert parse_cycle_start_time("12.5") == 12.5
    assert parse_cycle_start_time(7) == 7.0


def test_frame_settings_default_and_clip_from_rate_table():
    f = frame_settings(1, 5)
    assert (f.maximum_miniframe_bytes, f.maximum_dataframe_bytes) == (72, 2048)
    assert f.packet_duration_s == pytest.approx(1.574 + 3.000)
    assert f.notes == ()
    clipped = frame_settings(3, 1, 500, 5000, 6.0)
    assert (clipped.maximum_miniframe_bytes, clipped.maximum_dataframe_bytes) == (96, 192)
    assert len(clipped.notes) == 2 and clipped.packet_duration_s == 6.0
    legacy = frame_settings(1, 2)   # legacy PSK packet: no miniframe
    assert legacy.maximum_miniframe_bytes == 0 and legacy.maximum_dataframe_bytes == 192
    with pytest.raises(ScheduleError, match="valid rates"):
        frame_settings(1, 9)


def test_slot_tags_merge_ranges_and_priority(tmp_path):
    text = """
slot_tags:
  - slots: 0-2
    require_tags: [extra_special]
  - slots: "0:3"
    exclude_tags: always_exclude
  - slots: 2
    minimum_priority: 50
"""
    tags = parse_slot_tags(text, num_slots=4)
    assert tags[0].require_tags == ("extra_special",)
    assert tags[3].exclude_tags == ("always_exclude",) and not tags[3].require_tags
    assert tags[2].minimum_priority == 50 and tags[1].minimum_priority is None
    path = tmp_path / "tags.yaml"
    path.write_text(text)
    assert parse_slot_tags(str(path), num_slots=4) == tags
    assert parse_slot_tags("", num_slots=4) == {}
    with pytest.raises(ScheduleError, match="not found"):
        parse_slot_tags(str(tmp_path / "missing.yaml"), num_slots=4)
    with pytest.raises(ScheduleError, match="outside"):
        parse_slot_tags([{"slots": 9, "require_tags": ["a"]}], num_slots=4)
    with pytest.raises(ScheduleError, match="unknown keys"):
        parse_slot_tags([{"slots": 1, "require": ["a"]}], num_slots=4)


def test_test_plan_entries_default_from_rates():
    plan = parse_test_plan({"test_cycle": [
        {"miniframe_rate": 1, "dataframe_rate": 3, "packet_tx_count": 2,
         "modem_commands": "$CCCFQ,SRC"},
        {"dataframe_rate": 1, "maximum_dataframe_bytes": 100, "packet_duration_sec": 5.0,
         "cycle_on_tx_packet": False},
    ]}, defaults=frame_settings(1, 5))
    assert plan[0].frames.maximum_dataframe_bytes == 512 and plan[0].packet_tx_count == 2
    assert plan[0].modem_commands == ("$CCCFQ,SRC",)
    assert plan[1].frames.miniframe_rate == 1 and plan[1].frames.maximum_dataframe_bytes == 100
    assert plan[1].frames.packet_duration_s == 5.0 and not plan[1].cycle_on_tx_packet
    with pytest.raises(ScheduleError, match="test_cycle"):
        parse_test_plan({"tests": []}, defaults=frame_settings(1, 5))
    with pytest.raises(ScheduleError, match="packet_tx_count"):
        parse_test_plan({"test_cycle": [{"packet_tx_count": 0}]}, defaults=frame_settings(1, 5))
