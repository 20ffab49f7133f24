"""The end of a run shuts the groups down in-process (`acomms_bringup.run.shutdown`): the reverse
of start-up, stage by stage, in the caller's thread (a shutdown that waits is resumed by the
executor), each stage bounded in wall time. ROS-free with stand-in managers and executor tasks
(the real path runs in every runner test)."""

from __future__ import annotations

import dataclasses
import gc
import time

from acomms_bringup.run.shutdown import EndPhases, collector_paused, shut_down_stages


@dataclasses.dataclass
class _Group:
    name: str
    stage: int


class _Task:
    def __init__(self, name: str, answer):
        self.name, self.answer, self.cancelled = name, answer, False

    def done(self) -> bool:
        return self.answer is not None

    def result(self):
        return self.answer

    def cancel(self) -> None:
        self.cancelled = True


class _Manager:
    """answer: what its shutdown returns; wait: it first waits for something (an executor
    resumes it); answer None: it never ends."""

    def __init__(self, name: str, answer=(True, "shutdown: 3 nodes unconfigured"),
                 state: str = "active", wait: bool = False, log: list | None = None):
        self.name, self.answer, self.manager_state = name, answer, state
        self.wait, self.log = wait or answer is None, log if log is not None else []

    async def shutdown_in_process(self):
        self.log.append(self.name)
        if self.wait:
            await _Suspend()
        return self.answer


class _Suspend:
    def __await__(self):
        yield


class _Resume:
    """Stands for the runner's executor: takes the shutdowns that wait, as tasks."""

    def __init__(self):
        self.tasks: list[_Task] = []

    def __call__(self, coroutine):
        manager = coroutine.cr_frame.f_locals["self"]
        coroutine.close()
        self.tasks.append(_Task(manager.name, manager.answer))
        return self.tasks[-1]


def test_stages_in_reverse_in_this_thread_and_their_problems():
    log = []
    managers = [(_Group("sim", 0), _Manager("sim", log=log)),
                (_Group("v1", 1), _Manager("v1", log=log)),
                (_Group("v2", 1), _Manager("v2", (False, "shutdown incomplete: modem"),
                                           log=log)),
                (_Group("v3", 1), _Manager("v3", state="configuring", log=log)),  # interrupted
                (_Group("clock", 2), _Manager("clock", log=log))]
    resume = _Resume()
    problems = shut_down_stages(managers, 1.0, resume)
    assert log == ["clock", "v2", "v1", "sim"]
    assert resume.tasks == []  # none waited: no executor needed
    assert problems == ["group v2: shutdown incomplete: modem"]


def test_a_shutdown_that_waits_is_resumed_by_the_executor():
    log = []
    managers = [(_Group("v1", 1), _Manager("v1", log=log)),
                (_Group("v2", 1), _Manager("v2", (False, "shutdown incomplete: mac"),
                                           wait=True, log=log))]
    resume = _Resume()
    problems = shut_down_stages(managers, 1.0, resume)
    assert log == ["v2", "v1"]
    assert [task.name for task in resume.tasks] == ["v2"]
    assert problems == ["group v2: shutdown incomplete: mac"]


def test_a_stage_that_does_not_finish_is_cancelled_after_the_timeout():
    managers = [(_Group("v1", 1), _Manager("v1", answer=None))]
    resume = _Resume()
    started = time.monotonic()
    problems = shut_down_stages(managers, 0.2, resume)
    assert problems == ["group v1: shutdown: no answer within 0.2 s"]
    assert resume.tasks[0].cancelled
    assert 0.2 <= time.monotonic() - started < 5.0


def test_the_collector_is_paused_for_the_end_and_restored():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        assert gc.get_freeze_count() > 0  # what lived before is left out of collections
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # it was off: it stays off
    finally:
        gc.enable()


def test_end_phases_add_up_in_the_order_met():
    phases = EndPhases()
    with phases.phase("lifecycle"):
        time.sleep(0.02)
    with phases.phase("destroy"):
        pass
    with phases.phase("lifecycle"):
        time.sleep(0.02)
    assert list(phases.seconds) == ["lifecycle", "destroy"]
    assert phases.seconds["lifecycle"] >= 0.04
    line = phases.line()
    assert line.startswith(f"{sum(phases.seconds.values()):.1f} s (lifecycle ")
    assert line.endswith(", destroy 0.0)")
