"""Which packets the driver sends, and how: the modem profile plus the Micromodem's own rules.

What the modem profile (`acomms_core.modems`, selected by the `modem_profile` parameter) decides:
whether a packet goes out FDP-style (`profile.is_fdp`), which rates exist, what each carries and
which rates can carry FDP packets (`profile.check_packet`). What only this driver knows, all
here:

- `use_legacy_packets` sends AUTO / UNKNOWN packets as legacy `$CCCYC` / `$CCTXD` cycles;
- a legacy FSK packet goes out at rate 0 whatever its dataframe_rate; legacy PSK needs a PSK rate;
- a legacy cycle needs at least one dataframe byte;
- `use_tdp` sends FDP packets as `$CCTDP`: a dataframe only (no miniframe, miniframe rate unused);
- `use_janus_packets` sends AUTO / UNKNOWN / JANUS packets as JANUS (`janus`); a JANUS packet is
  refused without it;
- the PPS and TXTRIG transmit queues (`queue`) exist for `$CCTFP` packets only: the modem holds
  the packet until its next PPS edge / a pulse on its TXTRIG input;
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
    PACKET_TYPE_JANUS,
    PACKET_TYPE_LEGACY_PSK,
    PACKET_TYPE_UNKNOWN,
    ModemProfile,
    PacketRefused,
)
from acomms_driver.micromodem import janus

__all__ = ["PACKET_TYPE_AUTO", "PACKET_TYPE_FDP", "PACKET_TYPE_FSK", "PACKET_TYPE_JANUS",
           "PACKET_TYPE_LEGACY_PSK", "PACKET_TYPE_UNKNOWN", "ModemPacket", "PacketRules",
           "validate_packet"]

MAX_ADDRESS = 255
FSK_RATE = 0
# Transmit queues (acomms_interfaces/srv/QueueTxPacket QUEUE_*; 0 is taken as immediate).
QUEUE_IMMEDIATE, QUEUE_PPS, QUEUE_TXTRIG = 1, 2, 3
QUEUE_NAMES = {0: "immediate", QUEUE_IMMEDIATE: "immediate", QUEUE_PPS: "PPS",
               QUEUE_TXTRIG: "TXTRIG"}


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
    ack: bool = False             # the acknowledgement flag (sent / as received)
    queue: int = QUEUE_IMMEDIATE  # transmit queue: QUEUE_IMMEDIATE | QUEUE_PPS | QUEUE_TXTRIG

    @property
    def triggered(self) -> bool:
        """Held by the modem until a PPS edge or a TXTRIG pulse."""
        return self.queue in (QUEUE_PPS, QUEUE_TXTRIG)


@dataclasses.dataclass(frozen=True)
class PacketRules:
    """The modem profile and the driver's packet options."""

    profile: ModemProfile = MICROMODEM2
    use_legacy_packets: bool = False
    use_tdp: bool = False
    use_janus: bool = False

    def kind(self, packet: ModemPacket) -> str:
        """How the packet goes out: "janus", "fdp", "tdp" or "legacy"
        (modem_status.TRANSMIT_COMMANDS); PacketRefused for an unknown type or rate."""
        if packet.packet_type == PACKET_TYPE_JANUS or (
                self.use_janus and packet.packet_type in (PACKET_TYPE_AUTO, PACKET_TYPE_UNKNOWN)):
            return "janus"
        if not self.sends_fdp(packet):
            return "legacy"
        return "tdp" if self.use_tdp else "fdp"

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
        if packet.queue not in QUEUE_NAMES:
            return f"unknown transmit queue {packet.queue}"
        try:
            kind = self.kind(packet)
            {"janus": self._check_janus, "legacy": self._check_legacy}.get(
                kind, self._check_fdp)(packet)
        except PacketRefused as exc:
            return str(exc)
        if packet.triggered and kind != "fdp":
            return (f"the {QUEUE_NAMES[packet.queue]} queue needs a $CCTFP packet; "
                    f"this one goes out as {kind}")
        return None

    def _check_janus(self, packet: ModemPacket) -> None:
        if not self.use_janus:
            raise PacketRefused("JANUS packets need use_janus_packets")
        reason = janus.check_cargo(len(packet.miniframe_bytes), len(packet.dataframe_bytes))
        if reason:
            raise PacketRefused(reason)

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
                    profile: ModemProfile = MICROMODEM2, use_janus: bool = False) -> str | None:
    """Reason a packet cannot be sent as given, or None."""
    return PacketRules(profile, use_legacy_packets, use_tdp, use_janus).check(packet)
