"""tdma_node through its ROS interfaces, on deterministic sim time.

Proofs: MACs with disjoint active slots never start overlapping transmissions over many cycles and
each uses every opportunity of its slots when data is queued; schedule changes through the
parameter service take effect at the next slot boundary; invalid changes are refused with a reason
and the old schedule keeps running; tdma_status reports the slot state.
"""

import math

import pytest
from lifecycle_msgs.msg import State
from rclpy.exceptions import ParameterException
from rclpy.parameter import Parameter
from tdma_test_support import (
    SIM_TIME,
    SimClock,
    TestModem,
    TestQueue,
    get_parameters,
    param_client,
    set_parameters,
)

from acomms_core.nodes.tdma_node import TdmaNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import TdmaStatus

START = 1000.0  # sim time at the start of each test; cycle_start_time is 0, so cycles align


def make_mac(ros, clock, namespace, node_class=TdmaNode, **params):
    values = dict(cycle_start_time="0", guard_time_seconds=0.5, packet_length_seconds=2.0,
                  tick_period_seconds=0.5, status_period_seconds=1.0)
    values.update(params)
    overrides = SIM_TIME + [Parameter(k, value=v) for k, v in values.items()]
    mac = ros.add(node_class(namespace=namespace, context=ros.context,
                             parameter_overrides=overrides))
    clock.watch(mac, mac=True)
    return mac


