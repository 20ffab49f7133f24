"""cola2 bridge: cola2_comms' navigation struct between a Girona AUV and its topside, both ends.

Two lifecycle nodes, mirror images of each other:

- `cola2_vehicle_bridge` (on the AUV): every `period_s` builds the 'S' struct (time, position,
  depth, heading from the navigator; the safety supervisor's status code; `custom_input` bytes
  appended) and sends it; on an incoming 'U' struct publishes the USBL fix (`usbl_update`,
  sensor_msgs/NavSatFix, altitude = -depth, the accuracy squared as diagonal covariance, so a
  navigator can fuse it; `usbl_fix_position` carries the same for a 'U' that has a position,
  i.e. not a command sent before any fix), the command (`usbl_command`, std_msgs/Int32),
  optionally calls the std_srvs/Trigger service configured for that command code
  (`command_services`), and puts the extra bytes on `custom_output`.
- `cola2_topside_bridge` (on the ship): builds the 'U' struct from the USBL fix of the AUV
  (`usbl_topic`, NavSatFix; accuracy = sqrt of the larger horizontal variance, or
  `default_accuracy_m` without covariance), or from the USBL modem's own fix of the AUV
  (`usbl_fix_topic`, UsblFix) combined with the ship's GPS and heading (`usbl_position`), and
  the latest command (`command_topic`, carried by the next `command_repeats` structs, then
  `idle_command`); on an incoming 'S' publishes
  `vehicle_fix` (NavSatFix), `vehicle_heading` (std_msgs/Float64, degrees),
  `vehicle_status_code` (Int32) and `custom_output`.

Both publish what they receive, decoded, on `cola2/received` (acomms_interfaces Cola2UsblFix or
Cola2VehicleStatus) and their counters on `/diagnostics`.

`wire_mode`:
- `byte_exact`: the 37-byte struct (+ custom bytes) is the packet payload, byte for byte, so a
  real cola2_comms on the other end interoperates; the node serves the vehicle's MAC
  (`get_next_packet_data`) and reads `packet_rx` itself (`raw_link.RawPacketLink`), and offers
  `comms/to_modem` / `comms/from_modem` for a real cola2_comms on this side.
- `compact`: the same content as a Cola2VehicleStatus / Cola2UsblFix message on
  `to_acomms/cola2_status` | `to_acomms/cola2_usbl` through the vehicle's message queue and codec
  config (`config/cola2_codecs.yaml`: 118 bits of navigation content), received on
  `from_acomms/...`.
"""

from __future__ import annotations

import math

from rclpy.lifecycle import TransitionCallbackReturn
from sensor_msgs.msg import NavSatFix, NavSatStatus
from std_msgs.msg import UInt8MultiArray

from acomms_bringup.bridges import cola2_struct
from acomms_bringup.bridges.cola2_struct import SENDER_USBL, SENDER_VEHICLE, Cola2Struct
from acomms_bringup.bridges.raw_link import RawPacketLink
from acomms_core.ros.ros_support import (
    ManagedNode,
    ParameterSpec,
    counters_diagnostics,
    declare_parameters,
    is_active,
    parameter_values,
)
from acomms_interfaces.msg import Cola2UsblFix, Cola2VehicleStatus

WIRE_MODES = ("byte_exact", "compact")
HEADING_UNITS = ("rad", "deg")
# Per sender: the decoded message type, its value field, its code field, the compact topic.
SENDERS = {
    SENDER_VEHICLE: (Cola2VehicleStatus, "heading_deg", "status_code", "cola2_status"),
    SENDER_USBL: (Cola2UsblFix, "accuracy_m", "command", "cola2_usbl"),
}
COMMON_PARAMETERS = (
    ParameterSpec("wire_mode", "byte_exact", "byte_exact: the 37-byte struct is the payload "
                  "(interoperates with cola2_comms); compact: through the codec config.",
                  read_only=True),
    ParameterSpec("byte_order", "little", "Byte order of the struct: little | big.",
                  read_only=True),
    ParameterSpec("heading_unit", "rad", "Unit of the struct's heading: rad | deg (topics and "
                  "the compact message use degrees).", read_only=True),
    ParameterSpec("period_s", 10.0, "Seconds between outgoing structs (node clock).",
                  minimum=0.1, maximum=86400.0, read_only=True),
    ParameterSpec("remote_address", 121, "Modem address byte-exact packets go to (121: "
                  "broadcast).", minimum=0, maximum=255, read_only=True),
    ParameterSpec("packet_service", "get_next_packet_data", "Service the vehicle's MAC calls "
                  "for packets (byte_exact).", read_only=True),
    ParameterSpec("max_custom_bytes", 32, "Longest custom data appended (the latest "
                  "custom_input goes with every struct until replaced; empty clears it); longer "
                  "input is refused and counted.", minimum=0, maximum=2000, read_only=True),
)


