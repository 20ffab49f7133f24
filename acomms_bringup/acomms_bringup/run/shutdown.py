"""The end of a run: each group's lifecycle manager brings its nodes down in-process.

The runner used to call every manager's `shutdown` service from its recorder node, one group
after another: per group a new service client, a wait (wall clock) until DDS discovery paired it
with the manager's service among thousands of endpoints, then the round trip. At 32 vehicles
that was 7 s on a quiet machine and over 2 minutes on a loaded one (34 groups). The managers live
in the runner's process and drive their nodes directly (`LifecycleManager.use_local_nodes`), so
`shut_down(executor, manager, timeout_s)` runs the manager's shutdown as a task of the executor
that spins it (what the service would run, refused likewise while the manager is busy) and waits
for it at most timeout_s wall seconds (an I/O bound on a stuck node, never a result). The
managers' services stay for `ros2 service call` from other processes.
"""

from __future__ import annotations

from acomms_bringup.run.startup import poll_until


def shut_down(executor, manager, timeout_s: float) -> tuple[bool, str]:
    """(success, message) of the manager's shutdown, run on `executor` (spun by another
    thread); (False, "shutdown: no answer within ...") when it did not finish in timeout_s
    wall seconds."""
    task = executor.create_task(manager.shutdown_in_process)
    if not poll_until(task.done, timeout_s):
        task.cancel()
        return False, f"shutdown: no answer within {timeout_s:g} s"
    return task.result()
