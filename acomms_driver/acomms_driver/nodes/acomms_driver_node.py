"""acomms_driver_node: lifecycle ROS 2 node for a WHOI Micromodem (serial, TCP or UDP).

A thin adapter over `micromodem_client.MicromodemClient` (pyacomms inside). Configure validates the
parameters and allocates publishers, services and the client; activate opens the link (and keeps
reconnecting with backoff while active: the driver never gives up on a modem); deactivate closes
it; cleanup releases everything. On every (re)connection the driver queries SRC and firmware,
optionally sets the modem clock, and sends `pwramp.txlevel` and each `modem_config` entry as
`$CCCFG`.

Services: queue_tx_packet, ping_modem, query_modem_src.
Publishes: packet_rx, cst, xst, transmit, ping_reply, nmea_from_modem, /diagnostics.
Subscribes: nmea_to_modem (raw sentences, checksum added if missing).
"""

from __future__ import annotations

import math

import yaml
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from lifecycle_msgs.msg import State
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from std_msgs.msg import Header, String

from acomms_core.ros.ros_support import ParameterSpec, declare_parameters, run_node
from acomms_driver.micromodem.micromodem_client import (
    ClientCallbacks,
    ClientSettings,
    MicromodemClient,
    ModemPacket,
    ReceivedModemPacket,
)
from acomms_driver.micromodem.modem_link import make_link
from acomms_interfaces.msg import CST, XST, Packet, PingReply, ReceivedPacket, TransmittedPacket
from acomms_interfaces.srv import PingModem, QueryModemSrc, QueueTxPacket

CONNECTION_TYPES = ("serial", "tcp", "udp")
# Parameters that describe the link: refused while active (deactivate, change, activate).
LINK_PARAMETERS = ("modem_connection_type", "modem_serial_port", "modem_baud_rate",
                   "modem_remote_host", "modem_remote_port", "modem_local_host",
                   "modem_local_port", "modem_log_dir")

PARAMETERS = (
    ParameterSpec("modem_connection_type", "serial",
                  "how the modem is attached: serial | tcp | udp"),
    ParameterSpec("modem_serial_port", "/dev/ttyUSB0", "serial device of the modem"),
    ParameterSpec("modem_baud_rate", 19200, "serial baud rate", 300, 3000000),
    ParameterSpec("modem_remote_host", "localhost", "modem host for tcp / udp"),
    ParameterSpec("modem_remote_port", 4001, "modem port for tcp / udp", 1, 65535),
    ParameterSpec("modem_local_host", "", "local address to bind for udp ('' = any)"),
    ParameterSpec("modem_local_port", 0, "local udp port (0 = same as modem_remote_port)", 0,
                  65535),
    ParameterSpec("modem_config", "{}",
                  "YAML mapping of modem parameters sent as $CCCFG name,value on every "
                  "connection, e.g. \"{BR1: 3, 'xmit.txinhibit': 1}\""),
    ParameterSpec("set_modem_time", False, "set the modem clock ($CCTMS) on every connection"),
    ParameterSpec("default_modem_dest", 121, "dest used when a queued packet has dest < 0", 0,
                  255),
    ParameterSpec("use_legacy_packets", False,
                  "send AUTO/UNKNOWN packets as legacy $CCCYC/$CCTXD packets instead of FDP"),
    ParameterSpec("use_tdp", False, "send FDP packets with $CCTDP (dataframe only)"),
    ParameterSpec("pwramp_txlevel", 3, "power amplifier level sent as pwramp.txlevel "
                  "(0 loudest .. 3 quietest)", 0, 3),
    ParameterSpec("publish_partial_packets", True,
                  "publish receptions with bad frames (good-prefix bytes only)"),
    ParameterSpec("reconnect_initial_s", 0.5, "first reconnection delay, s (doubles per failure)",
                  0.05, 60.0),
    ParameterSpec("reconnect_max_s", 10.0, "longest reconnection delay, s", 0.1, 600.0),
    ParameterSpec("modem_silence_timeout_s", 30.0,
                  "no sentence for this long = modem silent: reconnect (probed at half)", 1.0,
                  3600.0),
    ParameterSpec("handshake_timeout_s", 2.0, "wait per handshake reply on connection, s", 0.1,
                  30.0),
    ParameterSpec("tx_timeout_s", 60.0, "give up on a packet without $CATXF after this, s", 1.0,
                  600.0),
    ParameterSpec("max_tx_queue", 100, "transmit queue capacity, packets", 1, 10000),
    ParameterSpec("diagnostics_period_s", 1.0, "period of /diagnostics, s", 0.1, 60.0),
    ParameterSpec("modem_log_dir", "~/acomms_logs", "directory of pyacomms' NMEA log files"),
)


