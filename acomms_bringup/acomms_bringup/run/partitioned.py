"""The runner's side of `acomms_run --processes K` (see `partition` for the plan).

`Partition.plan(runner, K, ...)` (None for K = 1) splits the scenario's vehicles: the runner keeps
the first share (with the simulator services, the clock conductor and the recorder) and spawns
one `acomms_participant` per other share (`ParticipantProcesses`: same ROS domain and
environment, same --lean and log level, their output into the run folder's participants.log,
each told acomms_run's pid so it ends with it). Before the traffic starts the runner waits until
every participant joined (its Tick/Tock node is in the ROS graph and every traffic topic of its
vehicles has a subscriber), bounded; a participant that exits while the run needs it stops the
run with one line naming it (checked with the runner's checkpoint: during start-up, between steps
and while waiting for Tocks). `stop()` ends them (SIGTERM, then SIGKILL after a bound).
"""

from __future__ import annotations

import os
import pathlib
import tempfile
import time

from acomms_bringup.run.partition import (
    ParticipantProcesses,
    PartitionError,
    participant_command,
    plan_partition,
)
from acomms_bringup.run.run_errors import RunError, RunStopped

JOIN_TIMEOUT_S = 300.0  # wall seconds for every participant to bring its vehicles up and join
CHECK_PERIOD_S = 0.2  # wall seconds between looks at the participant processes


class Partition:
    """The participants of one partitioned run (see the module docstring)."""

    def __init__(self, runner, shares, log_path: pathlib.Path):
        self.runner = runner
        self.shares = shares
        self.processes = ParticipantProcesses(log_path)
        self.names = tuple(share.name for share in shares[1:])
        self.exclude = tuple(vehicle for share in shares[1:] for vehicle in share.vehicles)
        self._checked = 0.0

    @classmethod
    def plan(cls, runner, processes: int | None, manual, log_path: pathlib.Path | None
             ) -> Partition | None:
        """The partition of `runner`'s scenario over `processes` (None: the scenario's
        runtime.processes; the result is None for one process); RunError (one line) when it
        cannot be made. `manual`: (--exclude, --participants), given by hand; the participants'
        output goes to `log_path` (default: a file in the temporary directory)."""
        scenario = runner.scenario
        processes = scenario.processes if processes is None else processes
        if processes == 1:
            return None
        if runner.clock_mode != "deterministic":
            raise RunError(f"--processes {processes}: needs the deterministic clock "
                           f"(this run's clock is {runner.clock_mode})")
        if any(manual):
            raise RunError(f"--processes {processes} splits the vehicles itself: not with "
                           "--exclude or --participants")
        if scenario.path is None:
            raise RunError(f"--processes {processes}: the participants need the scenario's file")
        try:
            shares = plan_partition([v.name for v in scenario.vehicles], processes,
                                    f"acomms_run_{os.getpid()}")
        except PartitionError as exc:
            raise RunError(str(exc)) from None
        log_path = log_path or pathlib.Path(tempfile.gettempdir()) / (
            f"acomms_run_{os.getpid()}_participants.log")
        return cls(runner, shares, log_path)

    @staticmethod
    def split(partition: Partition | None, exclude, participants) -> tuple[tuple, tuple]:
        """(exclude, participants) of the run: the partition's, else those given."""
        if partition is None:
            return tuple(exclude), tuple(participants)
        return partition.exclude, partition.names

    @staticmethod
    def guard(partition: Partition | None, checkpoint):
        """The runner's checkpoint: `guarded` with a partition, else `checkpoint` itself."""
        return checkpoint if partition is None else partition.guarded(checkpoint)

    def spawn(self, log_level: str) -> None:
        runner = self.runner
        self.processes.start({share.name: [
            *participant_command(str(runner.scenario.path), share, runner.step_timeout_s,
                                 runner.lean, log_level), "--conductor-pid", str(os.getpid())]
            for share in self.shares[1:]})

    def guarded(self, checkpoint):
        """`checkpoint` that also stops the run when a participant ended: RunError during
        start-up, RunStopped (the summary of what ran is written) once running."""
        def check() -> None:
            checkpoint()
            now = time.monotonic()
            if now - self._checked < CHECK_PERIOD_S:
                return
            self._checked = now
            try:
                self.processes.check()
            except PartitionError as exc:
                raise (RunStopped if self.runner.running else RunError)(str(exc)) from None

        return check

    def joined(self) -> list[str]:
        """What is still missing before the traffic may start (empty: every participant)."""
        recorder = self.runner.recorder
        present = set(recorder.get_node_names())
        missing = [f"participant {name}" for name in self.names if name not in present]
        return missing or [f"a subscriber of {topic}"
                           for topic in recorder.traffic_without_subscribers()]

    def wait_until_joined(self) -> None:
        started = time.monotonic()
        if not self.runner._spin_until(lambda: not self.joined(), JOIN_TIMEOUT_S):
            missing = self.joined()
            raise RunError(f"{missing[0]} not there after {JOIN_TIMEOUT_S:g} wall s "
                           f"(participants' output: {self.processes.log_path})")
        self.runner.startup_phases["join_s"] = time.monotonic() - started

    def stop(self) -> list[str]:
        """End the participants; the problems (one that had to be killed)."""
        return [f"participant {name} did not end after SIGTERM: killed"
                for name, status in self.processes.stop().items() if status is None]
