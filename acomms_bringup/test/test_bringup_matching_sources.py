"""The run's report never invents fates (issue 26), through the runner at --warp max:
- 4 vehicles broadcast nav_status stamped with the same publish time: every arrival is booked
  for the vehicle whose packet carried it;
- headerless std_msgs/Int8 `data: 0` (equal contents) is booked in order, and its fates agree
  with the packets (nothing "not_published" out of a decoded packet);
- a packet carrying far more than 50 messages of one topic: every one is delivered;
- equal contents over a lossy link: the arrivals go to the messages whose packets were decoded,
  the others are lost to noise (not "delivered" early ones and "not_published" later ones)."""

import collections
import csv
import json
import pathlib

import pytest
import yaml

from acomms_bringup.run import cli

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
TDMA = {"kind": "tdma", "guard_time_seconds": 1.0, "packet_length_seconds": 5.0}


def run(tmp_path: pathlib.Path, scenario: dict) -> tuple[dict, list[dict]]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "out"
    assert cli.main([str(path), "--warp", "max", "--no-mcap", "--quiet", "--out", str(out)]) == 0
    with (out / "messages.csv").open() as handle:
        return json.loads((out / "summary.json").read_text()), list(csv.DictReader(handle))


def base(name: str, duration_s: float) -> dict:
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    return {"name": name, "duration_seconds": duration_s, "seed": 1, "clock": data["clock"],
            "channel": data["channel"], "vehicles": []}


def test_same_stamp_from_four_vehicles_is_booked_by_the_packet_source(tmp_path):
    scenario = base("same_stamp", 30.0)
    for index in range(4):  # starts 1.1-1.4 s: all published together at the 1.5 s tick
        scenario["vehicles"].append({
            "name": f"v{index + 1}", "src": index + 1, "modem": {"kind": "sim"},
            "position": {"latitude": 41.52 + 0.002 * index, "longitude": -70.67, "depth": 10.0},
            "mac": {**TDMA, "num_slots": 4, "slot_duration_seconds": 7.0,
                    "active_slots": index},
            "codec_config": str(CONFIG / "demo_codecs.yaml"),
            "traffic": [{"topic": "to_acomms/nav_status", "period_seconds": 1000.0,
                         "start_seconds": 1.1 + 0.1 * index,
                         "fields": {"latitude": 41.5 + 0.01 * index, "longitude": -70.6,
                                    "altitude": -5.0}}]})
    summary, messages = run(tmp_path, scenario)
    assert len({row["sent_s"] for row in messages}) == 1  # one publish time: one stamp
    assert all(link["received"] == link["sent"] == 1 for link in summary["links"])
    assert summary["messages_delivered"] == summary["deliveries_expected"] == 12
    assert {row["fate"] for row in messages} == {"delivered"}
    assert summary["warnings"] == []


BURST_CODECS = [{
    "codec_name": "burst", "match_src": [], "match_dest": [], "except_src": [],
    "except_dest": [], "packet_codec": "ros", "miniframe_header": [0xAC], "dataframe_header": [],
    "remove_headers": True, "message_codecs": [
        {"id": 11, "message_codec": "default", "subscribe_topic": "to_acomms/tick",
         "publish_topic": "from_acomms/tick", "ros_type": "std_msgs/msg/Int8", "default_dest": 2,
         "queue_order": "fifo", "queue_maxsize": 1000, "is_active": True,
         "allow_fragmentation": False, "priority": 20, "fields": {"data": {"codec": "int8"}}},
        {"id": 12, "message_codec": "default", "subscribe_topic": "to_acomms/word",
         "publish_topic": "from_acomms/word", "ros_type": "std_msgs/msg/String",
         "default_dest": 2, "queue_order": "fifo", "queue_maxsize": 1000, "is_active": True,
         "allow_fragmentation": False, "priority": 10,
         "fields": {"data": {"codec": "string", "max_length": 4}}}]}]


