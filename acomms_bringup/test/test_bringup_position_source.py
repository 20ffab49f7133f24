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


def test_described_vehicle_follows_the_external_simulator(tmp_path):
    """Scenario -> stack -> composed nodes: the AUV's modem takes its position from the
    stand-in simulator's Odometry; a packet from the buoy arrives after range / c."""
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from test_bringup_sim_stack import sim_only

    from acomms_bringup.description.stack import describe_stack
    from acomms_bringup.run.compose import create_group
    from acomms_core.ros.ros_support import seconds_to_time_msg, stamp_seconds
    from acomms_core.ros.testing import RosHarness
    from acomms_interfaces.msg import Packet, ReceivedPacket, TransmittedPacket
    from acomms_interfaces.srv import QueueTxPacket

    source = {**ODOM_SOURCE, "origin": {"latitude": 41.5, "longitude": -70.6}, "frame_id": ""}
    scenario = load(tmp_path, vehicle("auv1", 1, position_source=source), vehicle("buoy", 2))
    groups = [sim_only(g) for g in describe_stack(scenario).groups if g.name != "clock"]
    with RosHarness() as ros:
        clock = ros.helper.create_publisher(Clock, "/clock", 10)
        modems = {}
        for group in groups:
            created = [ros.add(node) for node in create_group(group, ros.context)]
            assert ros.spin_until(lambda m=created[-1]: m.manager_state in ("active", "failed"),
                                  timeout=30.0), group.name
            assert created[-1].manager_state == "active", created[-1].last_message
            modems.update({n.get_namespace().strip("/"): n for n in created[:-1]
                           if type(n).__name__ == "ModemSimNode"})
        odom = Odometry()
        odom.pose.pose.position.x, odom.pose.pose.position.y = 800.0, 600.0
        odom.pose.pose.position.z = -10.0  # the buoy is 10 m deep at the origin: range 1000 m
        simulator = ros.helper.create_publisher(Odometry, "/gazebo/auv1/odom", 10)
        for _ in range(100):
            simulator.publish(odom)
            if ros.spin_until(lambda: modems["auv1"].position is not None, timeout=0.05):
                break
        assert modems["auv1"].position is not None
        received, sent = [], []
        ros.helper.create_subscription(ReceivedPacket, "/auv1/packet_rx", received.append, 10)
        ros.helper.create_subscription(TransmittedPacket, "/buoy/transmit", sent.append, 10)
        now = 1.0
        clock.publish(Clock(clock=seconds_to_time_msg(now)))
        ros.spin_for(0.2)
        client = ros.helper.create_client(QueueTxPacket, "/buoy/queue_tx_packet")
        packet = Packet(src=2, dest=1, packet_type=Packet.PACKET_TYPE_FDP, miniframe_rate=1,
                        dataframe_rate=1, miniframe_bytes=b"hi", dataframe_bytes=b"there")
        assert ros.call(client, QueueTxPacket.Request(queue=1, packet=packet), timeout=5.0).success
        while not received and now < 20.0:
            now = round(now + 0.1, 3)
            clock.publish(Clock(clock=seconds_to_time_msg(now)))
            ros.spin_until(lambda: bool(received), timeout=0.03)
        assert received and sent
        delay = stamp_seconds(received[0].cst.toa) - stamp_seconds(sent[0].xst.time)
        # no sound speed in the scenario: Mackenzie at 10 °C, 35 ppt, 10 m (~1490 m/s)
        from acomms_sim.physics.sound_speed import mackenzie
        assert delay == pytest.approx(1000.0 / mackenzie(10.0, 35.0, 10.0), abs=1e-4)


def test_example_scenario_loads():
    import pathlib

    config = pathlib.Path(__file__).resolve().parents[1] / "config"
    scenario = load_scenario(config / "external_positions.yaml")
    source = scenario.vehicle("auv1").position_source
    assert (source.topic, source.type, source.max_age_seconds) == ("/gazebo/auv1/odom",
                                                                   "odometry", 5.0)
    modem = describe_vehicle(scenario, "auv1").node("modem_sim_node")
    assert modem.parameters["location_source"] == "topic"
