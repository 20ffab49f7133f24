"""Where a run's outputs go and what records it while it runs (MCAP, live view).

- `default_out_dir(scenario_name)`: `runs/<scenario>-<YYYYmmdd-HHMMSS>/` (a `-2`, `-3` ... suffix
  when that folder exists already); `acomms_run --out DIR` chooses another.
- `RunOutputs`: a Runner start hook (`Runner.started_hooks`) that, once every group is up, opens
  `<out>/run.mcap` and subscribes a node of its own (`acomms_run_recording`, in the run's
  Context) to every topic (`mcap_recording`), again every RESCAN_S for topics that appeared
  since. That node is spun by its own executor thread, not by the run's stepping: recording adds
  no work to the deterministic clock's steps; messages are stamped with the recorder node's ROS
  time when they come in. With `live_port` it starts the Foxglove WebSocket view (`live_view`,
  on `live_host`) fed with every topic by that node (also without run.mcap; `mcap_exclude` then
  leaves topics out of run.mcap only), with the records by the recorder and with the progress
  bar; its log lines (foxglove-sdk's, the adapter's) are printed above the progress bar
  (`Progress.log_handler`). `close()` (before the runner stops) waits until no message came for
  QUIET_S, finishes the file and stops the server. `finish(record, scenario, start_s)` adds the
  scenario's facts (`run_facts`).
"""

from __future__ import annotations

import datetime
import pathlib
import re
import sys
import threading
import time

from acomms_bringup.run import run_facts
from acomms_bringup.run.mcap_recording import ExcludingSink, McapSink, TeeSink, TopicRecorder

RUNS_DIR = "runs"
MCAP_NAME = "run.mcap"
QUIET_S = 0.3  # close(): wall seconds without a new message before the file is finished
CLOSE_TIMEOUT_S = 5.0
RESCAN_S = 1.0  # wall clock (DDS discovery runs in wall time): how often to look for new topics
LIVE_LOGGERS = ("foxglove", "acomms_run.live")  # printed above the progress bar while live


def default_out_dir(scenario_name: str, base: pathlib.Path | str = RUNS_DIR,
                    now: datetime.datetime | None = None) -> pathlib.Path:
    """runs/<scenario>-<timestamp>, not an existing folder."""
    stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", scenario_name) or "run"
    candidate = pathlib.Path(base) / f"{name}-{stamp}"
    number = 1
    while candidate.exists():
        number += 1
        candidate = pathlib.Path(base) / f"{name}-{stamp}-{number}"
    return candidate


