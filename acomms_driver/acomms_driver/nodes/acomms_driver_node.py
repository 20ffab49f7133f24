"""acomms_driver_node: lifecycle ROS 2 node for a WHOI Micromodem (serial, TCP or UDP).

A thin adapter over `micromodem_client.MicromodemClient` (pyacomms inside). Configure validates the
parameters and allocates publishers, services and the client; activate opens the link (and keeps
reconnecting with backoff while active: the driver never gives up on a modem); deactivate closes
it; cleanup releases everything. On every (re)connection and after every modem reboot the driver
runs the handshake (`session_setup`): SRC and firmware, the settings it depends on (CST, XST, REV),
`pwramp.txlevel` and each `modem_config` entry as `$CCCFG`, optionally the clock (checked by its
`$CATMS`), then `$CCCFQ,ALL` for the log. Which packets are FDP, what each rate carries and the
broadcast address come from the modem profile (`modem_profile` parameter).

Services: queue_tx_packet (queues IMMEDIATE, PPS and TXTRIG; `request_ack` sets the
acknowledgement flag), ping_modem, ping_transponders, query_modem_src, query_modem_param
($CCCFQ; ros_acomms' service) (created at configure: while inactive they answer with a refusal
instead of timing the caller out).
Publishes: packet_rx (with the sender's ack flag), cst, xst, transmit, ping_reply, ack ($CAACK /
$CACDR, ros_acomms' ModemAck fields), txf (a Header at every $CATXF, as ros_acomms),
reception_start (ReceptionStart at every $CARXP: a packet detected while it arrives, stamped when
the sentence came; src and expected duration unknown; sent by the modem while its RXP is 1),
nmea_from_modem, /diagnostics (link, firmware, errors, clock offset and sources, counts per
sentence type).
Subscribes: nmea_to_modem (raw sentences, checksum added if missing).
JANUS packets ($CCTJN / $CAJRX) with `use_janus_packets`.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.lifecycle import TransitionCallbackReturn
from std_msgs.msg import Header, String

from acomms_core.ros.ros_support import (
    ManagedNode,
    declare_parameters,
    is_active,
    now_s,
    run_node,
    seconds_to_time_msg,
)
from acomms_driver.micromodem.client_config import ClientCallbacks, ReceivedModemPacket
from acomms_driver.micromodem.micromodem_client import MicromodemClient
from acomms_driver.micromodem.packet_rules import ModemPacket
from acomms_driver.nodes import driver_messages as messages
from acomms_driver.nodes.driver_parameters import (
    PARAMETERS,
    TXLEVEL_CONFIG,
    check_parameters,
    client_settings,
    default_dest,
    parse_modem_config,
    update_settings,
)
from acomms_interfaces.msg import (
    CST,
    XST,
    ModemAck,
    PingReply,
    ReceivedPacket,
    ReceptionStart,
    TransmittedPacket,
)
from acomms_interfaces.srv import (
    PingModem,
    PingTransponders,
    QueryModemParam,
    QueryModemSrc,
    QueueTxPacket,
)

# Kept importable from here (tests and users did).
__all__ = ["AcommsDriverNode", "PARAMETERS", "main", "parse_modem_config"]

TOPICS = (("packet_rx", ReceivedPacket, 10), ("cst", CST, 10), ("xst", XST, 10),
          ("transmit", TransmittedPacket, 10), ("ping_reply", PingReply, 10),
          ("nmea_from_modem", String, 100), ("/diagnostics", DiagnosticArray, 10),
          ("ack", ModemAck, 10), ("txf", Header, 10), ("reception_start", ReceptionStart, 10))


class AcommsDriverNode(ManagedNode):
    def __init__(self, node_name: str = "acomms_driver_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self.params = declare_parameters(self, PARAMETERS, self._validate, self._apply)
        self.client: MicromodemClient | None = None
        self._topic_publishers: dict = {}
        self.counters: dict[str, int] = {"bad_requests": 0, "nmea_to_modem_refused": 0}

    # ------------------------------------------------------------------ parameters
    def _validate(self, values: dict) -> str | None:
        """Pure: may these merged candidate values be used? (Applied later by _apply.)"""
        return check_parameters(values, getattr(self, "params", None), is_active(self))

    def _apply(self, values: dict, changed: frozenset) -> None:
        self.params = dict(values)
        client = self.client
        if client is None:
            return
        update_settings(client.settings, values)
        if "pwramp_txlevel" in changed:
            client.set_config(TXLEVEL_CONFIG, values["pwramp_txlevel"])
        if "modem_config" in changed:
            for name, value in parse_modem_config(values["modem_config"]).items():
                client.set_config(name, value)

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            settings = client_settings(self.params, self.get_fully_qualified_name())
            settings.link_factory()  # validates the connection type now, opens nothing
            callbacks = ClientCallbacks(
                on_packet_rx=self._on_packet_rx, on_cst=self._on_cst, on_xst=self._on_xst,
                on_transmit=self._on_transmit, on_nmea=self._on_nmea,
                on_connection=self._on_connection, on_log=self._on_log, on_ack=self._on_ack,
                on_txf=self._on_txf, on_reception_start=self._on_reception_start)
            self.client = MicromodemClient(settings, callbacks)
        except (ValueError, OSError) as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        resources = self.configured
        self._topic_publishers = {topic.lstrip("/"): resources.publisher(msg_type, topic, depth)
                            for topic, msg_type, depth in TOPICS}
        quick = MutuallyExclusiveCallbackGroup()
        resources.service(QueueTxPacket, "queue_tx_packet", self._handle_queue_tx_packet,
                          callback_group=quick)
        resources.service(QueryModemSrc, "query_modem_src", self._handle_query_modem_src,
                          callback_group=quick)
        # A ping blocks for up to its timeout: its own reentrant group keeps others going.
        resources.service(PingModem, "ping_modem", self._handle_ping_modem,
                          callback_group=ReentrantCallbackGroup())
        resources.service(PingTransponders, "ping_transponders",
                          self._handle_ping_transponders, callback_group=ReentrantCallbackGroup())
        resources.service(QueryModemParam, "query_modem_param", self._handle_query_modem_param,
                          callback_group=ReentrantCallbackGroup())
        resources.subscription(String, "nmea_to_modem", self._on_nmea_to_modem, 100,
                               callback_group=quick)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        result = super().on_activate(state)
        self.client.start()
        self.activated.timer(self.params["diagnostics_period_s"],
                                     self._publish_diagnostics)
        return result

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self.activated.release()
        if self.client is not None:
            self.client.stop()
        return super().on_deactivate(state)

    def on_release(self) -> None:
        """Close the modem link before ManagedNode releases the publishers it feeds."""
        self._close_client()
        self._topic_publishers = {}

    def _close_client(self) -> None:
        # getattr: rclpy may destroy a node whose constructor raised (refused parameters)
        # before `client` existed.
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
            self.client = None

    def destroy_node(self):
        self._close_client()
        return super().destroy_node()

    # ------------------------------------------------------------------ client callbacks
    def _stamp(self):
        return seconds_to_time_msg(now_s(self))

    def _publish(self, name: str, msg) -> None:
        messages.publish_when_active(self, self._topic_publishers, name, msg)

    def _on_log(self, level: str, message: str) -> None:
        messages.log_at_level(self.get_logger(), level, message)

    def _on_connection(self, connected: bool, reason: str) -> None:
        self._publish_diagnostics()

    def _on_nmea(self, raw: str) -> None:
        self._publish("nmea_from_modem", String(data=raw))

    def _on_cst(self, values: dict) -> None:
        self._publish("cst", messages.fill_message(CST(), values))

    def _on_xst(self, values: dict) -> None:
        self._publish("xst", messages.fill_message(XST(), values))

    def _on_transmit(self, packet: ModemPacket, xst: dict) -> None:
        msg = TransmittedPacket(
            packet=messages.packet_msg(packet, self.client.modem_src if self.client else -1),
            xst=messages.fill_message(XST(), xst))
        msg.header.stamp = self._stamp()
        self._publish("transmit", msg)

    def _on_ack(self, values: dict) -> None:
        self._publish("ack", messages.ack_msg(values, self._stamp()))

    def _on_txf(self) -> None:
        self._publish("txf", messages.txf_msg(self._stamp()))

    def _on_reception_start(self, values: dict) -> None:
        stamp = self._stamp()
        msg = ReceptionStart(arrival_time=stamp, src=-1, rate=-1,
                             packet_type=int(values["packet_type"]))
        msg.header.stamp = stamp
        self._publish("reception_start", msg)

    def _on_packet_rx(self, received: ReceivedModemPacket) -> None:
        self._publish("packet_rx", messages.received_packet_msg(received, self._stamp()))

    # ------------------------------------------------------------------ services / topics
    def _inactive_reason(self) -> str | None:
        if self.client is None or not is_active(self):
            return "driver is not active"
        return None

    def _queue(self, request) -> tuple[int, str | None]:
        """Queue the requested packet: (position in the queue, reason if refused)."""
        reason = self._inactive_reason()
        if reason is not None:
            return -1, reason
        packet = messages.modem_packet(request.packet, default_dest(self.params),
                                       request.request_ack, request.queue)
        ok, position, reason = self.client.queue_packet(packet, request.insert_at_head)
        return (position, None) if ok else (-1, reason)

    def _handle_queue_tx_packet(self, request, response):
        return messages.answer_queue_request(response, *self._queue(request),
                                             self.get_logger(), self.counters)

    def _handle_query_modem_src(self, request, response):
        response.src = self.client.modem_src if self.client is not None else -1
        return response

    def _handle_ping_modem(self, request, response):
        reason = self._inactive_reason()
        if reason is not None:
            self.get_logger().warning(f"ping_modem refused: {reason}")
            response.timed_out = True
            return response
        client = self.client
        result = client.ping(request.dest, request.rate, request.cdr, bytes(request.hexdata),
                             max(1.0, float(request.timeout_sec)))
        if result.timed_out:
            self.get_logger().info(f"ping to {request.dest}: {result.reason}")
            response.timed_out = True
            return response
        messages.fill_ping_response(response, result, client.turnaround_s)
        self._publish("ping_reply", messages.ping_reply_msg(result, client.turnaround_s,
                                                            response.cst, self._stamp()))
        return response

    def _handle_ping_transponders(self, request, response):
        reason = self._inactive_reason()
        times = None
        if reason is None:
            times, reason = self.client.ping_transponders(
                list(request.transponder_dest_mask), max(0.1, float(request.timeout_sec)))
        if times is None:
            self.get_logger().info(f"ping_transponders: {reason}")
            times = [-1.0] * 4
        response.travel_times = [float(t) for t in times]
        return response

    def _handle_query_modem_param(self, request, response):
        reason = self._inactive_reason()
        value = None
        if reason is None:
            value, reason = self.client.query_config(request.param,
                                                     self.params["query_modem_param_timeout_s"])
        response.success = value is not None
        response.value = value or ""
        response.reason = reason if value is None else ""
        if value is None:
            self.get_logger().warning(f"query_modem_param {request.param[:40]!r}: {reason}")
        return response

    def _on_nmea_to_modem(self, msg: String) -> None:
        reason = self._inactive_reason() or self.client.send_sentence(msg.data)
        if reason:
            self.counters["nmea_to_modem_refused"] += 1
            self.get_logger().warning(f"nmea_to_modem {msg.data[:60]!r} refused: {reason}")

    # ------------------------------------------------------------------ diagnostics
    def diagnostic_status(self):
        return messages.diagnostic_status(f"{self.get_fully_qualified_name()}: modem link",
                                          self.client, self.counters)

    def _publish_diagnostics(self) -> None:
        if not is_active(self):
            return
        array = DiagnosticArray(status=[self.diagnostic_status()])
        array.header.stamp = self._stamp()
        self._publish("diagnostics", array)

    @property
    def is_active(self) -> bool:
        return is_active(self)


def main(args=None) -> int:
    return run_node(AcommsDriverNode, args)
