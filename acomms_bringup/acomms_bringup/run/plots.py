"""The run's pictures (matplotlib, Agg backend; ROS-free): timeline.png and map.png.

- timeline: one band per vehicle, transmissions on top, receptions below colored by the modem's
  outcome (the legend uses the CSV's `outcome` values); every bar is at least MIN_BAR_PX pixels
  wide whatever the run's length (short packets stay visible); the vehicle's active TDMA slots
  are shaded; receptions that overlapped another packet are outlined in red.
- map: local east/north metres around the vehicles' mean position; each vehicle's track
  (positions recorded when it transmitted, plus its trajectory), a marker per transmission, one
  line per reception from the transmitter (where it transmitted) to the receiver (where it was
  at the arrival), colored by SNR for decoded packets (red → green over the run's SNR range, a
  color bar), grey dashed for lost ones; a scale bar.
"""

from __future__ import annotations

import bisect
import math
import pathlib

from acomms_sim.physics.geodesy import EnuOrigin, geodetic_to_enu

MIN_BAR_PX = 3.0  # narrowest bar drawn, pixels
TIMELINE_WIDTH_IN, DPI = 14.0, 100
COLORS = {"transmitted": "#1f77b4", "received": "#2ca02c", "partial": "#bcbd22",
          "frame_errors": "#ff7f0e", "undetected": "#7f7f7f", "half_duplex": "#9467bd",
          "busy": "#d62728"}
SLOT_COLOR = "#dde8f5"
MIN_SNR_SPAN_DB = 5.0  # the map's SNR color scale spans at least this much


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def min_bar_width_s(axes, span_s: float) -> float:
    """Seconds that MIN_BAR_PX pixels cover on these axes (drawn over span_s seconds)."""
    width_px = axes.get_window_extent().width
    return MIN_BAR_PX * span_s / max(width_px, 1.0)


def plot_timeline(record, rows: list[dict], path: pathlib.Path) -> None:
    """See the module docstring."""
    pyplot = _pyplot()
    from matplotlib.patches import Patch

    vehicles = list(record.vehicles)
    end = max([record.end_s, 1.0] + [row["end_s"] for row in rows])
    figure, axes = pyplot.subplots(figsize=(TIMELINE_WIDTH_IN, 1.2 + 1.1 * len(vehicles)),
                                   dpi=DPI)
    axes.set_xlim(0, end)
    axes.set_ylim(0, len(vehicles))
    figure.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.3 if len(vehicles) < 3 else 0.2)
    min_width = min_bar_width_s(axes, end)
    for index, vehicle in enumerate(vehicles):
        base = (len(vehicles) - 1 - index) * 1.0
        origin = record.start_time_s  # slot windows are ROS times, rows seconds from origin
        windows = [(start - origin, stop - start) for start, stop in
                   record.slot_windows.get(vehicle, [])
                   if stop - origin > 0 and start - origin < end]
        if windows:
            axes.broken_barh(windows, (base + 0.02, 0.96), facecolors=SLOT_COLOR, zorder=0)
        for row in rows:
            if row["vehicle"] != vehicle:
                continue
            tx = row["kind"] == "tx"
            axes.broken_barh([(row["start_s"], max(row["end_s"] - row["start_s"], min_width))],
                             (base + (0.5 if tx else 0.1), 0.38),
                             facecolors=COLORS.get(row["outcome"], "black"),
                             edgecolors="red" if row["collided"] else "none",
                             linewidth=1.5 if row["collided"] else 0, zorder=2)
    axes.set_yticks([(len(vehicles) - 1 - i) + 0.5 for i in range(len(vehicles))])
    axes.set_yticklabels([f"{v} (SRC {record.vehicles[v]})\ntx / rx" for v in vehicles])
    axes.set_xlabel("simulated time, s")
    axes.set_title(f"{record.scenario}: transmissions and receptions per vehicle")
    axes.grid(axis="x", alpha=0.3)
    for index in range(1, len(vehicles)):
        axes.axhline(index, color="black", linewidth=0.5)
    used = [o for o in COLORS if any(row["outcome"] == o for row in rows)] or ["transmitted"]
    handles = [Patch(facecolor=COLORS[o], label=o) for o in used]
    handles.append(Patch(facecolor="white", edgecolor="red", label="collided"))
    if record.slot_windows:
        handles.append(Patch(facecolor=SLOT_COLOR, label="active TDMA slot"))
    axes.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.15),
                ncol=len(handles), fontsize=9, frameon=False)
    figure.savefig(path)
    pyplot.close(figure)


