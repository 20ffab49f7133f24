"""evologics_driver_node: an EvoLogics S2C modem (serial or TCP) on the acomms modem interface.

A thin lifecycle adapter over `acomms_driver.evologics.s2c_session.S2CSession` (link, reconnect
with backoff, `AT?AL` / `AT!AL` at connection, one packet in flight, hostile lines counted).
Serves `queue_tx_packet` (dataframe bytes only: up to 64 bytes go as an instant message with an
acknowledgement requested for a unicast dest, up to 1024 as burst data; refusals logged as
`queue_tx_packet refused: <reason>`); publishes `packet_rx` (ReceivedPacket) and `cst` (its CST:
what the modem reports: rssi in `snr_rss`, relative velocity in `dop`, the S2C band; the S2C
reports no SNR, so `snr_in`/`snr_out` are NaN), `transmit` (TransmittedPacket, when the modem
accepted the packet), `ack` (ModemAck from `DELIVEREDIM`/`FAILEDIM`/`DELIVERED`/`FAILED`),
`usbl_fix` (UsblFix) and `usbl_position` (geometry_msgs/PointStamped, local ENU, from `USBLLONG`),
`raw/to_modem` and `raw/from_modem` (std_msgs/String, non-printable bytes as `\\xNN`),
`reception_start` (ReceptionStart at every `RECVSTART`, the extended notification turned on with
`AT@ZX1` at connection: a packet detected while it arrives; sender, type and rate unknown, -1) and
`/diagnostics` (link state and every counter, the reader's refusals by reason included).
Serves `ping_modem`: an instant message with acknowledgement (`hexdata`, else one byte) to
`dest`, then `AT?T` after its `DELIVEREDIM`: `one_way_travel_time` is the modem's measured
propagation time; waits `timeout_sec` (else `ping_timeout_s`), wall clock.
Link parameters are read at activate.
"""

from __future__ import annotations

import math

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PointStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.lifecycle import TransitionCallbackReturn
from std_msgs.msg import String

from acomms_core.modems import evologics_s2c as s2c
from acomms_core.modems.profile import PacketRefused
from acomms_core.ros.parameter_spec import ParameterSpec
from acomms_core.ros.ros_support import (
    ManagedNode,
    counters_diagnostics,
    declare_parameters,
    is_active,
    now_s,
    run_node,
    seconds_to_time_msg,
)
from acomms_driver.evologics import at_protocol as at
from acomms_driver.evologics.s2c_session import (
    OutgoingPacket,
    S2CCallbacks,
    S2CSession,
    S2CSettings,
    outgoing,
)
from acomms_driver.micromodem.modem_link import SerialLink, TcpClientLink
from acomms_driver.nodes import driver_messages as messages
from acomms_interfaces.msg import (
    CST,
    XST,
    ModemAck,
    Packet,
    ReceivedPacket,
    ReceptionStart,
    TransmittedPacket,
    UsblFix,
)
from acomms_interfaces.srv import PingModem, QueueTxPacket

