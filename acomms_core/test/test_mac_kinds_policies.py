"""ROS-free policies of the new MAC kinds: slotted ALOHA, carrier sense, polled; seeded draws."""

from collections import Counter

import pytest

from acomms_core.mac.carrier_sense import CarrierSensePolicy
from acomms_core.mac.policy import SEND_HELD, RequestData
from acomms_core.mac.polled import PolledPolicy
from acomms_core.mac.registry import mac_kind
from acomms_core.mac.seeded_random import seeded_uniform
from acomms_core.mac.slotted_aloha import TdmaSlottedAlohaPolicy
from acomms_core.ros.parameter_spec import defaults


class Log:
    def __init__(self):
        self.lines = []

    def info(self, text, **_):
        self.lines.append(text)

    warning = error = debug = info


def make(cls, identity="/v/mac", **values):
    merged = {**defaults(cls.PARAMETERS), "guard_time_seconds": 1.0,
              "packet_length_seconds": 3.0, **values}
    if "num_slots" in merged:
        merged.update(cycle_start_time=0, slot_duration_seconds=10.0)
        merged.update(values)
    p = cls(Log(), Counter())
    p.identity = identity
    p.configure(merged)
    return p


def test_seeded_uniform_is_a_pure_function_of_its_keys():
    draws = [seeded_uniform(3, "/a/mac", "aloha", k) for k in range(4000)]
    assert draws == [seeded_uniform(3, "/a/mac", "aloha", k) for k in range(4000)]
    assert all(0.0 <= d < 1.0 for d in draws)
    assert abs(sum(draws) / len(draws) - 0.5) < 0.02
    assert draws[:50] != [seeded_uniform(3, "/b/mac", "aloha", k) for k in range(50)]
    assert draws[:50] != [seeded_uniform(4, "/a/mac", "aloha", k) for k in range(50)]


def test_aloha_slots_join_the_schedule_with_minimum_priority_and_nav_slots_removed():
    p = make(TdmaSlottedAlohaPolicy, num_slots=4, active_slots="0,1", aloha_slots="1:3",
             aloha_slot_priority=60, nav_slots="", pings_per_slot=0)
    config = p.config
    assert config.schedule.active_slots == (0, 1, 2, 3)
    assert config.aloha_slots == (1, 2, 3) and config.own_slots == (0,)
    assert config.nav_slots == (0,) and config.exclusive_slots == (0,)
    action = p.next_action(20.0, None)  # slot 2: an aloha slot outside active_slots
    assert isinstance(action, RequestData) and action.tags.minimum_priority == 60
    assert p.next_action(0.0, None).tags.minimum_priority is None
    status = p.status(5.0)
    assert status["time_to_next_aloha"] == 5.0 and status["time_to_next_own_slot"] == 0.0


@pytest.mark.parametrize("values, culprit", [
    ({"active_slots": 1, "aloha_slots": "1"}, "allow_aloha_slots_only"),
    ({"active_slots": 0, "aloha_slots": "9"}, "aloha_slots"),
    ({"active_slots": "0", "aloha_slots": "1", "nav_slots": "1", "pings_per_slot": 1,
      "ping_modem_timeout_sec": 2.0}, "nav_slots"),
])
def test_aloha_refusals_name_the_parameter(values, culprit):
    reason = TdmaSlottedAlohaPolicy.validate({**defaults(TdmaSlottedAlohaPolicy.PARAMETERS),
                                              "num_slots": 4, **values})
    assert reason is not None and reason.startswith(f"{culprit}: "), reason


def test_aloha_backoff_rate_matches_the_probability_and_prediction_agrees():
    p = make(TdmaSlottedAlohaPolicy, num_slots=1, active_slots=0, aloha_slots=0,
             allow_aloha_slots_only=True, aloha_transmit_probability=0.3, random_seed=11)
    used = sum(p.next_action(10.0 * k, None) is not None for k in range(3000))
    assert abs(used / 3000 - 0.3) < 0.03  # binomial sigma 0.008
    assert p.counters["aloha_slots_backed_off"] == 3000 - used
    # The wake-up prediction skips exactly the backed-off slots.
    decision = p.next_decision_time_s(6.5, None, 0.5)  # too late for slot 0
    first_used = next(k for k in range(1, 100) if p.aloha_draw_allows(10.0 * k))
    assert decision == pytest.approx(10.0 * first_used)