def check_common(values: dict) -> str | None:
    """Pure validator of the common parameters."""
    for name, allowed in (("wire_mode", WIRE_MODES), ("byte_order", tuple(cola2_struct
                          .BYTE_ORDERS)), ("heading_unit", HEADING_UNITS)):
        if values.get(name) not in allowed:
            return f"{name}: must be one of {', '.join(allowed)}, got {values.get(name)!r}"
    return None


def struct_to_message(item: Cola2Struct):
    msg_class, value_field, code_field, _ = SENDERS[item.sender]
    msg = msg_class(time_s=item.time_s, latitude_deg=item.latitude_deg,
                    longitude_deg=item.longitude_deg, depth_m=item.depth_m,
                    custom=list(item.custom))
    setattr(msg, value_field, float(item.value))
    setattr(msg, code_field, int(item.code))
    return msg


def message_to_struct(msg, sender: bytes) -> Cola2Struct:
    _, value_field, code_field, _ = SENDERS[sender]
    return Cola2Struct(sender, msg.time_s, msg.latitude_deg, msg.longitude_deg, msg.depth_m,
                       getattr(msg, value_field), getattr(msg, code_field), bytes(msg.custom))


def fix_message(item: Cola2Struct, stamp, accuracy_m: float | None = None) -> NavSatFix:
    """NavSatFix of a struct's position (altitude = -depth), covariance from accuracy_m."""
    fix = NavSatFix(latitude=item.latitude_deg, longitude=item.longitude_deg,
                    altitude=-float(item.depth_m))
    fix.header.stamp = stamp
    fix.status.status = NavSatStatus.STATUS_FIX
    if accuracy_m is not None:
        variance = float(accuracy_m) ** 2
        fix.position_covariance = [variance, 0.0, 0.0, 0.0, variance, 0.0, 0.0, 0.0, variance]
        fix.position_covariance_type = NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
    return fix


