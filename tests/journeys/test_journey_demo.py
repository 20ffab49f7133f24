"""Journey: the README's main command, `scripts/demo.sh`, as a user runs it (shortened with
`--duration 120 --warp max --out DIR`): it ends with status 0, prints the summary table and no
error line, and writes every output the Quick start lists, consistent with each other. Then the
demo stopped by SIGTERM (what `timeout`, systemd, `docker stop` and CI send) while it runs and
while it starts: the outputs of what ran, marked interrupted, a run.mcap readable to its footer;
during start-up one line and nothing written."""

from __future__ import annotations

import csv
import pathlib
import re
import signal

from journey_support import Background, doc_numbers, documented, run_summary, shell

from acomms_bringup.description.scenario import load_scenario

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = documented("scripts/demo.sh")
SCENARIO = load_scenario(ROOT / "acomms_bringup" / "config" / "demo.yaml")
# Every output file the README's Quick start names.
OUTPUTS = ("run.mcap", "summary.json", "timeline.png", "timeline.csv", "timeline.json",
           "messages.csv", "accounting.csv", "map.png", "positions.csv")
SUMMARY_FIELDS = ("clock_mode", "warp", "startup_wall_s", "run_wall_s", "sim_wall_ratio", "steps")
PROBLEM = re.compile(r"error|warn|traceback|exception|failed|invalidhandle", re.IGNORECASE)
FATE_COLUMNS = ("delivered", "lost_noise", "lost_collision", "lost_half_duplex", "lost_bad_frame",
                "not_published", "in_flight", "not_transmitted", "expired", "dropped_queue_full",
                "refused", "queued_at_end", "unknown")  # README: sent = delivered + ... + queued


def problem_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if PROBLEM.search(line)]


def mcap_topics_to_footer(path: pathlib.Path) -> dict[str, int]:
    """Messages per topic of run.mcap, read record by record; fails unless it ends in a footer."""
    from mcap.records import Channel, Footer, Message
    from mcap.stream_reader import StreamReader

    topics, counts, last = {}, {}, None
    with path.open("rb") as stream:
        for record in StreamReader(stream).records:
            if isinstance(record, Channel):
                topics[record.id] = record.topic
            elif isinstance(record, Message):
                counts[topics[record.channel_id]] = counts.get(topics[record.channel_id], 0) + 1
            last = record
    assert isinstance(last, Footer), f"{path} does not end in a footer (last: {last!r})"
    return counts


def traffic_topics() -> set[str]:
    return {f"/{vehicle.name}/{traffic.topic}" for vehicle in SCENARIO.vehicles
            for traffic in vehicle.traffic}


def test_the_demo_runs_and_writes_every_documented_output(tmp_path):
    out = tmp_path / "demo"
    result = shell(f"{DEMO} --duration 120 --warp max --out {out}", timeout_s=150)
    printed = result.stdout + result.stderr
    assert result.returncode == 0, printed[-4000:]
    assert problem_lines(printed) == [], printed[-4000:]
    check_console(result.stdout)
    assert f"Wrote {out}/" in result.stdout
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    summary = run_summary(out)
    assert all(field in summary for field in SUMMARY_FIELDS), summary.keys()
    assert summary["clock_mode"] == "deterministic" and summary["warp"] == "max"
    assert summary["steps"] > 0 and summary["simulated_seconds"] == 120.0
    assert summary["interrupted"] is None
    rows = list(csv.DictReader((out / "accounting.csv").open()))
    assert rows
    for row in rows:
        assert sum(int(row[fate]) for fate in FATE_COLUMNS) == int(row["sent"]), row
    messages = list(csv.DictReader((out / "messages.csv").open()))
    assert any(message["fate"] == "delivered" for message in messages)
    assert {"destination", "received_s", "fate"} <= set(messages[0])  # arrival time and fate
    with (out / "timeline.csv").open() as handle:  # RL, NL, TL, range, SNR, bad frames
        assert {"receive_level_db", "noise_db", "transmission_loss_db", "slant_range_m",
                "snr_db", "num_bad_frames"} <= set(csv.DictReader(handle).fieldnames)
    with (out / "positions.csv").open() as handle:
        assert {row["vehicle"] for row in csv.DictReader(handle)} == {
            vehicle.name for vehicle in SCENARIO.vehicles}
    recorded = mcap_topics_to_footer(out / "run.mcap")
    assert traffic_topics() <= set(recorded), sorted(recorded)
    assert {"/acoustic_channel", "/auv/transmit"} <= set(recorded)


