"""JANUS packets on the Micromodem (`use_janus_packets`): sentences, limits, on-air time. ROS-free.

JANUS (NATO ANEP-87) is the interoperable low-rate signal: a 64-bit baseline packet, optionally
followed by cargo. The Micromodem sends one with `$CCTJN,reserved,dest,ack,hex_header,hex_data`
(echoed as `$CATJN`, then `$CATXF` / `$CAXST` like any transmission) and reports one heard with
`$CAJRX,header_crc_ok,src,dest,ack,hex_header,data_crc_ok,nbytes,hex_data` (the data's hex ends
with its 2-byte CRC), closed by `$CACST` like the other receptions.

The driver sends a packet's dataframe bytes as the cargo with an empty user header; miniframe
bytes cannot be carried. The emulator uses the same limits and on-air time (one source).
"""

from __future__ import annotations

import dataclasses

JANUS_BIT_RATE_BPS = 80.0        # JANUS reference signal: 80 bit/s
JANUS_BASELINE_BITS = 64         # the baseline packet every JANUS transmission starts with
JANUS_CRC_BYTES = 2              # CRC appended to the cargo (included in $CAJRX hex data)
# The driver's cargo limit: a longer one occupies the channel for minutes at 80 bit/s.
JANUS_MAX_CARGO_BYTES = 256


def on_air_s(num_cargo_bytes: int) -> float:
    """On-air time of a JANUS packet with this much cargo (CRC included when there is cargo)."""
    cargo_bits = 8 * (num_cargo_bytes + JANUS_CRC_BYTES) if num_cargo_bytes else 0
    return (JANUS_BASELINE_BITS + cargo_bits) / JANUS_BIT_RATE_BPS


def check_cargo(num_miniframe_bytes: int, num_dataframe_bytes: int) -> str | None:
    """Why a packet cannot go out as JANUS, or None."""
    if num_miniframe_bytes:
        return "JANUS packets carry no miniframe bytes"
    if num_dataframe_bytes > JANUS_MAX_CARGO_BYTES:
        return (f"{num_dataframe_bytes} dataframe bytes exceed the JANUS cargo limit of "
                f"{JANUS_MAX_CARGO_BYTES}")
    return None


def tjn_fields(dest: int, ack: bool, cargo: bytes) -> list:
    """The fields of `$CCTJN` for this packet."""
    return [0, int(dest), int(bool(ack)), "", cargo.hex().upper()]


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE of the cargo (the emulator appends it; the driver strips it)."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


@dataclasses.dataclass(frozen=True)
class JanusReception:
    """One `$CAJRX`."""

    header_ok: bool
    src: int
    dest: int
    ack: bool
    header_hex: str
    data_ok: bool
    cargo: bytes  # without the CRC


def parse_jrx(fields) -> JanusReception:
    """`$CAJRX` fields; ValueError for a malformed sentence."""
    if len(fields) < 8:
        raise ValueError(f"CAJRX needs 8 fields, got {len(fields)}")
    data = bytes.fromhex(fields[7]) if fields[7] else b""
    nbytes = int(fields[6])
    if nbytes < 0 or nbytes > len(data):
        raise ValueError(f"CAJRX nbytes {nbytes} but {len(data)} data bytes")
    cargo = data[:-JANUS_CRC_BYTES] if len(data) >= JANUS_CRC_BYTES else b""
    return JanusReception(fields[0] == "1", int(fields[1]), int(fields[2]), fields[3] == "1",
                          fields[4][:64], fields[5] == "1", cargo)


def jrx_fields(src: int, dest: int, ack: bool, cargo: bytes, data_ok: bool = True) -> list:
    """The fields of the `$CAJRX` a modem reports for this packet (the emulator's side)."""
    data = cargo + crc16(cargo).to_bytes(2, "big") if cargo else b""
    return [1, int(src), int(dest), int(bool(ack)), "", int(bool(data_ok)), len(data),
            data.hex().upper()]
