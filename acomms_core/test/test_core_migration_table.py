"""docs/MIGRATING_FROM_ROS_ACOMMS.md: every counterpart the migration table names exists.

- a node section's `acomms:` executable is a console script of one of the packages;
- `param` rows: the node declares that parameter (constructed in-process, as ROS sees it);
- `pub`/`sub`/`srv`/`cli` rows: the topic or service name appears as a name string in the
  node's package sources;
- `msg`/`srv-type` rows: the .msg/.srv file exists in acomms_interfaces;
- a `—` row (not supported) has a note saying why.
The table is rendered by acomms_core.ros_acomms_names.markdown(); the doc's marked block must
equal it, so a supported feature cannot be listed as unsupported in one place only.
"""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest

from acomms_core import ros_acomms_names
from acomms_core.ros.testing import RosHarness

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "MIGRATING_FROM_ROS_ACOMMS.md"
KINDS = ("param", "pub", "sub", "srv", "cli", "msg", "srv-type")
# Node classes of the executables the table names (module:Class).
NODE_CLASSES = {
    "message_queue_node": "acomms_core.nodes.message_queue_node:MessageQueueNode",
    "packet_dispatch_node": "acomms_core.nodes.packet_dispatch_node:PacketDispatchNode",
    "tdma_node": "acomms_core.nodes.tdma_node:TdmaNode",
    "tdma_advanced_node": "acomms_core.nodes.tdma_advanced_node:TdmaAdvancedNode",
    "tdma_scripted_node": "acomms_core.nodes.tdma_scripted_node:TdmaScriptedNode",
    "tdma_slotted_aloha_node": "acomms_core.nodes.tdma_slotted_aloha_node:TdmaSlottedAlohaNode",
    "mac_switcher_node": "acomms_core.nodes.mac_switcher_node:MacSwitcherNode",
    "acomms_driver_node": "acomms_driver.nodes.acomms_driver_node:AcommsDriverNode",
    "modem_sensor_data_node": "acomms_driver.nodes.modem_sensor_data_node:ModemSensorDataNode",
    "modem_sim_node": "acomms_sim.nodes.modem_sim_node:ModemSimNode",
    "sim_transmission_loss_node":
        "acomms_sim.nodes.sim_transmission_loss_node:SimTransmissionLossNode",
    "sim_packet_performance_node":
        "acomms_sim.nodes.sim_packet_performance_node:SimPacketPerformanceNode",
    "sim_clock_node": "acomms_sim.nodes.sim_clock_node:SimClockNode",
    "simple_noise_model_node": "acomms_sim.nodes.simple_noise_model_node:SimpleNoiseModelNode",
}
BEGIN = "<!-- BEGIN ros_acomms_names.markdown() -->\n"
END = "<!-- END ros_acomms_names.markdown() -->\n"
_ROW = re.compile(r"^\|\s*([a-z-]+)\s*\|\s*`([^`]+)`\s*\|\s*(?:`([^`]+)`|—)\s*\|(.*)\|\s*$")


def parse_table(text: str) -> list[dict]:
    """[{node, executable, kind, theirs, ours (None: —), note}] of every table row."""
    rows, node, executable = [], None, None
    for line in text.splitlines():
        if line.startswith("### "):
            node, executable = line[4:].strip(), None
        elif line.startswith("## Interfaces"):
            node, executable = "interfaces", None
        elif line.startswith("acomms: "):
            executable = None if line.strip() == "acomms: none" else line.split("`")[1]
        elif line.startswith("| ") and not line.startswith(("| kind", "|---")):
            match = _ROW.match(line)
            assert match, f"malformed row: {line}"
            kind, theirs, ours, note = match.groups()
            assert kind in KINDS, line
            rows.append({"node": node, "executable": executable, "kind": kind,
                         "theirs": theirs, "ours": ours, "note": note.strip()})
    return rows


def doc_block(text: str) -> str:
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "migration table markers"
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)]


