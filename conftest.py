"""Repository-wide pytest set-up.

With pytest-xdist (scripts/test.sh runs the suite on 2 workers), each worker gets its own
ROS_DOMAIN_ID so that the workers' in-process ROS graphs (e.g. their /clock publishers) never
see each other. Subprocesses started by a test inherit the worker's domain.
"""

import os


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", … only inside xdist workers
    if worker:
        base = int(os.environ.get("ROS_DOMAIN_ID", "1"))
        index = int(worker.removeprefix("gw"))
        # Valid Linux domain IDs are 0..101; spread the workers over that range.
        os.environ["ROS_DOMAIN_ID"] = str((base + 50 * index) % 101 + 1)
