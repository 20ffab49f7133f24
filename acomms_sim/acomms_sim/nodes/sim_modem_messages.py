"""ROS messages <-> the plain data of `acomms_sim.modem.fields` (for modem_sim_node).

Message fields narrower than a Python float (float32 levels, depths, frequencies; nanosecond
stamps) are narrowed when a message is built, so that a message holds what its subscribers
take (the node publishes them with `publish_shared`: in-process subscribers get the object
itself), and read back as they arrive.
"""

from __future__ import annotations

import dataclasses
import functools

from acomms_core.ros.ros_support import seconds_to_duration_msg, seconds_to_time_msg, stamp_seconds
from acomms_core.ros.shared_messages import narrowed
from acomms_interfaces.msg import (
    CST,
    XST,
    Packet,
    PingReply,
    ReceivedPacket,
    ReceptionStart,
    SimPacket,
    SimReceptionEvent,
    TransmittedPacket,
)
from acomms_sim.modem.fields import (
    ChannelPacket,
    CstFields,
    ModemPacket,
    PacketReceived,
    PingReplyFields,
    ReceptionEvent,
    ReceptionStarted,
    TransmissionStarted,
    XstFields,
)


def packet_from_msg(msg: Packet) -> ModemPacket:
    return ModemPacket(int(msg.src), int(msg.dest), int(msg.packet_type), int(msg.miniframe_rate),
                       int(msg.dataframe_rate), bytes(msg.miniframe_bytes),
                       bytes(msg.dataframe_bytes))


def packet_to_msg(packet: ModemPacket) -> Packet:
    return Packet(src=packet.src, dest=packet.dest, packet_type=packet.packet_type,
                  miniframe_rate=packet.miniframe_rate, dataframe_rate=packet.dataframe_rate,
                  miniframe_bytes=packet.miniframe_bytes, dataframe_bytes=packet.dataframe_bytes)


@functools.cache
def _field_names(cls) -> tuple[str, ...]:
    """A dataclass's field names, looked up once per class (these run for every reception)."""
    return tuple(f.name for f in dataclasses.fields(cls))


def _scalar_fields(record) -> dict:
    """{field: value} of a dataclass whose fields are all scalars: what dataclasses.asdict
    gives for it, without its recursive deep copy (a third of a message's cost; these run for
    every reception of every receiver)."""
    return {name: getattr(record, name) for name in _field_names(type(record))}


_LAST_CST: tuple = (None, None)  # (CstFields, its message): a reception's CST report and its
# packet carry the same fields (frozen), and the packet's message takes the report's CST


def cst_to_msg(cst: CstFields) -> CST:
    global _LAST_CST
    last = _LAST_CST
    if last[0] is cst:
        return last[1]
    values = narrowed(CST, _scalar_fields(cst))
    toa = values.pop("toa_s")
    msg = CST(toa=seconds_to_time_msg(toa), **values)
    _LAST_CST = (cst, msg)
    return msg


_CST_NAMES = tuple(name for name in _field_names(CstFields) if name != "toa_s")


def cst_from_msg(msg: CST) -> CstFields:
    return CstFields(toa_s=stamp_seconds(msg.toa), **{name: getattr(msg, name)
                                                      for name in _CST_NAMES})


def xst_to_msg(xst: XstFields) -> XST:
    values = _scalar_fields(xst)
    time_s = values.pop("time_s")
    return XST(time=seconds_to_time_msg(time_s), **values)


def ping_reply_to_msg(reply: PingReplyFields | None) -> PingReply:
    if reply is None:
        return PingReply()
    msg = PingReply(**narrowed(PingReply, dict(
        src=reply.src, dest=reply.dest, tat=reply.tat_s, snr_in=reply.snr_in,
        snr_out=reply.snr_out, tx_level=reply.tx_level)))
    if reply.cst is not None:
        msg.cst = cst_to_msg(reply.cst)
    return msg


