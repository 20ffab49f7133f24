"""Files as messages, ROS-free: reading a file to send, and writing a received one safely.

A received file is written only as a plain name inside the configured directory: names with a
directory part, '..', a leading '.', control characters or over 255 bytes are refused
(`path_refused`), as is a target that resolves outside the directory (a symlinked directory); the
SHA-256 must match (`hash_mismatch`). The bytes go to a temporary file created exclusively
(O_EXCL | O_NOFOLLOW) in the directory, then renamed; an existing file is kept and the new one
gets a numbered name (`name.1`, ...) unless overwrite is set.
"""

from __future__ import annotations

import hashlib
import os

MAX_NAME_BYTES = 255
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
    elif any(ord(c) < 32 or ord(c) == 127 for c in name):
        problem = "holds control characters"
    elif len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        problem = f"is longer than {MAX_NAME_BYTES} bytes"
    if problem:
        raise FileRefused("files_path_refused", f"file name {name!r} {problem}")
    return name


def read_for_sending(path: str, max_bytes: int) -> tuple[str, bytes, bytes]:
    """(name, data, sha256) of a file to send; FileRefused('files_failed') with the reason."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise FileRefused("files_failed", f"{path}: {size} bytes, more than max_file_bytes "
                              f"{max_bytes}")
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise FileRefused("files_failed", f"{path}: {exc.strerror or exc}") from None
    name = os.path.basename(os.path.normpath(path))
    checked_name(name)
    return name, data, hashlib.sha256(data).digest()


def _target(root: str, name: str, overwrite: bool) -> str:
    target = os.path.join(root, name)
    if os.path.dirname(os.path.realpath(target)) != root and not os.path.islink(target):
        raise FileRefused("files_path_refused", f"{name!r} resolves outside {root}")
    if overwrite or not os.path.lexists(target):
        return target
    for number in range(1, 10_000):
        candidate = f"{target}.{number}"
        if not os.path.lexists(candidate):
            return candidate
    raise FileRefused("files_write_failed", f"{name!r}: 10,000 numbered copies exist")


def write_received(directory: str, name: str, data: bytes, sha256: bytes,
                   overwrite: bool = False) -> str:
    """Write a received file into directory; its path, or FileRefused with the counter name."""
    checked_name(name)
    if hashlib.sha256(bytes(data)).digest() != bytes(sha256):
        raise FileRefused("files_hash_mismatch", f"{name!r}: SHA-256 does not match its data "
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
        raise FileRefused("files_write_failed", f"{name!r}: {exc.strerror or exc}") from None
    return target
