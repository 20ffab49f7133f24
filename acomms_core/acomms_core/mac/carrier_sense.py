"""Carrier-sense MAC (ROS-free): transmit only after the channel has been quiet for a while.

No slots: a packet may start when the modem has heard nothing for `sense_quiet_seconds` (the end
of the latest arrival it detected: simulator reception events, or CST reports of a real modem),
this vehicle's previous packet plus `guard_time_seconds` is over, and a random backoff has passed.
With `sense_reception_start` the channel is also busy while a packet is still arriving: from a
reception start (the modem detected a packet: simulator `reception_start`, a Micromodem's $CARXP)
until its expected end, or, when the end is not known, until its end report (the CST / reception
event) or `reception_start_timeout_seconds` after its start, whichever comes first.
The backoff, uniform in [0, `backoff_max_seconds`], is drawn anew after every arrival heard and
every own transmission, from `seeded_uniform(random_seed, node name, "backoff", attempt)`, so a run
on the deterministic clock repeats exactly and vehicles waiting for the same quiet channel spread
out. Parameter changes apply at once (there is no slot boundary to wait for).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from acomms_core.mac.policy import SEND_HELD, Action, RequestData, blame
from acomms_core.mac.rate_adaptation import RATE_PARAMETERS
from acomms_core.mac.seeded_random import RANDOM_SEED_PARAMETER, seeded_uniform
from acomms_core.mac.tdma import (
    SOFTWARE_MUTE_PARAMETER,
    TDMA_PARAMETERS,
    SoftwareMute,
    TdmaPolicy,
    frames_from_values,
)
from acomms_core.mac.tdma_schedule import TIME_EPSILON, ScheduleError
from acomms_core.modems.profile import FrameBudget, ModemProfile
from acomms_core.modems.registry import modem_profile
from acomms_core.ros.parameter_spec import ParameterSpec, spec_table

SENSE_SOURCES = ("cst", "reception_events")

# What every unslotted MAC shares with TDMA: rates, budgets, guard, timing, modem profile.
COMMON_PARAMETER_NAMES = (
    "guard_time_seconds", "packet_length_seconds", "always_send_test_data", "miniframe_rate",
    "dataframe_rate", "maximum_miniframe_bytes", "maximum_dataframe_bytes", "tick_period_seconds",
    "status_period_seconds", "service_timeout_seconds", "modem_profile", "maxlen_manual_queue",
    "allow_manual_tx_during_priority_slots", *(spec.name for spec in RATE_PARAMETERS))
COMMON_PARAMETERS = tuple(spec_table(TDMA_PARAMETERS)[name] for name in COMMON_PARAMETER_NAMES)

CARRIER_SENSE_PARAMETERS = COMMON_PARAMETERS + (
    ParameterSpec("sense_quiet_seconds", 2.0,
                  "The channel must have been quiet (no arrival heard) this long before a packet "
                  "starts, s", 0.0, 3600.0),
    ParameterSpec("backoff_max_seconds", 4.0,
                  "Largest random backoff added after each arrival heard or packet sent, s",
                  0.0, 3600.0),
    ParameterSpec("sense_reception_start", True,
                  "Also hear packets while they arrive (the modem's reception_start, $CARXP): "
                  "the channel is busy from their detection until their expected end"),
    ParameterSpec("reception_start_timeout_seconds", 10.0,
                  "A reception start without a known end keeps the channel busy until its end "
                  "report (CST) or this long after its start, s", 0.1, 3600.0),
    SOFTWARE_MUTE_PARAMETER,
    ParameterSpec("sense_source", "cst",
                  "What the node hears the channel from: 'cst' (the modem's detections, real "
                  "or simulated) or 'reception_events' (the simulator's arrivals, exact times)",
                  read_only=True),
    RANDOM_SEED_PARAMETER,
)


@dataclasses.dataclass(frozen=True)
class CarrierSenseConfig:
    frames: FrameBudget
    profile: ModemProfile
    guard_time_seconds: float
    sense_quiet_seconds: float
    backoff_max_seconds: float
    random_seed: int
    sense_reception_start: bool = True
    reception_start_timeout_seconds: float = 10.0


def build_frames(values: Mapping[str, Any]) -> tuple[FrameBudget, ModemProfile]:
    """The frame budget and modem profile of the common rate parameters; ScheduleError."""
    with blame("modem_profile"):
        profile = modem_profile(values["modem_profile"])
    return frames_from_values(values, profile), profile


def build_carrier_sense_config(values: Mapping[str, Any]) -> CarrierSenseConfig:
    frames, profile = build_frames(values)
    if values["sense_source"] not in SENSE_SOURCES:
        raise ScheduleError(f"sense_source: {values['sense_source']!r} is not one of "
                            f"{', '.join(SENSE_SOURCES)}")
    return CarrierSenseConfig(frames, profile, float(values["guard_time_seconds"]),
                              float(values["sense_quiet_seconds"]),
                              float(values["backoff_max_seconds"]), int(values["random_seed"]),
                              bool(values["sense_reception_start"]),
                              float(values["reception_start_timeout_seconds"]))


class CarrierSensePolicy(SoftwareMute, TdmaPolicy):
    """Listen before talk with seeded random backoff."""

    PARAMETERS = CARRIER_SENSE_PARAMETERS

    @classmethod
    def build_config(cls, values: Mapping[str, Any]):
        return build_carrier_sense_config(values)

    def reset(self) -> None:
        super().reset()
        self.heard_until: float | None = None  # end of the latest arrival heard
        self.receiving_until: float | None = None  # a reception start whose end is not known
        self.latest_event_s: float | None = None  # newest channel time an event told of
        self.last_heard_src = -1
        self.attempt = 0
        self.backoff_s = 0.0

    def boundary_after(self, now: float) -> float:
        return now  # no slots: a change applies at the next tick

    def describe(self, config: CarrierSenseConfig, reason: str) -> str:
        frames = config.frames
        return (f"carrier sense ({reason}): quiet {config.sense_quiet_seconds:g} s, backoff "
                f"0..{config.backoff_max_seconds:g} s, guard {config.guard_time_seconds:g} s, "
                f"packet {frames.packet_duration_s:g} s, rates {frames.miniframe_rate}/"
                f"{frames.dataframe_rate}")

    def scan_horizon_s(self) -> float:
        config: CarrierSenseConfig = self.config
        return (config.sense_quiet_seconds + config.backoff_max_seconds
                + config.guard_time_seconds + config.frames.packet_duration_s + 1.0)

    def predictable(self) -> bool:
        return True

    # ----- channel ------------------------------------------------------------------------

    def _redraw(self) -> None:
        self.attempt += 1
        self.backoff_s = self.config.backoff_max_seconds * seeded_uniform(
            self.config.random_seed, self.identity, "backoff", self.attempt)

    def _heard(self, end_s: float, event_s: float) -> None:
        if self.heard_until is None or end_s > self.heard_until:
            self.heard_until = end_s
        if self.latest_event_s is None or event_s > self.latest_event_s:
            self.latest_event_s = event_s

    def channel_heard(self, src: int, end_s: float) -> None:
        """An arrival from `src` was detected; it occupied the channel until `end_s` (its end
        report: the end of any reception start still open)."""
        self.counters["arrivals_heard"] += 1
        self.last_heard_src = src
        self.receiving_until = None
        self._heard(end_s, end_s)
        if self.config is not None:
            self._redraw()

    def reception_started(self, src: int, start_s: float, end_s: float | None) -> bool:
        """The modem detected a packet (from `src`, -1: unknown) whose first sound arrived at
        `start_s`, ending at `end_s` (None: unknown). False when not listened to."""
        config: CarrierSenseConfig | None = self.config
        if config is None or not config.sense_reception_start:
            self.counters["reception_starts_ignored"] += 1
            return False
        self.counters["reception_starts"] += 1
        if src >= 0:
            self.last_heard_src = src
        if end_s is None:
            until = start_s + config.reception_start_timeout_seconds
            self.receiving_until = max(until, self.receiving_until or until)
            self._heard(start_s, start_s)
        else:
            self._heard(end_s, start_s)
        self._redraw()
        return True

    def ready_at(self) -> float | None:
        """Earliest start of the next packet (None: at once)."""
        config: CarrierSenseConfig = self.config
        times = []
        for until in (self.heard_until, self.receiving_until):
            if until is not None:
                times.append(until + config.sense_quiet_seconds)
        if self.last_tx_start is not None:
            times.append(self.last_tx_start + self.last_tx_length + config.guard_time_seconds)
        if not times:
            return None
        return max(times) + self.backoff_s

    def may_send(self, now: float, duration_s: float) -> bool:
        if self.software_mute:
            return False
        ready = self.ready_at()
        return ready is None or now + TIME_EPSILON >= ready

    def begin_tick(self, now: float) -> None:
        if self.latest_event_s is not None and self.latest_event_s > now + 1.0:
            # Arrivals are reported once they started: one "in the future" means the clock
            # jumped back (sim time restarted), and old arrivals say nothing about the channel.
            self.heard_until = self.receiving_until = self.latest_event_s = None
        elif self.receiving_until is not None and now >= self.receiving_until:
            self.counters["reception_start_timeouts"] += 1  # no end report came
            self.heard_until = max(self.heard_until or self.receiving_until, self.receiving_until)
            self.receiving_until = None
        super().begin_tick(now)

    # ----- decisions ----------------------------------------------------------------------

    def next_action(self, now: float, held: FrameBudget | None) -> Action:
        if held is not None:
            return SEND_HELD if self.may_send(now, held.packet_duration_s) else None
        frames, dest, fallback = self.adapt(now, self.config.frames)
        if not self.may_send(now, frames.packet_duration_s):
            return None
        return RequestData(frames, dest=dest, fallback=fallback)

    def on_transmit(self, frames: FrameBudget, now: float) -> None:
        super().on_transmit(frames, now)
        self._redraw()

    # ----- status -------------------------------------------------------------------------

    def status(self, now: float) -> dict[str, Any]:
        """CarrierSenseStatus fields."""
        config: CarrierSenseConfig = self.config
        ready = self.ready_at()
        busy_until = max((t for t in (self.heard_until, self.receiving_until) if t is not None),
                         default=None)
        return {
            "channel_clear": (busy_until is None
                              or now >= busy_until + config.sense_quiet_seconds),
            "we_are_active": self.may_send(now, config.frames.packet_duration_s),
            "software_mute": self.software_mute,
            "time_since_heard_seconds": (-1.0 if self.heard_until is None
                                         else max(0.0, now - self.heard_until)),
            "time_to_ready_seconds": 0.0 if ready is None else max(0.0, ready - now),
            "backoff_seconds": self.backoff_s,
            "sense_quiet_seconds": config.sense_quiet_seconds,
            "backoff_max_seconds": config.backoff_max_seconds,
            "last_heard_src": self.last_heard_src,
            "arrivals_heard": self.counters["arrivals_heard"],
            "receiving": busy_until is not None and now < busy_until,
            "reception_starts": self.counters["reception_starts"],
        }

