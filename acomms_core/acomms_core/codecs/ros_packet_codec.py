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
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence

from bitstring import BitArray, Bits, ConstBitStream

from acomms_core.codecs.message_codec import ChecksumError, DecodeError, MessageCodec
from acomms_core.codecs.packet_codec import PacketDecodeResult, valid_byte_mask

ID_BITS = 8


class RosPacketCodec:
    """Pack encoded messages into miniframe/dataframe bytes and back (a `PacketCodec`)."""

    name = "ros"
    message_ids = range(2 ** ID_BITS)

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

    def total_capacity_bits(self, num_packet_bytes: int) -> int:
        header_bytes = len(self.miniframe_header) + len(self.dataframe_header)
        return max(0, 8 * (num_packet_bytes - header_bytes))

    @staticmethod
    def message_cost_bits(message_bits: int) -> int:
        """Bits one message occupies in the payload (id + its bits)."""
        return ID_BITS + message_bits

    def pack(self, messages: Iterable[tuple[int, Bits]], num_miniframe_bytes: int,
             num_dataframe_bytes: int) -> tuple[bytes, bytes]:
        """(miniframe bytes, dataframe bytes) for [(codec id, message bits)] in that order."""
        mini_bits, data_bits = self.frame_payload_bits(num_miniframe_bytes, num_dataframe_bytes)
        payload = BitArray()
        for codec_id, bits in messages:
            if codec_id not in self.message_ids:
                raise ValueError(f"message codec id {codec_id} does not fit {ID_BITS} bits")
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

    def payload_validity(self, miniframe: bytes, dataframe: bytes, minibytes_valid: Sequence[int],
                         databytes_valid: Sequence[int]) -> list[bool] | None:
        """One bool per payload byte (headers removed); None when validity was not reported."""
        if len(minibytes_valid) == 0 and len(databytes_valid) == 0:
            return None  # validity not reported: trust every byte
        mini_mask = valid_byte_mask(len(miniframe), minibytes_valid)
        data_mask = valid_byte_mask(len(dataframe), databytes_valid)
        return mini_mask[len(self.miniframe_header):] + data_mask[len(self.dataframe_header):]

    def decode(self, miniframe: bytes, dataframe: bytes, message_codecs: Mapping[int, MessageCodec],
               received_packet=None, minibytes_valid: Sequence[int] = (),
               databytes_valid: Sequence[int] = ()) -> PacketDecodeResult:
        """Decode every message that can be trusted; count the rest (never raises on bad bits).

        A packet heard by many receivers of one process is decoded once when the message codecs
        its messages were read with decode from the bits alone (`MessageCodec.decode_key`): the
        others get a copy of that result, with the same message objects (publish them; do not
        change them). A packet that needed a codec reading the received packet is decoded by
        each receiver."""
        miniframe, dataframe = bytes(miniframe), bytes(dataframe)
        key = self._memo_key(miniframe, dataframe, message_codecs, minibytes_valid,
                             databytes_valid)
        result = _DECODED.get(key)
        if result is None:
            reader = _PayloadReader(
                miniframe[len(self.miniframe_header):] + dataframe[len(self.dataframe_header):],
                self.payload_validity(miniframe, dataframe, minibytes_valid, databytes_valid),
                message_codecs, received_packet)
            while reader.read_next():
                pass
            if reader.read_the_packet:
                return reader.result
            result = _DECODED.put(key, reader.result)
        # a copy: wrapping codecs (relay, secured) set src and counters on what they get
        return dataclasses.replace(result, messages=list(result.messages),
                                   errors=list(result.errors), counters=dict(result.counters))

    def _memo_key(self, miniframe: bytes, dataframe: bytes,
                  message_codecs: Mapping[int, MessageCodec], minibytes_valid,
                  databytes_valid) -> tuple:
        """What a decode that used no codec reading the packet depends on (the ids of those
        codecs count: an id missing from the map is an unknown id)."""
        codec_keys = tuple((codec_id, getattr(codec, "decode_key", None))
                           for codec_id, codec in message_codecs.items())
        return (self.miniframe_header, self.dataframe_header, codec_keys, miniframe,
                dataframe, tuple(minibytes_valid), tuple(databytes_valid))


class _DecodeMemo:
    """The last MEMO_SIZE packets' decode results, by what they depend on (thread-safe)."""

    MEMO_SIZE = 256

    def __init__(self):
        self._results: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> PacketDecodeResult | None:
        with self._lock:
            result = self._results.get(key)
            if result is not None:
                self._results.move_to_end(key)
            return result

    def put(self, key: tuple, result: PacketDecodeResult) -> PacketDecodeResult:
        with self._lock:
            self._results[key] = result
            while len(self._results) > self.MEMO_SIZE:
                self._results.popitem(last=False)
        return result


_DECODED = _DecodeMemo()


class _PayloadReader:
    """Reads ([id][message])* from one payload, message by message, into a PacketDecodeResult."""

    def __init__(self, payload: bytes, valid: list[bool] | None,
                 message_codecs: Mapping[int, MessageCodec], received_packet):
        self.stream = ConstBitStream(bytes=payload)
        self.total = len(self.stream)
        self.valid = valid
        self.message_codecs = message_codecs
        self.received_packet = received_packet
        self.result = PacketDecodeResult()
        self.read_the_packet = False  # a message codec without a decode_key was used

    def span_valid(self, start_bit: int, end_bit: int) -> bool:
        if self.valid is None:
            return True
        last = min((max(end_bit, start_bit + 1) - 1) // 8, len(self.valid) - 1)
        return all(self.valid[start_bit // 8: last + 1])

    def read_next(self) -> bool:
        """Read one id + message; False when the rest of the payload cannot be read."""
        stream, result = self.stream, self.result
        if self.total - stream.pos < ID_BITS:
            return False
        id_start = stream.pos
        if 0 not in self.message_codecs and not stream[id_start:].any(True):
            return False  # zero padding after the last message
        if not self.span_valid(id_start, id_start + ID_BITS):
            result.invalid_bytes += 1
            result.errors.append(f"message id at payload bit {id_start} is in invalid bytes; "
                                 "rest of packet skipped")
            return False
        codec_id = stream.read(f"uint:{ID_BITS}")
        codec = self.message_codecs.get(codec_id)
        if codec is not None and getattr(codec, "decode_key", None) is None:
            self.read_the_packet = True
        if codec is None:
            result.unknown_ids += 1
            result.errors.append(f"unknown message id {codec_id}; rest of packet skipped")
            return False
        return self.read_message(id_start, codec_id, codec)

    def read_message(self, id_start: int, codec_id: int, codec: MessageCodec) -> bool:
        stream, result = self.stream, self.result
        message_start = stream.pos
        outcome, message, error = "ok", None, None
        try:
            message = codec.decode(stream, self.received_packet)
        except ChecksumError as exc:
            outcome, error = "checksum", exc
        except DecodeError as exc:
            outcome, error = ("refused" if exc.position_known else "truncated"), exc
        if codec.is_fixed_length:
            end = message_start + codec.max_length_bits
        else:
            end = stream.pos if outcome != "truncated" else self.total
        can_continue = codec.is_fixed_length or outcome in ("ok", "refused")
        if not self.span_valid(id_start, end):
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
        if not can_continue or end > self.total:
            return False
        stream.pos = end
        return True
