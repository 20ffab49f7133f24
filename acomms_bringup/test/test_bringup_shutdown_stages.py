"""shut_down_stages: a group whose shutdown task is still running at the timeout is one problem
line, also when cancelling it races with the executor's thread running its coroutine."""

from types import SimpleNamespace

from acomms_bringup.run.shutdown import shut_down_stages


class _RunningTask:
    """A task whose coroutine is executing in another thread: cancel raises (rclpy Task)."""

    def __init__(self):
        self.cancelled = 0

    def done(self) -> bool:
        return False

    def cancel(self) -> None:
        self.cancelled += 1
        raise ValueError("coroutine already executing")


class _Waits:
    """Awaited by a shutdown that has to wait (a node inside a callback)."""

    def __await__(self):
        yield


async def _shutdown_that_waits():
    await _Waits()
    return True, ""


async def _shutdown_that_ends():
    return True, ""


def test_a_shutdown_still_running_at_the_timeout_is_reported_not_raised():
    running = _RunningTask()
    resumed = []

    def resume(coroutine):
        resumed.append(coroutine)
        return running

    shutdowns = {"v1": _shutdown_that_waits, "v2": _shutdown_that_ends}
    managers = [(SimpleNamespace(stage=0, name=name),
                 SimpleNamespace(manager_state="active", shutdown_in_process=shutdowns[name]))
                for name in ("v1", "v2")]
    problems = shut_down_stages(managers, 0.01, resume)
    assert problems == ["group v1: shutdown: no answer within 0.01 s"]
    assert running.cancelled == 1 and len(resumed) == 1
    resumed[0].close()
