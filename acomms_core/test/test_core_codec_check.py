"""acomms_codec_check: a codec config's message sizes, field resolutions and the rates they fit."""

import json
import pathlib

import yaml
from sensor_msgs.msg import NavSatFix

from acomms_core.codecs import load_codec_config
from acomms_core.tools import codec_check

DEMO_CODECS = (pathlib.Path(__file__).resolve().parents[2] / "acomms_bringup" / "config"
               / "demo_codecs.yaml")


def test_demo_config_sizes_resolutions_and_rates(capsys):
    assert codec_check.main([str(DEMO_CODECS), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    codecs = {c["id"]: c for c in report["message_codecs"]}
    assert set(codecs) == {1, 2, 3, 4}   # 4: the demo file (issue 15)
    nav = codecs[1]
    assert nav["ros_type"] == "sensor_msgs/msg/NavSatFix"
    # the size the queue really encodes lies within [min, max]
    config = load_codec_config(str(DEMO_CODECS))
    bits, _ = config.by_id()[1].codec.encode(NavSatFix(latitude=41.5, longitude=-70.6))
    assert nav["min_bits"] <= len(bits) <= nav["max_bits"]
    assert nav["max_cost_in_packet_bits"] >= nav["max_bits"]
    resolutions = {f["field"]: f["resolution"] for f in nav["fields"]}
    assert resolutions == {"header.stamp": "0.01 s", "latitude": "1e-05",
                           "longitude": "1e-05", "altitude": "0.1"}
    assert codecs[3]["min_bits"] < codecs[3]["max_bits"]  # a string: variable length
    rates = {r["rate"]: r for r in nav["rates"]}
    assert 0 < rates[1]["payload_bits"] < rates[3]["payload_bits"] < rates[5]["payload_bits"]
    assert rates[1]["messages_per_packet"] == rates[1]["payload_bits"] // nav[
        "max_cost_in_packet_bits"]


def test_text_report_names_rates_a_large_message_does_not_fit(tmp_path, capsys):
    data = yaml.safe_load(DEMO_CODECS.read_text())
    command = data[0]["message_codecs"][2]
    command["fields"]["data"]["max_length"] = 400  # up to 400 characters: > a rate-1 packet
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(data))
    assert codec_check.main([str(path)]) == 0
    text = capsys.readouterr().out
    block = text.split("[3] std_msgs/msg/String")[1]
    assert "max 400 items" in block
    fits = next(line for line in block.splitlines() if "fits at rates" in line)
    assert "1 (" not in fits and "5 (" in fits
    assert "too large for rates: 1" in block


def test_bad_config_is_one_line_naming_the_file(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("- codec_name: x\n  message_codecs: [{id: 1, ros_type: no_such/msg/T}]\n")
    assert codec_check.main([str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"acomms_codec_check: {path}")


def test_unusable_rates_are_named_once_with_the_reason(capsys):
    assert codec_check.main([str(DEMO_CODECS)]) == 0
    text = capsys.readouterr().out
    lines = [line for line in text.splitlines() if "cannot use rates" in line]
    assert lines == ["packet codec demo cannot use rates 0, 2, 4, 6: their packets have no "
                     "miniframe (legacy, not FDP) and demo's 1-byte header goes in the miniframe"
                     ], text
    assert codec_check.main([str(DEMO_CODECS), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for codec in report["message_codecs"]:
        for rate in codec["rates"]:
            assert (rate["unusable"] is not None) == (rate["payload_bits"] == 0), rate
