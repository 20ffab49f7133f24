"""Plain data of the simulated modem: packets, channel packets, CST/XST fields and events.

These mirror the acomms_interfaces messages field for field (Packet, SimPacket, PingReply, CST,
XST, SimReceptionEvent, ReceptionStart) with times as float seconds, so `SimModem` stays ROS-free;
`acomms_sim.nodes.sim_modem_messages` converts them to and from the messages.
"""

from __future__ import annotations

import dataclasses

from acomms_core.modems.profile import PACKET_TYPE_FDP, PACKET_TYPE_FSK, PACKET_TYPE_LEGACY_PSK

# SimPacket.PING_TYPE_* (a test keeps them equal to the message constants).
PING_TYPE_NONE = 0
PING_TYPE_REQUEST = 1
PING_TYPE_REPLY = 2

# CST / XST packet_type codes as the Micromodem reports them.
CST_TYPE_FSK = 1
CST_TYPE_PSK = 3
CST_TYPE_FDP = 5
CST_PACKET_TYPE = {PACKET_TYPE_FSK: CST_TYPE_FSK, PACKET_TYPE_LEGACY_PSK: CST_TYPE_PSK,
                   PACKET_TYPE_FDP: CST_TYPE_FDP}


def cst_packet_type(packet_type: int, fdp: bool) -> int:
    """The CST/XST packet_type code of a Packet.packet_type (auto: by what was sent)."""
    return CST_PACKET_TYPE.get(packet_type, CST_TYPE_FDP if fdp else CST_TYPE_PSK)


@dataclasses.dataclass
class ModemPacket:
    """acomms_interfaces/Packet."""

    src: int
    dest: int
    packet_type: int
    miniframe_rate: int
    dataframe_rate: int
    miniframe_bytes: bytes = b""
    dataframe_bytes: bytes = b""


@dataclasses.dataclass(frozen=True)  # one report: its CST message is built once
class CstFields:
    """The CST fields the simulator fills (the rest of the message keeps its defaults)."""

    version_number: int
    mode: int
    toa_s: float
    rate_num: int
    src: int
    dest: int
    psk_error: int
    packet_type: int
    num_frames: int
    bad_frames_num: int
    snr_rss: int
    mfd_spl: int
    snr_in: float
    snr_out: float
    noise: int
    carrier: int
    bandwidth: int
    data_rate: int
    num_data_frames: int
    num_bad_data_frames: int
    dop: float = 0.0  # Doppler: closing speed of the two modems along the path, m/s


@dataclasses.dataclass
class XstFields:
    """The XST fields the simulator fills."""

    version_number: int
    time_s: float
    mode: int
    bandwidth: int
    carrier: int
    actual_carrier: int
    rate_num: int
    src: int
    dest: int
    ack: int
    num_frames_expected: int
    num_frames_sent: int
    packet_type: int
    nbytes: int


@dataclasses.dataclass
class PingReplyFields:
    """acomms_interfaces/PingReply as carried in a reply's SimPacket."""

    src: int
    dest: int
    tat_s: float
    snr_in: float
    snr_out: float
    tx_level: int = 0
    cst: CstFields | None = None


@dataclasses.dataclass(frozen=True)
class ChannelPacket:
    """acomms_interfaces/SimPacket: one transmission on the shared acoustic channel (frozen:
    every receiving modem in a process shares one, `sim_packet_from_msg`)."""

    packet: ModemPacket
    src_latitude: float
    src_longitude: float
    src_depth_m: float
    source_level_db: float
    center_frequency_hz: float
    bandwidth_hz: float
    transmit_time_s: float
    duration_s: float
    ping_type: int = PING_TYPE_NONE
    ping_transaction_start_s: float = 0.0  # ping exchange start (request's transmit time)
    ping_reply: PingReplyFields | None = None
    src_velocity_mps: tuple[float, float, float] | None = None  # sender's (east, north, up)


# ---- events returned by SimModem ------------------------------------------------------------

@dataclasses.dataclass
class TransmissionStarted:
    """A packet went on the water: announce `channel_packet`, report `packet` with `xst`."""

    channel_packet: ChannelPacket
    xst: XstFields

    @property
    def packet(self) -> ModemPacket:
        return self.channel_packet.packet


@dataclasses.dataclass
class ReceptionEvent:
    """acomms_interfaces/SimReceptionEvent: one in-band arrival and its outcome."""

    receiver_src: int
    src: int
    dest: int
    outcome: str  # received, partial, frame_errors, undetected, half_duplex
    collided: bool
    ping_type: int
    transmit_time_s: float
    arrival_time_s: float
    duration_s: float
    snr_db: float
    receive_level_db: float
    noise_db: float
    interference_db: float
    transmission_loss_db: float
    slant_range_m: float
    num_frames: int
    num_bad_frames: int
    num_bytes: int
    delay_spread_s: float = 0.0  # multipath RMS delay spread of the path
    isi_loss_db: float = 0.0     # largest frame SINR loss to inter-symbol interference
    doppler_mps: float = 0.0     # closing speed along the path (CST dop)


@dataclasses.dataclass
class ReceptionStarted:
    """acomms_interfaces/ReceptionStart: the receiver detected (locked onto) a packet that is
    still arriving; what a Micromodem announces with $CARXP."""

    src: int
    arrival_time_s: float   # its first sound at this receiver
    duration_s: float       # on the water here: it ends at arrival_time_s + duration_s
    packet_type: int        # CST packet type
    rate: int               # miniframe rate
    carrier_hz: int


@dataclasses.dataclass
class CstReport:
    """The CST of a detected packet (data or ping)."""

    cst: CstFields


@dataclasses.dataclass
class PacketReceived:
    """A data packet with at least one good frame; bytes of failed frames are zeroed."""

    packet: ModemPacket
    minibytes_valid: list[int]
    databytes_valid: list[int]
    cst: CstFields


@dataclasses.dataclass
class PingReplied:
    """The answer to `SimModem.ping(...)` number `ping_id`."""

    ping_id: int
    one_way_travel_time_s: float
    tat_s: float
    tx_level: int
    cst: CstFields


@dataclasses.dataclass
class PingTimedOut:
    ping_id: int


@dataclasses.dataclass
class ModemProblem:
    """Something went wrong inside the modem; it keeps running. Log the message."""

    message: str


ModemEvent = (TransmissionStarted | ReceptionStarted | ReceptionEvent | CstReport
              | PacketReceived | PingReplied | PingTimedOut | ModemProblem)
