"""Scenario `position_source` (a vehicle's position from an external simulator's topic): loader
checks with file + key path, and the modem parameters the stack derives (ROS-free)."""

import pytest
import yaml

from acomms_bringup.description.scenario import ScenarioError, load_scenario
from acomms_bringup.description.stack import describe_simulation, describe_vehicle
from acomms_core.ros.parameter_spec import check_values
from acomms_sim.modem.location_topic import LOCATION_TOPIC_SPECS, check_location_topic
from acomms_sim.nodes.modem_sim_node import SPECS as MODEM_SPECS
from acomms_sim.nodes.modem_sim_node import validate as modem_validate

ODOM_SOURCE = {"topic": "/gazebo/auv1/odom", "type": "odometry",
               "origin": {"latitude": 41.5, "longitude": -70.6, "depth": 2.0},
               "frame_id": "world", "max_age_seconds": 3.0}


def vehicle(name, src, **where):
    where = where or {"position": {"latitude": 41.5, "longitude": -70.6, "depth": 10.0}}
    return {"name": name, "src": src, "modem": {"kind": "sim"}, **where,
            "mac": {"kind": "tdma", "num_slots": 2, "active_slots": src - 1,
                    "slot_duration_seconds": 15.0},
            "codec_config": "c.yaml"}


def write(tmp_path, vehicles):
    (tmp_path / "c.yaml").write_text("- codec_name: c\n  message_codecs: []\n")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"duration_seconds": 10, "vehicles": vehicles}))
    return path


def load(tmp_path, *vehicles):
    return load_scenario(write(tmp_path, list(vehicles)))


def refusal(tmp_path, source, **extra) -> ScenarioError:
    path = write(tmp_path, [vehicle("auv1", 1, position_source=source, **extra)])
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: vehicles[0]."), str(info.value)
    return info.value


def test_odometry_source_becomes_modem_topic_parameters(tmp_path):
    scenario = load(tmp_path, vehicle("auv1", 1, position_source=ODOM_SOURCE), vehicle("buoy", 2))
    auv = scenario.vehicle("auv1")
    assert auv.position is None and auv.trajectory is None
    modem = describe_vehicle(scenario, "auv1").node("modem_sim_node")
    expected = {"location_source": "topic", "modem_location_topic": "/gazebo/auv1/odom",
                "location_topic_type": "odometry", "enu_origin_latitude": 41.5,
                "enu_origin_longitude": -70.6, "enu_origin_altitude_m": -2.0,
                "location_frame_id": "world", "location_max_age_s": 3.0}
    assert {k: modem.parameters[k] for k in expected} == expected
    assert "latitude" not in modem.parameters and "platform_name" not in modem.parameters
    assert dict(modem.remappings) == {"sound_speed_profile": "/sound_speed_profile"}
    # what the stack passes, the node accepts
    values = {k: v for k, v in modem.parameters.items() if k != "use_sim_time"}
    assert check_values(MODEM_SPECS, values, modem_validate) is None
    # read_location serves only the vehicles with scenario positions
    location = describe_simulation(scenario).nodes[0]
    assert location.parameters["platform_names"] == ["buoy"]


def test_geodetic_sources_need_no_origin_and_all_topic_vehicles_need_no_locator(tmp_path):
    fix = {"topic": "fix", "type": "navsatfix"}
    scenario = load(tmp_path, vehicle("ship", 1, position_source=fix),
                    vehicle("auv", 2, position_source={"topic": "location", "type": "location"}))
    modem = describe_vehicle(scenario, "ship").node("modem_sim_node")
    assert modem.parameters["modem_location_topic"] == "fix"  # relative: /ship/fix
    assert modem.parameters["location_topic_type"] == "navsatfix"
    assert [n.executable for n in describe_simulation(scenario).nodes] == [
        "sim_transmission_loss_node", "sim_packet_performance_node"]


@pytest.mark.parametrize("change, key_path, words", [
    ({"type": "twist"}, "position_source.type", "unknown value 'twist'"),
    ({"topic": "not a topic"}, "position_source.topic", "not a topic name"),
    ({"topic": None}, "position_source.topic", "missing"),
    ({"origin": None}, "position_source.origin", "local ENU frame"),
    ({"origin": {"latitude": 90.0, "longitude": 0.0}}, "position_source.origin",
     "strictly between -90 and 90"),
    ({"origin": {"latitude": 41.0, "longitude": 0.0, "altitude": 3}},
     "position_source.origin.altitude", "unknown key"),
    ({"type": "navsatfix"}, "position_source.origin", "geodetic: no origin"),
    ({"max_age_seconds": -1}, "position_source.max_age_seconds", ">= 0.0"),
    ({"rate_hz": 5}, "position_source.rate_hz", "unknown key"),
])
def test_bad_sources_name_the_key(tmp_path, change, key_path, words):
    source = {**ODOM_SOURCE, **change}
    error = refusal(tmp_path, {k: v for k, v in source.items() if v is not None})
    assert error.key_path == f"vehicles[0].{key_path}" and words in error.problem, str(error)


def test_source_excludes_position_and_trajectory_and_micromodems(tmp_path):
    error = refusal(tmp_path, ODOM_SOURCE,
                    position={"latitude": 41.5, "longitude": -70.6, "depth": 10.0})
    assert error.key_path == "vehicles[0].position_source" and "not both" in error.problem
    error = refusal(tmp_path, ODOM_SOURCE, trajectory=[
        {"time_seconds": 0, "latitude": 41.5, "longitude": -70.6, "depth": 10.0}])
    assert "not both" in error.problem
    path = write(tmp_path, [{**vehicle("auv1", 1, position_source=ODOM_SOURCE),
                             "modem": {"kind": "micromodem", "serial_port": "/dev/null"}}])
    with pytest.raises(ScenarioError, match="position_source is for sim modems"):
        load_scenario(path)


def test_scenario_checks_are_the_nodes_checks():
    """The loader runs the node's own specs and validator (one rule, one place)."""
    from acomms_bringup.description.scenario import Position, PositionSource

    pole = PositionSource("odom", "odometry", Position(90.0, 0.0, 0.0))
    reason = check_values(LOCATION_TOPIC_SPECS, pole.modem_parameters(), check_location_topic)
    assert reason and "strictly between -90 and 90" in reason
