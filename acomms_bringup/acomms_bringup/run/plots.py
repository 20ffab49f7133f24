"""The run's pictures (matplotlib, Agg backend; ROS-free): timeline.png and map.png.

- timeline: one band per vehicle, transmissions on top, receptions below colored by what became
  of them in the summary's words (received, partial, lost to noise / collision / half_duplex:
  `report.Reception.loss_cause`); a thin line joins each reception to its sender's transmission
  (the sender is also the CSV's `sender` column); every bar is at least MIN_BAR_PX pixels wide
  whatever the run's length (short packets stay visible); the vehicle's active TDMA slots are
  shaded; receptions that overlapped another packet are outlined in red.
- map: local east/north metres from an origin stated on the map (the vehicles' mean position,
  latitude/longitude); each vehicle's track (positions recorded when it transmitted, plus its
  trajectory), a marker per transmission, one line per reception from the transmitter (where it
  transmitted) to the receiver (where it was at the arrival): decoded packets colored by SNR (red
  → green over the run's SNR range, a color bar), lost ones dashed in their loss cause's color
  with a cross at the receiver; labels placed where they overlap nothing placed before; a scale
  bar; zoomed to the vehicles, and when one vehicle is far from the others (FAR_RATIO) a second
  panel zooms on the near ones. `plot_map` returns a `MapLayout` (origin, panel extents, labels).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import pathlib

from acomms_sim.physics.geodesy import EnuOrigin, geodetic_to_enu

MIN_BAR_PX = 3.0  # narrowest bar drawn, pixels
TIMELINE_WIDTH_IN, DPI = 14.0, 100
# what became of a packet, in the summary's words (report.LOSS_CAUSES for the lost ones)
COLORS = {"transmitted": "#1f77b4", "received": "#2ca02c", "partial": "#bcbd22",
          "noise": "#000000", "collision": "#e377c2", "half_duplex": "#9467bd"}
LABELS = {"transmitted": "transmitted", "received": "received",
          "partial": "partial (some frames lost)", "noise": "lost: noise",
          "collision": "lost: collision", "half_duplex": "lost: half_duplex"}
SLOT_COLOR = "#dde8f5"
MIN_SNR_SPAN_DB = 5.0  # the map's SNR color scale spans at least this much
FAR_RATIO = 5.0  # a second map panel when all tracks span this many times the near ones
MIN_MAP_SPAN_M = 50.0  # the narrowest extent a map panel shows


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def min_bar_width_s(axes, span_s: float) -> float:
    """Seconds that MIN_BAR_PX pixels cover on these axes (drawn over span_s seconds)."""
    width_px = axes.get_window_extent().width
    return MIN_BAR_PX * span_s / max(width_px, 1.0)


def fate(row: dict) -> str:
    """A timeline row's key in COLORS: transmitted, received, partial or its loss cause."""
    if row["kind"] == "tx":
        return "transmitted"
    return row.get("loss_cause") or row["outcome"]


def _bars(axes, rows: list[dict], bases: dict[str, float], min_width: float) -> None:
    """One broken_barh per vehicle band, tx/rx and style (not one artist per packet: a long run
    has hundreds of thousands of receptions)."""
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for row in rows:
        if row["vehicle"] in bases:
            key = (bases[row["vehicle"]], row["kind"] == "tx", COLORS.get(fate(row), "black"),
                   bool(row["collided"]))
            groups.setdefault(key, []).append(
                (row["start_s"], max(row["end_s"] - row["start_s"], min_width)))
    for (base, tx, color, collided), spans in groups.items():
        axes.broken_barh(spans, (base + (0.5 if tx else 0.1), 0.38), facecolors=color,
                         edgecolors="red" if collided else "none",
                         linewidth=1.5 if collided else 0, zorder=2)


