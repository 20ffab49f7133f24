"""trajectory_node: publishes a scenario vehicle's position along its waypoint trajectory.

A moving vehicle in a scenario has waypoints (time, latitude, longitude, depth); between them it
moves in straight lines (`acomms_bringup.description.scenario.Trajectory`). This lifecycle node
publishes the current position on `fix` (sensor_msgs/NavSatFix, altitude = −depth, status FIX;
relative to the vehicle namespace) at `publish_rate_hz` on the node clock, so with `use_sim_time`
it follows simulated time; with `heading_topic` set, the course over ground too (a simulated
ship's heading). platform_location_node follows these topics (`position_topics`) and
answers the simulated modems' `read_location` calls with them.

Trajectory time 0 is `start_time_seconds` on the node clock, or the moment of activation when that
is negative (the default).
"""

from __future__ import annotations

import sys
from typing import Any

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.parameter import Parameter
from sensor_msgs.msg import NavSatFix, NavSatStatus
from std_msgs.msg import Float64

from acomms_bringup.description.scenario import Position, Trajectory, Waypoint
from acomms_core.ros.ros_support import (
    NodeResources,
    ParameterSpec,
    declare_parameters,
    now_s,
    parameter_values,
    run_node,
    stamp_seconds,
)

WAYPOINT_PARAMETERS = ("waypoint_times_seconds", "waypoint_latitudes", "waypoint_longitudes",
                       "waypoint_depths")
PARAMETERS = (
    ParameterSpec("waypoint_times_seconds", None,
                  "Waypoint times, s after trajectory start, strictly increasing.",
                  parameter_type=Parameter.Type.DOUBLE_ARRAY),
    ParameterSpec("waypoint_latitudes", None, "Waypoint latitudes, decimal degrees north.",
                  parameter_type=Parameter.Type.DOUBLE_ARRAY),
    ParameterSpec("waypoint_longitudes", None, "Waypoint longitudes, decimal degrees east.",
                  parameter_type=Parameter.Type.DOUBLE_ARRAY),
    ParameterSpec("waypoint_depths", None, "Waypoint depths, m, positive down.",
                  parameter_type=Parameter.Type.DOUBLE_ARRAY),
    ParameterSpec("publish_rate_hz", 2.0, "Location messages per second (node clock).",
                  minimum=0.01, maximum=100.0),
    ParameterSpec("start_time_seconds", -1.0,
                  "Node-clock time of trajectory time 0, s; negative: the activation time."),
    ParameterSpec("heading_topic", "",
                  "If set, also publish the course over ground on this topic with each fix "
                  "(std_msgs/Float64, degrees clockwise from true north; Trajectory."
                  "course_deg_at): a ship's heading for a simulated topside, e.g. the cola2 "
                  "topside bridge's heading_topic.", read_only=True),
)


def trajectory_from_values(values: dict[str, Any]) -> Trajectory:
    """Build a Trajectory from the four waypoint arrays; ValueError says what is wrong."""
    arrays = [list(values.get(name) or []) for name in WAYPOINT_PARAMETERS]
    if not arrays[0]:
        raise ValueError("waypoint_times_seconds: at least one waypoint is needed")
    lengths = {name: len(a) for name, a in zip(WAYPOINT_PARAMETERS, arrays, strict=True)}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"waypoint arrays must have the same length, got {lengths}")
    waypoints = []
    for time_s, latitude, longitude, depth in zip(*arrays, strict=True):
        if waypoints and time_s <= waypoints[-1].time_seconds:
            raise ValueError(f"waypoint_times_seconds must increase strictly ({time_s} after "
                             f"{waypoints[-1].time_seconds})")
        if not (-90 <= latitude <= 90 and -180 <= longitude <= 180 and depth >= 0):
            raise ValueError(f"waypoint at {time_s} s out of range: latitude {latitude}, "
                             f"longitude {longitude}, depth {depth}")
        waypoints.append(Waypoint(time_s, Position(latitude, longitude, depth)))
    return Trajectory(tuple(waypoints))


def check_waypoints(values: dict[str, Any]) -> str | None:
    """Pure validator: the waypoint arrays make a trajectory (or none is set yet: on_configure
    then refuses the empty trajectory)."""
    if all(values.get(name) is None for name in WAYPOINT_PARAMETERS):
        return None
    try:
        trajectory_from_values(values)
    except ValueError as exc:
        return str(exc)
    return None


class TrajectoryNode(LifecycleNode):
    """Publishes `fix` along the configured waypoints."""

    def __init__(self, node_name: str = "trajectory_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self._configured = NodeResources(self)  # publisher: on_configure .. on_cleanup
        self._activated = NodeResources(self)  # timer: on_activate .. on_deactivate
        self._trajectory: Trajectory | None = None
        self._publisher = None
        self._heading_publisher = None
        self._start_s = 0.0
        self.published_count = 0
        declare_parameters(self, PARAMETERS, check_waypoints)

    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            self._trajectory = trajectory_from_values(parameter_values(self, WAYPOINT_PARAMETERS))
        except ValueError as exc:
            self.get_logger().error(f"configure refused: {exc}")
            return TransitionCallbackReturn.FAILURE
        self._publisher = self._configured.publisher(NavSatFix, "fix", 10)
        heading_topic = self.get_parameter("heading_topic").value
        if heading_topic:
            self._heading_publisher = self._configured.publisher(Float64, heading_topic, 10)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        start = self.get_parameter("start_time_seconds").value
        self._start_s = start if start >= 0 else now_s(self)
        self._activated.timer(1.0 / self.get_parameter("publish_rate_hz").value, self._publish)
        result = super().on_activate(state)
        self._publish()  # the position at activation, without waiting one period
        return result

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._activated.release()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._activated.release()
        self._configured.release()
        self._publisher = self._heading_publisher = None
        self._trajectory = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        return self.on_cleanup(state)

    def _publish(self) -> None:
        if self._trajectory is None or self._publisher is None:
            return
        stamp = self.get_clock().now().to_msg()
        elapsed_s = stamp_seconds(stamp) - self._start_s
        position = self._trajectory.position_at(elapsed_s)
        message = NavSatFix(latitude=position.latitude, longitude=position.longitude,
                            altitude=-float(position.depth),
                            status=NavSatStatus(status=NavSatStatus.STATUS_FIX,
                                                service=NavSatStatus.SERVICE_GPS))
        message.header.stamp = stamp
        message.header.frame_id = self.get_name()
        self._publisher.publish(message)
        if self._heading_publisher is not None:
            self._heading_publisher.publish(Float64(data=self._trajectory.course_deg_at(elapsed_s)))
        self.published_count += 1


def main(args=None) -> int:
    return run_node(TrajectoryNode, args)


if __name__ == "__main__":
    sys.exit(main())
