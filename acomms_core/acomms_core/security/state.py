"""Nonce counters that never repeat, and per-source replay windows (ROS-free).

Sender: one counter per (key, src), persisted in a state file written AHEAD in blocks: before a
counter of a new block is used, the file already holds the block's end (written, fsynced, under
an exclusive file lock, so several processes of one vehicle share it safely). A crash or restart
skips at most one block; no counter is ever handed out twice. In one process every packet codec
with the same key and src shares one allocator (`sender_counter`).

Receiver: per (key, src) the highest counter accepted and a bitmap of the `window` counters below
it. A counter above the highest is accepted; one inside the window is accepted once; one at or
below highest - window is "too old". With a state file the highest counter AND the window's
bitmap are saved before a packet is accepted, so after a restart exactly the recorded counters
count as seen: a packet delayed across the restart, or the slower of two sender processes that
share one counter file, is still accepted once. A packet whose state cannot be saved is refused
("state_failed", counted by the caller) and its counter is not marked seen.

State directory: `ensure_state_dir` refuses (SecurityConfigError) a directory it cannot write, at
configure. A missing counter file for a (key, src) means either a key never used by that src, or a
lost state directory (restarting at 0 would reuse nonces): the sender refuses unless the operator
acknowledges that the key is new (`allow_fresh`, the `security_fresh_key_ids` parameter) or the
state directory marks the key new (`mark_key_new`, done by the key tool `acomms_security_key`).
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
    """Create the directory (0700) and prove it writable; SecurityConfigError with the reason."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        probe = os.path.join(path, f".write_probe.{os.getpid()}.{threading.get_ident()}")
        descriptor = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            os.write(descriptor, b"probe\n")
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
            os.unlink(probe)
    except OSError as exc:
        raise SecurityConfigError(f"security state directory {path} is not writable "
                                  f"({exc.strerror}): nonce counters and replay windows cannot "
                                  "be saved; set security_state_dir to a writable directory") \
            from None
    return path


def new_key_marker(state_dir: str, fingerprint: str) -> str:
    return os.path.join(state_dir, f"tx_{fingerprint}.new")


def mark_key_new(state_dir: str, fingerprint: str) -> str:
    """Record in state_dir that the key was just made: each src may start it once at 0."""
    path = new_key_marker(ensure_state_dir(state_dir), fingerprint)
    if not os.path.exists(path):
        _write_atomically(path, json.dumps({"started_src": []}))
    return path


class CounterStateMissing(SecurityConfigError):
    """No counter state for a key that may have been used: refusing to reuse nonces."""


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    with open(tmp, "w", encoding="utf-8") as stream:
        stream.write(text)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)


class SenderCounter:
    """Hands out counters 0, 1, 2, ... of one (key, src), reserving them in blocks on disk."""

    def __init__(self, path: str, block: int = DEFAULT_BLOCK, new_marker: str | None = None):
        self.path = path
        self.block = block
        self.new_marker = new_marker   # the state dir's "key is new" file (mark_key_new)
        self.src: int | None = None
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

    def check(self, allow_fresh: bool = False) -> None:
        """At configure: reserve the first block (proves the state can be saved), or raise
        CounterExhausted (damaged or used up) or CounterStateMissing (see the module text)."""
        with self._lock:
            if self._end == 0:
                self._reserve(allow_fresh)
            elif (self._read() or 0) >= COUNTER_LIMIT:
                raise CounterExhausted(f"every {COUNTER_BITS}-bit counter of this key was used "
                                       "for this src: rotate the key")

    def _reserve(self, allow_fresh: bool = False) -> None:
        with open(f"{self.path}.lock", "a", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                saved = self._read()
                if saved is None:
                    saved = self._fresh_start(allow_fresh)
                start = max(saved, self._end)   # a file removed at run time: memory goes on
                if start >= COUNTER_LIMIT:
                    raise CounterExhausted(f"every {COUNTER_BITS}-bit counter of this key was "
                                           "used for this src: rotate the key")
                end = min(start + self.block, COUNTER_LIMIT)
                _write_atomically(self.path, f"{end}\n")
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        self._next, self._end = start, end

    def _fresh_start(self, allow_fresh: bool) -> int:
        """0 for a (key, src) without counter state if that is known safe; else refuse."""
        if self._end or allow_fresh:
            return 0
        if self.new_marker is not None and os.path.exists(self.new_marker):
            with open(f"{self.new_marker}.lock", "a", encoding="utf-8") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)    # other srcs' processes update it too
                try:
                    started = self._started_srcs()
                    if started is not None and self.src not in started:
                        _write_atomically(self.new_marker, json.dumps(
                            {"started_src": sorted(started + [self.src])}))
                        return 0
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
        raise CounterStateMissing(
            f"no nonce counter state {self.path} for this key and src {self.src}: if the state "
            "directory was lost, starting again at counter 0 would reuse nonces; use a new key "
            "id (acomms_security_key add KEYFILE), or, only if this key was never used by this "
            "src, list its key id in security_fresh_key_ids for one start")

    def _started_srcs(self) -> list | None:
        """The srcs that started the key since it was marked new; None: not marked new."""
        if self.new_marker is None:
            return None
        try:
            with open(self.new_marker, encoding="utf-8") as stream:
                started = json.load(stream).get("started_src")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, AttributeError):
            started = None
        if not isinstance(started, list):
            raise CounterStateMissing(f"new-key marker {self.new_marker} is damaged; refusing "
                                      "to start a counter at 0")
        return started

    def _read(self) -> int | None:
        """The saved end of the reserved counters; None: no state file."""
        try:
            with open(self.path, encoding="utf-8") as stream:
                text = stream.read().strip()
        except FileNotFoundError:
            return None
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
            counter = _counters[path] = SenderCounter(
                path, new_marker=new_key_marker(state_dir, fingerprint))
            counter.src = src
        return counter


