"""Doppler penalty of a receiver, ROS-free: gradual SINR loss below the hard tracking limit.

A modem estimates the Doppler (time compression) of a packet and resamples it; what its
compensation leaves (a residual compression and carrier offset that drift over the packet) grows
with the closing speed v, and the self-noise it causes grows with the residual's square. So the
model is

    loss_dB(v) = L_T · (|v| / v_T)²   for |v| ≤ v_T,     every frame fails for |v| > v_T,

with v_T the speed the modem tracks at most (`doppler_tolerance_mps`) and L_T the SINR loss at
that speed (`doppler_loss_at_tolerance_db`, default 3 dB). Both are modelling assumptions: the
Micromodem's tracking range and its loss near it are not published in a form used here, so
L_T = 3 dB says "at the edge of its range the receiver has lost half its SINR". The loss is zero
at v = 0, grows monotonically, and without a limit (v_T infinite) there is none.
"""

from __future__ import annotations

import math

DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB = 3.0


def doppler_loss_db(closing_speed_mps: float, tolerance_mps: float,
                    loss_at_tolerance_db: float = DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB) -> float:
    """SINR loss (dB, ≥ 0) of every frame at this closing speed; inf beyond the tolerance."""
    speed = abs(closing_speed_mps)
    if speed > tolerance_mps:
        return math.inf
    if not math.isfinite(tolerance_mps) or tolerance_mps <= 0.0:
        return 0.0
    return loss_at_tolerance_db * (speed / tolerance_mps) ** 2
