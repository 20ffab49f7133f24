"""Where modem_sim_node's modem is: the `service` and `topic` location sources, and its health.

Kept beside the node so the node stays an adapter of its SimModem: `ModemLocation` follows
`modem_location_topic` (Odometry, PoseStamped in a local ENU frame, NavSatFix, Location; rules
in `acomms_sim.modem.location_topic`) or polls `read_location`, moves the modem, counts what it
refuses, and says whether the position is known and fresh (for /diagnostics).
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.qos import qos_profile_sensor_data

from acomms_core.codecs.ros_types import resolve_message_class
from acomms_core.ros.ros_support import now_s
from acomms_core.ros.service_calls import server_ready
from acomms_interfaces.srv import GetPlatformLocation
from acomms_sim.modem.location_topic import (
    LOCATION_TOPIC_TYPES,
    PositionRejected,
    reader_from_values,
)


class ModemLocation:
    """Position source of one modem_sim_node (its node, lock, counters and modem)."""

    def __init__(self, node):
        self._node = node
        self.client = None
        self.reader = None  # LocationReader of modem_location_topic
        self.time_s = None  # node-clock time of the last accepted position message

    def configure(self, values: dict, resources, callback_group) -> bool:
        """Create the client or subscription the source needs; False (logged) when it cannot."""
        self.reader = reader_from_values(values)
        source = values["location_source"]
        if source == "service":
            self.client = resources.client(GetPlatformLocation, "read_location")
        if source != "topic":
            return True
        ros_type = LOCATION_TOPIC_TYPES[values["location_topic_type"]].ros_type
        try:
            message_type = resolve_message_class(ros_type)
        except ValueError as exc:
            self._node.get_logger().error(f"configure failed: modem_location_topic type: {exc}")
            return False
        # Best effort: hears reliable and sensor-data publishers alike.
        resources.subscription(message_type, values["modem_location_topic"], self.on_message,
                               qos_profile_sensor_data, callback_group=callback_group)
        return True

    def release(self) -> None:
        self.client = None
        self.time_s = None

    def on_message(self, msg) -> None:
        node = self._node
        try:
            position = self.reader.read(msg, now_s(node))
        except PositionRejected as exc:
            with node._lock:
                node.counters[exc.counter] += 1
            node.get_logger().warning(f"position message ignored: {exc}",
                                      throttle_duration_sec=5.0)
            return
        self.time_s = now_s(node)
        with node._lock:
            node.counters["location_messages"] += 1
            node.counters["location_above_surface"] += int(position.above_surface)
            if node.modem is not None:
                node.modem.set_position(position.latitude, position.longitude, position.depth_m,
                                        self.time_s)

    def poll(self) -> None:
        node = self._node
        if not server_ready(self.client):
            node.counters["location_service_unavailable"] += 1
            return
        name = (node.get_parameter("platform_name").value or node.get_namespace().strip("/"))
        future = self.client.call_async(GetPlatformLocation.Request(name=name))
        future.add_done_callback(self._on_reply)

    def _on_reply(self, future) -> None:
        node = self._node
        response = future.result()
        if response is None or not response.valid:
            node.counters["location_unknown"] += 1
            return
        try:
            with node._lock:
                if node.modem is not None:
                    node.modem.set_position(response.latitude, response.longitude,
                                            float(response.depth), now_s(node))
        except ValueError as exc:
            node.counters["location_invalid"] += 1
            node.get_logger().warning(f"read_location gave a bad position: {exc}")

    def status(self) -> tuple[int, str]:
        """WARN while the position is unknown or (topic source) older than location_max_age_s."""
        if self._node.position is None:
            return DiagnosticStatus.WARN, "running; position unknown (no valid position yet)"
        max_age_s = self.reader.max_age_s if self.reader else 0.0
        if self.time_s is not None and max_age_s > 0.0:
            age_s = now_s(self._node) - self.time_s
            if age_s > max_age_s:
                return DiagnosticStatus.WARN, f"running; position not updated for {age_s:.1f} s"
        return DiagnosticStatus.OK, "running"
