"""Stack description (ROS-free): nodes, namespaces, parameters and remappings per scenario."""

import pathlib

import pytest
import yaml

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.description.stack import (
    NODE_TYPES,
    describe_clock,
    describe_simulation,
    describe_stack,
    describe_vehicle,
)

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
ARCHITECTURE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"


@pytest.fixture
def two_vehicles():
    return load_scenario(CONFIG / "two_vehicles.yaml")


def test_two_vehicle_stack_nodes_in_start_up_order(two_vehicles):
    stack = describe_stack(two_vehicles)
    assert [g.name for g in stack.groups] == ["simulation", "alpha", "bravo", "clock"]
    assert [n.fully_qualified_name for n in stack.all_nodes()] == [
        "/platform_location_node", "/sim_transmission_loss_node", "/sim_packet_performance_node",
        "/simulation_lifecycle_manager",
        "/alpha/modem_sim_node", "/alpha/message_queue_node", "/alpha/packet_dispatch_node",
        "/alpha/tdma_node", "/alpha/lifecycle_manager",
        "/bravo/modem_sim_node", "/bravo/message_queue_node", "/bravo/packet_dispatch_node",
        "/bravo/tdma_node", "/bravo/lifecycle_manager",
        "/sim_clock_node", "/clock_lifecycle_manager"]


def test_vehicle_nodes_parameters_and_remappings(two_vehicles):
    group = describe_vehicle(two_vehicles, "bravo")
    assert group.namespace == "/bravo"
    modem, queue, dispatch, mac = group.nodes
    assert (modem.package, modem.executable, modem.plugin) == (
        "acomms_sim", "modem_sim_node", "acomms_sim.nodes.modem_sim_node:ModemSimNode")
    assert modem.namespace == "/bravo"
    assert modem.remappings == (("sound_speed_profile", "/sound_speed_profile"),)
    assert modem.parameters == {
        "use_sim_time": True, "SRC": 2, "center_frequency_hz": 10000.0, "bandwidth_hz": 5000.0,
        "source_level_db": 0.0, "tx_level": 3, "capture_margin_db": 0.0, "fading_model": "none",
        "fading_k_factor": 0.0, "coherence_time_s": 0.0, "doppler_tolerance_mps": 0.0,
        "isi_tolerance_s": [0.0], "delay_spread_s": 0.0,
        "location_source": "static", "platform_name": "bravo",
        "latitude": 41.5335, "longitude": -70.67, "depth": 10.0, "seed": 1,
        "transmission_loss_model": "spreading", "spreading": "practical",
        "absorption_model": "francois_garrison", "water_temperature_c": 10.0,
        "salinity_ppt": 35.0, "ph": 8.0, "sound_speed_mps": 1500.0, "water_depth_m": 100.0,
        "ambient_noise_model": "fixed", "ambient_noise_db": 60.0, "shipping_activity": 0.5,
        "wind_speed_mps": 5.0}
    codec_file = str((CONFIG / "demo_codecs.yaml").resolve())
    for node, executable in ((queue, "message_queue_node"), (dispatch, "packet_dispatch_node")):
        assert node.executable == executable and node.package == "acomms_core"
        assert node.remappings == ()
    assert queue.parameters == {"use_sim_time": True, "src": 2, "codec_config_file": codec_file}
    assert dispatch.parameters == {"use_sim_time": True, "src": 2,   # src: issue 15
                                   "codec_config_file": codec_file}
    assert (mac.executable, mac.plugin) == ("tdma_node", "acomms_core.nodes.tdma_node:TdmaNode")
    assert mac.parameters == {"use_sim_time": True, "num_slots": 2,
                              "slot_duration_seconds": 15.0, "active_slots": 1,
                              "guard_time_seconds": 2.0, "packet_length_seconds": 5.0}
    manager = group.manager
    assert not manager.lifecycle
    assert manager.fully_qualified_name == "/bravo/lifecycle_manager"
    assert manager.parameters["node_names"] == [
        "/bravo/modem_sim_node", "/bravo/message_queue_node", "/bravo/packet_dispatch_node",
        "/bravo/tdma_node"]
    assert manager.parameters["autostart"] is True


