"""A vehicle's `relay:` section (issue 32) becomes message_queue_node's relay_* parameters,
checked by the node's own ParameterSpecs; explicit `parameters.message_queue_node` win."""

import pytest
from test_bringup_scenario import base_scenario, error_for, write

from acomms_bringup.description.scenario import load_scenario


def _with_relay(relay, overrides=None):
    data = base_scenario()
    data["vehicles"][1]["relay"] = relay
    if overrides:
        data["vehicles"][1]["parameters"] = {"message_queue_node": overrides}
    return data


def test_relay_section_sets_the_queue_node_parameters(tmp_path):
    scenario = load_scenario(write(tmp_path, _with_relay(
        {"routes": {1: 1, 4: 1}, "priority": 60}, {"relay_max_hops": 2})))
    params = scenario.vehicles[1].parameters["message_queue_node"]
    assert params == {"relay_enabled": True, "relay_routes": ["1:1", "4:1"],
                      "relay_priority": 60, "relay_max_hops": 2}
    assert "message_queue_node" not in scenario.vehicles[0].parameters


@pytest.mark.parametrize("relay, key, reason", [
    ({"priority": 5}, "routes", "required"),
    ({"routes": {1: "x"}}, "routes", "must be integers"),
    ({"routes": {1: 1}, "priorty": 5}, "priorty", "unknown relay key"),
    ({"routes": {1: 1}, "max_hops": 16}, "max_hops", "15"),
])
def test_bad_relay_sections_name_the_key(tmp_path, relay, key, reason):
    error = error_for(tmp_path, _with_relay(relay))
    assert error.key_path == f"vehicles[1].relay.{key}"
    assert reason in str(error) and "\n" not in str(error)