ROWS = parse_table(ros_acomms_names.markdown())
CHECKED = [r for r in ROWS if r["ours"]]


def test_doc_block_is_the_rendered_table():
    assert doc_block(DOC.read_text()) == ros_acomms_names.markdown()


def test_features_that_exist_are_not_listed_as_unsupported():
    unsupported = {(r["node"], r["theirs"]) for r in ROWS if r["ours"] is None}
    for supported in [("message_queue_node", "<dynamic_queue_service>"),
                      ("acomms_driver_node", "use_janus_packets"),
                      ("tdma_node (tdma_mac)", "maxlen_manual_queue"),
                      ("tdma_node (tdma_mac)", "tdma/nmea_to_modem"),
                      ("simple_noise_model_node", "mean_noise_db"),
                      ("interfaces", "GetNextQueuedMessage")]:
        assert supported not in unsupported, supported
    assert "pending issue" not in DOC.read_text()


def console_scripts() -> set[str]:
    names = set()
    for setup in ROOT.glob("acomms_*/setup.py"):
        names |= set(re.findall(r'"([a-z_]+) = [a-z_.]+:[a-z_]+"', setup.read_text()))
    return names


def test_table_is_parsed_and_unsupported_rows_say_why():
    assert len(ROWS) > 150 and len(CHECKED) > 100
    nodes = {r["node"] for r in ROWS}
    assert {"message_queue_node", "packet_dispatch_node", "acomms_driver_node",
            "modem_sim_node (ros_acomms_modeling)", "interfaces"} <= nodes
    for row in ROWS:
        if row["ours"] is None:
            assert row["note"], f"unsupported without a reason: {row}"
        if row["kind"] not in ("msg", "srv-type") and row["ours"]:
            assert row["executable"], f"{row['node']}: counterpart without an acomms node"


def test_every_named_node_is_an_executable():
    scripts = console_scripts()
    named = {r["executable"] for r in ROWS if r["executable"]}
    assert named and named <= scripts, sorted(named - scripts)
    assert named <= set(NODE_CLASSES), sorted(named - set(NODE_CLASSES))


def test_interfaces_exist():
    interfaces = ROOT / "acomms_interfaces"
    for row in CHECKED:
        if row["kind"] in ("msg", "srv-type"):
            folder = "msg" if row["kind"] == "msg" else "srv"
            assert (interfaces / folder / f"{row['ours']}.{folder}").is_file(), row


def test_topics_and_services_appear_in_their_node_package():
    sources: dict[str, str] = {}
    for row in CHECKED:
        if row["kind"] not in ("pub", "sub", "srv", "cli"):
            continue
        package = NODE_CLASSES[row["executable"]].split(".")[0]
        if package not in sources:
            sources[package] = "\n".join(p.read_text() for p in
                                         (ROOT / package / package).rglob("*.py"))
        name = row["ours"].rsplit("/", 1)[-1]
        assert re.search(rf'["/]{re.escape(name)}"', sources[package]), row


def test_parameters_are_declared_by_their_node():
    by_node: dict[str, set[str]] = {}
    for row in CHECKED:
        if row["kind"] == "param":
            by_node.setdefault(row["executable"], set()).add(row["ours"])
    assert len(by_node) >= 10
    with RosHarness() as ros:
        for executable, names in sorted(by_node.items()):
            module_name, _, class_name = NODE_CLASSES[executable].partition(":")
            node_class = getattr(importlib.import_module(module_name), class_name)
            node = ros.add(node_class(context=ros.context, namespace="/migration"))
            missing = sorted(n for n in names if not node.has_parameter(n))
            assert not missing, f"{executable} does not declare {missing}"


@pytest.mark.parametrize("text, problem", [
    ("### x\nacomms: `y`\n| kind | a | b | c |\n|---|\n| param | a | `b` | |\n", "malformed"),
])
def test_malformed_rows_are_refused(text, problem):
    with pytest.raises(AssertionError, match=problem):
        parse_table(text)
