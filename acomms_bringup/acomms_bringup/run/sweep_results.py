"""A sweep's results, without ROS: one sweep.csv row per run (from its summary.json and
timeline.csv), and the PNG of a metric vs a parameter with its spread over seeds.

Columns: `run`, every override path, `seed`, `status` (ok, failed, skipped), then the metrics:
`delivered_ratio` (messages delivered / deliveries expected), `messages_sent`,
`messages_delivered`, per topic (summed over sources and destinations) `<topic>:sent`,
`<topic>:delivered`, `<topic>:delivered_ratio`, `<topic>:mean_latency_s`, per link
`per:<source>-><receiver>` (1 - received / sent), and `channel_utilisation` (the fraction of the
simulated time in which at least one modem transmitted). Wall-clock facts are left out, so the
same sweep gives the same sweep.csv whatever ran it.
"""

from __future__ import annotations

import csv
import json
import math
import pathlib
import statistics

RUN_COLUMNS = ("run", "seed", "status")


def is_complete(run_dir: pathlib.Path, duration_s: float | None = None) -> bool:
    """A finished run: summary.json parses, was not interrupted and covers the duration."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(summary, dict) or summary.get("interrupted"):
        return False
    wanted = summary.get("requested_duration_s") if duration_s is None else duration_s
    return (wanted is not None and (run_dir / "timeline.csv").is_file()
            and summary.get("simulated_seconds", -1.0) >= float(wanted) - 1e-6)


def _ratio(num: float, den: float) -> float | None:
    return round(num / den, 6) if den else None


def topic_metrics(summary: dict) -> dict:
    """Per topic: sent, delivered, delivered ratio and mean latency over every source/dest."""
    out: dict = {}
    topics: dict[str, list[dict]] = {}
    for row in summary.get("topics", []):
        topics.setdefault(row["topic"], []).append(row)
    for topic, rows in sorted(topics.items()):
        sent = sum(r["sent"] for r in rows)
        delivered = sum(r["delivered"] for r in rows)
        weighted = [(r["mean_latency_s"], r["delivered"]) for r in rows
                    if r.get("mean_latency_s") is not None and r["delivered"]]
        latency = (sum(v * n for v, n in weighted) / sum(n for _, n in weighted)
                   if weighted else None)
        out[f"{topic}:sent"] = sent
        out[f"{topic}:delivered"] = delivered
        out[f"{topic}:delivered_ratio"] = _ratio(delivered, sent)
        out[f"{topic}:mean_latency_s"] = None if latency is None else round(latency, 6)
    return out


def link_metrics(summary: dict) -> dict:
    """Per (source, receiver) with packets sent: packet error rate, 1 - received / sent."""
    return {f"per:{r['source']}->{r['receiver']}": round(1.0 - r["received"] / r["sent"], 6)
            for r in summary.get("links", []) if r.get("sent")}


def channel_utilisation(timeline_csv: pathlib.Path, simulated_s: float) -> float | None:
    """The fraction of simulated time in which at least one modem transmitted."""
    try:
        with timeline_csv.open(newline="") as handle:
            spans = sorted((float(r["start_s"]), float(r["end_s"]))
                           for r in csv.DictReader(handle) if r["kind"] == "tx")
    except (OSError, KeyError, ValueError):
        return None
    busy, end = 0.0, -math.inf
    for start, stop in spans:
        start = max(start, end)
        if stop > start:
            busy += stop - start
            end = stop
    return round(busy / simulated_s, 6) if simulated_s > 0 else None


def run_row(run_dir: pathlib.Path) -> dict:
    """The metrics of one finished run folder."""
    summary = json.loads((run_dir / "summary.json").read_text())
    row = {"delivered_ratio": _ratio(summary.get("messages_delivered", 0),
                                     summary.get("deliveries_expected", 0)),
           "messages_sent": summary.get("messages_sent"),
           "messages_delivered": summary.get("messages_delivered")}
    row.update(topic_metrics(summary))
    row.update(link_metrics(summary))
    row["channel_utilisation"] = channel_utilisation(run_dir / "timeline.csv",
                                                     summary.get("simulated_seconds", 0.0))
    return row


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def write_csv(path: pathlib.Path, rows: list[dict], parameters: list[str]) -> list[str]:
    """sweep.csv: run, overrides, seed, status, then every metric column (sorted); the columns."""
    metrics = sorted({k for row in rows for k in row} - set(RUN_COLUMNS) - set(parameters))
    columns = ["run", *parameters, "seed", "status", *metrics]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row.get(c)) for c in columns])
    return columns


def spread(rows: list[dict], x: str, metric: str) -> list[tuple[str, float, float, float, int]]:
    """Per value of `x` (first-seen order): mean, min and max of `metric` over the runs, count."""
    groups: dict[str, list[float]] = {}
    for row in rows:
        value = row.get(metric)
        key = _cell(row.get(x))
        groups.setdefault(key, [])
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            groups[key].append(float(value))
    return [(key, statistics.fmean(v), min(v), max(v), len(v))
            for key, v in groups.items() if v]


def plot(path: pathlib.Path, rows: list[dict], x: str, metric: str, title: str,
         series: str | None = None) -> bool:
    """The PNG of `metric` vs `x`: mean over seeds with min-max bars and every run as a dot, one
    line per value of `series` (another override) when given. False when no run has `metric`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    labels = [g[0] for g in spread(rows, x, metric)]
    if not labels:
        return False
    lines: dict[str, list[dict]] = {}
    for row in rows:
        lines.setdefault(_cell(row.get(series)) if series else "", []).append(row)
    figure, axes = pyplot.subplots(figsize=(max(5.0, 1.2 * len(labels) + 2), 4))
    for name, subset in lines.items():
        groups = spread(subset, x, metric)
        positions = [labels.index(g[0]) for g in groups]
        axes.errorbar(positions, [g[1] for g in groups],
                      yerr=[[g[1] - g[2] for g in groups], [g[3] - g[1] for g in groups]],
                      fmt="o-", capsize=5, label=f"{series}={name}" if series else "mean")
        for row in subset:
            if _cell(row.get(x)) in labels and isinstance(row.get(metric), (int, float)):
                axes.scatter(labels.index(_cell(row.get(x))), row[metric], s=10, alpha=0.4,
                             color="gray")
    axes.set_xticks(range(len(labels)), labels)
    axes.set_xlabel(x)
    axes.set_ylabel(metric)
    axes.set_title(f"{title}\nmean and min-max over seeds; dots: runs", fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return True