def slot_of(t, num_slots, slot_duration):
    in_cycle = t % (num_slots * slot_duration)
    return int(in_cycle // slot_duration), (t // (num_slots * slot_duration))


def test_disjoint_slots_never_overlap_and_every_slot_is_used():
    # 7 s slots: a third packet at 5.0 s would end 2 s later, inside the end-of-slot guard.
    num_slots, slot_duration, packet, guard = 6, 7.0, 2.0, 0.5
    plan = {"/auv1": "5:0", "/auv2": "1,3", "/auv3": [2, 4]}  # wrap range, string list, int list
    channel = []
    with RosHarness() as ros:
        clock = SimClock(ros, START)
        macs = {}
        for namespace, active in plan.items():
            TestQueue(ros, namespace)  # never runs out: saturated
            clock.watch(TestModem(ros, namespace, channel).node)
            macs[namespace] = make_mac(ros, clock, namespace, num_slots=num_slots,
                                       slot_duration_seconds=slot_duration, active_slots=active)
        clock.start()
        for mac in macs.values():
            ros.configure_and_activate(mac)
        cycles = 8
        clock.run_until(START + cycles * num_slots * slot_duration, dt=0.5)

    assert channel, "no transmissions at all"
    active_sets = {"/auv1": {5, 0}, "/auv2": {1, 3}, "/auv3": {2, 4}}
    starts = sorted((tx.start, tx.namespace) for tx in channel)
    for (t0, ns0), (t1, ns1) in zip(starts, starts[1:], strict=False):
        assert t1 - t0 >= packet - 1e-6, f"{ns0}@{t0} overlaps {ns1}@{t1}"
    per_slot = {}
    for tx in channel:
        slot, cycle = slot_of(tx.start, num_slots, slot_duration)
        assert slot in active_sets[tx.namespace], f"{tx.namespace} sent in slot {slot}"
        slot_end = (math.floor(tx.start / slot_duration) + 1) * slot_duration
        assert tx.start + packet + guard <= slot_end + 1e-6, "packet runs into the guard"
        per_slot.setdefault((tx.namespace, cycle, slot), []).append(tx.start)
        assert len(tx.packet.dataframe_bytes) == 2048 and len(tx.packet.miniframe_bytes) == 72
        assert (tx.packet.miniframe_rate, tx.packet.dataframe_rate) == (1, 5)
    # Every active slot of every cycle carries two packets (at 0 s and 2.5 s into the slot: a third
    # at 5 s would not end a guard time before the slot does).
    first_full_cycle = int(START // (num_slots * slot_duration)) + 1
    for namespace, active in active_sets.items():
        for cycle in range(first_full_cycle, first_full_cycle + cycles - 1):
            for slot in active:
                starts_in_slot = per_slot.get((namespace, cycle, slot), [])
                offsets = sorted(round(t % slot_duration, 6) for t in starts_in_slot)
                assert offsets == [0.0, 2.5], (namespace, cycle, slot, offsets)


def test_empty_queue_sends_nothing_and_test_data_pads():
    channel = []
    with RosHarness() as ros:
        clock = SimClock(ros, START)
        queue = TestQueue(ros, "/auv1", packets=0)
        clock.watch(TestModem(ros, "/auv1", channel).node)
        TestQueue(ros, "/auv2", packets=0)
        clock.watch(TestModem(ros, "/auv2", channel).node)
        quiet = make_mac(ros, clock, "/auv1", num_slots=2, slot_duration_seconds=5.0,
                         active_slots=0)
        padded = make_mac(ros, clock, "/auv2", num_slots=2, slot_duration_seconds=5.0,
                          active_slots=1, always_send_test_data=True,
                          maximum_dataframe_bytes=100, dataframe_rate=1)
        clock.start()
        ros.configure_and_activate(quiet)
        ros.configure_and_activate(padded)
        clock.run_until(START + 40.0, dt=0.5)
        assert quiet.counters["empty_queue_responses"] >= 4
    assert queue.requests, "the MAC never asked its queue"
    assert {tx.namespace for tx in channel} == {"/auv2"}
    assert len(channel) == 4 * 2  # two packets per 5 s slot, four cycles
    for tx in channel:
        assert bytes(tx.packet.dataframe_bytes) == bytes(100)  # rate 1 clips nothing below 192
        assert bytes(tx.packet.miniframe_bytes) == bytes(72)


def test_runtime_schedule_change_takes_effect_at_slot_boundary_and_invalid_is_refused():
    channel = []
    with RosHarness() as ros:
        clock = SimClock(ros, START)  # START is a multiple of the 24 s cycle: slot 0 starts
        TestQueue(ros, "/auv1")
        clock.watch(TestModem(ros, "/auv1", channel).node)
        mac = make_mac(ros, clock, "/auv1", num_slots=4, slot_duration_seconds=6.0,
                       active_slots=0)
        clock.start()
        ros.configure_and_activate(mac)
        client = param_client(ros, "/auv1/tdma_node")
        t0 = 1008.0  # 1008 = 42 cycles of 24 s: start of slot 0
        clock.run_until(t0 + 1.0, dt=0.5)
        assert [tx.start for tx in channel][-1:] == [t0]

        # Mid-slot change: new slot and new slot duration. Accepted, but the running slot 0 still
        # gets its second packet at 2.5 s; from the boundary at t0 + 6 the new schedule rules.
        results = set_parameters(ros, client, active_slots="2", slot_duration_seconds=5.0)
        assert all(r.successful for r in results), [r.reason for r in results]
        clock.run_until(t0 + 6.0, dt=0.5)
        assert [tx.start for tx in channel if tx.start >= t0] == [t0, t0 + 2.5]
        clock.run_until(t0 + 60.0, dt=0.5)
        after = [tx.start for tx in channel if tx.start >= t0 + 6.0]
        assert after, "nothing sent under the new schedule"
        for start in after:  # new schedule: 4 x 5 s, slot 2 = [10, 15) of each 20 s cycle
            assert 10.0 <= start % 20.0 < 15.0 - 2.5 + 1e-6, start
        assert len(after) == 4  # slot 2 at 1030 and 1050, two packets each (1014 is too late)
        assert get_parameters(ros, client, "active_slots", "slot_duration_seconds") == ["2", 5.0]

        # Invalid: packet + guard (2.5 s) does not fit a 2 s slot; slot 9 does not exist.
        before = len(channel)
        results = set_parameters(ros, client, slot_duration_seconds=2.0)
        assert not results[0].successful
        assert "slot_duration_seconds" in results[0].reason
        results = set_parameters(ros, client, active_slots="1,9")
        assert not results[0].successful and "outside 0..3" in results[0].reason
        results = set_parameters(ros, client, num_slots=2)   # slot 2 would vanish
        assert not results[0].successful and "outside 0..1" in results[0].reason
        assert get_parameters(ros, client, "active_slots", "slot_duration_seconds",
                              "num_slots") == ["2", 5.0, 4]
        clock.run_until(t0 + 100.0, dt=0.5)
        later = [tx.start for tx in channel[before:]]
        assert len(later) == 4 and all(10.0 <= s % 20.0 < 12.5 + 1e-6 for s in later)


def test_status_reports_slot_state():
    statuses = []
    with RosHarness() as ros:
        clock = SimClock(ros, START)
        TestQueue(ros, "/auv1")
        clock.watch(TestModem(ros, "/auv1", []).node)
        tags = "[{slots: 1, minimum_priority: 20, require_tags: [nav]}, " \
               "{slots: 3, exclude_tags: [bulk]}]"
        mac = make_mac(ros, clock, "/auv1", num_slots=4, slot_duration_seconds=10.0,
                       active_slots="1:2", slot_tags=tags, status_period_seconds=0.5)
        ros.helper.create_subscription(TdmaStatus, "/auv1/tdma_status", statuses.append, 10)
        clock.start()
        ros.configure_and_activate(mac)
        # START = 1000 -> in_cycle 0 of a 40 s cycle; step to 13.0 s (slot 1, active).
        clock.run_until(START + 13.0, dt=0.5)
        assert ros.spin_until(lambda: any(s.header.stamp.sec == 1013 for s in statuses), 5.0)
        status = next(s for s in statuses if s.header.stamp.sec == 1013
                      and s.header.stamp.nanosec == 0)
        assert status.we_are_active and status.current_slot == 1
        assert status.remaining_slot_seconds == pytest.approx(7.0)
        assert status.remaining_active_seconds == pytest.approx(17.0)
        assert status.time_to_next_active == 0.0
        assert status.time_to_next_dedicated_slot == pytest.approx(7.0)  # slot 2 is untagged
        assert status.minimum_priority == 20 and list(status.require_tags) == ["nav"]
        assert status.slot_duration_seconds == 10.0
        clock.run_until(START + 33.0, dt=0.5)
        assert ros.spin_until(lambda: any(s.header.stamp.sec == 1033 for s in statuses), 5.0)
        status = next(s for s in statuses if s.header.stamp.sec == 1033)
        assert not status.we_are_active and status.current_slot == 3
        assert status.time_to_next_active == pytest.approx(17.0)
        assert list(status.exclude_tags) == ["bulk"] and status.remaining_active_seconds == 0.0


def test_bad_start_up_parameters_are_refused_with_reason():
    with RosHarness() as ros:
        clock = SimClock(ros, START)
        with pytest.raises(ValueError, match="must be less than slot_duration_seconds"):
            make_mac(ros, clock, "/auv1", num_slots=3, slot_duration_seconds=2.0,
                     active_slots=0)  # 2.0 packet + 0.5 guard > 2 s slot
        with pytest.raises(ValueError, match="outside 0..2"):
            make_mac(ros, clock, "/auv2", num_slots=3, slot_duration_seconds=20.0,
                     active_slots="0,3")
        with pytest.raises(ParameterException):
            make_mac(ros, clock, "/auv3", num_slots="three")


def test_configure_fails_with_reason_when_a_file_went_bad(tmp_path):
    tags = tmp_path / "tags.yaml"
    tags.write_text("- {slots: 0, minimum_priority: 5}\n")
    with RosHarness() as ros:
        clock = SimClock(ros, START)
        mac = make_mac(ros, clock, "/auv1", num_slots=2, slot_duration_seconds=10.0,
                       active_slots=0, slot_tags=str(tags))
        tags.write_text("- {slots: 7, minimum_priority: 5}\n")
        mac.trigger_configure()
        assert mac._state_machine.current_state[0] == State.PRIMARY_STATE_UNCONFIGURED
        tags.write_text("- {slots: 1, minimum_priority: 5}\n")
        mac.trigger_configure()
        assert mac._state_machine.current_state[0] == State.PRIMARY_STATE_INACTIVE


def test_clock_jump_back_and_missing_services_do_not_stop_the_mac():
    channel = []
    with RosHarness() as ros:
        clock = SimClock(ros, START - 0.5)
        lonely = make_mac(ros, clock, "/auv9", num_slots=2, slot_duration_seconds=5.0,
                          active_slots=0)  # neither queue nor modem exists
        TestQueue(ros, "/auv1")
        clock.watch(TestModem(ros, "/auv1", channel).node)
        mac = make_mac(ros, clock, "/auv1", num_slots=2, slot_duration_seconds=5.0,
                       active_slots=0)
        clock.start()
        ros.configure_and_activate(lonely)
        ros.configure_and_activate(mac)
        clock.run_until(START + 10.0, dt=0.5)
        assert [tx.start - START for tx in channel] == [0.0, 2.5, 10.0]
        assert lonely.counters["queue_unavailable"] >= 2 and not lonely.counters["packets_sent"]
        # Sim time restarts 200 s earlier: the MAC forgets the "future" transmission and keeps
        # using its slots instead of waiting 200 s for the lockout to pass.
        clock.jump(START - 200.0)
        clock.run_until(START - 190.0 + 2.5, dt=0.5)
        assert [tx.start - START for tx in channel[3:]] == [-199.5, -190.0, -187.5]
        assert mac.counters["clock_jumps_back"] == 1


def test_late_queue_answer_is_held_for_the_next_slot():
    """The queue answers after the slot has no room left: the packet waits for the next slot."""
    import rclpy
    from rclpy.task import Future

    from acomms_interfaces.srv import GetNextPacketData

    channel, requests, gate = [], [], Future()
    with RosHarness() as ros:
        clock = SimClock(ros, START - 0.5)
        queue_node = ros.add(rclpy.create_node("test_queue", namespace="/auv1",
                                               context=ros.context))

        async def answer_late(request, response):
            requests.append(request)
            if len(requests) == 1:
                await gate
            response.dest = 3
            response.dataframe_bytes = bytes([len(requests)] * 10)
            response.num_dataframe_bytes = 10
            response.num_messages = 1
            response.queued_message_ids = [len(requests)]
            return response

        queue_node.create_service(GetNextPacketData, "get_next_packet_data", answer_late)
        clock.watch(TestModem(ros, "/auv1", channel).node)
        mac = make_mac(ros, clock, "/auv1", num_slots=2, slot_duration_seconds=5.0,
                       active_slots=0)
        clock.start()
        ros.configure_and_activate(mac)
        clock.jump(START)
        assert ros.spin_until(lambda: requests, 5.0)
        clock.jump(START + 4.0)        # 1 s left in slot 0: too late for a 2.5 s packet + guard
        gate.set_result(None)
        assert ros.spin_until(lambda: mac.idle and mac.counters["held_packets"] == 1, 5.0)
        assert channel == []
        clock.run_until(START + 10.0, dt=0.5)
        assert [tx.start - START for tx in channel] == [10.0]
        assert bytes(channel[0].packet.dataframe_bytes) == bytes([1] * 10)  # the held packet
        assert len(requests) == 1      # sent without asking the queue again
        clock.run_until(START + 12.5, dt=0.5)
        assert bytes(channel[1].packet.dataframe_bytes) == bytes([2] * 10)


def test_test_packets_without_a_queue_go_to_the_profile_broadcast_address():
    from acomms_core.modems.micromodem2 import MICROMODEM2

    channel = []
    with RosHarness() as ros:
        clock = SimClock(ros, START - 0.5)  # the first tick lands on START
        clock.watch(TestModem(ros, "/auv1", channel).node)  # no queue at all
        mac = make_mac(ros, clock, "/auv1", num_slots=2, slot_duration_seconds=5.0,
                       active_slots=0, always_send_test_data=True)
        clock.start()
        ros.configure_and_activate(mac)
        clock.run_until(START + 3.0, dt=0.5)
    assert [tx.start - START for tx in channel] == [0.0, 2.5]
    assert {tx.packet.dest for tx in channel} == {MICROMODEM2.broadcast_address}
    assert all(len(tx.packet.dataframe_bytes) == 2048 for tx in channel)


def test_generic_mac_node_runs_the_kind_its_parameter_names():
    from acomms_core.mac.registry import MAC_KINDS
    from acomms_core.nodes.mac_node import MacNode

    with RosHarness() as ros:
        node = ros.add(MacNode(context=ros.context, namespace="/auv1", parameter_overrides=[
            Parameter("mac_kind", value="tdma_advanced"), Parameter("nav_slots", value="none")]))
        assert node.get_name() == "mac_node" and node.kind is MAC_KINDS["tdma_advanced"]
        assert node.get_parameter("nav_slots").value == "none"
        with pytest.raises(ValueError, match="unknown MAC kind 'aloha'"):
            MacNode(context=ros.context, parameter_overrides=[Parameter("mac_kind",
                                                                        value="aloha")])
