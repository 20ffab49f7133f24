"""The relay header and `RelayPacketCodec`: a packet codec entry marked `relayable: true`.

A relayable packet carries a 4-byte relay header right after the configured miniframe header:

    miniframe: [miniframe_header][relay header (4 bytes)][body ...]
    dataframe: [dataframe_header][... body]
    relay header: byte 0: high nibble format version (1), low nibble hops left (0..15)
                  byte 1: origin SRC (the vehicle that first sent the packet)
                  byte 2: final destination (the packet's dest is the next hop)
                  byte 3: sequence number of the origin's relayable packets (mod 256)

The body is what the inner packet codec (e.g. `ros`, or an authenticated codec) packs, unchanged,
split over the two frames as the budget allows. A relay forwards the body bytes as they are
(`forward_frames`: only hops left changes, the body may be re-split for another budget), so an
authenticated (sealed) body is forwarded without keys: the receiver opens it with the origin's
SRC from the header. The relay header itself is sent in clear and is not authenticated (a relay
must change hops left); a forged origin fails authentication of a sealed body.
Packet codecs without `relayable` are unchanged (ros_acomms' bits).
"""

from __future__ import annotations

import dataclasses

from acomms_core.codecs.packet_codec import PacketDecodeResult, valid_byte_mask
from acomms_core.relay.relay_policy import DuplicateFilter

HEADER_BYTES = 4
FORMAT_VERSION = 1
MAX_HOPS = 15
DEFAULT_HOP_LIMIT = 3


@dataclasses.dataclass(frozen=True)
class RelayHeader:
    origin: int
    final_dest: int
    seq: int
    hops_left: int

    def to_bytes(self) -> bytes:
        return bytes([(FORMAT_VERSION << 4) | (self.hops_left & 0x0F), self.origin & 0xFF,
                      self.final_dest & 0xFF, self.seq & 0xFF])

    @classmethod
    def from_bytes(cls, data: bytes) -> RelayHeader | None:
        if len(data) < HEADER_BYTES or data[0] >> 4 != FORMAT_VERSION:
            return None
        return cls(origin=data[1], final_dest=data[2], seq=data[3], hops_left=data[0] & 0x0F)


class _PacketView:
    """The received packet as the inner codec sees it: the origin as SRC."""

    def __init__(self, packet, src: int, dest: int):
        self._packet, self.src, self.dest = packet, src, dest

    def __getattr__(self, name):
        return getattr(self._packet, name)


class _ReceivedView:
    def __init__(self, received, src: int, dest: int):
        self._received = received
        self.packet = _PacketView(getattr(received, "packet", None), src, dest)

    def __getattr__(self, name):
        return getattr(self._received, name)


