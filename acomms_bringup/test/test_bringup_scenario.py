"""Scenario loading and validation (ROS-free): good files load, bad ones name file and key."""

import pathlib
import textwrap

import pytest
import yaml

from acomms_bringup.description.scenario import (
    Position,
    ScenarioError,
    Trajectory,
    Waypoint,
    load_scenario,
    resolve_path,
)

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
CODECS = "- codec_name: t\n  packet_codec: ros\n  message_codecs: []\n"


def base_vehicle(name, src, active_slots):
    return {"name": name, "src": src, "modem": {"kind": "sim"},
            "position": {"latitude": 41.5, "longitude": -70.6, "depth": 10},
            "mac": {"kind": "tdma", "num_slots": 2, "active_slots": active_slots,
                    "slot_duration_seconds": 15.0, "guard_time_seconds": 2,
                    "packet_length_seconds": 5},
            "codec_config": "codecs.yaml"}


def base_scenario():
    return {"duration_seconds": 60, "seed": 3,
            "clock": {"use_sim_time": True, "warp_factor": 5},
            "vehicles": [base_vehicle("a", 1, 0), base_vehicle("b", 2, 1)]}


def write(tmp_path, data, name="scn.yaml"):
    (tmp_path / "codecs.yaml").write_text(CODECS)
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def error_for(tmp_path, data, name="scn.yaml") -> ScenarioError:
    path = write(tmp_path, data, name)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: "), str(info.value)
    return info.value


def test_demo_scenario_loads():
    scenario = load_scenario(CONFIG / "demo.yaml")
    assert scenario.name == "demo"
    assert [v.name for v in scenario.vehicles] == ["auv", "gateway", "topside"]
    assert [v.src for v in scenario.vehicles] == [1, 2, 3]
    assert [v.namespace for v in scenario.vehicles] == ["/auv", "/gateway", "/topside"]
    assert scenario.clock.use_sim_time and scenario.clock.warp_factor == 10.0
    assert scenario.duration_seconds == 600.0
    assert scenario.warnings == ()  # disjoint TDMA slots
    auv = scenario.vehicle("auv")
    assert auv.trajectory is not None and len(auv.trajectory.waypoints) == 3
    assert auv.position == auv.trajectory.waypoints[0].position
    assert auv.codec_config == (CONFIG / "demo_codecs.yaml").resolve()
    # the ship's level comes from its txlevel (the modem profile), fading per frame
    assert scenario.vehicle("topside").modem.tx_level == 0
    assert scenario.vehicle("topside").modem.source_level_db is None
    assert scenario.channel.fading.model == "rayleigh" and scenario.channel.tx_level == 3
    assert scenario.vehicle("gateway").mac.parameters["active_slots"] == 1
    assert scenario.vehicle("gateway").mac.parameters["num_slots"] == 3  # YAML merge key


def test_two_vehicles_scenario_loads():
    scenario = load_scenario(CONFIG / "two_vehicles.yaml")
    assert [v.name for v in scenario.vehicles] == ["alpha", "bravo"]
    assert scenario.channel.transmission_loss_model == "spreading"


def test_micromodem_pair_scenario_loads():
    scenario = load_scenario(CONFIG / "micromodem_pair.yaml")
    assert not scenario.clock.use_sim_time and not scenario.has_sim_modems
    assert scenario.vehicles[0].modem.connection["modem_config"] == {"pwramp.txlevel": 3}
    assert scenario.vehicles[1].modem.connection["remote_port"] == 4001


def test_demo_codec_config_follows_ros_acomms_schema():
    packet_codecs = yaml.safe_load((CONFIG / "demo_codecs.yaml").read_text())
    packet_keys = {"codec_name", "match_src", "match_dest", "except_src", "except_dest",
                   "packet_codec", "miniframe_header", "dataframe_header", "remove_headers",
                   "message_codecs"}
    message_keys = {"id", "message_codec", "subscribe_topic", "publish_topic", "ros_type",
                    "default_dest", "queue_order", "queue_maxsize", "is_active",
                    "allow_fragmentation", "priority", "tags", "fields"}
    ids = []
    for packet_codec in packet_codecs:
        assert set(packet_codec) == packet_keys
        assert packet_codec["packet_codec"] == "ros"
        for codec in packet_codec["message_codecs"]:
            assert set(codec) == message_keys, codec["id"]
            assert codec["queue_order"] in ("fifo", "lifo")
            assert all("codec" in field for field in codec["fields"].values())
            ids.append(codec["id"])
    assert len(ids) == len(set(ids)) == 4   # 4: the demo file (issue 15)
    types = {c["ros_type"] for p in packet_codecs for c in p["message_codecs"]}
    assert types == {"sensor_msgs/msg/NavSatFix", "sensor_msgs/msg/Temperature",
                     "std_msgs/msg/String", "acomms_interfaces/msg/FileTransfer"}


