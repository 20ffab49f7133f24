"""One receiver's view of the shared acoustic channel: arrivals, locking, interference, fading.

Times are seconds on the simulation clock (floats). A transmission announced on the channel
becomes an `Arrival` at this receiver that starts at transmit time + propagation delay and ends
one packet duration later; it is evaluated once the clock passes its end. Rules (ns-3 UAN
`UanPhyGen` style receiver):
- band: a transmission whose band [f_c ± B/2] does not overlap ours is ignored (`out_of_band`).
  Only a transmission whose carrier and bandwidth both match ours within
  `carrier_tolerance_hz` can be decoded (a Micromodem demodulates only its own FC0/BW0; ns-3
  UAN decodes only the modes in its list); any other overlapping one is interference only
  (`interference_only`), weighted by the share of its band inside ours.
- half duplex: the receiver is deaf while it transmits; an arrival overlapping any of our own
  transmissions is lost (`half_duplex`), and a transmission ends any lock.
- locking: arrivals are considered in order of their first sound (ties: lower SRC first). An
  idle receiver detects an arrival when its SINR over the detection window (its first
  `DETECTION_WINDOW_S`, the probe; noise + the other arrivals overlapping that window, weighted as
  below; the arrival's first fading block) reaches `detection_threshold_db`, and locks onto it
  for its whole duration (else `undetected`). An arrival that starts while the receiver is
  locked is not decoded (`busy`): it is only interference. Capture rule: if its level at the
  receiver exceeds the locked packet's by at least `capture_margin_db` (default infinite: no
  capture, as UanPhyGen), it takes the receiver: the locked packet is lost (`busy`, counted as
  `captured`) and the new one is detected as above.
- interference: every other arrival (decoded or not) adds its power to the noise of each frame
  slot of a locked packet, weighted by the fraction of the slot's time it overlaps and by the
  fraction of its band that falls in our band. `interference_db` of a reception is the same
  weighting over the whole packet.
- frames: each frame is drawn with the FER at its own SINR (packet_performance) and its own
  fading gain, giving partial packets with valid-byte ranges.
- Doppler: with velocities (east, north, up m/s) for the sender (carried in its SimPacket)
  and/or this receiver, the closing speed v = −(v_rcv − v_src)·û (û the unit vector from the
  sender to the receiver: both radial velocities combined) is the arrival's `doppler_mps` (CST
  `dop`), the packet arrives compressed by (1 − v/c); below `doppler_tolerance_mps` every
  frame's SINR loses `acomms_sim.physics.doppler.doppler_loss_db` (growing with v², reaching
  `doppler_loss_at_tolerance_db` at the limit; the arrival's `doppler_loss_db`), and when |v|
  exceeds the limit every frame fails.
- multipath: the path's RMS delay spread (Bellhop arrivals) is the arrival's `delay_spread_s`;
  with a tolerance T for the frame's rate (`isi_tolerance_s`, rate -> s), the signal power
  arriving later than T is self-noise in that frame's SINR (`acomms_sim.physics.multipath`:
  from the path's arrivals when known, else the exponential power-delay profile);
  `isi_loss_db` is the largest SINR loss over the frames.
  Detection (the probe) is not penalised.
- randomness: each arrival has its own random stream derived from the seed, the receiver, the
  transmitter's SRC and the transmit time (µs): fading first, then the frame draws. The outcome of
  one packet does not depend on what else was drawn before.
The FDP on-air layout used for the frame slots: the miniframe first, then the dataframe frames
sharing the dataframe time equally.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from acomms_core.modems.modem_rates import frames_used, rate_info
from acomms_sim.physics import geodesy
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.doppler import DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB, doppler_loss_db
from acomms_sim.physics.fading import FadingModel
from acomms_sim.physics.multipath import rate_late_fraction, sinr_with_isi_db
from acomms_sim.physics.packet_performance import (
    FrameOutcome,
    PacketPerformance,
    packet_duration_s,
    valid_byte_ranges,
)
from acomms_sim.physics.transmission_loss import Propagation

HISTORY_S = 60.0  # arrivals / own transmissions older than this cannot overlap anything new
# Detection looks at a packet's first 50 ms (the probe; an assumption, the Micromodem's probe
# length is not published here): arrivals within it are interference to the detection, and a
# packet's lock is decided once this window has passed.
DETECTION_WINDOW_S = 0.05
# Packet boundaries closer than this are the same instant: every boundary test of the receiver
# (lock, half duplex, overlap, interference windows) goes through `overlap_s` / `before`. A packet
# sent back to back starts where the previous ends, but its arrival (start + delay) and the
# previous one's end (start + delay + duration) are different float sums: at absolute clock times
# (~1.7e9 s, float step 0.24 µs) they differ by a few steps. 10 µs is far above that and far below
# a symbol (≥ 0.2 ms at 5 kHz), so no real overlap is lost.
BOUNDARY_EPSILON_S = 1e-5
# A receiver demodulates a transmission whose carrier and bandwidth are each within this of its
# own (configured values; the Doppler shift of the carrier is the demodulator's business).
DEFAULT_CARRIER_TOLERANCE_HZ = 100.0


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
    velocity_mps: tuple[float, float, float] | None = None  # sender's (east, north, up)

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
            mini_end = min(t + rate_info(self.miniframe_rate).miniframe_duration_s,
                           start_s + self.duration_s)
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
    receive_level_db: float  # mean level (sonar equation), before fading
    transmission_loss_db: float
    delay_s: float
    slant_range_m: float
    evaluated: bool = False
    band_fraction: float = 1.0  # share of the transmission's power inside our band
    decodable: bool = True
    status: str = ""  # "" unresolved, locked, busy, undetected, half_duplex, interference
    gains_db: list[float] = dataclasses.field(default_factory=list)  # per fading block
    rng: np.random.Generator | None = None
    power: float = 0.0  # linear in-band power, mean over the fading blocks (set when planned)
    delay_spread_s: float = 0.0  # multipath RMS delay spread of the path (Bellhop arrivals)
    multipath: tuple[tuple[float, float], ...] = ()  # the path's (s after first, power share)
    doppler_mps: float = 0.0  # closing speed along the path (positive: approaching)

    @property
    def faded_level_db(self) -> float:
        """The level the receiver measured at the start (first fading block): what CST and the
        reception event report, so SNR = level - noise without interference."""
        return self.receive_level_db + (self.gains_db[0] if self.gains_db else 0.0)


@dataclasses.dataclass
class Reception:
    """Result of one arrival: outcome 'received', 'half_duplex', 'busy' or 'undetected'."""

    arrival: Arrival
    outcome: str
    noise_db: float
    interference_db: float
    snr_db: float  # SINR at detection (what the modem reports as snr_in)
    frames: FrameOutcome | None = None
    minibytes_valid: list[int] = dataclasses.field(default_factory=list)
    databytes_valid: list[int] = dataclasses.field(default_factory=list)
    segment_snrs_db: list[float] = dataclasses.field(default_factory=list)  # per frame slot
    fading_db: float = 0.0  # fading gain of the first block
    isi_loss_db: float = 0.0  # largest SINR loss of a frame to inter-symbol interference
    doppler_loss_db: float = 0.0  # SINR loss of every frame to residual Doppler (inf: beyond)


@dataclasses.dataclass
class ChannelCounters:
    arrivals: int = 0
    out_of_band: int = 0
    interference_only: int = 0
    received: int = 0
    partial: int = 0
    half_duplex_lost: int = 0
    undetected: int = 0
    busy: int = 0       # arrived while the receiver was locked onto another packet
    captured: int = 0   # locked packets lost to a stronger one (capture rule)
    collisions: int = 0  # receptions that had at least one overlapping in-band arrival
    isi_affected: int = 0  # receptions whose frames lost SINR to inter-symbol interference


def band_overlap_fraction(tx_fc: float, tx_bw: float, rx_fc: float, rx_bw: float) -> float:
    """Fraction of a transmission's band [tx_fc ± tx_bw/2] inside [rx_fc ± rx_bw/2]."""
    low = max(tx_fc - tx_bw / 2.0, rx_fc - rx_bw / 2.0)
    high = min(tx_fc + tx_bw / 2.0, rx_fc + rx_bw / 2.0)
    return max(0.0, high - low) / tx_bw if tx_bw > 0 else 0.0