CONNECTION_TYPES = ("serial", "tcp")
PARAMETERS = [
    ParameterSpec("modem_connection_type", "serial", "how the modem is attached: serial | tcp "
                  "(S2C modems serve TCP port 9200); read at activate"),
    ParameterSpec("modem_serial_port", "/dev/ttyUSB0", "serial device (or emulator pty)"),
    ParameterSpec("modem_baud_rate", 19200, "serial baud rate", 300, 3000000),
    ParameterSpec("modem_remote_host", "192.168.0.209", "modem host for tcp"),
    ParameterSpec("modem_remote_port", 9200, "modem TCP port", 1, 65535),
    ParameterSpec("SRC", 0, "modem address set with AT!AL at every connection (0: keep the "
                  "modem's own, read with AT?AL)", 0, 254),
    ParameterSpec("reconnect_initial_s", 0.5, "first reconnect delay, doubling up to "
                  "reconnect_max_s, s (wall clock)", 0.01, 600.0),
    ParameterSpec("reconnect_max_s", 10.0, "longest reconnect delay, s (wall clock)",
                  0.01, 3600.0),
    ParameterSpec("silence_timeout_s", 30.0, "reconnect after this long without a byte from "
                  "the modem (probed with AT?AL at half of it), s (wall clock)", 1.0, 3600.0),
    ParameterSpec("delivery_timeout_s", 20.0, "longest wait for DELIVERED/FAILED before the "
                  "next packet goes, s (wall clock)", 0.1, 600.0),
    ParameterSpec("ping_timeout_s", 10.0, "longest wait for a ping_modem answer (its "
                  "DELIVEREDIM and AT?T) when the request gives no timeout_sec, s (wall clock)",
                  0.1, 600.0),
    ParameterSpec("max_queue_length", 100, "transmit queue limit, packets", 1, 100000),
    ParameterSpec("usbl_frame_id", "usbl", "frame_id of usbl_fix and usbl_position"),
    ParameterSpec("diagnostics_period_s", 1.0, "period of /diagnostics, s", 0.05, 3600.0),
]


def check_parameters(values: dict) -> str | None:
    """Pure validator over the merged candidate values."""
    if values["modem_connection_type"] not in CONNECTION_TYPES:
        return (f"modem_connection_type {values['modem_connection_type']!r} is not one of "
                f"{', '.join(CONNECTION_TYPES)}")
    if values["reconnect_max_s"] < values["reconnect_initial_s"]:
        return "reconnect_max_s must be at least reconnect_initial_s"
    return None


def session_settings(values: dict) -> S2CSettings:
    if values["modem_connection_type"] == "tcp":
        host, port = values["modem_remote_host"], int(values["modem_remote_port"])

        def factory():
            return TcpClientLink(host, port)
    else:
        device, baud = values["modem_serial_port"], int(values["modem_baud_rate"])

        def factory():
            return SerialLink(device, baud)
    return S2CSettings(factory, int(values["SRC"]), float(values["reconnect_initial_s"]),
                       float(values["reconnect_max_s"]), float(values["silence_timeout_s"]),
                       float(values["delivery_timeout_s"]), int(values["max_queue_length"]))


def escaped(data: bytes) -> str:
    """Printable ASCII as is, every other byte as `\\xNN` (line ends included)."""
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02x}" for b in data)


def usbl_fix_msg(item, stamp, frame_id: str) -> UsblFix:
    """UsblFix from USBLLONG / USBLANGLES (fields a notification lacks are NaN)."""
    nan = math.nan
    msg = UsblFix(remote_address=item.remote, measurement_time_s=item.measurement_time_s,
                  rssi_db=item.rssi_db, integrity=item.integrity, accuracy_m=item.accuracy_m,
                  x_m=nan, y_m=nan, z_m=nan, east_m=nan, north_m=nan, up_m=nan, range_m=nan,
                  propagation_time_s=nan)
    if isinstance(item, at.UsblLong):
        msg.source = UsblFix.SOURCE_USBLLONG
        msg.x_m, msg.y_m, msg.z_m = item.x_m, item.y_m, item.z_m
        msg.east_m, msg.north_m, msg.up_m = item.east_m, item.north_m, item.up_m
        msg.range_m = item.slant_range_m
        msg.bearing_rad = math.atan2(item.east_m, item.north_m)
        msg.elevation_rad = math.atan2(item.up_m, math.hypot(item.east_m, item.north_m))
        if item.propagation_time_us >= 0:
            msg.propagation_time_s = item.propagation_time_us * 1e-6
    else:
        msg.source = UsblFix.SOURCE_USBLANGLES
        msg.bearing_rad, msg.elevation_rad = item.bearing_rad, item.elevation_rad
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    return msg


