"""Test runs isolate their ROS graph: each pytest run outside scripts/test.sh (e.g. one per
package under `colcon test`) claims a ROS_DOMAIN_ID no other run on this machine holds."""

import importlib.util
import os
import pathlib
import subprocess
import sys

from acomms_core.ros import domain_locks

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_root_conftest():
    spec = importlib.util.spec_from_file_location("acomms_root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_claimed_domains_are_distinct_while_held():
    held = domain_locks._HELD_DOMAIN_LOCKS
    before = len(held)
    first = load_root_conftest().claim_domain(40)  # conftest.py re-exports the claim
    second = domain_locks.claim_domain(40)  # same start: the held one is skipped
    assert first != second and 1 <= first <= 101 and 1 <= second <= 101
    for handle in held[before:]:
        handle.close()
    del held[before:]


def test_a_private_domain_is_held_and_none_of_the_workers(monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", "7")
    held = domain_locks._HELD_DOMAIN_LOCKS
    before = len(held)
    domain = domain_locks.private_domain()
    workers = {(7 - 1 + 50 * k) % 101 + 1 for k in range(-3, 4)}
    assert domain not in workers and 1 <= domain <= 101
    assert domain != domain_locks.claim_domain(domain - 1)  # held: the next claim skips it
    for handle in held[before:]:
        handle.close()
    del held[before:]


def test_a_plain_pytest_run_gets_localhost_and_its_own_domain(tmp_path):
    """Two pytest runs at once (as colcon test runs packages) report different domains."""
    probe = tmp_path / "test_probe.py"
    probe.write_text("import os, time\n\ndef test_probe():\n    time.sleep(1.5)\n"
                     "    print('DOMAIN', os.environ['ROS_DOMAIN_ID'],\n"
                     "          os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'])\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("ACOMMS_TEST_ISOLATED", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    # the repository's conftest.py as a plugin (the probe lives outside the repository)
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:xdist", "-p", "conftest",
               "-c", str(ROOT / "pytest.ini"), str(probe)]
    runs = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    outputs = [run.communicate(timeout=60)[0] for run in runs]
    lines = [next(line for line in out.splitlines() if line.startswith("DOMAIN"))
             for out in outputs]
    assert all(line.endswith("LOCALHOST") for line in lines), lines
    assert lines[0].split()[1] != lines[1].split()[1], lines
