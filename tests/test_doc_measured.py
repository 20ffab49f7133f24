"""The Measured table of docs/guide/scaling.md (issue 27): machine-dependent figures (speed,
start-up) are stated only as measurements with a date and a machine, each row naming the bench
command that prints it and the column it is read from. This test checks every row: the bench
exists, its command line parses, and a short run of it (few vehicles, seconds of simulated time)
prints that column with a value under it. It does not compare the figures: they are one
machine's."""

from __future__ import annotations

import pathlib
import re
import shlex
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "journeys"))
from journey_support import shell  # noqa: E402

PAGE = ROOT / "docs" / "guide" / "scaling.md"
# A short run of each bench: appended to `python bench/NAME.py` (its own arguments dropped), and
# the vehicle count whose row the output must hold.
SHORT_RUNS = {
    "bench/sim_scale.py": ("2 --duration 20 --reference-max-n 0 --no-mcap --png {tmp}/scale.png",
                           2),
    "bench/startup_scale.py": ("2", 2),
    "bench/step_cost.py": ("2 --steps 20", 2),
}


def measured_rows() -> list[dict[str, str]]:
    """The rows of the page's Measured table, as {header: cell} (command cells without
    backticks, and only the command up to the cell's first parenthesis)."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| bench command |"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        row = dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True))
        row["bench command"] = re.match(r"`([^`]+)`", row["bench command"]).group(1)
        rows.append(row)
    return rows


def test_the_table_is_there_and_dated():
    rows = measured_rows()
    assert len(rows) >= 4
    for row in rows:
        assert re.match(r"\d{4}-\d{2}-\d{2}, ", row["when, where"]), row
        assert row["bench command"].startswith("python bench/"), row


def _printed_table(script: str, tmp_path: pathlib.Path) -> tuple[str, str]:
    """The header line and the N-vehicle row of the short run of `script`."""
    arguments, vehicles = SHORT_RUNS[script]
    result = shell(f"python {script} {arguments.format(tmp=tmp_path)}", timeout_s=150)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    header = next(line for line in lines if re.search(r"\bN\b", line))
    row = next(line for line in lines[lines.index(header) + 1:]
               if re.match(rf"^\s*(current\s+)?{vehicles}\s", line))
    return header, row


@pytest.mark.parametrize("script", sorted(SHORT_RUNS))
def test_each_row_bench_prints_its_column(script, tmp_path):
    rows = [row for row in measured_rows() if row["bench command"].split()[1] == script]
    assert rows, f"no Measured row names {script}"
    assert (ROOT / script).is_file()
    help_run = shell(f"python {script} --help", timeout_s=60)  # once: every row's bench
    for row in rows:   # the documented arguments are the bench's own
        words = shlex.split(row["bench command"])
        for option in (word for word in words[2:] if word.startswith("--")):
            assert option in help_run.stdout, (script, option)
    header, row_line = _printed_table(script, tmp_path)
    for row in rows:
        column = row["column"]
        word = re.search(rf"(?<!\S){re.escape(column)}(?!\S)", header)
        assert word, (column, header)
        # both benches right-align a value under its header word
        end = word.end()
        value = row_line[:end].split()[-1]
        assert re.fullmatch(r"[\d.]+", value), (column, header, row_line)
