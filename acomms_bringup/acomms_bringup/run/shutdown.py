"""The end of a run: the groups' lifecycle managers bring their nodes down in-process.

The runner used to call every manager's `shutdown` service from its recorder node, one group
after another: per group a new service client, a wait (wall clock) until DDS discovery paired it
with the manager's service among thousands of endpoints, then the round trip. At 32 vehicles
that was 7 s on a quiet machine and over 2 minutes on a loaded one (34 groups); at 64 vehicles on
a loaded machine replies were lost and the process crashed. The managers live in the runner's
process and drive their nodes directly (`LifecycleManager.use_local_nodes`), so
`shut_down_stages` runs their shutdowns (what the service would run, refused likewise while a
manager is busy) in the caller's thread, the reverse of start-up, stage by stage from the last,
each stage waited for at most timeout_s wall seconds (an I/O bound on a stuck node, never a
result). No executor spins the nodes meanwhile: every entity a cleanup destroys would wake it
into rebuilding its wait set over all the others (at 64 vehicles the shutdown as executor tasks
took 27 s of a loaded machine, most of it destroying endpoints: `DeferredEndpoints` keeps them
for after the context). A shutdown that has to wait is resumed by the executor. The managers'
services stay for `ros2 service call` from other processes. That is for the stepped clock; a
free-running clock's multi-threaded executor keeps the managers' services, called one group
after another. `EndPhases` times the end's phases (acomms_run prints them), `collector_paused`
keeps Python's garbage collector from walking the run's objects again and again meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
import time

from acomms_bringup.run.startup import SETTLED_STATES, poll_until, start_in_thread


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for the block, everything alive before it left out
    of later collections (`gc.freeze`): the end of a run allocates a lot (shutdown, summary,
    plots), and each full collection otherwise walks every object of the run (its record, the
    nodes, rclpy's entities)."""
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


class EndPhases:
    """Wall seconds spent in each phase of the end of a run, in the order first met."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - started

    def line(self) -> str:
        """'12.3 s (shutdown 5.1, destroy 3.2, ...)': the total and each phase."""
        total = sum(self.seconds.values())
        return f"{total:.1f} s (" + ", ".join(f"{name} {seconds:.1f}" for name, seconds
                                              in self.seconds.items()) + ")"


class _Finished:
    """A shutdown that ended in the caller's thread, shaped like the executor task it needs
    not be."""

    def __init__(self, value):
        self.value = value

    def done(self) -> bool:
        return True

    def result(self):
        return self.value

    def cancel(self) -> None:
        pass


def shut_down_stages(managers, timeout_s: float, resume) -> list[str]:
    """Shut down every settled group of `managers` ([(NodeGroup, manager)] in start-up order),
    stage by stage from the last; the problems met, one line per group. Each manager's
    shutdown runs in the caller's thread while no executor thread spins the nodes (every
    entity a cleanup destroys would wake it into rebuilding its wait set over all that remain:
    quadratic in the process's size); one that has to wait (a node inside a callback) is
    handed to `resume(coroutine)`, which returns its executor task (done, result, cancel)."""
    problems = []
    for stage in sorted({group.stage for group, _ in managers}, reverse=True):
        tasks = []
        for group, manager in reversed(managers):
            if group.stage != stage or manager.manager_state not in SETTLED_STATES:
                continue
            finished, value = start_in_thread(manager.shutdown_in_process())
            tasks.append((group, _Finished(value) if finished else resume(value)))
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