def test_simulation_and_clock_groups(two_vehicles):
    simulation = describe_simulation(two_vehicles)
    location, transmission_loss, performance = simulation.nodes
    assert all(n.namespace == "/" for n in simulation.nodes)
    assert location.parameters == {
        "use_sim_time": True, "platform_names": ["alpha", "bravo"],
        "latitudes": [41.52, 41.5335], "longitudes": [-70.67, -70.67], "depths": [10.0, 10.0],
        "position_topics": ["", ""]}
    assert transmission_loss.parameters == {
        "use_sim_time": True, "transmission_loss_model": "spreading", "spreading": "practical",
        "absorption_model": "francois_garrison", "water_temperature_c": 10.0,
        "salinity_ppt": 35.0, "ph": 8.0, "sound_speed_mps": 1500.0, "water_depth_m": 100.0,
        "delay_spread_s": 0.0}
    assert performance.parameters == {"use_sim_time": True, "seed": 1}
    clock = describe_clock(two_vehicles)
    (sim_clock,) = clock.nodes
    assert sim_clock.fully_qualified_name == "/sim_clock_node"
    # The clock itself runs on wall time (no use_sim_time).
    assert sim_clock.parameters == {"mode": "free_running", "warp_factor": 10.0,
                                    "start_time_s": 1735689600.0}  # 2025-01-01T00:00:00Z
    assert clock.manager.parameters["node_names"] == ["/sim_clock_node"]


def test_demo_moving_auv_gets_trajectory_node_and_location_service():
    scenario = load_scenario(CONFIG / "demo.yaml")
    auv = describe_vehicle(scenario, "auv")
    assert [n.executable for n in auv.nodes] == [
        "trajectory_node", "modem_sim_node", "message_queue_node", "packet_dispatch_node",
        "tdma_node"]
    trajectory, modem = auv.nodes[:2]
    assert trajectory.parameters["waypoint_times_seconds"] == [0.0, 300.0, 600.0]
    assert trajectory.parameters["waypoint_depths"] == [20.0, 40.0, 40.0]
    # = the sim clock start (the scenario's default clock.start_time, 2025-01-01T00:00:00Z)
    assert trajectory.parameters["start_time_seconds"] == 1735689600.0
    assert modem.parameters["location_source"] == "service"
    assert modem.remappings == (("read_location", "/read_location"),
                                ("sound_speed_profile", "/sound_speed_profile"))
    location = describe_simulation(scenario).nodes[0]
    assert location.parameters["platform_names"] == ["auv", "gateway", "topside"]
    assert location.parameters["position_topics"] == ["/auv/fix", "", ""]
    topside = describe_vehicle(scenario, "topside")
    ship = topside.node("modem_sim_node").parameters
    assert (ship["source_level_db"], ship["tx_level"]) == (0.0, 0)  # 183 dB from the profile
    assert modem.parameters["tx_level"] == 3 and modem.parameters["fading_model"] == "rayleigh"
    slots = [describe_vehicle(scenario, v.name).nodes[-1].parameters["active_slots"]
             for v in scenario.vehicles]
    assert slots == [0, 1, 2]


def write_scenario(tmp_path, vehicles, **top):
    (tmp_path / "c.yaml").write_text("- codec_name: c\n  message_codecs: []\n")
    data = {"duration_seconds": 10, "vehicles": vehicles, **top}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def vehicle(name, src, **extra):
    return {"name": name, "src": src, "modem": {"kind": "sim"},
            "position": {"latitude": 1.0, "longitude": 2.0, "depth": 3.0},
            "mac": {"kind": "tdma", "num_slots": 2, "active_slots": src - 1},
            "codec_config": "c.yaml", **extra}


def test_overrides_mac_kinds_and_slot_strings(tmp_path):
    plan = tmp_path / "x.yaml"  # the scenario checks the plan as the node does: it must exist
    plan.write_text("test_cycle: [{dataframe_rate: 1}]\n")
    scenario = write_scenario(tmp_path, [
        vehicle("a", 1, namespace="/fleet/a",
                mac={"kind": "tdma_advanced", "num_slots": 4, "active_slots": ["0:1", 3],
                     "software_mute": True},
                parameters={"mac": {"pings_per_slot": 2}, "modem": {"SRC": 9},
                            "message_queue_node": {"default_priority": 20}}),
        vehicle("b", 2, mac={"kind": "tdma_scripted", "num_slots": 2, "active_slots": [1],
                             "tdma_scripted_test_plan_file": str(plan)})])
    a = describe_vehicle(scenario, "a")
    assert a.namespace == "/fleet/a"
    assert a.manager.fully_qualified_name == "/fleet/a/lifecycle_manager"
    mac = a.node("tdma_advanced_node")
    assert mac.plugin == "acomms_core.nodes.tdma_advanced_node:TdmaAdvancedNode"
    assert mac.parameters["active_slots"] == "0:1,3"  # ROS lists cannot mix ints and strings
    assert mac.parameters["software_mute"] is True and mac.parameters["pings_per_slot"] == 2
    assert a.node("modem_sim_node").parameters["SRC"] == 9  # override applied last
    assert a.node("message_queue_node").parameters["default_priority"] == 20
    assert "default_priority" not in a.node("packet_dispatch_node").parameters
    b = describe_vehicle(scenario, "b")
    assert b.node("tdma_scripted_node").parameters["active_slots"] == [1]


