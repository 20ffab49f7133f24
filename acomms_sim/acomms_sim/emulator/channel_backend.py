"""Micromodem emulators on the simulated acoustic channel: the channel physics decides what each
emulated modem hears.

`SimChannelBackend` is an `AcousticBackend` for `MicromodemModel`s. Each attached modem has a
position and a `ReceiverChannel` (the same receiver model `modem_sim_node` uses), so propagation
delay, transmission loss, ambient noise, collisions, half duplex and per-frame errors all come
from acomms_sim's physics. Emulators run on the wall clock, so receptions are scheduled with
timers at the arrival's end (transmit time + slant range / c + on-air time), and the receiver's
lock decision with one at the end of the arrival's detection window: a packet it locks onto is
announced (`$CARXP`) while it is still arriving. ROS-free.

EvoLogics S2C emulators (`evologics_model`) sit on the same backend: they bring their own
`profile` (source levels) and band, and `relative_enu` gives their USBL the true geometry.

Source level: each transmission's level is the modem profile's for the sender's
`pwramp.txlevel` in its band (185/181/179/167 dB at 25 kHz for levels 0-3), unless the backend
was given a fixed `source_level_db`.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable

from acomms_sim.emulator.micromodem_model import (
    PROFILE,
    AcousticBackend,
    AcousticTransmission,
    MicromodemModel,
    Reception,
)
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import DETECTION_WINDOW_S, ReceiverChannel, Transmission
from acomms_sim.physics.fading import FadingModel
from acomms_sim.physics.geodesy import EnuOrigin, check_position, geodetic_to_enu
from acomms_sim.physics.packet_performance import PacketPerformance
from acomms_sim.physics.transmission_loss import Propagation

Position = tuple[float, float, float]  # latitude, longitude, depth_m


class SimChannelBackend(AcousticBackend):
    """Carries emulator transmissions through the simulated channel (see module docstring)."""

    def __init__(self, propagation: Propagation, noise: AmbientNoise, *,
                 source_level_db: float | None = None, detection_threshold_db: float = -10.0,
                 seed: int = 0, clock: Callable[[], float] = time.time,
                 fading: FadingModel | None = None, capture_margin_db: float = math.inf):
        self.fading = fading or FadingModel()
        self.capture_margin_db = capture_margin_db
        self.propagation = propagation
        self.noise = noise
        self.source_level_db = source_level_db
        self.detection_threshold_db = detection_threshold_db
        self.seed = seed
        self.clock = clock
        self.counters = collections.Counter()
        self._positions: dict[int, Position] = {}
        self._channels: dict[int, ReceiverChannel] = {}
        self._modems: dict[int, MicromodemModel] = {}
        self._timers: set[threading.Timer] = set()
        self._lock = threading.Lock()

    def set_position(self, src: int, latitude: float, longitude: float, depth_m: float) -> None:
        """Place (or move) the modem with this SRC; ValueError for an impossible position."""
        check_position(latitude, longitude, depth_m)
        with self._lock:
            self._positions[src] = (latitude, longitude, depth_m)

    def relative_enu(self, observer: int, remote: int) -> tuple[float, float, float] | None:
        """(east, north, up) metres of the modem `remote` seen from `observer` (None if either
        has no position): the true position a USBL on `observer` measures."""
        with self._lock:
            here, there = self._positions.get(observer), self._positions.get(remote)
        if here is None or there is None:
            return None
        return geodetic_to_enu(*there, EnuOrigin(here[0], here[1], -here[2]))

    def attach(self, modem: MicromodemModel) -> None:
        with self._lock:
            src = modem.src
            if src in self._modems and self._modems[src] is not modem:
                raise ValueError(f"SRC {src} is already on the channel; SRCs must be unique")
            self._modems[src] = modem
            self._channels[src] = ReceiverChannel(
                self.propagation, self.noise, PacketPerformance([self.seed, src]),
                float(modem.config.get("FC0", 25000)), float(modem.config.get("BW0", 5000)),
                self.detection_threshold_db, capture_margin_db=self.capture_margin_db,
                fading=self.fading)

    def detach(self, modem: MicromodemModel) -> None:
        with self._lock:
            if self._modems.get(modem.src) is modem:
                del self._modems[modem.src]
                del self._channels[modem.src]

    def transmit(self, sender: MicromodemModel, transmission: AcousticTransmission) -> None:
        with self._lock:
            position = self._positions.get(sender.src)
            if position is None:
                self.counters["tx_without_position"] += 1
                raise ValueError(f"SRC {sender.src} has no position on the simulated channel")
            tx = _channel_transmission(transmission, position, self._source_level_db(
                sender, transmission))
            self._channels[sender.src].add_own_transmission(tx.start_s, tx.end_s)
            self.counters["transmissions"] += 1
            planned = []
            for src, channel in self._channels.items():
                if src == sender.src or src not in self._positions:
                    continue
                arrival = channel.add_transmission(tx, self._positions[src])
                if arrival is None:
                    continue
                planned.append((self._evaluate, src, arrival.end_s))
                if arrival.decodable:
                    detect_s = min(arrival.start_s + DETECTION_WINDOW_S, arrival.end_s)
                    planned.append((self._detect, src, detect_s))
        for func, src, at_s in planned:
            self._at(at_s, func, src)

    def _at(self, at_s: float, func, src: int) -> None:
        timer = threading.Timer(max(0.0, at_s - self.clock()) + 1e-3, func, (src, at_s))
        timer.daemon = True
        with self._lock:
            self._timers = {t for t in self._timers if t.is_alive()}
            self._timers.add(timer)
        timer.start()

    def _detect(self, src: int, at_s: float) -> None:
        with self._lock:
            channel, modem = self._channels.get(src), self._modems.get(src)
            if channel is None or modem is None:
                return
            detected = channel.pop_detected(max(at_s, self.clock()))
        for arrival in detected:
            modem.detected(arrival.transmission.payload)

    def _source_level_db(self, sender: MicromodemModel,
                         transmission: AcousticTransmission) -> float:
        """The fixed level if one was given, else the profile's for pwramp.txlevel and band."""
        if self.source_level_db is not None:
            return float(self.source_level_db)
        profile = getattr(sender, "profile", PROFILE)  # an EvologicsModel brings its own
        level = sender.config.get("pwramp.txlevel", str(profile.default_tx_level))
        try:
            return profile.source_level_db(int(level), float(transmission.carrier_hz))
        except ValueError:
            self.counters["bad_txlevel"] += 1
            raise ValueError(f"SRC {sender.src}: pwramp.txlevel {level!r} is not 0-3") from None

    def _evaluate(self, src: int, end_s: float) -> None:
        with self._lock:
            channel, modem = self._channels.get(src), self._modems.get(src)
            if channel is None or modem is None:
                return
            receptions = channel.pop_due(max(end_s, self.clock()))
        for result in receptions:
            self.counters[result.outcome] += 1
            if result.outcome != "received":
                continue
            frames = result.frames
            modem.deliver(Reception(
                result.arrival.transmission.payload, result.arrival.delay_s,
                snr_in_db=result.snr_db, snr_out_db=result.snr_db,
                noise_db=int(round(result.noise_db)),
                miniframe_ok=list(frames.miniframe_success) or None,
                dataframe_ok=list(frames.frame_success) or None))

    def close(self) -> None:
        with self._lock:
            timers, self._timers = self._timers, set()
        for timer in timers:
            timer.cancel()


def _channel_transmission(transmission: AcousticTransmission, position: Position,
                          source_level_db: float) -> Transmission:
    """The channel's view of an emulator transmission (the original rides along as payload)."""
    fdp = transmission.kind == "fdp"
    if transmission.kind == "legacy":
        num_data = sum(len(frame) for frame in transmission.frames)
    else:
        num_data = len(transmission.dataframe_bytes)
    dataframe_rate = transmission.dataframe_rate or transmission.miniframe_rate
    return Transmission(
        src=transmission.src, start_s=transmission.start_time, latitude=position[0],
        longitude=position[1], depth_m=position[2], source_level_db=source_level_db,
        center_frequency_hz=float(transmission.carrier_hz),
        bandwidth_hz=float(transmission.bandwidth_hz), fdp=fdp,
        miniframe_rate=transmission.miniframe_rate, dataframe_rate=dataframe_rate,
        num_miniframe_bytes=len(transmission.miniframe_bytes) if fdp else 0,
        num_dataframe_bytes=num_data, duration_s=transmission.duration_s, payload=transmission)
