"""Nonce counters that never repeat, and per-source replay windows (ROS-free).

Sender: one counter per (key, src), persisted in a state file written AHEAD in blocks: before a
counter of a new block is used, the file already holds the block's end (written, fsynced, under
an exclusive file lock, so several processes of one vehicle share it safely). A crash or restart
skips at most one block; no counter is ever handed out twice. In one process every packet codec
with the same key and src shares one allocator (`sender_counter`).

Receiver: per (key, src) the highest counter accepted and a bitmap of the `window` counters below
it. A counter above the highest is accepted; one inside the window is accepted once; one at or
below highest - window is "too old". With a state file the highest counter is saved after every
accepted packet; after a restart everything up to it counts as seen (no replay of packets
recorded before the restart).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading

from acomms_core.security.keys import SecurityConfigError

COUNTER_BITS = 24
COUNTER_LIMIT = 2 ** COUNTER_BITS
DEFAULT_BLOCK = 32
DEFAULT_WINDOW = 64


class CounterExhausted(ValueError):
    """Every counter of a key was used for this src: rotate the key."""


def default_state_dir() -> str:
    """$ROS_HOME/acomms_security (ROS_HOME defaults to ~/.ros)."""
    ros_home = os.environ.get("ROS_HOME") or os.path.join(os.path.expanduser("~"), ".ros")
    return os.path.join(ros_home, "acomms_security")


def ensure_state_dir(path: str) -> str:
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    with open(tmp, "w", encoding="utf-8") as stream:
        stream.write(text)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)


class SenderCounter:
    """Hands out counters 0, 1, 2, ... of one (key, src), reserving them in blocks on disk."""

    def __init__(self, path: str, block: int = DEFAULT_BLOCK):
        self.path = path
        self.block = block
        self._next = 0
        self._end = 0        # first counter not reserved by this object
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            if self._next >= self._end:
                self._reserve()
            value = self._next
            self._next += 1
            return value

    def check(self) -> None:
        """CounterExhausted now (at configure) if the state file is damaged or used up."""
        with self._lock:
            if self._read() >= COUNTER_LIMIT:
                raise CounterExhausted(f"every {COUNTER_BITS}-bit counter of this key was used "
                                       "for this src: rotate the key")

    def _reserve(self) -> None:
        with open(f"{self.path}.lock", "a", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                start = self._read()
                if start >= COUNTER_LIMIT:
                    raise CounterExhausted(f"every {COUNTER_BITS}-bit counter of this key was "
                                           "used for this src: rotate the key")
                end = min(start + self.block, COUNTER_LIMIT)
                _write_atomically(self.path, f"{end}\n")
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        self._next, self._end = start, end

    def _read(self) -> int:
        try:
            with open(self.path, encoding="utf-8") as stream:
                text = stream.read().strip()
        except FileNotFoundError:
            return 0
        if not text.isdigit():
            # never guess a counter: a damaged file must not restart the sequence at 0
            raise CounterExhausted(f"counter state {self.path} is damaged ({text[:20]!r}); "
                                   "rotate the key (or restore the file)")
        return int(text)


_counters: dict = {}
_counters_lock = threading.Lock()


def sender_counter(state_dir: str, fingerprint: str, src: int) -> SenderCounter:
    """The process-wide allocator of (key, src) in state_dir."""
    path = os.path.join(ensure_state_dir(state_dir), f"tx_{fingerprint}_src{src}.counter")
    with _counters_lock:
        counter = _counters.get(path)
        if counter is None:
            counter = _counters[path] = SenderCounter(path)
        return counter


def forget_sender_counters() -> None:
    """Drop the in-process allocators (a restart, as tests simulate it)."""
    with _counters_lock:
        _counters.clear()


class ReplayGuard:
    """Replay windows of one receiver, per (key fingerprint, src); optionally persisted."""

    def __init__(self, path: str | None = None, window: int = DEFAULT_WINDOW):
        self.path = path
        self.window = window
        self._highest: dict = {}    # (fingerprint, src) -> highest counter accepted
        self._seen: dict = {}       # (fingerprint, src) -> bitmap: bit i = highest - i seen
        self._lock = threading.Lock()
        if path is not None:
            self._load()

    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as stream:
                saved = json.load(stream)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise SecurityConfigError(f"replay state {self.path} is unreadable ({exc}); "
                                      "remove it only if every key was rotated") from None
        for name, highest in saved.items():
            fingerprint, _, src = name.rpartition(":")
            self._highest[(fingerprint, int(src))] = int(highest)
            self._seen[(fingerprint, int(src))] = (1 << self.window) - 1  # all seen

    def check(self, fingerprint: str, src: int, counter: int) -> str:
        """'ok' (and remember it), 'replayed' or 'too_old'."""
        key = (fingerprint, src)
        with self._lock:
            highest = self._highest.get(key)
            if highest is None or counter > highest:
                shift = self.window if highest is None else counter - highest
                seen = (self._seen.get(key, 0) << shift) | 1
                self._seen[key] = seen & ((1 << self.window) - 1)
                self._highest[key] = counter
                self._save()
                return "ok"
            age = highest - counter
            if age >= self.window:
                return "too_old"
            if self._seen[key] >> age & 1:
                return "replayed"
            self._seen[key] |= 1 << age
            return "ok"

    def _save(self) -> None:
        if self.path is not None:
            _write_atomically(self.path, json.dumps(
                {f"{fp}:{src}": high for (fp, src), high in sorted(self._highest.items())}))