def test_defaults(tmp_path):
    data = base_scenario()
    del data["clock"], data["seed"]
    scenario = load_scenario(write(tmp_path, data))
    assert scenario.name == "scn" and scenario.seed == 0
    assert scenario.clock.use_sim_time and scenario.clock.warp_factor == 1.0
    channel = scenario.channel
    # no sound speed given: Mackenzie (the node's sound_speed_mps 0); profile's levels per
    # txlevel; no fading; absorption as the library's default
    assert channel.sound_speed_mps is None and channel.noise.model == "fixed"
    assert channel.source_level_db is None and channel.tx_level == 3
    assert channel.fading.model == "none" and channel.absorption.model == "francois_garrison"
    assert channel.transmission_loss_model == "spreading" and channel.spreading == "practical"
    assert scenario.vehicles[0].namespace == "/a"


def test_duplicate_src(tmp_path):
    data = base_scenario()
    data["vehicles"].append(base_vehicle("c", 2, 0))
    error = error_for(tmp_path, data, "demo.yaml")
    assert str(error).endswith("demo.yaml: vehicles[2].src: duplicate SRC 2 (also vehicles[1])")
    assert error.key_path == "vehicles[2].src"


def test_unknown_modem_kind(tmp_path):
    data = base_scenario()
    data["vehicles"][1]["modem"] = {"kind": "benthos"}
    error = error_for(tmp_path, data)
    assert error.key_path == "vehicles[1].modem.kind"
    assert "unknown value 'benthos'" in error.problem and "micromodem" in error.problem


def test_missing_codec_config(tmp_path):
    data = base_scenario()
    data["vehicles"][0]["codec_config"] = "nope.yaml"
    error = error_for(tmp_path, data)
    assert error.key_path == "vehicles[0].codec_config"
    assert "codec config file not found" in error.problem
    assert str(tmp_path / "nope.yaml") in error.problem


def test_codec_config_that_is_not_a_list(tmp_path):
    data = base_scenario()
    (tmp_path / "bad_codecs.yaml").write_text("codec_name: x\n")
    data["vehicles"][1]["codec_config"] = "bad_codecs.yaml"
    error = error_for(tmp_path, data)
    assert error.key_path == "vehicles[1].codec_config" and "list of packet codecs" in str(error)


def test_unknown_keys_are_refused_everywhere(tmp_path):
    for mutate, key_path in [
        (lambda d: d.update(durration_seconds=5), "durration_seconds"),
        (lambda d: d["vehicles"][0].update(speed=3), "vehicles[0].speed"),
        (lambda d: d["vehicles"][0]["mac"].update(num_slot=3), "vehicles[0].mac.num_slot"),
        (lambda d: d["clock"].update(warp=3), "clock.warp"),
        (lambda d: d.update(channel={"noise": {"model": "fixed", "level": 3}}),
         "channel.noise.level"),
        (lambda d: d["vehicles"][1]["position"].update(altitude=3),
         "vehicles[1].position.altitude"),
    ]:
        data = base_scenario()
        mutate(data)
        error = error_for(tmp_path, data)
        assert error.key_path == key_path, str(error)
        assert "unknown key" in error.problem


