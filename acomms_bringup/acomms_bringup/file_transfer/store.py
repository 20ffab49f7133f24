"""Files as messages, ROS-free: reading a file to send, and writing a received one safely.

A file is sent only from inside the configured send directories (`send_directories`; the real
path, symlinks resolved, must lie under one; no hidden file or directory on the way; a regular
file). A received file is written only as a plain name inside the configured directory: names
with a directory part, '..', a leading '.', control characters (C0, DEL, C1), bidirectional
text controls (U+200E/F, U+061C, U+202A-U+202E, U+2066-U+2069: a name that displays as another)
or over `MAX_NAME_BYTES` (241: the temporary `.{name}.{pid}.part` must fit the 255-byte
NAME_MAX) are refused (`path_refused`; the reason shows the name escaped, never raw), as is a
target that resolves outside the directory (a symlinked directory); the
SHA-256 must match (`hash_mismatch`). The bytes go to a temporary file created exclusively
(O_EXCL | O_NOFOLLOW) in the directory, then renamed; an existing file is kept and the new one
gets a numbered name (`name.1`, ...) unless overwrite is set.
"""

from __future__ import annotations

import hashlib
import os
import stat

NAME_MAX = 255                                  # bytes of one file name (Linux filesystems)
_TEMPORARY_EXTRA = len(f"..{2 ** 22}.part")      # '.' + '.' + the largest Linux pid + '.part'
MAX_NAME_BYTES = NAME_MAX - _TEMPORARY_EXTRA     # 241
_BIDI_CONTROLS = frozenset("\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e"
                           "\u2066\u2067\u2068\u2069")
RECEIVE_COUNTERS = ("files_received", "files_path_refused", "files_hash_mismatch",
                    "files_write_failed")


class FileRefused(ValueError):
    """A file that cannot be sent or written; `counter` names why (a counter name)."""

    def __init__(self, counter: str, reason: str):
        super().__init__(reason)
        self.counter = counter


def checked_name(name: str) -> str:
    """The name when it is a plain file name; FileRefused('files_path_refused') otherwise."""
    problem = None
    if not name or name in (".", ".."):
        problem = "is empty or a directory reference"
    elif "/" in name or "\\" in name or os.path.basename(name) != name:
        problem = "has a directory part"
    elif name.startswith("."):
        problem = "starts with '.'"
    elif any(ord(c) < 32 or 127 <= ord(c) <= 159 for c in name):
        problem = "holds control characters"
    elif any(c in _BIDI_CONTROLS for c in name):
        problem = "holds bidirectional text controls"
    elif len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        problem = (f"is longer than {MAX_NAME_BYTES} bytes (its temporary name must fit "
                   f"{NAME_MAX})")
    if problem:
        raise FileRefused("files_path_refused", f"file name {shown(name)} {problem}")
    return name


def shown(name: str, limit: int = 80) -> str:
    """The name for a log line: quoted, every non-ASCII or control character escaped; a long one
    shortened in the middle (a path's file name, at its end, stays readable)."""
    text = ascii(name)
    if len(text) <= limit:
        return text
    head = limit // 3
    return text[:head] + "..." + text[len(text) - (limit - head):]


def sendable_path(path: str, send_directories) -> str:
    """The real path of a file to send when it lies inside a send directory (absolute real
    paths); FileRefused('files_failed') with the reason otherwise."""
    if not send_directories:
        raise FileRefused("files_failed", "send_directories is empty: this node sends no files")
    real = os.path.realpath(path)
    for directory in send_directories:
        if os.path.commonpath([real, directory]) == directory and real != directory:
            hidden = [part for part in os.path.relpath(real, directory).split(os.sep)
                      if part.startswith(".")]
            if hidden:
                raise FileRefused("files_failed", f"{shown(path)}: hidden file or directory "
                                  f"{shown(hidden[0])} is not sent")
            return real
    raise FileRefused("files_failed", f"{shown(path)} is outside send_directories "
                      f"({', '.join(send_directories)})")


def read_for_sending(path: str, max_bytes: int, send_directories) -> tuple[str, bytes, bytes]:
    """(name, data, sha256) of a file to send; FileRefused('files_failed') with the reason."""
    real = sendable_path(path, send_directories)
    name = os.path.basename(os.path.normpath(path))
    try:
        checked_name(name)
    except FileRefused as exc:
        raise FileRefused("files_failed", str(exc)) from None
    try:
        # O_NONBLOCK: a FIFO put there must not block the node; fstat then refuses it
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise FileRefused("files_failed", f"{shown(path)} is not a regular file")
            if info.st_size > max_bytes:
                raise FileRefused("files_failed", f"{shown(path)}: {info.st_size} bytes, more "
                                  f"than max_file_bytes {max_bytes}")
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise FileRefused("files_failed", f"{shown(path)}: {exc.strerror or exc}") from None
    return name, data, hashlib.sha256(data).digest()


def _target(root: str, name: str, overwrite: bool) -> str:
    target = os.path.join(root, name)
    if os.path.dirname(os.path.realpath(target)) != root and not os.path.islink(target):
        raise FileRefused("files_path_refused", f"{shown(name)} resolves outside {root}")
    if overwrite or not os.path.lexists(target):
        return target
    for number in range(1, 10_000):
        candidate = f"{target}.{number}"
        if not os.path.lexists(candidate):
            return candidate
    raise FileRefused("files_write_failed", f"{shown(name)}: 10,000 numbered copies exist")


def write_received(directory: str, name: str, data: bytes, sha256: bytes,
                   overwrite: bool = False) -> str:
    """Write a received file into directory; its path, or FileRefused with the counter name."""
    checked_name(name)
    if hashlib.sha256(bytes(data)).digest() != bytes(sha256):
        raise FileRefused("files_hash_mismatch", f"{shown(name)}: SHA-256 does not match its data "
                          "(not written)")
    root = os.path.realpath(directory)
    if not os.path.isdir(root):
        raise FileRefused("files_write_failed", f"receive_directory {directory!r} is not a "
                          "directory")
    target = _target(root, name, overwrite)
    temporary = os.path.join(root, f".{name}.{os.getpid()}.part")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                     | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(bytes(data))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)   # replaces a symlink itself, never what it points to
    except OSError as exc:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise FileRefused("files_write_failed", f"{shown(name)}: {exc.strerror or exc}") \
            from None
    return target
