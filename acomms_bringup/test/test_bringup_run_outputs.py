"""What operators look at (issue 21): MCAP recording, live Foxglove view, reconciled accounting,
map and timeline, output folders.

One short demo run (deterministic clock, as fast as possible) with the MCAP recording and the
live view on, two Foxglove WebSocket clients connected to the live view while it runs (one offering
`foxglove.sdk.v1`, one the classic `foxglove.websocket.v1`), is checked by the check_* functions
of `test_demo_run_is_recorded_served_and_accounted` (one test: the run is made once, whichever
xdist worker runs it).
"""

import csv
import dataclasses
import datetime
import io
import json
import math
import pathlib
import struct
import time
from collections import Counter

import pytest
from foxglove_ws_client import CLASSIC_SUBPROTOCOL, FoxgloveClient
from rclpy.serialization import deserialize_message
from std_msgs.msg import String

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.run import plots, report, run_facts
from acomms_bringup.run.accounting import FATES
from acomms_bringup.run.mcap_recording import message_class, message_definition
from acomms_bringup.run.run_outputs import RunOutputs, default_out_dir
from acomms_bringup.run.runner import Runner
from acomms_core.nodes.message_queue_node import MessageQueueNode

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
DURATION_S = 25.0  # the auv's nav_status and science go out in slot 0; the topside's command
# (published at 15 s) waits in its queue for slot 2 (50 s)
# what the classic client subscribes to: ROS topics of the run and a synthetic channel
CLASSIC_TOPICS = ("/auv/tdma_status", "/gateway/from_acomms/nav_status", "/acomms/links")
LATE_TOPIC = "/live_view_late_topic"  # a topic that appears during the run: advertised then


def run_demo(out: pathlib.Path) -> dict:
    scenario = dataclasses.replace(load_scenario(CONFIG / "demo.yaml"),
                                   duration_seconds=DURATION_S)
    runner = Runner(scenario, stream=io.StringIO(), progress=False, clock_mode="deterministic",
                    warp=None)
    outputs = RunOutputs(out, record_mcap=True, live_port=0)
    runner.started_hooks.append(outputs)
    client = classic = None
    try:
        runner.start()
        client = FoxgloveClient(outputs.live.port)
        classic = FoxgloveClient(outputs.live.port, subprotocol=CLASSIC_SUBPROTOCOL)
        for each in (client, classic):
            assert each.wait_for(lambda c: {"/acomms/progress", *CLASSIC_TOPICS}
                                 <= set(c.channels), 5.0), sorted(each.channels)
        late = runner.recorder.create_publisher(String, LATE_TOPIC, 10)  # appears after start
        assert classic.wait_for(lambda c: LATE_TOPIC in c.channels, 10.0), "not advertised"
        runner.recorder.destroy_publisher(late)
        classic.subscribe(CLASSIC_TOPICS)
        assert poll(lambda: all(outputs.live.subscribed(t) for t in CLASSIC_TOPICS), 5.0)
        topics = sorted(client.channels)
        client.subscribe(topics)
        runner.run()
        queued = {v: sum(len(q.messages) for q in node.queues.queues.values())
                  for v in ("auv", "gateway", "topside")
                  if isinstance(node := runner.nodes[f"/{v}/message_queue_node"],
                                MessageQueueNode)}
        client.wait_for(lambda c: any(json.loads(p)["fraction"] == 1.0
                                      for _, p in c.received("/acomms/progress")), 5.0)
    finally:
        outputs.close()
        assert runner.stop() == []
        for each in (client, classic):
            if each is not None:
                each.close()
    outputs.finish(runner.record, scenario, runner.start_s)
    summary = report.summarize(runner.record)
    report.write_outputs(runner.record, summary, out)
    return {"out": out, "record": runner.record, "summary": summary, "queued": queued,
            "client": client, "classic": classic, "topics": topics}


