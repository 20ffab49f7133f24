"""Test runs isolate their ROS graph: each pytest run outside scripts/test.sh (e.g. one per
package under `colcon test`) claims a ROS_DOMAIN_ID no other run on this machine holds."""

import importlib.util
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_root_conftest():
    spec = importlib.util.spec_from_file_location("acomms_root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_claimed_domains_are_distinct_while_held():
    conftest = load_root_conftest()
    first = conftest.claim_domain(40)
    second = conftest.claim_domain(40)  # same start: the held one is skipped
    assert first != second and 1 <= first <= 101 and 1 <= second <= 101
    for handle in conftest._HELD_DOMAIN_LOCKS:
        handle.close()


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