def alpha_to_bravo(tmp_path: pathlib.Path, name: str, duration_s: float,
                   traffic: list[dict]) -> dict:
    """two_vehicles (TDMA, alpha's slot 0-15 s of 30) with the burst codecs and alpha's traffic."""
    codecs = tmp_path / "burst_codecs.yaml"
    codecs.write_text(yaml.safe_dump(BURST_CODECS))
    two = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    scenario = {**base(name, duration_s), "vehicles": two["vehicles"]}
    for vehicle in scenario["vehicles"]:
        vehicle["codec_config"] = str(codecs)
    scenario["vehicles"][0]["traffic"] = traffic
    return scenario


TICKS = {"topic": "to_acomms/tick", "start_seconds": 1.0, "fields": {"data": 0}}


@pytest.fixture(scope="module")
def burst_run(tmp_path_factory):
    """alpha -> bravo: Int8 `data: 0` every 0.5 s and String '{seq}' every 0.1 s; alpha's TDMA
    slot leaves a backlog of hundreds for its packet after 30 s."""
    tmp_path = tmp_path_factory.mktemp("burst")
    return run(tmp_path, alpha_to_bravo(tmp_path, "burst", 38.0, [
        {**TICKS, "period_seconds": 0.5},
        {"topic": "to_acomms/word", "period_seconds": 0.1, "start_seconds": 1.0,
         "fields": {"data": "{seq}"}}]))


def rows_of(messages: list[dict], topic: str) -> list[dict]:
    return [row for row in messages if row["topic"] == topic]


def test_equal_contents_are_delivered_in_order_with_the_fates_of_their_packets(burst_run):
    summary, messages = burst_run
    ticks = rows_of(messages, "to_acomms/tick")
    delivered = [int(row["seq"]) for row in ticks if row["fate"] == "delivered"]
    assert len(delivered) > 50
    assert delivered == list(range(1, len(delivered) + 1))  # a FIFO queue, no loss: in order
    # every packet that left was decoded or is still in the water: nothing decoded went missing
    assert {row["fate"] for row in ticks} <= {"delivered", "in_flight", "queued_at_end"}
    assert all(float(row["latency_s"]) >= 0 for row in ticks if row["fate"] == "delivered")
    assert summary["warnings"] == []


def test_a_packet_with_hundreds_of_one_topic_delivers_every_one(burst_run):
    summary, messages = burst_run
    words = rows_of(messages, "to_acomms/word")
    per_arrival = collections.Counter(row["received_s"] for row in words if row["received_s"])
    assert max(per_arrival.values()) > 100  # one packet carried more than 100 words
    assert {row["fate"] for row in words} <= {"delivered", "in_flight", "queued_at_end"}
    (row,) = [t for t in summary["topics"] if t["topic"] == "to_acomms/word"]
    assert row["delivered"] == sum(per_arrival.values()) and row["not_published"] == 0


def test_equal_contents_over_a_lossy_link_go_to_the_decoded_packets(tmp_path):
    scenario = alpha_to_bravo(tmp_path, "lossy", 200.0, [{**TICKS, "period_seconds": 1.0}])
    scenario["channel"] = {**scenario["channel"], "noise": {"model": "fixed", "level_db": 124.0},
                           "fading": {"model": "rayleigh", "coherence_time_s": 1.5}}
    summary, messages = run(tmp_path, scenario)
    (link, _) = summary["links"]
    assert link["received"] > 0 and link["lost_noise"] > 0  # the seed loses some packets
    fates = collections.Counter(row["fate"] for row in messages)
    assert fates["delivered"] > 0 and fates["lost_noise"] > 0 and fates["not_published"] == 0
    # the first packet is lost: in order alone, its messages would have been "delivered"
    assert messages[0]["fate"] == "lost_noise"
    assert all(float(row["latency_s"]) < 30.0 for row in messages if row["fate"] == "delivered")
    assert summary["warnings"] == []
