"""Small-scale fading of the received level: Rician / Rayleigh, seeded per link and packet.

Statistics (Qarabaqi & Stojanovic, IEEE JOE 38(4), 2013: the small-scale variation of an
acoustic link about its large-scale mean is Rician-like, with a strong stable path plus a
diffuse, Rayleigh-distributed part): the complex amplitude
    h = √(K/(K+1)) + √(1/(K+1)) · CN(0, 1),   power gain g = |h|²,  E[g] = 1
with K the Rician factor (power of the stable path over the diffuse power; K = 0 is Rayleigh).
So the mean received level stays the sonar-equation level; fading only spreads it.

Time variation: with `coherence_time_s` 0 one gain holds for a whole packet; otherwise the packet
is cut into blocks of the coherence time from its first arrival and each block draws an
independent gain (block fading), so long packets see several.

Outage (the analytic curve a Monte Carlo must match): P(g < g0) = 1 − exp(−g0) for Rayleigh; for
Rician the integral of the power pdf (K+1)·e^(−K)·e^(−(K+1)g)·I0(2√(K(K+1)g)) (i.e. 2(K+1)·g is
non-central χ² with 2 degrees of freedom and non-centrality 2K).

Draws come from the per-arrival random stream the channel derives from the seed, the receiver,
the transmitter and the packet's transmit time, so the same seed gives the same gains whatever
else happens on the channel and in whatever order.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

MODELS = ("none", "rayleigh", "rician")


@dataclasses.dataclass(frozen=True)
class FadingModel:
    model: str = "none"
    k_factor: float = 0.0          # Rician K (linear); rayleigh ignores it (K = 0)
    coherence_time_s: float = 0.0  # 0: one gain per packet; > 0: one per block of this length

    def validate(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown fading model {self.model!r}; choose one of {list(MODELS)}")
        if not (math.isfinite(self.k_factor) and self.k_factor >= 0):
            raise ValueError(f"fading K factor must be >= 0, not {self.k_factor}")
        if not (math.isfinite(self.coherence_time_s) and self.coherence_time_s >= 0):
            raise ValueError(f"coherence time must be >= 0 s, not {self.coherence_time_s}")

    @property
    def enabled(self) -> bool:
        return self.model != "none"

    @property
    def k(self) -> float:
        return 0.0 if self.model == "rayleigh" else float(self.k_factor)

    def block_index(self, offset_s: float) -> int:
        if self.coherence_time_s <= 0:
            return 0
        return max(0, int(offset_s // self.coherence_time_s))

    def draw_gains_db(self, rng: np.random.Generator, blocks: int) -> list[float]:
        """Power gains (dB) of `blocks` independent blocks; all 0 dB when fading is off."""
        if not self.enabled:
            return [0.0] * blocks
        k = self.k
        normal = rng.standard_normal((blocks, 2))
        los = math.sqrt(k / (k + 1.0))
        diffuse = math.sqrt(1.0 / (2.0 * (k + 1.0)))
        gains = (los + diffuse * normal[:, 0]) ** 2 + (diffuse * normal[:, 1]) ** 2
        return [float(10.0 * math.log10(max(g, 1e-30))) for g in gains]

    def outage_probability(self, margin_db: float) -> float:
        """P(gain < −margin): the share of packets lost when a link with this mean margin
        (mean SNR minus the SNR a packet needs) fails below its threshold."""
        g0 = 10.0 ** (-margin_db / 10.0)
        if not self.enabled:
            return 0.0 if margin_db > 0 else 1.0
        k = self.k
        if k == 0.0:
            return float(-math.expm1(-g0))
        # Rician power pdf (K+1)·e^(−K)·e^(−(K+1)g)·I0(2√(K(K+1)g)), integrated over [0, g0]
        g = np.linspace(0.0, g0, 4001)
        pdf = (k + 1.0) * np.exp(-k - (k + 1.0) * g) * np.i0(2.0 * np.sqrt(k * (k + 1.0) * g))
        return float(np.trapezoid(pdf, g))
