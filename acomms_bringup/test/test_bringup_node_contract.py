"""Contract between the stack description and the real node classes.

For every node a scenario describes, construct the real class (in-process, private Context) with
the described parameters and check that it declares every one of them: a parameter the node does
not declare would be silently ignored by ROS, so a renamed parameter must fail here. (Nodes that
declare parameters in on_configure are configured first.) Nodes whose package is not built on
this branch yet are skipped, by name.
"""

import importlib
import pathlib

import pytest

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.description.stack import describe_stack
from acomms_core.mac.registry import MAC_KINDS
from acomms_core.ros.testing import RosHarness

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def described_nodes():
    nodes = {}
    for scenario_file in ("demo.yaml", "two_vehicles.yaml", "micromodem_pair.yaml",
                          "wec_buoy_demo.yaml"):
        for node in describe_stack(load_scenario(CONFIG / scenario_file)).all_nodes():
            nodes.setdefault(node.executable, node)
    return sorted(nodes.values(), key=lambda n: n.executable)


@pytest.mark.parametrize("description", described_nodes(), ids=lambda n: n.executable)
def test_node_declares_every_described_parameter(description):
    try:
        node_class = description.load_class()
    except (ImportError, AttributeError) as exc:
        pytest.skip(f"{description.plugin} not available on this branch: {exc}")
    from rclpy.parameter import Parameter

    with RosHarness() as ros:
        overrides = [Parameter(name, value=value)
                     for name, value in description.parameters.items()]
        node = ros.add(node_class(node_name=description.name, namespace="/contract",
                                  context=ros.context, parameter_overrides=overrides))
        undeclared = [name for name in description.parameters if not node.has_parameter(name)]
        if undeclared and description.lifecycle:
            node.trigger_configure()  # some nodes declare (part of) their parameters there
            undeclared = [name for name in description.parameters
                          if not node.has_parameter(name)]
        assert not undeclared, f"{description.executable} does not declare {undeclared}"
        for name, value in description.parameters.items():
            actual = node.get_parameter(name).value
            assert actual == value or list(actual) == value, (name, actual, value)


@pytest.mark.parametrize("kind", sorted(MAC_KINDS))
def test_every_scenario_mac_parameter_is_declared_by_its_node(kind):
    """Every MAC key a scenario file accepts must be a parameter of that MAC node."""
    from rclpy.parameter import Parameter

    from acomms_bringup.description.stack import MAC_EXECUTABLES, NODE_TYPES

    module_name, class_name = NODE_TYPES[MAC_EXECUTABLES[kind]][1].split(":")
    node_class = getattr(importlib.import_module(module_name), class_name)
    with RosHarness() as ros:
        fixed = [Parameter(name, value=value)
                 for name, value in MAC_KINDS[kind].fixed_parameters.items()]
        node = ros.add(node_class(context=ros.context, namespace="/contract",
                                  parameter_overrides=fixed))
        undeclared = sorted(spec.name for spec in MAC_KINDS[kind].parameters
                            if not node.has_parameter(spec.name))
    assert not undeclared, f"scenario accepts {kind} keys the node does not declare: {undeclared}"
