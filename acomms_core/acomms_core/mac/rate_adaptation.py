"""Per-link rate adaptation (ROS-free): the dataframe rate a MAC uses for each destination.

With `rate_policy: adaptive` a MAC keeps, per vehicle it hears, an exponentially weighted moving
average (EWMA, over power: the mean SNR) of the in-band SNR its modem reports for that vehicle's
packets (CST.snr_in, the convention of the simulator and of the FER tables). Links are taken
as reciprocal: the SNR at which we hear a vehicle is the SNR at which it hears us (same source
levels and noise).

For a destination with a fresh estimate the rate is the highest-capacity candidate whose
expected packet error rate (`acomms_core.modems.frame_errors.packet_error_rate`, the same
tables the simulator draws frames with) at (EWMA − rate_margin_db) stays below
rate_target_per. With rate_fading_model rayleigh or rician that PER is averaged over the fading
gain of the packet around the mean SNR (`faded_packet_error_rate`: one gain per packet, as the
simulator's block fading draws it), so a rate is not chosen where deep fades would lose it.
Hysteresis: a rate above the link's current one must also pass with another rate_hysteresis_db of
margin, so an SNR wobbling around a threshold does not flip the rate at
every report; the current rate is kept while it still passes. Broadcast, a destination never
heard, and a link whose latest report is older than rate_link_max_age_seconds (node clock) get
the most robust candidate (lowest bit rate). With `rate_policy: fixed` every packet uses the
MAC's configured dataframe_rate, as before.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from acomms_core.modems.frame_errors import FADING_MODELS, faded_packet_error_rate
from acomms_core.modems.modem_rates import RATES, rate_info
from acomms_core.ros.parameter_spec import ParameterSpec, defaults

RATE_POLICIES = ("fixed", "adaptive")

RATE_PARAMETERS = (
    ParameterSpec("rate_policy", "fixed",
                  "'fixed': every packet at dataframe_rate; 'adaptive': per destination, the "
                  "highest of rate_candidates whose expected packet error rate at the smoothed "
                  "CST SNR minus rate_margin_db stays below rate_target_per (most robust "
                  "candidate for broadcast, unknown or stale links); applies at once"),
    ParameterSpec("rate_candidates", "1,3,5",
                  "Dataframe rates the adaptive policy chooses from: comma-separated rate "
                  "numbers"),
    ParameterSpec("rate_target_per", 0.75,
                  "Adaptive: expected packet error rate a rate must stay below; the default "
                  "favours goodput (rate 5 carries 4 times the bytes of rate 3, so it pays off "
                  "up to a PER near 1 - 1/4), lower it for fewer lost packets", 0.001, 0.9),
    ParameterSpec("rate_margin_db", 1.0,
                  "Adaptive: dB subtracted from the smoothed SNR before the rate is chosen",
                  0.0, 30.0),
    ParameterSpec("rate_hysteresis_db", 1.0,
                  "Adaptive: extra dB a faster rate needs before the link switches up to it",
                  0.0, 30.0),
    ParameterSpec("rate_snr_smoothing", 0.1,
                  "Adaptive: EWMA weight of a new SNR report (1: only the latest report)",
                  0.01, 1.0),
    ParameterSpec("rate_fading_model", "none",
                  "Adaptive: fading the expected packet error rate is averaged over around the "
                  "smoothed SNR, one gain per packet: 'none' (the PER at the mean SNR), "
                  "'rayleigh' or 'rician' (factor rate_rician_k_db); set it to the channel's "
                  "fading, else deep fades make a fast rate lose more than expected"),
    ParameterSpec("rate_rician_k_db", 10.0,
                  "Adaptive, rate_fading_model rician: Rician K factor (stable over diffuse "
                  "power), dB", -10.0, 20.0),
    ParameterSpec("rate_link_max_age_seconds", 600.0,
                  "Adaptive: a link not heard for this long (node clock) is stale and gets the "
                  "most robust rate, s", 1.0, 864000.0),
)
RATE_PARAMETER_NAMES = frozenset(spec.name for spec in RATE_PARAMETERS)


def parse_candidates(text: Any) -> tuple[int, ...]:
    """'1,3,5' (or a list) -> the rates, slowest first; ValueError naming a bad entry."""
    items = text if isinstance(text, (list, tuple)) else str(text).replace(" ", "").split(",")
    rates = []
    for item in items:
        if item == "":
            continue
        try:
            rate = int(item)
        except ValueError:
            raise ValueError(f"{item!r} is not a rate number") from None
        if rate not in RATES:
            raise ValueError(f"rate {rate} is not one of {sorted(RATES)}")
        rates.append(rate)
    if not rates:
        raise ValueError("no rate given")
    return tuple(sorted(set(rates), key=lambda r: (rate_info(r).bit_rate_bps, r)))


@dataclasses.dataclass(frozen=True)
class RateSettings:
    policy: str = "fixed"
    candidates: tuple[int, ...] = (1, 3, 5)  # slowest (most robust) first
    target_per: float = 0.75
    margin_db: float = 1.0
    hysteresis_db: float = 1.0
    smoothing: float = 0.1
    max_age_s: float = 600.0
    miniframe_rate: int = 1
    fading_model: str = "none"
    rician_k_db: float = 10.0

    @property
    def k_factor(self) -> float:
        """Rician K (linear) of the fading model; 0 for rayleigh and none."""
        return 10.0 ** (self.rician_k_db / 10.0) if self.fading_model == "rician" else 0.0

    @property
    def adaptive(self) -> bool:
        return self.policy == "adaptive"

    @property
    def fallback(self) -> int:
        """The most robust candidate: broadcast, unknown and stale links."""
        return self.candidates[0]


def rate_settings(values: Mapping[str, Any]) -> RateSettings:
    """Validated settings from parameter values; ValueError('parameter: reason')."""
    values = {**defaults(RATE_PARAMETERS), "miniframe_rate": 1, **values}
    policy = values["rate_policy"]
    if policy not in RATE_POLICIES:
        raise ValueError(f"rate_policy: {policy!r} is not one of {', '.join(RATE_POLICIES)}")
    fading = values["rate_fading_model"]
    if fading not in FADING_MODELS:
        raise ValueError(f"rate_fading_model: {fading!r} is not one of "
                         f"{', '.join(FADING_MODELS)}")
    try:
        candidates = parse_candidates(values["rate_candidates"])
    except ValueError as exc:
        raise ValueError(f"rate_candidates: {exc}") from None
    return RateSettings(policy, candidates, float(values["rate_target_per"]),
                        float(values["rate_margin_db"]), float(values["rate_hysteresis_db"]),
                        float(values["rate_snr_smoothing"]),
                        float(values["rate_link_max_age_seconds"]), int(values["miniframe_rate"]),
                        fading, float(values["rate_rician_k_db"]))


def passes(settings: RateSettings, rate: int, snr_db: float, extra_db: float = 0.0) -> bool:
    """Whether the rate's expected PER at snr − margin − extra (averaged over the fading model's
    gains) stays below the target."""
    snr = snr_db - settings.margin_db - extra_db
    return faded_packet_error_rate(settings.miniframe_rate, rate, snr, settings.fading_model,
                                   settings.k_factor) < settings.target_per


def choose_rate(settings: RateSettings, snr_db: float, current: int | None = None) -> int:
    """The highest candidate that passes at this SNR (a rate above `current` with hysteresis);
    the most robust candidate when none passes."""
    order = settings.candidates  # slowest first
    keep = current in order and passes(settings, current, snr_db)
    chosen = current if keep else settings.fallback
    for rate in order:
        if keep and order.index(rate) <= order.index(current):
            continue  # the kept rate, or a slower one
        if passes(settings, rate, snr_db, settings.hysteresis_db if keep else 0.0):
            chosen = rate
    return chosen


def smoothed(previous: float | None, report: float, weight: float) -> float:
    """EWMA step over SNR as a power ratio (dB in and out); the first report starts it.

    Averaging power, not dB, estimates the mean SNR: under fading the mean of the dB values
    lies below it (by 2.5 dB for Rayleigh), which would make the MAC needlessly slow."""
    if previous is None:
        return report
    power = (1.0 - weight) * 10.0 ** (previous / 10.0) + weight * 10.0 ** (report / 10.0)
    return 10.0 * math.log10(power)


@dataclasses.dataclass
class LinkEstimate:
    snr_db: float
    updated_s: float
    rate: int
    reports: int = 1


class RateAdapter:
    """Link estimates per heard vehicle and the rate chosen for each destination."""

    def __init__(self, settings: RateSettings | None = None, broadcast_address: int = 255):
        self.settings = settings or RateSettings()
        self.broadcast_address = broadcast_address
        self.links: dict[int, LinkEstimate] = {}
        self._turn = 0  # round robin over destinations with a faster rate (next_target)

    def configure(self, settings: RateSettings, broadcast_address: int) -> None:
        """New settings: each link's rate is chosen again (estimates are kept)."""
        self.settings, self.broadcast_address = settings, broadcast_address
        for link in self.links.values():
            link.rate = choose_rate(settings, link.snr_db)

    def reset(self) -> None:
        self.links.clear()

    def observe(self, src: int, snr_db: float, now_s: float) -> bool:
        """A packet from `src` heard at this SNR at node-clock time now_s; False if ignored
        (no finite SNR, no valid source, the broadcast address)."""
        if not math.isfinite(snr_db) or src < 0 or src == self.broadcast_address:
            return False
        link = self.links.get(src)
        if link is not None and (link.updated_s > now_s or self.stale(link, now_s)):
            link = None  # clock jumped back, or too old to average with
        snr = smoothed(None if link is None else link.snr_db, snr_db, self.settings.smoothing)
        rate = choose_rate(self.settings, snr, None if link is None else link.rate)
        reports = 1 if link is None else link.reports + 1
        self.links[src] = LinkEstimate(snr, now_s, rate, reports)
        return True

    def stale(self, link: LinkEstimate, now_s: float) -> bool:
        return now_s - link.updated_s > self.settings.max_age_s or link.updated_s > now_s

    def fresh_links(self, now_s: float) -> dict[int, LinkEstimate]:
        return {src: link for src, link in sorted(self.links.items())
                if not self.stale(link, now_s)}

    def rate_for(self, dest: int | None, now_s: float) -> int:
        """The rate for a packet to `dest` (None: not known yet -> the fallback)."""
        link = self.links.get(dest) if dest is not None else None
        if link is None or dest == self.broadcast_address or self.stale(link, now_s):
            return self.settings.fallback
        return link.rate

    def next_target(self, now_s: float) -> tuple[int | None, int]:
        """(dest, rate) to ask the queue for first: the fresh links whose rate is faster than
        the fallback take turns (`took_turn` once a request for one went out); (None, fallback)
        when there is none."""
        faster = [(src, link.rate) for src, link in self.fresh_links(now_s).items()
                  if link.rate != self.settings.fallback]
        if not faster:
            return None, self.settings.fallback
        return faster[self._turn % len(faster)]

    def took_turn(self) -> None:
        """A request for next_target's destination went out: the next one's turn."""
        self._turn += 1

    def status(self, now_s: float) -> dict[str, Any]:
        """Status message fields (every MAC status carries them)."""
        fresh = self.fresh_links(now_s) if self.settings.adaptive else {}
        return {"rate_policy": self.settings.policy,
                "rate_fallback": self.settings.fallback,
                "rate_dests": list(fresh),
                "rate_dest_rates": [link.rate for link in fresh.values()],
                "rate_dest_snr_db": [link.snr_db for link in fresh.values()]}

