"""netsim_client_node: reports a vehicle's position to a netsim_manager and publishes its answers.

A bridge (docs/ARCHITECTURE.md): it reads the vehicle's position topic (`modem_location_topic`
of `location_topic_type`: odometry, pose_stamped, navsatfix or location, the same readers and
parameters modem_sim_node uses, `acomms_sim.modem.location_topic`) and every `report_period_s`
(node clock) sends the newest position as a NavUpdate for `modem_tcp_port` to the netsim_manager
at `manager_host:manager_port` (`acomms_sim.netsim.client.NetsimClient`: reconnects with
backoff, never gives up while active). Speed and heading come from the last two positions.

Publishes `netsim_response_status` (std_msgs/Int32: 1 UPDATE_ACCEPTED, 2 invalid modem TCP
port, 3 invalid source address, 4 out of the defined region) for every response, and
/diagnostics (connection, last status, counters; WARN while disconnected or refused).
"""

from __future__ import annotations

import math

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import Int32

from acomms_core.codecs.ros_types import resolve_message_class
from acomms_core.ros.parameter_spec import ParameterSpec
from acomms_core.ros.ros_support import (
    ManagedNode,
    counters_diagnostics,
    declare_parameters,
    now_s,
    run_node,
    seconds_to_time_msg,
)
from acomms_sim.modem.location_topic import (
    LOCATION_TOPIC_SPECS,
    LOCATION_TOPIC_TYPES,
    PositionRejected,
    check_location_topic,
    reader_from_values,
)
from acomms_sim.netsim.client import NetsimClient
from acomms_sim.netsim.manager import STATUS_NAMES
from acomms_sim.netsim.wire import DEFAULT_MANAGER_PORT
from acomms_sim.physics import geodesy

PARAMETERS = [
    ParameterSpec("manager_host", "127.0.0.1", "netsim_manager address; read at activate"),
    ParameterSpec("manager_port", DEFAULT_MANAGER_PORT, "netsim_manager TCP port; read at "
                  "activate", 1, 65535),
    ParameterSpec("modem_tcp_port", 62000, "the TCP port of this vehicle's modem at netsim "
                  "(identifies the vehicle in NavUpdates)", 0, 65535),
    ParameterSpec("report_period_s", 1.0, "seconds between position reports (node clock); read "
                  "at activate", 0.01, 3600.0),
    ParameterSpec("reconnect_initial_s", 0.5, "first reconnect delay, s; read at activate",
                  0.01, 60.0),
    ParameterSpec("reconnect_max_s", 10.0, "longest reconnect delay, s; read at activate",
                  0.01, 600.0),
    ParameterSpec("diagnostics_period_s", 1.0, "period of /diagnostics, s", 0.05, 3600.0),
    *LOCATION_TOPIC_SPECS,
]


def check_parameters(values: dict) -> str | None:
    reason = check_location_topic(values)
    if reason is None and values["reconnect_initial_s"] > values["reconnect_max_s"]:
        reason = "reconnect_initial_s must not exceed reconnect_max_s"
    return reason


def speed_and_heading(previous, current, dt_s: float) -> tuple[float, float]:
    """Speed (m/s) and true heading (degrees) from two (lat, lon) fixes dt_s apart."""
    if previous is None or dt_s <= 0:
        return 0.0, 0.0
    east, north, _ = geodesy.geodetic_to_enu(current[0], current[1], 0.0,
                                             geodesy.EnuOrigin(previous[0], previous[1], 0.0))
    return math.hypot(east, north) / dt_s, math.degrees(math.atan2(east, north)) % 360.0


