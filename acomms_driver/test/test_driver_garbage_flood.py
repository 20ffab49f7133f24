"""bench/driver_garbage.py with a small count: a flood of malformed lines leaves the driver node
alive, connected, publishing /diagnostics, with flat memory, and valid traffic afterwards works."""

import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import driver_garbage  # noqa: E402


def test_garbage_flood_keeps_the_driver_working():
    result = driver_garbage.run(10_000, seed=5, timeout_s=60.0)
    assert result["lines"] == 10_000, result
    counters = result["counters"]
    assert counters["valid"] > 1_500 and counters["malformed"] > 1_500
    assert counters["bad_checksum"] > 1_500 and counters["overlong"] >= 2
    assert result["unparseable_sentences"] > 300
    assert result["connected"] and result["reader_alive"] and result["valid_after"]
    assert result["diagnostics_during_flood"] >= result["diagnostics_expected"] // 2
    assert result["rss_end_mb"] - result["rss_start_mb"] < 40.0, result