def test_wrong_types(tmp_path):
    for mutate, key_path, expected in [
        (lambda d: d["vehicles"][0].update(src="one"), "vehicles[0].src", "an integer"),
        (lambda d: d["vehicles"][0].update(src=True), "vehicles[0].src", "an integer"),
        (lambda d: d["vehicles"][0].update(src=256), "vehicles[0].src", "<= 255"),
        (lambda d: d.update(duration_seconds="long"), "duration_seconds", "a number"),
        (lambda d: d.update(duration_seconds=0), "duration_seconds", "> 0.0"),
        (lambda d: d.update(vehicles={"a": 1}), "vehicles", "a list"),
        (lambda d: d["vehicles"][0].update(mac="tdma"), "vehicles[0].mac", "a mapping"),
        (lambda d: d["vehicles"][0]["position"].update(latitude=91),
         "vehicles[0].position.latitude", "<= 90"),
        (lambda d: d["vehicles"][0]["mac"].update(active_slots=[5]),
         "vehicles[0].mac.active_slots", "slot 5 is outside 0..1"),
        (lambda d: d["vehicles"][0]["mac"].update(packet_length_seconds=14.0),
         "vehicles[0].mac.slot_duration_seconds", "no time to transmit"),
    ]:
        data = base_scenario()
        mutate(data)
        error = error_for(tmp_path, data)
        assert error.key_path == key_path, str(error)
        assert expected in error.problem, str(error)


def test_missing_required_keys(tmp_path):
    data = base_scenario()
    del data["vehicles"][0]["mac"]
    assert error_for(tmp_path, data).key_path == "vehicles[0].mac"
    data = base_scenario()
    del data["vehicles"][1]["position"]
    error = error_for(tmp_path, data)
    assert error.key_path == "vehicles[1].position" and "trajectory" in error.problem


def test_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read scenario file"):
        load_scenario(tmp_path / "absent.yaml")
    error = error_for(tmp_path, "vehicles: [\n  - name: a\n    src: : 1\n")
    assert "not valid YAML at line" in str(error)
    error = error_for(tmp_path, "- just\n- a list\n")
    assert "expected a mapping" in str(error)


def test_duplicate_names_and_bad_names(tmp_path):
    data = base_scenario()
    data["vehicles"][1]["name"] = "a"
    assert "duplicate vehicle name a" in str(error_for(tmp_path, data))
    data = base_scenario()
    data["vehicles"][1]["name"] = "b-2"
    assert error_for(tmp_path, data).key_path == "vehicles[1].name"
    data = base_scenario()
    data["vehicles"][1]["namespace"] = "relative"
    assert error_for(tmp_path, data).key_path == "vehicles[1].namespace"


def test_micromodem_vehicle_requires_wall_clock(tmp_path):
    data = base_scenario()
    data["vehicles"][1]["modem"] = {"kind": "micromodem", "connection": "serial",
                                    "serial_port": "/dev/ttyUSB0"}
    error = error_for(tmp_path, data)
    assert error.key_path == "clock.use_sim_time" and "real time" in error.problem
    del data["clock"]
    scenario = load_scenario(write(tmp_path, data))
    assert not scenario.clock.use_sim_time
    modem = scenario.vehicles[1].modem
    assert modem.connection == {"connection": "serial", "serial_port": "/dev/ttyUSB0",
                                "baud_rate": 19200, "set_modem_time": False}
    data["vehicles"][1]["modem"] = {"kind": "micromodem", "connection": "tcp"}
    error = error_for(tmp_path, data)
    assert error.key_path == "vehicles[1].modem.remote_host"


def test_trajectory_parsing_and_interpolation(tmp_path):
    data = base_scenario()
    del data["vehicles"][0]["position"]
    data["vehicles"][0]["trajectory"] = [
        {"time_seconds": 0, "latitude": 41.0, "longitude": -70.0, "depth": 0},
        {"time_seconds": 100, "latitude": 42.0, "longitude": -71.0, "depth": 100}]
    scenario = load_scenario(write(tmp_path, data))
    trajectory = scenario.vehicles[0].trajectory
    assert trajectory.position_at(50) == Position(41.5, -70.5, 50.0)
    assert trajectory.position_at(-5) == Position(41.0, -70.0, 0.0)
    assert trajectory.position_at(1e6) == Position(42.0, -71.0, 100.0)
    data["vehicles"][0]["trajectory"][1]["time_seconds"] = 0
    error = error_for(tmp_path, data)
    assert error.key_path == "vehicles[0].trajectory[1].time_seconds"
    data["vehicles"][0]["position"] = {"latitude": 1, "longitude": 1, "depth": 1}
    assert "not both" in str(error_for(tmp_path, data))


