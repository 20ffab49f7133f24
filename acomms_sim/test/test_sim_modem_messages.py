"""The plain SimModem data and the acomms_interfaces messages stay in step (no node needed)."""

import dataclasses

import pytest
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message

from acomms_interfaces.msg import CST, XST, SimPacket, SimReceptionEvent
from acomms_sim.modem import fields
from acomms_sim.nodes import sim_modem_messages as messages


def test_constants_match_the_messages():
    assert (fields.PING_TYPE_NONE, fields.PING_TYPE_REQUEST, fields.PING_TYPE_REPLY) == (
        SimPacket.PING_TYPE_NONE, SimPacket.PING_TYPE_REQUEST, SimPacket.PING_TYPE_REPLY)
    outcomes = {SimReceptionEvent.OUTCOME_RECEIVED, SimReceptionEvent.OUTCOME_PARTIAL,
                SimReceptionEvent.OUTCOME_FRAME_ERRORS, SimReceptionEvent.OUTCOME_UNDETECTED,
                SimReceptionEvent.OUTCOME_HALF_DUPLEX}
    assert outcomes == {"received", "partial", "frame_errors", "undetected", "half_duplex"}
    for plain, msg in ((fields.CstFields, CST), (fields.XstFields, XST)):
        names = {f.name for f in dataclasses.fields(plain)} - {"toa_s", "time_s"}
        assert names <= set(msg.get_fields_and_field_types())


def test_sim_packet_round_trip():
    cst = fields.CstFields(6, 0, 12.5, 1, 2, 1, 0, 5, 2, 0, 120, 120, 31.5, 31.5, 50, 10000,
                           5000, 1, 2, 0)
    packet = fields.ChannelPacket(
        fields.ModemPacket(2, 1, 3, 1, 1, b"\x01", b"\x02\x03"), 41.5, -70.7, 20.0, 185.0,
        10000.0, 5000.0, 100.25, 1.574, fields.PING_TYPE_REPLY, 99.5,
        fields.PingReplyFields(2, 1, 0.25, 31.5, 31.5, 0, cst))
    back = messages.sim_packet_from_msg(messages.sim_packet_to_msg(packet))
    assert back.packet == packet.packet and back.ping_reply == packet.ping_reply
    assert back.transmit_time_s == pytest.approx(100.25)
    assert back.duration_s == pytest.approx(1.574)
    assert back.ping_transaction_start_s == pytest.approx(99.5)
    assert messages.cst_from_msg(messages.cst_to_msg(cst)) == cst


def _as_taken(msg):
    """What a subscriber in another process takes."""
    return deserialize_message(serialize_message(msg), type(msg))


def test_published_messages_hold_what_their_subscribers_take():
    """modem_sim_node publishes these with `publish_shared`: in-process subscribers get the
    object itself, so it must equal what the bytes give (float32 fields narrowed)."""
    wide = 1.0 / 3.0  # not a float32
    cst = fields.CstFields(6, 0, wide, 1, 2, 1, 0, 5, 2, 0, 120, 120, wide, -wide, 50, 10000,
                           5000, 1, 2, 0, dop=wide)
    packet = fields.ChannelPacket(
        fields.ModemPacket(2, 1, 3, 1, 1, b"\x01", b"\x02\x03"), 41.5 + wide, -70.7, 20.0 + wide,
        185.0 + wide, 10000.0 + wide, 5000.0 + wide, 100.25, 1.574, fields.PING_TYPE_REPLY,
        99.5, fields.PingReplyFields(2, 1, wide, wide, -wide, 0, cst), (wide, -wide, wide))
    event = fields.ReceptionEvent(3, 2, 1, "received", False, 0, 100.25 + wide, 101.0 + wide,
                                  1.574, wide, 150.0 + wide, 60.0 + wide, -wide, 70.0 + wide,
                                  1234.5 + wide, 3, 0, 64, wide, wide, wide)
    received = fields.PacketReceived(packet.packet, [1], [1, 1], cst)
    stamp = Time(sec=5, nanosec=7)
    xst = fields.XstFields(6, 100.25 + wide, 0, 5000, 10000, 10000, 1, 2, 1, 0, 1, 1, 3, 2)
    transmitted = fields.TransmissionStarted(packet, xst)
    for msg in (messages.cst_to_msg(cst), messages.sim_packet_to_msg(packet),
                messages.transmitted_msg(transmitted, stamp),
                messages.reception_event_msg(event, stamp),
                messages.received_msg(received, stamp)):
        assert repr(_as_taken(msg)) == repr(msg)


def test_the_modems_handed_one_message_share_one_conversion():
    packet = fields.ChannelPacket(fields.ModemPacket(2, 1, 3, 1, 1, b"\x01", b""), 41.5, -70.7,
                                  20.0, 185.0, 10000.0, 5000.0, 100.25, 1.574)
    msg = messages.sim_packet_to_msg(packet)
    first = messages.sim_packet_from_msg(msg)
    assert messages.sim_packet_from_msg(msg) is first  # the next modem handed the same object
    again = messages.sim_packet_from_msg(_as_taken(msg))  # an equal message from elsewhere
    assert again == first and again is not first
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.src_depth_m = 30.0  # shared: nobody may change it
