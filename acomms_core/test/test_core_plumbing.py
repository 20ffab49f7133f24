"""The shared node plumbing: parameter specs (ROS-free), declare_parameters' pure validator and
separate apply step, is_active, NodeResources, time conversions, and the modem-profile registry."""

import math

import pytest
import rclpy
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_msgs.msg import String
from std_srvs.srv import Trigger

from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.profile import (
    PACKET_TYPE_AUTO,
    PACKET_TYPE_FDP,
    PACKET_TYPE_FSK,
    PACKET_TYPE_JANUS,
    PACKET_TYPE_LEGACY_PSK,
    PACKET_TYPE_UNKNOWN,
    ModemProfile,
    PacketRefused,
)
from acomms_core.modems.registry import (
    MODEM_PROFILE_PARAMETER,
    MODEM_PROFILES,
    check_modem_profile,
    modem_profile,
)
from acomms_core.ros.parameter_spec import ParameterSpec, check_values
from acomms_core.ros.ros_support import (
    NodeResources,
    declare_parameters,
    declared_parameter_specs,
    is_active,
    lifecycle_state_label,
    now_s,
    seconds_to_duration_msg,
    seconds_to_time_msg,
    stamp_seconds,
)
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import Packet

SPECS = (
    ParameterSpec("low_s", 1.0, "lower bound", 0.0, 100.0),
    ParameterSpec("high_s", 5.0, "upper bound", 0.0, 100.0),
    ParameterSpec("count", 3, "how many", 1, 10),
    ParameterSpec("name", "x", "a name"),
    ParameterSpec("slots", 0, "int, list or range string", dynamic_typing=True),
)


def order(values):
    return None if values["low_s"] < values["high_s"] else "low_s must be below high_s"


# ---- ROS-free specs --------------------------------------------------------------------------

@pytest.mark.parametrize("values, reason", [
    ({}, None),
    ({"low_s": 2}, None),                          # an int is a valid double
    ({"count": 2.0}, "count: expected integer"),
    ({"count": 11}, "count: 11 is above the maximum 10"),
    ({"low_s": -1.0}, "low_s: -1.0 is below the minimum 0.0"),
    ({"low_s": math.inf}, "low_s: expected a finite number"),
    ({"name": 5}, "name: expected string"),
    ({"slots": "0:2"}, None),
    ({"slots": [1, 2]}, None),
    ({"slots": {"a": 1}}, "slots:"),
    ({"typo": 1}, "typo: unknown parameter"),
    ({"low_s": 6.0}, "low_s must be below high_s"),   # the validator sees merged defaults
    ({"low_s": 6.0, "high_s": 7.0}, None),
])
def test_check_values_without_ros(values, reason):
    result = check_values(SPECS, values, order)
    if reason is None:
        assert result is None
    else:
        assert result is not None and result.startswith(reason), result


def test_validator_bug_refuses_instead_of_raising():
    assert check_values(SPECS, {}, lambda values: values["missing"]).startswith(
        "validation error")


# ---- nodes -----------------------------------------------------------------------------------

class PlumbedNode(LifecycleNode):
    """A minimal node written the way every acomms node is."""

    def __init__(self, **kwargs):
        super().__init__("plumbed", **kwargs)
        self.validated = []
        self.applied = []
        self.values = declare_parameters(self, SPECS, self._validate, self._apply)
        self.resources = NodeResources(self)

    def _validate(self, values):
        self.validated.append(dict(values))
        return order(values)

    def _apply(self, values, changed):
        self.applied.append((dict(values), changed))

    def on_configure(self, state):
        self.publisher = self.resources.publisher(String, "plumbed_out")
        self.resources.client(Trigger, "plumbed_client")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        self.resources.service(Trigger, "plumbed_service", lambda req, resp: resp)
        self.resources.subscription(String, "plumbed_in", lambda msg: None)
        self.resources.timer(1.0, lambda: None)
        return super().on_activate(state)

    def on_cleanup(self, state):
        self.resources.release()
        return TransitionCallbackReturn.SUCCESS


def test_validator_sees_merged_candidate_and_apply_runs_after():
    with RosHarness() as ros:
        node = ros.add(PlumbedNode(context=ros.context))
        node.validated.clear()
        refused = node.set_parameters([Parameter("low_s", value=9.0)])[0]
        assert not refused.successful and refused.reason == "low_s must be below high_s"
        # The validator saw every spec, with the proposed change merged in...
        assert node.validated[-1] == {"low_s": 9.0, "high_s": 5.0, "count": 3, "name": "x",
                                      "slots": 0}
        # ...and nothing was applied or changed.
        assert node.applied == [] and node.get_parameter("low_s").value == 1.0
        accepted = node.set_parameters_atomically([Parameter("low_s", value=9.0),
                                                   Parameter("high_s", value=10.0)])
        assert accepted.successful
        values, changed = node.applied[-1]
        assert changed == frozenset({"low_s", "high_s"})
        assert values["low_s"] == 9.0 and values["high_s"] == 10.0
        # A parameter outside the specs (use_sim_time) is neither validated nor applied here.
        count = len(node.validated)
        assert node.set_parameters([Parameter("use_sim_time", value=True)])[0].successful
        assert len(node.validated) == count and len(node.applied) == 1