def closing_speed_mps(src: tuple[float, float, float], rcv: tuple[float, float, float],
                      src_velocity: tuple[float, float, float] | None,
                      rcv_velocity: tuple[float, float, float] | None) -> float:
    """Speed at which the two close in along the line between them (positive: approaching);
    positions (lat, lon, depth), velocities (east, north, up) m/s; 0 without velocities."""
    if src_velocity is None and rcv_velocity is None:
        return 0.0
    east, north, up = geodesy.enu_offset_m(src[0], src[1], -src[2], rcv[0], rcv[1], rcv[2])
    distance = math.sqrt(east * east + north * north + up * up)
    if distance == 0.0:
        return 0.0
    relative = [r - s for r, s in zip(rcv_velocity or (0.0, 0.0, 0.0),
                                      src_velocity or (0.0, 0.0, 0.0), strict=True)]
    return -(relative[0] * east + relative[1] * north + relative[2] * up) / distance


def overlap_s(start_a: float, end_a: float, start_b: float, end_b: float) -> float:
    """Overlap of two time intervals; 0 when shorter than BOUNDARY_EPSILON_S (touching)."""
    overlap = min(end_a, end_b) - max(start_a, start_b)
    return overlap if overlap > BOUNDARY_EPSILON_S else 0.0


def before(t_a: float, t_b: float) -> bool:
    """t_a is earlier than t_b by more than BOUNDARY_EPSILON_S."""
    return t_a < t_b - BOUNDARY_EPSILON_S