def _sender_lines(axes, rows: list[dict], bases: dict[str, float],
                  px_per_s: float) -> list[tuple]:
    """A line from each reception's sender's transmission to the reception, and "from <sender>"
    on the reception's bar where it is wide enough; [(sender, receiver, sent_s, start_s)].
    The lines are one LineCollection."""
    from matplotlib.collections import LineCollection

    drawn, segments, colors = [], [], []
    for row in rows:
        sender = row.get("sender")
        if (row["kind"] != "rx" or sender not in bases or row["vehicle"] not in bases
                or row["sent_s"] is None):   # a driver's reception paired with no transmission
            continue
        segments.append([(row["sent_s"], bases[sender] + 0.5),
                         (row["start_s"], bases[row["vehicle"]] + 0.48)])
        colors.append(COLORS.get(fate(row), "black"))
        if (row["end_s"] - row["start_s"]) * px_per_s >= 6 * (5 + len(sender)):
            axes.text((row["start_s"] + row["end_s"]) / 2, bases[row["vehicle"]] + 0.29,
                      f"from {sender}", ha="center", va="center", fontsize=8, color="white",
                      zorder=3)
        drawn.append((sender, row["vehicle"], row["sent_s"], row["start_s"]))
    if segments:
        axes.add_collection(LineCollection(segments, colors=colors, alpha=0.6, linewidths=0.8,
                                           zorder=1), autolim=False)
    return drawn


def _timeline_legend(axes, rows: list[dict], slots: bool) -> list[str]:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    used = [key for key in COLORS if any(fate(row) == key for row in rows)] or ["transmitted"]
    handles = [Patch(facecolor=COLORS[key], label=LABELS[key]) for key in used]
    if any(row["collided"] for row in rows):
        handles.append(Patch(facecolor="white", edgecolor="red",
                             label="overlapped another packet"))
    if any(row["kind"] == "rx" for row in rows):
        handles.append(Line2D([], [], color="black", alpha=0.6, linewidth=0.8,
                              label="line: from the sender's transmission"))
    if slots:
        handles.append(Patch(facecolor=SLOT_COLOR, label="active TDMA slot"))
    axes.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.15),
                ncol=min(len(handles), 5), fontsize=9, frameon=False)
    return [handle.get_label() for handle in handles]


def plot_timeline(record, rows: list[dict], path: pathlib.Path) -> dict:
    """See the module docstring. Returns {"legend": labels, "senders": [(sender, receiver,
    sent_s, start_s)]} (what was drawn)."""
    pyplot = _pyplot()
    vehicles = list(record.vehicles)
    end = max([record.end_s, 1.0] + [row["end_s"] for row in rows])
    figure, axes = pyplot.subplots(figsize=(TIMELINE_WIDTH_IN, 1.6 + 1.1 * len(vehicles)),
                                   dpi=DPI)
    axes.set_xlim(0, end)
    axes.set_ylim(0, len(vehicles))
    figure.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.3 if len(vehicles) < 3 else 0.22)
    min_width = min_bar_width_s(axes, end)
    bases = {vehicle: (len(vehicles) - 1 - index) * 1.0 for index, vehicle in enumerate(vehicles)}
    origin = record.start_time_s  # slot windows are ROS times, rows seconds from origin
    for vehicle, base in bases.items():
        windows = [(start - origin, stop - start) for start, stop in
                   record.slot_windows.get(vehicle, [])
                   if stop - origin > 0 and start - origin < end]
        if windows:
            axes.broken_barh(windows, (base + 0.02, 0.96), facecolors=SLOT_COLOR, zorder=0)
    _bars(axes, rows, bases, min_width)
    senders = _sender_lines(axes, rows, bases, axes.get_window_extent().width / end)
    axes.set_yticks([base + 0.5 for base in bases.values()])
    axes.set_yticklabels([f"{v} (SRC {record.vehicles[v]})\ntx / rx" for v in vehicles])
    axes.set_xlabel("simulated time, s")
    axes.set_title(f"{record.scenario}: transmissions and receptions per vehicle "
                   "(receptions colored by what became of them, joined to their sender)")
    axes.grid(axis="x", alpha=0.3)
    for index in range(1, len(vehicles)):
        axes.axhline(index, color="black", linewidth=0.5)
    legend = _timeline_legend(axes, rows, bool(record.slot_windows))
    figure.savefig(path)
    pyplot.close(figure)
    return {"legend": legend, "senders": senders}


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


