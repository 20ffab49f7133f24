"""A second packet codec for the seam tests, loaded by path or module name, never built in.

Layout: [miniframe_header][payload...] [dataframe_header][...payload], the payload filling the
miniframe first; payload = ([id_bits-bit id][message bits])*, id 0 (or fewer than id_bits bits)
ends it. `id_bits` (default 4) is a codec YAML option of this codec. It implements the
PacketCodec protocol on its own (no base class), as an out-of-tree codec would.
"""

from __future__ import annotations

from bitstring import BitArray, Bits, ConstBitStream

from acomms_core.codecs import DecodeError, PacketDecodeResult, register_packet_codec


class TinyPacketCodec:
    name = "tiny"

    def __init__(self, miniframe_header: bytes = b"", dataframe_header: bytes = b"",
                 id_bits: int = 4):
        if not isinstance(id_bits, int) or not 2 <= id_bits <= 8:
            raise ValueError(f"id_bits must be an integer 2..8, got {id_bits!r}")
        self.miniframe_header = bytes(miniframe_header)
        self.dataframe_header = bytes(dataframe_header)
        self.id_bits = id_bits
        self.message_ids = range(1, 2 ** id_bits)

    def _frame_bits(self, num_miniframe_bytes: int, num_dataframe_bytes: int) -> tuple[int, int]:
        if (len(self.miniframe_header) > num_miniframe_bytes
                or len(self.dataframe_header) > num_dataframe_bytes):
            return 0, 0
        return (8 * (num_miniframe_bytes - len(self.miniframe_header)),
                8 * (num_dataframe_bytes - len(self.dataframe_header)))

    def payload_capacity_bits(self, num_miniframe_bytes: int, num_dataframe_bytes: int) -> int:
        return sum(self._frame_bits(num_miniframe_bytes, num_dataframe_bytes))

    def total_capacity_bits(self, num_packet_bytes: int) -> int:
        return max(0, 8 * (num_packet_bytes - len(self.miniframe_header)
                           - len(self.dataframe_header)))

    def message_cost_bits(self, message_bits: int) -> int:
        return self.id_bits + message_bits

    def pack(self, messages, num_miniframe_bytes: int, num_dataframe_bytes: int):
        payload = BitArray()
        for codec_id, bits in messages:
            payload.append(Bits(uint=codec_id, length=self.id_bits) + bits)
        mini_bits, data_bits = self._frame_bits(num_miniframe_bytes, num_dataframe_bytes)
        if len(payload) > mini_bits + data_bits:
            raise ValueError(f"{len(payload)} bits do not fit {mini_bits + data_bits}")
        return ((Bits(bytes=self.miniframe_header) + payload[:mini_bits]).tobytes(),
                (Bits(bytes=self.dataframe_header) + payload[mini_bits:]).tobytes())

    def headers_match(self, miniframe: bytes, dataframe: bytes) -> bool:
        return (bytes(miniframe).startswith(self.miniframe_header)
                and bytes(dataframe).startswith(self.dataframe_header))

    def decode(self, miniframe, dataframe, message_codecs, received_packet=None,
               minibytes_valid=(), databytes_valid=()) -> PacketDecodeResult:
        result = PacketDecodeResult()
        stream = ConstBitStream(bytes=bytes(miniframe)[len(self.miniframe_header):]
                                + bytes(dataframe)[len(self.dataframe_header):])
        while len(stream) - stream.pos >= self.id_bits:
            codec_id = stream.read(f"uint:{self.id_bits}")
            codec = message_codecs.get(codec_id)
            if codec_id == 0 or codec is None:
                result.unknown_ids += codec_id != 0
                break
            try:
                result.messages.append((codec_id, codec.decode(stream, received_packet)))
            except DecodeError as exc:
                result.decode_errors += 1
                result.errors.append(f"message id {codec_id}: {exc}")
                break
        return result


register_packet_codec("tiny", TinyPacketCodec, options=("id_bits",))
