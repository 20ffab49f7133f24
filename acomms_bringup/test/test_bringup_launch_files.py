"""The launch files compile and build exactly the stack description, as launch_ros actions.

launch/launch_ros are not installable here, so small stand-ins record what the launch files ask
for; the check is that every action comes from `acomms_bringup.description.stack` unchanged.
"""

import importlib.util
import pathlib
import py_compile
import sys
import types

import pytest

from acomms_bringup.description.launch_actions import for_launch
from acomms_bringup.description.scenario import ScenarioError, load_scenario
from acomms_bringup.description.stack import describe_stack, describe_vehicle
from acomms_bringup.description.vehicle_params import (
    ParamsFileError,
    describe_params_vehicle,
    read_params_file,
)

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
LAUNCH = PACKAGE / "launch"
CONFIG = PACKAGE / "config"


class Recorded:
    """Stand-in for a launch action: remembers its constructor arguments."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class LaunchConfiguration(Recorded):
    def perform(self, context):
        return context.launch_configurations[self.args[0]]


def stub_modules():
    kinds = {}
    for name in ("LaunchDescription", "DeclareLaunchArgument", "OpaqueFunction", "Node",
                 "LifecycleNode", "GroupAction", "PushRosNamespace"):
        kinds[name] = type(name, (Recorded,), {})
    modules = {
        "launch": types.SimpleNamespace(LaunchDescription=kinds["LaunchDescription"]),
        "launch.actions": types.SimpleNamespace(
            DeclareLaunchArgument=kinds["DeclareLaunchArgument"],
            OpaqueFunction=kinds["OpaqueFunction"], GroupAction=kinds["GroupAction"]),
        "launch.substitutions": types.SimpleNamespace(LaunchConfiguration=LaunchConfiguration),
        "launch_ros": types.SimpleNamespace(),
        "launch_ros.actions": types.SimpleNamespace(Node=kinds["Node"],
                                                    LifecycleNode=kinds["LifecycleNode"],
                                                    PushRosNamespace=kinds["PushRosNamespace"]),
    }
    return modules, kinds


@pytest.fixture
def launch_stubs(monkeypatch):
    modules, kinds = stub_modules()
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return kinds


def run_launch_file(name, **arguments):
    spec = importlib.util.spec_from_file_location(name.replace(".", "_"), LAUNCH / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    entities = description.args[0]
    declared = {e.args[0]: e.kwargs for e in entities
                if type(e).__name__ == "DeclareLaunchArgument"}
    grouped = [e for g in entities if type(g).__name__ == "GroupAction" for e in g.args[0]]
    (opaque,) = [e for e in (*entities, *grouped) if type(e).__name__ == "OpaqueFunction"]
    context = types.SimpleNamespace(launch_configurations={
        key: value["default_value"] for key, value in declared.items() if "default_value" in value
    } | arguments)
    return declared, opaque.kwargs["function"](context)


def expected_arguments(node, log_level="info"):
    return dict(package=node.package, executable=node.executable, name=node.name,
                namespace=node.namespace, parameters=[dict(node.parameters)],
                remappings=list(node.remappings), output="screen",
                ros_arguments=["--log-level", log_level])


def assert_actions_match(actions, nodes, log_level="info"):
    assert len(actions) == len(nodes)
    for action, node in zip(actions, nodes, strict=True):
        assert type(action).__name__ == ("LifecycleNode" if node.lifecycle else "Node")
        assert action.kwargs == expected_arguments(node, log_level), node.fully_qualified_name


@pytest.mark.parametrize("name", ["vehicle.launch.py", "sim_network.launch.py"])
def test_launch_files_compile(name, tmp_path):
    py_compile.compile(str(LAUNCH / name), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_sim_network_launch_builds_the_stack_description(launch_stubs):
    scenario_file = str(CONFIG / "two_vehicles.yaml")
    declared, actions = run_launch_file("sim_network.launch.py", scenario=scenario_file)
    assert declared["scenario"]["default_value"] == "package://acomms_bringup/config/demo.yaml"
    stack = for_launch(describe_stack(load_scenario(scenario_file)))
    assert_actions_match(actions, stack.all_nodes())
    managers = [a for a in actions if type(a).__name__ == "Node"]
    assert [m.kwargs["executable"] for m in managers] == ["lifecycle_manager"] * 4
    # stages: the vehicles wait for the simulation, the clock for every other group
    waits = [m.kwargs["parameters"][0].get("wait_for_managers") for m in managers]
    assert waits == [None, ["/simulation_lifecycle_manager"],
                     ["/simulation_lifecycle_manager"],
                     ["/simulation_lifecycle_manager", "/alpha/lifecycle_manager",
                      "/bravo/lifecycle_manager"]]
    modem = next(a for a in actions if a.kwargs["executable"] == "modem_sim_node")
    assert modem.kwargs["namespace"] == "/alpha" and modem.kwargs["parameters"][0]["SRC"] == 1


def test_sim_network_default_scenario_is_the_installed_demo(launch_stubs):
    _, actions = run_launch_file("sim_network.launch.py", log_level="WARN", autostart="false")
    stack = for_launch(describe_stack(load_scenario(CONFIG / "demo.yaml")), autostart=False)
    assert_actions_match(actions, stack.all_nodes(), log_level="warn")
    assert all(m.kwargs["parameters"][0]["autostart"] is False for m in actions
               if type(m).__name__ == "Node")


def test_vehicle_launch_builds_one_vehicle(launch_stubs):
    scenario_file = str(CONFIG / "demo.yaml")
    declared, actions = run_launch_file("vehicle.launch.py", scenario=scenario_file,
                                        vehicle="auv")
    group = describe_vehicle(load_scenario(scenario_file), "auv")
    assert_actions_match(actions, [*group.nodes, group.manager])
    modem = actions[1]
    assert ("read_location", "/read_location") in modem.kwargs["remappings"]
    assert actions[-1].kwargs["parameters"][0]["node_names"][0] == "/auv/trajectory_node"


def test_vehicle_launch_with_unknown_vehicle_or_bad_scenario(launch_stubs, tmp_path):
    with pytest.raises(KeyError, match="no vehicle named 'nemo'"):
        run_launch_file("vehicle.launch.py", scenario=str(CONFIG / "demo.yaml"), vehicle="nemo")
    bad = tmp_path / "bad.yaml"
    bad.write_text("duration_seconds: 1\nvehicles: []\n")
    with pytest.raises(ScenarioError, match="bad.yaml: vehicles: needs at least one vehicle"):
        run_launch_file("sim_network.launch.py", scenario=str(bad))


def test_launch_files_use_only_the_description_api():
    """Thin by construction: no node names, executables or parameters spelled in the files."""
    for path in LAUNCH.glob("*.launch.py"):
        text = path.read_text()
        code = text.split('"""', 2)[2]  # after the module docstring
        for word in ("_node", "executable=", "parameters=", "remappings="):
            assert word not in code, (path.name, word)
        assert "acomms_bringup.description.stack import describe_" in code


