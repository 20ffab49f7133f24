"""What a run did, summarised (ROS-free): per-topic delivery and latency, per-link packet fate.

The embedded runner records plain `Transmission`, `Reception`, `Fix`, `SentMessage` and
`Delivery` records and the queues' ledger (`accounting`) into a `RunRecord` (module `records`,
also importable from here); this module turns them into the summary table, `summary.json`, the
timeline as CSV/JSON, the reconciled accounting (`accounting.csv`: sent = delivered + lost by
cause + expired + dropped + still queued ..., per topic, source and destination), positions
(`positions.csv`) and the PNGs (`plots`: timeline.png, map.png).

Accounting rules:
- A message is *delivered* to a destination when it comes out of that vehicle's
  packet_dispatch_node on the codec's publish_topic; latency = arrival time − publish time on
  the source (simulated seconds). Destinations: the vehicle whose SRC is the codec's
  default_dest, or every other vehicle when no vehicle has that SRC (broadcast). Arrivals at
  other vehicles (overheard) and arrivals that match no sent message are counted separately.
  An arrival matches only messages of the vehicle whose packet carried it, by stamp or content;
  equal messages are taken in order and re-paired with the packets the destination decoded
  (`matching.reconcile`, run by `summarize`); what no evidence decides, and arrivals the
  middleware lost, are `warnings` (`matching_warnings`) rather than invented fates.
- A packet on link src → receiver ends as: received (every frame decoded), partial (some frames
  failed; the messages in good frames are still delivered), or lost for one reason: half duplex
  (the receiver was transmitting), collision (busy: the receiver was locked onto another packet;
  or undetected / all frames failed while another in-band packet overlapped it), noise
  (undetected or all frames failed without interference; fading losses count here).
  Packets whose reception had not been evaluated when the run ended are "in flight". A modem
  driver (real modem or emulator) reports only the packets it decoded (`driver_reception`):
  on its links a packet it did not decode is in flight, never a loss by cause. The CSV
  keeps the modem's outcome (OUTCOMES) and this loss cause side by side (`loss_cause`).
- `messages_sent` counts published messages, `deliveries_expected` the (message, destination)
  pairs that `messages_delivered` and the accounting count.
- Mean SNR is the mean of the receptions' first-segment SINR (dB, as CST.snr_in), half-duplex
  losses excluded (the modem measured nothing).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import pathlib
from collections import Counter

from acomms_bringup.description.scenario import format_start_time
from acomms_bringup.run.accounting import FATES, accounting_rows, message_fates
from acomms_bringup.run.matching import reconcile
from acomms_bringup.run.records import LOSS_CAUSES as LOSS_CAUSES
from acomms_bringup.run.records import OUTCOMES as OUTCOMES
from acomms_bringup.run.records import Delivery as Delivery
from acomms_bringup.run.records import Fix as Fix
from acomms_bringup.run.records import LocalEventRecord as LocalEventRecord
from acomms_bringup.run.records import Reception as Reception
from acomms_bringup.run.records import RunRecord
from acomms_bringup.run.records import SentMessage as SentMessage
from acomms_bringup.run.records import Transmission as Transmission
from acomms_bringup.run.records import driver_reception as driver_reception


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return sum(values) / len(values) if values else None


def matching_warnings(record: RunRecord) -> list[str]:
    """What the delivery matching could not tell apart or never saw (`matching`)."""
    warnings = [f"{label}: {count} arrivals fit messages of more than one traffic entry (equal "
                "content or stamp; the packet's source not known): booked for the first"
                for label, count in sorted(record.ambiguous.items())]
    warnings += [f"{label}: {count} messages with equal content could not be told apart; "
                 "which of them were delivered is a guess (in order)"
                 for label, count in sorted(record.indistinct.items())]
    warnings += [f"{topic}: the middleware lost {count} arrivals before the runner took them"
                 for topic, count in sorted(record.lost_arrivals.items())]
    return warnings


def summarize(record: RunRecord) -> dict:
    """Per-topic and per-link rows plus run facts, as plain data (what summary.json holds).
    Re-pairs the deliveries of equal messages first (`matching.reconcile`)."""
    reconcile(record)
    topics, links = _topic_rows(record), _link_rows(record)
    return {
        "scenario": record.scenario,
        "simulated_seconds": round(record.end_s, 3),
        # ROS time of simulated second 0; every *_s time in the outputs counts from it
        "start_time": format_start_time(record.start_time_s),
        "requested_duration_s": record.duration_s,
        "interrupted": record.interrupted,
        # wall or free run: transmissions, receptions and arrivals while it shut down (not booked)
        "after_end": record.after_end,
        "warp_factor": record.warp_factor,
        "wall_seconds": round(record.wall_seconds, 2),
        **clock_facts(record),
        "messages_sent": len(record.sent),
        "deliveries_expected": sum(len(m.destinations) for m in record.sent),
        "messages_delivered": len(record.deliveries),
        "overheard": dict(record.overheard),
        "unmatched": dict(record.unmatched),
        "duplicates": dict(record.duplicates),
        "topics": topics,
        "links": links,
        "bridges": dict(record.bridges),
        "local_events": [{"vehicle": e.vehicle, "topic": e.topic, "type": e.ros_type,
                          "at_s": round(e.sent_s - record.start_time_s, 3)}
                         for e in record.local_events],
    }


def _topic_rows(record: RunRecord) -> list[dict]:
    """Per (topic, source, destination): sent, delivered, latency and every other fate."""
    topics = []
    fates = {(r["topic"], r["source"], r["destination"]): r for r in accounting_rows(record)}
    sent: Counter = Counter()
    for m in record.sent:
        for destination in set(m.destinations):
            sent[(m.topic, m.source, destination)] += 1
    delivered: dict[tuple, dict] = {}  # per key: seq -> its (last) delivery, in arrival order
    for d in record.deliveries:
        delivered.setdefault((d.topic, d.source, d.destination), {})[d.seq] = d
    for topic, source, destination in sorted(sent):
        key = (topic, source, destination)
        latencies = [d.latency_s for d in delivered.get(key, {}).values()]
        topics.append({
            "topic": topic, "source": source, "destination": destination,
            "sent": sent[key], "delivered": len(latencies),
            # microseconds: ROS times near a real epoch carry ~1e-7 s of float noise
            "mean_latency_s": _round_or_none(_mean(latencies), 6),
            "max_latency_s": round(max(latencies), 6) if latencies else None,
            **{fate: fates[key][fate] for fate in FATES if fate != "delivered"},
        })
    return topics


def _link_rows(record: RunRecord) -> list[dict]:
    """Per (source, receiver): packets sent, received, partial, lost by cause, mean SNR."""
    links = []
    sent = Counter(t.vehicle for t in record.transmissions)
    heard_by: dict[tuple[str, int], list] = {}  # (receiver, SRC) -> its receptions, in order
    for r in record.receptions:
        heard_by.setdefault((r.vehicle, r.src), []).append(r)
    for source in record.vehicles:
        src = record.vehicles[source]
        for receiver in record.vehicles:
            if receiver == source:
                continue
            heard = heard_by.get((receiver, src), [])
            lost = Counter(r.loss_cause for r in heard)
            links.append({
                "source": source, "receiver": receiver, "sent": sent[source],
                "received": sum(r.outcome == "received" for r in heard),
                "partial": sum(r.outcome == "partial" for r in heard),
                "lost_noise": lost["noise"], "lost_collision": lost["collision"],
                "lost_half_duplex": lost["half_duplex"],
                "in_flight": max(0, sent[source] - len(heard)),
                "mean_snr_db": _mean([r.snr_db for r in heard if r.outcome != "half_duplex"]),
            })
    return links


# MAC counters that grow when a node could not keep up with a free-running clock.
FELL_BEHIND_COUNTERS = ("held_packets", "service_timeouts", "late_responses", "dropped_packets")


def fell_behind(counters: dict[str, dict[str, int]]) -> dict[str, str]:
    """node -> 'held_packets 2, service_timeouts 1' for every node with a fell-behind count."""
    found = {}
    for node, counts in sorted(counters.items()):
        text = ", ".join(f"{name} {counts[name]}" for name in FELL_BEHIND_COUNTERS
                         if counts.get(name))
        if text:
            found[node] = text
    return found


def fell_behind_warning(node: str, counts: str) -> str:
    return (f"{node} fell behind the free-running clock ({counts}): results depend on the "
            "machine's load; the deterministic clock (the default) does not fall behind")


WALL_TIME_KEYS = ("wall_seconds", "startup_wall_s", "run_wall_s", "sim_wall_ratio")
# how the run was computed, not what happened: wall times, and the clock steps (a modem wakes at
# each lock decision only while someone hears its reception_start, e.g. run.mcap's recording)
EXECUTION_KEYS = (*WALL_TIME_KEYS, "steps")


def clock_facts(record: RunRecord) -> dict:
    """How time ran: clock mode, throttle, wall times, simulated/wall ratio, steps, warnings."""
    ratio = record.end_s / record.wall_seconds if record.wall_seconds > 0 else None
    return {
        "clock_mode": record.clock_mode,
        "warp": "max" if record.warp is None else record.warp,
        "startup_wall_s": round(record.startup_wall_s, 2),
        "run_wall_s": round(record.wall_seconds, 2),
        "sim_wall_ratio": None if ratio is None else round(ratio, 1),
        "steps": record.steps,
        "warnings": list(record.warnings) + matching_warnings(record),
    }


def _clock_lines(summary: dict) -> list[str]:
    ratio = summary.get("sim_wall_ratio")
    lines = [f"Clock: {summary.get('clock_mode', 'free')}, warp {summary.get('warp')}; start-up "
             f"{summary.get('startup_wall_s', 0.0):.1f} wall s, run "
             f"{summary.get('run_wall_s', 0.0):.1f} wall s, simulated/wall "
             f"{'-' if ratio is None else f'{ratio:g}'}"
             + (f", {summary['steps']} steps" if summary.get("steps") else "")]
    lines += [f"WARNING: {warning}" for warning in summary.get("warnings", [])]
    if summary.get("interrupted"):
        lines.append(f"INTERRUPTED by {summary['interrupted']} after "
                     f"{summary['simulated_seconds']:.1f} of {summary['requested_duration_s']:g} "
                     "simulated s: what ran until then")
    if summary.get("after_end"):
        lines.append(f"{summary['after_end']} transmissions, receptions or arrivals came after "
                     "the end, while the vehicles shut down: not counted here, nor in run.mcap")
    return lines


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


# Accounting columns of the console table: label -> the fates it adds up (accounting.FATES)
ACCOUNTING_COLUMNS = {"lost": ("lost_noise", "lost_collision", "lost_half_duplex",
                               "lost_bad_frame", "not_published"),
                      "in flight": ("in_flight",), "not sent": ("not_transmitted",),
                      "expired": ("expired",), "dropped": ("dropped_queue_full", "refused"),
                      "queued": ("queued_at_end",), "unknown": ("unknown",)}


def _accounting_lines(rows: list[dict]) -> list[str]:
    """Where the undelivered messages are (the columns add up to sent - delivered)."""
    if not rows or "unknown" not in rows[0]:
        return []
    lines = ["  undelivered: " + ", ".join(ACCOUNTING_COLUMNS)
             + " (= sent - delivered; accounting.csv: by cause)",
             f"  {'topic':<24} {'from -> to':<22} " + " ".join(ACCOUNTING_COLUMNS)]
    for row in rows:
        route = f"{row['source']} -> {row['destination']}"
        counts = " ".join(f"{sum(row[f] for f in fates):>{len(label)}}"
                          for label, fates in ACCOUNTING_COLUMNS.items())
        lines.append(f"  {row['topic']:<24} {route:<22} {counts}")
    return lines


def _bridge_lines(bridges: dict) -> list[str]:
    """One row per bridge node and counter (nested counters as a.b)."""
    if not bridges:
        return []
    rows = [(node, counter, value) for node, facts in sorted(bridges.items())
            for counter, value in _flat_items(facts)]
    width = max([len("bridge node")] + [len(node) for node, *_ in rows])
    counter_width = max([len("counter")] + [len(counter) for _, counter, _ in rows])
    lines = ["", "Bridges (acomms_bringup.bridges: what each bridge node counted)",
             f"  {'bridge node':<{width}} {'counter':<{counter_width}} value"]
    lines += [f"  {node:<{width}} {counter:<{counter_width}} {value}"
              for node, counter, value in rows]
    return lines


def format_summary(summary: dict) -> str:
    """The summary tables as plain text."""
    warp = summary.get("warp", summary["warp_factor"])
    lines = [f"Scenario {summary['scenario']}: {summary['simulated_seconds']:.0f} simulated s "
             f"in {summary['wall_seconds']:.1f} wall s (warp {warp})",
             *_clock_lines(summary), ""]
    lines.append("Messages (latency: simulated s from publish on the source to arrival on the "
                 "destination)")
    header = (f"  {'topic':<24} {'from -> to':<22} {'sent':>5} {'delivered':>9} "
              f"{'mean latency':>13} {'max latency':>12}")
    lines.append(header)
    for row in summary["topics"]:
        route = f"{row['source']} -> {row['destination']}"
        lines.append(f"  {row['topic']:<24} {route:<22} {row['sent']:>5} {row['delivered']:>9} "
                     f"{_seconds(row['mean_latency_s']):>13} {_seconds(row['max_latency_s']):>12}")
    if not summary["topics"]:
        lines.append("  (no traffic)")
    lines += _accounting_lines(summary["topics"])
    for label, counts in (("overheard by non-destinations", summary["overheard"]),
                          ("arrivals matching no sent message", summary["unmatched"]),
                          ("published again (duplicates)", summary.get("duplicates", {}))):
        if counts:
            lines.append(f"  {label}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    lines += _local_event_lines(summary.get("local_events") or [])
    lines.append("")
    lines.append("Links (packets; lost = not decoded, by cause)")
    lines.append(f"  {'link':<22} {'sent':>5} {'received':>8} {'partial':>7} {'noise':>6} "
                 f"{'collision':>9} {'half dup':>8} {'in flight':>9} {'mean SNR':>9}")
    for row in summary["links"]:
        route = f"{row['source']} -> {row['receiver']}"
        snr = "-" if row["mean_snr_db"] is None else f"{row['mean_snr_db']:.1f} dB"
        lines.append(f"  {route:<22} {row['sent']:>5} {row['received']:>8} {row['partial']:>7} "
                     f"{row['lost_noise']:>6} {row['lost_collision']:>9} "
                     f"{row['lost_half_duplex']:>8} {row['in_flight']:>9} {snr:>9}")
    lines += _bridge_lines(summary.get("bridges") or {})
    return "\n".join(lines)


def _local_event_lines(events: list[dict]) -> list[str]:
    if not events:
        return []
    lines = ["", "Local events (published on the vehicle's own topic, not sent over the link)",
             f"  {'at':>8} {'vehicle':<12} {'topic':<32} type"]
    return lines + [f"  {_seconds(e['at_s']):>8} {e['vehicle']:<12} {e['topic']:<32} {e['type']}"
                    for e in events]


def _flat_items(facts: dict, prefix: str = "") -> list[tuple[str, object]]:
    """[('a', 1), ('b.c', 2)] for nested dicts (bridge summaries; empty dicts leave nothing)."""
    items = []
    for key, value in facts.items():
        if isinstance(value, dict):
            items += _flat_items(value, f"{prefix}{key}.")
        else:
            items.append((f"{prefix}{key}", value))
    return items


def _round_or_none(value: float | None, digits: int) -> float | None:
    return None if value is None else _round(value, digits)


def _round(value: float, digits: int = 2) -> float | None:
    return round(value, digits) if math.isfinite(value) else None


def timeline_rows(record: RunRecord) -> list[dict]:
    """Every transmission and reception, one row each, in time order (CSV/JSON/PNG data); a
    reception names its sender (vehicle) and when the sender started transmitting (sent_s)."""
    rows = []
    origin = record.start_time_s
    names = {src: name for name, src in reversed(record.vehicles.items())}  # as vehicle_of
    for t in record.transmissions:
        start = t.start_s - origin
        rows.append({"vehicle": t.vehicle, "kind": "tx", "start_s": round(start, 4),
                     "end_s": round(start + t.duration_s, 4), "src": t.src, "dest": t.dest,
                     "outcome": "transmitted", "loss_cause": None, "snr_db": None,
                     "collided": False, "num_bytes": t.num_bytes, "sender": t.vehicle,
                     "sent_s": round(start, 4)})
    for r in record.receptions:
        arrival = r.arrival_s - origin
        rows.append({"vehicle": r.vehicle, "kind": "rx", "start_s": round(arrival, 4),
                     "end_s": round(arrival + r.duration_s, 4), "src": r.src, "dest": r.dest,
                     "outcome": r.outcome, "loss_cause": r.loss_cause, "snr_db": _round(r.snr_db),
                     "collided": r.collided, "num_bytes": None,
                     "receive_level_db": _round(r.receive_level_db), "noise_db": _round(r.noise_db),
                     "transmission_loss_db": _round(r.transmission_loss_db),
                     "slant_range_m": _round(r.slant_range_m, 1), "num_frames": r.num_frames,
                     "num_bad_frames": r.num_bad_frames,
                     "sender": names.get(r.src) or record.vehicle_of(r.src),
                     "sent_s": _round(r.transmit_s - origin, 4)})
    rows.sort(key=lambda row: (row["start_s"], row["vehicle"], row["kind"]))
    return rows


def message_rows(record: RunRecord) -> list[dict]:
    """Every sent message per destination with its arrival time (None: not delivered)."""
    arrivals = {(d.topic, d.source, d.destination, d.seq): d for d in record.deliveries}
    fates = message_fates(record)
    rows = []
    for m in record.sent:
        for destination in m.destinations:
            d = arrivals.get((m.topic, m.source, destination, m.seq))
            rows.append({"topic": m.topic, "source": m.source, "destination": destination,
                         "seq": m.seq, "sent_s": round(m.sent_s - record.start_time_s, 3),
                         "received_s": (None if d is None
                                        else round(d.received_s - record.start_time_s, 3)),
                         "latency_s": None if d is None else round(d.latency_s, 3),
                         "fate": fates[(m.topic, m.source, m.seq, destination)]})
    return rows + [{"topic": e.topic, "source": e.vehicle, "destination": e.vehicle, "seq": 1,
                    "sent_s": round(e.sent_s - record.start_time_s, 3), "fate": "local_event"}
                   for e in record.local_events]


def _write_csv(path: pathlib.Path, rows: list[dict], columns: list[str]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row[k] for k in columns})


TIMELINE_COLUMNS = ["vehicle", "kind", "start_s", "end_s", "src", "dest", "outcome", "loss_cause",
                    "snr_db", "collided", "num_bytes", "receive_level_db", "noise_db",
                    "transmission_loss_db", "slant_range_m", "num_frames", "num_bad_frames",
                    "sender", "sent_s"]
MESSAGE_COLUMNS = ["topic", "source", "destination", "seq", "sent_s", "received_s", "latency_s",
                   "fate"]
ACCOUNTING_CSV_COLUMNS = ["topic", "source", "destination", "sent", *FATES]
POSITION_COLUMNS = ["vehicle", "time_s", "latitude", "longitude", "depth_m"]


OUTPUT_NAMES = ("summary.json", "timeline.csv", "timeline.json", "timeline.png", "messages.csv",
                "accounting.csv", "positions.csv", "map.png")


def write_outputs(record: RunRecord, summary: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """OUTPUT_NAMES in out_dir (created)."""
    from acomms_bringup.run import plots

    out_dir.mkdir(parents=True, exist_ok=True)
    timeline = timeline_rows(record)
    messages = message_rows(record)
    paths = {name: out_dir / name for name in OUTPUT_NAMES}
    paths["summary.json"].write_text(json.dumps(summary, indent=2) + "\n")
    _write_csv(paths["timeline.csv"], timeline, TIMELINE_COLUMNS)
    with paths["timeline.json"].open("w") as handle:  # streamed: no copy of it as one string
        json.dump({"scenario": record.scenario, "vehicles": record.vehicles,
                   "simulated_seconds": record.end_s, "events": timeline, "messages": messages},
                  handle, indent=1)
        handle.write("\n")
    _write_csv(paths["messages.csv"], messages, MESSAGE_COLUMNS)
    _write_csv(paths["accounting.csv"], accounting_rows(record), ACCOUNTING_CSV_COLUMNS)
    _write_csv(paths["positions.csv"], [
        {**dataclasses.asdict(f), "time_s": round(f.time_s - record.start_time_s, 6)}
        for f in record.fixes], POSITION_COLUMNS)
    plots.plot_timeline(record, timeline, paths["timeline.png"])
    plots.plot_map(record, paths["map.png"])
    return list(paths.values())
