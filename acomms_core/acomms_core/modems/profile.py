"""The modem-profile seam: what a MAC, the simulator and a driver need to know about a modem.

A profile answers, for one kind of modem: which rates exist and what each carries (frame budgets),
how long a packet is on the air, which packets are FDP-style (miniframe + dataframe) and which
legacy, whether a packet can be sent at all (and why not), and the broadcast address. Code that
plans or simulates packets asks the profile selected by the `modem_profile` parameter instead of
keeping its own copy of a rate table.

Adding a modem: one module with a class that satisfies `ModemProfile`, plus one line in
`acomms_core.modems.registry.MODEM_PROFILES`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from acomms_core.modems.modem_rates import RateInfo

# Packet kinds, the values of acomms_interfaces/msg/Packet's PACKET_TYPE_* constants (a test keeps
# them equal); repeated here so profiles stay ROS-free.
PACKET_TYPE_UNKNOWN = -1
PACKET_TYPE_AUTO = 0
PACKET_TYPE_FSK = 1
PACKET_TYPE_LEGACY_PSK = 2
PACKET_TYPE_FDP = 3
PACKET_TYPE_JANUS = 4  # Micromodem driver only (use_janus_packets); profiles refuse it
PACKET_TYPES = {PACKET_TYPE_UNKNOWN: "unknown", PACKET_TYPE_AUTO: "auto", PACKET_TYPE_FSK: "fsk",
                PACKET_TYPE_LEGACY_PSK: "legacy_psk", PACKET_TYPE_FDP: "fdp",
                PACKET_TYPE_JANUS: "janus"}


class PacketRefused(ValueError):
    """A packet this modem cannot send; the message says why."""


@dataclasses.dataclass(frozen=True)
class FrameBudget:
    """Bytes a MAC may ask the queue for, and the on-air time reserved for such a packet."""

    miniframe_rate: int
    dataframe_rate: int
    maximum_miniframe_bytes: int
    maximum_dataframe_bytes: int
    packet_duration_s: float
    notes: tuple[str, ...] = ()  # requested budgets that were clipped, for the log

    @property
    def budget_bytes(self) -> int:
        return self.maximum_miniframe_bytes + self.maximum_dataframe_bytes


@runtime_checkable
class ModemProfile(Protocol):
    name: str
    broadcast_address: int
    rates: Mapping[int, RateInfo]

    def rate_info(self, rate: int) -> RateInfo:
        """The rate's RateInfo; ValueError naming the valid rates for an unknown one."""

    def is_fdp(self, packet_type: int, dataframe_rate: int) -> bool:
        """Whether a packet of this type (PACKET_TYPE_*) and dataframe rate goes out FDP-style;
        PacketRefused for an unknown type."""

    def frame_budget(self, miniframe_rate: int, dataframe_rate: int,
                     maximum_miniframe_bytes: int = -1, maximum_dataframe_bytes: int = -1,
                     packet_duration_s: float = -1.0) -> FrameBudget:
        """Byte budgets defaulted (negative) and clipped to the rates; PacketRefused for bad
        rates."""

    def packet_duration_s(self, fdp: bool, miniframe_rate: int, dataframe_rate: int,
                          num_miniframe_bytes: int, num_dataframe_bytes: int) -> float:
        """On-air time of one packet."""

    def source_level_db(self, tx_level: int, center_frequency_hz: float) -> float:
        """Source level (dB re 1 uPa @ 1 m) of a transmit power setting in this band;
        ValueError for an unknown setting."""

    def check_packet(self, fdp: bool, miniframe_rate: int, dataframe_rate: int,
                     num_miniframe_bytes: int, num_dataframe_bytes: int) -> None:
        """PacketRefused with the reason when the modem would refuse the packet (sizes, rates
        that cannot carry this kind of packet)."""
