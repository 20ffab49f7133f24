"""Between the Micromodem client's plain values and acomms_interfaces / diagnostic_msgs messages.

No node state here: the driver node calls these with the client's results.
"""

from __future__ import annotations

import math

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from std_msgs.msg import Header

from acomms_core.ros.ros_support import is_active, seconds_to_time_msg
from acomms_driver.micromodem.client_config import PingResult, ReceivedModemPacket
from acomms_driver.micromodem.micromodem_client import MicromodemClient
from acomms_driver.micromodem.packet_rules import QUEUE_IMMEDIATE, ModemPacket
from acomms_interfaces.msg import CST, ModemAck, Packet, PingReply, ReceivedPacket

# A $CAERR keeps /diagnostics at WARN this long.
RECENT_ERROR_S = 30.0

_INT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
               "uint16": (0, 65535), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1)}


def _clamp(value: int, field_type: str) -> int:
    low, high = _INT_RANGES[field_type]
    return max(low, min(high, int(value)))


def _time(unix_seconds: float) -> Time:
    """A modem timestamp; an unset (negative, NaN) one becomes the zero Time."""
    if not math.isfinite(unix_seconds) or unix_seconds < 0:
        return Time()
    return seconds_to_time_msg(unix_seconds)


def fill_message(msg, values: dict):
    """Copy values into msg's fields of the same name, clamping integers to the field type."""
    for name, field_type in msg.get_fields_and_field_types().items():
        if name not in values or values[name] is None:
            continue
        value = values[name]
        if field_type == "builtin_interfaces/Time":
            setattr(msg, name, _time(float(value)))
        elif field_type in _INT_RANGES:
            setattr(msg, name, _clamp(value, field_type))
        elif field_type in ("float", "double"):
            setattr(msg, name, float(value))
    return msg


def packet_msg(packet: ModemPacket, src: int) -> Packet:
    return Packet(src=_clamp(src, "int16"), dest=int(packet.dest),
                  packet_type=int(packet.packet_type), miniframe_rate=int(packet.miniframe_rate),
                  dataframe_rate=int(packet.dataframe_rate),
                  miniframe_bytes=bytes(packet.miniframe_bytes),
                  dataframe_bytes=bytes(packet.dataframe_bytes))


def modem_packet(msg: Packet, default_dest: int, ack: bool = False,
                 queue: int = QUEUE_IMMEDIATE) -> ModemPacket:
    """A requested packet; dest < 0 means default_dest."""
    return ModemPacket(src=msg.src, dest=msg.dest if msg.dest >= 0 else default_dest,
                       packet_type=msg.packet_type, miniframe_rate=msg.miniframe_rate,
                       dataframe_rate=msg.dataframe_rate,
                       miniframe_bytes=bytes(msg.miniframe_bytes),
                       dataframe_bytes=bytes(msg.dataframe_bytes), ack=bool(ack),
                       queue=QUEUE_IMMEDIATE if queue == 0 else int(queue))


def received_packet_msg(received: ReceivedModemPacket, stamp: Time) -> ReceivedPacket:
    msg = ReceivedPacket(packet=packet_msg(received.packet, received.packet.src),
                         minibytes_valid=received.minibytes_valid,
                         databytes_valid=received.databytes_valid,
                         ack_requested=bool(received.packet.ack))
    msg.header.stamp = stamp
    if received.cst is not None:
        msg.cst = fill_message(CST(), received.cst)
    return msg


IMMEDIATE_QUEUES = (0, QUEUE_IMMEDIATE)  # what a driver without modem-side queues accepts


def immediate_queue_refusal(transport, active: bool, request) -> str | None:
    """Why a driver that sends at once (UDP link, S2C) refuses this queue_tx_packet request before
    looking at the packet: not active, or a modem-side queue it does not have; None: go on."""
    if transport is None or not active:
        return "driver is not active"
    if request.queue not in IMMEDIATE_QUEUES:
        return f"queue {request.queue} is not supported; use QUEUE_IMMEDIATE"
    return None


def publish_when_active(node, publishers: dict, name: str, msg) -> None:
    """Publish msg on publishers[name] if the node has that topic and is active: a driver's
    client calls back from its own threads, also while the node is deactivating."""
    publisher = publishers.get(name)
    if publisher is not None and is_active(node):
        publisher.publish(msg)


def log_at_level(logger, level: str, text: str) -> None:
    """A driver client's on_log(level, text) on a ROS logger: "error", "warn", anything else at
    info. One call site per severity: rclpy refuses (ValueError) a call site whose severity
    changes between calls."""
    if level == "error":
        logger.error(text)
    elif level == "warn":
        logger.warning(text)
    else:
        logger.info(text)


