"""Journey: the MBARI WEC buoy demo as README.md ("MBARI WEC buoy") shows it, and the same
scenario started years from the default clock start: the same outcome (times count from the
run's start, not from the clock's absolute reading)."""

from __future__ import annotations

import pathlib
import re

import pytest
from journey_support import ROOT, doc_numbers, documented, run_summary, shell

pytest.importorskip("buoy_interfaces.msg", reason="scripts/buoy_interfaces.sh not run")

DEMO = "acomms_run acomms_bringup/config/wec_buoy_demo.yaml --warp max"
SCENARIO = ROOT / "acomms_bringup" / "config" / "wec_buoy_demo.yaml"
TIMEOUT_S = 120.0
# The numbers of the guide's sentence (docs/guide/bridges.md), read from the sentence itself.
(SIMULATED_S, PUBLISHED_PB, PUBLISHED_BC, PERIOD_PB_S, PERIOD_BC_S, FORWARDED_PB, FORWARDED_BC,
 RECEIVED, PUMP_AFTER_S, ROUND_TRIP_S) = doc_numbers(
    r"in (\d+) simulated s the buoy publishes (\d+) PBRecords and (\d+) BCRecords and forwards "
    r"the newest one every (\d+) s and (\d+) s: (\d+) PBRecords and (\d+) BCRecords \(each one "
    r"older is decimated\); the topside receives all (\d+), and the pump command sent (\d+) s "
    r"after the start \(`pump_after_start_s`\) is answered OK (\d+) s later")
PUBLISHED = {"powerbuoy_data": PUBLISHED_PB, "battery_data": PUBLISHED_BC}
FORWARDED = {"powerbuoy_data": FORWARDED_PB, "battery_data": FORWARDED_BC}


def _run(command: str, out: pathlib.Path) -> tuple[dict, str]:
    result = shell(f"{command} --out {out} --no-mcap", timeout_s=TIMEOUT_S, check=True)
    return run_summary(out), result.stdout


def _assert_documented_outcome(summary: dict, stdout: str) -> None:
    """docs/guide/bridges.md: in N simulated s the buoy publishes ... records, forwards the newest
    one per period, the topside receives them all and the pump command is answered OK (every
    number read from that sentence: SIMULATED_S ... ROUND_TRIP_S)."""
    assert summary["simulated_seconds"] == pytest.approx(SIMULATED_S)
    # the periods the sentence names are the shipped scenario's
    text = SCENARIO.read_text(encoding="utf-8")
    for topic, period in (("powerbuoy_data", PERIOD_PB_S), ("battery_data", PERIOD_BC_S),
                          ("pump_after_start", PUMP_AFTER_S)):
        assert re.search(rf"{topic}_(period_)?s: {period:g}\b", text), topic
    bridges = summary["bridges"]
    telemetry = bridges["/buoy/wec_telemetry_bridge"]
    for topic, forwarded in FORWARDED.items():
        assert telemetry[f"{topic}_received"] == PUBLISHED[topic]
        assert telemetry[f"{topic}_forwarded"] == forwarded
        # every one but the forwarded and the newest (waiting for the next period) superseded
        assert telemetry[f"{topic}_decimated"] == PUBLISHED[topic] - forwarded - 1
    assert telemetry["idle_periods"] == 0
    operator = bridges["/topside/wec_standin_operator"]
    assert operator["telemetry_received"] == FORWARDED
    assert sum(operator["telemetry_received"].values()) == RECEIVED
    pump = operator["pump_command"]
    assert pump["sent_after_start_s"] == pytest.approx(PUMP_AFTER_S, abs=1e-3)
    assert pump["result"] == 0   # PBCommandResponse OK
    assert round(pump["round_trip_s"]) == ROUND_TRIP_S
    assert bridges["/topside/remote_service_caller"]["answered"] == 1
    assert "Bridges" in stdout
    for counter, value in (("telemetry_received.powerbuoy_data", f"{FORWARDED_PB:g}"),
                           ("telemetry_received.battery_data", f"{FORWARDED_BC:g}"),
                           ("pump_command.sent_after_start_s", f"{PUMP_AFTER_S:.1f}")):
        assert re.search(rf"/topside/wec_standin_operator +{re.escape(counter)} +{value}\n",
                         stdout), stdout[-3000:]


def test_buoy_demo_forwards_telemetry_and_answers_the_pump(tmp_path):
    summary, stdout = _run(documented(DEMO), tmp_path / "out")
    assert summary["start_time"] == "2025-01-01T00:00:00Z"
    _assert_documented_outcome(summary, stdout)


def test_buoy_demo_started_in_2031_has_the_same_outcome(tmp_path):
    text = SCENARIO.read_text(encoding="utf-8")
    codecs = SCENARIO.parent / "wec_buoy_codecs.yaml"
    assert "codec_config: wec_buoy_codecs.yaml" in text and "\nclock:\n" in text
    text = text.replace("codec_config: wec_buoy_codecs.yaml", f"codec_config: {codecs}")
    text = text.replace("\nclock:\n", "\nclock:\n  start_time: 2031-06-01T00:00:00Z\n", 1)
    scenario = tmp_path / "wec_buoy_2031.yaml"
    scenario.write_text(text, encoding="utf-8")
    summary, stdout = _run(DEMO.replace("acomms_bringup/config/wec_buoy_demo.yaml",
                                        str(scenario)), tmp_path / "out")
    assert summary["start_time"] == "2031-06-01T00:00:00Z"
    _assert_documented_outcome(summary, stdout)
