"""The new MAC kinds through their ROS interfaces on deterministic sim time: slotted ALOHA,
carrier sense and polled. Each: transmissions where the policy allows them, the status topic,
runtime retuning through the parameter service and refused values keeping the old schedule."""

from rclpy.parameter import Parameter
from tdma_test_support import SIM_TIME, SimClock, TestModem, TestQueue, param_client, set_parameters

from acomms_core.nodes.carrier_sense_node import CarrierSenseNode
from acomms_core.nodes.mac_node import MacNode
from acomms_core.nodes.tdma_slotted_aloha_node import TdmaSlottedAlohaNode
from acomms_core.ros.ros_support import seconds_to_duration_msg, seconds_to_time_msg
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import (
    CST,
    CarrierSenseStatus,
    PolledStatus,
    ReceptionStart,
    TdmaSlottedAlohaStatus,
)

START = 1000.0  # a multiple of every cycle below


def add_mac(ros, clock, node_class, namespace, **params):
    values = dict(guard_time_seconds=0.5, packet_length_seconds=2.0, tick_period_seconds=0.5,
                  status_period_seconds=0.5)
    values.update(params)
    overrides = SIM_TIME + [Parameter(k, value=v) for k, v in values.items()]
    mac = ros.add(node_class(namespace=namespace, context=ros.context,
                             parameter_overrides=overrides))
    clock.watch(mac, mac=True)
    return mac


def vehicle(ros, clock, channel, namespace):
    queue = TestQueue(ros, namespace)
    clock.watch(TestModem(ros, namespace, channel).node)
    return queue


def starts(channel, namespace):
    return [round(tx.start - START, 3) for tx in channel if tx.namespace == namespace]


def test_slotted_aloha_shares_slots_with_priority_and_retunes():
    channel, statuses = [], []
    with RosHarness() as ros:
        clock = SimClock(ros, START - 1.0)
        queues = {ns: vehicle(ros, clock, channel, ns) for ns in ("/a", "/b")}
        common = dict(cycle_start_time="0", num_slots=4, slot_duration_seconds=5.0,
                      aloha_slots="3", aloha_slot_priority=40)
        macs = [add_mac(ros, clock, TdmaSlottedAlohaNode, "/a", active_slots=0, **common),
                add_mac(ros, clock, TdmaSlottedAlohaNode, "/b", active_slots=1, **common)]
        ros.helper.create_subscription(TdmaSlottedAlohaStatus, "/a/tdma_slotted_aloha_status",
                                       statuses.append, 10)
        clock.start()
        for mac in macs:
            ros.configure_and_activate(mac)
        clock.run_until(START + 19.5, dt=0.5)
        client = param_client(ros, "/a/tdma_slotted_aloha_node")
        # Refused: slot 7 is outside the cycle; a probability above 1. The old schedule runs on.
        refused = set_parameters(ros, client, aloha_slots="2,7")
        assert not refused[0].successful and "aloha_slots" in refused[0].reason
        assert not set_parameters(ros, client, aloha_transmit_probability=1.5)[0].successful
        assert set_parameters(ros, client, aloha_slots="2")[0].successful
        clock.run_until(START + 39.5, dt=0.5)
        assert ros.spin_until(lambda: statuses, 5.0)

    # Own slots 0 (a) and 1 (b), the shared aloha slot 3 (both: they collide there).
    assert starts(channel, "/a")[:3] == [0.0, 2.5, 15.0]
    assert starts(channel, "/b")[:3] == [5.0, 7.5, 15.0]
    # After the change (at the slot boundary, t=20): a uses slot 2, b still slot 3.
    assert [t for t in starts(channel, "/a") if t >= 20] == [20.0, 22.5, 30.0, 32.5]
    assert [t for t in starts(channel, "/b") if t >= 20] == [25.0, 27.5, 35.0, 37.5]
    aloha_requests = [r for r in queues["/b"].requests if r.minimum_priority == 40]
    assert len(aloha_requests) >= 2  # the aloha slot asks the queue for priority >= 40 only
    status = statuses[-1]
    assert list(status.aloha_slots) == [2] and status.aloha_slot_priority == 40
    assert status.slot_duration_seconds == 5.0