class RelayPacketCodec:
    """A `PacketCodec` wrapping `inner` (built without headers) with the relay header."""

    def __init__(self, inner, miniframe_header: bytes = b"\xac", dataframe_header: bytes = b"",
                 hop_limit: int = DEFAULT_HOP_LIMIT, duplicate_memory: int = 256):
        if not 1 <= int(hop_limit) <= MAX_HOPS:
            raise ValueError(f"relay_hop_limit must be 1..{MAX_HOPS}, got {hop_limit!r}")
        self.inner = inner
        self.name = inner.name
        self.message_ids = inner.message_ids
        self.miniframe_header = bytes(miniframe_header)
        self.dataframe_header = bytes(dataframe_header)
        self.hop_limit = int(hop_limit)
        self.src: int | None = None
        self._seq = 0
        # the final receiver publishes each (origin, codec, seq) once
        self.received = DuplicateFilter(duplicate_memory)
        self.relayable = True

    # -- binding --------------------------------------------------------------------------------
    def bind_sender(self, src: int) -> None:
        self.src = int(src)

    # -- sizes ----------------------------------------------------------------------------------
    def _front_bytes(self) -> int:
        return len(self.miniframe_header) + HEADER_BYTES

    def _body_bytes(self, num_miniframe_bytes: int, num_dataframe_bytes: int) -> int:
        if (num_miniframe_bytes < self._front_bytes()
                or num_dataframe_bytes < len(self.dataframe_header)):
            return -1
        return (num_miniframe_bytes + num_dataframe_bytes - self._front_bytes()
                - len(self.dataframe_header))

    def payload_capacity_bits(self, num_miniframe_bytes: int, num_dataframe_bytes: int) -> int:
        body = self._body_bytes(num_miniframe_bytes, num_dataframe_bytes)
        return self.inner.payload_capacity_bits(body, 0) if body > 0 else 0

    def total_capacity_bits(self, num_packet_bytes: int) -> int:
        body = num_packet_bytes - self._front_bytes() - len(self.dataframe_header)
        return self.inner.total_capacity_bits(body) if body > 0 else 0

    def message_cost_bits(self, message_bits: int) -> int:
        return self.inner.message_cost_bits(message_bits)

    # -- sending --------------------------------------------------------------------------------
    def pack(self, messages, num_miniframe_bytes: int, num_dataframe_bytes: int,
             dest: int = 255):
        """Frames for these messages to final destination `dest` (the queue passes it)."""
        body_bytes = self._body_bytes(num_miniframe_bytes, num_dataframe_bytes)
        if body_bytes <= 0:
            raise ValueError(f"a {num_miniframe_bytes}+{num_dataframe_bytes}-byte packet has no "
                             "room after the headers and the relay header")
        # an authenticated inner codec binds the final destination (the receiver checks it there)
        bound = {"dest": int(dest)} if hasattr(self.inner, "sealer") else {}
        first, second = self.inner.pack(messages, body_bytes, 0, **bound)
        origin = self.src if self.src is not None and 0 <= self.src <= 255 else 255
        header = RelayHeader(origin, int(dest), self._seq, self.hop_limit)
        self._seq = (self._seq + 1) % 256
        return self.frames(header, bytes(first) + bytes(second), num_miniframe_bytes,
                           num_dataframe_bytes)

    def frames(self, header: RelayHeader, body: bytes, num_miniframe_bytes: int,
               num_dataframe_bytes: int) -> tuple[bytes, bytes]:
        """(miniframe, dataframe) of header + body in this budget; ValueError if it cannot."""
        room = num_miniframe_bytes - self._front_bytes()
        rest = body[max(room, 0):]
        if room < 0 or (rest and len(rest) > num_dataframe_bytes - len(self.dataframe_header)):
            raise ValueError(f"{len(body)} body bytes do not fit a {num_miniframe_bytes}+"
                             f"{num_dataframe_bytes}-byte packet")
        miniframe = self.miniframe_header + header.to_bytes() + body[:room]
        return miniframe, (self.dataframe_header + rest) if rest else b""

    # -- receiving ------------------------------------------------------------------------------
    def headers_match(self, miniframe: bytes, dataframe: bytes) -> bool:
        miniframe, dataframe = bytes(miniframe), bytes(dataframe)
        if not miniframe.startswith(self.miniframe_header):
            return False
        if dataframe and not dataframe.startswith(self.dataframe_header):
            return False
        return self.parse_header(miniframe) is not None

    def parse_header(self, miniframe: bytes) -> RelayHeader | None:
        return RelayHeader.from_bytes(bytes(miniframe)[len(self.miniframe_header):
                                                       self._front_bytes()])

    def body(self, miniframe: bytes, dataframe: bytes) -> bytes:
        """The inner codec's bytes: both frames without headers (an empty dataframe: none)."""
        rest = bytes(dataframe)[len(self.dataframe_header):] if dataframe else b""
        return bytes(miniframe)[self._front_bytes():] + rest

    def forward_frames(self, miniframe: bytes, dataframe: bytes, hops_left: int,
                       num_miniframe_bytes: int, num_dataframe_bytes: int):
        """A received packet's frames with hops left set, for this budget (ValueError: too big)."""
        header = self.parse_header(miniframe)
        if header is None:
            raise ValueError("not a relayable packet")
        return self.frames(dataclasses.replace(header, hops_left=hops_left),
                           self.body(miniframe, dataframe), num_miniframe_bytes,
                           num_dataframe_bytes)

    def _body_validity(self, miniframe: bytes, dataframe: bytes, minibytes_valid,
                       databytes_valid) -> tuple[bool, list]:
        """(header bytes intact, flat [start, end) ranges of valid body bytes)."""
        if not len(minibytes_valid) and not len(databytes_valid):
            return True, []
        mask = valid_byte_mask(len(miniframe), minibytes_valid)
        data_mask = valid_byte_mask(len(dataframe), databytes_valid)
        front = self._front_bytes()
        body = mask[front:] + data_mask[len(self.dataframe_header):]
        ranges, start = [], None
        for index, ok in enumerate(body + [False]):
            if ok and start is None:
                start = index
            elif not ok and start is not None:
                ranges += [start, index]
                start = None
        return all(mask[:front]), ranges or [0, 0]

    def decode(self, miniframe: bytes, dataframe: bytes, message_codecs, received_packet=None,
               minibytes_valid=(), databytes_valid=()) -> PacketDecodeResult:
        header = self.parse_header(miniframe)
        header_ok, ranges = self._body_validity(bytes(miniframe), bytes(dataframe),
                                                minibytes_valid, databytes_valid)
        if header is None or not header_ok:
            return PacketDecodeResult(invalid_bytes=1, errors=["relay header unreadable"])
        key = (header.origin, self.name, header.seq)
        if self.received.seen(key) or header.origin == self.src:   # a copy, or our own echo
            result = PacketDecodeResult(counters={"relay_duplicates": 1})
            result.src = header.origin
            return result
        view = _ReceivedView(received_packet, header.origin, header.final_dest)
        result = self.inner.decode(self.body(miniframe, dataframe), b"", message_codecs, view,
                                   ranges, [])
        if result.messages:
            self.received.add(key)
        result.src = header.origin
        return result
