"""Start-up runs each manager's autostart sequence in the caller's thread (issue 30): a group's
nodes come up without any executor spinning, and a sequence that has to wait is handed to the
executor, which finishes it."""

from __future__ import annotations

import pathlib

import rclpy
import yaml
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.task import Future

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.run.startup import Startup, run_until_suspended, spin_executor_until
from acomms_core.ros.ros_support import lifecycle_state_label

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def test_a_group_comes_up_in_the_callers_thread_without_an_executor(tmp_path):
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(CONFIG / "demo_codecs.yaml")
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(data))
    stack = describe_stack(load_scenario(tmp_path / "scenario.yaml"))
    context = Context()
    rclpy.init(context=context)
    startup = Startup(context, executor=None, spin_until=None, group_timeout_s=30.0, lean=True)
    try:
        group = next(g for g in stack.groups if g.name == "alpha")
        manager = startup._create_group(group, stack.sim_start_s)
        assert run_until_suspended(manager.claim_autostart()) is None  # it never had to wait
        assert manager.manager_state == "active", manager.last_message
        for description in group.nodes:
            assert lifecycle_state_label(startup.nodes[description.fully_qualified_name]) \
                == "active"
        assert manager.claim_autostart() is None  # taken: the executor will not start it again
    finally:
        for node in startup.nodes.values():
            node.destroy_node()
        rclpy.shutdown(context=context)


def test_a_sequence_that_waits_is_finished_by_the_executor():
    context = Context()
    rclpy.init(context=context)
    executor = SingleThreadedExecutor(context=context)
    answer = Future()
    steps = []

    async def sequence():
        steps.append("before")
        steps.append(await answer)
        return "done"

    try:
        assert run_until_suspended(None) is None
        unfinished = run_until_suspended(sequence())
        assert unfinished is not None and steps == ["before"]
        task = executor.create_task(unfinished)
        answer.set_result("answered")
        assert spin_executor_until(executor)(task.done, 5.0)
        assert steps == ["before", "answered"] and task.result() == "done"
    finally:
        executor.shutdown(timeout_sec=2.0)
        rclpy.shutdown(context=context)
