"""Journey: check scenarios before running them (README "Bringup: scenarios ...").

`python -m acomms_bringup.description.stack FILE` (console script `acomms_check_scenario`) on
every shipped scenario exits 0 and lists the nodes it starts; a bad file exits 1 with one line
naming the file and the key, as the README shows for a duplicate SRC.
"""

from __future__ import annotations

import pathlib
import re

import yaml
from journey_support import ROOT, documented, shell

CONFIG = ROOT / "acomms_bringup" / "config"
# every scenario shipped in acomms_bringup/config/ (the rest are codec configs and params files)
SCENARIOS = ("demo.yaml", "two_vehicles.yaml", "micromodem_pair.yaml", "external_positions.yaml",
             "wec_buoy_demo.yaml", "cola2_compact.yaml", "file_transfer.yaml",
             "mac_switch_event.yaml", "ros_acomms_tdma_scenario.yaml", "relay_line.yaml",
             "cola2_usbl.yaml")
# Its ros_acomms TDMA parameter file is used as given: a warning per ros_acomms name in it.
NOTED = "acomms_bringup/config/ros_acomms_tdma_scenario.yaml: warning: "


def test_demo_scenario_lists_its_nodes_in_start_order():
    result = shell(documented(
        "python -m acomms_bringup.description.stack acomms_bringup/config/demo.yaml"),
        timeout_s=60, check=True)
    out = result.stdout
    assert "scenario 'demo', 3 vehicles, 600 s, warp 10" in out, out
    names = re.findall(r"^  (/\S+)  \(", out, re.M)
    expected = ["/platform_location_node", "/sim_transmission_loss_node",
                "/sim_packet_performance_node"]
    for vehicle in ("auv", "gateway", "topside"):
        expected += [f"/{vehicle}/trajectory_node"] * (vehicle == "auv")
        expected += [f"/{vehicle}/modem_sim_node", f"/{vehicle}/message_queue_node",
                     f"/{vehicle}/packet_dispatch_node", f"/{vehicle}/tdma_node"]
    expected.append("/sim_clock_node")
    # the README's start-up order (other nodes, e.g. file transfer, may sit between them)
    assert [n for n in names if n in expected] == expected, names
    groups = re.findall(r"^\[(\S+)\] managed by (\S+lifecycle_manager)$", out, re.M)
    assert len(groups) >= 5 and len({m for _, m in groups}) == len(groups), groups  # one each
    assert result.stderr.strip() == "", result.stderr


def test_every_shipped_scenario_is_accepted():
    """micromodem_pair.yaml needs real modems to run; the check still accepts it."""
    documented("acomms_check_scenario")
    loaded = {p.name: yaml.safe_load(p.read_text()) for p in CONFIG.glob("*.yaml")}
    shipped = {name for name, data in loaded.items()
               if isinstance(data, dict) and "vehicles" in data}
    assert shipped == set(SCENARIOS), "a new scenario in acomms_bringup/config/: add it here"
    paths = " ".join(f"acomms_bringup/config/{name}" for name in SCENARIOS)
    result = shell(f"acomms_check_scenario {paths}", timeout_s=60)   # several files at once
    warnings = result.stderr.splitlines()
    assert result.returncode == 0 and len(warnings) == 2, result
    assert all(line.startswith(NOTED) and "ros_acomms" in line for line in warnings), warnings
    listings = re.split(r"^(?=acomms_bringup/config/)", result.stdout, flags=re.M)[1:]
    assert [listing.split(":", 1)[0] for listing in listings] == paths.split()
    for name, listing in zip(SCENARIOS, listings, strict=True):
        assert f"scenario '{name[:-5]}'" in listing.splitlines()[0], listing[:300]
    pair = listings[SCENARIOS.index("micromodem_pair.yaml")]
    assert "/ship/acomms_driver_node" in pair and "/auv/acomms_driver_node" in pair, pair
    assert "modem_sim_node" not in pair and "sim_clock_node" not in pair, pair
    usbl = listings[SCENARIOS.index("cola2_usbl.yaml")]   # EvoLogics emulators: no simulator
    assert "/ship/evologics_driver_node" in usbl and "/auv/evologics_driver_node" in usbl, usbl
    assert "modem_sim_node" not in usbl and "sim_clock_node" not in usbl, usbl


def _two_vehicles(tmp_path: pathlib.Path, edit) -> None:
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(CONFIG / "demo_codecs.yaml")
    edit(data)
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(data))


def test_duplicate_src_stops_with_file_and_key(tmp_path):
    command = documented("python -m acomms_bringup.description.stack my.yaml")

    def duplicate(data):
        data["vehicles"][0]["src"] = data["vehicles"][1]["src"] = 3
    _two_vehicles(tmp_path, duplicate)
    result = shell(command, timeout_s=60, cwd=tmp_path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [documented("my.yaml: vehicles[1].src: duplicate SRC 3 (also vehicles[0])")]


def test_misspelt_node_parameter_lists_the_valid_names(tmp_path):
    documented("`source_levle_db` stops with the list of valid names")

    def misspell(data):
        data["vehicles"][0]["parameters"] = {"modem": {"source_levle_db": 180.0}}
    _two_vehicles(tmp_path, misspell)
    result = shell("acomms_check_scenario my.yaml", timeout_s=60, cwd=tmp_path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("my.yaml: vehicles[0].parameters.modem"), lines[0]
    assert "source_levle_db" in lines[0] and "source_level_db" in lines[0], lines[0]
