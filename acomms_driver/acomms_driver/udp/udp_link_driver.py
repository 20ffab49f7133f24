"""udp_link_driver: the modem ROS interface over a narrow UDP link (radio, satellite, tether).

Serves what every acomms modem serves (the modem contract), so codecs, queues, MACs and
fragmentation run unchanged over an IP link: `queue_tx_packet` (packets checked against the
`modem_profile`, refusals logged as `queue_tx_packet refused: <reason>`), `ping_modem` (one-way
time = half the measured round trip); publishes `packet_rx`, `transmit`, `cst`, `/diagnostics`.
The link itself (`udp_link.UdpLink`): fixed `link_rate_bps` enforced by a token bucket over the
bytes on the wire, no handshake, optional seeded loss and added delay for tests.

An IP link has no acoustics: the CST of a reception reports mode 0, the packet's rates, the
arrival time and `reported_snr_db` (a configured nominal value, not a measurement).
Socket opened at activate, closed at deactivate; destination, rate, loss and delay may change
while active.

Hostile datagrams (issue 28): received packets are checked against the modem profile as well
as the datagram's own limits before a message is built; refusals are counted as
`refused_<reason>` on /diagnostics. Each diagnostics period the link's threads are supervised
(a stopped one is restarted) and /diagnostics turns ERROR while receiving is impossible.
"""

from __future__ import annotations

import dataclasses

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.lifecycle import TransitionCallbackReturn

from acomms_core.modems.registry import MODEM_PROFILE_PARAMETER, check_modem_profile, modem_profile
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
from acomms_driver.micromodem.packet_rules import ModemPacket, PacketRules
from acomms_driver.micromodem.pings import check_ping
from acomms_driver.nodes import driver_messages as messages
from acomms_driver.udp.udp_link import UdpLink, UdpLinkCallbacks, UdpLinkSettings
from acomms_interfaces.msg import CST, XST, ReceivedPacket, TransmittedPacket
from acomms_interfaces.srv import PingModem, QueueTxPacket

PARAMETERS = [
    ParameterSpec("SRC", 1, "modem address of this end of the link", 0, 255),
    MODEM_PROFILE_PARAMETER,
    ParameterSpec("local_host", "127.0.0.1", "address to bind (0.0.0.0: every interface)"),
    ParameterSpec("local_port", 0, "UDP port to bind (0: any free port); read at activate",
                  0, 65535),
    ParameterSpec("remote_host", "127.0.0.1", "address of the far end"),
    ParameterSpec("remote_port", 0, "UDP port of the far end (0: not set, nothing is sent)",
                  0, 65535),
    ParameterSpec("link_rate_bps", 9600.0, "link rate, bits per second on the wire",
                  1.0, 1e9),
    ParameterSpec("overhead_bytes", 28, "per-datagram header bytes counted against the rate "
                  "(IPv4 20 + UDP 8)", 0, 1024),
    ParameterSpec("burst_bytes", 1500, "token bucket depth, bytes: the most sent at once after "
                  "an idle spell (a bigger datagram waits for a full bucket)", 1, 1 << 20),
    ParameterSpec("loss_probability", 0.0, "probability of dropping a sent datagram (tests)",
                  0.0, 1.0),
    ParameterSpec("loss_seed", 0, "seed of the loss draws", 0, 2**31 - 1),
    ParameterSpec("link_delay_s", 0.0, "added one-way delay of received datagrams, s (tests)",
                  0.0, 60.0),
    ParameterSpec("max_queue_length", 100, "transmit queue limit, packets", 1, 100000),
    ParameterSpec("max_reply_queue_length", 8, "pings and ping replies waiting to be sent, at "
                  "most (a reply that finds it full is dropped and counted as "
                  "ping_replies_dropped); they alternate with queued packets", 1, 1000),
    ParameterSpec("reported_snr_db", 30.0, "SNR reported in CST (an IP link has none), dB",
                  -50.0, 100.0),
    ParameterSpec("diagnostics_period_s", 1.0, "period of /diagnostics, s", 0.05, 3600.0),
]


def check_parameters(values: dict) -> str | None:
    """Pure validator over the merged candidate values."""
    return check_modem_profile(values)


def link_settings(values: dict) -> UdpLinkSettings:
    return UdpLinkSettings(
        int(values["SRC"]), values["remote_host"], int(values["remote_port"]),
        values["local_host"], int(values["local_port"]), float(values["link_rate_bps"]),
        int(values["overhead_bytes"]), int(values["burst_bytes"]),
        float(values["loss_probability"]),
        int(values["loss_seed"]), float(values["link_delay_s"]),
        int(values["max_queue_length"]), int(values["max_reply_queue_length"]))