def parse_modem_config(text: str) -> dict:
    """modem_config YAML to a flat {name: scalar} dict; ValueError with the reason."""
    try:
        value = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ValueError(f"modem_config is not YAML: {exc}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("modem_config must be a YAML mapping of name: value")
    result = {}
    for name, item in value.items():
        if isinstance(item, (dict, list)) or item is None:
            raise ValueError(f"modem_config[{name!r}] must be a scalar")
        if isinstance(item, bool):
            item = int(item)
        result[str(name)] = item
    return result


_INT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
               "uint16": (0, 65535), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1)}


def to_time(unix_seconds: float) -> Time:
    if not math.isfinite(unix_seconds) or unix_seconds < 0:
        return Time()
    sec = int(unix_seconds)
    return Time(sec=sec, nanosec=min(999_999_999, int(round((unix_seconds - sec) * 1e9))))


def fill_message(msg, values: dict):
    """Copy values into msg's fields of the same name, clamping integers to the field type."""
    for name, field_type in msg.get_fields_and_field_types().items():
        if name not in values or values[name] is None:
            continue
        value = values[name]
        if field_type == "builtin_interfaces/Time":
            setattr(msg, name, to_time(float(value)))
        elif field_type in _INT_RANGES:
            low, high = _INT_RANGES[field_type]
            setattr(msg, name, max(low, min(high, int(value))))
        elif field_type in ("float", "double"):
            setattr(msg, name, float(value))
    return msg


