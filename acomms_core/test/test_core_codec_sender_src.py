"""A decoded message's `src` is the received packet's SRC when the codec config leaves the field
out (issue 26: the receiver of a file logged "from 0"); nothing more goes on the wire."""

from __future__ import annotations

from bitstring import ConstBitStream

from acomms_core.codecs.message_codec import MessageCodec
from acomms_interfaces.msg import FileTransfer, Packet, ReceivedPacket

FIELDS = {"dest": {"codec": "dest"}, "name": {"codec": "string", "max_length": 16},
          "data": {"codec": "bytes", "max_length": 32}}


def test_src_comes_from_the_packet_without_a_src_field():
    plain = MessageCodec(FileTransfer, dict(FIELDS))
    filled = MessageCodec(FileTransfer, dict(FIELDS), sender_src=True)
    msg = FileTransfer(dest=2, src=9, name="plan.txt", data=list(b"leg 1"))
    bits, _ = filled.encode(msg)
    assert bits == plain.encode(msg)[0]                      # the same bits on the wire
    assert (filled.min_length_bits, filled.max_length_bits) == (
        plain.min_length_bits, plain.max_length_bits)
    received = ReceivedPacket(packet=Packet(src=7, dest=2))
    assert filled.decode(ConstBitStream(bits), received).src == 7
    assert plain.decode(ConstBitStream(bits), received).src == 0
    assert filled.decode(ConstBitStream(bits)).src == 0       # no packet: nothing to fill in
    decoded = filled.decode(ConstBitStream(bits), received)
    assert (decoded.dest, decoded.name, bytes(decoded.data)) == (2, "plan.txt", b"leg 1")


def test_a_configured_src_field_is_left_alone():
    sent_src = MessageCodec(FileTransfer, {**FIELDS, "src": {"codec": "uint8"}}, sender_src=True)
    bits, _ = sent_src.encode(FileTransfer(dest=2, src=9, name="a", data=[1]))
    received = ReceivedPacket(packet=Packet(src=7, dest=2))
    assert sent_src.decode(ConstBitStream(bits), received).src == 9
