"""Repository-wide pytest set-up: every test run gets a ROS graph of its own.

- `scripts/test.sh` (ACOMMS_TEST_ISOLATED=1) chose LOCALHOST discovery and a ROS_DOMAIN_ID; with
  pytest-xdist (2 workers) each worker gets its own ROS_DOMAIN_ID from that base, so that the
  workers' in-process ROS graphs (e.g. their /clock publishers) never see each other.
- Any other pytest run — `colcon test` runs one per package, several at once — isolates itself:
  LOCALHOST discovery and a domain no other acomms test run on this machine holds (a lock file per
  domain, held until the run ends), so two suites at once never share a graph.
Subprocesses started by a test inherit the run's domain.
"""

import fcntl
import os
import tempfile
import zlib

_HELD_DOMAIN_LOCKS = []  # open lock files: released when this process ends
DOMAIN_COUNT = 101  # valid Linux domain IDs 1..101 with the default port mapping


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


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", … only inside xdist workers
    if worker:
        base = int(os.environ.get("ROS_DOMAIN_ID", "1"))
        index = int(worker.removeprefix("gw"))
        # Valid Linux domain IDs are 0..101; spread the workers over that range.
        os.environ["ROS_DOMAIN_ID"] = str((base + 50 * index) % 101 + 1)
    elif not os.environ.get("ACOMMS_TEST_ISOLATED"):
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        start = zlib.crc32(str(config.invocation_params.dir).encode()) + os.getpid()
        os.environ["ROS_DOMAIN_ID"] = str(claim_domain(start))
        os.environ["ACOMMS_TEST_ISOLATED"] = "1"
