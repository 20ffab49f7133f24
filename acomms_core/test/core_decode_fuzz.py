"""Seeded fuzzing of the decode path with core_all_codecs_config.yaml (test + bench helper).

Packets are built three ways from a seeded random generator:
- `valid`: encodings of 1..4 valid messages packed by the packet codec; the decode must give
  exactly the reference decode of each message's bits, in order;
- `noise`: a valid header, then a known message id and random bits ("noise after a valid
  header"); half of these are decoded by checksum-free twins of the config's message codecs, so
  the field codecs of crc-protected messages meet noise too;
- `mutated`: a valid packet with flipped bits, truncated, or with random bytes appended.

The oracle for everything published (what a subscriber receives, i.e. after rclpy
serialization): it equals the decoded message (no int wrapped, no string cut at a NUL), and it
equals the reference decode of valid input, namely the bits a strict (on_out_of_range: refuse)
encoder makes of it, to within one quantisation step of its field codec. A value outside its
codec's bounds or its ROS type fails that: the strict encoder refuses it, or the re-decode
differs.
"""

from __future__ import annotations

import dataclasses
import random

from bitstring import ConstBitStream
from core_samples import ALL_CODECS_CONFIG, sample_messages
from core_samples import differences as sample_differences
from rclpy.serialization import deserialize_message, serialize_message

from acomms_core.codecs import EncodeError, MessageCodec, load_codec_config

# One quantisation step of the lossy field codecs in core_all_codecs_config.yaml, by codec id
# and field name (ltcodecs rounds some encodings down by one step).
QUANTUM = {
    1: {"stamp": 1e-3, "latitude": 3e-5, "longitude": 2e-6, "altitude": 0.5},
    2: {"voltage": 0.011, "temperature": 0.24, "cell_voltage": 0.0011, "capacity": 10},
    5: {"x": 0.11, "y": 0.11},
    10: {"stamp": 1.0},
}
FLOAT32_RELATIVE = 1e-6


class FuzzFailure(AssertionError):
    pass


@dataclasses.dataclass
class FuzzStats:
    packets: int = 0
    published: int = 0
    refused: int = 0          # decode errors + checksum failures + unknown ids + invalid bytes
    per_codec: dict = dataclasses.field(default_factory=dict)
    from_noise: dict = dataclasses.field(default_factory=dict)  # published from noise/mutation


def differences(expected, actual, quantum=None) -> list:
    """core_samples.differences with one quantum per field name and float32's precision."""
    return sample_differences(expected, actual, quantum or {}, relative=FLOAT32_RELATIVE)


