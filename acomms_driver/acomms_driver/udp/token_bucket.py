"""Exact rate limiting over bytes on the wire: a token bucket (ROS-free, explicit clock).

Tokens are bytes; they accrue at `rate_bytes_per_s` up to `depth_bytes`. A datagram of n bytes
may leave when the bucket holds min(n, depth) tokens, and takes n (a datagram larger than the
depth leaves the bucket in debt). Over any interval T the bytes sent are at most
rate * T + depth, and with a backlog the link runs at the configured rate.
"""

from __future__ import annotations

EPSILON_BYTES = 1e-6


class TokenBucket:
    def __init__(self, rate_bytes_per_s: float, depth_bytes: float, now_s: float):
        if rate_bytes_per_s <= 0 or depth_bytes <= 0:
            raise ValueError("token bucket rate and depth must be > 0")
        self.rate_bytes_per_s = float(rate_bytes_per_s)
        self.depth_bytes = float(depth_bytes)
        self.tokens = float(depth_bytes)
        self._time_s = now_s

    def _refill(self, now_s: float) -> None:
        if now_s > self._time_s:
            self.tokens = min(self.depth_bytes,
                              self.tokens + (now_s - self._time_s) * self.rate_bytes_per_s)
            self._time_s = now_s

    def set_rate(self, rate_bytes_per_s: float, now_s: float) -> None:
        self._refill(now_s)
        self.rate_bytes_per_s = float(rate_bytes_per_s)

    def wait_s(self, nbytes: int, now_s: float) -> float:
        """Seconds until a datagram of nbytes may leave (0: now)."""
        self._refill(now_s)
        missing = min(float(nbytes), self.depth_bytes) - self.tokens
        if missing <= EPSILON_BYTES:  # float rounding of the refill, not a real shortfall
            return 0.0
        return missing / self.rate_bytes_per_s

    def take(self, nbytes: int, now_s: float) -> None:
        self._refill(now_s)
        self.tokens -= nbytes
