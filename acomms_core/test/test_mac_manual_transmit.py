"""Manual modem commands through a MAC (ros_acomms' tdma/nmea_to_modem, issue 19), on sim time:
they wait for the vehicle's transmit opportunity, use it instead of a packet, and respect
minimum-priority slots unless allowed."""

from rclpy.parameter import Parameter
from std_msgs.msg import String
from tdma_test_support import SIM_TIME, SimClock, TestModem, TestQueue

from acomms_core.nodes.tdma_node import TdmaNode
from acomms_core.ros.testing import RosHarness

START = 1000.0  # slot 0 of the 20 s cycle starts here


def test_manual_commands_take_the_next_transmit_opportunity():
    channel, commands = [], []
    with RosHarness() as ros:
        clock = SimClock(ros, START - 4.0)  # in slot 1: not ours
        TestQueue(ros, "/auv1")
        clock.watch(TestModem(ros, "/auv1", channel).node)
        values = dict(cycle_start_time="0", num_slots=2, slot_duration_seconds=10.0,
                      guard_time_seconds=0.5, packet_length_seconds=2.0, active_slots=0,
                      tick_period_seconds=0.5, maxlen_manual_queue=2,
                      slot_tags="- {slots: [0], minimum_priority: 0}")
        mac = ros.add(TdmaNode(namespace="/auv1", context=ros.context, parameter_overrides=(
            SIM_TIME + [Parameter(k, value=v) for k, v in values.items()])))
        clock.watch(mac, mac=True)
        ros.helper.create_subscription(
            String, "/auv1/nmea_to_modem", lambda m: commands.append((clock.now, m.data)), 10)
        manual = ros.helper.create_publisher(String, "/auv1/tdma/nmea_to_modem", 10)
        clock.start()
        ros.configure_and_activate(mac)
        assert ros.spin_until(lambda: manual.get_subscription_count() > 0, timeout=10.0)
        for text in ("$CCCFQ,SRC", "$CCCFQ,AGN\n$CCCFQ,BR1", "$CCCFQ,TXP", "  "):
            manual.publish(String(data=text))
        assert ros.spin_until(lambda: mac.counters["manual_transmits_empty"] == 1, timeout=10.0)
        assert mac.counters["manual_transmits_dropped"] == 1  # the oldest of three, maxlen 2
        clock.run_until(START - 0.5, dt=0.5)
        ros.spin_for(0.2)
        assert commands == []  # not our slot
        clock.run_until(START + 8.0, dt=0.5)
        assert ros.spin_until(lambda: len(commands) >= 3, timeout=5.0)
        # One request per opportunity, every line of it: the opportunities at 0 and 2.5 s
        # (2 s + 0.5 s guard each) carried them, the packets came after.
        assert [text for _, text in commands] == ["$CCCFQ,AGN", "$CCCFQ,BR1", "$CCCFQ,TXP"]
        assert [tx.start - START for tx in channel] == [5.0, 7.5]
        assert mac.counters["manual_transmits_sent"] == 2

        # In a slot with a minimum priority the command waits, unless allowed.
        assert mac.set_parameters([Parameter(
            "slot_tags", value="- {slots: [0], minimum_priority: 3}")])[0].successful
        clock.run_until(START + 20.0, dt=0.5)  # the new tags apply at the next slot boundary
        manual.publish(String(data="$CCCFQ,ALL"))
        assert ros.spin_until(lambda: mac.counters["manual_transmits_queued"] == 4, timeout=5.0)
        clock.run_until(START + 24.0, dt=0.5)
        assert len(commands) == 3
        assert mac.set_parameters([Parameter("allow_manual_tx_during_priority_slots",
                                             value=True)])[0].successful
        clock.run_until(START + 29.0, dt=0.5)
        assert ros.spin_until(lambda: len(commands) == 4, timeout=5.0)
        assert commands[-1][1] == "$CCCFQ,ALL"
