"""A message larger than a packet through the whole simulated stack on the stepped clock (issue
15): queue -> fragments -> TDMA -> sim modems -> dispatch reassembly -> one delivery; acks back
through the receiver's queue; a file entry in the scenario traffic arrives as a FileTransfer."""

from __future__ import annotations

import json
import pathlib
import textwrap

from acomms_bringup.run import cli

CODECS = """\
- codec_name: big
  packet_codec: ros
  miniframe_header: [0xac]
  message_codecs:
    - id: 40
      ros_type: std_msgs/msg/String
      subscribe_topic: to_acomms/report
      publish_topic: from_acomms/report
      default_dest: 2
      allow_fragmentation: true
      checksum: crc32
      fields: {data: {codec: string, max_length: 4000}}
    - id: 41
      ros_type: acomms_interfaces/msg/FileTransfer
      subscribe_topic: to_acomms/file
      publish_topic: from_acomms/file
      default_dest: 2
      allow_fragmentation: true
      fragment_always: true
      fields:
        dest: {codec: dest}
        name: {codec: string, max_length: 64}
        data: {codec: bytes, max_length: 4000}
        sha256: {codec: bytes, max_length: 32}
"""

SCENARIO = """\
name: fragments
duration_seconds: 150
seed: 3
clock: {use_sim_time: true, warp_factor: 10.0}
channel:
  sound_speed_mps: 1500.0
  water_depth_m: 100.0
  noise: {model: fixed, level_db: 60.0}
  transmission_loss: {model: spreading, spreading: practical}
vehicles:
  - name: alpha
    src: 1
    modem: {kind: sim}
    position: {latitude: 41.5200, longitude: -70.6700, depth: 10.0}
    mac: &tdma
      kind: tdma
      num_slots: 2
      slot_duration_seconds: 15.0
      active_slots: 0
      guard_time_seconds: 2.0
      packet_length_seconds: 5.0
      miniframe_rate: 5
      dataframe_rate: 5
    codec_config: codecs.yaml
    traffic:
      - topic: to_acomms/report
        period_seconds: 100000
        start_seconds: 5.0
        fields: {data: "REPORT"}
      - topic: to_acomms/file
        period_seconds: 100000
        start_seconds: 6.0
        file: mission.txt
        fields: {dest: 2}
  - name: bravo
    src: 2
    modem: {kind: sim}
    position: {latitude: 41.5335, longitude: -70.6700, depth: 10.0}
    mac: {<<: *tdma, active_slots: 1}
    codec_config: codecs.yaml
"""


def test_large_message_and_file_cross_the_simulated_stack(tmp_path):
    (tmp_path / "codecs.yaml").write_text(textwrap.dedent(CODECS))
    report = "REPORT " + "".join(f"line {i:04d} of the survey report. " for i in range(90))
    (tmp_path / "mission.txt").write_text("leg 1: 41.52N 70.67W\n" * 40)
    scenario = SCENARIO.replace('"REPORT"', f'"{report}"')
    (tmp_path / "fragments.yaml").write_text(scenario)
    out = tmp_path / "out"
    assert cli.main([str(tmp_path / "fragments.yaml"), "--warp", "max", "--quiet", "--no-mcap",
                     "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = {(m["topic"], m["fate"]) for m in _messages(out)}
    assert ("to_acomms/report", "delivered") in rows, rows
    assert ("to_acomms/file", "delivered") in rows, rows
    assert summary["messages_delivered"] == 2, summary


def _messages(out: pathlib.Path) -> list[dict]:
    import csv

    with (out / "messages.csv").open() as handle:
        return list(csv.DictReader(handle))