class RunOutputs:
    """MCAP recording and live view of one run (see the module docstring)."""

    def __init__(self, out_dir: pathlib.Path, record_mcap: bool = True,
                 live_port: int | None = None, live_host: str = "127.0.0.1",
                 mcap_exclude: str | None = None):
        self.out_dir = pathlib.Path(out_dir)
        self.mcap_exclude = mcap_exclude  # regex of topics not recorded
        self.record_mcap, self.live_port, self.live_host = record_mcap, live_port, live_host
        self.sink: McapSink | None = None
        self.topics: TopicRecorder | None = None
        self.live = None
        self._node = self._executor = self._thread = None
        self._log_handler = None

    @property
    def mcap_path(self) -> pathlib.Path:
        return self.out_dir / MCAP_NAME

    def __call__(self, runner) -> None:
        """The start hook: every group is up, the traffic has not started."""
        if self.live_port is not None:
            self._start_live(runner)
        if self.record_mcap or self.live is not None:
            self._start_recording(runner)

    def _topic_sink(self):
        """What the topic recorder feeds: run.mcap, the live view or both."""
        sinks = []
        if self.record_mcap:
            self.sink = McapSink(self.mcap_path)
            sinks.append(ExcludingSink(self.sink, self.mcap_exclude)
                         if self.mcap_exclude and self.live is not None else self.sink)
        if self.live is not None:
            sinks.append(self.live)
        return sinks[0] if len(sinks) == 1 else TeeSink(*sinks)

    def _start_recording(self, runner) -> None:
        import rclpy

        from acomms_sim.clock.events_stepper import make_executor

        sink = self._topic_sink()
        self._node = rclpy.create_node("acomms_run_recording", context=runner.context)
        recorder = runner.recorder
        self.topics = TopicRecorder(self._node, sink,
                                    now_ns=lambda: recorder.get_clock().now().nanoseconds,
                                    exclude_pattern=None if self.live is not None
                                    else self.mcap_exclude)
        self.topics.scan()
        # The EventsExecutor where rclpy has it: a Python executor rebuilds a wait set over every
        # recorded topic per message and, on its own thread, slowed a stepped run several times.
        self._executor = make_executor(runner.context)
        self._executor.add_node(self._node)
        self._thread = threading.Thread(target=self._spin, name="acomms_run recording",
                                        daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        executor, topics = self._executor, self.topics
        last_scan = time.monotonic()
        reported = False
        while executor is not None and executor.context.ok() and self._node is not None:
            try:
                executor.spin_once(timeout_sec=0.05)
            except Exception:  # noqa: BLE001 - shutting down (context or executor gone)
                return
            if time.monotonic() - last_scan < RESCAN_S:
                continue
            last_scan = time.monotonic()
            try:
                topics.scan()
            except Exception as exc:  # noqa: BLE001 - the topics found so far are still recorded
                if executor.context.ok() and not reported:
                    reported = True
                    print(f"acomms_run: looking for new topics failed (recording goes on): "
                          f"{exc}", file=sys.stderr)

    def _wait_quiet(self) -> None:
        deadline = time.monotonic() + CLOSE_TIMEOUT_S
        last = -1
        while time.monotonic() < deadline:
            count = sum(self.sink.counts.values())
            if count == last:
                return
            last = count
            time.sleep(QUIET_S)

    def _start_live(self, runner) -> None:
        import logging

        from acomms_bringup.run.live_view import LiveView
        from acomms_bringup.run.run_errors import RunError

        scenario = runner.scenario

        def positions_at(time_s: float):
            return run_facts.positions_at(scenario, time_s - runner.start_s, time_s)

        self._log_handler = runner.progress.log_handler("acomms_run: live view: ")
        for name in LIVE_LOGGERS:
            logging.getLogger(name).addHandler(self._log_handler)
            logging.getLogger(name).propagate = False
        try:
            self.live = LiveView([v.name for v in scenario.vehicles],
                                 {v.src: v.name for v in scenario.vehicles}, positions_at,
                                 host=self.live_host, port=self.live_port)
        except OSError as exc:
            raise RunError(f"--live: cannot listen on {self.live_host}:{self.live_port}: "
                           f"{exc.strerror or exc}") from None
        self.live.start_s = runner.start_s
        print(f"acomms_run: live view (Foxglove WebSocket, subprotocols foxglove.sdk.v1 and "
              f"foxglove.websocket.v1) on ws://{self.live_host}:{self.live.port}",
              file=runner.stream, flush=True)
        for fix in positions_at(runner.start_s):
            self.live.fix(fix)
        with runner.recorder.lock:
            runner.recorder.listeners.append(self.live)
        runner.progress.listeners.append(self.live.on_progress)

    def end_recording(self) -> None:
        """The run has ended though its nodes go on (wall or free clock): record nothing more;
        `close()` still writes what came before."""
        if self.topics is not None:
            self.topics.close()

    def close(self) -> None:
        """Finish the recording and stop the live view (before the runner stops); twice is
        harmless."""
        if self.sink is not None and self._thread is not None:
            self._wait_quiet()
        node, self._node = self._node, None
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._executor is not None:
            self._executor.shutdown(timeout_sec=1.0)
            self._executor = None
        if node is not None:
            self.topics.stop()
            node.destroy_node()
        if self.sink is not None:
            self.sink.close()
        if self.live is not None:
            self.live.close()
            self.live = None
        if self._log_handler is not None:
            import logging

            for name in LIVE_LOGGERS:
                logging.getLogger(name).removeHandler(self._log_handler)
                logging.getLogger(name).propagate = True
            self._log_handler = None

    @staticmethod
    def finish(record, scenario, start_s: float) -> None:
        run_facts.complete_record(record, scenario, start_s)