class Cola2Bridge(ManagedNode):
    """What both ends share: parameters, transports, the period timer, counters."""

    OUTGOING = SENDER_VEHICLE
    INCOMING = SENDER_USBL
    SIDE_PARAMETERS: tuple = ()

    def __init__(self, node_name: str, **kwargs):
        super().__init__(node_name, **kwargs)
        self.specs = COMMON_PARAMETERS + self.SIDE_PARAMETERS
        declare_parameters(self, self.specs, self.check_parameters)
        self.values = parameter_values(self, [spec.name for spec in self.specs])
        self.counts = {"structs_built": 0, "structs_received": 0, "custom_too_long": 0,
                       "compact_received": 0}
        self.link = None
        self.custom_input = b""
        self._compact_pub = self._received_pub = self._custom_pub = self._diag_pub = None

    def check_parameters(self, values: dict) -> str | None:
        return check_common(values)

    # -- lifecycle --------------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        values = self.values
        try:
            self.configure_side(values)
        except ValueError as exc:
            self.get_logger().error(f"configure refused: {exc}")
            return TransitionCallbackReturn.FAILURE
        incoming_class = SENDERS[self.INCOMING][0]
        self._received_pub = self.configured.publisher(incoming_class, "cola2/received")
        self._custom_pub = self.configured.publisher(UInt8MultiArray, "custom_output")
        from diagnostic_msgs.msg import DiagnosticArray
        self._diag_pub = self.configured.publisher(DiagnosticArray, "/diagnostics")
        if values["wire_mode"] == "byte_exact":
            self.link = RawPacketLink(self, self.counts, self.on_payload,
                                      values["remote_address"], values["packet_service"])
            self.link.configure()
        else:
            msg_class, _, _, topic = SENDERS[self.OUTGOING]
            self._compact_pub = self.configured.publisher(msg_class, f"to_acomms/{topic}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self.activated.subscription(UInt8MultiArray, "custom_input", self.on_custom_input)
        if self.link is not None:
            self.link.activate()
        else:
            msg_class, _, _, topic = SENDERS[self.INCOMING]
            self.activated.subscription(msg_class, f"from_acomms/{topic}", self.on_compact)
        self.activate_side()
        self.activated.timer(self.values["period_s"], self.on_period)
        return super().on_activate(state)

    def on_release(self) -> None:
        self.link = None
        self._compact_pub = self._received_pub = self._custom_pub = self._diag_pub = None

    def bridge_summary(self) -> dict:
        return dict(self.counts)

    # -- side hooks -------------------------------------------------------------------------------
    def configure_side(self, values: dict) -> None:
        """Create the side's publishers and clients; ValueError refuses configure."""

    def activate_side(self) -> None:
        """Create the side's subscriptions."""

    def build_outgoing(self) -> Cola2Struct | None:
        """The struct to send now (heading in degrees), or None when inputs are missing."""

    def handle_incoming(self, item: Cola2Struct) -> None:
        """Publish what an incoming struct (heading in degrees) means on this side."""

    # -- transport --------------------------------------------------------------------------------
    def on_custom_input(self, msg: UInt8MultiArray) -> None:
        data = bytes(msg.data)
        if len(data) > self.values["max_custom_bytes"]:
            self.counts["custom_too_long"] += 1
            self.get_logger().warning(f"custom_input of {len(data)} bytes refused (max_custom_"
                                      f"bytes {self.values['max_custom_bytes']})")
            return
        self.custom_input = data

    def on_period(self) -> None:
        if not is_active(self):   # a timer that fired while the node is being deactivated
            return
        item = self.build_outgoing()
        if item is not None:
            item = Cola2Struct(**{**item.__dict__, "custom": self.custom_input})
            try:
                self.send(item)
                self.counts["structs_built"] += 1
            except cola2_struct.Cola2StructError as exc:
                self.get_logger().error(f"struct not sent: {exc}")
        self._diag_pub.publish(counters_diagnostics(
            self.get_fully_qualified_name(), "ok", self.counts, self.get_clock().now().to_msg()))

    def send(self, item: Cola2Struct) -> None:
        if self.link is not None:
            self.link.offer(cola2_struct.pack(self.to_wire_units(item, True),
                                              self.values["byte_order"]))
        else:
            self._compact_pub.publish(struct_to_message(item))

    def to_wire_units(self, item: Cola2Struct, outgoing: bool) -> Cola2Struct:
        """Heading between the message's degrees and the struct's heading_unit."""
        if item.sender != SENDER_VEHICLE or self.values["heading_unit"] == "deg":
            return item
        value = math.radians(item.value) if outgoing else math.degrees(item.value) % 360.0
        return Cola2Struct(**{**item.__dict__, "value": value})

    def on_payload(self, payload: bytes, src: int) -> str | None:
        try:
            item = cola2_struct.unpack(payload, self.values["byte_order"], self.INCOMING)
        except cola2_struct.Cola2StructError as exc:
            return str(exc)
        self.deliver(self.to_wire_units(item, False))
        return None

    def on_compact(self, msg) -> None:
        self.counts["compact_received"] += 1
        self.deliver(message_to_struct(msg, self.INCOMING))

    def deliver(self, item: Cola2Struct) -> None:
        self.counts["structs_received"] += 1
        self._received_pub.publish(struct_to_message(item))
        if item.custom:
            self._custom_pub.publish(UInt8MultiArray(data=list(item.custom)))
        self.handle_incoming(item)

