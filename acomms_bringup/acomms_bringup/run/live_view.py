"""`acomms_run --live`: the run served over the Foxglove WebSocket protocol (foxglove-sdk).

ROS-free: the runner's recorder hands every record to `LiveView.on_record` and the progress bar
calls `LiveView.on_progress`. Channels (all stamped with simulated time):

- `/acomms/<vehicle>/fix` (foxglove.LocationFix, Map panel): the vehicle's position, where its
  modem transmitted and, as time goes on, along its scenario trajectory;
- `/acomms/links` (JSON): one per reception: time_s, source, receiver, outcome, loss_cause,
  snr_db, receive_level_db, transmission_loss_db, slant_range_m;
- `/acomms/link_lines` (foxglove.GeoJSON, Map panel): that reception as a line from the
  transmitter to the receiver, outcome and SNR as properties;
- `/acomms/transmissions` (JSON): time_s, vehicle, src, dest, duration_s, num_bytes;
- `/acomms/progress` (JSON): sim_s, total_s, fraction (at most PROGRESS_HZ per wall second).

Connect: open Foxglove (app or https://app.foxglove.dev), "Open connection", "Foxglove
WebSocket", `ws://localhost:8765` (the port `--live-port` gives); add a Map panel (topics
`/acomms/*/fix` and `/acomms/link_lines`), a Raw Messages panel on `/acomms/links`, a Plot of
`/acomms/progress.fraction`.
"""

from __future__ import annotations

import json
import math
import time

DEFAULT_PORT = 8765
PROGRESS_HZ = 10.0


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def _finite(value: float) -> float | None:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


class LiveView:
    """A Foxglove WebSocket server with the run's channels (see the module docstring).

    `positions_at(sim_s)` -> iterable of `report.Fix` gives the scenario positions at a time
    (moving vehicles between their transmissions); `src_names` maps SRC -> vehicle name."""

    def __init__(self, vehicles, src_names: dict[int, str], positions_at=None,
                 host: str = "127.0.0.1", port: int = DEFAULT_PORT, name: str = "acomms_run"):
        import foxglove
        from foxglove.channels import GeoJsonChannel, LocationFixChannel

        self._foxglove = foxglove
        self.context = foxglove.Context()
        self.server = foxglove.start_server(name=name, host=host, port=port,
                                            context=self.context)
        self.port = self.server.port
        self.src_names = dict(src_names)
        self.positions_at = positions_at
        self._fix = {v: LocationFixChannel(f"/acomms/{v}/fix", context=self.context)
                     for v in vehicles}
        self._links = foxglove.Channel("/acomms/links", context=self.context)
        self._lines = GeoJsonChannel("/acomms/link_lines", context=self.context)
        self._transmissions = foxglove.Channel("/acomms/transmissions", context=self.context)
        self._progress = foxglove.Channel("/acomms/progress", context=self.context)
        self._last: dict[str, tuple[float, float]] = {}  # vehicle -> (lat, lon)
        self._last_progress_wall = 0.0
        self.start_s = 0.0  # ROS time of the run's start (progress counts from there)

    # ---- records (from the recorder) ----------------------------------------------------------
    def on_record(self, record) -> None:
        kind = type(record).__name__
        if kind == "Fix":
            self.fix(record)
        elif kind == "Reception":
            self._reception(record)
        elif kind == "Transmission":
            self._transmissions.log({"time_s": record.start_s, "vehicle": record.vehicle,
                                     "src": record.src, "dest": record.dest,
                                     "duration_s": record.duration_s,
                                     "num_bytes": record.num_bytes},
                                    log_time=_ns(record.start_s))

    def fix(self, fix) -> None:
        from foxglove.messages import LocationFix, Timestamp

        channel = self._fix.get(fix.vehicle)
        if channel is None:
            return
        self._last[fix.vehicle] = (fix.latitude, fix.longitude)
        seconds = int(fix.time_s)
        channel.log(LocationFix(timestamp=Timestamp(sec=seconds,
                                                    nsec=int((fix.time_s - seconds) * 1e9)),
                                frame_id=fix.vehicle, latitude=fix.latitude,
                                longitude=fix.longitude, altitude=-fix.depth_m),
                    log_time=_ns(fix.time_s))

    def _reception(self, r) -> None:
        source = self.src_names.get(r.src, f"SRC {r.src}")
        event = {"time_s": r.arrival_s, "source": source, "receiver": r.vehicle,
                 "outcome": r.outcome, "loss_cause": r.loss_cause, "snr_db": _finite(r.snr_db),
                 "receive_level_db": _finite(r.receive_level_db),
                 "transmission_loss_db": _finite(r.transmission_loss_db),
                 "slant_range_m": _finite(r.slant_range_m)}
        self._links.log(event, log_time=_ns(r.arrival_s))
        if source in self._last and r.vehicle in self._last:
            from foxglove.messages import GeoJson

            (lat0, lon0), (lat1, lon1) = self._last[source], self._last[r.vehicle]
            feature = {"type": "Feature", "properties": {
                "outcome": r.outcome, "snr_db": event["snr_db"],
                "style": {"color": "#2ca02c" if r.loss_cause is None else "#999999"}},
                "geometry": {"type": "LineString",
                             "coordinates": [[lon0, lat0], [lon1, lat1]]}}
            self._lines.log(GeoJson(geojson=json.dumps(feature)), log_time=_ns(r.arrival_s))

    # ---- progress (from the progress bar) -----------------------------------------------------
    def on_progress(self, sim_s: float, total_s: float) -> None:
        now = time.monotonic()
        final = sim_s >= total_s
        if not final and now - self._last_progress_wall < 1.0 / PROGRESS_HZ:
            return
        self._last_progress_wall = now
        self._progress.log({"sim_s": sim_s, "total_s": total_s,
                            "fraction": min(1.0, sim_s / total_s) if total_s > 0 else 1.0},
                           log_time=_ns(self.start_s + sim_s))
        if self.positions_at is not None:
            for fix in self.positions_at(self.start_s + sim_s):
                self.fix(fix)

    def close(self) -> None:
        self.server.stop()