def check_console(printed: str) -> None:
    """README: a progress bar in simulated seconds; a summary table per topic (sent, delivered,
    mean and max latency), per link (packets sent, received, lost to noise / collision / half
    duplex, mean SNR) and where the undelivered messages are."""
    progress = [line for line in printed.splitlines() if "simulated s" in line and "[" in line]
    assert progress and "120/120 simulated s" in progress[-1], progress
    assert re.search(r"topic.*sent.*delivered.*mean latency.*max latency", printed)
    assert re.search(r"link.*sent.*received.*noise.*collision.*half dup.*mean SNR",
                     printed)
    assert "undelivered: lost, in flight, not sent" in printed
    assert re.search(r"topic\s+from -> to\s+lost\s+in flight\s+not sent\s+expired", printed)


def test_sigterm_while_running_writes_what_ran(tmp_path):
    out = tmp_path / "stopped"
    log = tmp_path / "demo.log"
    # the default warp 10: still running when the signal comes, however fast the machine
    with Background(f"{DEMO} --out {out}", log_path=log) as demo:
        # the progress line at 10 %: running for some wall seconds at the throttle
        assert demo.wait_for_output("60/600 simulated s", timeout_s=90), log.read_text()[-4000:]
        status = demo.stop(signal.SIGTERM)
    assert status == 143, demo.output[-4000:]  # 128 + SIGTERM, as the README says
    assert problem_lines(demo.output) == [], demo.output[-4000:]
    (line,) = [text for text in demo.output.splitlines() if "SIGTERM: stopped" in text]
    assert line.startswith("acomms_run: SIGTERM: stopped at simulated ")
    summary = run_summary(out)
    assert summary["interrupted"] == "SIGTERM"
    assert 0 < summary["simulated_seconds"] < SCENARIO.duration_seconds
    # README: "10 simulated minutes at warp 10 (at most 10× real time) take at least a minute"
    # (a ceiling the throttle keeps; a loaded machine may fall a little short of it)
    minutes, warp, ceiling = doc_numbers(r"(\d+) simulated minutes at warp (\d+) \(at most (\d+)×"
                                         r" real time\) take at least a minute of wall time")
    assert SCENARIO.clock.warp_factor == warp == ceiling
    assert SCENARIO.duration_seconds == minutes * 60 and SCENARIO.duration_seconds / warp >= 60
    assert 0.7 * warp <= summary["sim_wall_ratio"] <= 1.05 * warp, summary
    assert "INTERRUPTED by SIGTERM" in demo.output
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    mcap_topics_to_footer(out / "run.mcap")


def test_sigterm_during_start_up_ends_with_one_line(tmp_path):
    out = tmp_path / "never"
    log = tmp_path / "demo.log"
    with Background(f"{DEMO} --out {out}", log_path=log) as demo:
        # printed just before the nodes are created: the signal comes during start-up
        assert demo.wait_for_output("managed nodes", timeout_s=90), log.read_text()[-4000:]
        status = demo.stop(signal.SIGTERM)
    assert status == 143, demo.output[-4000:]
    lines = [text for text in demo.output.splitlines()
             if not text.startswith(("bootstrap:", "acomms_run: demo:"))]
    assert lines == ["acomms_run: SIGTERM during start-up: stopped (nothing written)"], lines
    assert not (out / "summary.json").exists()


def test_quick_start_test_facts():
    """README Quick start, *Tests*: 2 pytest-xdist workers by default, a 120 s ceiling per test
    (pytest.ini), and CI runs .ci/run, which is exactly scripts/test.sh."""
    documented("scripts/test.sh")
    assert 'workers="${ACOMMS_TEST_WORKERS:-2}"' in (ROOT / "scripts" / "test.sh").read_text()
    assert re.search(r"^timeout = 120$", (ROOT / "pytest.ini").read_text(), re.MULTILINE)
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith("#")]
    assert ci[-1] == "exec scripts/test.sh", ci
