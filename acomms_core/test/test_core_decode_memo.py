"""A packet heard by many receivers of one process is decoded once (issue 30: at 64 vehicles the
dispatch nodes decoded every broadcast 63 times), but only where decoding depends on the bits
alone: a codec that reads the received packet (its SRC, TOA) still decodes per receiver."""

from __future__ import annotations

from acomms_core.codecs.message_codec import MessageCodec
from acomms_core.codecs.ros_packet_codec import RosPacketCodec
from acomms_interfaces.msg import FileTransfer, Packet, ReceivedPacket

FIELDS = {"dest": {"codec": "uint8"}, "name": {"codec": "string", "max_length": 16},
          "data": {"codec": "bytes", "max_length": 32}}


def _packet(codec: MessageCodec, msg) -> tuple[bytes, bytes]:
    bits, _ = codec.encode(msg)
    return RosPacketCodec().pack([(5, bits)], 32, 64)


def test_receivers_with_equal_configs_share_one_decode_and_get_their_own_result():
    message = FileTransfer(dest=2, src=0, name="plan.txt", data=list(b"leg 1"))
    first, second = MessageCodec(FileTransfer, dict(FIELDS)), MessageCodec(FileTransfer,
                                                                          dict(FIELDS))
    assert first.decode_key is not None and first.decode_key == second.decode_key
    mini, data = _packet(first, message)
    a = RosPacketCodec().decode(mini, data, {5: first}, ReceivedPacket(packet=Packet(src=7)))
    b = RosPacketCodec().decode(mini, data, {5: second}, ReceivedPacket(packet=Packet(src=8)))
    assert [m for _, m in a.messages] == [message]
    assert b.messages[0][1] is a.messages[0][1]       # decoded once: the same message object
    a.counters["auth_ok"] = 1                          # what a wrapping codec does to its result
    a.src = 3
    c = RosPacketCodec().decode(mini, data, {5: second})
    assert c.counters == {} and c.src is None


def test_a_codec_that_reads_the_packet_decodes_for_each_receiver():
    filled = MessageCodec(FileTransfer, dict(FIELDS), sender_src=True)
    assert filled.decode_key is None
    assert MessageCodec(FileTransfer, {**FIELDS, "dest": {"codec": "dest"}}).decode_key is None
    plain = MessageCodec(FileTransfer, dict(FIELDS))
    codecs = {5: filled, 6: plain}  # as the demo's codecs: one of them reads the packet

    def decoded(packet: tuple[bytes, bytes], src: int):
        return RosPacketCodec().decode(*packet, codecs,
                                       ReceivedPacket(packet=Packet(src=src))).messages[0][1]

    uses_filled = _packet(filled, FileTransfer(dest=2, src=9, name="a", data=[1]))
    assert [decoded(uses_filled, src).src for src in (7, 8, 7)] == [7, 8, 7]
    bits, _ = plain.encode(FileTransfer(dest=2, name="b", data=[2]))
    uses_plain = RosPacketCodec().pack([(6, bits)], 32, 64)
    assert decoded(uses_plain, 7) is decoded(uses_plain, 8)  # only the plain codec read it


def test_different_configs_or_validity_are_not_confused():
    message = FileTransfer(dest=2, name="plan.txt", data=list(b"leg 1"))
    codec = MessageCodec(FileTransfer, dict(FIELDS))
    mini, data = _packet(codec, message)
    longer = MessageCodec(FileTransfer, {**FIELDS, "name": {"codec": "string",
                                                            "max_length": 20}})
    assert longer.decode_key != codec.decode_key
    whole = RosPacketCodec().decode(mini, data, {5: codec})
    assert whole.messages and not whole.invalid_bytes
    cut = RosPacketCodec().decode(mini, data, {5: codec}, minibytes_valid=[0, 1],
                                  databytes_valid=[0, 0])
    assert not cut.messages and cut.invalid_bytes == 1
    # a longer header shifts the payload: another decode, not the one above
    shifted = RosPacketCodec(miniframe_header=b"\xac\x05").decode(mini, data, {5: codec})
    assert shifted.messages != whole.messages
