"""A ros_acomms TDMA parameter file in a scenario, unchanged (issue 27 item 3): `mac:
{kind: tdma_advanced, ros_acomms_params_file: ros_acomms_tdma.yaml}` reads it relative to the
scenario with notes for the ros_acomms names, and a run sends in the file's slots (0 and 2 of
4 x 15 s)."""

import pathlib

import pytest
import yaml

from acomms_bringup.description.scenario import ScenarioError, load_scenario, parse_scenario

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
SCENARIO = CONFIG / "ros_acomms_tdma_scenario.yaml"


def test_the_scenario_reads_the_file_with_notes():
    scenario = load_scenario(SCENARIO)
    mac = scenario.vehicle("auv1").mac
    assert mac.kind == "tdma_advanced"
    parameters = dict(mac.parameters)
    assert "ros_acomms_params_file" not in parameters
    assert parameters["slot_duration_seconds"] == 15.0 and parameters["num_slots"] == 4
    assert parameters["active_slots"] == "0,2" and parameters["service_timeout_seconds"] == 10.0
    warnings = "\n".join(scenario.warnings)
    assert "'wait_for_services_timeout_sec' is the ros_acomms name" in warnings, warnings
    assert "'publish_private_status' (ros_acomms) is not supported here" in warnings, warnings


def _data(**mac) -> dict:
    data = yaml.safe_load(SCENARIO.read_text())
    data["vehicles"][0]["mac"].update(mac)
    return data


def test_scenario_keys_win_over_the_file():
    scenario = parse_scenario(_data(active_slots=2), file="s.yaml", base_dir=CONFIG)
    assert scenario.vehicle("auv1").mac.parameters["active_slots"] == 2


@pytest.mark.parametrize("file_text, reason", [
    (None, "No such file"),
    ("num_slots: 4\nslot_duraton_seconds: 15\n", "did you mean 'slot_duration_seconds'"),
    ("num_slots: 2\nactive_slots: 3\n", "active_slots"),
])
def test_bad_files_are_refused_naming_the_key(tmp_path, file_text, reason):
    if file_text is not None:
        (tmp_path / "tdma.yaml").write_text(file_text)
    data = _data(ros_acomms_params_file="tdma.yaml")
    data["vehicles"][0]["codec_config"] = str(CONFIG / "demo_codecs.yaml")
    data["vehicles"][1]["codec_config"] = str(CONFIG / "demo_codecs.yaml")
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, file="s.yaml", base_dir=tmp_path)
    message = str(info.value)
    assert "vehicles[0].mac" in message and reason in message, message


def test_a_run_sends_in_the_files_slots():
    from acomms_bringup.run import report
    from acomms_bringup.run.runner import Runner

    scenario = load_scenario(SCENARIO)
    runner = Runner(scenario, progress=False, clock_mode="deterministic", warp=None)
    try:
        runner.start()
        runner.run()
    finally:
        runner.stop()
    origin = scenario.clock.origin_s
    starts = [t.start_s - origin for t in runner.record.transmissions if t.vehicle == "auv1"]
    assert {int(s % 60.0 // 15.0) for s in starts} == {0, 2}, starts
    summary = report.summarize(runner.record)
    assert summary["messages_delivered"] > 0, report.format_summary(summary)
