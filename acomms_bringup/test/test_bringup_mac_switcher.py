"""mac_switcher in scenarios (issue 19): the loader checks it with the node's own specs and
validator, the stack starts every managed MAC muted in its sub-namespace (the vehicle's
interfaces remapped to it) and the switcher after them, and a run sends only through the
default MAC until another is selected."""

import csv
import json
import pathlib

import pytest
import yaml

from acomms_bringup.description.scenario import ScenarioError, parse_scenario
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.run import cli
from acomms_core.mac.registry import MAC_VEHICLE_INTERFACES

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def _scenario_data(switcher: dict | None = None, mac: dict | None = None) -> dict:
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    alpha = data["vehicles"][0]
    alpha["mac"] = mac or {"kind": "tdma_advanced", "num_slots": 2, "slot_duration_seconds": 15.0,
                           "active_slots": 0, "guard_time_seconds": 2.0,
                           "packet_length_seconds": 5.0}
    alpha["mac_switcher"] = switcher if switcher is not None else {
        "managed_mac_heartbeat_timeout_sec": 30,
        "macs": {"aloha": {"kind": "tdma_slotted_aloha", "num_slots": 2,
                           "slot_duration_seconds": 15.0, "active_slots": 1,
                           "aloha_slots": 1, "allow_aloha_slots_only": True,
                           "guard_time_seconds": 2.0,
                           "packet_length_seconds": 5.0}}}
    return data


def _parse(data):
    return parse_scenario(data, file="s.yaml", base_dir=CONFIG)


def test_stack_starts_managed_macs_muted_in_sub_namespaces_then_the_switcher():
    group = describe_stack(_parse(_scenario_data())).group("alpha")
    names = [n.fully_qualified_name for n in group.nodes]
    assert names[-3:] == ["/alpha/tdma/tdma_advanced_node", "/alpha/aloha/tdma_slotted_aloha_node",
                          "/alpha/mac_switcher_node"]
    for node in group.nodes[-3:-1]:
        assert node.parameters["software_mute"] is True
        assert dict(node.remappings) == {n: f"/alpha/{n}" for n in MAC_VEHICLE_INTERFACES}
    switcher = group.nodes[-1]
    assert switcher.parameters["managed_mac_namespaces"] == ["aloha"]
    assert switcher.parameters["managed_mac_heartbeat_timeout_sec"] == 30.0  # as ROS carries it


@pytest.mark.parametrize("switcher, mac, where, reason", [
    ({"macs": {"aloha": {"kind": "tdma_advanced"}}, "managed_mac_heartbeat_timeout_sec": 0},
     None, "mac_switcher.managed_mac_heartbeat_timeout_sec", "-1 (off) or > 0"),
    ({"macs": {"aloha": {"kind": "tdma_advanced"}}, "bogus": 1}, None, "mac_switcher.bogus",
     "unknown key"),
    ({"macs": {"tdma": {"kind": "tdma_advanced"}}}, None, "mac_switcher.macs.tdma",
     "the default MAC is the vehicle's `mac`"),
    ({"macs": {"aloha": {"kind": "tdma"}}}, None, "mac_switcher.macs.aloha",
     "no software_mute"),
    ({"macs": {"aloha": {"kind": "tdma_advanced"}}}, {"kind": "tdma"}, "mac.kind",
     "no software_mute"),
    ({"macs": {"aloha": {"kind": "tdma_advanced", "num_slots": 0}}}, None,
     "mac_switcher.macs.aloha.num_slots", ""),
    ({"managed_mac_heartbeat_timeout_sec": 5}, None, "mac_switcher.macs", "missing"),
])
def test_bad_switcher_sections_are_refused_with_the_key(switcher, mac, where, reason):
    with pytest.raises(ScenarioError) as info:
        _parse(_scenario_data(switcher, mac))
    message = str(info.value)
    assert f"vehicles[0].{where}" in message and reason in message, message


def test_run_sends_through_the_default_mac_only(tmp_path):
    data = _scenario_data()
    data["vehicles"][0]["traffic"] = [{"topic": "to_acomms/command", "period_seconds": 10.0,
                                       "fields": {"data": "cmd {seq}"}}]
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(CONFIG / vehicle["codec_config"])
    path = tmp_path / "switcher.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    assert cli.main([str(path), "--duration", "35", "--warp", "max", "--quiet",
                     "--out", str(out)]) == 0
    with open(out / "timeline.csv", newline="") as stream:
        starts = [float(r["start_s"]) for r in csv.DictReader(stream)
                  if r["kind"] == "tx" and r["src"] == "1"]
    # alpha's default MAC (tdma_advanced, slot 0 of 30 s) sends; the muted aloha MAC (slot 1)
    # never does
    assert starts and all(s % 30.0 < 15.0 for s in starts), starts
    assert json.loads((out / "summary.json").read_text())["messages_delivered"] > 0
