"""Partitioned runs (ROS-free): which vehicles each of `acomms_run --processes K`'s processes runs.

`plan_partition(vehicle_names, k, run_id)` splits the scenario's vehicles over K processes,
balanced (shares differ by at most one vehicle, the larger shares first) and in scenario order
(process 0 takes the first vehicles): the same scenario and K give the same plan on every
machine. Process 0 is acomms_run itself (with the simulator services, the clock conductor and the
recorder); every other share is an `acomms_participant` named `<run_id>_p<i>`, the name it
answers Ticks under. `participant_command` is the command line that runs one share.

The participants' queue accounting and dispatch sources reach the recorder over ROS
(`remote_events`), so a partitioned run writes the same summary.json and messages.csv as one
process, whether the participants run on this machine or another one.
"""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import time

from acomms_bringup.description.scenario_keys import MAX_PROCESSES

STOP_TIMEOUT_S = 60.0  # wall s participants get to exit after SIGTERM (32 vehicles: > 10 s)


class PartitionError(ValueError):
    """A partition that cannot be made (one line for the user)."""


@dataclasses.dataclass(frozen=True)
class Share:
    """The vehicles one process runs; `name` is its participant name ('' for acomms_run)."""

    index: int
    vehicles: tuple[str, ...]
    name: str = ""


def check_processes(processes: int, vehicles: int) -> str | None:
    """Why `processes` cannot split `vehicles` vehicles (None: it can)."""
    if not 1 <= processes <= MAX_PROCESSES:
        return f"{processes} processes: must be 1..{MAX_PROCESSES}"
    if processes > vehicles:
        return (f"{processes} processes for {vehicles} vehicle{'s' * (vehicles != 1)}: each "
                "process runs at least one vehicle")
    return None


def plan_partition(vehicle_names: list[str] | tuple[str, ...], processes: int,
                   run_id: str = "acomms_run") -> list[Share]:
    """The shares of K processes (see the module docstring); PartitionError if K cannot be."""
    problem = check_processes(processes, len(vehicle_names))
    if problem:
        raise PartitionError(problem)
    base, extra = divmod(len(vehicle_names), processes)
    shares, start = [], 0
    for index in range(processes):
        size = base + (1 if index < extra else 0)
        name = "" if index == 0 else f"{run_id}_p{index}"
        shares.append(Share(index, tuple(vehicle_names[start:start + size]), name))
        start += size
    return shares


def participant_command(scenario: str, share: Share, step_timeout_s: float, lean: bool,
                        log_level: str = "warn") -> list[str]:
    """The acomms_participant command line that runs `share` (a participant share)."""
    return [sys.executable, "-m", "acomms_bringup.run.participant", scenario,
            "--groups", ",".join(share.vehicles), "--name", share.name,
            "--step-timeout", f"{step_timeout_s:g}", "--log-level", log_level,
            *(["--lean"] if lean else [])]


class ParticipantProcesses:
    """The participant processes of a partitioned run: started together, their output appended
    to one log file; `check()` raises PartitionError (one line naming the participant) when one
    ended while the run needs it; `stop()` ends them all, bounded (SIGTERM, then SIGKILL)."""

    def __init__(self, log_path):
        self.log_path = log_path
        self.processes: dict[str, subprocess.Popen] = {}
        self._log = None
        self.done = False  # the run no longer needs them (an exit is then expected)

    def start(self, commands: dict[str, list[str]]) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "a", buffering=1)  # noqa: SIM115 - closed in stop()
        for name, command in commands.items():
            # own process group: a Ctrl-C at the terminal reaches acomms_run, which stops them
            self.processes[name] = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                start_new_session=True)

    def check(self) -> None:
        if self.done:
            return
        for name, process in self.processes.items():
            status = process.poll()
            if status is not None:
                raise PartitionError(f"participant {name} (pid {process.pid}) exited with status "
                                     f"{status}; its output is in {self.log_path}")

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> dict[str, int | None]:
        """End every participant still running; name -> exit status (None: had to be killed)."""
        self.done = True
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        statuses = {}
        for name, process in self.processes.items():
            try:
                statuses[name] = process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout_s)
                statuses[name] = None
        if self._log is not None:
            self._log.close()
            self._log = None
        return statuses