def _link_style(reception) -> dict:
    """The line's style; a decoded link's color is its SNR on the map's scale (color None)."""
    if reception.loss_cause is not None:
        return {"color": COLORS[reception.loss_cause], "linestyle": "--", "alpha": 0.9,
                "linewidth": 1.6, "zorder": 4}
    if not _decoded(reception):
        return {"color": "#999999", "alpha": 0.5, "linewidth": 0.8}
    return {"color": None, "alpha": 0.8, "linewidth": 1.0}


@dataclasses.dataclass
class MapLayout:
    """What plot_map drew: the local frame's origin, each panel's extent (east, north m), the
    vehicles' last positions and their labels' boxes (pixels) - for tests and readers."""

    origin_latitude: float
    origin_longitude: float
    origin_text: str
    panels: dict[str, tuple[tuple[float, float], tuple[float, float]]]  # name -> (xlim, ylim)
    positions: dict[str, tuple[float, float]]
    label_boxes: dict[str, tuple[float, float, float, float]] = dataclasses.field(
        default_factory=dict)  # vehicle -> (x0, y0, x1, y1) pixels, main panel
    lost_links: int = 0


def origin_text(latitude: float, longitude: float) -> str:
    return (f"origin (0, 0) = {abs(latitude):.5f}° {'N' if latitude >= 0 else 'S'}, "
            f"{abs(longitude):.5f}° {'E' if longitude >= 0 else 'W'}")


def _extent(points: list[tuple[float, float]]) -> tuple[tuple[float, float], tuple[float, float]]:
    """(xlim, ylim) around the points, padded by 12 % and at least MIN_MAP_SPAN_M wide."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    span = max(max(xs) - min(xs), max(ys) - min(ys), MIN_MAP_SPAN_M)
    pad = 0.12 * span
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    half_x = max(max(xs) - min(xs), MIN_MAP_SPAN_M) / 2 + pad
    half_y = max(max(ys) - min(ys), MIN_MAP_SPAN_M) / 2 + pad
    return (cx - half_x, cx + half_x), (cy - half_y, cy + half_y)


def _fit_box(axes, xlim, ylim):
    """The limits widened (never narrowed) to the axes' width/height: 1 m east = 1 m north."""
    box = axes.get_position()
    ratio = (box.width * axes.figure.get_figwidth()) / (box.height * axes.figure.get_figheight())
    (x0, x1), (y0, y1) = xlim, ylim
    if (x1 - x0) / (y1 - y0) < ratio:
        grow = ((y1 - y0) * ratio - (x1 - x0)) / 2
        return (x0 - grow, x1 + grow), ylim
    grow = ((x1 - x0) / ratio - (y1 - y0)) / 2
    return xlim, (y0 - grow, y1 + grow)


def _span(points) -> float:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return max(max(xs) - min(xs), max(ys) - min(ys))