class AcommsDriverNode(LifecycleNode):
    def __init__(self, node_name: str = "acomms_driver_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self.params = declare_parameters(self, PARAMETERS, self._validate, self._apply)
        self.client: MicromodemClient | None = None
        self._topic_publishers: dict = {}
        self._service_servers: list = []
        self._nmea_subscription = None
        self._diagnostics_timer = None
        self._active = False
        self.counters: dict[str, int] = {"bad_requests": 0, "nmea_to_modem_refused": 0}

    # ------------------------------------------------------------------ parameters
    def _validate(self, values: dict) -> str | None:
        """Pure: may these merged candidate values be used? (Applied later by _apply.)"""
        if values.get("modem_connection_type") not in CONNECTION_TYPES:
            return f"modem_connection_type must be one of {CONNECTION_TYPES}"
        try:
            parse_modem_config(str(values.get("modem_config", "{}")))
        except ValueError as exc:
            return str(exc)
        if values.get("reconnect_initial_s", 0) > values.get("reconnect_max_s", 1e9):
            return "reconnect_initial_s must not exceed reconnect_max_s"
        current = getattr(self, "params", None)
        if current is not None and getattr(self, "_active", False):
            names = sorted(n for n in LINK_PARAMETERS if values.get(n) != current.get(n))
            if names:
                return f"{names} cannot change while active: deactivate, set, activate"
        return None

    def _apply(self, values: dict, changed: frozenset) -> None:
        self.params = dict(values)
        self._apply_runtime(changed, parse_modem_config(values["modem_config"]))

    def _apply_runtime(self, change: frozenset, modem_config: dict) -> None:
        client = self.client
        if client is None:
            return
        settings = client.settings
        settings.use_legacy_packets = self.params["use_legacy_packets"]
        settings.use_tdp = self.params["use_tdp"]
        settings.publish_partial_packets = self.params["publish_partial_packets"]
        settings.set_modem_time = self.params["set_modem_time"]
        settings.reconnect_initial_s = self.params["reconnect_initial_s"]
        settings.reconnect_max_s = self.params["reconnect_max_s"]
        settings.silence_timeout_s = self.params["modem_silence_timeout_s"]
        settings.handshake_timeout_s = self.params["handshake_timeout_s"]
        settings.tx_timeout_s = self.params["tx_timeout_s"]
        settings.max_tx_queue = self.params["max_tx_queue"]
        if "pwramp_txlevel" in change:
            client.set_config("pwramp.txlevel", self.params["pwramp_txlevel"])
        if "modem_config" in change:
            for name, value in modem_config.items():
                client.set_config(name, value)

    def _settings(self) -> ClientSettings:
        p = self.params
        config = {"pwramp.txlevel": p["pwramp_txlevel"]}
        config.update(parse_modem_config(p["modem_config"]))

        def link_factory():
            return make_link(p["modem_connection_type"], serial_port=p["modem_serial_port"],
                             baud_rate=p["modem_baud_rate"], remote_host=p["modem_remote_host"],
                             remote_port=p["modem_remote_port"], local_host=p["modem_local_host"],
                             local_port=p["modem_local_port"])

        return ClientSettings(
            link_factory=link_factory, modem_config=config, set_modem_time=p["set_modem_time"],
            use_legacy_packets=p["use_legacy_packets"], use_tdp=p["use_tdp"],
            publish_partial_packets=p["publish_partial_packets"],
            reconnect_initial_s=p["reconnect_initial_s"], reconnect_max_s=p["reconnect_max_s"],
            silence_timeout_s=p["modem_silence_timeout_s"],
            handshake_timeout_s=p["handshake_timeout_s"], tx_timeout_s=p["tx_timeout_s"],
            max_tx_queue=p["max_tx_queue"], log_dir=p["modem_log_dir"],
            name="".join(c if c.isalnum() else "_" for c in self.get_fully_qualified_name()))

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            settings = self._settings()
            settings.link_factory()  # validates the connection type now, opens nothing
            callbacks = ClientCallbacks(
                on_packet_rx=self._on_packet_rx, on_cst=self._on_cst, on_xst=self._on_xst,
                on_transmit=self._on_transmit, on_nmea=self._on_nmea,
                on_connection=self._on_connection, on_log=self._on_log)
            self.client = MicromodemClient(settings, callbacks)
        except (ValueError, OSError) as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        pub = self.create_lifecycle_publisher
        self._topic_publishers = {
            "packet_rx": pub(ReceivedPacket, "packet_rx", 10),
            "cst": pub(CST, "cst", 10),
            "xst": pub(XST, "xst", 10),
            "transmit": pub(TransmittedPacket, "transmit", 10),
            "ping_reply": pub(PingReply, "ping_reply", 10),
            "nmea_from_modem": pub(String, "nmea_from_modem", 100),
            "diagnostics": pub(DiagnosticArray, "/diagnostics", 10),
        }
        quick = MutuallyExclusiveCallbackGroup()
        self._service_servers = [
            self.create_service(QueueTxPacket, "queue_tx_packet", self._handle_queue_tx_packet,
                                callback_group=quick),
            self.create_service(QueryModemSrc, "query_modem_src", self._handle_query_modem_src,
                                callback_group=quick),
            # A ping blocks for up to its timeout: its own reentrant group keeps others going.
            self.create_service(PingModem, "ping_modem", self._handle_ping_modem,
                                callback_group=ReentrantCallbackGroup()),
        ]
        self._nmea_subscription = self.create_subscription(String, "nmea_to_modem",
                                                      self._on_nmea_to_modem, 100,
                                                      callback_group=quick)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._active = True
        result = super().on_activate(state)
        self.client.start()
        self._diagnostics_timer = self.create_timer(self.params["diagnostics_period_s"],
                                        self._publish_diagnostics)
        return result

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._active = False
        if self._diagnostics_timer is not None:
            self.destroy_timer(self._diagnostics_timer)
            self._diagnostics_timer = None
        if self.client is not None:
            self.client.stop()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._active = False
        if self._diagnostics_timer is not None:
            self.destroy_timer(self._diagnostics_timer)
            self._diagnostics_timer = None
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def _release(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        for publisher in self._topic_publishers.values():
            self.destroy_lifecycle_publisher(publisher)
        self._topic_publishers = {}
        for service in self._service_servers:
            self.destroy_service(service)
        self._service_servers = []
        if self._nmea_subscription is not None:
            self.destroy_subscription(self._nmea_subscription)
            self._nmea_subscription = None

    def destroy_node(self):
        # getattr: rclpy may destroy a node whose constructor raised (refused parameters)
        # before `client` existed.
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
            self.client = None
        return super().destroy_node()

    # ------------------------------------------------------------------ client callbacks
    def _publish(self, name: str, msg) -> None:
        publisher = self._topic_publishers.get(name)
        if publisher is not None and self._active:
            publisher.publish(msg)

    def _on_log(self, level: str, message: str) -> None:
        logger = self.get_logger()
        {"error": logger.error, "warn": logger.warning}.get(level, logger.info)(message)

    def _on_connection(self, connected: bool, reason: str) -> None:
        self._publish_diagnostics()

    def _on_nmea(self, raw: str) -> None:
        self._publish("nmea_from_modem", String(data=raw))

    def _on_cst(self, values: dict) -> None:
        self._publish("cst", fill_message(CST(), values))

    def _on_xst(self, values: dict) -> None:
        self._publish("xst", fill_message(XST(), values))

    def _on_transmit(self, packet: ModemPacket, xst: dict) -> None:
        self._publish("transmit", TransmittedPacket(
            header=Header(stamp=self.get_clock().now().to_msg()),
            packet=self._packet_msg(packet, self.client.modem_src if self.client else -1),
            xst=fill_message(XST(), xst)))

    def _on_packet_rx(self, received: ReceivedModemPacket) -> None:
        msg = ReceivedPacket(header=Header(stamp=self.get_clock().now().to_msg()),
                             packet=self._packet_msg(received.packet, received.packet.src),
                             minibytes_valid=received.minibytes_valid,
                             databytes_valid=received.databytes_valid)
        if received.cst is not None:
            msg.cst = fill_message(CST(), received.cst)
        self._publish("packet_rx", msg)

    @staticmethod
    def _packet_msg(packet: ModemPacket, src: int) -> Packet:
        return Packet(src=max(-32768, min(32767, int(src))), dest=int(packet.dest),
                      packet_type=int(packet.packet_type),
                      miniframe_rate=int(packet.miniframe_rate),
                      dataframe_rate=int(packet.dataframe_rate),
                      miniframe_bytes=bytes(packet.miniframe_bytes),
                      dataframe_bytes=bytes(packet.dataframe_bytes))

    # ------------------------------------------------------------------ services / topics
    def _inactive_reason(self) -> str | None:
        if self.client is None or not self._active:
            return "driver is not active"
        return None

    def _handle_queue_tx_packet(self, request, response):
        reason = self._inactive_reason()
        if reason is None:
            p = request.packet
            if request.queue not in (0, QueueTxPacket.Request.QUEUE_IMMEDIATE):
                reason = f"queue {request.queue} (PPS / TXTRIG) is not supported; use " \
                         f"QUEUE_IMMEDIATE"
            else:
                packet = ModemPacket(
                    src=p.src, dest=p.dest if p.dest >= 0 else self.params["default_modem_dest"],
                    packet_type=p.packet_type, miniframe_rate=p.miniframe_rate,
                    dataframe_rate=p.dataframe_rate, miniframe_bytes=bytes(p.miniframe_bytes),
                    dataframe_bytes=bytes(p.dataframe_bytes))
                ok, position, reason = self.client.queue_packet(packet, request.insert_at_head)
                if ok:
                    response.success = True
                    response.position_in_queue = position
                    return response
        self.counters["bad_requests"] += 1
        self.get_logger().warning(f"queue_tx_packet refused: {reason}")
        response.success = False
        response.position_in_queue = -1
        return response

    def _handle_query_modem_src(self, request, response):
        response.src = self.client.modem_src if self.client is not None else -1
        return response

    def _handle_ping_modem(self, request, response):
        reason = self._inactive_reason()
        if reason is not None:
            self.get_logger().warning(f"ping_modem refused: {reason}")
            response.timed_out = True
            return response
        result = self.client.ping(request.dest, request.rate, request.cdr, bytes(request.hexdata),
                                  max(1.0, float(request.timeout_sec)))
        response.timed_out = result.timed_out
        if result.timed_out:
            self.get_logger().info(f"ping to {request.dest}: {result.reason}")
            return response
        response.one_way_travel_time = result.one_way_travel_time
        tat = float(self.client.modem.config_data.get("TAT", 0) or 0) / 1000.0
        response.tat = tat
        response.txlevel = max(-128, min(127, result.tx_level))
        response.timestamp_resolution = max(-128, min(127, result.timestamp_resolution))
        response.toa_mode = max(-128, min(127, result.toa_mode))
        response.snv_on = max(-128, min(127, result.snv_on))
        response.timestamp = max(0, min(2**32 - 1, result.timestamp))
        if result.cst is not None:
            response.cst = fill_message(CST(), result.cst)
        reply = fill_message(PingReply(), {
            "src": result.src, "dest": result.dest, "owtt": result.one_way_travel_time,
            "tat": tat, "snr_in": result.snr_in, "snr_out": result.snr_out,
            "tx_level": result.tx_level, "timestamp_res": result.timestamp_resolution,
            "toa_mode": result.toa_mode, "snv_on": result.snv_on,
            "timestamp": result.timestamp})
        reply.header.stamp = self.get_clock().now().to_msg()
        reply.cst = response.cst
        self._publish("ping_reply", reply)
        return response

    def _on_nmea_to_modem(self, msg: String) -> None:
        reason = self._inactive_reason() or self.client.send_sentence(msg.data)
        if reason:
            self.counters["nmea_to_modem_refused"] += 1
            self.get_logger().warning(f"nmea_to_modem {msg.data[:60]!r} refused: {reason}")

    # ------------------------------------------------------------------ diagnostics
    def diagnostic_status(self) -> DiagnosticStatus:
        client = self.client
        status = DiagnosticStatus(name=f"{self.get_fully_qualified_name()}: modem link")
        if client is None:
            status.level, status.message = DiagnosticStatus.STALE, "not configured"
            return status
        link = client.settings.link_factory()
        status.hardware_id = link.description
        age = client.last_sentence_age()
        if client.connected:
            status.level = DiagnosticStatus.WARN if client.unconfirmed_config else \
                DiagnosticStatus.OK
            status.message = "connected" + (
                f"; modem did not confirm {client.unconfirmed_config}"
                if client.unconfirmed_config else "")
        else:
            status.level = DiagnosticStatus.ERROR
            status.message = f"disconnected: {client.last_reason}"
        values = {
            "connected": str(client.connected).lower(),
            "last_sentence_age_s": "inf" if math.isinf(age) else f"{age:.3f}",
            "tx_queue_length": str(client.queue_length()),
            "modem_src": str(client.modem_src),
            "firmware_version": client.firmware_version,
            "last_reason": client.last_reason,
        }
        values.update({f"lines_{k}": str(v) for k, v in client.reader.counters.as_dict().items()})
        values.update({k: str(v) for k, v in sorted(client.counters.items())})
        values.update({k: str(v) for k, v in self.counters.items()})
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        return status

    def _publish_diagnostics(self) -> None:
        if not self._active:
            return
        array = DiagnosticArray(status=[self.diagnostic_status()])
        array.header.stamp = self.get_clock().now().to_msg()
        self._publish("diagnostics", array)

    @property
    def is_active(self) -> bool:
        return self._state_machine.current_state[0] == State.PRIMARY_STATE_ACTIVE


def main(args=None) -> int:
    return run_node(AcommsDriverNode, args)
