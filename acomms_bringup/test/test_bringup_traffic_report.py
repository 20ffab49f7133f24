"""Scenario `traffic` validation, traffic messages, and the run report (no ROS graph needed)."""

import csv
import json
import math
import pathlib

import pytest
import yaml
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import String

from acomms_bringup.description.scenario import ScenarioError, load_scenario
from acomms_bringup.run import report
from acomms_bringup.run.traffic import TrafficError, build_message, match_key, plan_traffic

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def scenario_with(tmp_path, traffic, vehicle=0):
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    data["vehicles"][vehicle]["codec_config"] = str(CONFIG / "demo_codecs.yaml")
    data["vehicles"][1 - vehicle]["codec_config"] = str(CONFIG / "demo_codecs.yaml")
    data["vehicles"][vehicle]["traffic"] = traffic
    path = tmp_path / "traffic.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_demo_traffic_is_parsed():
    scenario = load_scenario(CONFIG / "demo.yaml")
    auv, topside = scenario.vehicle("auv"), scenario.vehicle("topside")
    assert [t.topic for t in auv.traffic] == ["to_acomms/nav_status", "to_acomms/science"]
    nav = auv.traffic[0]
    assert nav.ros_type == "sensor_msgs/msg/NavSatFix"  # from the codec config
    assert (nav.period_seconds, nav.start_seconds) == (60.0, 5.0)
    assert nav.key_path == "vehicles[0].traffic[0]"
    assert topside.traffic[0].fields == {"data": "cmd {seq}: next survey leg"}
    (mission,) = scenario.vehicle("gateway").traffic   # issue 15: a file to the AUV
    assert mission.ros_type == "acomms_interfaces/msg/FileTransfer"
    assert mission.file == CONFIG / "demo_mission.txt" and mission.fields == {"dest": 1}


@pytest.mark.parametrize("traffic, key, words", [
    ([{"topic": "to_acomms/nope", "period_seconds": 5}], "vehicles[0].traffic[0].topic",
     "not a subscribe_topic"),
    ([{"topic": "/abs/topic", "period_seconds": 5}], "vehicles[0].traffic[0].topic",
     "relative topic name"),
    ([{"topic": "to_acomms/command", "type": "std_msgs/Int32", "period_seconds": 5}],
     "vehicles[0].traffic[0].type", "differs from the codec config's ros_type"),
    ([{"topic": "to_acomms/command", "period_seconds": 0}], "vehicles[0].traffic[0].period_s",
     "must be >"),
    ([{"topic": "to_acomms/command"}], "vehicles[0].traffic[0].period_seconds", "missing"),
    ([{"topic": "to_acomms/command", "period_seconds": 5, "rate": 1}],
     "vehicles[0].traffic[0].rate", "unknown key"),
    ([{"topic": "to_acomms/command", "period_seconds": 5},
      {"topic": "to_acomms/command", "period_seconds": 9}], "vehicles[0].traffic[1].topic",
     "duplicate traffic topic"),
    ([{"topic": "to_acomms/command", "period_seconds": 5, "fields": [1]}],
     "vehicles[0].traffic[0].fields", "expected a mapping"),
    ([{"topic": "to_acomms/command", "period_seconds": 5, "file": "demo_mission.txt"}],
     "vehicles[0].traffic[0].file", "files travel as acomms_interfaces/msg/FileTransfer"),
    ([{"topic": "to_acomms/file", "period_seconds": 5, "file": "no_such_file.bin"}],
     "vehicles[0].traffic[0].file", "file not found"),
])
def test_bad_traffic_names_file_and_key(tmp_path, traffic, key, words):
    path = scenario_with(tmp_path, traffic)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: {key}"), str(info.value)
    assert words in str(info.value)


def test_type_may_be_given_in_ros1_form(tmp_path):
    path = scenario_with(tmp_path, [{"topic": "to_acomms/command", "type": "std_msgs/String",
                                     "period_seconds": 5}])
    assert load_scenario(path).vehicles[0].traffic[0].ros_type == "std_msgs/msg/String"


