"""A free-clock run ends without a callback failure: stopping the traffic destroys publishers and
timers, which must not happen while the background thread puts them into a wait set."""

import pathlib

from acomms_bringup.run import cli

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def test_a_free_clock_run_stops_without_a_callback_failure(tmp_path, capsys):
    for attempt in range(2):  # the race showed in every run before the fix; twice to be sure
        assert cli.main([str(CONFIG / "demo.yaml"), "--clock", "free", "--duration", "12",
                         "--warp", "10", "--no-mcap", "--quiet",
                         "--out", str(tmp_path / f"run{attempt}")]) == 0
        err = capsys.readouterr().err
        assert "callback failed" not in err, err