def test_trajectory_three_legs():
    trajectory = Trajectory((Waypoint(0, Position(0, 0, 0)), Waypoint(10, Position(1, 0, 0)),
                             Waypoint(30, Position(1, 2, 20))))
    assert trajectory.position_at(20) == Position(1, 1, 10)


def test_overlapping_slots_warn(tmp_path):
    data = base_scenario()
    data["vehicles"][1]["mac"]["active_slots"] = "0:1"
    scenario = load_scenario(write(tmp_path, data))
    assert scenario.warnings == ("vehicles a and b share TDMA slots [0]: their transmissions "
                                 "can collide",)


def test_sound_speed_profile_and_channel_checks(tmp_path):
    data = base_scenario()
    data["channel"] = {"sound_speed_profile": {"depths_m": [0, 50, 100],
                                               "sound_speeds_mps": [1500, 1490, 1492]},
                       "transmission_loss": {"model": "bellhop"},
                       "noise": {"model": "wenz", "wind_speed_mps": 10},
                       "absorption": {"model": "francois_garrison", "temperature_c": 4}}
    channel = load_scenario(write(tmp_path, data)).channel
    assert channel.absorption.model == "francois_garrison"
    assert channel.absorption.temperature_c == 4.0 and channel.absorption.ph == 8.0
    assert channel.sound_speed_profile == ((0, 1500), (50, 1490), (100, 1492))
    assert channel.transmission_loss_model == "bellhop"
    assert channel.noise.wind_speed_mps == 10.0
    data["channel"]["sound_speed_profile"]["depths_m"] = [0, 50]
    assert "same length" in str(error_for(tmp_path, data))
    data["channel"] = {"transmission_loss": {"model": "raytrace"}}
    assert error_for(tmp_path, data).key_path == "channel.transmission_loss.model"
    data["channel"] = {"sound_speed_mps": 1500, "sound_speed_profile": {
        "depths_m": [0], "sound_speeds_mps": [1500]}}
    assert "not both" in str(error_for(tmp_path, data))


def test_parameter_overrides(tmp_path):
    data = base_scenario()
    data["vehicles"][0]["parameters"] = {"message_queue_node": {"default_priority": 20}}
    scenario = load_scenario(write(tmp_path, data))
    assert scenario.vehicles[0].parameters == {"message_queue_node": {"default_priority": 20}}
    data["vehicles"][0]["parameters"] = {"queue": {"default_priority": 20}}
    assert error_for(tmp_path, data).key_path == "vehicles[0].parameters.queue"
    data["vehicles"][0]["parameters"] = {"mac": {"x": {"nested": 1}}}
    assert error_for(tmp_path, data).key_path == "vehicles[0].parameters.mac.x"


def test_codec_config_from_package_share(tmp_path):
    share = tmp_path / "share"
    (share / "config").mkdir(parents=True)
    (share / "config" / "c.yaml").write_text(CODECS)
    data = base_scenario()
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = "package://some_pkg/config/c.yaml"
    path = write(tmp_path, data)

    def share_of(package):
        if package != "some_pkg":
            raise LookupError(f"package {package!r} not found")
        return share

    scenario = load_scenario(path, package_share=share_of)
    assert scenario.vehicles[0].codec_config == (share / "config" / "c.yaml").resolve()
    data["vehicles"][1]["codec_config"] = "package://other_pkg/c.yaml"
    path = write(tmp_path, data)
    with pytest.raises(ScenarioError, match=r"vehicles\[1\]\.codec_config: package 'other_pkg'"):
        load_scenario(path, package_share=share_of)


def test_installed_package_share_resolves_demo_codecs():
    """The real ament index finds the installed config (what launch users rely on)."""
    path = resolve_path("package://acomms_bringup/config/demo_codecs.yaml", pathlib.Path("/"))
    assert path.is_file()


def test_error_message_mentions_allowed_keys(tmp_path):
    text = textwrap.dedent("""\
        duration_seconds: 10
        vehicles:
          - name: a
            src: 1
            modem: {kind: sim, colour: red}
            position: {latitude: 1, longitude: 1, depth: 1}
            mac: {kind: tdma}
            codec_config: codecs.yaml
        """)
    error = error_for(tmp_path, text)
    assert error.key_path == "vehicles[0].modem.colour"
    assert "allowed here" in error.problem and "kind" in error.problem
