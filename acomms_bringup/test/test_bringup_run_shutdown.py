"""The end of a run shuts each group down in-process (`acomms_bringup.run.shutdown`), bounded in
wall time; ROS-free with stand-in executor tasks (the real path runs in every runner test)."""

from __future__ import annotations

import time

from acomms_bringup.run.shutdown import shut_down


class _Task:
    def __init__(self, result=None, done=True):
        self._result, self._done, self.cancelled = result, done, False

    def done(self) -> bool:
        return self._done

    def result(self):
        return self._result

    def cancel(self) -> None:
        self.cancelled = True


class _Executor:
    def __init__(self, task: _Task):
        self.task, self.created = task, []

    def create_task(self, callback, *args):
        self.created.append(callback)
        return self.task


class _Manager:
    async def shutdown_in_process(self):
        return True, "shutdown: 5 nodes unconfigured"


def test_the_managers_shutdown_runs_as_an_executor_task_and_its_answer_is_returned():
    manager = _Manager()
    executor = _Executor(_Task((True, "shutdown: 5 nodes unconfigured")))
    assert shut_down(executor, manager, 1.0) == (True, "shutdown: 5 nodes unconfigured")
    assert executor.created == [manager.shutdown_in_process]


def test_a_shutdown_that_does_not_finish_is_cancelled_after_the_timeout():
    task = _Task(done=False)
    started = time.monotonic()
    ok, message = shut_down(_Executor(task), _Manager(), 0.2)
    assert not ok and message == "shutdown: no answer within 0.2 s"
    assert task.cancelled
    assert 0.2 <= time.monotonic() - started < 5.0
