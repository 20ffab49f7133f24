"""Running a sweep's runs: each in its own `acomms_run` process with a ROS domain of its own,
through a local pool (`--workers N`) or a Dask cluster (`--dask tcp://host:8786`).

`run_job(job)` is what a pool thread or a Dask task calls: it leases a ROS domain that no other
run on this machine holds (a lock file per domain in the temp directory, the same files the test
suite's conftest.py claims, released when the run ends), writes the run's scenario.yaml into its
folder and runs `python -m acomms_bringup.run.sweep_worker` there (stdout and stderr into
run.log), then reads the folder's results. A job is a plain dict, so Dask can ship it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

from acomms_bringup.run import sweep_results

DEFAULT_DOMAINS = (70, 101)  # valid Linux domain IDs with the default port mapping: 0..101
DOMAIN_WAIT_S = 600.0  # wall clock: how long a run waits for a free domain


def domain_lock_path(domain: int) -> pathlib.Path:
    return pathlib.Path(tempfile.gettempdir()) / f"acomms-ros-domain-{domain}.lock"


@contextlib.contextmanager
def lease_domain(low: int, high: int, wait_s: float = DOMAIN_WAIT_S) -> Iterator[int]:
    """A ROS domain in low..high that no other process holds, for the duration of the block."""
    count = high - low + 1
    start = os.getpid()
    deadline = time.monotonic() + wait_s
    while True:
        for offset in range(count):
            domain = low + (start + offset) % count
            handle = open(domain_lock_path(domain), "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            try:
                yield domain
            finally:
                handle.close()
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"no free ROS domain in {low}..{high} within {wait_s:g} wall s")
        time.sleep(0.2)


def run_job(job: dict) -> dict:
    """Run one sweep run (see the module doc); its result: name, status, wall_s, row (never
    raises: a run that could not start is a failed result saying why)."""
    run_dir = pathlib.Path(job["run_dir"])
    started = time.monotonic()
    result = {"name": job["name"], "status": "failed", "row": {}}
    try:
        status, result["domain"] = _run_process(job, run_dir)
    except (OSError, RuntimeError) as exc:
        return {**result, "error": f"could not run: {exc}"}
    result["wall_s"] = round(time.monotonic() - started, 2)
    if status == 0 and sweep_results.is_complete(run_dir):
        return {**result, "status": "ok", "row": sweep_results.run_row(run_dir)}
    return {**result, "error": f"exit status {status}, see {run_dir / 'run.log'}"}


def _run_process(job: dict, run_dir: pathlib.Path) -> tuple[int | str, int]:
    """The worker process of one run in `run_dir`; (exit status or 'timeout', ROS domain)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").unlink(missing_ok=True)  # an earlier, unfinished attempt's
    (run_dir / "scenario.yaml").write_text(job["scenario_yaml"])
    with lease_domain(*job["domains"]) as domain:
        env = dict(os.environ, ROS_DOMAIN_ID=str(domain),
                   ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
        command = [sys.executable, "-m", "acomms_bringup.run.sweep_worker", str(run_dir),
                   job["base_dir"], *(["--mcap"] if job.get("mcap") else [])]
        with (run_dir / "run.log").open("w") as log:
            try:
                return subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      timeout=job.get("timeout_s")).returncode, domain
            except subprocess.TimeoutExpired:
                return "timeout", domain


def _progress(total: int, quiet: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="run", disable=quiet, file=sys.stderr, dynamic_ncols=True)


def run_local(jobs: list[dict], workers: int, quiet: bool = False,
              on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Every job in a pool of `workers` (each job its own process); results in job order."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_job, job) for job in jobs]
        return _collect(jobs, futures, as_completed, quiet, on_result)


def _collect(jobs: list[dict], futures, as_completed, quiet: bool,
             on_result: Callable[[dict], None] | None) -> list[dict]:
    """Results as they finish (progress bar, on_result), returned in job order."""
    results: dict[str, dict] = {}
    with _progress(len(jobs), quiet) as bar:
        for future in as_completed(futures):
            result = future.result()
            results[result["name"]] = result
            if on_result:
                on_result(result)
            bar.update(1)
    return [results[job["name"]] for job in jobs]


def run_dask(jobs: list[dict], address, quiet: bool = False,
             on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Every job as a task on the Dask cluster at `address` (or a distributed.Client/Cluster);
    the run folders must be on a file system the workers share with this machine."""
    from distributed import Client, as_completed

    client = address if isinstance(address, Client) else Client(address)
    try:
        futures = client.map(run_job, jobs, pure=False)
        return _collect(jobs, futures, as_completed, quiet, on_result)
    finally:
        if client is not address:
            client.close()
