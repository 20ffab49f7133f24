"""The runner's progress bar, in simulated seconds (plain text; no ROS).

`note(text)` prints a line above the bar (on a terminal: the bar's line is cleared, the text
written, the bar drawn again), `log_handler(prefix)` is a logging.Handler that does that for log
records (the live view's foxglove-sdk and adapter loggers), so that they do not break the bar.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import TextIO

BAR_WIDTH = 30
TTY_REDRAW_S = 0.25  # wall seconds between redraws on a terminal
PLAIN_STEPS = 10  # lines per run when the stream is not a terminal


class Progress:
    """A progress bar in simulated seconds: carriage-return updates on a terminal, a plain line
    every 10 % otherwise (logs, CI)."""

    def __init__(self, stream: TextIO, total_s: float, enabled: bool = True):
        self.stream, self.total_s, self.enabled = stream, total_s, enabled
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self._last_bucket = -1
        self._last_draw = 0.0
        self._bar = ""  # the bar as last drawn on the terminal ("" when none is on screen)
        self._lock = threading.Lock()  # log lines come from other threads
        self.listeners: list = []  # callables(sim_s, total_s), every update (the live view)

    def line(self, sim_s: float, wall_s: float) -> str:
        fraction = min(1.0, max(0.0, sim_s / self.total_s))
        bar = "#" * int(fraction * BAR_WIDTH)
        rate = sim_s / wall_s if wall_s > 0 else 0.0
        return (f"[{bar:<{BAR_WIDTH}}] {sim_s:6.0f}/{self.total_s:.0f} simulated s  "
                f"{wall_s:5.1f} wall s  x{rate:.1f}")

    def update(self, sim_s: float, wall_s: float, final: bool = False) -> None:
        for listener in self.listeners:
            listener(sim_s, self.total_s)
        if not self.enabled:
            return
        if self.tty:
            now = time.monotonic()
            if final or now - self._last_draw >= TTY_REDRAW_S:
                self._last_draw = now
                with self._lock:
                    self._bar = "" if final else self.line(sim_s, wall_s)
                    self.stream.write("\r" + self.line(sim_s, wall_s) + ("\n" if final else ""))
                    self.stream.flush()
            return
        bucket = int(min(1.0, sim_s / self.total_s) * PLAIN_STEPS)
        if bucket > self._last_bucket or final:
            self._last_bucket = bucket
            self.stream.write(self.line(sim_s, wall_s) + "\n")
            self.stream.flush()

    def note(self, text: str, err: TextIO | None = None) -> None:
        """Print `text` (one line, to `err`, default stderr) above the bar."""
        err = err or sys.stderr
        with self._lock:
            if self._bar:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            err.write(text.rstrip("\n") + "\n")
            err.flush()
            if self._bar:
                self.stream.write(self._bar)
                self.stream.flush()

    def log_handler(self, prefix: str = "", level: int = logging.WARNING) -> logging.Handler:
        """A logging.Handler that prints each record with `note` (prefix + message)."""
        return _NoteHandler(self, prefix, level)


class _NoteHandler(logging.Handler):
    def __init__(self, progress: Progress, prefix: str, level: int):
        super().__init__(level)
        self.progress, self.prefix = progress, prefix

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.progress.note(self.prefix + record.getMessage())
        except Exception:  # noqa: BLE001 - logging must never raise into the caller
            self.handleError(record)
