"""ROS domains held by one test run on this machine (stdlib only): a lock file per domain, held
until the process ends, so two acomms test runs at once never share a ROS graph (conftest.py
claims one per run; a test that must not see the nodes earlier tests of its worker left in the
graph claims one more with `private_domain`)."""

from __future__ import annotations

import fcntl
import os
import tempfile

_HELD_DOMAIN_LOCKS = []  # open lock files: released when this process ends
DOMAIN_COUNT = 101  # valid Linux domain IDs 1..101 with the default port mapping
XDIST_SPACING = 50  # conftest.py gives pytest-xdist worker k the run's domain + 50 k


def claim_domain(start: int) -> int:
    """The first domain from `start` on that no other process holds (non-blocking file locks)."""
    for offset in range(DOMAIN_COUNT):
        domain = 1 + (start + offset) % DOMAIN_COUNT
        handle = open(os.path.join(tempfile.gettempdir(), f"acomms-ros-domain-{domain}.lock"), "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _HELD_DOMAIN_LOCKS.append(handle)
        return domain
    raise RuntimeError("every ROS domain 1..101 is held by another acomms test run")


def private_domain() -> int:
    """A domain of the calling test's own: claimed, and none of the xdist workers' domains of
    this run (spaced XDIST_SPACING apart from the current ROS_DOMAIN_ID)."""
    here = int(os.environ.get("ROS_DOMAIN_ID", "1"))
    workers = {(here - 1 + XDIST_SPACING * k) % DOMAIN_COUNT + 1 for k in range(-3, 4)}
    for offset in range(DOMAIN_COUNT):
        domain = claim_domain(here + XDIST_SPACING // 2 + offset)
        if domain not in workers:
            return domain
    raise RuntimeError("no private ROS domain free")
