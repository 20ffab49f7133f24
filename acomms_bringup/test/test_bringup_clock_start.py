"""clock.start_time: the simulated clock starts at a real epoch; outputs count from it."""

import csv
import json

import pytest
from test_bringup_scenario import base_scenario, error_for, write

from acomms_bringup.description.scenario import (
    DEFAULT_START_TIME,
    format_start_time,
    load_scenario,
    parse_start_time,
)
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.run import report
from acomms_bringup.run.traffic import build_message

JAN_2025 = 1735689600.0


@pytest.mark.parametrize("value, seconds", [
    ("2025-01-01T00:00:00Z", JAN_2025),
    ("2025-01-01T01:00:00+01:00", JAN_2025),
    ("2025-01-01T00:00:00", JAN_2025),  # no zone: UTC
    ("2025-01-01 00:00:30.5Z", JAN_2025 + 30.5),
    (1700000000, 1700000000.0),
    (0, 0.0),
])
def test_start_time_forms(value, seconds):
    assert parse_start_time(value) == seconds


@pytest.mark.parametrize("value, problem", [
    ("tomorrow", "is not ISO 8601"), (-1, "outside 0"), (True, "expected ISO 8601"),
    (2e10, "outside 0"),
])
def test_bad_start_times(value, problem):
    with pytest.raises(ValueError, match=problem):
        parse_start_time(value)


def test_scenario_default_and_given_start_reach_the_clock_and_trajectories(tmp_path):
    data = base_scenario()
    scenario = load_scenario(write(tmp_path, data))
    assert scenario.clock.start_time_s == parse_start_time(DEFAULT_START_TIME) == JAN_2025
    stack = describe_stack(scenario)
    assert stack.sim_start_s == JAN_2025
    assert stack.group("clock").nodes[0].parameters["start_time_s"] == JAN_2025
    data["clock"]["start_time"] = "2026-06-01T12:00:00Z"  # YAML reads it as a timestamp
    text = write(tmp_path, data).read_text().replace("'2026-06-01T12:00:00Z'",
                                                     "2026-06-01T12:00:00Z")
    (tmp_path / "scn.yaml").write_text(text)
    assert load_scenario(tmp_path / "scn.yaml").clock.start_time_s == 1780315200.0


def test_start_time_errors_name_the_key(tmp_path):
    data = base_scenario()
    data["clock"]["start_time"] = "soon"
    error = error_for(tmp_path, data)
    assert error.key_path == "clock.start_time" and "ISO 8601" in str(error)
    data["clock"] = {"use_sim_time": False, "start_time": 5}
    assert "needs use_sim_time: true" in str(error_for(tmp_path, data))


def test_outputs_count_from_the_start_time(tmp_path):
    start = JAN_2025
    record = report.RunRecord("unit", {"a": 1, "b": 2}, duration_s=60.0, warp_factor=1.0,
                              end_s=60.0, start_time_s=start)
    record.transmissions.append(report.Transmission("a", 1, 2, start + 5.0, 2.0, 10))
    record.receptions.append(report.Reception("b", 1, 2, start + 5.0, start + 5.1, 2.0,
                                              "received", 20.0, False))
    record.sent.append(report.SentMessage("nav", "a", 1, start + 5.0, ("b",)))
    record.deliveries.append(report.Delivery("nav", "a", "b", 1, start + 5.0, start + 7.25))
    record.fixes.append(report.Fix("a", start + 10.0, 41.5, -70.6, 10.0))
    summary = report.summarize(record)
    assert summary["start_time"] == "2025-01-01T00:00:00Z"
    assert summary["topics"][0]["mean_latency_s"] == 2.25
    report.write_outputs(record, summary, tmp_path)
    rows = list(csv.DictReader((tmp_path / "timeline.csv").open()))
    assert [(r["kind"], r["start_s"]) for r in rows] == [("tx", "5.0"), ("rx", "5.1")]
    [message] = csv.DictReader((tmp_path / "messages.csv").open())
    assert (message["sent_s"], message["received_s"]) == ("5.0", "7.25")
    [fix] = csv.DictReader((tmp_path / "positions.csv").open())
    assert fix["time_s"] == "10.0"
    assert json.loads((tmp_path / "summary.json").read_text())["start_time"] == summary[
        "start_time"]
    assert format_start_time(start + 0.25) == "2025-01-01T00:00:00.250Z"


def test_traffic_time_template_counts_from_the_start_and_stamps_stay_ros_time():
    from sensor_msgs.msg import NavSatFix
    from std_msgs.msg import String

    text = build_message(String, {"data": "at {time}"}, seq=1, vehicle="a",
                         time_s=JAN_2025 + 12.0, key_path="t", origin_s=JAN_2025)
    assert text.data == "at 12.0"
    fix = build_message(NavSatFix, {}, seq=1, vehicle="a", time_s=JAN_2025 + 12.0,
                        key_path="t", origin_s=JAN_2025)
    assert fix.header.stamp.sec == int(JAN_2025) + 12
