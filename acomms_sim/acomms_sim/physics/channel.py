"""One receiver's view of the shared acoustic channel: arrivals, half duplex, collisions.

Times are seconds on the simulation clock (floats). A transmission announced on the channel
becomes an `Arrival` at this receiver that starts at transmit time + propagation delay (slant
range / sound speed) and ends one packet duration later; it is evaluated once the clock passes
its end. Rules:
- out of band: a transmission whose band [f_c ± B/2] does not overlap ours is ignored (counted);
- half duplex: an arrival that overlaps any of our own transmissions is lost;
- collisions: every other in-band arrival overlapping a frame's time slot adds its level to the
  noise of that frame (the weaker packet sees the stronger as noise, and vice versa);
- detection: the packet is detected only if the SINR of its first segment (the miniframe, or the
  first dataframe frame) is at least `detection_threshold_db`; otherwise nothing is reported;
- frames: each frame is drawn with the FER at its own SINR (packet_performance), giving partial
  packets with valid-byte ranges.
The FDP on-air layout used for the frame slots: the miniframe first, then the dataframe frames
sharing the dataframe time equally.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from acomms_core.modems.modem_rates import frames_used, rate_info
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.packet_performance import (
    FrameOutcome,
    PacketPerformance,
    packet_duration_s,
    sum_levels_db,
    valid_byte_ranges,
)
from acomms_sim.physics.transmission_loss import Propagation

HISTORY_S = 60.0  # arrivals / own transmissions older than this cannot overlap anything new


@dataclasses.dataclass
class Transmission:
    """A packet put on the water by some modem."""

    src: int
    start_s: float
    latitude: float
    longitude: float
    depth_m: float
    source_level_db: float
    center_frequency_hz: float
    bandwidth_hz: float
    fdp: bool
    miniframe_rate: int
    dataframe_rate: int
    num_miniframe_bytes: int
    num_dataframe_bytes: int
    duration_s: float | None = None
    payload: Any = None  # carried through untouched (e.g. the SimPacket message)

    def __post_init__(self):
        if self.duration_s is None:
            self.duration_s = packet_duration_s(self.fdp, self.miniframe_rate, self.dataframe_rate,
                                                self.num_miniframe_bytes, self.num_dataframe_bytes)

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s

    def segments(self, start_s: float) -> list[tuple[str, float, float]]:
        """(kind, start, end) time slots of the miniframe and each dataframe frame."""
        slots = []
        t = start_s
        if self.fdp:
            mini_end = t + rate_info(self.miniframe_rate).miniframe_duration_s
            slots.append(("mini", t, mini_end))
            t = mini_end
        frames = frames_used(self.dataframe_rate, self.num_dataframe_bytes)
        if frames:
            step = (start_s + self.duration_s - t) / frames
            slots += [("data", t + i * step, t + (i + 1) * step) for i in range(frames)]
        return slots


@dataclasses.dataclass
class Arrival:
    transmission: Transmission
    start_s: float
    end_s: float
    receive_level_db: float
    transmission_loss_db: float
    delay_s: float
    slant_range_m: float
    evaluated: bool = False


@dataclasses.dataclass
class Reception:
    """Result of one arrival: outcome 'received', 'half_duplex' or 'undetected'."""

    arrival: Arrival
    outcome: str
    noise_db: float
    interference_db: float
    snr_db: float  # SINR of the first segment (what the modem reports as snr_in)
    frames: FrameOutcome | None = None
    minibytes_valid: list[int] = dataclasses.field(default_factory=list)
    databytes_valid: list[int] = dataclasses.field(default_factory=list)
    segment_snrs_db: list[float] = dataclasses.field(default_factory=list)  # per frame slot


@dataclasses.dataclass
class ChannelCounters:
    arrivals: int = 0
    out_of_band: int = 0
    received: int = 0
    partial: int = 0
    half_duplex_lost: int = 0
    undetected: int = 0
    collisions: int = 0  # receptions that had at least one overlapping in-band arrival


class ReceiverChannel:
    def __init__(self, propagation: Propagation, noise: AmbientNoise,
                 performance: PacketPerformance, center_frequency_hz: float,
                 bandwidth_hz: float, detection_threshold_db: float = -10.0):
        self.propagation = propagation
        self.noise = noise
        self.performance = performance
        self.center_frequency_hz = center_frequency_hz
        self.bandwidth_hz = bandwidth_hz
        self.detection_threshold_db = detection_threshold_db
        self.arrivals: list[Arrival] = []
        self.own_transmissions: list[tuple[float, float]] = []
        self.counters = ChannelCounters()

    def in_band(self, center_frequency_hz: float, bandwidth_hz: float) -> bool:
        half_sum = (self.bandwidth_hz + bandwidth_hz) / 2.0
        return abs(self.center_frequency_hz - center_frequency_hz) < half_sum

    def add_own_transmission(self, start_s: float, end_s: float) -> None:
        self.own_transmissions.append((start_s, end_s))

    def add_transmission(self, tx: Transmission,
                         receiver: tuple[float, float, float]) -> Arrival | None:
        """Plan the arrival of tx at receiver (lat, lon, depth); None if out of band.

        Raises ValueError for a bad position (the caller reports it).
        """
        if not self.in_band(tx.center_frequency_hz, tx.bandwidth_hz):
            self.counters.out_of_band += 1
            return None
        path = self.propagation.path((tx.latitude, tx.longitude, tx.depth_m), receiver,
                                     tx.center_frequency_hz)
        start = tx.start_s + path.delay_s
        arrival = Arrival(tx, start, start + tx.duration_s,
                          tx.source_level_db - path.transmission_loss_db,
                          path.transmission_loss_db, path.delay_s, path.slant_range_m)
        self.arrivals.append(arrival)
        self.counters.arrivals += 1
        return arrival

    def next_due_s(self) -> float | None:
        pending = [a.end_s for a in self.arrivals if not a.evaluated]
        return min(pending) if pending else None

    def pop_due(self, now_s: float) -> list[Reception]:
        """Evaluate every arrival that has ended by now_s, in order of end time."""
        due = sorted((a for a in self.arrivals if not a.evaluated and a.end_s <= now_s),
                     key=lambda a: a.end_s)
        receptions = []
        for arrival in due:
            arrival.evaluated = True
            receptions.append(self._evaluate(arrival))
        horizon = now_s - HISTORY_S
        self.arrivals = [a for a in self.arrivals if not a.evaluated or a.end_s > horizon]
        self.own_transmissions = [t for t in self.own_transmissions if t[1] > horizon]
        return receptions

    def _interference_db(self, arrival: Arrival, start_s: float, end_s: float) -> float:
        levels = [other.receive_level_db for other in self.arrivals
                  if other is not arrival and other.start_s < end_s and other.end_s > start_s]
        return sum_levels_db(levels)

    def _evaluate(self, arrival: Arrival) -> Reception:
        tx = arrival.transmission
        noise = self.noise.band_level_db(self.center_frequency_hz, self.bandwidth_hz)
        whole_interference = self._interference_db(arrival, arrival.start_s, arrival.end_s)
        if whole_interference > -math.inf:
            self.counters.collisions += 1
        if any(s < arrival.end_s and e > arrival.start_s for s, e in self.own_transmissions):
            self.counters.half_duplex_lost += 1
            return Reception(arrival, "half_duplex", noise, whole_interference, math.nan)
        slots = tx.segments(arrival.start_s)
        sinrs = []
        for _kind, start, end in slots:
            noise_plus = sum_levels_db([noise, self._interference_db(arrival, start, end)])
            sinrs.append(arrival.receive_level_db - noise_plus)
        first_snr = sinrs[0] if sinrs else arrival.receive_level_db - noise
        if first_snr < self.detection_threshold_db:
            self.counters.undetected += 1
            return Reception(arrival, "undetected", noise, whole_interference, first_snr,
                             segment_snrs_db=sinrs)
        mini_snrs = [s for (kind, _, _), s in zip(slots, sinrs, strict=True) if kind == "mini"]
        data_snrs = [s for (kind, _, _), s in zip(slots, sinrs, strict=True) if kind == "data"]
        frames = self.performance.draw_packet(
            tx.miniframe_rate, tx.dataframe_rate, tx.num_miniframe_bytes, tx.num_dataframe_bytes,
            mini_snrs[0] if mini_snrs else first_snr, data_snrs)
        mini_valid = (valid_byte_ranges(frames.miniframe_success, tx.num_miniframe_bytes,
                                        tx.num_miniframe_bytes) if tx.num_miniframe_bytes else [])
        data_valid = valid_byte_ranges(frames.frame_success,
                                       rate_info(tx.dataframe_rate).frame_bytes,
                                       tx.num_dataframe_bytes)
        self.counters.received += 1
        if not frames.packet_success:
            self.counters.partial += 1
        return Reception(arrival, "received", noise, whole_interference, first_snr, frames,
                         mini_valid, data_valid, sinrs)