def poll(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def read_mcap(path: pathlib.Path) -> dict[str, list]:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    messages: dict[str, list] = {}
    with path.open("rb") as handle:
        reader = make_reader(handle, decoder_factories=[DecoderFactory()])
        for _schema, channel, _message, decoded in reader.iter_decoded_messages():
            messages.setdefault(channel.topic, []).append(decoded)
    return messages


def test_demo_run_is_recorded_served_and_accounted(tmp_path):
    demo_run = run_demo(tmp_path)
    check_mcap_holds_every_message_of_the_summary(demo_run)
    check_accounting_adds_up_and_matches_the_queues(demo_run)
    check_live_view_served_positions_links_and_progress(demo_run)
    check_live_view_served_ros_topics_to_both_subprotocols(demo_run)
    check_outputs_carry_reception_physics_positions_and_the_map(demo_run)


def check_mcap_holds_every_message_of_the_summary(demo_run):
    record, summary = demo_run["record"], demo_run["summary"]
    mcap = read_mcap(demo_run["out"] / "run.mcap")
    sent = Counter((m.topic, m.source) for m in record.sent)
    assert sent and summary["messages_sent"] == sum(sent.values())
    for (topic, source), count in sent.items():
        assert len(mcap.get(f"/{source}/{topic}", [])) == count, (topic, source)
    publish = {"to_acomms/nav_status": "from_acomms/nav_status",
               "to_acomms/science": "from_acomms/science",
               "to_acomms/command": "from_acomms/command"}
    delivered = sum(row["delivered"] for row in summary["topics"])
    assert delivered >= 2
    for row in summary["topics"]:
        arrivals = mcap.get(f"/{row['destination']}/{publish[row['topic']]}", [])
        assert len(arrivals) >= row["delivered"], row
    for vehicle in record.vehicles:
        assert len(mcap.get(f"/{vehicle}/transmit", [])) == sum(
            t.vehicle == vehicle for t in record.transmissions)
        events = mcap.get(f"/{vehicle}/reception_events", [])
        assert len(events) == sum(r.vehicle == vehicle for r in record.receptions)
        assert all(math.isclose(e.snr_db, r.snr_db, abs_tol=1e-3) for e, r in zip(
            events, [r for r in record.receptions if r.vehicle == vehicle], strict=True))
        assert mcap.get(f"/{vehicle}/tdma_status"), vehicle
    assert len(mcap["/acoustic_channel"]) == len(record.transmissions)
    assert mcap["/auv/fix"]  # the moving vehicle's positions


def check_accounting_adds_up_and_matches_the_queues(demo_run):
    summary, record = demo_run["summary"], demo_run["record"]
    rows = list(csv.DictReader((demo_run["out"] / "accounting.csv").open()))
    assert len(rows) == len(summary["topics"]) == 4
    totals = Counter()
    for row in rows:
        counts = {fate: int(row[fate]) for fate in FATES}
        assert sum(counts.values()) == int(row["sent"]), row
        assert counts["unknown"] == 0, row  # every vehicle's queue reported
        totals.update(counts)
        match = next(t for t in summary["topics"] if (t["topic"], t["source"], t["destination"])
                     == (row["topic"], row["source"], row["destination"]))
        assert match["delivered"] == counts["delivered"] and match["sent"] == int(row["sent"])
    assert totals["delivered"] == summary["messages_delivered"]
    assert sum(totals.values()) == summary["deliveries_expected"]
    # still queued at the end: exactly what the queues held
    queued_messages = {(m.topic, m.source, m.seq) for m in record.sent
                       if record.ledger.fates.get((m.topic, m.source, m.seq)) == "queued_at_end"}
    assert len(queued_messages) == sum(demo_run["queued"].values())
    assert totals["queued_at_end"] >= 1  # the topside's command waits for slot 2
    messages = list(csv.DictReader((demo_run["out"] / "messages.csv").open()))
    assert Counter(m["fate"] for m in messages) == +totals
    assert all((m["fate"] == "delivered") == (m["received_s"] != "") for m in messages)


def check_live_view_served_positions_links_and_progress(demo_run):
    client, record = demo_run["client"], demo_run["record"]
    assert {"/acomms/auv/fix", "/acomms/gateway/fix", "/acomms/topside/fix", "/acomms/links",
            "/acomms/link_lines", "/acomms/transmissions", "/acomms/progress"} <= set(
                demo_run["topics"])
    assert any(op.get("op") == "serverInfo" for op in client.ops)
    links = [json.loads(p) for _, p in client.received("/acomms/links")]
    assert len(links) == len(record.receptions) >= 2
    assert {(link["source"], link["receiver"]) for link in links} >= {("auv", "gateway"),
                                                                      ("auv", "topside")}
    assert all(link["snr_db"] is not None for link in links if link["loss_cause"] is None)
    progress = [json.loads(p)["fraction"] for _, p in client.received("/acomms/progress")]
    assert progress and progress[-1] == 1.0 and progress == sorted(progress)
    assert len(client.received("/acomms/transmissions")) == len(record.transmissions)
    # foxglove.LocationFix in protobuf: field 1 (latitude, double) comes first
    latitudes = [struct.unpack("<d", p[1:9])[0] for _, p in client.received("/acomms/auv/fix")
                 if p[:1] == b"\x09"]
    start = load_scenario(CONFIG / "demo.yaml").vehicle("auv").trajectory.waypoints[0].position
    assert latitudes[0] == pytest.approx(start.latitude, abs=1e-9)
    assert max(latitudes) > start.latitude + 1e-4  # the auv moves north along its trajectory


def check_live_view_served_ros_topics_to_both_subprotocols(demo_run):
    client, classic = demo_run["client"], demo_run["classic"]
    assert client.subprotocol == "foxglove.sdk.v1"
    assert classic.subprotocol == CLASSIC_SUBPROTOCOL
    assert classic.channels[LATE_TOPIC]["schemaName"] == "std_msgs/msg/String"
    mcap = read_mcap(demo_run["out"] / "run.mcap")
    for topic in mcap:  # every recorded ROS topic was served, with its ros2msg schema
        channel = client.channels[topic]
        assert (channel["encoding"], channel["schemaEncoding"]) == ("cdr", "ros2msg"), topic
        assert channel["schema"] == message_definition(channel["schemaName"]), topic
    statuses = [deserialize_message(p, message_class("acomms_interfaces/msg/TdmaStatus"))
                for _, p in classic.received("/auv/tdma_status")]
    assert statuses and all(s.slot_duration_seconds == 25.0 for s in statuses)
    assert [(s.current_slot, s.remaining_slot_seconds) for s in statuses] == [
        (m.current_slot, m.remaining_slot_seconds) for m in mcap["/auv/tdma_status"]]
    topic = "/gateway/from_acomms/nav_status"
    cls = message_class(classic.channels[topic]["schemaName"])
    arrivals = [deserialize_message(p, cls) for _, p in classic.received(topic)]
    assert len(arrivals) == len(mcap[topic]) >= 1
    assert [(a.header.stamp.sec, a.header.stamp.nanosec) for a in arrivals] == [
        (m.header.stamp.sec, m.header.stamp.nanosec) for m in mcap[topic]]
    links = [json.loads(p) for _, p in classic.received("/acomms/links")]
    assert len(links) == len(demo_run["record"].receptions)


def check_outputs_carry_reception_physics_positions_and_the_map(demo_run):
    out = demo_run["out"]
    rows = list(csv.DictReader((out / "timeline.csv").open()))
    received = [r for r in rows if r["kind"] == "rx" and r["outcome"] == "received"]
    assert received
    for row in received:
        rl, nl, tl = (float(row[k]) for k in ("receive_level_db", "noise_db",
                                              "transmission_loss_db"))
        assert math.isclose(float(row["snr_db"]), rl - nl, abs_tol=0.05)  # no interference
        assert float(row["slant_range_m"]) > 0 and int(row["num_frames"]) >= 1
        assert tl > 0 and row["loss_cause"] == ""
    positions = list(csv.DictReader((out / "positions.csv").open()))
    assert {p["vehicle"] for p in positions} == {"auv", "gateway", "topside"}
    assert (out / "map.png").read_bytes()[:4] == b"\x89PNG"
    windows = demo_run["record"].slot_windows
    assert windows["auv"][0][1] - windows["auv"][0][0] == pytest.approx(25.0, abs=1.0)


def test_timeline_bars_are_at_least_min_pixels_wide(tmp_path):
    """30 rate-5 packets (0.286 s) in a 900 s run: every one is a visible bar."""
    from matplotlib import image

    record = report.RunRecord("short packets", {"a": 1, "b": 2}, duration_s=900.0,
                              warp_factor=1.0, end_s=900.0)
    record.transmissions += [report.Transmission("a", 1, 2, 15.0 + 30.0 * i, 0.286, 64)
                             for i in range(30)]
    path = tmp_path / "timeline.png"
    plots.plot_timeline(record, report.timeline_rows(record), path)
    pixels = (image.imread(path)[:, :, :3] * 255).round().astype(int)
    blue = tuple(int(plots.COLORS["transmitted"][i:i + 2], 16) for i in (1, 3, 5))
    best = 0
    for row in pixels:
        is_blue = [tuple(p) == blue for p in row]
        runs = sum(1 for i, b in enumerate(is_blue) if b and (i == 0 or not is_blue[i - 1]))
        widths = [n for n in _run_lengths(is_blue)]
        if runs > best and min(widths) >= plots.MIN_BAR_PX - 1:
            best = runs
    assert best == 30


def _run_lengths(flags):
    length = 0
    for flag in [*flags, False]:
        if flag:
            length += 1
        elif length:
            yield length
            length = 0


def test_default_output_folder_is_one_per_run(tmp_path):
    now = datetime.datetime(2026, 11, 23, 14, 5, 9)
    first = default_out_dir("demo run", tmp_path, now)
    assert first == tmp_path / "demo_run-20261123-140509"
    first.mkdir()
    assert default_out_dir("demo run", tmp_path, now) == tmp_path / "demo_run-20261123-140509-2"


def test_slot_windows_follow_the_tdma_schedule():
    scenario = load_scenario(CONFIG / "demo.yaml")
    windows = {v.name: run_facts.slot_windows(v, 0.0, 130.0) for v in scenario.vehicles}
    assert windows["auv"] == [(0.0, 25.0), (75.0, 100.0)]  # 3 slots of 25 s
    assert windows["gateway"] == [(25.0, 50.0), (100.0, 125.0)]
    assert windows["topside"] == [(50.0, 75.0), (125.0, 130.0)]  # cut at the end
