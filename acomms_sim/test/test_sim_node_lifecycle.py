"""Every acomms_sim node: a full lifecycle round trip releases everything it created, and the
modem's `modem_profile` parameter is checked when the node is made."""

import pytest
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from acomms_core.ros.ros_support import lifecycle_state_label
from acomms_core.ros.testing import RosHarness
from acomms_sim.nodes.modem_sim_node import ModemSimNode
from acomms_sim.nodes.platform_location_node import PlatformLocationNode
from acomms_sim.nodes.sim_clock_node import SimClockNode
from acomms_sim.nodes.sim_packet_performance_node import SimPacketPerformanceNode
from acomms_sim.nodes.sim_transmission_loss_node import SimTransmissionLossNode
from acomms_sim.nodes.simple_noise_model_node import SimpleNoiseModelNode

NODES = {
    "modem_sim_node": (ModemSimNode, {"location_source": "service"}),
    "modem_sim_node_topic": (ModemSimNode, {"location_source": "topic",
                                            "location_topic_type": "odometry"}),
    "platform_location_node": (PlatformLocationNode, {
        "platform_names": ["a"], "latitudes": [41.5], "longitudes": [-70.7], "depths": [5.0],
        "position_topics": ["/a/fix"]}),
    "sim_clock_node": (SimClockNode, {"mode": "free_running"}),
    "sim_clock_node_lockstep": (SimClockNode, {"mode": "lockstep"}),
    "sim_packet_performance_node": (SimPacketPerformanceNode, {}),
    "sim_transmission_loss_node": (SimTransmissionLossNode, {}),
    "simple_noise_model_node": (SimpleNoiseModelNode, {}),
}


def entity_counts(node):
    return (len(list(node.publishers)), len(list(node.subscriptions)), len(list(node.services)),
            len(list(node.clients)), len(list(node.timers)))


def step(node, trigger, label):
    assert trigger() == TransitionCallbackReturn.SUCCESS
    assert lifecycle_state_label(node) == label


@pytest.mark.parametrize("name", sorted(NODES))
def test_lifecycle_round_trip_releases_every_entity(name):
    node_type, params = NODES[name]
    with RosHarness() as ros:
        node = ros.add(node_type(context=ros.context, parameter_overrides=[
            Parameter(k, value=v) for k, v in params.items()]))
        before = entity_counts(node)
        for _ in range(2):  # configure again after cleanup
            step(node, node.trigger_configure, "inactive")
            assert entity_counts(node) > before
            step(node, node.trigger_activate, "active")
            step(node, node.trigger_deactivate, "inactive")
            step(node, node.trigger_cleanup, "unconfigured")
            assert entity_counts(node) == before
        step(node, node.trigger_configure, "inactive")
        step(node, node.trigger_activate, "active")
        assert node.trigger_shutdown() == TransitionCallbackReturn.SUCCESS
        assert lifecycle_state_label(node) == "finalized"
        assert entity_counts(node) == before


def test_modem_profile_parameter():
    with RosHarness() as ros:
        with pytest.raises(ValueError, match="unknown modem_profile"):
            ModemSimNode(context=ros.context, parameter_overrides=[
                Parameter("modem_profile", value="no_such_modem")])
        node = ros.add(ModemSimNode(context=ros.context))
        assert node.get_parameter("modem_profile").value == "micromodem2"
        result = node.set_parameters([Parameter("modem_profile", value="micromodem2")])[0]
        assert not result.successful  # read only: chosen when the node is made
        ros.configure_and_activate(node)
        assert node.modem.profile.name == "micromodem2"