def near_vehicles(by_vehicle: dict[str, list[tuple[float, float]]]) -> list[str] | None:
    """The vehicles worth a zoomed panel: None when every track fits one readable panel, else
    the largest group without the vehicles whose removal shrinks the span FAR_RATIO times."""
    names = list(by_vehicle)
    if len(names) < 3:
        return None
    everything = [p for points in by_vehicle.values() for p in points]
    total = _span(everything)
    centres = {n: (sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts))
               for n, pts in by_vehicle.items()}
    mx = sorted(c[0] for c in centres.values())[len(names) // 2]
    my = sorted(c[1] for c in centres.values())[len(names) // 2]
    ordered = sorted(names, key=lambda n: math.hypot(centres[n][0] - mx, centres[n][1] - my))
    for keep in range(len(names) - 1, 1, -1):
        near = ordered[:keep]
        span = max(_span([p for n in near for p in by_vehicle[n]]), MIN_MAP_SPAN_M)
        if total >= FAR_RATIO * span:
            return [n for n in names if n in near]
    return None


def _place_labels(figure, axes, anchors: dict[str, tuple[float, float]]) -> dict:
    """Each vehicle's name next to its last position, at the first of 8 offsets where its box
    overlaps no label placed before (nor leaves the axes); {vehicle: box in pixels}."""
    renderer = figure.canvas.get_renderer()
    offsets = [(6, 6), (6, -14), (-6, 6), (-6, -14), (10, 0), (-10, 0), (0, 12), (0, -18)]
    placed: dict[str, tuple[float, float, float, float]] = {}
    frame = axes.get_window_extent(renderer)
    for vehicle, point in anchors.items():
        for dx, dy in offsets + [(6, 6 + 14 * k) for k in range(1, 8)]:
            text = axes.annotate(vehicle, point, textcoords="offset points", xytext=(dx, dy),
                                 ha="left" if dx >= 0 else "right", fontsize=10,
                                 fontweight="bold", zorder=5)
            box = text.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 \
                and box.y1 <= frame.y1
            if inside and not any(_overlap(box.extents, other) for other in placed.values()):
                placed[vehicle] = tuple(box.extents)
                break
            text.remove()
        else:  # nowhere free: the first offset
            axes.annotate(vehicle, point, textcoords="offset points", xytext=offsets[0],
                          fontsize=10, fontweight="bold", zorder=5)
    return placed


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _draw_links(axes, record, tracks: Tracks, mappable) -> int:
    """One line per reception (transmitter → receiver), as a LineCollection per style (not one
    artist per reception), a cross per lost one; the number of lost links drawn."""
    from matplotlib.collections import LineCollection

    names = {src: name for name, src in reversed(record.vehicles.items())}  # vehicle_of's pick
    styles: dict[tuple, tuple[list, list]] = {}  # style key -> (segments, colors)
    crosses: dict[str, list[tuple[float, float]]] = {}
    for reception in record.receptions:
        start = tracks.at(names.get(reception.src, f"SRC {reception.src}"),
                          reception.transmit_s)
        end = tracks.at(reception.vehicle, reception.arrival_s)
        if start is None or end is None:
            continue
        style = {"zorder": 1, "linestyle": "-", **_link_style(reception)}
        color = style.pop("color")
        segments, colors = styles.setdefault(tuple(sorted(style.items())), ([], []))
        segments.append([start, end])
        colors.append(reception.snr_db if color is None else color)  # SNR: mapped below
        if reception.loss_cause is not None:
            crosses.setdefault(reception.loss_cause, []).append(end)
    for style, (segments, colors) in styles.items():
        style = dict(style)
        if colors and not isinstance(colors[0], str):  # decoded: SNRs, mapped in one call
            colors = mappable.to_rgba(colors)
        axes.add_collection(LineCollection(segments, colors=colors, alpha=style["alpha"],
                                           linewidths=style["linewidth"],
                                           linestyles=style["linestyle"],
                                           zorder=style["zorder"]))
    for cause, points in crosses.items():
        axes.plot([p[0] for p in points], [p[1] for p in points], linestyle="none", marker="x",
                  markersize=9, markeredgewidth=2, color=COLORS[cause], zorder=5)
    return sum(len(points) for points in crosses.values())


def _draw_map(axes, record, tracks: Tracks, mappable, colors: dict[str, str]) -> int:
    """Links, tracks and transmission markers on one panel; the number of lost links drawn."""
    lost = _draw_links(axes, record, tracks, mappable)
    for vehicle, (_times, points) in tracks.by_vehicle.items():
        color = colors[vehicle]
        axes.plot([p[0] for p in points], [p[1] for p in points], linewidth=1.5, zorder=2,
                  color=color, marker="o", markevery=[len(points) - 1])
        sent = [tracks.at(vehicle, t.start_s) for t in record.transmissions
                if t.vehicle == vehicle]
        axes.scatter([p[0] for p in sent if p], [p[1] for p in sent if p], marker="^", s=25,
                     color=color, zorder=3)
    axes.set_xlabel("east, m")
    axes.set_ylabel("north, m")
    axes.grid(alpha=0.25)
    return lost


def _map_legend(axes, record, colors: dict[str, str]) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=color, marker="o", label=vehicle)
               for vehicle, color in colors.items()]
    handles.append(Line2D([], [], color="black", marker="^", linestyle="none",
                          label="transmission"))
    handles.append(Line2D([], [], color="#2ca02c", label="decoded packet (color: SNR)"))
    causes = [c for c in ("noise", "collision", "half_duplex")
              if any(r.loss_cause == c for r in record.receptions)]
    handles += [Line2D([], [], color=COLORS[c], linestyle="--", marker="x", label=LABELS[c])
                for c in causes]
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, -0.1), ncol=4,
                fontsize=8, frameon=False)


