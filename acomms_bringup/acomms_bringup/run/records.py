"""The plain records of a run (ROS-free): what the embedded runner records while the scenario runs
(`Transmission`, `Reception`, `Fix`, `SentMessage`, `Delivery`, the queues' ledger) gathered in
a `RunRecord`. `matching` re-pairs its deliveries, `report` summarises it and writes the outputs;
both read these records from here. `driver_reception` makes the `Reception` of a packet a modem
driver (not the simulator) reports received."""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict

from acomms_bringup.run.accounting import Ledger

OUTCOMES = ("received", "partial", "frame_errors", "undetected", "half_duplex", "busy")
LOSS_CAUSES = ("noise", "collision", "half_duplex")


@dataclasses.dataclass(frozen=True)
class Transmission:
    vehicle: str
    src: int
    dest: int
    start_s: float
    duration_s: float
    num_bytes: int
    payload: bytes = b""  # the packet's bytes (ties it to the queue's packet, not exported)


@dataclasses.dataclass(frozen=True)
class Reception:
    vehicle: str  # the receiver
    src: int
    dest: int
    transmit_s: float
    arrival_s: float
    duration_s: float
    outcome: str  # one of OUTCOMES
    snr_db: float
    collided: bool
    receive_level_db: float = math.nan  # dB re 1 uPa
    noise_db: float = math.nan  # ambient noise in band, dB re 1 uPa
    transmission_loss_db: float = math.nan
    slant_range_m: float = math.nan
    num_frames: int = 0
    num_bad_frames: int = 0

    @property
    def loss_cause(self) -> str | None:
        """None when (at least partly) received, else one of LOSS_CAUSES."""
        if self.outcome in ("received", "partial"):
            return None
        if self.outcome == "half_duplex":
            return "half_duplex"
        return "collision" if self.collided or self.outcome == "busy" else "noise"

    @property
    def fate(self) -> str:
        """What became of the packet in the summary's words: received, partial or a loss cause
        (the labels of the timeline and the live view)."""
        return self.loss_cause or self.outcome


@dataclasses.dataclass(frozen=True)
class Fix:
    """Where a vehicle was (its modem's position when it transmitted, or its trajectory)."""

    vehicle: str
    time_s: float
    latitude: float
    longitude: float
    depth_m: float


@dataclasses.dataclass(frozen=True)
class SentMessage:
    topic: str
    source: str
    seq: int
    sent_s: float
    destinations: tuple[str, ...]
    key: float | str | None = None  # the match key (`matching`): equal keys, equal messages


@dataclasses.dataclass(frozen=True)
class LocalEventRecord:
    """A scenario `events:` entry the runner published on its vehicle (not link traffic)."""

    vehicle: str
    topic: str
    ros_type: str
    sent_s: float


@dataclasses.dataclass(frozen=True)
class Delivery:
    topic: str
    source: str
    destination: str
    seq: int
    sent_s: float
    received_s: float

    @property
    def latency_s(self) -> float:
        return self.received_s - self.sent_s


@dataclasses.dataclass
class RunRecord:
    scenario: str
    vehicles: dict[str, int]  # name -> SRC
    duration_s: float
    warp_factor: float
    wall_seconds: float = 0.0  # the run (after start-up), wall s
    clock_mode: str = "free"  # deterministic | free | wall
    warp: float | None = None  # the throttle actually used (None: as fast as possible)
    startup_wall_s: float = 0.0
    steps: int = 0  # deterministic: clock steps
    warnings: list[str] = dataclasses.field(default_factory=list)  # the run may be invalid
    end_s: float = 0.0  # simulated time when recording stopped
    # channel events and arrivals that came after the end of a wall or free run (not booked)
    after_end: int = 0
    interrupted: str | None = None  # the signal that stopped the run early (SIGINT, SIGTERM)
    # ROS time of simulated second 0 (the scenario's clock.start_time; a wall-clock run: its
    # start): the record holds ROS times (as run.mcap), the written outputs seconds since this
    # origin
    start_time_s: float = 0.0
    transmissions: list[Transmission] = dataclasses.field(default_factory=list)
    receptions: list[Reception] = dataclasses.field(default_factory=list)
    sent: list[SentMessage] = dataclasses.field(default_factory=list)
    local_events: list[LocalEventRecord] = dataclasses.field(default_factory=list)
    deliveries: list[Delivery] = dataclasses.field(default_factory=list)
    overheard: dict[str, int] = dataclasses.field(default_factory=lambda: defaultdict(int))
    unmatched: dict[str, int] = dataclasses.field(default_factory=lambda: defaultdict(int))
    # arrivals of a message its destination had already published ('topic at receiver' -> count)
    duplicates: dict[str, int] = dataclasses.field(default_factory=lambda: defaultdict(int))
    # `matching`: arrivals that fit messages of several traffic entries ('topic at receiver' ->
    # count), messages whose fates the evidence could not decide ('topic from a to b' -> count),
    # arrivals the middleware reported lost (resolved topic -> count)
    ambiguous: dict[str, int] = dataclasses.field(default_factory=lambda: defaultdict(int))
    indistinct: dict[str, int] = dataclasses.field(default_factory=lambda: defaultdict(int))
    lost_arrivals: dict[str, int] = dataclasses.field(default_factory=lambda: defaultdict(int))
    bridges: dict[str, dict] = dataclasses.field(default_factory=dict)  # node -> its summary
    fixes: list[Fix] = dataclasses.field(default_factory=list)
    ledger: Ledger = dataclasses.field(default_factory=Ledger)
    # vehicle -> [(start_s, end_s)] of its MAC's active slots (timeline shading)
    slot_windows: dict[str, list[tuple[float, float]]] = dataclasses.field(default_factory=dict)

    def vehicle_of(self, src: int) -> str:
        for name, vehicle_src in self.vehicles.items():
            if vehicle_src == src:
                return name
        return f"SRC {src}"


def _outcome(num_frames: int, num_bad_frames: int) -> str:
    if num_frames > 0 and num_bad_frames >= num_frames:
        return "frame_errors"
    return "partial" if num_bad_frames > 0 else "received"


def driver_reception(receiver: str, src: int, dest: int, reported_s: float, payload: bytes,
                     transmissions: list[Transmission], snr_db: float = math.nan,
                     num_frames: int = 0, num_bad_frames: int = 0) -> Reception:
    """The Reception of a packet a modem driver published on `packet_rx` at reported_s (its
    node clock: the packet was decoded then). A driver reports only what it decoded, with no
    transmit time: the packet is paired with the latest transmission of SRC src started by
    then with the same bytes (any, when none has them: frames may have failed), whose start
    and on-air time give transmit_s and the arrival (reported_s - on-air time); no
    transmission: transmit_s NaN, arrival at reported_s. Outcome from the frame counts:
    received, partial (some bad) or frame_errors (all bad)."""
    sent = [t for t in transmissions if t.src == src and t.start_s <= reported_s]
    same = [t for t in sent if t.payload == payload]
    paired = max(same or sent, key=lambda t: t.start_s, default=None)
    duration = paired.duration_s if paired is not None else 0.0
    return Reception(receiver, src, dest, paired.start_s if paired is not None else math.nan,
                     reported_s - duration, duration, _outcome(num_frames, num_bad_frames),
                     snr_db, False, num_frames=num_frames, num_bad_frames=num_bad_frames)