class Tracks:
    """Each vehicle's fixes in time order, in local ENU metres around their mean position."""

    def __init__(self, fixes):
        fixes = sorted(fixes, key=lambda f: f.time_s)
        self.origin = EnuOrigin(sum(f.latitude for f in fixes) / len(fixes),
                                sum(f.longitude for f in fixes) / len(fixes), 0.0)
        self.by_vehicle: dict[str, tuple[list[float], list[tuple[float, float]]]] = {}
        for fix in fixes:
            times, points = self.by_vehicle.setdefault(fix.vehicle, ([], []))
            times.append(fix.time_s)
            points.append(self.xy(fix.latitude, fix.longitude))

    def xy(self, latitude: float, longitude: float) -> tuple[float, float]:
        east, north, _ = geodetic_to_enu(latitude, longitude, 0.0, self.origin)
        return east, north

    def at(self, vehicle: str, time_s: float) -> tuple[float, float] | None:
        """The vehicle's position at time_s (linear between fixes), None when unknown."""
        if vehicle not in self.by_vehicle:
            return None
        times, points = self.by_vehicle[vehicle]
        i = bisect.bisect_left(times, time_s)
        if i <= 0:
            return points[0]
        if i >= len(times):
            return points[-1]
        t0, t1 = times[i - 1], times[i]
        w = 0.0 if t1 == t0 else (time_s - t0) / (t1 - t0)
        (x0, y0), (x1, y1) = points[i - 1], points[i]
        return x0 + w * (x1 - x0), y0 + w * (y1 - y0)


def _scale_bar(axes, span_m: float) -> None:
    """A bar of a round length (1, 2 or 5 × 10^n m) about a fifth of the plot's width."""
    target = max(span_m / 5.0, 1.0)
    exponent = 10 ** math.floor(math.log10(target))
    length = max(m * exponent for m in (1, 2, 5) if m * exponent <= target)
    x0, x1 = axes.get_xlim()
    y0, y1 = axes.get_ylim()
    left, bottom = x0 + 0.05 * (x1 - x0), y0 + 0.05 * (y1 - y0)
    axes.plot([left, left + length], [bottom, bottom], color="black", linewidth=3)
    label = f"{length / 1000:g} km" if length >= 1000 else f"{length:g} m"
    axes.text(left + length / 2, bottom + 0.02 * (y1 - y0), label, ha="center")


def _decoded(reception) -> bool:
    return reception.loss_cause is None and math.isfinite(reception.snr_db)


def _snr_colors(receptions):
    """A ScalarMappable from red to green over the decoded receptions' SNR range."""
    from matplotlib import cm, colors

    snrs = [r.snr_db for r in receptions if _decoded(r)] or [0.0]
    low = min(snrs)
    high = max(max(snrs), low + MIN_SNR_SPAN_DB)
    return cm.ScalarMappable(colors.Normalize(low, high), "RdYlGn")


def _link_style(reception, mappable) -> dict:
    if not _decoded(reception):
        return {"color": "#999999", "linestyle": "--", "alpha": 0.5, "linewidth": 0.8}
    return {"color": mappable.to_rgba(reception.snr_db), "alpha": 0.8, "linewidth": 1.0}


def plot_map(record, path: pathlib.Path) -> None:
    """See the module docstring (an empty map with a note when no position is known)."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(9, 8), dpi=DPI)
    axes.set_title(f"{record.scenario}: tracks, transmissions and links")
    if not record.fixes:
        axes.text(0.5, 0.5, "no positions recorded", ha="center", transform=axes.transAxes)
        figure.savefig(path)
        pyplot.close(figure)
        return
    tracks = Tracks(record.fixes)
    mappable = _snr_colors(record.receptions)
    for reception in record.receptions:
        start = tracks.at(record.vehicle_of(reception.src), reception.transmit_s)
        end = tracks.at(reception.vehicle, reception.arrival_s)
        if start is not None and end is not None:
            axes.plot([start[0], end[0]], [start[1], end[1]], zorder=1,
                      **_link_style(reception, mappable))
    for vehicle, (_times, points) in tracks.by_vehicle.items():
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        line, = axes.plot(xs, ys, linewidth=1.5, label=vehicle, zorder=2, marker="o",
                          markevery=[len(xs) - 1])
        sent = [tracks.at(vehicle, t.start_s) for t in record.transmissions
                if t.vehicle == vehicle]
        axes.scatter([p[0] for p in sent if p], [p[1] for p in sent if p], marker="^", s=25,
                     color=line.get_color(), zorder=3)
        axes.annotate(vehicle, points[-1], textcoords="offset points", xytext=(5, 5))
    axes.set_aspect("equal", adjustable="datalim")
    axes.margins(0.15)
    axes.set_xlabel("east, m")
    axes.set_ylabel("north, m")
    axes.legend(title="tracks (● end, ▲ transmissions)", loc="best", fontsize=8)
    figure.colorbar(mappable, ax=axes, shrink=0.6, label="SNR of decoded links, dB")
    axes.text(0.01, -0.1, "grey dashed links: lost", transform=axes.transAxes, fontsize=8)
    figure.canvas.draw()
    x0, x1 = axes.get_xlim()
    _scale_bar(axes, x1 - x0)
    figure.savefig(path)
    pyplot.close(figure)
