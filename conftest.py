"""Repository-wide pytest set-up: every test run gets a ROS graph of its own.

- `scripts/test.sh` (ACOMMS_TEST_ISOLATED=1) chose LOCALHOST discovery and a ROS_DOMAIN_ID; with
  pytest-xdist (2 workers) each worker gets its own ROS_DOMAIN_ID from that base, so that the
  workers' in-process ROS graphs (e.g. their /clock publishers) never see each other.
- Any other pytest run — `colcon test` runs one per package, several at once — isolates itself:
  LOCALHOST discovery and a domain no other acomms test run on this machine holds (a lock file per
  domain, held until the run ends), so two suites at once never share a graph.
Subprocesses started by a test inherit the run's domain.
- Every message published with `publish_shared` is checked to hold what its subscribers take
  (ACOMMS_CHECK_SHARED_MESSAGES; subprocesses inherit it too).
"""

import os
import zlib

from acomms_core.ros.domain_locks import DOMAIN_COUNT, XDIST_SPACING, claim_domain  # noqa: F401
from acomms_core.ros.shared_messages import CHECK_ENV


def pytest_configure(config):
    os.environ[CHECK_ENV] = "1"
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", … only inside xdist workers
    if worker:
        base = int(os.environ.get("ROS_DOMAIN_ID", "1"))
        index = int(worker.removeprefix("gw"))
        # Valid Linux domain IDs are 0..101; spread the workers over that range.
        os.environ["ROS_DOMAIN_ID"] = str((base + XDIST_SPACING * index) % DOMAIN_COUNT + 1)
    elif not os.environ.get("ACOMMS_TEST_ISOLATED"):
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        start = zlib.crc32(str(config.invocation_params.dir).encode()) + os.getpid()
        os.environ["ROS_DOMAIN_ID"] = str(claim_domain(start))
        os.environ["ACOMMS_TEST_ISOLATED"] = "1"
