"""pyacomms receptions (FDPacket + closing $CACST) as the driver's ReceivedModemPacket; ROS-free.

The packet type comes from the sentence that started the reception: `$CARFP` / `$CARDP` are FDP
packets, `$CACYC` + `$CARXD` a legacy cycle (FSK at rate 0, PSK otherwise).

Partial packets (some frames failed their CRC), `partial_packet_mode`:
- `ranges` (default): every frame's bytes in order, bad frames included as the modem reported them
  (so later frames keep their offsets), and the byte ranges of the good frames as valid ranges
  ([start, end, start, end, ...]): a codec can use every good frame;
- `truncate` (ros_acomms' behaviour): only the bytes before the first bad frame, one range.
"""

from __future__ import annotations

from acomms_driver.micromodem.client_config import ReceivedModemPacket
from acomms_driver.micromodem.janus import JanusReception
from acomms_driver.micromodem.packet_rules import (
    FSK_RATE,
    PACKET_TYPE_FDP,
    PACKET_TYPE_FSK,
    PACKET_TYPE_JANUS,
    PACKET_TYPE_LEGACY_PSK,
    ModemPacket,
)

FDP_RECEPTION_SENTENCES = ("CARFP", "CARDP")
RECEPTION_SENTENCES = FDP_RECEPTION_SENTENCES + ("CACYC", "CARXD")
PARTIAL_PACKET_MODES = ("ranges", "truncate")


def _frame_ok(frame) -> bool:
    return bool(frame.crccheck) and frame.crccheck != -2


def _merge(ranges: list[int], start: int, end: int) -> None:
    if ranges and ranges[-1] == start:
        ranges[-1] = end
    elif end > start:
        ranges += [start, end]


def frame_bytes(frames, truncate: bool) -> tuple[bytes, list[int], bool]:
    """(bytes, flat valid ranges, all good) of one frame list."""
    data, ranges, good = bytearray(), [], True
    for frame in frames:
        ok = _frame_ok(frame)
        good = good and ok
        if truncate and not good:
            break
        start = len(data)
        data += bytes(frame.data)
        if ok:
            _merge(ranges, start, len(data))
    return bytes(data), ranges, good


def convert_reception(fdpacket, reception_sentence: str, cst: dict | None,
                      partial_packet_mode: str = "ranges") -> ReceivedModemPacket:
    """The reception pyacomms assembled; reception_sentence is the type of the sentence that
    started it, cst the values of the CACST that closed it."""
    if reception_sentence in FDP_RECEPTION_SENTENCES:
        packet_type = PACKET_TYPE_FDP
    else:
        packet_type = PACKET_TYPE_FSK if fdpacket.dataframe_rate == FSK_RATE else \
            PACKET_TYPE_LEGACY_PSK
    truncate = partial_packet_mode == "truncate"
    mini, mini_ranges, mini_good = frame_bytes(fdpacket.miniframes, truncate)
    # Truncating stops at the first bad frame of the whole packet (miniframes come first).
    data, data_ranges, data_good = frame_bytes(fdpacket.dataframes if mini_good or not truncate
                                               else [], truncate)
    packet = ModemPacket(
        src=int(fdpacket.src), dest=int(fdpacket.dest), packet_type=packet_type,
        miniframe_rate=int(fdpacket.miniframe_rate or 0),
        dataframe_rate=int(fdpacket.dataframe_rate or 0),
        miniframe_bytes=mini, dataframe_bytes=data, ack=bool(fdpacket.ack))
    return ReceivedModemPacket(packet, mini_ranges, data_ranges, cst, mini_good and data_good)


def convert_janus(reception: JanusReception, cst: dict | None) -> ReceivedModemPacket:
    """A `$CAJRX` (good header) closed by its CACST: the cargo as dataframe bytes, one valid
    range when its CRC passed, none when it failed (a partial packet)."""
    cargo = reception.cargo
    packet = ModemPacket(src=reception.src, dest=reception.dest, packet_type=PACKET_TYPE_JANUS,
                         miniframe_rate=-1, dataframe_rate=-1, dataframe_bytes=cargo,
                         ack=reception.ack)
    ranges = [0, len(cargo)] if reception.data_ok and cargo else []
    return ReceivedModemPacket(packet, [], ranges, cst, reception.data_ok)
