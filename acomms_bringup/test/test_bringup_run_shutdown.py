"""The end of a run shuts the groups down in-process (`acomms_bringup.run.shutdown`): the reverse
of start-up, stage by stage, the groups of one stage at once, each stage bounded in wall time.
ROS-free with stand-in executor tasks (the real path runs in every runner test)."""

from __future__ import annotations

import dataclasses
import time

from acomms_bringup.run.shutdown import shut_down_stages


@dataclasses.dataclass
class _Group:
    name: str
    stage: int


class _Task:
    def __init__(self, log: list, name: str, answer):
        self.log, self.name, self.answer, self.cancelled = log, name, answer, False

    def done(self) -> bool:
        return self.answer is not None

    def result(self):
        return self.answer

    def cancel(self) -> None:
        self.cancelled = True


class _Manager:
    def __init__(self, name: str, answer=(True, "shutdown: 3 nodes unconfigured"),
                 state: str = "active"):
        self.name, self.answer, self.manager_state = name, answer, state

    async def shutdown_in_process(self):
        return self.answer


class _Executor:
    """Creates done (or, answer None, never done) tasks and logs which stage created each."""

    def __init__(self):
        self.created: list[str] = []
        self.tasks: list[_Task] = []

    def create_task(self, callback):
        manager = callback.__self__
        self.created.append(manager.name)
        self.tasks.append(_Task(self.created, manager.name, manager.answer))
        return self.tasks[-1]


def test_stages_in_reverse_the_groups_of_a_stage_together_and_their_problems():
    managers = [(_Group("sim", 0), _Manager("sim")),
                (_Group("v1", 1), _Manager("v1")),
                (_Group("v2", 1), _Manager("v2", (False, "shutdown incomplete: modem"))),
                (_Group("v3", 1), _Manager("v3", state="configuring")),  # start-up interrupted
                (_Group("clock", 2), _Manager("clock"))]
    executor = _Executor()
    problems = shut_down_stages(executor, managers, 1.0)
    assert executor.created == ["clock", "v2", "v1", "sim"]
    assert problems == ["group v2: shutdown incomplete: modem"]


def test_a_stage_that_does_not_finish_is_cancelled_after_the_timeout():
    executor = _Executor()
    started = time.monotonic()
    problems = shut_down_stages(executor, [(_Group("v1", 1), _Manager("v1", answer=None))], 0.2)
    assert problems == ["group v1: shutdown: no answer within 0.2 s"]
    assert executor.tasks[0].cancelled
    assert 0.2 <= time.monotonic() - started < 5.0
