"""`acomms_run --live`: the run served over the Foxglove WebSocket protocol (a foxglove_bridge).

ROS-free: the runner's topic recorder (`mcap_recording.TopicRecorder`) hands every ROS message of
the run to `LiveView.write` (its sink interface, as `McapSink`) and announces each topic it
subscribes to with `add_topic`; the runner's recorder hands every record to `LiveView.on_record`;
the progress bar calls `LiveView.on_progress`. Channels (all stamped with simulated time):

- every ROS topic of the run (e.g. `/auv/tdma_status`, `/gateway/from_acomms/nav_status`,
  `/acoustic_channel`, `/rosout`): encoding `cdr` as published, schemaEncoding `ros2msg` with the
  full message definition and its dependencies (`mcap_recording.message_definition`, the schema
  run.mcap carries); topics that appear during the run are advertised when they appear;
- `/acomms/<vehicle>/fix` (foxglove.LocationFix, Map panel): the vehicle's position, where its
  modem transmitted and, as time goes on, along its scenario trajectory;
- `/acomms/links` (JSON, JSON schema LINK_SCHEMA): one per reception: time_s, source, receiver,
  outcome, loss_cause, snr_db, receive_level_db, transmission_loss_db, slant_range_m;
- `/acomms/link_lines` (foxglove.GeoJSON, Map panel): that reception as a line from the
  transmitter to the receiver, its fate (received, partial or the summary's loss cause: noise,
  collision, half_duplex; colored as in timeline.png), outcome and SNR as properties;
- `/acomms/transmissions` (JSON, TRANSMISSION_SCHEMA): time_s, vehicle, src, dest, duration_s,
  num_bytes;
- `/acomms/progress` (JSON, PROGRESS_SCHEMA): sim_s, total_s, fraction (at most PROGRESS_HZ per
  wall second); the server's time (Foxglove's `time` capability) follows the simulated clock.

The foxglove-sdk server listens on 127.0.0.1 (a free port); `ws_adapter.SubprotocolAdapter` in
front of it listens on `host`:`port` and accepts clients offering either `foxglove.sdk.v1` or the
classic `foxglove.websocket.v1` (Lichtblick, older Foxglove apps). Connect: Foxglove or Lichtblick,
"Open connection", "Foxglove WebSocket", `ws://localhost:8765` (the port `--live-port` gives).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time

DEFAULT_PORT = 8765
DEFAULT_HOST = "127.0.0.1"
PROGRESS_HZ = 10.0
SYNTHETIC_PREFIX = "/acomms/"

log = logging.getLogger("acomms_run.live")


def _object_schema(title: str, **properties: str | list[str]) -> dict:
    """A JSON schema of an object with these properties (JSON types; a list: one of them)."""
    return {"title": title, "type": "object",
            "properties": {name: {"type": kind} for name, kind in properties.items()}}


LINK_SCHEMA = _object_schema(
    "acomms.Link", time_s="number", source="string", receiver="string", outcome="string",
    loss_cause=["string", "null"], snr_db=["number", "null"],
    receive_level_db=["number", "null"], transmission_loss_db=["number", "null"],
    slant_range_m=["number", "null"])
TRANSMISSION_SCHEMA = _object_schema(
    "acomms.Transmission", time_s="number", vehicle="string", src="integer", dest="integer",
    duration_s="number", num_bytes="integer")
PROGRESS_SCHEMA = _object_schema("acomms.Progress", sim_s="number", total_s="number",
                                 fraction="number")


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def _finite(value: float) -> float | None:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


class LiveView:
    """A Foxglove WebSocket server with the run's channels (see the module docstring).

    `positions_at(sim_s)` -> iterable of `report.Fix` gives the scenario positions at a time
    (moving vehicles between their transmissions); `src_names` maps SRC -> vehicle name."""

    def __init__(self, vehicles, src_names: dict[int, str], positions_at=None,
                 host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, name: str = "acomms_run"):
        """OSError when `host`:`port` cannot be listened on."""
        import foxglove
        from foxglove.channels import GeoJsonChannel, LocationFixChannel
        from foxglove.websocket import Capability

        from acomms_bringup.run.ws_adapter import SubprotocolAdapter

        self._foxglove = foxglove
        self.context = foxglove.Context()
        self.server = foxglove.start_server(name=name, host="127.0.0.1", port=0,
                                            capabilities=[Capability.Time],
                                            context=self.context)
        try:
            self.adapter = SubprotocolAdapter(self.server.port, host, port)
        except OSError:
            self.server.stop()
            raise
        self.host, self.port = host, self.adapter.port
        self.src_names = dict(src_names)
        self.positions_at = positions_at
        self._fix = {v: LocationFixChannel(f"{SYNTHETIC_PREFIX}{v}/fix", context=self.context)
                     for v in vehicles}
        self._links = self._json_channel("links", LINK_SCHEMA)
        self._lines = GeoJsonChannel(f"{SYNTHETIC_PREFIX}link_lines", context=self.context)
        self._transmissions = self._json_channel("transmissions", TRANSMISSION_SCHEMA)
        self._progress = self._json_channel("progress", PROGRESS_SCHEMA)
        self._synthetic = {c.topic(): c for c in (*self._fix.values(), self._links, self._lines,
                                                  self._transmissions, self._progress)}
        self._last: dict[str, tuple[float, float]] = {}  # vehicle -> (lat, lon)
        self._last_progress_wall = 0.0
        self.start_s = 0.0  # ROS time of the run's start (progress counts from there)
        self._lock = threading.Lock()
        self._ros: dict[str, object] = {}  # ROS topic -> its channel
        self.ros_types: dict[str, str] = {}  # ROS topic -> "pkg/msg/Type" served
        self.skipped: dict[str, str] = {}  # ROS topic -> why it is not served
        self.counts: dict[str, int] = {}  # ROS topic -> messages served

    def _json_channel(self, name: str, schema: dict):
        return self._foxglove.Channel(f"{SYNTHETIC_PREFIX}{name}", schema=schema,
                                      context=self.context)

    def subscribed(self, topic: str) -> bool:
        """Whether a client subscribed to that channel (messages on it are then sent)."""
        channel = self._ros.get(topic) or self._synthetic.get(topic)
        return channel is not None and channel.has_sinks()

    # ---- ROS topics (from the topic recorder: the sink interface of mcap_recording) -----------
    def add_topic(self, topic: str, type_name: str):
        """Advertise a ROS topic (cdr, ros2msg schema); its channel, None when not served."""
        from foxglove import Schema

        from acomms_bringup.run.mcap_recording import message_definition

        with self._lock:
            if topic in self._ros or topic in self.skipped:
                return self._ros.get(topic)
            if topic.startswith(SYNTHETIC_PREFIX):
                reason = f"its name is in the live view's own {SYNTHETIC_PREFIX} namespace"
            else:
                try:
                    definition = message_definition(type_name)
                except (ImportError, AttributeError, ValueError, OSError) as exc:
                    reason = f"no message definition for {type_name}: {exc}"
                else:
                    self._ros[topic] = self._foxglove.Channel(
                        topic, message_encoding="cdr", context=self.context,
                        schema=Schema(name=type_name, encoding="ros2msg",
                                      data=definition.encode()))
                    self.ros_types[topic] = type_name
                    return self._ros[topic]
            self.skipped[topic] = reason
        log.warning("%s not served (%s)", topic, reason)
        return None

    def write(self, topic: str, type_name: str, cdr: bytes, time_ns: int) -> None:
        """One ROS message as published (CDR), stamped `time_ns` (simulated time)."""
        channel = self._ros.get(topic) or self.add_topic(topic, type_name)
        if channel is None:
            return
        channel.log(bytes(cdr), log_time=time_ns)
        with self._lock:
            self.counts[topic] = self.counts.get(topic, 0) + 1

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
            from acomms_bringup.run.plots import COLORS

            feature = {"type": "Feature", "properties": {
                "fate": r.fate, "outcome": r.outcome, "snr_db": event["snr_db"],
                "style": {"color": COLORS.get(r.fate, "#999999")}},
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
        now_ns = _ns(self.start_s + sim_s)
        self.server.broadcast_time(now_ns)
        self._progress.log({"sim_s": sim_s, "total_s": total_s,
                            "fraction": min(1.0, sim_s / total_s) if total_s > 0 else 1.0},
                           log_time=now_ns)
        if self.positions_at is not None:
            for fix in self.positions_at(self.start_s + sim_s):
                self.fix(fix)

    def close(self) -> None:
        """Stop the server (it closes its clients' connections properly), then the adapter."""
        self.server.stop()
        self.adapter.stop()