class NetsimClientNode(ManagedNode):
    WORKER = "client"  # the NetsimClient: started at activate, closed by ManagedNode

    def __init__(self, node_name: str = "netsim_client_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self.params = declare_parameters(self, PARAMETERS, check_parameters, self._apply)
        self.client: NetsimClient | None = None
        self.reader = None
        self.counters: dict[str, int] = {"reports_sent": 0, "reports_without_position": 0,
                                         "reports_not_connected": 0}
        self.last_status: int | None = None
        self._fix = None  # (time_s, lat, lon, depth)
        self._motion = (0.0, 0.0)
        self._status_pub = None
        self._diagnostics_pub = None

    def _apply(self, values: dict, changed: frozenset) -> None:
        self.params = dict(values)

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state):
        try:
            self.reader = reader_from_values(self.params)
            self._message_class = resolve_message_class(
                LOCATION_TOPIC_TYPES[self.params["location_topic_type"]].ros_type)
        except ValueError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self._status_pub = self.configured.publisher(Int32, "netsim_response_status", 10)
        self._diagnostics_pub = self.configured.publisher(DiagnosticArray, "/diagnostics", 10)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        values = self.params
        self.client = NetsimClient(values["manager_host"], values["manager_port"],
                                   self._on_response,
                                   reconnect_initial_s=values["reconnect_initial_s"],
                                   reconnect_max_s=values["reconnect_max_s"])
        self.client.start()
        self.activated.subscription(self._message_class, values["modem_location_topic"],
                                    self._on_position, qos_profile_sensor_data)
        self.activated.timer(values["report_period_s"], self._report)
        self.activated.timer(values["diagnostics_period_s"], self._publish_diagnostics)
        return super().on_activate(state)

    def on_release(self) -> None:
        self._fix = None

    # ------------------------------------------------------------------ position and reports
    def _on_position(self, msg) -> None:
        now = now_s(self)
        try:
            position = self.reader.read(msg, now)
        except PositionRejected as exc:
            self.counters[exc.counter] = self.counters.get(exc.counter, 0) + 1
            return
        previous = self._fix
        current = (position.latitude, position.longitude)
        if previous is not None:
            self._motion = speed_and_heading(previous[1:3], current, now - previous[0])
        self._fix = (now, *current, position.depth_m)

    def _report(self) -> None:
        client = self.client
        if self._fix is None:
            self.counters["reports_without_position"] += 1
            return
        if client is None or not client.connected:
            self.counters["reports_not_connected"] += 1
            return
        _, lat, lon, depth = self._fix
        if client.send_nav(self.params["modem_tcp_port"], now_s(self), lat, lon, depth,
                           *self._motion) is None:
            self.counters["reports_not_connected"] += 1
            return
        self.counters["reports_sent"] += 1

    def _on_response(self, response) -> None:
        """From the client's thread: publish the status; log when it changes."""
        status = int(response.status)
        if status != self.last_status:
            text = (f"netsim_manager answers {STATUS_NAMES.get(status, status)} for modem port "
                    f"{self.params['modem_tcp_port']}")
            # one logging call per severity: rclpy refuses a call site whose severity changes
            if status == 1:
                self.get_logger().info(text)
            else:
                self.get_logger().warning(text)
        self.last_status = status
        publisher = self._status_pub
        if publisher is not None:
            publisher.publish(Int32(data=status))

    # ------------------------------------------------------------------ diagnostics
    def _publish_diagnostics(self) -> None:
        client = self.client
        if client is None or self._diagnostics_pub is None:
            return
        ok = client.connected and self.last_status in (None, 1)
        message = (f"{'connected' if client.connected else 'disconnected'}; last status "
                   f"{STATUS_NAMES.get(self.last_status, 'none')}; {client.last_reason}")
        counters = {**self.counters, **client.counters, "connected": client.connected}
        self._diagnostics_pub.publish(counters_diagnostics(
            f"{self.get_fully_qualified_name()}: netsim", message, counters,
            seconds_to_time_msg(now_s(self)),
            DiagnosticStatus.OK if ok else DiagnosticStatus.WARN))


def main(args=None) -> int:
    return run_node(NetsimClientNode, args)