def _window(arrival: Arrival) -> float:
    return min(DETECTION_WINDOW_S, arrival.end_s - arrival.start_s)


def _db(power: float) -> float:
    return 10.0 * math.log10(power) if power > 0 else -math.inf


class ReceiverChannel:
    def __init__(self, propagation: Propagation, noise: AmbientNoise,
                 performance: PacketPerformance, center_frequency_hz: float,
                 bandwidth_hz: float, detection_threshold_db: float = -10.0, *,
                 capture_margin_db: float = math.inf, fading: FadingModel | None = None,
                 doppler_tolerance_mps: float = math.inf,
                 isi_tolerance_s: dict[int, float] | None = None,
                 carrier_tolerance_hz: float = DEFAULT_CARRIER_TOLERANCE_HZ,
                 doppler_loss_at_tolerance_db: float = DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB):
        self.propagation = propagation
        self.noise = noise
        self.performance = performance
        self.center_frequency_hz = center_frequency_hz
        self.bandwidth_hz = bandwidth_hz
        self.detection_threshold_db = detection_threshold_db
        self.capture_margin_db = capture_margin_db
        self.fading = fading or FadingModel()
        self.doppler_tolerance_mps = doppler_tolerance_mps
        self.doppler_loss_at_tolerance_db = doppler_loss_at_tolerance_db
        self.isi_tolerance_s = dict(isi_tolerance_s or {})  # rate -> s; absent: no ISI penalty
        self.carrier_tolerance_hz = carrier_tolerance_hz
        self.arrivals: list[Arrival] = []
        self.own_transmissions: list[tuple[float, float]] = []
        self.counters = ChannelCounters()
        self._lock: Arrival | None = None
        self._detected: list[Arrival] = []  # locked since the last pop_detected()

    def in_band(self, center_frequency_hz: float, bandwidth_hz: float) -> bool:
        half_sum = (self.bandwidth_hz + bandwidth_hz) / 2.0
        return abs(self.center_frequency_hz - center_frequency_hz) < half_sum

    def demodulates(self, center_frequency_hz: float, bandwidth_hz: float) -> bool:
        """Whether a transmission with this carrier and band is one this receiver decodes."""
        tolerance = self.carrier_tolerance_hz
        return (abs(center_frequency_hz - self.center_frequency_hz) <= tolerance
                and abs(bandwidth_hz - self.bandwidth_hz) <= tolerance)

    def add_own_transmission(self, start_s: float, end_s: float) -> None:
        self.own_transmissions.append((start_s, end_s))

    def add_transmission(self, tx: Transmission, receiver: tuple[float, float, float],
                         receiver_velocity: tuple[float, float, float] | None = None
                         ) -> Arrival | None:
        """Plan the arrival of tx at receiver (lat, lon, depth), moving at receiver_velocity
        (east, north, up m/s) if known; None if out of band.

        Raises ValueError for a bad position (the caller reports it).
        """
        if not self.in_band(tx.center_frequency_hz, tx.bandwidth_hz):
            self.counters.out_of_band += 1
            return None
        path = self.propagation.path((tx.latitude, tx.longitude, tx.depth_m), receiver,
                                     tx.center_frequency_hz)
        start = tx.start_s + path.delay_s
        doppler = closing_speed_mps((tx.latitude, tx.longitude, tx.depth_m), receiver,
                                    tx.velocity_mps, receiver_velocity)
        speed = path.slant_range_m / path.delay_s if path.delay_s > 0 else 1500.0
        arrival = Arrival(tx, start, start + tx.duration_s * (1.0 - doppler / speed),
                          tx.source_level_db - path.transmission_loss_db,
                          path.transmission_loss_db, path.delay_s, path.slant_range_m,
                          band_fraction=band_overlap_fraction(
                              tx.center_frequency_hz, tx.bandwidth_hz, self.center_frequency_hz,
                              self.bandwidth_hz),
                          decodable=self.demodulates(tx.center_frequency_hz,
                                                     tx.bandwidth_hz),
                          delay_spread_s=path.delay_spread_s, multipath=path.arrivals,
                          doppler_mps=doppler)
        self._draw_fading(arrival)
        self.arrivals.append(arrival)
        if arrival.decodable:
            self.counters.arrivals += 1
        else:
            self.counters.interference_only += 1
            arrival.status = "interference"
        return arrival

    def _draw_fading(self, arrival: Arrival) -> None:
        """The arrival's own random stream (seed, receiver, SRC, transmit µs): fading first."""
        tx = arrival.transmission
        arrival.rng = self.performance.stream(int(tx.src) & 0xFFFF,
                                              int(round(tx.start_s * 1e6)) & (2**63 - 1))
        blocks = self.fading.block_index(max(0.0, tx.duration_s - 1e-9)) + 1
        arrival.gains_db = self.fading.draw_gains_db(arrival.rng, blocks)
        mean_gain = sum(10.0 ** (g / 10.0) for g in arrival.gains_db) / blocks
        arrival.power = 10.0 ** (arrival.receive_level_db / 10.0) * mean_gain * (
            arrival.band_fraction)

    def next_due_s(self) -> float | None:
        pending = [a.end_s for a in self.arrivals if not a.evaluated and a.decodable]
        return min(pending) if pending else None

    def next_detection_s(self) -> float | None:
        """When the earliest unresolved arrival's lock is decided (its detection window ends)."""
        pending = [a.start_s + _window(a) for a in self.arrivals if not a.status]
        return min(pending) if pending else None

    def in_order_whenever_decided(self) -> bool:
        """Whether the unresolved locks may be decided at any later time with the same outcome:
        they are decided in order of first sound, which is the order they come due in only
        while every detection window is whole (no arrival shorter than DETECTION_WINDOW_S)."""
        return all(_window(a) == DETECTION_WINDOW_S for a in self.arrivals if not a.status)

    def pop_detected(self, now_s: float) -> list[Arrival]:
        """The arrivals the receiver locked onto (detected) since the last call, deciding every
        lock due by now_s; in order of their first sound. A later capture or own transmission
        can still lose them (their reception then reports it)."""
        self._resolve_locks(now_s)
        detected, self._detected = self._detected, []
        return detected

    def pop_due(self, now_s: float) -> list[Reception]:
        """Evaluate every arrival that has ended by now_s, in order of end time."""
        self._resolve_locks(now_s)
        due = sorted((a for a in self.arrivals if not a.evaluated and a.end_s <= now_s),
                     key=lambda a: (a.end_s, a.transmission.src))
        receptions = []
        for arrival in due:
            arrival.evaluated = True
            if arrival.decodable:
                receptions.append(self._evaluate(arrival))
        horizon = now_s - HISTORY_S
        self.arrivals = [a for a in self.arrivals if not a.evaluated or a.end_s > horizon]
        self.own_transmissions = [t for t in self.own_transmissions if t[1] > horizon]
        return receptions

    # ---- locking ------------------------------------------------------------------------
    def _resolve_locks(self, now_s: float) -> None:
        pending = sorted((a for a in self.arrivals
                          if not a.status and a.start_s + _window(a) <= now_s),
                         key=lambda a: (a.start_s, a.transmission.src))
        for arrival in pending:
            self._resolve(arrival)

    def _transmitting_at(self, t: float) -> bool:
        return any(not before(t, s) and before(t, e) for s, e in self.own_transmissions)

    def _lock_holds(self, t: float) -> bool:
        lock = self._lock
        if lock is None or not before(t, lock.end_s):
            return False
        return not any(not before(s, lock.start_s) and not before(t, s)
                       for s, _ in self.own_transmissions)

    def _resolve(self, arrival: Arrival) -> None:
        if self._transmitting_at(arrival.start_s):
            arrival.status = "half_duplex"
            return
        if self._lock_holds(arrival.start_s):
            margin = arrival.receive_level_db + arrival.gains_db[0] - (
                self._lock.receive_level_db + self._lock.gains_db[0])
            if margin < self.capture_margin_db:
                arrival.status = "busy"
                return
            if self._detection_snr(arrival) >= self.detection_threshold_db:
                self._lock.status = "busy"
                self.counters.captured += 1
                arrival.status, self._lock = "locked", arrival
                self._detected.append(arrival)
            else:
                arrival.status = "busy"
            return
        if self._detection_snr(arrival) >= self.detection_threshold_db:
            arrival.status, self._lock = "locked", arrival
            self._detected.append(arrival)
        else:
            arrival.status = "undetected"

    def _noise_db(self) -> float:
        return self.noise.band_level_db(self.center_frequency_hz, self.bandwidth_hz)

    def _detection_snr(self, arrival: Arrival) -> float:
        """SINR over the arrival's detection window (first fading block)."""
        start = arrival.start_s
        interference = self._interference_power(arrival, start, start + _window(arrival))
        noise = 10.0 ** (self._noise_db() / 10.0)
        return arrival.receive_level_db + arrival.gains_db[0] - _db(noise + interference)

    # ---- evaluation ---------------------------------------------------------------------
    def _interference_power(self, arrival: Arrival, start_s: float, end_s: float) -> float:
        span = end_s - start_s
        total = 0.0
        for other in self.arrivals:
            if other is arrival:
                continue
            overlap = overlap_s(start_s, end_s, other.start_s, other.end_s)
            if overlap > 0 and span > 0:
                total += other.power * overlap / span
        return total

    def _evaluate(self, arrival: Arrival) -> Reception:
        tx = arrival.transmission
        noise = self._noise_db()
        whole = _db(self._interference_power(arrival, arrival.start_s, arrival.end_s))
        if whole > -math.inf:
            self.counters.collisions += 1
        if arrival.status == "half_duplex" or any(
                overlap_s(s, e, arrival.start_s, arrival.end_s) > 0
                for s, e in self.own_transmissions):
            self.counters.half_duplex_lost += 1
            return Reception(arrival, "half_duplex", noise, whole, math.nan)
        if arrival.status in ("busy", "undetected"):
            setattr(self.counters, arrival.status, getattr(self.counters, arrival.status) + 1)
            return Reception(arrival, arrival.status, noise, whole, self._detection_snr(arrival),
                             fading_db=arrival.gains_db[0])
        slots = tx.segments(arrival.start_s)
        sinrs, isi_loss = self._slot_sinrs(arrival, slots, 10.0 ** (noise / 10.0))
        first_snr = self._detection_snr(arrival)
        # beyond the modem's tracking (inf) every frame fails; below it a gradual loss
        doppler_loss = doppler_loss_db(arrival.doppler_mps, self.doppler_tolerance_mps,
                                       self.doppler_loss_at_tolerance_db)
        mini_snrs = [s - doppler_loss for (kind, _, _), s in zip(slots, sinrs, strict=True)
                     if kind == "mini"]
        data_snrs = [s - doppler_loss for (kind, _, _), s in zip(slots, sinrs, strict=True)
                     if kind == "data"]
        frames = self.performance.draw_packet(
            tx.miniframe_rate, tx.dataframe_rate, tx.num_miniframe_bytes, tx.num_dataframe_bytes,
            mini_snrs[0] if mini_snrs else first_snr - doppler_loss, data_snrs, rng=arrival.rng)
        mini_valid = (valid_byte_ranges(frames.miniframe_success, tx.num_miniframe_bytes,
                                        tx.num_miniframe_bytes) if tx.num_miniframe_bytes else [])
        data_valid = valid_byte_ranges(frames.frame_success,
                                       rate_info(tx.dataframe_rate).frame_bytes,
                                       tx.num_dataframe_bytes)
        self.counters.received += 1
        if not frames.packet_success:
            self.counters.partial += 1
        return Reception(arrival, "received", noise, whole, first_snr, frames,
                         mini_valid, data_valid, sinrs, fading_db=arrival.gains_db[0],
                         isi_loss_db=isi_loss, doppler_loss_db=doppler_loss)

    def _slot_sinrs(self, arrival: Arrival, slots: list[tuple[str, float, float]],
                    noise_power: float) -> tuple[list[float], float]:
        """SINR of each frame slot (its fading block, the overlapping interference and the ISI
        of its rate) and the largest SINR loss to ISI."""
        tx = arrival.transmission
        sinrs, isi_loss = [], 0.0
        for kind, start, end in slots:
            gain = arrival.gains_db[self.fading.block_index(start - arrival.start_s)
                                    if arrival.gains_db else 0]
            disturbance = noise_power + self._interference_power(arrival, start, end)
            signal = 10.0 ** ((arrival.receive_level_db + gain) / 10.0)
            rate = tx.miniframe_rate if kind == "mini" else tx.dataframe_rate
            late = rate_late_fraction(self.isi_tolerance_s, rate, arrival.delay_spread_s,
                                      arrival.multipath)
            clean = arrival.receive_level_db + gain - _db(disturbance)
            sinr = sinr_with_isi_db(signal, disturbance, late) if late > 0.0 else clean
            isi_loss = max(isi_loss, clean - sinr)
            sinrs.append(sinr)
        if isi_loss > 0.0:
            self.counters.isi_affected += 1
        return sinrs, isi_loss
