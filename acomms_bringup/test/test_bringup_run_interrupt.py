"""acomms_run stopped by Ctrl-C (SIGINT) while it runs: it stops at the next step, shuts down and
writes what ran (summary.json marked interrupted, run.mcap finished with its summary), exits 130
with one line, and gives this process its signal handlers back."""

import json
import os
import pathlib
import signal
import threading
import time

from acomms_bringup.run import cli

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def interrupt_once_running(runners: list, stop: threading.Event) -> None:
    """SIGINT to this process once the run has taken simulated steps (not merely started up:
    start-up can take seconds on a loaded machine)."""
    deadline = time.monotonic() + 90.0
    while not stop.is_set() and time.monotonic() < deadline:
        if runners and runners[0].stats.steps >= 5:
            os.kill(os.getpid(), signal.SIGINT)
            return
        time.sleep(0.05)


def test_ctrl_c_while_running_writes_what_ran(tmp_path, capsys, monkeypatch):
    from mcap.reader import make_reader

    from acomms_bringup.run.runner import Runner

    out = tmp_path / "out"
    before = signal.getsignal(signal.SIGINT)
    stop = threading.Event()
    runners, run = [], Runner.run

    def run_and_expose(runner, *args, **kwargs):
        runners.append(runner)
        return run(runner, *args, **kwargs)

    monkeypatch.setattr(Runner, "run", run_and_expose)
    sender = threading.Thread(target=interrupt_once_running, args=(runners, stop), daemon=True)
    sender.start()
    try:
        status = cli.main([str(CONFIG / "demo.yaml"), "--warp", "10", "--quiet",
                           "--out", str(out)])
    finally:
        stop.set()
        sender.join(timeout=5.0)
    err = capsys.readouterr().err
    assert status == 130, err
    (line,) = [text for text in err.splitlines() if "SIGINT" in text]
    assert line.startswith("acomms_run: SIGINT: stopped at simulated "), err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] == "SIGINT"
    assert 0 < summary["simulated_seconds"] < 600
    with (out / "run.mcap").open("rb") as stream:
        assert make_reader(stream).get_summary().statistics.message_count > 0
    assert signal.getsignal(signal.SIGINT) is before