class DecodeFuzzer:
    """Decode fuzzing of every message codec of the all-codecs config (see module doc)."""

    def __init__(self, seed: int = 12, config_path: str = ALL_CODECS_CONFIG):
        self.random = random.Random(seed)
        self.config = load_codec_config(config_path)
        self.packet = self.config.packet_codecs[0]
        self.packet_codec = self.packet.packet_codec
        self.codecs = self.packet.codecs_by_id()
        self.open = {m.id: MessageCodec(m.ros_type, m.params.get("fields"))
                     for m in self.packet.message_codecs}
        self.strict = {m.id: MessageCodec(m.ros_type, m.params.get("fields"),
                                          on_out_of_range="refuse")
                       for m in self.packet.message_codecs}
        self.ids = sorted(self.codecs)
        # Valid messages to pack, per id: the hand-made samples, then what noise decoded to.
        self.pool = {codec_id: [] for codec_id in self.ids}
        for codec_id, (_, sent, _, _) in sample_messages().items():
            if codec_id in self.pool:
                self.pool[codec_id].append(sent)
        self.stats = FuzzStats(per_codec=dict.fromkeys(self.ids, 0),
                               from_noise=dict.fromkeys(self.ids, 0))

    # -- packets ------------------------------------------------------------------------------
    def _random_bytes(self, count: int) -> bytes:
        return self.random.getrandbits(8 * count).to_bytes(count, "big") if count else b""

    def noise_packet(self) -> bytes:
        payload = bytes([self.random.choice(self.ids)]) + self._random_bytes(
            self.random.randint(1, 96))
        return self.packet_codec.miniframe_header + payload

    def valid_packet(self) -> tuple[bytes, list] | None:
        chosen = [self.random.choice(self.ids) for _ in range(self.random.randint(1, 4))]
        messages = [(i, self.random.choice(self.pool[i])) for i in chosen if self.pool[i]]
        if not messages:
            return None
        encoded = [(i, self.codecs[i].encode(m)[0]) for i, m in messages]
        mini, data = self.packet_codec.pack(encoded, 32, 4096)
        references = [(i, self.codecs[i].decode(ConstBitStream(bits), None))
                      for i, bits in encoded]
        return mini + data, references

    def mutate(self, packet: bytes) -> bytes:
        data = bytearray(packet)
        kind = self.random.randrange(3)
        if kind == 0 and len(data) > 1:
            for _ in range(self.random.randint(1, 4)):
                bit = self.random.randrange(8, 8 * len(data))
                data[bit // 8] ^= 0x80 >> (bit % 8)
        elif kind == 1 and len(data) > 2:
            del data[self.random.randrange(2, len(data)):]
        else:
            data += self._random_bytes(self.random.randint(1, 32))
        return bytes(data)

    # -- checks -------------------------------------------------------------------------------
    def decode(self, packet: bytes, codecs=None):
        result = self.packet_codec.decode(packet, b"", codecs or self.codecs)
        self.stats.packets += 1
        self.stats.refused += (result.decode_errors + result.checksum_failures
                               + result.unknown_ids + result.invalid_bytes)
        return result

    def check_published(self, codec_id: int, message, from_noise: bool = False) -> None:
        """The oracle for one published message (module doc)."""
        received = deserialize_message(serialize_message(message), type(message))
        problems = differences(message, received)
        if problems:
            raise FuzzFailure(f"id {codec_id}: published value changed on the wire: {problems}")
        try:
            bits, _ = self.strict[codec_id].encode(received)
        except EncodeError as exc:
            raise FuzzFailure(f"id {codec_id}: published {received} is not valid input: "
                              f"{exc}") from None
        reference = self.strict[codec_id].decode(ConstBitStream(bits), None)
        problems = differences(reference, received, QUANTUM.get(codec_id))
        if problems:
            raise FuzzFailure(f"id {codec_id}: published {received} differs from the reference "
                              f"decode of its valid encoding: {problems}")
        self.stats.published += 1
        self.stats.per_codec[codec_id] += 1
        self.stats.from_noise[codec_id] += from_noise
        pool = self.pool[codec_id]
        if len(pool) < 64:
            pool.append(received)

    def run_one(self) -> None:
        roll = self.random.random()
        if roll < 0.25:
            built = self.valid_packet()
            if built is not None:
                packet, references = built
                result = self.decode(packet)
                got = [(i, m) for i, m in result.messages]
                if [i for i, _ in got] != [i for i, _ in references] or any(
                        differences(r, m) for (_, r), (_, m) in zip(references, got,
                                                                      strict=True)):
                    raise FuzzFailure(f"valid packet {packet.hex()} decoded to {got}, expected "
                                      f"{references}")
                for codec_id, message in got:
                    self.check_published(codec_id, message)
                return
        packet = self.noise_packet()
        if roll > 0.7:
            built = self.valid_packet()
            if built is not None:
                packet = self.mutate(built[0])
        codecs = self.open if self.random.random() < 0.5 else self.codecs
        for codec_id, message in self.decode(packet, codecs).messages:
            self.check_published(codec_id, message, from_noise=True)

    def run(self, packets: int) -> FuzzStats:
        for _ in range(packets):
            self.run_one()
        return self.stats