def _map_axes(pyplot, near: list[str] | None):
    if near is None:
        figure, axes = pyplot.subplots(figsize=(9, 9), dpi=DPI)
        return figure, {"all vehicles": axes}
    figure, (overview, zoom) = pyplot.subplots(1, 2, figsize=(16, 9), dpi=DPI)
    return figure, {"all vehicles": overview, "zoom: " + ", ".join(near): zoom}


def plot_map(record, path: pathlib.Path) -> MapLayout | None:
    """See the module docstring (an empty map with a note, and None, when no position is
    known)."""
    pyplot = _pyplot()
    if not record.fixes:
        figure, axes = pyplot.subplots(figsize=(9, 8), dpi=DPI)
        axes.set_title(f"{record.scenario}: tracks, transmissions and links")
        axes.text(0.5, 0.5, "no positions recorded", ha="center", transform=axes.transAxes)
        figure.savefig(path)
        pyplot.close(figure)
        return None
    tracks = Tracks(record.fixes)
    points = {vehicle: pts for vehicle, (_times, pts) in tracks.by_vehicle.items()}
    near = near_vehicles(points)
    figure, panels = _map_axes(pyplot, near)
    palette = pyplot.rcParams["axes.prop_cycle"].by_key()["color"]
    colors = {v: palette[i % len(palette)] for i, v in enumerate(points)}
    mappable = _snr_colors(record.receptions)
    text = origin_text(tracks.origin.latitude, tracks.origin.longitude)
    layout = MapLayout(tracks.origin.latitude, tracks.origin.longitude, text, {},
                       {v: pts[-1] for v, pts in points.items()})
    figure.suptitle(f"{record.scenario}: tracks, transmissions and links\n"
                    f"local east/north metres, {text}", fontsize=11)
    figure.subplots_adjust(left=0.08, right=0.9, top=0.88, bottom=0.2, wspace=0.25)
    figure.colorbar(mappable, ax=list(panels.values()), shrink=0.6,
                    label="SNR of decoded links, dB")
    for index, (name, axes) in enumerate(panels.items()):
        lost = _draw_map(axes, record, tracks, mappable, colors)
        layout.lost_links = max(layout.lost_links, lost)
        shown = near if index else list(points)
        xlim, ylim = _fit_box(axes, *_extent([p for v in shown for p in points[v]]))
        axes.set_xlim(*xlim)
        axes.set_ylim(*ylim)
        axes.set_aspect("equal", adjustable="box")
        axes.set_title(name, fontsize=10)
    _map_legend(panels["all vehicles"], record, colors)
    figure.canvas.draw()
    for index, (name, axes) in enumerate(panels.items()):
        x0, x1 = axes.get_xlim()
        y0, y1 = axes.get_ylim()
        layout.panels[name] = ((x0, x1), (y0, y1))
        _scale_bar(axes, x1 - x0)
        anchors = {v: p for v, p in layout.positions.items()
                   if x0 <= p[0] <= x1 and y0 <= p[1] <= y1}
        boxes = _place_labels(figure, axes, anchors)
        if index == 0:
            layout.label_boxes = boxes
    figure.savefig(path)
    pyplot.close(figure)
    return layout
