"""What recording a run costs: acomms_run on a scenario with and without run.mcap (issue 21).

Runs `acomms_run SCENARIO --duration D --warp max --quiet` alternately with `--no-mcap` and with
the default recording, `--repeat` times each, and prints per variant the median wall seconds,
the CPU seconds of the process (user + system), the MCAP file's size, its messages and topics,
and the output files' write time is included in the wall time. Run:

    source env.sh && python bench/run_outputs.py [--scenario FILE] [--duration 120] [--repeat 2]
"""

from __future__ import annotations

import argparse
import pathlib
import resource
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_once(scenario: str, duration: float, out: pathlib.Path, mcap: bool) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    command = ["acomms_run", scenario, "--duration", str(duration), "--warp", "max", "--quiet",
               "--out", str(out)] + ([] if mcap else ["--no-mcap"])
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def mcap_facts(path: pathlib.Path) -> tuple[int, int]:
    from mcap.reader import make_reader

    with path.open("rb") as handle:
        summary = make_reader(handle).get_summary()
    return summary.statistics.message_count, len(summary.channels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", default=str(ROOT / "acomms_bringup/config/demo.yaml"))
    parser.add_argument("--duration", type=float, default=120.0)
    parser.add_argument("--repeat", type=int, default=2)
    arguments = parser.parse_args()
    results = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(arguments.repeat):
            for mcap in (False, True):
                out = pathlib.Path(tmp) / f"run{index}-{mcap}"
                results[mcap].append(run_once(arguments.scenario, arguments.duration, out, mcap))
        mcap_file = pathlib.Path(tmp) / "run0-True" / "run.mcap"
        size = mcap_file.stat().st_size
        messages, topics = mcap_facts(mcap_file)
    print(f"{pathlib.Path(arguments.scenario).name}, {arguments.duration:g} simulated s, "
          f"{arguments.repeat} runs each (median)")
    for mcap in (False, True):
        walls = [w for w, _ in results[mcap]]
        cpus = [c for _, c in results[mcap]]
        print(f"  {'with run.mcap' if mcap else 'no recording '}: wall "
              f"{statistics.median(walls):6.1f} s, CPU {statistics.median(cpus):6.1f} s")
    print(f"  run.mcap: {size / 1024:.0f} KiB, {messages} messages on {topics} topics")


if __name__ == "__main__":
    main()