def test_carrier_sense_waits_quiet_time_plus_seeded_backoff():
    p = make(CarrierSensePolicy, sense_quiet_seconds=2.0, backoff_max_seconds=4.0,
             random_seed=5)
    assert isinstance(p.next_action(0.0, None), RequestData)  # nothing heard yet
    p.channel_heard(7, 10.0)
    backoff = p.backoff_s
    assert 0.0 <= backoff <= 4.0 and p.ready_at() == pytest.approx(12.0 + backoff)
    assert p.next_action(11.9 + backoff, None) is None
    assert p.next_action(12.0 + backoff, p.config.frames) is SEND_HELD
    again = make(CarrierSensePolicy, sense_quiet_seconds=2.0, backoff_max_seconds=4.0,
                 random_seed=5)
    again.channel_heard(7, 10.0)
    assert again.backoff_s == backoff  # same seed and name: same draw
    p.on_transmit(p.config.frames, 20.0)
    assert p.ready_at() == pytest.approx(20.0 + 3.0 + 1.0 + p.backoff_s)
    assert p.next_decision_time_s(20.0, None, 0.5) >= 24.0


def test_carrier_sense_refuses_an_unknown_source():
    reason = mac_kind("carrier_sense").check({"sense_source": "sonar"})
    assert reason.startswith("sense_source: ")


def test_polled_entries_rates_and_refusals():
    p = make(PolledPolicy, poll_list="1:10, 2:6, 1:10:2", src=1, cycle_start_time=0,
             packet_length_seconds=-1.0)
    config = p.config
    assert config.cycle_seconds == 26.0
    assert [e.src for e in config.entries] == [1, 2, 1]
    assert config.entries[2].frames.dataframe_rate == 2
    assert config.entries[2].frames.packet_duration_s == 4.072  # its own rate: the rate-2 FDP
    assert p.next_action(12.0, None) is None  # src 2's entry
    assert p.next_action(16.0, None).frames.dataframe_rate == 2
    assert config.time_to_next_own(12.0) == 4.0
    assert p.boundary_after(12.0) == 16.0
    assert p.status(12.0)["current_src"] == 2 and not p.status(12.0)["we_are_active"]
    kind = mac_kind("polled")
    for bad in ("", "1", "1:x", "300:5", "1:0.5", "1:10:9"):
        reason = kind.check({"poll_list": bad})
        assert reason is not None and reason.startswith("poll_list: "), (bad, reason)


def test_carrier_sense_is_busy_from_a_reception_start_until_its_end():
    p = make(CarrierSensePolicy, sense_quiet_seconds=1.0, backoff_max_seconds=0.0)
    assert p.may_send(100.0, 3.0)
    assert p.reception_started(7, 100.0, 104.0)  # detected at 100.05, ends at 104
    assert not p.may_send(100.1, 3.0) and not p.may_send(104.9, 3.0)
    assert p.status(102.0)["receiving"] and not p.status(102.0)["channel_clear"]
    assert p.may_send(105.0, 3.0)  # end + quiet
    assert p.status(105.0)["reception_starts"] == 1 and p.last_heard_src == 7
    # The end report of that packet (CST at 104) changes nothing.
    p.channel_heard(7, 104.0)
    assert p.ready_at() == pytest.approx(105.0)


def test_carrier_sense_reception_start_without_an_end_waits_for_the_report_or_timeout():
    p = make(CarrierSensePolicy, sense_quiet_seconds=1.0, backoff_max_seconds=0.0,
             reception_start_timeout_seconds=8.0)
    p.reception_started(-1, 200.0, None)  # $CARXP: sender and length unknown
    assert not p.may_send(206.0, 3.0)
    p.channel_heard(3, 203.5)  # its CST: the packet ended at 203.5
    assert p.ready_at() == pytest.approx(204.5) and p.may_send(204.5, 3.0)
    # No report: busy until start + timeout (+ quiet), then counted.
    p.reception_started(-1, 300.0, None)
    p.begin_tick(305.0)
    assert not p.may_send(305.0, 3.0)
    p.begin_tick(308.0)
    assert p.counters["reception_start_timeouts"] == 1
    assert not p.may_send(308.5, 3.0) and p.may_send(309.0, 3.0)


def test_carrier_sense_can_ignore_reception_starts_and_forgets_them_when_time_restarts():
    off = make(CarrierSensePolicy, sense_reception_start=False, backoff_max_seconds=0.0)
    assert not off.reception_started(7, 100.0, 104.0)
    assert off.may_send(101.0, 3.0) and off.counters["reception_starts_ignored"] == 1
    p = make(CarrierSensePolicy, backoff_max_seconds=0.0)
    p.reception_started(7, 100.0, 104.0)
    p.begin_tick(10.0)  # sim time restarted: the old packet says nothing about the channel
    assert p.may_send(10.0, 3.0)