def test_slotted_aloha_backoff_is_seeded_and_reproducible():
    def run():
        channel = []
        with RosHarness() as ros:
            clock = SimClock(ros, START - 1.0)
            vehicle(ros, clock, channel, "/a")
            mac = add_mac(ros, clock, TdmaSlottedAlohaNode, "/a", cycle_start_time="0",
                          num_slots=1, slot_duration_seconds=3.0, active_slots=0,
                          aloha_slots=0, allow_aloha_slots_only=True,
                          aloha_transmit_probability=0.5, random_seed=7)
            clock.start()
            ros.configure_and_activate(mac)
            clock.run_until(START + 60.0, dt=0.5)
            counters = dict(mac.counters)
        return starts(channel, "/a"), counters

    first, counters = run()
    second, _ = run()
    assert first == second  # same seed and node name: the same slots
    used = {int(t // 3.0) for t in first}
    assert 4 <= len(used) <= 16  # p = 0.5 over 20 slots
    assert len(first) == len(used)  # one packet per used slot (2 s + 0.5 s guard in 3 s)
    assert counters["packets_sent"] == len(first)


def test_carrier_sense_waits_for_a_quiet_channel_and_retunes():
    channel, statuses = [], []
    with RosHarness() as ros:
        clock = SimClock(ros, START)
        vehicle(ros, clock, channel, "/a")
        mac = add_mac(ros, clock, CarrierSenseNode, "/a", sense_quiet_seconds=3.0,
                      backoff_max_seconds=0.0)
        cst = ros.helper.create_publisher(CST, "/a/cst", 10)
        ros.helper.create_subscription(CarrierSenseStatus, "/a/carrier_sense_status",
                                       statuses.append, 10)
        clock.start()
        ros.configure_and_activate(mac)
        assert ros.spin_until(lambda: cst.get_subscription_count() > 0, 5.0)
        cst.publish(CST(src=3, dest=1))  # heard an arrival at t=0
        assert ros.spin_until(lambda: mac.policy.heard_until is not None, 5.0)
        clock.run_until(START + 9.5, dt=0.5)
        client = param_client(ros, "/a/carrier_sense_node")
        refused = set_parameters(ros, client, sense_quiet_seconds=-1.0)
        assert not refused[0].successful
        assert set_parameters(ros, client, guard_time_seconds=2.0)[0].successful
        clock.run_until(START + 20.0, dt=0.5)
        assert ros.spin_until(lambda: statuses, 5.0)

    times = starts(channel, "/a")
    # Quiet 3 s after the arrival heard at 0; then packet 2 s + guard 0.5 s apart.
    assert times[:3] == [3.0, 5.5, 8.0]
    # Guard 2 s from t=10: 2 s + 2 s apart.
    assert [t for t in times if t > 9] == [12.0, 16.0, 20.0]
    status = statuses[-1]
    assert status.last_heard_src == 3 and status.arrivals_heard == 1
    assert status.sense_quiet_seconds == 3.0


def test_carrier_sense_holds_while_a_detected_packet_arrives():
    channel, statuses = [], []
    with RosHarness() as ros:
        clock = SimClock(ros, START)
        vehicle(ros, clock, channel, "/a")
        mac = add_mac(ros, clock, CarrierSenseNode, "/a", sense_quiet_seconds=1.0,
                      backoff_max_seconds=0.0)
        start = ros.helper.create_publisher(ReceptionStart, "/a/reception_start", 10)
        ros.helper.create_subscription(CarrierSenseStatus, "/a/carrier_sense_status",
                                       statuses.append, 10)
        clock.start()
        ros.configure_and_activate(mac)
        assert ros.spin_until(lambda: start.get_subscription_count() > 0, 5.0)
        # The modem detected a 4 s packet from SRC 3 whose first sound arrived at t=0.
        start.publish(ReceptionStart(arrival_time=seconds_to_time_msg(START),
                                     expected_duration=seconds_to_duration_msg(4.0), src=3,
                                     packet_type=5, rate=1, carrier=10000))
        assert ros.spin_until(lambda: mac.counters["reception_starts"] == 1, 5.0)
        clock.run_until(START + 10.0, dt=0.5)
        assert ros.spin_until(lambda: statuses, 5.0)

    # Busy until the packet's end (4 s) plus the quiet time (1 s); then packet 2 s + guard 0.5 s.
    assert starts(channel, "/a")[:3] == [5.0, 7.5, 10.0]
    receiving = [s for s in statuses if s.receiving]
    assert receiving and receiving[0].reception_starts == 1 and not receiving[0].channel_clear
    assert receiving[0].last_heard_src == 3


def test_polled_transmits_in_its_entries_and_poll_list_changes_at_runtime():
    channel, statuses = [], []
    with RosHarness() as ros:
        clock = SimClock(ros, START - 1.0)
        macs = []
        for src, namespace in ((1, "/a"), (2, "/b")):
            vehicle(ros, clock, channel, namespace)
            macs.append(add_mac(ros, clock, MacNode, namespace, mac_kind="polled",
                                cycle_start_time="0", poll_list="1:5, 2:5", src=src))
        ros.helper.create_subscription(PolledStatus, "/b/polled_status", statuses.append, 10)
        clock.start()
        for mac in macs:
            ros.configure_and_activate(mac)
        clock.run_until(START + 11.0, dt=0.5)
        for namespace in ("/a", "/b"):
            client = param_client(ros, f"{namespace}/mac_node")
            refused = set_parameters(ros, client, poll_list="1:1, 2:5")  # 2 s packet can't fit
            assert not refused[0].successful and "poll_list" in refused[0].reason
            assert set_parameters(ros, client, poll_list="2:10, 1:5")[0].successful
        clock.run_until(START + 40.0, dt=0.5)
        assert ros.spin_until(lambda: statuses, 5.0)

    assert starts(channel, "/a")[:2] == [0.0, 2.5] and starts(channel, "/b")[:2] == [5.0, 7.5]
    # The new list from the end of the entry running at 11 s (t=15); its 15 s cycle counts
    # from cycle_start_time, so t=15 falls in its second entry (a) and t=20 starts b's.
    assert [t for t in starts(channel, "/a") if t >= 15] == [15.0, 17.5, 30.0, 32.5]
    assert [t for t in starts(channel, "/b") if t >= 15] == [20.0, 22.5, 25.0, 27.5,
                                                            35.0, 37.5, 40.0]
    status = statuses[-1]
    assert list(status.poll_srcs) == [2, 1] and status.src == 2 and status.cycle_seconds == 15.0