def test_channel_doppler_and_multipath_keys(tmp_path):
    """Issue 14: the channel's Doppler tolerance and multipath reach modem_sim_node (and the
    delay spread sim_transmission_loss_node); a bad tolerance list names its key."""
    channel = {"doppler_tolerance_mps": 1.5,
               "multipath": {"delay_spread_s": 0.004, "isi_tolerance_s": [0.01]}}
    scenario = write_scenario(tmp_path, [vehicle("a", 1), vehicle("b", 2)], channel=channel)
    modem = describe_vehicle(scenario, "a").node("modem_sim_node").parameters
    assert (modem["doppler_tolerance_mps"], modem["isi_tolerance_s"],
            modem["delay_spread_s"]) == (1.5, [0.01], 0.004)
    transmission_loss = describe_simulation(scenario).nodes[1].parameters
    assert transmission_loss["delay_spread_s"] == 0.004
    channel["multipath"]["isi_tolerance_s"] = [0.01, 0.02]
    with pytest.raises(ValueError, match=r"channel\.multipath\.isi_tolerance_s.*1 value or 7"):
        write_scenario(tmp_path, [vehicle("a", 1), vehicle("b", 2)], channel=channel)


def test_micromodem_vehicle_uses_driver_and_wall_clock(tmp_path):
    scenario = write_scenario(tmp_path, [
        vehicle("ship", 1, modem={"kind": "micromodem", "connection": "udp",
                                  "remote_host": "10.0.0.5", "remote_port": 4001,
                                  "local_port": 4002, "modem_config": {"pwramp.txlevel": 2}}),
        vehicle("sub", 2, modem={"kind": "micromodem", "serial_port": "/dev/ttyS1",
                                 "baud_rate": 115200})])
    stack = describe_stack(scenario)
    assert [g.name for g in stack.groups] == ["ship", "sub"]  # no simulator, no sim clock
    driver = stack.group("ship").nodes[0]
    assert (driver.package, driver.executable) == ("acomms_driver", "acomms_driver_node")
    assert driver.plugin == "acomms_driver.nodes.acomms_driver_node:AcommsDriverNode"
    assert driver.parameters == {
        "use_sim_time": False, "modem_connection_type": "udp", "set_modem_time": False,
        "modem_remote_host": "10.0.0.5", "modem_remote_port": 4001, "modem_local_port": 4002,
        "modem_config": "{SRC: 1, pwramp.txlevel: 2}"}
    serial = stack.group("sub").nodes[0].parameters
    assert serial["modem_serial_port"] == "/dev/ttyS1" and serial["modem_baud_rate"] == 115200
    assert all(not n.parameters.get("use_sim_time", False) for n in stack.all_nodes())


def test_bellhop_and_profile_reach_the_channel_nodes(tmp_path):
    scenario = write_scenario(tmp_path, [vehicle("a", 1), vehicle("b", 2)], channel={
        "sound_speed_profile": {"depths_m": [0, 100], "sound_speeds_mps": [1500, 1480]},
        "transmission_loss": {"model": "bellhop"}})
    transmission_loss = describe_simulation(scenario).node("sim_transmission_loss_node")
    assert transmission_loss.parameters["transmission_loss_model"] == "bellhop"
    assert transmission_loss.parameters["sound_speed_mps"] == 1490.0  # profile mean
    modem = describe_vehicle(scenario, "a").node("modem_sim_node")
    assert modem.parameters["transmission_loss_model"] == "bellhop"
    assert modem.parameters["sound_speed_mps"] == 1490.0


def test_node_types_match_the_architecture_table():
    """Every executable → module:Class pair we start is the one docs/ARCHITECTURE.md names."""
    table = ARCHITECTURE.read_text()
    for executable, (package, plugin) in NODE_TYPES.items():
        if package == "acomms_bringup":
            continue  # our own nodes, documented in the README
        assert f"| {executable} | {plugin} | {package} |" in table, executable


def test_every_parameter_value_is_a_ros_parameter_type():
    """Launch files and parameter_overrides accept scalars and homogeneous lists only."""
    for scenario_file in ("demo.yaml", "two_vehicles.yaml", "micromodem_pair.yaml"):
        for node in describe_stack(load_scenario(CONFIG / scenario_file)).all_nodes():
            for name, value in node.parameters.items():
                if isinstance(value, list):
                    assert value and len({type(v) for v in value}) == 1, (node.name, name)
                else:
                    assert isinstance(value, (bool, int, float, str)), (node.name, name)


def test_check_scenario_command(tmp_path, capsys):
    from acomms_bringup.description.stack import main

    assert main([str(CONFIG / "demo.yaml")]) == 0
    out = capsys.readouterr().out
    assert "[auv] managed by /auv/lifecycle_manager" in out
    assert "      remap read_location -> /read_location" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("duration_seconds: 1\nvehicles: []\n")
    assert main(["-q", str(CONFIG / "two_vehicles.yaml"), str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == f"{bad}: vehicles: needs at least one vehicle"
