"""An EvoLogics driver and a cola2 bridge share a vehicle's namespace (cola2_usbl.yaml): every
topic either publishes or reads there has one type (the vehicle bridge's received 'U' is
`usbl_update`, the driver's UsblFix is `usbl_fix`)."""

from rclpy.parameter import Parameter

from acomms_bringup.bridges.cola2_topside_bridge import Cola2TopsideBridge
from acomms_bringup.bridges.cola2_vehicle_bridge import Cola2VehicleBridge
from acomms_core.ros.testing import RosHarness
from acomms_driver.nodes.evologics_driver_node import EvologicsDriverNode


def _types_by_topic(ros, namespace: str) -> dict[str, list[str]]:
    return {name: types for name, types in ros.helper.get_topic_names_and_types()
            if name.startswith(f"{namespace}/")}


def test_driver_and_bridges_in_one_namespace_have_no_type_clash():
    compact = [Parameter("wire_mode", value="compact")]
    with RosHarness() as ros:
        for namespace, bridge_class in (("/auv", Cola2VehicleBridge),
                                        ("/ship", Cola2TopsideBridge)):
            driver = ros.add(EvologicsDriverNode(context=ros.context, namespace=namespace))
            bridge = ros.add(bridge_class(context=ros.context, namespace=namespace,
                                          parameter_overrides=compact))
            driver.trigger_configure()   # the publishers exist from configure
            ros.configure_and_activate(bridge)   # the bridges subscribe at activate
        wanted = ("/auv/usbl_fix", "/auv/usbl_update", "/ship/usbl_fix")
        assert ros.spin_until(lambda: all(
            t in {**_types_by_topic(ros, "/auv"), **_types_by_topic(ros, "/ship")}
            for t in wanted), 10.0)
        for namespace in ("/auv", "/ship"):
            topics = _types_by_topic(ros, namespace)
            clashes = {name: types for name, types in topics.items() if len(types) > 1}
            assert not clashes, clashes
        assert _types_by_topic(ros, "/auv")["/auv/usbl_fix"] == ["acomms_interfaces/msg/UsblFix"]
        assert _types_by_topic(ros, "/auv")["/auv/usbl_update"] == ["sensor_msgs/msg/NavSatFix"]
        # the topside reads the driver's fix: same name, same type
        assert _types_by_topic(ros, "/ship")["/ship/usbl_fix"] == [
            "acomms_interfaces/msg/UsblFix"]
