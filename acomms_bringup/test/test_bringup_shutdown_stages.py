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


class _DoneTask:
    def done(self) -> bool:
        return True

    def result(self):
        return True, ""


def test_a_shutdown_still_running_at_the_timeout_is_reported_not_raised():
    tasks = {"v1": _RunningTask(), "v2": _DoneTask()}
    executor = SimpleNamespace(create_task=lambda shutdown: tasks[shutdown()])
    managers = [(SimpleNamespace(stage=0, name=name),
                 SimpleNamespace(manager_state="active", shutdown_in_process=lambda n=name: n))
                for name in ("v1", "v2")]
    problems = shut_down_stages(executor, managers, 0.01)
    assert problems == ["group v1: shutdown: no answer within 0.01 s"]
    assert tasks["v1"].cancelled == 1
