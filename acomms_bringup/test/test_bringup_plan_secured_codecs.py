"""Planning a run reads the codec config without its key or state files (issue 27 item 7): a
scenario whose secured codec config names a key file that does not exist passes the loader,
acomms_check_scenario's traffic check and the runner's traffic plan; the vehicle's queue node
refuses at configure, naming the key file."""

import pathlib

import yaml

from acomms_bringup.description.scenario import parse_scenario
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.description.stack import main as check_scenario
from acomms_bringup.run.runner import RunError, Runner
from acomms_bringup.run.traffic import plan_traffic

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
SECURED = [{"codec_name": "commands", "miniframe_header": [0xA5],
            "security": {"key_file": "missing.keys", "mode": "authenticate"},
            "message_codecs": [{"id": 5, "ros_type": "std_msgs/String",
                                "subscribe_topic": "to_acomms/command",
                                "publish_topic": "from_acomms/command",
                                "fields": {"data": {"codec": "string", "max_length": 40}}}]}]


def _scenario_file(tmp_path) -> pathlib.Path:
    (tmp_path / "secured_codecs.yaml").write_text(yaml.safe_dump(SECURED))
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = "secured_codecs.yaml"
    data["vehicles"][0]["traffic"] = [{"topic": "to_acomms/command", "period_seconds": 10.0,
                                       "fields": {"data": "cmd {seq}"}}]
    path = tmp_path / "secured.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_planning_needs_no_key_file_and_configure_names_it(tmp_path, capsys):
    path = _scenario_file(tmp_path)
    assert not (tmp_path / "missing.keys").exists()
    scenario = parse_scenario(yaml.safe_load(path.read_text()), file=str(path),
                              base_dir=tmp_path)
    [plan] = plan_traffic(scenario, describe_stack(scenario))
    assert plan.publish_topic == "from_acomms/command" and plan.destinations == ("bravo",)
    assert check_scenario([str(path), "--quiet"]) == 0, capsys.readouterr().err
    runner = Runner(scenario, progress=False, clock_mode="deterministic", warp=None)
    try:
        runner.start()
        raise AssertionError("started without its key file")
    except RunError as exc:
        assert "missing.keys" in str(exc), exc
    finally:
        runner.stop()