def test_declared_specs_are_remembered_per_node_in_order():
    """What docs/reference/nodes.md lists: the specs a node declared, in order, its own."""
    extra = ParameterSpec("extra_s", 2.0, "declared later", minimum=0.0)
    with RosHarness() as ros:
        node = ros.add(PlumbedNode(context=ros.context))
        other = ros.add(rclpy.create_node("bare", context=ros.context))
        assert declared_parameter_specs(node) == tuple(SPECS)
        declare_parameters(node, [extra])
        assert declared_parameter_specs(node) == (*SPECS, extra)
        assert declared_parameter_specs(other) == ()


def test_refused_start_up_value_raises_with_reason():
    with RosHarness() as ros:
        with pytest.raises(ValueError, match="low_s must be below high_s"):
            PlumbedNode(context=ros.context,
                        parameter_overrides=[Parameter("low_s", value=50.0)])


def test_is_active_and_resources_released_in_reverse_order():
    with RosHarness() as ros:
        node = ros.add(PlumbedNode(context=ros.context))
        assert lifecycle_state_label(node) == "unconfigured" and not is_active(node)
        ros.configure_and_activate(node)
        assert is_active(node)
        assert len(node.resources) == 5
        assert any(s.srv_name.endswith("plumbed_service") for s in node.services)
        destroyed = []
        for method in ("destroy_timer", "destroy_subscription", "destroy_service",
                       "destroy_client", "destroy_lifecycle_publisher"):
            original = getattr(node, method)

            def record(entity, _original=original, _method=method):
                destroyed.append(_method)
                return _original(entity)
            setattr(node, method, record)
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        assert not is_active(node)
        assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
        assert destroyed == ["destroy_timer", "destroy_subscription", "destroy_service",
                             "destroy_client", "destroy_lifecycle_publisher"]
        assert len(node.resources) == 0
        node.resources.release()  # a second release is harmless
        assert node.publisher not in node.publishers


def test_time_conversions():
    msg = seconds_to_time_msg(12.9999999999)
    assert (msg.sec, msg.nanosec) == (13, 0)
    msg = seconds_to_time_msg(-0.5)
    assert (msg.sec, msg.nanosec) == (-1, 500_000_000)
    assert stamp_seconds(seconds_to_duration_msg(2.25)) == 2.25
    with RosHarness() as ros:
        node = ros.add(PlumbedNode(context=ros.context,
                                   parameter_overrides=[Parameter("use_sim_time", value=True)]))
        assert now_s(node) == 0.0


# ---- modem profiles --------------------------------------------------------------------------

def test_packet_type_constants_match_the_message():
    assert (PACKET_TYPE_UNKNOWN, PACKET_TYPE_AUTO, PACKET_TYPE_FSK, PACKET_TYPE_LEGACY_PSK,
            PACKET_TYPE_FDP) == (Packet.PACKET_TYPE_UNKNOWN, Packet.PACKET_TYPE_AUTO,
                                 Packet.PACKET_TYPE_FSK, Packet.PACKET_TYPE_LEGACY_PSK,
                                 Packet.PACKET_TYPE_FDP)
    assert PACKET_TYPE_JANUS == Packet.PACKET_TYPE_JANUS


def test_registry_and_micromodem2_profile():
    assert modem_profile("micromodem2") is MICROMODEM2
    assert all(isinstance(p, ModemProfile) for p in MODEM_PROFILES.values())
    with pytest.raises(ValueError, match="known: evologics_s2c, micromodem2"):
        modem_profile("nope")
    assert check_modem_profile({"modem_profile": "nope"}).startswith("unknown modem_profile")
    assert check_modem_profile({}) is None
    assert MODEM_PROFILE_PARAMETER.check_value("micromodem2") is None
    assert MICROMODEM2.broadcast_address == 121
    assert MICROMODEM2.is_fdp(PACKET_TYPE_AUTO, 5) and not MICROMODEM2.is_fdp(PACKET_TYPE_AUTO, 2)
    assert not MICROMODEM2.is_fdp(PACKET_TYPE_FSK, 5) and MICROMODEM2.is_fdp(PACKET_TYPE_FDP, 1)
    with pytest.raises(PacketRefused, match="unknown packet_type 9"):
        MICROMODEM2.is_fdp(9, 1)
    budget = MICROMODEM2.frame_budget(1, 5)
    assert (budget.maximum_miniframe_bytes, budget.maximum_dataframe_bytes) == (72, 2048)
    assert budget.packet_duration_s == pytest.approx(1.574 + 3.000)
    clipped = MICROMODEM2.frame_budget(1, 1, 500, 500)
    assert (clipped.maximum_miniframe_bytes, clipped.maximum_dataframe_bytes) == (96, 192)
    assert len(clipped.notes) == 2
    legacy = MICROMODEM2.frame_budget(1, 2)
    assert legacy.maximum_miniframe_bytes == 0
    with pytest.raises(PacketRefused, match="unknown Micromodem rate 7"):
        MICROMODEM2.frame_budget(1, 7)
    assert MICROMODEM2.packet_duration_s(True, 1, 5, 10, 0) == pytest.approx(1.574)
    with pytest.raises(PacketRefused, match="FDP packets use rates"):
        MICROMODEM2.packet_duration_s(True, 2, 5, 10, 10)
    MICROMODEM2.check_packet(True, 1, 5, 96, 2048)
    with pytest.raises(PacketRefused, match="2049 dataframe bytes exceed"):
        MICROMODEM2.check_packet(True, 1, 5, 0, 2049)
    with pytest.raises(PacketRefused, match="FDP packets use rates"):
        MICROMODEM2.check_packet(True, 2, 2, 0, 10)
    with pytest.raises(PacketRefused, match="legacy"):
        MICROMODEM2.check_packet(False, 1, 2, 1, 10)
