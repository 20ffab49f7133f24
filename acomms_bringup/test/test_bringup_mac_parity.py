"""Scenario loader vs MAC node: the same MAC values get the same decision and the same reason.

Each row goes through `parse_scenario` (a one-vehicle scenario with the row as its `mac` section)
and through the real node class, constructed with the values as the stack passes them
(`MacKind.ros_values`) as parameter_overrides. Both must accept, or both refuse with the same
reason: the scenario's "vehicles[0].mac.<key>: <problem>" ends with the node's "<key>: <problem>".
Rows include the cases where the loader's old copy of the MAC rules had drifted from the nodes.
"""

import pathlib

import pytest
from rclpy.parameter import Parameter

from acomms_bringup.description.scenario import ScenarioError, parse_scenario
from acomms_bringup.description.stack import NODE_TYPES
from acomms_core.mac.registry import MAC_KINDS
from acomms_core.ros.testing import RosHarness

CODECS = "- codec_name: t\n  packet_codec: ros\n  message_codecs: []\n"
MAC_PATH = "vehicles[0].mac"

ACCEPT, REFUSE = True, False
CASES = [
    # id, kind, mac values, accepted
    ("defaults", "tdma", {}, ACCEPT),
    ("readme_example", "tdma", {"num_slots": 3, "active_slots": [0],
                                "slot_duration_seconds": 20}, ACCEPT),
    ("dash_range", "tdma", {"num_slots": 8, "active_slots": "5-7"}, ACCEPT),
    ("open_start_range", "tdma", {"num_slots": 4, "active_slots": ":2"}, ACCEPT),
    ("wrapping_range", "tdma", {"num_slots": 8, "active_slots": "6:1"}, ACCEPT),
    ("range_with_step", "tdma", {"num_slots": 8, "active_slots": "0:6:2"}, ACCEPT),
    ("list_of_ranges_and_ints", "tdma", {"num_slots": 8, "active_slots": ["1:2", 5]}, ACCEPT),
    ("int_list", "tdma", {"num_slots": 8, "active_slots": [1, 3]}, ACCEPT),
    ("range_string", "tdma", {"num_slots": 8, "active_slots": "0,2,5:7"}, ACCEPT),
    ("slot_not_a_number", "tdma", {"num_slots": 8, "active_slots": "a"}, REFUSE),
    ("slot_outside_cycle", "tdma", {"num_slots": 8, "active_slots": 8}, REFUSE),
    ("slot_is_bool", "tdma", {"num_slots": 8, "active_slots": [True]}, REFUSE),
    ("zero_step", "tdma", {"num_slots": 8, "active_slots": "0:2:0"}, REFUSE),
    ("no_slot", "tdma", {"active_slots": ""}, REFUSE),
    # Rate 2 is a 4.072 s legacy packet (profile rule): with the 5 s guard it does not fit 9 s.
    ("slow_rate_does_not_fit", "tdma", {"slot_duration_seconds": 9, "dataframe_rate": 2},
     REFUSE),
    # Rate 1/5 is a 1.574 + 3.000 = 4.574 s packet: 4.574 + 5 fits 9.9 s.
    ("fast_rate_fits", "tdma", {"slot_duration_seconds": 9.9, "dataframe_rate": 5}, ACCEPT),
    # packet_length_seconds defaults to -1: a full packet at the configured rates, not 5 s.
    ("default_packet_length_fits", "tdma", {"slot_duration_seconds": 9.6}, ACCEPT),
    ("default_packet_length_too_long", "tdma", {"slot_duration_seconds": 9.55}, REFUSE),
    ("explicit_packet_length", "tdma", {"slot_duration_seconds": 9.9,
                                        "packet_length_seconds": 5.0}, REFUSE),
    ("num_slots_wrong_type", "tdma", {"num_slots": "three"}, REFUSE),
    ("num_slots_bool", "tdma", {"num_slots": True}, REFUSE),
    ("num_slots_below_minimum", "tdma", {"num_slots": 0}, REFUSE),
    ("slot_duration_wrong_type", "tdma", {"slot_duration_seconds": "long"}, REFUSE),
    ("negative_guard", "tdma", {"guard_time_seconds": -1.0}, REFUSE),
    ("rate_above_maximum", "tdma", {"dataframe_rate": 9}, REFUSE),
    ("budgets_clipped", "tdma", {"miniframe_rate": 3, "dataframe_rate": 1,
                                 "maximum_dataframe_bytes": 5000}, ACCEPT),
    ("cycle_start_iso", "tdma", {"cycle_start_time": "2024-06-01T12:00:00Z"}, ACCEPT),
    ("cycle_start_seconds", "tdma", {"cycle_start_time": 1700000000}, ACCEPT),
    ("cycle_start_garbage", "tdma", {"cycle_start_time": "yesterday"}, REFUSE),
    ("slot_tags_inline", "tdma", {"num_slots": 2, "active_slots": "0:1",
                                  "slot_tags": "[{slots: 1, require_tags: [nav]}]"}, ACCEPT),
    ("slot_tags_bad_slot", "tdma", {"num_slots": 2, "slot_tags": "[{slots: 7}]"}, REFUSE),
    ("slot_tags_missing_file", "tdma", {"slot_tags": "{tmp}/missing_tags.yaml"}, REFUSE),
    ("test_data_wrong_type", "tdma", {"always_send_test_data": "yes"}, REFUSE),
    ("modem_profile", "tdma", {"modem_profile": "micromodem2"}, ACCEPT),
    ("unknown_modem_profile", "tdma", {"modem_profile": "janus"}, REFUSE),
    # README documents "none" for nav_slots / comms_slots.
    ("nav_slots_none", "tdma_advanced", {"nav_slots": "none"}, ACCEPT),
    ("comms_slots_every_active", "tdma_advanced", {"num_slots": 4, "active_slots": "0:1",
                                                   "nav_slots": 0, "comms_slots": ""}, ACCEPT),
    ("nav_slot_outside_cycle", "tdma_advanced", {"num_slots": 4, "nav_slots": 7}, REFUSE),
    ("ping_does_not_fit", "tdma_advanced", {"pings_per_slot": 1, "slot_duration_seconds": 10.0,
                                            "ping_modem_timeout_sec": 6.0}, REFUSE),
    ("skew_and_mute", "tdma_advanced", {"skew_cycle_sec": 5, "software_mute": True}, ACCEPT),
    ("plan_file_missing", "tdma_scripted",
     {"tdma_scripted_test_plan_file": "{tmp}/missing_plan.yaml"}, REFUSE),
    ("plan_file", "tdma_scripted", {"tdma_scripted_test_plan_file": "{tmp}/plan.yaml"}, ACCEPT),
    ("plan_entry_too_long", "tdma_scripted",
     {"tdma_scripted_test_plan_file": "{tmp}/long_plan.yaml"}, REFUSE),
    # Slotted ALOHA (issue 19): ros_acomms' rules on shared slots.
    ("aloha_shared_slot", "tdma_slotted_aloha", {"num_slots": 4, "active_slots": 0,
                                                 "aloha_slots": "2:3"}, ACCEPT),
    ("aloha_only_refused", "tdma_slotted_aloha", {"num_slots": 4, "active_slots": 2,
                                                  "aloha_slots": "2:3"}, REFUSE),
    ("aloha_only_allowed", "tdma_slotted_aloha", {"num_slots": 4, "active_slots": 2,
                                                  "aloha_slots": "2:3",
                                                  "allow_aloha_slots_only": True}, ACCEPT),
    ("aloha_priority_above_99", "tdma_slotted_aloha", {"aloha_slot_priority": 100}, REFUSE),
    ("aloha_probability_above_1", "tdma_slotted_aloha",
     {"aloha_transmit_probability": 1.5}, REFUSE),
    ("aloha_nav_in_shared_slot_with_pings", "tdma_slotted_aloha",
     {"num_slots": 4, "active_slots": 0, "aloha_slots": 1, "nav_slots": 1, "pings_per_slot": 1,
      "slot_duration_seconds": 20.0}, REFUSE),
    ("polled_list", "polled", {"poll_list": "1:10, 2:10:1"}, ACCEPT),
    ("polled_entry_too_short", "polled", {"poll_list": "1:3"}, REFUSE),
    ("polled_garbage", "polled", {"poll_list": "one:ten"}, REFUSE),
    ("carrier_sense_defaults", "carrier_sense", {}, ACCEPT),
    ("carrier_sense_source", "carrier_sense", {"sense_source": "reception_events",
                                               "backoff_max_seconds": 2}, ACCEPT),
    ("carrier_sense_bad_source", "carrier_sense", {"sense_source": "sonar"}, REFUSE),
    ("carrier_sense_negative_quiet", "carrier_sense", {"sense_quiet_seconds": -1.0}, REFUSE),
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    path = tmp_path_factory.mktemp("mac_parity")
    (path / "codecs.yaml").write_text(CODECS)
    (path / "plan.yaml").write_text("test_cycle:\n  - {dataframe_rate: 1, packet_tx_count: 2}\n")
    (path / "long_plan.yaml").write_text(
        "test_cycle:\n  - {dataframe_rate: 5, packet_duration_sec: 40.0}\n")
    return path


@pytest.fixture(scope="module")
def ros():
    with RosHarness() as harness:
        yield harness


def with_paths(values: dict, workspace: pathlib.Path) -> dict:
    return {key: value.replace("{tmp}", str(workspace)) if isinstance(value, str) else value
            for key, value in values.items()}


def scenario_verdict(kind: str, values: dict, workspace: pathlib.Path) -> str | None:
    """None when the scenario loads, else '<key>: <problem>' (or the problem alone)."""
    data = {"duration_seconds": 60, "vehicles": [{
        "name": "a", "src": 1, "modem": {"kind": "sim"},
        "position": {"latitude": 41.5, "longitude": -70.6, "depth": 10},
        "mac": {"kind": kind, **values}, "codec_config": "codecs.yaml"}]}
    try:
        parse_scenario(data, file="parity.yaml", base_dir=workspace)
    except ScenarioError as error:
        assert str(error).startswith(f"parity.yaml: {MAC_PATH}"), str(error)
        if error.key_path == MAC_PATH:
            return error.problem
        return f"{error.key_path.removeprefix(MAC_PATH + '.')}: {error.problem}"
    return None


def node_verdict(ros, kind: str, values: dict, name: str) -> str | None:
    """None when the node starts with these values, else the ValueError's reason."""
    module_name, class_name = NODE_TYPES[MAC_KINDS[kind].executable][1].split(":")
    node_class = getattr(__import__(module_name, fromlist=[class_name]), class_name)
    overrides = [Parameter(key, value=value) for key, value in {
        **MAC_KINDS[kind].fixed_parameters, **MAC_KINDS[kind].ros_values(values)}.items()]
    try:
        node = node_class(node_name=name, namespace="/parity", context=ros.context,
                          parameter_overrides=overrides)
    except ValueError as exc:
        return str(exc)
    node.destroy_node()
    return None


@pytest.mark.parametrize("case_id, kind, values, accepted", CASES, ids=[c[0] for c in CASES])
def test_scenario_and_node_agree(ros, workspace, case_id, kind, values, accepted):
    values = with_paths(values, workspace)
    from_scenario = scenario_verdict(kind, values, workspace)
    from_node = node_verdict(ros, kind, values, f"parity_{case_id}")
    assert (from_scenario is None, from_node is None) == (accepted, accepted), (
        f"scenario: {from_scenario!r}, node: {from_node!r}")
    assert from_scenario == from_node


def test_table_is_big_enough_and_covers_every_kind():
    assert len(CASES) >= 30
    assert {kind for _, kind, _, _ in CASES} == set(MAC_KINDS)