def ping_reply_from_msg(msg: PingReply) -> PingReplyFields:
    return PingReplyFields(int(msg.src), int(msg.dest), float(msg.tat), float(msg.snr_in),
                           float(msg.snr_out), int(msg.tx_level), cst_from_msg(msg.cst))


def sim_packet_to_msg(packet: ChannelPacket) -> SimPacket:
    east, north, up = packet.src_velocity_mps or (0.0, 0.0, 0.0)
    return SimPacket(
        **narrowed(SimPacket, dict(
            src_velocity_east_mps=float(east), src_velocity_north_mps=float(north),
            src_velocity_up_mps=float(up), src_depth=float(packet.src_depth_m),
            src_tx_level_db=float(packet.source_level_db),
            center_frequency_hz=float(packet.center_frequency_hz),
            bandwidth_hz=float(packet.bandwidth_hz))),
        src_latitude=packet.src_latitude, src_longitude=packet.src_longitude,
        transmit_time=seconds_to_time_msg(packet.transmit_time_s),
        transmit_duration=seconds_to_duration_msg(packet.duration_s),
        packet=packet_to_msg(packet.packet), ping_type=packet.ping_type,
        ping_transaction_start=seconds_to_time_msg(packet.ping_transaction_start_s),
        ping_reply=ping_reply_to_msg(packet.ping_reply))


_LAST_SIM_PACKET: tuple = (None, None)  # (SimPacket message, its ChannelPacket): the modems of
# a process are all handed the same message (`publish_shared`), converted once


def sim_packet_from_msg(msg: SimPacket) -> ChannelPacket:
    global _LAST_SIM_PACKET
    last = _LAST_SIM_PACKET
    if last[0] is msg:
        return last[1]
    packet = _channel_packet(msg)
    _LAST_SIM_PACKET = (msg, packet)
    return packet


def _channel_packet(msg: SimPacket) -> ChannelPacket:
    return ChannelPacket(
        packet_from_msg(msg.packet), msg.src_latitude, msg.src_longitude, float(msg.src_depth),
        float(msg.src_tx_level_db), float(msg.center_frequency_hz), float(msg.bandwidth_hz),
        stamp_seconds(msg.transmit_time), stamp_seconds(msg.transmit_duration),
        int(msg.ping_type), stamp_seconds(msg.ping_transaction_start),
        ping_reply_from_msg(msg.ping_reply),
        (float(msg.src_velocity_east_mps), float(msg.src_velocity_north_mps),
         float(msg.src_velocity_up_mps)))


def transmitted_msg(event: TransmissionStarted, stamp) -> TransmittedPacket:
    msg = TransmittedPacket(packet=packet_to_msg(event.packet), xst=xst_to_msg(event.xst))
    msg.header.stamp = stamp
    return msg


def received_msg(event: PacketReceived, stamp) -> ReceivedPacket:
    msg = ReceivedPacket(packet=packet_to_msg(event.packet),
                         minibytes_valid=event.minibytes_valid,
                         databytes_valid=event.databytes_valid, cst=cst_to_msg(event.cst))
    msg.header.stamp = stamp
    return msg


def reception_event_msg(event: ReceptionEvent, stamp) -> SimReceptionEvent:
    values = narrowed(SimReceptionEvent, _scalar_fields(event))
    times = {"transmit_time": seconds_to_time_msg(values.pop("transmit_time_s")),
             "arrival_time": seconds_to_time_msg(values.pop("arrival_time_s")),
             "duration": seconds_to_duration_msg(values.pop("duration_s"))}
    msg = SimReceptionEvent(**values, **times)
    msg.header.stamp = stamp
    return msg


def reception_start_msg(event: ReceptionStarted, stamp) -> ReceptionStart:
    msg = ReceptionStart(arrival_time=seconds_to_time_msg(event.arrival_time_s),
                         expected_duration=seconds_to_duration_msg(event.duration_s),
                         src=event.src, packet_type=event.packet_type, rate=event.rate,
                         carrier=event.carrier_hz)
    msg.header.stamp = stamp
    return msg
