"""udp_streamer / udp_receiver: one ROS topic, one way, over UDP in silverhammer's format.

udp_streamer subscribes `topic` (type `message_type`, e.g. sensor_msgs/msg/Image), serializes
each message (CDR, rclpy.serialization) and sends it split into packets of `packet_bytes` data
plus the 12-byte header at `packet_rate_hz` to `remote_host:remote_port`; a message arriving
while one is being sent waits, and a newer one replaces it (counted). udp_receiver listens on
`local_host:local_port`, reassembles (`stream.Reassembler`), publishes every complete message on
`topic`, and drops and counts incomplete ones. Both publish their counters on /diagnostics.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.serialization import deserialize_message, serialize_message

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
from acomms_driver.udp.stream import HEADER_BYTES, MAX_UDP_PAYLOAD, StreamReceiver, StreamSender

COMMON = [
    ParameterSpec("topic", "stream", "topic streamed (streamer: subscribed; receiver: "
                  "published); read at configure"),
    ParameterSpec("message_type", "std_msgs/msg/String", "its type, pkg/msg/Type; read at "
                  "configure"),
    ParameterSpec("diagnostics_period_s", 1.0, "period of /diagnostics, s", 0.05, 3600.0),
]
STREAMER_PARAMETERS = COMMON + [
    ParameterSpec("remote_host", "127.0.0.1", "receiver address; read at activate"),
    ParameterSpec("remote_port", 16484, "receiver UDP port; read at activate", 1, 65535),
    ParameterSpec("packet_bytes", 1388, "message bytes per UDP packet (plus the 12-byte "
                  "header); read at activate", 1, MAX_UDP_PAYLOAD - HEADER_BYTES),
    ParameterSpec("packet_rate_hz", 100.0, "UDP packets per second; read at activate",
                  0.001, 1e6),
]
RECEIVER_PARAMETERS = COMMON + [
    ParameterSpec("local_host", "127.0.0.1", "address to listen on; read at activate"),
    ParameterSpec("local_port", 16484, "UDP port to listen on (0: any; see `port`); read at "
                  "activate", 0, 65535),
]


class _StreamNode(ManagedNode):
    PARAMETERS: list = []

    def __init__(self, node_name: str, **kwargs):
        super().__init__(node_name, **kwargs)
        self.params = declare_parameters(self, self.PARAMETERS, None, self._apply)
        self.message_class = None
        self._diagnostics = None

    def _apply(self, values: dict, changed: frozenset) -> None:
        self.params = dict(values)

    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            self.message_class = resolve_message_class(self.params["message_type"])
        except ValueError as exc:
            self.get_logger().error(f"configure failed: message_type: {exc}")
            return TransitionCallbackReturn.FAILURE
        self._diagnostics = self.configured.publisher(DiagnosticArray, "/diagnostics", 10)
        return TransitionCallbackReturn.SUCCESS

    def counters(self) -> dict:
        raise NotImplementedError

    def publish_diagnostics(self) -> None:
        self._diagnostics.publish(counters_diagnostics(
            f"{self.get_fully_qualified_name()}: udp stream", "up", self.counters(),
            seconds_to_time_msg(now_s(self))))


class UdpStreamerNode(_StreamNode):
    PARAMETERS = STREAMER_PARAMETERS
    WORKER = "sender"  # the StreamSender: opened at activate, closed by ManagedNode

    def __init__(self, node_name: str = "udp_streamer", **kwargs):
        super().__init__(node_name, **kwargs)
        self.sender: StreamSender | None = None

    def on_activate(self, state) -> TransitionCallbackReturn:
        values = self.params
        try:
            self.sender = StreamSender((values["remote_host"], values["remote_port"]),
                                       values["packet_bytes"], values["packet_rate_hz"])
        except (ValueError, OSError) as exc:
            self.get_logger().error(f"activate failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.activated.subscription(self.message_class, values["topic"], self._on_message, 10)
        self.activated.timer(values["diagnostics_period_s"], self.publish_diagnostics)
        return super().on_activate(state)

    def _on_message(self, msg) -> None:
        self.sender.submit(serialize_message(msg))

    def counters(self) -> dict:
        return dict(self.sender.counters) if self.sender is not None else {}


class UdpReceiverNode(_StreamNode):
    PARAMETERS = RECEIVER_PARAMETERS
    WORKER = "receiver"  # the StreamReceiver: opened at activate, closed by ManagedNode

    def __init__(self, node_name: str = "udp_receiver", **kwargs):
        super().__init__(node_name, **kwargs)
        self.receiver: StreamReceiver | None = None
        self.port = 0
        self._publisher = None

    def on_configure(self, state) -> TransitionCallbackReturn:
        result = super().on_configure(state)
        if result == TransitionCallbackReturn.SUCCESS:
            self._publisher = self.configured.publisher(self.message_class,
                                                        self.params["topic"], 10)
        return result

    def on_activate(self, state) -> TransitionCallbackReturn:
        try:
            self.receiver = StreamReceiver((self.params["local_host"], self.params["local_port"]),
                                           self._on_message)
        except OSError as exc:
            self.get_logger().error(f"activate failed: cannot bind udp: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.port = self.receiver.port
        self.activated.timer(self.params["diagnostics_period_s"], self.publish_diagnostics)
        return super().on_activate(state)

    def _on_message(self, data: bytes) -> None:
        """From the receiver's thread: one complete message."""
        counters = self.receiver.reassembler.counters
        try:
            msg = deserialize_message(data, self.message_class)
        except Exception:  # noqa: BLE001 - a bad payload is counted, never fatal
            counters["messages_undecodable"] += 1
            return
        counters["messages_published"] += 1
        self._publisher.publish(msg)

    def counters(self) -> dict:
        return dict(self.receiver.reassembler.counters) if self.receiver is not None else {}


def streamer_main(args=None) -> int:
    return run_node(UdpStreamerNode, args)


def receiver_main(args=None) -> int:
    return run_node(UdpReceiverNode, args)
