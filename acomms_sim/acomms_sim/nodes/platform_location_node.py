"""platform_location_node: where is each simulated platform? Service `read_location`.

Platforms are listed by the parallel array parameters `platform_names`, `latitudes`,
`longitudes`, `depths` (static positions) and `position_topics`: a non-empty topic makes that
platform follow a sensor_msgs/NavSatFix topic (depth = −altitude, read by
`acomms_sim.modem.location_topic`, as modem_sim_node reads its `modem_location_topic`),
overriding the static values from the first fix on. An unknown name, or a platform without a
valid position yet, is answered with valid=false (and logged, counted in `errors`). Static
positions out of range are refused when the parameters are set.
"""

from __future__ import annotations

import collections
import sys

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.parameter import Parameter
from sensor_msgs.msg import NavSatFix

from acomms_core.ros.ros_support import (
    NodeResources,
    ParameterSpec,
    declare_parameters,
    is_active,
    now_s,
    parameter_values,
    run_node,
)
from acomms_interfaces.srv import GetPlatformLocation
from acomms_sim.modem.location_topic import LocationReader, PositionRejected
from acomms_sim.physics import geodesy

SPECS = [
    ParameterSpec("platform_names", None, "platform names answered by read_location",
                  parameter_type=Parameter.Type.STRING_ARRAY),
    ParameterSpec("latitudes", None, "static latitude per platform, degrees",
                  parameter_type=Parameter.Type.DOUBLE_ARRAY),
    ParameterSpec("longitudes", None, "static longitude per platform, degrees",
                  parameter_type=Parameter.Type.DOUBLE_ARRAY),
    ParameterSpec("depths", None, "static depth per platform, m, positive down",
                  parameter_type=Parameter.Type.DOUBLE_ARRAY),
    ParameterSpec("position_topics", None,
                  "NavSatFix topic per platform ('' = static position only)",
                  parameter_type=Parameter.Type.STRING_ARRAY),
]
NAMES = [s.name for s in SPECS]
FIX_READER = LocationReader("navsatfix")


def validate(values: dict) -> str | None:
    """Pure validator over the merged candidate values: a reason to refuse, or None."""
    arrays = [list(values.get(n) or []) for n in NAMES]
    if len({len(a) for a in arrays}) != 1:
        return ("platform_names, latitudes, longitudes, depths and position_topics must "
                "have the same length")
    names, lats, lons, depths, topics = arrays
    if len(set(names)) != len(names):
        return "platform_names must be unique"
    for name, lat, lon, depth, topic in zip(names, lats, lons, depths, topics, strict=True):
        if topic:
            continue
        try:
            geodesy.check_position(lat, lon, depth)
        except ValueError as exc:
            return f"platform {name!r}: {exc}"
    return None


class PlatformLocationNode(LifecycleNode):
    """Parameters are read at configure (a change takes effect at the next configure)."""

    def __init__(self, node_name: str = "platform_location_node", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, SPECS, validate)
        self.positions: dict[str, tuple[float, float, float] | None] = {}
        self.errors = collections.Counter()
        self._resources = NodeResources(self)

    def on_configure(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, NAMES)
        self.positions = {}
        arrays = [list(values[n] or []) for n in NAMES]
        for name, lat, lon, depth, topic in zip(*arrays, strict=True):
            if not name:
                continue
            self.positions[name] = None if topic else (lat, lon, depth)
            if topic:
                self._resources.subscription(
                    NavSatFix, topic, lambda msg, name=name: self._on_fix(name, msg), 10)
        self._resources.service(GetPlatformLocation, "read_location", self._on_read_location)
        self.get_logger().info(f"platforms: {sorted(self.positions)}")
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._resources.release()
        self.positions = {}
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._resources.release()
        return TransitionCallbackReturn.SUCCESS

    def _on_fix(self, name: str, msg: NavSatFix) -> None:
        try:
            position = FIX_READER.read(msg, now_s(self))
        except PositionRejected as exc:
            self.errors["bad_fix"] += 1
            self.get_logger().warning(f"fix for {name} ignored: {exc}",
                                      throttle_duration_sec=5.0)
            return
        self.positions[name] = (position.latitude, position.longitude, position.depth_m)

    def _on_read_location(self, request, response):
        response.valid = False
        position = self.positions.get(request.name)
        active = is_active(self)
        if not active or position is None:
            reason = ("node is not active" if not active
                      else "unknown platform" if request.name not in self.positions
                      else "no position yet")
            self.errors["read_location_invalid"] += 1
            self.get_logger().warning(f"read_location {request.name!r}: {reason}",
                                      throttle_duration_sec=5.0)
            return response
        response.valid = True
        response.latitude, response.longitude, depth = position
        response.depth = float(depth)
        return response


def main(args=None) -> int:
    return run_node(PlatformLocationNode, args)


if __name__ == "__main__":
    sys.exit(main())
