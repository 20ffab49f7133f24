"""Scenario modem kind `evologics` (issue 31): parsing and refusals, the stack it describes, and
the emulated modems acomms_run serves for `connection: emulated` (ROS-free)."""

import math
import os
import time

import pytest
import yaml

from acomms_bringup.description.scenario import ScenarioError, load_scenario, parse_scenario
from acomms_bringup.description.stack import EMULATED_PORT, describe_stack
from acomms_bringup.run.emulated_modems import EmulatedModems, with_emulated_ports
from acomms_sim.emulator.usbl_errors import UsblErrorModel
from acomms_sim.physics.geodesy import horizontal_distance_m

CONFIG = os.path.join(os.path.dirname(__file__), "..", "config")
CODECS = "- codec_name: t\n  packet_codec: ros\n  message_codecs: []\n"


def vehicle(name, src, modem, slot):
    return {"name": name, "src": src, "modem": modem,
            "position": {"latitude": 41.98, "longitude": 3.03, "depth": 10},
            "mac": {"kind": "tdma", "num_slots": 2, "active_slots": slot,
                    "slot_duration_seconds": 5.0, "guard_time_seconds": 1,
                    "packet_length_seconds": 2},
            "codec_config": "codecs.yaml"}


def scenario_data(ship_modem=None, auv_modem=None):
    return {"duration_seconds": 60, "seed": 3, "clock": {"use_sim_time": False},
            "vehicles": [vehicle("ship", 2, ship_modem or {"kind": "evologics",
                                                           "connection": "emulated",
                                                           "usbl": {"bearing_error_deg": 0.5}}, 0),
                         vehicle("auv", 1, auv_modem or {"kind": "evologics",
                                                         "connection": "emulated"}, 1)]}


def parse(tmp_path, data):
    (tmp_path / "codecs.yaml").write_text(CODECS)
    return parse_scenario(yaml.safe_load(yaml.safe_dump(data)), file="scn.yaml",
                          base_dir=tmp_path)


def error(tmp_path, data) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse(tmp_path, data)
    return info.value


def test_emulated_modems_parse_with_usbl_defaults_from_the_error_model(tmp_path):
    scenario = parse(tmp_path, scenario_data())
    ship, auv = scenario.vehicles
    defaults = UsblErrorModel()
    assert ship.modem.connection["usbl"] == {
        "range_error_fraction": defaults.range_error_fraction,
        "range_error_floor_m": defaults.range_error_floor_m, "bearing_error_deg": 0.5,
        "elevation_error_deg": defaults.elevation_error_deg, "seed": defaults.seed}
    assert auv.modem.connection == {"connection": "emulated"}
    stack = describe_stack(scenario)
    driver = stack.group("ship").node("evologics_driver_node")
    assert driver.parameters["SRC"] == 2 and driver.parameters["modem_serial_port"] == EMULATED_PORT
    assert stack.group("ship").node("tdma_node").parameters["modem_profile"] == "evologics_s2c"


def test_real_evologics_connections_reach_the_driver(tmp_path):
    data = scenario_data(auv_modem={"kind": "evologics", "connection": "tcp",
                                    "remote_host": "192.168.0.42", "remote_port": 9200})
    parameters = describe_stack(parse(tmp_path, data)).group("auv").node(
        "evologics_driver_node").parameters
    assert (parameters["modem_connection_type"], parameters["modem_remote_host"],
            parameters["modem_remote_port"], parameters["SRC"]) == ("tcp", "192.168.0.42", 9200, 1)


@pytest.mark.parametrize("change, key_path, words", [
    (lambda d: d["clock"].update(use_sim_time=True), "clock.use_sim_time", "wall clock"),
    (lambda d: d["vehicles"][1].update(modem={"kind": "evologics", "connection": "serial",
                                              "serial_port": "/dev/ttyUSB0",
                                              "usbl": {"seed": 1}}),
     "vehicles[1].modem.usbl", "only with connection: emulated"),
    (lambda d: d["vehicles"][1].update(modem={"kind": "evologics", "connection": "udp"}),
     "vehicles[1].modem.connection", "emulated"),
    (lambda d: d["vehicles"][1].update(src=0), "vehicles[1].src", "1..254"),
    (lambda d: d["vehicles"][0]["modem"]["usbl"].update(bearing_errr_deg=1.0),
     "vehicles[0].modem.usbl.bearing_errr_deg", "bearing_error_deg"),
    (lambda d: d.update(channel={"transmission_loss": {"model": "bellhop"}}),
     "channel.transmission_loss.model", "spreading model only"),
])
def test_what_the_runner_cannot_do_is_refused_with_the_reason(tmp_path, change, key_path, words):
    data = scenario_data()
    change(data)
    problem = error(tmp_path, data)
    assert problem.key_path == key_path and words in problem.problem, problem


def test_emulated_modems_follow_the_trajectory_and_close_their_ptys(tmp_path):
    data = scenario_data()
    data["vehicles"][1].pop("position")
    data["vehicles"][1]["trajectory"] = [
        {"time_seconds": 0, "latitude": 41.98, "longitude": 3.03, "depth": 10},
        {"time_seconds": 100, "latitude": 41.99, "longitude": 3.03, "depth": 10}]
    scenario = parse(tmp_path, data)
    modems = EmulatedModems(scenario)
    start = time.time() - 50.0   # half way along the leg
    try:
        ports = modems.start(start)
        assert sorted(ports) == ["auv", "ship"] and all(os.path.exists(p) for p in ports.values())
        stack = with_emulated_ports(describe_stack(scenario), ports, start)
        assert stack.group("auv").node("evologics_driver_node").parameters[
            "modem_serial_port"] == ports["auv"]
        assert stack.group("auv").node("trajectory_node").parameters[
            "start_time_seconds"] == start
        ship_model = modems.served["ship"][0]
        assert ship_model.usbl == UsblErrorModel(bearing_error_deg=0.5)
        assert modems.served["auv"][0].usbl is None
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:   # the follower thread moves the AUV
            east, north, up = modems.backend.relative_enu(2, 1)
            if north > 500.0:
                break
            time.sleep(0.05)
        expected = horizontal_distance_m(41.98, 3.03, 41.985, 3.03)
        assert math.isclose(math.hypot(east, north), expected, rel_tol=0.05), (east, north)
    finally:
        modems.close()
    assert not modems._thread.is_alive() and not modems.served
    assert not any(os.path.exists(path) for path in ports.values())   # no leftover ptys


def test_shipped_cola2_usbl_scenario_loads():
    scenario = load_scenario(os.path.join(CONFIG, "cola2_usbl.yaml"))
    assert not scenario.clock.use_sim_time
    ship = scenario.vehicle("ship")
    assert ship.modem.kind == "evologics" and ship.modem.connection["usbl"]["seed"] == 7
    assert scenario.vehicle("auv").trajectory is not None


def test_usbl_keys_are_the_error_models_fields():
    import dataclasses

    from acomms_bringup.description.scenario_keys import USBL_KEYS

    fields = {f.name: f.default for f in dataclasses.fields(UsblErrorModel)}
    assert {key.name: key.default for key in USBL_KEYS} == fields


def test_launch_refuses_emulated_modems_naming_the_way():
    from acomms_bringup.description.launch_actions import load_scenario_argument

    with pytest.raises(ValueError, match="vehicle auv: modem connection: emulated runs under "
                                         "acomms_run only"):
        load_scenario_argument(os.path.join(CONFIG, "cola2_usbl.yaml"))
