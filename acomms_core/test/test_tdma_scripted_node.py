"""tdma_scripted_node through ROS: a test plan's rates, budgets, counts and modem commands."""

from rclpy.parameter import Parameter
from std_msgs.msg import String
from tdma_test_support import (
    SIM_TIME,
    SimClock,
    TestModem,
    TestQueue,
    get_parameters,
    param_client,
    set_parameters,
)

from acomms_core.nodes.tdma_scripted_node import TdmaScriptedNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import TdmaScriptedStatus

START = 1000.0  # a multiple of the 20 s cycle used below: slot 0 starts

PLAN = """
test_cycle:
  - miniframe_rate: 1
    dataframe_rate: 1
    maximum_dataframe_bytes: 100
    packet_tx_count: 2
    packet_duration_sec: 2.0
    modem_commands: ["$CCCFQ,SRC"]
  - miniframe_rate: 3
    dataframe_rate: 3
    packet_duration_sec: 2.0
  - dataframe_rate: 5
    maximum_miniframe_bytes: 500
    packet_duration_sec: 2.0
    modem_commands: "$CCCFQ,AGN"
"""

COMMANDS_ONLY_PLAN = """
test_cycle:
  - {modem_commands: ["$CCCFG,A,1"], cycle_on_tx_packet: false, packet_duration_sec: 2.0}
  - {modem_commands: ["$CCCFG,B,2"], cycle_on_tx_packet: false, packet_duration_sec: 2.0}
"""


def make_mac(ros, clock, namespace, **params):
    values = dict(cycle_start_time="0", num_slots=2, slot_duration_seconds=10.0,
                  guard_time_seconds=0.5, active_slots=0, tick_period_seconds=0.5,
                  status_period_seconds=0.5)
    values.update(params)
    overrides = SIM_TIME + [Parameter(k, value=v) for k, v in values.items()]
    mac = ros.add(TdmaScriptedNode(namespace=namespace, context=ros.context,
                                   parameter_overrides=overrides))
    clock.watch(mac, mac=True)
    return mac


def test_plan_cycles_rates_budgets_and_commands(tmp_path):
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(PLAN)
    commands_file = tmp_path / "commands.yaml"
    commands_file.write_text(COMMANDS_ONLY_PLAN)
    channel, commands, idle_commands, statuses = [], [], [], []
    with RosHarness() as ros:
        clock = SimClock(ros, START - 2.0)
        queue = TestQueue(ros, "/auv1")
        clock.watch(TestModem(ros, "/auv1", channel).node)
        TestQueue(ros, "/auv2", packets=0)
        clock.watch(TestModem(ros, "/auv2", channel).node)
        mac = make_mac(ros, clock, "/auv1", tdma_scripted_test_plan_file=str(plan_file))
        idle = make_mac(ros, clock, "/auv2", active_slots=1,
                        tdma_scripted_test_plan_file=str(commands_file))
        ros.helper.create_subscription(
            String, "/auv1/nmea_to_modem", lambda m: commands.append((clock.now, m.data)), 10)
        ros.helper.create_subscription(
            String, "/auv2/nmea_to_modem", lambda m: idle_commands.append((clock.now, m.data)), 10)
        ros.helper.create_subscription(TdmaScriptedStatus, "/auv1/tdma_scripted_status",
                                       statuses.append, 10)
        clock.start()
        ros.configure_and_activate(mac)
        ros.configure_and_activate(idle)
        clock.run_until(START + 28.0, dt=0.5)
        assert ros.spin_until(lambda: len(commands) >= 4 and len(idle_commands) >= 4
                              and statuses[-1].header.stamp.sec
                              == 1028, 5.0)

        # Four 2 s packets fit each 10 s slot (0, 2.5, 5, 7.5); the plan is 2 + 1 + 1 packets.
        sent = [(tx.start - START, tx.packet.miniframe_rate, tx.packet.dataframe_rate,
                 len(tx.packet.miniframe_bytes), len(tx.packet.dataframe_bytes))
                for tx in channel]
        assert sent == [
            (0.0, 1, 1, 72, 100), (2.5, 1, 1, 72, 100), (5.0, 3, 3, 72, 512),
            (7.5, 1, 5, 96, 2048),            # miniframe clipped to the 96 bytes rate 1 carries
            (20.0, 1, 1, 72, 100), (22.5, 1, 1, 72, 100), (25.0, 3, 3, 72, 512),
            (27.5, 1, 5, 96, 2048)]
        assert [(r.num_miniframe_bytes, r.num_dataframe_bytes) for r in queue.requests[:4]] == \
            [(72, 100), (72, 100), (72, 512), (96, 2048)]
        # Commands go out when their entry starts, before its first packet.
        texts = [text for _, text in commands]
        assert texts[:4] == ["$CCCFQ,SRC", "$CCCFQ,AGN", "$CCCFQ,SRC", "$CCCFQ,AGN"]
        assert [t - START for t, _ in commands][:2] == [0.0, 7.5]
        # The command-only plan advances without data because cycle_on_tx_packet is false:
        # one step per opportunity in slot 1 ([10, 20) of each cycle).
        assert [text for _, text in idle_commands][:4] == ["$CCCFG,A,1", "$CCCFG,B,2"] * 2
        assert [t - START for t, _ in idle_commands][:4] == [10.0, 12.5, 15.0, 17.5]
        assert not [tx for tx in channel if tx.namespace == "/auv2"]

        status = statuses[-1]
        assert status.this_cycle_tx_total >= 1 and status.packet_duration_sec == 2.0
        assert (status.last_miniframe_rate, status.last_dataframe_rate) == (1, 5)
        assert status.last_maximum_miniframe_bytes == 96
        assert list(status.this_cycle_modem_commands) == ["$CCCFQ,AGN"]
        assert list(status.last_cycle_modem_commands) == []  # the entry before had none
        assert status.current_slot == 0

        # A plan that cannot work is refused and the running one stays.
        bad = tmp_path / "bad.yaml"
        bad.write_text("test_cycle:\n  - {dataframe_rate: 5, packet_duration_sec: 12.0}\n")
        client = param_client(ros, "/auv1/tdma_scripted_node")
        result = set_parameters(ros, client, tdma_scripted_test_plan_file=str(bad))[0]
        assert not result.successful and "test plan entry 0" in result.reason
        garbage = tmp_path / "garbage.yaml"
        garbage.write_text("test_cycle: [{dataframe_rate: 9}]\n")
        result = set_parameters(ros, client, tdma_scripted_test_plan_file=str(garbage))[0]
        assert not result.successful and "valid rates" in result.reason
        assert get_parameters(ros, client, "tdma_scripted_test_plan_file") == [str(plan_file)]
        clock.run_until(START + 42.5, dt=0.5)
        assert [tx.packet.dataframe_rate for tx in channel[8:]] == [1, 1]