def test_vehicle_launch_from_a_params_file_in_a_pushed_namespace(launch_stubs):
    """No scenario: the example params file; the namespace argument is pushed (relative), the
    nodes and their manager use relative names, use_sim_time and log_level reach every node."""
    declared, actions = run_launch_file("vehicle.launch.py", ros_namespace="/fleet/alpha",
                                        use_sim_time="true", log_level="debug")
    assert declared["params_file"]["default_value"] == (
        "package://acomms_bringup/config/vehicle_params.yaml")
    assert declared["namespace"]["default_value"] == ""
    group = describe_params_vehicle(read_params_file(CONFIG / "vehicle_params.yaml"),
                                    "/fleet/alpha", use_sim_time=True,
                                    base_dir=CONFIG)
    assert_actions_match(actions, [*group.nodes, group.manager], log_level="debug")
    assert [a.kwargs["name"] for a in actions] == [
        "modem_sim_node", "message_queue_node", "packet_dispatch_node", "tdma_node",
        "lifecycle_manager"]
    assert {a.kwargs["namespace"] for a in actions} == {""}  # relative: pushed by the group
    assert actions[-1].kwargs["parameters"][0]["node_names"] == [
        "modem_sim_node", "message_queue_node", "packet_dispatch_node", "tdma_node"]
    assert all(a.kwargs["parameters"][0]["use_sim_time"] is True for a in actions)
    queue = actions[1].kwargs["parameters"][0]
    assert queue["codec_config_file"].endswith("acomms_bringup/config/demo_codecs.yaml")
    assert not queue["codec_config_file"].startswith("package://")


def test_vehicle_launch_refuses_bad_arguments(launch_stubs, tmp_path):
    with pytest.raises(ValueError, match="log_level:='loud'"):
        run_launch_file("vehicle.launch.py", log_level="loud")
    with pytest.raises(ParamsFileError, match="use_sim_time:='maybe'"):
        run_launch_file("vehicle.launch.py", use_sim_time="maybe")
    with pytest.raises(ParamsFileError, match="cannot read"):
        run_launch_file("vehicle.launch.py", params_file=str(tmp_path / "absent.yaml"))
