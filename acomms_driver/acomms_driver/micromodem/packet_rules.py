"""Which packets the driver sends, and how: the modem profile plus the Micromodem's own rules.

What the modem profile (`acomms_core.modems`, selected by the `modem_profile` parameter) decides:
whether a packet goes out FDP-style (`profile.is_fdp`), which rates exist, what each carries and
which rates can carry FDP packets (`profile.check_packet`). What only this driver knows, all
here:

- `use_legacy_packets` sends AUTO / UNKNOWN packets as legacy `$CCCYC` / `$CCTXD` cycles;
- a legacy FSK packet goes out at rate 0 whatever its dataframe_rate; legacy PSK needs a PSK rate;
- a legacy cycle needs at least one dataframe byte;
- `use_tdp` sends FDP packets as `$CCTDP`: a dataframe only (no miniframe, miniframe rate unused);
- dest is an 8-bit modem address.

ROS-free.
"""

from __future__ import annotations

import dataclasses

from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.profile import (
    PACKET_TYPE_AUTO,
    PACKET_TYPE_FDP,
    PACKET_TYPE_FSK,
    PACKET_TYPE_LEGACY_PSK,
    PACKET_TYPE_UNKNOWN,
    ModemProfile,
    PacketRefused,
)

__all__ = ["PACKET_TYPE_AUTO", "PACKET_TYPE_FDP", "PACKET_TYPE_FSK", "PACKET_TYPE_LEGACY_PSK",
           "PACKET_TYPE_UNKNOWN", "ModemPacket", "PacketRules", "validate_packet"]

MAX_ADDRESS = 255
FSK_RATE = 0


@dataclasses.dataclass
class ModemPacket:
    """A packet to send or a packet received (fields as in acomms_interfaces/msg/Packet)."""

    src: int = -1
    dest: int = -1
    packet_type: int = PACKET_TYPE_AUTO
    miniframe_rate: int = 1
    dataframe_rate: int = 1
    miniframe_bytes: bytes = b""
    dataframe_bytes: bytes = b""


@dataclasses.dataclass(frozen=True)
class PacketRules:
    """The modem profile and the driver's packet options."""

    profile: ModemProfile = MICROMODEM2
    use_legacy_packets: bool = False
    use_tdp: bool = False

    def sends_fdp(self, packet: ModemPacket) -> bool:
        """True for an FDP ($CCTFP / $CCTDP) packet, False for a legacy cycle; PacketRefused for
        an unknown packet type or rate."""
        if self.use_legacy_packets and packet.packet_type in (PACKET_TYPE_AUTO,
                                                               PACKET_TYPE_UNKNOWN):
            return False
        return self.profile.is_fdp(packet.packet_type, packet.dataframe_rate)

    @staticmethod
    def legacy_rate(packet: ModemPacket) -> int:
        return FSK_RATE if packet.packet_type == PACKET_TYPE_FSK else packet.dataframe_rate

    def check(self, packet: ModemPacket) -> str | None:
        """Reason the packet cannot be sent as given, or None."""
        if not 0 <= packet.dest <= MAX_ADDRESS:
            return f"dest {packet.dest} outside 0..{MAX_ADDRESS}"
        try:
            if self.sends_fdp(packet):
                self._check_fdp(packet)
            else:
                self._check_legacy(packet)
        except PacketRefused as exc:
            return str(exc)
        return None

    def _check_fdp(self, packet: ModemPacket) -> None:
        miniframe_rate = packet.miniframe_rate
        if self.use_tdp:
            if packet.miniframe_bytes:
                raise PacketRefused("use_tdp is set: $CCTDP packets carry no miniframe bytes")
            miniframe_rate = packet.dataframe_rate  # no miniframe: only the dataframe rate counts
        sizes = (len(packet.miniframe_bytes), len(packet.dataframe_bytes))
        self.profile.check_packet(True, miniframe_rate, packet.dataframe_rate, *sizes)

    def _check_legacy(self, packet: ModemPacket) -> None:
        rate = self.legacy_rate(packet)
        if packet.packet_type == PACKET_TYPE_LEGACY_PSK and rate == FSK_RATE:
            raise PacketRefused(f"legacy PSK needs a PSK rate; rate {FSK_RATE} is FSK")
        self.profile.check_packet(False, rate, rate, len(packet.miniframe_bytes),
                                  len(packet.dataframe_bytes))
        if not packet.dataframe_bytes:
            raise PacketRefused("legacy packet without dataframe bytes")


def validate_packet(packet: ModemPacket, use_legacy_packets: bool, use_tdp: bool,
                    profile: ModemProfile = MICROMODEM2) -> str | None:
    """Reason a packet cannot be sent as given, or None."""
    return PacketRules(profile, use_legacy_packets, use_tdp).check(packet)
