"""Journey: the MBARI WEC buoy demo as README.md ("MBARI WEC buoy") shows it, and the same
scenario started years from the default clock start: the same outcome (times count from the
run's start, not from the clock's absolute reading)."""

from __future__ import annotations

import pathlib
import re

import pytest
from journey_support import ROOT, documented, run_summary, shell

pytest.importorskip("buoy_interfaces.msg", reason="scripts/buoy_interfaces.sh not run")

DEMO = "acomms_run acomms_bringup/config/wec_buoy_demo.yaml --warp max"
SCENARIO = ROOT / "acomms_bringup" / "config" / "wec_buoy_demo.yaml"
TIMEOUT_S = 120.0
PUBLISHED = 59          # every 10 s in 595 s
FORWARDED = {"powerbuoy_data": 9, "battery_data": 4}   # the newest every 60 s / 120 s


def _run(command: str, out: pathlib.Path) -> tuple[dict, str]:
    result = shell(f"{command} --out {out} --no-mcap", timeout_s=TIMEOUT_S, check=True)
    return run_summary(out), result.stdout


def _assert_documented_outcome(summary: dict, stdout: str) -> None:
    """README: in 595 simulated s the buoy publishes 59 PBRecords and 59 BCRecords and forwards
    the newest one every 60 s and 120 s: 9 PBRecords and 4 BCRecords (each one older is
    decimated); the topside receives all 13, and the pump command sent 100 s after the start is
    answered OK 23 s later."""
    assert summary["simulated_seconds"] == pytest.approx(595.0)
    bridges = summary["bridges"]
    telemetry = bridges["/buoy/wec_telemetry_bridge"]
    for topic, forwarded in FORWARDED.items():
        assert telemetry[f"{topic}_received"] == PUBLISHED
        assert telemetry[f"{topic}_forwarded"] == forwarded
        # every one but the forwarded and the newest (waiting for the next period) superseded
        assert telemetry[f"{topic}_decimated"] == PUBLISHED - forwarded - 1
    assert telemetry["idle_periods"] == 0
    operator = bridges["/topside/wec_standin_operator"]
    assert operator["telemetry_received"] == FORWARDED
    pump = operator["pump_command"]
    assert pump["sent_after_start_s"] == pytest.approx(100.0, abs=1e-3)
    assert pump["result"] == 0   # PBCommandResponse OK
    assert round(pump["round_trip_s"]) == 23
    assert bridges["/topside/remote_service_caller"]["answered"] == 1
    assert "Bridges" in stdout
    for counter, value in (("telemetry_received.powerbuoy_data", "9"),
                           ("telemetry_received.battery_data", "4"),
                           ("pump_command.sent_after_start_s", "100.0")):
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
