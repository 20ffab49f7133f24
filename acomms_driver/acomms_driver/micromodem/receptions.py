"""pyacomms receptions (FDPacket + closing $CACST) as the driver's ReceivedModemPacket; ROS-free.

The packet type comes from the sentence that started the reception: `$CARFP` / `$CARDP` are FDP
packets, `$CACYC` + `$CARXD` a legacy cycle (FSK at rate 0, PSK otherwise). Only the good prefix
of each frame list is kept: bytes after a bad frame would shift the message codec.
"""

from __future__ import annotations

from acomms_driver.micromodem.client_config import ReceivedModemPacket
from acomms_driver.micromodem.packet_rules import (
    FSK_RATE,
    PACKET_TYPE_FDP,
    PACKET_TYPE_FSK,
    PACKET_TYPE_LEGACY_PSK,
    ModemPacket,
)

FDP_RECEPTION_SENTENCES = ("CARFP", "CARDP")
RECEPTION_SENTENCES = FDP_RECEPTION_SENTENCES + ("CACYC", "CARXD")


def _good_prefix(frames, good: bool) -> tuple[bytes, bool]:
    kept = bytearray()
    for frame in frames:
        good = good and bool(frame.crccheck) and frame.crccheck != -2
        if good:
            kept += bytes(frame.data)
    return bytes(kept), good


def convert_reception(fdpacket, reception_sentence: str, cst: dict | None) -> ReceivedModemPacket:
    """The reception pyacomms assembled; reception_sentence is the type of the sentence that
    started it, cst the values of the CACST that closed it."""
    if reception_sentence in FDP_RECEPTION_SENTENCES:
        packet_type = PACKET_TYPE_FDP
    else:
        packet_type = PACKET_TYPE_FSK if fdpacket.dataframe_rate == FSK_RATE else \
            PACKET_TYPE_LEGACY_PSK
    mini, good = _good_prefix(fdpacket.miniframes, True)
    data, good = _good_prefix(fdpacket.dataframes, good)
    complete = good and all(bool(f.crccheck) for f in fdpacket.miniframes) and all(
        bool(f.crccheck) for f in fdpacket.dataframes)
    packet = ModemPacket(
        src=int(fdpacket.src), dest=int(fdpacket.dest), packet_type=packet_type,
        miniframe_rate=int(fdpacket.miniframe_rate or 0),
        dataframe_rate=int(fdpacket.dataframe_rate or 0),
        miniframe_bytes=mini, dataframe_bytes=data)
    return ReceivedModemPacket(packet, [0, len(mini)] if mini else [],
                               [0, len(data)] if data else [], cst, complete)
