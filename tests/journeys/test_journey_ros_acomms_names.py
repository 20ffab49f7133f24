"""Journey: a ros_acomms user's names in a scenario (README "Bringup: scenarios ...",
docs/MIGRATING_FROM_ROS_ACOMMS.md).

`acomms_check_scenario` accepts ros_acomms parameter names with a counterpart and `_m_s` units
with one warning line each, slot_tags as a YAML list, and refuses a misspelt key or traffic field
with one line naming it and the closest allowed name.
"""

from __future__ import annotations

import yaml
from journey_support import documented, shell

CODECS = """\
- codec_name: t
  packet_codec: ros
  miniframe_header: [0xac]
  message_codecs:
    - id: 1
      subscribe_topic: to_acomms/cmd
      publish_topic: from_acomms/cmd
      ros_type: std_msgs/UInt8
      fields: {data: {codec: uint8}}
"""


def vehicle(name, src, slot, **mac):
    return {"name": name, "src": src, "modem": {"kind": "sim"},
            "position": {"latitude": 41.5, "longitude": -70.6, "depth": 10},
            "mac": {"kind": "tdma", "num_slots": 2, "active_slots": slot,
                    "slot_duration_seconds": 15.0, "guard_time_seconds": 2,
                    "packet_length_seconds": 5, **mac},
            "codec_config": "codecs.yaml",
            "traffic": [{"topic": "to_acomms/cmd", "period_seconds": 30.0,
                         "fields": {"data": 7}}]}


def write(folder, data):
    (folder / "codecs.yaml").write_text(CODECS)
    path = folder / "ros1_names.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def scenario():
    tags = [{"slots": "0", "require_tags": ["chat"]}]
    return {"duration_seconds": 60, "channel": {"sound_speed_m_s": 1495.0},
            "vehicles": [vehicle("a", 1, 0, wait_for_services_timeout_sec=10.0, slot_tags=tags),
                         vehicle("b", 2, 1)]}


def test_ros_acomms_names_are_read_with_warnings(tmp_path):
    path = write(tmp_path, scenario())
    result = shell(f"{documented('acomms_check_scenario')} {path}", timeout_s=60)
    assert result.returncode == 0, result
    warnings = [line for line in result.stderr.splitlines() if ": warning: " in line]
    assert len(warnings) == 2, result.stderr
    assert "'wait_for_services_timeout_sec' is the ros_acomms name" in result.stderr
    assert "'sound_speed_m_s'" in result.stderr and "'sound_speed_mps'" in result.stderr
    assert "service_timeout_seconds = 10.0" in result.stdout, result.stdout


def test_misspelt_key_and_traffic_field_are_named(tmp_path):
    data = scenario()
    data["vehicles"][1]["trajectroy"] = data["vehicles"][1].pop("position")
    result = shell(f"acomms_check_scenario {write(tmp_path, data)}", timeout_s=60)
    assert result.returncode == 1, result
    assert "vehicles[1].trajectroy: unknown key (did you mean 'trajectory'?)" in result.stderr
    data = scenario()
    data["vehicles"][0]["traffic"][0]["fields"] = {"dta": 7}
    result = shell(f"acomms_check_scenario {write(tmp_path, data)}", timeout_s=60)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1, result
    assert "traffic[0].fields.dta: UInt8 has no field 'dta' (did you mean 'data'?)" in \
        result.stderr
