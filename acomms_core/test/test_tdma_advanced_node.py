"""tdma_advanced_node through ROS: nav pings, comms slots, slot tags, software mute, skew."""

import pytest
from rclpy.parameter import Parameter
from tdma_test_support import (
    SIM_TIME,
    SimClock,
    TestModem,
    TestQueue,
    param_client,
    set_parameters,
)

from acomms_core.nodes.tdma_advanced_node import TdmaAdvancedNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import TdmaAdvancedStatus

START = 1000.0  # a multiple of the 40 s cycle used below: slot 0 starts
CLOCK_START = START - 2.0  # MAC timers start here, so a tick falls exactly on START


def make_mac(ros, clock, namespace, **params):
    values = dict(cycle_start_time="0", num_slots=4, slot_duration_seconds=10.0,
                  guard_time_seconds=0.5, packet_length_seconds=2.0, tick_period_seconds=0.5,
                  status_period_seconds=0.5)
    values.update(params)
    overrides = SIM_TIME + [Parameter(k, value=v) for k, v in values.items()]
    mac = ros.add(TdmaAdvancedNode(namespace=namespace, context=ros.context,
                                   parameter_overrides=overrides))
    clock.watch(mac, mac=True)
    return mac


def test_nav_pings_then_comms_with_slot_tags():
    channel = []
    statuses = []
    with RosHarness() as ros:
        clock = SimClock(ros, CLOCK_START)
        queue = TestQueue(ros, "/auv1")
        modem = TestModem(ros, "/auv1", channel)
        clock.watch(modem.node)
        mac = make_mac(ros, clock, "/auv1", active_slots="0:1", nav_slots=0, comms_slots="1",
                       pings_per_slot=2, ping_modem_src=9, ping_modem_timeout_sec=2.0,
                       ping_transponders=True, ping_transponder_c=False,
                       transponder_reply_timeout_sec=2.0,
                       slot_tags="[{slots: 1, minimum_priority: 30, require_tags: [chat]}]")
        ros.helper.create_subscription(TdmaAdvancedStatus, "/auv1/tdma_advanced_status",
                                       statuses.append, 10)
        clock.start()
        ros.configure_and_activate(mac)
        clock.run_until(START + 79.5, dt=0.5)
        assert ros.spin_until(lambda: statuses, 5.0)

    # Per 40 s cycle: two modem pings and a transponder ping at the start of nav slot 0 (each
    # after the previous reply plus the guard time), four packets in comms slot 1, nothing else.
    ping_times = [round(t - START, 3) for t, _ in modem.pings]
    assert ping_times == [0.0, 0.5, 40.0, 40.5]
    assert [round(t - START, 3) for t, _ in modem.transponder_pings] == [1.0, 41.0]
    request = modem.pings[0][1]
    assert (request.dest, request.rate, request.cdr) == (9, 1, 4)
    assert request.timeout_sec == pytest.approx(2.0)
    assert list(modem.transponder_pings[0][1].transponder_dest_mask) == [True, True, False, True]
    assert [round(tx.start - START, 3) for tx in channel] == [10.0, 12.5, 15.0, 17.5,
                                                             50.0, 52.5, 55.0, 57.5]
    assert all(r.minimum_priority == 30 and list(r.require_tags) == ["chat"]
               for r in queue.requests)
    status = statuses[-1]
    assert list(status.active_slots) == [0, 1] and list(status.nav_slots) == [0]
    assert list(status.comms_slots) == [1] and status.num_slots == 4
    assert status.pings_per_slot == 2 and status.ping_modem_src == 9 and status.ping_transponders
    assert (status.miniframe_rate, status.dataframe_rate) == (1, 5)
    assert (status.maximum_miniframe_bytes, status.maximum_dataframe_bytes) == (72, 2048)
    assert not status.software_mute and "comms_slots: 1" in status.message
    assert status.slot_duration_seconds == 10.0


def test_software_mute_skew_and_refused_changes():
    channel = []
    statuses = []
    with RosHarness() as ros:
        clock = SimClock(ros, CLOCK_START)
        TestQueue(ros, "/auv1")
        clock.watch(TestModem(ros, "/auv1", channel).node)
        mac = make_mac(ros, clock, "/auv1", active_slots=1)
        ros.helper.create_subscription(TdmaAdvancedStatus, "/auv1/tdma_advanced_status",
                                       statuses.append, 10)
        clock.start()
        ros.configure_and_activate(mac)
        client = param_client(ros, "/auv1/tdma_advanced_node")
        clock.run_until(START + 11.0, dt=0.5)
        assert [tx.start - START for tx in channel] == [10.0]

        # Mute applies at once: the rest of this slot and the next cycle stay silent.
        assert set_parameters(ros, client, software_mute=True)[0].successful
        clock.run_until(START + 60.0, dt=0.5)
        assert len(channel) == 1
        muted = [s for s in statuses if 1050 <= s.header.stamp.sec < 1060]
        assert muted and all(s.software_mute and s.current_slot == 1
                             and not s.we_are_active for s in muted)

        # Unmute (at once) and skew the cycle by 5 s (from the slot boundary at 70): slot 1 is
        # then [95, 105) of the next cycle.
        results = set_parameters(ros, client, software_mute=False, skew_cycle_sec=5.0)
        assert all(r.successful for r in results)
        clock.run_until(START + 100.0, dt=0.5)
        assert [tx.start - START for tx in channel[1:]] == [95.0, 97.5, 100.0]

        # Refused: a ping that cannot fit a nav slot; a nav slot that does not exist.
        results = set_parameters(ros, client, pings_per_slot=1, ping_modem_timeout_sec=10.0)
        assert results[0].successful  # 1 ping of the 5 s default timeout fits
        assert not results[1].successful and "ping_modem_timeout_sec" in results[1].reason
        results = set_parameters(ros, client, nav_slots="7")
        assert not results[0].successful and "outside 0..3" in results[0].reason