def test_build_message_fills_fields_and_stamps():
    fix = build_message(NavSatFix, {"latitude": 41, "status": {"service": 2}}, seq=3,
                        vehicle="auv", time_s=12.25, key_path="t")
    assert fix.latitude == 41.0 and fix.status.service == 2
    assert (fix.header.stamp.sec, fix.header.stamp.nanosec) == (12, 250_000_000)
    assert match_key(fix) == pytest.approx(12.25)
    text = build_message(String, {"data": "cmd {seq} from {vehicle} at {time}"}, seq=7,
                         vehicle="topside", time_s=3.0, key_path="t")
    assert text.data == "cmd 7 from topside at 3.0"
    assert match_key(text) == match_key(String(data="cmd 7 from topside at 3.0"))


@pytest.mark.parametrize("fields, key, words", [
    ({"latitud": 1.0}, "t.fields.latitud", "no field 'latitud'"),
    ({"latitude": "north"}, "t.fields.latitude", "does not fit"),
    ({"status": 3}, "t.fields.status", "does not fit"),
    ({"latitude": {"x": 1}}, "t.fields.latitude", "not a message"),
])
def test_build_message_refuses_bad_fields(fields, key, words):
    with pytest.raises(TrafficError) as info:
        build_message(NavSatFix, fields, seq=1, vehicle="auv", time_s=0.0, key_path="t")
    assert info.value.key_path == key and words in str(info.value)


def test_build_message_refuses_bad_template():
    with pytest.raises(TrafficError, match="bad template"):
        build_message(String, {"data": "cmd {sequence}"}, seq=1, vehicle="a", time_s=0.0,
                      key_path="t")


def sample_record():
    record = report.RunRecord("unit", {"a": 1, "b": 2, "c": 3}, duration_s=100.0,
                              warp_factor=10.0, wall_seconds=10.0, end_s=100.0)
    record.transmissions += [report.Transmission("a", 1, 2, t, 3.0, 40) for t in (0, 20, 40, 60)]
    rx = report.Reception
    record.receptions += [
        rx("b", 1, 2, 0, 1, 3, "received", 20.0, False),
        rx("b", 1, 2, 20, 21, 3, "partial", 10.0, False),
        rx("b", 1, 2, 40, 41, 3, "undetected", -15.0, True),   # collision
        rx("c", 1, 2, 0, 2, 3, "frame_errors", 2.0, False),    # noise
        rx("c", 1, 2, 20, 22, 3, "half_duplex", math.nan, False),
        rx("c", 1, 2, 40, 42, 3, "received", 30.0, True),
    ]  # the packet sent at 60 is still in flight at both receivers
    record.sent += [report.SentMessage("nav", "a", seq, 10.0 * seq, ("b", "c"))
                    for seq in (1, 2)]
    record.deliveries += [report.Delivery("nav", "a", "b", 1, 10.0, 14.0),
                          report.Delivery("nav", "a", "b", 2, 20.0, 30.0),
                          report.Delivery("nav", "a", "c", 2, 20.0, 22.0)]
    record.overheard["science at c"] += 1
    return record


def test_summary_counts_deliveries_latency_and_loss_causes():
    summary = report.summarize(sample_record())
    topics = {(r["source"], r["destination"]): r for r in summary["topics"]}
    assert topics[("a", "b")]["sent"] == 2 and topics[("a", "b")]["delivered"] == 2
    assert topics[("a", "b")]["mean_latency_s"] == pytest.approx(7.0)
    assert topics[("a", "b")]["max_latency_s"] == pytest.approx(10.0)
    assert topics[("a", "c")]["delivered"] == 1
    links = {(r["source"], r["receiver"]): r for r in summary["links"]}
    ab, ac = links[("a", "b")], links[("a", "c")]
    assert (ab["sent"], ab["received"], ab["partial"], ab["lost_collision"], ab["in_flight"]) == (
        4, 1, 1, 1, 1)
    assert (ac["received"], ac["lost_noise"], ac["lost_half_duplex"], ac["in_flight"]) == (
        1, 1, 1, 1)
    assert ab["mean_snr_db"] == pytest.approx(5.0)
    assert ac["mean_snr_db"] == pytest.approx(16.0)  # the half-duplex loss has no SNR
    assert links[("b", "a")]["sent"] == 0 and links[("b", "a")]["mean_snr_db"] is None
    text = report.format_summary(summary)
    assert "nav" in text and "a -> b" in text and "science at c 1" in text


