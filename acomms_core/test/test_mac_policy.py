"""ROS-free MAC policies and registry: decisions, holds, slot-boundary changes, pings, plans."""

from collections import Counter

import pytest

from acomms_core.mac.policy import SEND_HELD, WAIT, Ping, RequestData, split_reason
from acomms_core.mac.registry import MAC_KINDS, mac_kind
from acomms_core.mac.tdma import TdmaPolicy
from acomms_core.mac.tdma_advanced import TdmaAdvancedPolicy
from acomms_core.mac.tdma_schedule import frame_settings
from acomms_core.mac.tdma_scripted import TdmaScriptedPolicy
from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.ros.parameter_spec import defaults


class Log:
    def __init__(self):
        self.lines = []

    def _add(self, level, text, **_options):
        self.lines.append((level, text))

    def info(self, text, **options):
        self._add("info", text, **options)

    def warning(self, text, **options):
        self._add("warning", text, **options)

    def error(self, text, **options):
        self._add("error", text, **options)


def policy(cls=TdmaPolicy, **values):
    merged = {**defaults(cls.PARAMETERS), "cycle_start_time": 0, "num_slots": 2,
              "slot_duration_seconds": 10.0, "guard_time_seconds": 1.0,
              "packet_length_seconds": 3.0, **values}
    p = cls(Log(), Counter())
    p.configure(merged)
    return p, merged


def test_request_in_active_slot_then_lockout_then_room_runs_out():
    p, _ = policy(active_slots=0, slot_tags="[{slots: 0, require_tags: [nav]}]")
    action = p.next_action(1000.0, None)  # 1000 = start of slot 0
    assert isinstance(action, RequestData) and action.tags.require_tags == ("nav",)
    assert action.frames.maximum_dataframe_bytes == 2048
    p.on_transmit(action.frames, 1000.0)
    assert p.next_action(1003.5, None) is None        # previous packet + guard until 1004
    assert isinstance(p.next_action(1004.0, None), RequestData)
    assert p.next_action(1006.5, None) is None        # 3.5 s left, a packet needs 4
    assert p.next_action(1010.0, None) is None        # slot 1 is not ours


def test_held_packet_goes_first_and_only_when_it_fits():
    p, _ = policy(active_slots=0)
    held = p.config.frames
    assert p.next_action(1007.0, held) is None
    assert p.next_action(1020.0, held) is SEND_HELD


def test_change_applies_at_next_slot_boundary_and_refusals_name_the_key():
    p, values = policy(active_slots=0)
    p.apply({**values, "active_slots": 1}, {"active_slots"}, now=1002.0, active=True)
    assert p.config.schedule.active_slots == (0,) and p.pending is not None
    p.begin_tick(1009.9)
    assert p.config.schedule.active_slots == (0,)
    p.begin_tick(1010.0)
    assert p.config.schedule.active_slots == (1,) and p.pending is None
    reason = TdmaPolicy.validate({**values, "active_slots": "0,5"})
    assert split_reason(reason, values) == ("active_slots",
                                            "slot 5 is outside 0..1 (slots are zero-indexed)")


def test_clock_jump_back_forgets_the_last_transmission():
    p, _ = policy(active_slots=0)
    p.on_transmit(p.config.frames, 5000.0)
    p.begin_tick(1000.0)
    assert p.last_tx_start is None and p.counters["clock_jumps_back"] == 1


def test_advanced_pings_then_data_and_mute():
    p, values = policy(TdmaAdvancedPolicy, active_slots="0:1", nav_slots=0, comms_slots=1,
                       pings_per_slot=2, ping_modem_timeout_sec=2.0)
    assert p.next_action(1000.0, None) == Ping("modem", 2.0)
    p.ping_started("modem", 1000.0, 2.0)
    assert p.next_action(1001.0, None) is WAIT
    p.ping_finished(1001.0)
    assert p.next_action(1002.0, None) == Ping("modem", 2.0)
    p.ping_started("modem", 1002.0, 2.0)
    p.ping_finished(1002.5)
    assert p.next_action(1004.0, None) is None  # pings done; slot 0 carries no data
    assert isinstance(p.next_action(1010.0, None), RequestData)
    p.apply({**values, "software_mute": True}, {"software_mute"}, now=1010.0, active=True)
    assert p.next_action(1010.0, None) is None and p.pending is None
    assert not p.status(1010.0)["we_are_active"]


def test_scripted_plan_steps_and_issues_commands_once_per_entry():
    plan = ("test_cycle:\n  - {dataframe_rate: 1, packet_tx_count: 2, modem_commands: [A]}\n"
            "  - {dataframe_rate: 3}\n")
    p, _ = policy(TdmaScriptedPolicy, active_slots=0, tdma_scripted_test_plan_file=plan,
                  slot_duration_seconds=30.0)
    first = p.next_action(1020.0, None)  # 1020 = start of slot 0 of a 60 s cycle
    assert first.modem_commands == ("A",) and first.frames.dataframe_rate == 1
    p.on_transmit(first.frames, 1020.0)
    t = 1020.0 + first.frames.packet_duration_s + 1.0  # packet + guard
    second = p.next_action(t, None)
    assert second.modem_commands == () and second.frames.dataframe_rate == 1
    p.on_transmit(second.frames, t)
    t += second.frames.packet_duration_s + 1.0
    third = p.next_action(t, None)
    assert third.frames.dataframe_rate == 3
    status = p.status(t)
    assert (status["this_cycle_tx_count"], status["this_cycle_tx_total"]) == (0, 1)
    assert status["last_cycle_modem_commands"] == ["A"]


def test_frame_budget_comes_from_the_profile():
    assert frame_settings(1, 5) == MICROMODEM2.frame_budget(1, 5)
    p, _ = policy(active_slots=0)
    assert p.config.profile.broadcast_address == MICROMODEM2.broadcast_address


def test_registry_checks_like_the_node_and_converts_like_the_stack():
    tdma = mac_kind("tdma")
    assert set(MAC_KINDS) == {"tdma", "tdma_advanced", "tdma_scripted", "tdma_slotted_aloha",
                              "carrier_sense", "polled"}
    assert tdma.check({"num_slots": "x"}) == "num_slots: expected integer, got str 'x'"
    assert tdma.check({"slot_duration_seconds": 9.9, "dataframe_rate": 5}) is None
    # a full legacy rate-2 packet is 4.072 s (profile rule) + 5 s guard > 9 s
    assert "slot_duration_seconds: packet_length_seconds + guard_time_seconds (4.072 + 5)" in \
        tdma.check({"slot_duration_seconds": 9.0, "dataframe_rate": 2})
    assert tdma.ros_values({"slot_duration_seconds": 11, "active_slots": ["0:1", 3],
                            "num_slots": 4}) == {"slot_duration_seconds": 11.0,
                                                 "active_slots": "0:1,3", "num_slots": 4}
    with pytest.raises(ValueError, match="known: carrier_sense, polled, tdma, "):
        mac_kind("aloha")
