"""Outputs a reader understands at a glance (ROS-free): headed console blocks, one vocabulary of
loss causes in the timeline, a map zoomed to the vehicles that states its origin and shows lost
packets."""

from __future__ import annotations

import math

from acomms_bringup.run import plots, report
from acomms_sim.physics.geodesy import offset_position

ORIGIN = (41.5, -70.6)


def _fix(vehicle: str, time_s: float, north_m: float, east_m: float) -> report.Fix:
    latitude, longitude = offset_position(*ORIGIN, north_m, east_m)
    return report.Fix(vehicle, time_s, latitude, longitude, 10.0)


def _record(far_m: float = 0.0) -> report.RunRecord:
    """a sends to b and c (c far away when far_m > 0): received, partial, lost to noise,
    collision and half duplex."""
    record = report.RunRecord("readable", {"a": 1, "b": 2, "c": 3}, duration_s=100.0,
                              warp_factor=10.0, wall_seconds=10.0, end_s=100.0)
    record.transmissions += [report.Transmission("a", 1, 2, t, 3.0, 40) for t in (0, 20, 40, 60)]
    rx = report.Reception
    record.receptions += [
        rx("b", 1, 2, 0, 1, 3, "received", 20.0, False),
        rx("b", 1, 2, 20, 21, 3, "partial", 10.0, False),
        rx("b", 1, 2, 40, 41, 3, "undetected", -15.0, True),
        rx("c", 1, 2, 0, 2, 3, "frame_errors", 2.0, False),
        rx("c", 1, 2, 20, 22, 3, "half_duplex", math.nan, False),
        rx("c", 1, 2, 40, 42, 3, "busy", 30.0, False),
    ]
    record.sent += [report.SentMessage("nav", "a", seq, 10.0 * seq, ("b", "c")) for seq in (1, 2)]
    record.deliveries += [report.Delivery("nav", "a", "b", 1, 10.0, 14.0)]
    c_east = far_m or 400.0
    for t in (0.0, 50.0, 100.0):
        record.fixes += [_fix("a", t, 0.0, t), _fix("b", t, 30.0, 200.0 + t),
                         _fix("c", t, -60.0, c_east)]
    return record


def _block(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    return lines[start:]


def test_every_console_block_has_column_headers():
    record = _record()
    record.bridges = {"/b/op": {"received": {"powerbuoy_data": 3}, "pump": {}, "result": 0}}
    text = report.format_summary(report.summarize(record))
    lines = text.splitlines()
    undelivered = next(i for i, line in enumerate(lines) if "undelivered:" in line)
    header = lines[undelivered + 1].split()
    assert header[:4] == ["topic", "from", "->", "to"]
    assert " ".join(header[4:]) == " ".join(report.ACCOUNTING_COLUMNS)
    row = lines[undelivered + 2]
    assert row.split()[:4] == ["nav", "a", "->", "b"]
    # each count sits under its header: right-aligned in the label's width
    lost_end = lines[undelivered + 1].index("lost") + len("lost")
    assert row[lost_end - 1] != " " and row[lost_end] == " "
    links = _block(text, "Links")
    assert links[1].split()[:3] == ["link", "sent", "received"]
    bridges = _block(text, "Bridges")
    assert bridges[1].split() == ["bridge", "node", "counter", "value"]
    assert bridges[2].split() == ["/b/op", "received.powerbuoy_data", "3"]
    assert bridges[3].split() == ["/b/op", "result", "0"]
    topics = _block(text, "Messages")
    assert "topic" in topics[1] and "delivered" in topics[1]


def test_timeline_uses_the_summary_loss_causes_and_marks_senders(tmp_path):
    record = _record()
    rows = report.timeline_rows(record)
    drawn = plots.plot_timeline(record, rows, tmp_path / "timeline.png")
    assert (tmp_path / "timeline.png").stat().st_size > 0
    lost = {label for label in drawn["legend"] if label.startswith("lost: ")}
    assert lost == {f"lost: {cause}" for cause in report.LOSS_CAUSES}
    assert not {"undetected", "busy", "frame_errors"} & set(drawn["legend"])
    # every reception joined to its sender's transmission (when it was sent, who sent it)
    receptions = [row for row in rows if row["kind"] == "rx"]
    assert sorted(drawn["senders"]) == sorted(
        (row["sender"], row["vehicle"], row["sent_s"], row["start_s"]) for row in receptions)
    assert {row["sender"] for row in receptions} == {"a"}
    assert {row["sent_s"] for row in receptions} == {0.0, 20.0, 40.0}


def _inside(point, panel) -> bool:
    (x0, x1), (y0, y1) = panel
    return x0 <= point[0] <= x1 and y0 <= point[1] <= y1


def test_map_zooms_to_the_vehicles_and_states_its_origin(tmp_path):
    record = _record()
    layout = plots.plot_map(record, tmp_path / "map.png")
    assert list(layout.panels) == ["all vehicles"]  # nothing far away: one panel
    (x0, x1), (y0, y1) = panel = layout.panels["all vehicles"]
    assert all(_inside(p, panel) for p in layout.positions.values())
    # zoomed: the tracks span 400 m east, the panel not much more
    assert x1 - x0 < 2 * 400 and y1 - y0 < 2 * 400
    latitudes = [f.latitude for f in record.fixes]
    assert layout.origin_latitude == sum(latitudes) / len(latitudes)
    assert f"{layout.origin_latitude:.5f}° N" in layout.origin_text
    assert f"{abs(layout.origin_longitude):.5f}° W" in layout.origin_text
    assert layout.lost_links == 4  # collision at b; noise, half duplex, collision (busy) at c
    boxes = list(layout.label_boxes.values())
    assert len(boxes) == 3
    assert not any(plots._overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_map_with_a_far_vehicle_gets_a_zoomed_panel(tmp_path):
    layout = plots.plot_map(_record(far_m=20000.0), tmp_path / "map.png")
    assert list(layout.panels) == ["all vehicles", "zoom: a, b"]
    assert all(_inside(p, layout.panels["all vehicles"]) for p in layout.positions.values())
    zoom = layout.panels["zoom: a, b"]
    assert _inside(layout.positions["a"], zoom) and _inside(layout.positions["b"], zoom)
    assert not _inside(layout.positions["c"], zoom)


def test_labels_of_vehicles_at_one_place_do_not_overlap(tmp_path):
    record = _record()
    record.fixes = [_fix(v, 0.0, 0.0, 0.0) for v in ("a", "b", "c")]
    layout = plots.plot_map(record, tmp_path / "map.png")
    boxes = list(layout.label_boxes.values())
    assert len(boxes) == 3
    assert not any(plots._overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_one_vocabulary_of_fates_for_summary_timeline_and_live_view():
    """Every modem outcome maps to one fate word; the lost ones are the summary's causes, and
    the timeline (and the live view, which colors by plots.COLORS) has a color for each."""
    fates = {r.outcome: r.fate for r in _record().receptions}
    assert fates == {"received": "received", "partial": "partial", "undetected": "collision",
                     "frame_errors": "noise", "half_duplex": "half_duplex", "busy": "collision"}
    assert set(report.LOSS_CAUSES) | {"received", "partial"} <= set(plots.COLORS)
    rows = [row for row in report.timeline_rows(_record()) if row["kind"] == "rx"]
    assert sorted(plots.fate(row) for row in rows) == sorted(fates.values())
