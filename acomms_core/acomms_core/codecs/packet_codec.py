"""The `ros` packet codec, bit-compatible with ros_acomms' RosPacketCodec.

Layout of one packet:

    miniframe: [miniframe_header bytes][payload bits 0 .. M)         zero-padded to a byte
    dataframe: [dataframe_header bytes][payload bits M .. end)       zero-padded to a byte
    payload:   ([8-bit message codec id][that message's bits])*     no padding between messages

M is the miniframe budget minus its header, in bits: the payload fills the miniframe first and
spills into the dataframe. Decoding joins the two frames (headers removed) and reads id + message
until fewer than 8 bits remain or an unknown id appears.

Beyond ros_acomms: a frame's header must fit in that frame's budget (otherwise the codec cannot
be used for the request); trailing all-zero bits are padding (unless id 0 is configured); and
partially received packets are decoded message by message against the modem's valid byte
ranges (ReceivedPacket.minibytes_valid / databytes_valid: flat [start, end) pairs; when both
lists are empty the receiver did not report validity and every byte counts as valid).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from bitstring import BitArray, Bits, ConstBitStream

from acomms_core.codecs.message_codec import ChecksumError, DecodeError, MessageCodec

ID_BITS = 8


@dataclasses.dataclass
class PacketDecodeResult:
    """What came out of one packet: messages in packet order and what could not be used."""

    messages: list = dataclasses.field(default_factory=list)  # [(codec id, rclpy message)]
    unknown_ids: int = 0
    checksum_failures: int = 0
    invalid_bytes: int = 0
    decode_errors: int = 0
    errors: list = dataclasses.field(default_factory=list)    # human-readable reasons


def valid_byte_mask(num_bytes: int, ranges: Sequence[int]) -> list[bool]:
    """[start, end) pairs (flat list) -> one bool per byte."""
    mask = [False] * num_bytes
    for i in range(0, len(ranges) - 1, 2):
        start, end = max(int(ranges[i]), 0), min(int(ranges[i + 1]), num_bytes)
        for j in range(start, end):
            mask[j] = True
    return mask


class RosPacketCodec:
    """Pack encoded messages into miniframe/dataframe bytes and back."""

    name = "ros"

    def __init__(self, miniframe_header: bytes = b"\xac", dataframe_header: bytes = b""):
        self.miniframe_header = bytes(miniframe_header)
        self.dataframe_header = bytes(dataframe_header)

    def headers_fit(self, num_miniframe_bytes: int, num_dataframe_bytes: int) -> bool:
        return (len(self.miniframe_header) <= num_miniframe_bytes
                and len(self.dataframe_header) <= num_dataframe_bytes)

    def frame_payload_bits(self, num_miniframe_bytes: int,
                           num_dataframe_bytes: int) -> tuple[int, int]:
        """Payload bits available in (miniframe, dataframe); (0, 0) if a header does not fit."""
        if not self.headers_fit(num_miniframe_bytes, num_dataframe_bytes):
            return 0, 0
        return (8 * (num_miniframe_bytes - len(self.miniframe_header)),
                8 * (num_dataframe_bytes - len(self.dataframe_header)))

    def payload_capacity_bits(self, num_miniframe_bytes: int, num_dataframe_bytes: int) -> int:
        return sum(self.frame_payload_bits(num_miniframe_bytes, num_dataframe_bytes))

    @staticmethod
    def message_bits(payload_bits: int) -> int:
        """Bits one message occupies in the payload (id + its bits)."""
        return ID_BITS + payload_bits

    def pack(self, messages: Iterable[tuple[int, Bits]], num_miniframe_bytes: int,
             num_dataframe_bytes: int) -> tuple[bytes, bytes]:
        """(miniframe bytes, dataframe bytes) for [(codec id, message bits)] in that order."""
        mini_bits, data_bits = self.frame_payload_bits(num_miniframe_bytes, num_dataframe_bytes)
        payload = BitArray()
        for codec_id, bits in messages:
            if not 0 <= codec_id <= 255:
                raise ValueError(f"message codec id {codec_id} does not fit 8 bits")
            payload.append(Bits(uint=codec_id, length=ID_BITS))
            payload.append(bits)
        if len(payload) > mini_bits + data_bits:
            raise ValueError(f"{len(payload)} payload bits do not fit {mini_bits + data_bits}")
        miniframe = BitArray(bytes=self.miniframe_header)
        miniframe.append(payload[:mini_bits])
        dataframe = BitArray(bytes=self.dataframe_header)
        dataframe.append(payload[mini_bits:])
        return miniframe.tobytes(), dataframe.tobytes()

    def headers_match(self, miniframe: bytes, dataframe: bytes) -> bool:
        return (bytes(miniframe[:len(self.miniframe_header)]) == self.miniframe_header
                and bytes(dataframe[:len(self.dataframe_header)]) == self.dataframe_header)

    def decode(self, miniframe: bytes, dataframe: bytes, message_codecs: Mapping[int, MessageCodec],
               received_packet=None, minibytes_valid: Sequence[int] = (),
               databytes_valid: Sequence[int] = ()) -> PacketDecodeResult:
        """Decode every message that can be trusted; count the rest (never raises on bad bits)."""
        miniframe, dataframe = bytes(miniframe), bytes(dataframe)
        result = PacketDecodeResult()
        mini_payload = miniframe[len(self.miniframe_header):]
        data_payload = dataframe[len(self.dataframe_header):]
        payload = mini_payload + data_payload
        if len(minibytes_valid) == 0 and len(databytes_valid) == 0:
            valid = None  # validity not reported: trust every byte
        else:
            mini_mask = valid_byte_mask(len(miniframe), minibytes_valid)
            data_mask = valid_byte_mask(len(dataframe), databytes_valid)
            valid = (mini_mask[len(self.miniframe_header):]
                     + data_mask[len(self.dataframe_header):])

        def span_valid(start_bit: int, end_bit: int) -> bool:
            if valid is None:
                return True
            last = min((max(end_bit, start_bit + 1) - 1) // 8, len(valid) - 1)
            return all(valid[start_bit // 8: last + 1])

        stream = ConstBitStream(bytes=payload)
        total = len(stream)
        while total - stream.pos >= ID_BITS:
            id_start = stream.pos
            if 0 not in message_codecs and not stream[id_start:].any(True):
                break  # zero padding after the last message
            if not span_valid(id_start, id_start + ID_BITS):
                result.invalid_bytes += 1
                result.errors.append(f"message id at payload bit {id_start} is in invalid bytes; "
                                     "rest of packet skipped")
                break
            codec_id = stream.read(f"uint:{ID_BITS}")
            codec = message_codecs.get(codec_id)
            if codec is None:
                result.unknown_ids += 1
                result.errors.append(f"unknown message id {codec_id}; rest of packet skipped")
                break
            message_start = stream.pos
            outcome, message, error = "ok", None, None
            try:
                message = codec.decode(stream, received_packet)
            except ChecksumError as exc:
                outcome, error = "checksum", exc
            except DecodeError as exc:
                outcome, error = ("refused" if exc.position_known else "truncated"), exc
            if codec.is_fixed_length:
                end = message_start + codec.max_length_bits
            else:
                end = stream.pos if outcome != "truncated" else total
            can_continue = codec.is_fixed_length or outcome in ("ok", "refused")
            if not span_valid(id_start, end):
                result.invalid_bytes += 1
                result.errors.append(f"message id {codec_id} overlaps invalid bytes")
                can_continue = codec.is_fixed_length
            elif outcome == "ok":
                result.messages.append((codec_id, message))
            elif outcome == "checksum":
                result.checksum_failures += 1
                result.errors.append(f"message id {codec_id}: {error}")
            else:
                result.decode_errors += 1
                result.errors.append(f"message id {codec_id}: {error}")
            if not can_continue or end > total:
                break
            stream.pos = end
        return result
