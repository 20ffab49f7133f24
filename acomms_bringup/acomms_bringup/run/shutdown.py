"""The end of a run: the groups' lifecycle managers bring their nodes down in-process.

The runner used to call every manager's `shutdown` service from its recorder node, one group
after another: per group a new service client, a wait (wall clock) until DDS discovery paired it
with the manager's service among thousands of endpoints, then the round trip. At 32 vehicles
that was 7 s on a quiet machine and over 2 minutes on a loaded one (34 groups); at 64 vehicles on
a loaded machine replies were lost and the process crashed. The managers live in the runner's
process and drive their nodes directly (`LifecycleManager.use_local_nodes`), so
`shut_down_stages` runs their shutdowns as tasks of the executor that spins them (what the
service would run, refused likewise while a manager is busy): the reverse of start-up, stage by
stage from the last, the groups of one stage at once (as start-up brings them up), each stage
waited for at most timeout_s wall seconds (an I/O bound on a stuck node, never a result). The
managers' services stay for `ros2 service call` from other processes. That is for the stepped
clock (a SingleThreadedExecutor spins the nodes after the run); a free-running clock's
multi-threaded executor keeps the managers' services, called one group after another.
"""

from __future__ import annotations

from acomms_bringup.run.startup import SETTLED_STATES, poll_until


def shut_down_stages(executor, managers, timeout_s: float) -> list[str]:
    """Shut down every settled group of `managers` ([(NodeGroup, manager)] in start-up order) on
    `executor` (spun by another thread); the problems met, one line per group."""
    problems = []
    for stage in sorted({group.stage for group, _ in managers}, reverse=True):
        tasks = [(group, executor.create_task(manager.shutdown_in_process))
                 for group, manager in reversed(managers)
                 if group.stage == stage and manager.manager_state in SETTLED_STATES]
        poll_until(lambda tasks=tasks: all(task.done() for _, task in tasks), timeout_s)
        for group, task in tasks:
            if not task.done():
                try:
                    task.cancel()
                except ValueError:  # its coroutine runs in the executor's thread right now
                    pass
                problems.append(f"group {group.name}: shutdown: no answer within {timeout_s:g} s")
                continue
            ok, message = task.result()
            if not ok:
                problems.append(f"group {group.name}: {message}")
    return problems

