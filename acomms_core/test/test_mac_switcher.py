"""MAC switcher: the ROS-free state machine and mac_switcher_node with two real MAC nodes."""

from collections import Counter

from rclpy.parameter import Parameter
from std_msgs.msg import Bool
from tdma_test_support import SIM_TIME, SimClock, TestModem, TestQueue

from acomms_core.mac.switcher import MacSwitcher, check_switcher_values
from acomms_core.nodes.mac_switcher_node import MacSwitcherNode
from acomms_core.nodes.tdma_advanced_node import TdmaAdvancedNode
from acomms_core.nodes.tdma_slotted_aloha_node import TdmaSlottedAlohaNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import MacSwitcherStatus

VALUES = {"default_mac_namespace": "tdma", "managed_mac_namespaces": ["aloha", "polled"],
          "managed_mac_heartbeat_timeout_sec": 10.0, "revert_on_deselect": False}


def test_switcher_selects_deselects_reverts_and_times_out():
    s = MacSwitcher.from_values(VALUES, Counter())
    assert s.start()[-1] == ("tdma", False) and s.muted == {"tdma": False, "aloha": True,
                                                           "polled": True}
    assert s.select("aloha", True, 0.0) == [("tdma", True), ("aloha", False)]
    assert s.select("polled", True, 1.0) == [("aloha", True), ("polled", False)]
    assert s.select("polled", False, 2.0) == [("polled", True), ("tdma", False)]  # default
    s.revert_on_deselect = True
    s.select("aloha", True, 3.0)
    s.select("polled", True, 4.0)
    assert s.select("polled", False, 5.0) == [("polled", True), ("aloha", False)]  # previous
    assert s.select("sonar", True, 6.0) == [] and s.counters["unknown_namespace"] == 1
    s.heartbeat("aloha", 12.0)
    assert s.tick(22.0) == [] and s.tick(22.5) == [("aloha", True), ("tdma", False)]
    assert s.counters["heartbeat_timeouts"] == 1 and s.timeout_at() is None
    assert check_switcher_values({**VALUES, "managed_mac_heartbeat_timeout_sec": 0.0})
    assert check_switcher_values({**VALUES, "managed_mac_namespaces": ["a", "a"]})
    assert check_switcher_values(VALUES) is None


def test_switcher_node_mutes_all_but_the_selected_mac():
    channel, statuses = [], []
    common = dict(cycle_start_time="0", num_slots=1, slot_duration_seconds=5.0, active_slots=0,
                  guard_time_seconds=0.5, packet_length_seconds=2.0, tick_period_seconds=0.5)
    with RosHarness() as ros:
        clock = SimClock(ros, 999.0)
        macs = {}
        for ns, node_class, extra in (("tdma", TdmaAdvancedNode, {}),
                                      ("aloha", TdmaSlottedAlohaNode,
                                       {"aloha_slots": 0, "allow_aloha_slots_only": True})):
            TestQueue(ros, f"/v/{ns}")
            clock.watch(TestModem(ros, f"/v/{ns}", channel).node)
            overrides = SIM_TIME + [Parameter(k, value=v) for k, v in {**common, **extra}.items()]
            macs[ns] = ros.add(node_class(namespace=f"/v/{ns}", context=ros.context,
                                          parameter_overrides=overrides))
            clock.watch(macs[ns], mac=True)
        switcher = ros.add(MacSwitcherNode(namespace="/v", context=ros.context,
                                           parameter_overrides=SIM_TIME + [
            Parameter("default_mac_namespace", value="tdma"),
            Parameter("managed_mac_namespaces", value=["aloha"]),
            Parameter("managed_mac_heartbeat_timeout_sec", value=12.0)]))
        clock.watch(switcher)
        ros.helper.create_subscription(MacSwitcherStatus, "/v/mac_switcher_status",
                                       statuses.append, 10)
        clock.start()
        for node in (*macs.values(), switcher):
            ros.configure_and_activate(node)

        def muted(ns):
            return macs[ns].get_parameter("software_mute").value

        assert ros.spin_until(lambda: not muted("tdma") and muted("aloha"), 10.0)
        clock.run_until(1009.5, dt=0.5)
        select = ros.helper.create_publisher(Bool, "/v/mac_switcher_node/aloha/select", 10)
        assert ros.spin_until(lambda: select.get_subscription_count() > 0, 5.0)
        select.publish(Bool(data=True))
        assert ros.spin_until(lambda: muted("tdma") and not muted("aloha"), 10.0)
        clock.run_until(1030.0, dt=0.5)  # no heartbeat: back to tdma after 12 s
        assert ros.spin_until(lambda: not muted("tdma") and muted("aloha"), 10.0)
        assert ros.spin_until(lambda: statuses, 5.0)

    by_ns = {ns: sorted(round(tx.start - 1000.0, 1) for tx in channel if tx.namespace == f"/v/{ns}")
             for ns in macs}
    assert by_ns["tdma"][:4] == [0.0, 2.5, 5.0, 7.5]
    aloha = by_ns["aloha"]
    assert aloha and 10.0 <= aloha[0] and aloha[-1] <= 22.5
    assert not set(aloha) & set(by_ns["tdma"])  # never both
    assert statuses[-1].active_mac_namespace == "tdma"
    assert switcher.counters["heartbeat_timeouts"] == 1
