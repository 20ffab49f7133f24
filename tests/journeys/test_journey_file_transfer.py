"""Journey: send a file into a running simulation with acomms_send_file, as README shows it.

The documented `acomms_run` command runs in the background (from a directory that holds the
repository's acomms_bringup/, so the AUV's relative `receive_directory` lands in the test's tmp
directory), then the documented `acomms_send_file` command sends a file from the ship to the AUV:
it must exit 0, the AUV's `received_files/` must hold the same bytes and its log must name the
sender (`--log-level info` shows it). The simulated clock runs
at warp 20 (faster than real time, so simulated and wall stamps differ from the first second on),
and a second run starts its simulated clock in 2031, years away from the wall clock.
"""

from __future__ import annotations

import os
import pathlib

import pytest
import yaml
from journey_support import ROOT, Background, documented, shell

RUN = documented("acomms_run acomms_bringup/config/file_transfer.yaml")
SEND = documented("acomms_send_file 2 survey.bin --namespace /ship")
WARP = 20          # 1800 simulated s in 90 wall s at most; the transfer takes a few
SEND_TIMEOUT_S = 60.0


def _workspace(tmp_path: pathlib.Path) -> bytes:
    (tmp_path / "acomms_bringup").symlink_to(ROOT / "acomms_bringup")
    payload = os.urandom(700)           # several blocks: a fragment session with acks
    (tmp_path / "survey.bin").write_bytes(payload)
    return payload


def _send_into_running(tmp_path: pathlib.Path, run_command: str) -> None:
    payload = _workspace(tmp_path)
    run = Background(f"{run_command} --warp {WARP} --out {tmp_path / 'run'} --log-level info",
                     cwd=tmp_path, log_path=tmp_path / "run.log")
    try:
        assert run.wait_for_output("; running", timeout_s=60.0), run.command
        sent = shell(f"{SEND} --timeout {SEND_TIMEOUT_S:g}", timeout_s=SEND_TIMEOUT_S + 15,
                     cwd=tmp_path)
    finally:
        run.stop()
    assert sent.returncode == 0, f"{sent.stdout}\n{sent.stderr}\n--- run\n{run.output[-3000:]}"
    assert "session " in sent.stdout and "blocks acknowledged" in sent.stdout
    assert "sent: all " in sent.stdout
    received = tmp_path / "received_files" / "survey.bin"
    assert received.read_bytes() == payload
    assert f"received {received} (700 bytes) from 1" in run.output   # the ship's SRC


@pytest.mark.timeout(150)
def test_send_file_into_a_running_simulation(tmp_path):
    _send_into_running(tmp_path, RUN)


@pytest.mark.timeout(150)
def test_send_file_when_the_simulated_clock_starts_in_2031(tmp_path):
    scenario = yaml.safe_load((ROOT / RUN.split()[1]).read_text())
    scenario["clock"]["start_time"] = "2031-06-01T00:00:00Z"
    config = ROOT / "acomms_bringup" / "config"
    for vehicle in scenario["vehicles"]:
        vehicle["codec_config"] = str(config / vehicle["codec_config"])
    path = tmp_path / "file_transfer_2031.yaml"
    path.write_text(yaml.safe_dump(scenario))
    _send_into_running(tmp_path, RUN.replace(RUN.split()[1], str(path)))