def forget_sender_counters() -> None:
    """Drop the in-process allocators (a restart, as tests simulate it)."""
    with _counters_lock:
        _counters.clear()


class ReplayGuard:
    """Replay windows of one receiver, per (key fingerprint, src); optionally persisted.

    State file (JSON): {"<fingerprint>:<src>": [highest, bitmap]}, bit i of bitmap = counter
    highest - i seen. A file of an older release holds only the highest: everything up to it
    counts as seen."""

    def __init__(self, path: str | None = None, window: int = DEFAULT_WINDOW):
        self.path = path
        self.window = window
        self._mask = (1 << window) - 1
        self._highest: dict = {}    # (fingerprint, src) -> highest counter accepted
        self._seen: dict = {}       # (fingerprint, src) -> bitmap: bit i = highest - i seen
        self._lock = threading.Lock()
        if path is not None:
            self._load()

    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as stream:
                saved = json.load(stream)
            entries = [(name.rpartition(":"), value) for name, value in saved.items()]
            for (fingerprint, _, src), value in entries:
                highest, seen = (value, self._mask) if isinstance(value, int) else value
                self._highest[(fingerprint, int(src))] = int(highest)
                self._seen[(fingerprint, int(src))] = int(seen) & self._mask
        except FileNotFoundError:
            return
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise SecurityConfigError(f"replay state {self.path} is unreadable ({exc}); "
                                      "remove it only if every key was rotated") from None

    def check(self, fingerprint: str, src: int, counter: int) -> str:
        """'ok' (and remember it), 'replayed', 'too_old' or 'state_failed' (the state file
        could not be written: the packet is refused and its counter not marked seen)."""
        key = (fingerprint, src)
        with self._lock:
            highest = self._highest.get(key)
            if highest is None or counter > highest:
                shift = self.window if highest is None else counter - highest
                update = (counter, ((self._seen.get(key, 0) << shift) | 1) & self._mask)
            else:
                age = highest - counter
                if age >= self.window:
                    return "too_old"
                if self._seen[key] >> age & 1:
                    return "replayed"
                update = (highest, self._seen[key] | 1 << age)
            before = (highest, self._seen.get(key))
            self._highest[key], self._seen[key] = update
            try:
                self._save()
            except OSError:
                self._restore(key, before)
                return "state_failed"
            return "ok"

    def _restore(self, key, before) -> None:
        if before[0] is None:
            self._highest.pop(key, None)
            self._seen.pop(key, None)
        else:
            self._highest[key], self._seen[key] = before

    def _save(self) -> None:
        if self.path is not None:
            _write_atomically(self.path, json.dumps(
                {f"{fp}:{src}": [high, self._seen[(fp, src)]]
                 for (fp, src), high in sorted(self._highest.items())}))