def answer_queue_request(response, position: int, reason: str | None, logger, counters: dict):
    """QueueTxPacket.Response for a queued packet (reason None) or a refusal, which is counted
    in counters["bad_requests"] and logged as `queue_tx_packet refused: <reason>` (the wording
    the modem contract checks)."""
    response.position_in_queue = position
    response.success = reason is None
    if reason is not None:
        counters["bad_requests"] = counters.get("bad_requests", 0) + 1
        logger.warning(f"queue_tx_packet refused: {reason}")
    return response


def fill_ping_response(response, result: PingResult, tat_s: float):
    """PingModem.Response from an answered ping."""
    response.timed_out = False
    response.one_way_travel_time = result.one_way_travel_time
    response.tat = tat_s
    response.txlevel = _clamp(result.tx_level, "int8")
    response.timestamp_resolution = _clamp(result.timestamp_resolution, "int8")
    response.toa_mode = _clamp(result.toa_mode, "int8")
    response.snv_on = _clamp(result.snv_on, "int8")
    response.timestamp = _clamp(result.timestamp, "uint32")
    if result.cst is not None:
        response.cst = fill_message(CST(), result.cst)
    return response


def ping_reply_msg(result: PingResult, tat_s: float, cst: CST, stamp: Time) -> PingReply:
    reply = fill_message(PingReply(), {
        "src": result.src, "dest": result.dest, "owtt": result.one_way_travel_time,
        "tat": tat_s, "snr_in": result.snr_in, "snr_out": result.snr_out,
        "tx_level": result.tx_level, "timestamp_res": result.timestamp_resolution,
        "toa_mode": result.toa_mode, "snv_on": result.snv_on, "timestamp": result.timestamp})
    reply.header.stamp = stamp
    reply.cst = cst
    return reply


def ack_msg(values: dict, stamp: Time) -> ModemAck:
    """ModemAck from acks.parse_caack / parse_cacdr values."""
    msg = fill_message(ModemAck(), {k: v for k, v in values.items() if k != "ack"})
    msg.ack = bool(values.get("ack"))
    msg.header.stamp = stamp
    return msg


def txf_msg(stamp: Time) -> Header:
    """ros_acomms' `txf`: a Header stamped when the modem reported the end of a transmission."""
    msg = Header()
    msg.stamp = stamp
    return msg


def _level_and_message(client: MicromodemClient) -> tuple[bytes, str]:
    """ERROR when not connected or the reader stopped; WARN for unconfirmed settings, a recent
    modem error or a clock that should be set and is not; else OK."""
    if not client.connected:
        return DiagnosticStatus.ERROR, f"disconnected ({client.link_state}): {client.last_reason}"
    if not client.link.reader_alive:
        return DiagnosticStatus.ERROR, "connected but the reader thread stopped"
    problems = []
    if client.unconfirmed_config:
        problems.append(f"modem did not confirm {client.unconfirmed_config}")
    status = client.status
    if status.last_error is not None and status.error_age_s() < RECENT_ERROR_S:
        problems.append(f"modem error: {status.last_error}")
    if client.settings.set_modem_time and not status.clock_set:
        problems.append("modem clock not set")
    message = "; ".join([client.link_state] + problems)
    return (DiagnosticStatus.WARN if problems else DiagnosticStatus.OK), message


def diagnostic_status(name: str, client: MicromodemClient | None,
                      node_counters: dict) -> DiagnosticStatus:
    """The modem link's health: link state, firmware, last errors, clock offset, queue, counts
    per sentence type and every counter."""
    status = DiagnosticStatus(name=name)
    if client is None:
        status.level, status.message = DiagnosticStatus.STALE, "not configured"
        return status
    status.hardware_id = client.settings.link_factory().description
    status.level, status.message = _level_and_message(client)
    age = client.last_sentence_age()
    values = {
        "connected": str(client.connected).lower(),
        "link_state": client.link_state,
        "last_line_error": client.reader.last_error,
        "last_sentence_age_s": "inf" if math.isinf(age) else f"{age:.3f}",
        "tx_queue_length": str(client.queue_length()),
        "modem_src": str(client.modem_src),
        "firmware_version": client.firmware_version,
        "last_reason": client.last_reason,
    }
    values.update(client.status.snapshot())
    values.update({f"lines_{k}": str(v) for k, v in client.reader.counters.as_dict().items()})
    values.update({k: str(v) for k, v in sorted(client.counters.items())})
    values.update({k: str(v) for k, v in node_counters.items()})
    status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
    return status