def test_outputs_are_written_and_parse(tmp_path):
    record = sample_record()
    paths = report.write_outputs(record, report.summarize(record), tmp_path / "out")
    names = {p.name for p in paths}
    assert names == {"summary.json", "timeline.csv", "timeline.json", "timeline.png",
                     "messages.csv", "accounting.csv", "positions.csv", "map.png"}
    accounting = list(csv.DictReader((tmp_path / "out/accounting.csv").open()))
    assert {(r["source"], r["destination"]): (r["sent"], r["delivered"], r["unknown"])
            for r in accounting} == {("a", "b"): ("2", "2", "0"), ("a", "c"): ("2", "1", "1")}
    assert (tmp_path / "out/map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["messages_delivered"] == 3
    rows = list(csv.DictReader((tmp_path / "out/timeline.csv").open()))
    assert len(rows) == 10 and {r["kind"] for r in rows} == {"tx", "rx"}
    assert [float(r["start_s"]) for r in rows] == sorted(float(r["start_s"]) for r in rows)
    timeline = json.loads((tmp_path / "out/timeline.json").read_text())
    assert len(timeline["events"]) == 10 and len(timeline["messages"]) == 4
    messages = list(csv.DictReader((tmp_path / "out/messages.csv").open()))
    assert sum(1 for m in messages if m["received_s"] == "") == 1
    assert (tmp_path / "out/timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_traffic_plan_schedule_skips_missed_periods():
    scenario = load_scenario(CONFIG / "demo.yaml")
    from acomms_bringup.description.stack import describe_stack

    plans = {p.label: p for p in plan_traffic(scenario, describe_stack(scenario))}
    nav = plans["to_acomms/nav_status"]
    assert nav.publish_topic == "from_acomms/nav_status"
    assert nav.destinations == ("gateway", "topside")  # default_dest 121: broadcast
    assert plans["to_acomms/science"].destinations == ("topside",)
    assert plans["to_acomms/command"].destinations == ("auv",)
    assert nav.stream.stamp_tolerance_s == 1.0
    o = scenario.clock.start_time_s  # traffic times count from the clock's start (issue 16)
    assert o > 0 and nav.origin_s == o
    assert not nav.due(o + 4.9)
    assert nav.due(o + 5.0) and nav.seq == 1 and nav.next_due_s == o + 65.0
    assert not nav.due(o + 64.0)
    assert nav.due(o + 200.0) and nav.seq == 2 and nav.next_due_s == o + 245.0  # a clock jump
    message = nav.build(o + 200.0)
    assert match_key(message) == o + 200.0


def test_stamp_rounding_carries_into_seconds():
    fix = build_message(NavSatFix, {}, seq=1, vehicle="a", time_s=12.9999999999, key_path="t")
    assert (fix.header.stamp.sec, fix.header.stamp.nanosec) == (13, 0)


def test_progress_lines_every_tenth_without_a_terminal():
    import io

    from acomms_bringup.run.progress import Progress

    stream = io.StringIO()
    progress = Progress(stream, 100.0)
    for sim_s in range(0, 101, 5):
        progress.update(float(sim_s), sim_s / 10.0)
    progress.update(100.0, 10.0, final=True)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 12  # 0 %, 10 % ... 100 %, and the final line
    assert lines[-1].startswith("[" + "#" * 30 + "]") and "100/100 simulated s" in lines[-1]
    quiet = io.StringIO()
    Progress(quiet, 100.0, enabled=False).update(50.0, 1.0)
    assert quiet.getvalue() == ""