def received_msg(item, stamp) -> ReceivedPacket:
    rate = s2c.IM_RATE if isinstance(item, at.InstantMessage) else s2c.BURST_RATE
    cst = messages.fill_message(CST(), {
        "mode": 0, "src": item.src, "dest": item.dest, "rate_num": rate, "data_rate": rate,
        "packet_type": -1, "snr_rss": item.rssi_db, "dop": item.velocity_mps,
        "carrier": s2c.CARRIER_HZ, "bandwidth": s2c.BANDWIDTH_HZ, "num_frames": 1,
        "num_data_frames": 1})
    cst.toa, cst.snr_in, cst.snr_out = stamp, math.nan, math.nan
    packet = Packet(src=item.src, dest=item.dest, packet_type=Packet.PACKET_TYPE_AUTO,
                    miniframe_rate=rate, dataframe_rate=rate, dataframe_bytes=item.data)
    msg = ReceivedPacket(packet=packet, minibytes_valid=[], cst=cst,
                         databytes_valid=[0, len(item.data)],
                         ack_requested=bool(getattr(item, "ack", False)))
    msg.header.stamp = stamp
    return msg


class EvologicsDriverNode(ManagedNode):
    WORKER = "session"  # the S2CSession: started at activate, stopped by ManagedNode

    def __init__(self, node_name: str = "evologics_driver_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self.params = declare_parameters(self, PARAMETERS, check_parameters, self._apply)
        self.session: S2CSession | None = None
        self.counters: dict[str, int] = {"bad_requests": 0}
        self._pubs: dict = {}

    def _apply(self, values: dict, changed: frozenset) -> None:
        self.params = dict(values)

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state) -> TransitionCallbackReturn:
        resources = self.configured
        self._pubs = {name: resources.publisher(msg_type, name, 10) for name, msg_type in (
            ("packet_rx", ReceivedPacket), ("cst", CST), ("transmit", TransmittedPacket),
            ("ack", ModemAck), ("reception_start", ReceptionStart),
            ("usbl_fix", UsblFix), ("usbl_position", PointStamped), ("raw/to_modem", String),
            ("raw/from_modem", String), ("/diagnostics", DiagnosticArray))}
        resources.service(QueueTxPacket, "queue_tx_packet", self._handle_queue_tx_packet,
                          callback_group=MutuallyExclusiveCallbackGroup())
        resources.service(PingModem, "ping_modem", self._handle_ping_modem,
                          callback_group=MutuallyExclusiveCallbackGroup())
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self.session = S2CSession(session_settings(self.params), S2CCallbacks(
            on_packet=self._on_packet, on_sent=self._on_sent, on_delivery=self._on_delivery,
            on_usbl=self._on_usbl, on_raw=self._on_raw, on_log=self._on_log,
            on_reception_start=self._on_reception_start))
        self.session.start()
        self.activated.timer(self.params["diagnostics_period_s"], self._publish_diagnostics)
        return super().on_activate(state)

    # ------------------------------------------------------------------ session callbacks
    def _publish(self, name: str, msg) -> None:
        messages.publish_when_active(self, self._pubs, name, msg)

    def _stamp(self):
        return seconds_to_time_msg(now_s(self))

    def _on_log(self, level: str, text: str) -> None:
        messages.log_at_level(self.get_logger(), level, text)

    def _on_raw(self, direction: str, data: bytes) -> None:
        self._publish(f"raw/{direction}", String(data=escaped(data)))

    def _on_packet(self, item) -> None:
        msg = received_msg(item, self._stamp())
        self._publish("cst", msg.cst)
        self._publish("packet_rx", msg)

    def _on_reception_start(self) -> None:
        stamp = self._stamp()
        msg = ReceptionStart(arrival_time=stamp, src=-1, rate=-1,
                             packet_type=ReceptionStart.PACKET_TYPE_UNKNOWN)
        msg.header.stamp = stamp
        self._publish("reception_start", msg)

    def _on_sent(self, packet: OutgoingPacket) -> None:
        stamp = self._stamp()
        rate = s2c.IM_RATE if packet.kind == "im" else s2c.BURST_RATE
        src = self.session.modem_address if self.session else -1
        xst = messages.fill_message(XST(), {"src": src, "dest": packet.dest, "rate_num": rate,
                                            "packet_type": -1, "nbytes": len(packet.data)})
        xst.time = stamp
        sent = Packet(src=src, dest=packet.dest, packet_type=Packet.PACKET_TYPE_AUTO,
                      miniframe_rate=rate, dataframe_rate=rate, dataframe_bytes=packet.data)
        msg = TransmittedPacket(packet=sent, xst=xst)
        msg.header.stamp = stamp
        self._publish("transmit", msg)

    def _on_delivery(self, report: at.DeliveryReport) -> None:
        src = self.session.modem_address if self.session else -1
        msg = ModemAck(src=report.dest, dest=src, frame_num=-1, ack=report.delivered,
                       ack_type=ModemAck.ACK_TYPE_UNKNOWN, rx_sequence_num=-1, minirate=-1)
        msg.header.stamp = self._stamp()
        self._publish("ack", msg)

    def _on_usbl(self, item) -> None:
        stamp, frame = self._stamp(), self.params["usbl_frame_id"]
        self._publish("usbl_fix", usbl_fix_msg(item, stamp, frame))
        if isinstance(item, at.UsblLong):
            point = PointStamped()
            point.header.stamp, point.header.frame_id = stamp, frame
            point.point.x, point.point.y, point.point.z = item.east_m, item.north_m, item.up_m
            self._publish("usbl_position", point)

    # ------------------------------------------------------------------ services
    def _queue(self, request) -> tuple[int, str | None]:
        session = self.session
        refusal = messages.immediate_queue_refusal(session, is_active(self), request)
        if refusal is not None:
            return -1, refusal
        if request.packet.miniframe_bytes:
            return -1, "S2C packets carry no miniframe bytes (put the payload in dataframe_bytes)"
        dest = request.packet.dest if request.packet.dest >= 0 else at.BROADCAST_ADDRESS
        try:
            packet = outgoing(dest, bytes(request.packet.dataframe_bytes))
            return session.queue_packet(packet, request.insert_at_head), None
        except (PacketRefused, ValueError) as exc:
            return -1, str(exc)

    def _handle_queue_tx_packet(self, request, response):
        return messages.answer_queue_request(response, *self._queue(request),
                                             self.get_logger(), self.counters)

    def _handle_ping_modem(self, request, response):
        response.timed_out = True
        session = self.session
        if session is None or not is_active(self):
            self.get_logger().warning("ping_modem refused: driver is not active")
            return response
        timeout_s = float(request.timeout_sec)
        if not timeout_s > 0:
            timeout_s = self.params["ping_timeout_s"]
        travel_time_s, reason = session.ping(int(request.dest), timeout_s,
                                             bytes(request.hexdata))
        if travel_time_s is None:
            self.get_logger().info(f"ping to {request.dest}: {reason}")
            return response
        response.timed_out = False
        response.one_way_travel_time = travel_time_s
        return response

    # ------------------------------------------------------------------ diagnostics
    def _publish_diagnostics(self) -> None:
        session = self.session
        if session is None:
            return
        counters = {**session.all_counters(), **self.counters,
                    "link_state": session.supervisor.state}
        if session.connected:
            level, message = DiagnosticStatus.OK, "connected"
        else:
            level, message = DiagnosticStatus.ERROR, f"not connected: " \
                                                     f"{session.supervisor.last_reason}"
        self._publish("/diagnostics", counters_diagnostics(
            f"{self.get_fully_qualified_name()}: evologics s2c", message, counters,
            self._stamp(), level))


def main(args=None) -> int:
    return run_node(EvologicsDriverNode, args)
