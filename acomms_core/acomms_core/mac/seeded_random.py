"""Reproducible random draws for MAC decisions (ROS-free).

A MAC that backs off at random must give the same decisions for the same scenario and seed on the
deterministic clock, whatever the wall time or the machine. Every draw is therefore a pure
function of (seed, node identity, what the draw is for, a counter such as the slot number): a
BLAKE2b hash of those values mapped to [0, 1). Different vehicles (identities) draw independently;
the same vehicle draws the same number for the same slot in every run.
"""

from __future__ import annotations

import hashlib

from acomms_core.ros.parameter_spec import ParameterSpec

RANDOM_SEED_PARAMETER = ParameterSpec(
    "random_seed", 0,
    "Seed of the MAC's random decisions; with the node's name and the slot or attempt number it "
    "fixes every draw, so runs are reproducible", 0, 2**31 - 1)

_SCALE = float(2**64)


def seeded_uniform(seed: int, identity: str, purpose: str, counter: int) -> float:
    """A number in [0, 1) that depends only on the arguments."""
    key = f"{int(seed)}\x1f{identity}\x1f{purpose}\x1f{int(counter)}".encode()
    digest = hashlib.blake2b(key, digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE
