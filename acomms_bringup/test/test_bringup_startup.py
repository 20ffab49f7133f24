"""The embedded runner's start-up (`acomms_bringup.run.startup`): stages, in-process managers.

The real two-vehicle stack is brought up by `Startup` on a SingleThreadedExecutor that the test
thread drives (`spin_executor_until`): stages in order, the groups of a stage together, every
node active; the managers drive their nodes in-process (no service clients), and every node
still serves its lifecycle and parameter services, the managers their Trigger services. A group
that fails is named with its node and reason, the rest of its stage settles, later stages are
never created.
"""

import pathlib

import pytest
import rclpy
import yaml
from lifecycle_msgs.srv import GetState
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from std_srvs.srv import Trigger

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.run.startup import (
    GroupFailed,
    Startup,
    StartupError,
    poll_until,
    spin_executor_until,
)
from acomms_core.ros.ros_support import lifecycle_state_label

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
LIFECYCLE_SERVICES = ("change_state", "get_state", "get_available_states",
                      "get_available_transitions", "get_transition_graph")
PARAMETER_SERVICES = ("describe_parameters", "get_parameters", "get_parameter_types",
                      "list_parameters", "set_parameters", "set_parameters_atomically")


@pytest.fixture
def ros():
    context = Context()
    rclpy.init(context=context)
    executor = SingleThreadedExecutor(context=context)
    startup = Startup(context, executor, spin_executor_until(executor), group_timeout_s=60.0)
    yield startup
    for node in startup.nodes.values():
        executor.remove_node(node)
        node.destroy_node()
    executor.shutdown(timeout_sec=2.0)
    rclpy.shutdown(context=context)


def scenario_file(tmp_path, edit=None):
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(CONFIG / "demo_codecs.yaml")
    if edit:
        edit(data)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def call(startup, srv_type, name, request):
    helper = startup.nodes.setdefault("/startup_test_helper", rclpy.create_node(
        "startup_test_helper", context=startup.context))
    startup.executor.add_node(helper)
    client = helper.create_client(srv_type, name)
    assert startup.spin_until(client.service_is_ready, 10.0), name
    future = client.call_async(request)
    assert startup.spin_until(future.done, 10.0), name
    return future.result()


def test_stages_in_order_groups_of_a_stage_together(tmp_path):
    stack = describe_stack(scenario_file(tmp_path))
    assert [[g.name for g in stage] for stage in stack.stages()] == [
        ["simulation"], ["alpha", "bravo"], ["clock"]]


def test_stack_comes_up_in_process_with_every_interface_kept(ros, tmp_path):
    stack = describe_stack(scenario_file(tmp_path))
    ros.run(stack)
    managed = [d.fully_qualified_name for g in stack.groups for d in g.nodes]
    assert all(lifecycle_state_label(ros.nodes[name]) == "active" for name in managed)
    assert [group.name for group, _ in ros.managers] == [g.name for g in stack.groups]
    for _group, manager in ros.managers:
        assert manager.manager_state == "active"
        assert list(manager.clients) == []  # in-process: no service round trips
    assert ros.phases["create_s"] > 0 and ros.phases["activate_s"] > 0
    for name in managed:  # what `ros2 lifecycle` and `ros2 param` use is still there
        node = ros.nodes[name]
        served = {tuple(s.srv_name.split("/")[-2:]) for s in node.services}
        for service in LIFECYCLE_SERVICES + PARAMETER_SERVICES:
            assert (node.get_name(), service) in served, (name, service)
    state = call(ros, GetState, "/alpha/tdma_node/get_state", GetState.Request())
    assert state.current_state.label == "active"
    status = call(ros, Trigger, "/bravo/lifecycle_manager/status", Trigger.Request())
    assert status.success and "/bravo/tdma_node: active" in status.message
    down = call(ros, Trigger, "/bravo/lifecycle_manager/shutdown", Trigger.Request())
    assert down.success, down.message
    assert lifecycle_state_label(ros.nodes["/bravo/tdma_node"]) == "unconfigured"


def test_a_failed_group_is_named_and_later_stages_never_start(ros, tmp_path):
    stack = describe_stack(scenario_file(tmp_path, lambda d: d["vehicles"][1].update(
        parameters={"message_queue_node": {"codec_config_file": str(tmp_path / "gone.yaml")}})))
    with pytest.raises(GroupFailed) as info:
        ros.run(stack)
    assert info.value.group.name == "bravo"
    assert str(info.value).startswith(
        "group bravo: startup failed: /bravo/message_queue_node: configure failed")
    assert "rolled back /bravo/modem_sim_node" in str(info.value)
    states = {group.name: manager.manager_state for group, manager in ros.managers}
    assert states == {"simulation": "active", "alpha": "active", "bravo": "failed"}
    assert lifecycle_state_label(ros.nodes["/bravo/modem_sim_node"]) == "unconfigured"
    assert "/sim_clock_node" not in ros.nodes  # the clock stage was never created


def test_a_node_that_cannot_be_created_names_its_group(ros, tmp_path):
    stack = describe_stack(scenario_file(tmp_path, lambda d: d["vehicles"][0].update(
        parameters={"mac": {"active_slots": [99]}})))  # types pass the scenario; the node refuses
    with pytest.raises(StartupError, match=r"^group alpha: cannot create node /alpha/tdma_node"):
        ros.run(stack)


def test_poll_until_returns_at_the_deadline():
    assert poll_until(lambda: True, 0.0)
    assert not poll_until(lambda: False, 0.02)