class UdpLinkDriver(ManagedNode):
    WORKER = "link"  # the UdpLink: opened at activate, closed by ManagedNode

    def __init__(self, node_name: str = "udp_link_driver", **kwargs):
        super().__init__(node_name, **kwargs)
        self.params = declare_parameters(self, PARAMETERS, check_parameters, self._apply)
        self.link: UdpLink | None = None
        self.rules = PacketRules(modem_profile(self.params["modem_profile"]))
        self.counters: dict[str, int] = {"bad_requests": 0}
        self._pubs: dict = {}

    def _apply(self, values: dict, changed: frozenset) -> None:
        self.params = dict(values)
        if self.link is not None:
            self.link.apply(link_settings(values))

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state) -> TransitionCallbackReturn:
        resources = self.configured
        self._pubs = {name: resources.publisher(msg_type, name, 10) for name, msg_type in (
            ("packet_rx", ReceivedPacket), ("transmit", TransmittedPacket), ("cst", CST),
            ("/diagnostics", DiagnosticArray))}
        resources.service(QueueTxPacket, "queue_tx_packet", self._handle_queue_tx_packet,
                          callback_group=MutuallyExclusiveCallbackGroup())
        resources.service(PingModem, "ping_modem", self._handle_ping_modem,
                          callback_group=ReentrantCallbackGroup())
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        link = UdpLink(link_settings(self.params), UdpLinkCallbacks(
            on_packet=self._on_packet, on_sent=self._on_sent, on_log=self._on_log,
            check_packet=self.rules.check))
        try:
            link.open()
        except OSError as exc:
            self.get_logger().error(f"activate failed: cannot bind udp "
                                    f"{self.params['local_host']}:{self.params['local_port']}: "
                                    f"{exc}")
            return TransitionCallbackReturn.FAILURE
        self.link = link
        self.get_logger().info(f"udp link on port {link.port} -> {self.params['remote_host']}:"
                               f"{self.params['remote_port']} at {self.params['link_rate_bps']} "
                               "bit/s")
        self.activated.timer(self.params["diagnostics_period_s"], self._publish_diagnostics)
        return super().on_activate(state)

    # ------------------------------------------------------------------ link callbacks
    def _publish(self, name: str, msg) -> None:
        messages.publish_when_active(self, self._pubs, name, msg)

    def _on_log(self, level: str, text: str) -> None:
        messages.log_at_level(self.get_logger(), level, text)

    def _on_sent(self, packet: ModemPacket, start_s: float) -> None:
        xst = messages.fill_message(XST(), {
            "time": start_s, "src": packet.src, "dest": packet.dest,
            "rate_num": packet.miniframe_rate, "packet_type": packet.packet_type,
            "nbytes": len(packet.miniframe_bytes) + len(packet.dataframe_bytes)})
        msg = TransmittedPacket(packet=messages.packet_msg(packet, packet.src), xst=xst)
        msg.header.stamp = seconds_to_time_msg(now_s(self))
        self._publish("transmit", msg)

    def _on_packet(self, packet: ModemPacket, arrival_s: float) -> None:
        snr = float(self.params["reported_snr_db"])
        cst = messages.fill_message(CST(), {
            "mode": 0, "toa": arrival_s, "src": packet.src, "dest": packet.dest,
            "rate_num": packet.miniframe_rate, "data_rate": packet.dataframe_rate,
            "packet_type": packet.packet_type, "snr_in": snr, "snr_out": snr,
            "num_frames": 1, "num_data_frames": 1})
        self._publish("cst", cst)
        msg = ReceivedPacket(packet=messages.packet_msg(packet, packet.src),
                             minibytes_valid=[0, len(packet.miniframe_bytes)],
                             databytes_valid=[0, len(packet.dataframe_bytes)], cst=cst)
        msg.header.stamp = seconds_to_time_msg(now_s(self))
        self._publish("packet_rx", msg)

    # ------------------------------------------------------------------ services
    def _queue(self, request) -> tuple[int, str | None]:
        link = self.link
        refusal = messages.immediate_queue_refusal(link, is_active(self), request)
        if refusal is not None:
            return -1, refusal
        packet = messages.modem_packet(request.packet, self.rules.profile.broadcast_address)
        reason = self.rules.check(packet)
        if reason is not None:
            return -1, reason
        try:
            return link.queue_packet(packet, request.insert_at_head), None
        except ValueError as exc:
            return -1, str(exc)

    def _handle_queue_tx_packet(self, request, response):
        return messages.answer_queue_request(response, *self._queue(request),
                                             self.get_logger(), self.counters)

    def _handle_ping_modem(self, request, response):
        link = self.link
        response.timed_out = True
        if link is None or not is_active(self):
            self.get_logger().warning("ping_modem refused: driver is not active")
            return response
        reason = check_ping(request.dest, 0, bytes(request.hexdata))
        if reason is not None:
            self.get_logger().warning(f"ping_modem refused: {reason}")
            return response
        owtt = link.ping(request.dest, request.rate, bytes(request.hexdata),
                         max(1.0, float(request.timeout_sec)))
        if owtt is not None:
            response.timed_out, response.one_way_travel_time = False, owtt
        return response

    # ------------------------------------------------------------------ diagnostics
    def _publish_diagnostics(self) -> None:
        link = self.link
        if link is None:
            return
        link.supervise()
        counters = {**dataclasses.asdict(link.settings), **link.counters, **self.counters,
                    "queue_length": link.queue_length(),
                    "reply_queue_length": link.reply_queue_length(), "local_port": link.port}
        level, message = DiagnosticStatus.OK, "up"
        problem = link.health()
        if problem is not None:
            level, message = DiagnosticStatus.ERROR, f"cannot receive: {problem}"
        elif not link.settings.remote_port:
            level, message = DiagnosticStatus.WARN, "remote_port not set: nothing is sent"
        self._publish("/diagnostics", counters_diagnostics(
            f"{self.get_fully_qualified_name()}: udp link", message, counters,
            seconds_to_time_msg(now_s(self)), level))


def main(args=None) -> int:
    return run_node(UdpLinkDriver, args)
