"""Packet keys: the key file (permissions checked), key ids, rotation (ROS-free).

Key file (YAML, owned by the user running the nodes, mode 0600 or stricter):

    send_key: 2                      # the key this vehicle seals with (default: the only key,
                                     # or the highest id without accept_until)
    keys:
      - {id: 1, key: 5f0c...(32 hex digits), accept_until: "2026-12-31T00:00:00Z"}
      - {id: 2, key: 9a41...}

- `id`: 0..255, sent in clear in every authenticated packet (1 byte);
- `key`: AES key as hex, 16, 24 or 32 bytes (AES-128/192/256);
- `accept_until` (optional): an old key in rotation; received packets sealed with it are accepted
  until that UTC time (ISO 8601 or Unix seconds), never after; it is never used to send.

Secrets never appear in a repr, an error message or a log line: errors name the file, the key id
and what is wrong, never the value.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import hashlib
import os
import stat

import yaml

KEY_SIZES = (16, 24, 32)


class SecurityConfigError(ValueError):
    """Security settings, key file or state that cannot be used; the message says why."""


@dataclasses.dataclass(frozen=True)
class PacketKey:
    key_id: int
    secret: bytes = dataclasses.field(repr=False)
    accept_until_s: float | None = None   # Unix seconds; None: no end

    @functools.cached_property
    def fingerprint(self) -> str:
        """A short public name of the key (names state files; reveals nothing of the secret)."""
        return hashlib.sha256(b"acomms packet key fingerprint\0" + self.secret).hexdigest()[:12]

    def accepted_at(self, now_s: float) -> bool:
        return self.accept_until_s is None or now_s < self.accept_until_s


@dataclasses.dataclass(frozen=True)
class KeyRing:
    path: str
    keys: dict                  # key id -> PacketKey
    send_key_id: int

    @property
    def send_key(self) -> PacketKey:
        return self.keys[self.send_key_id]


def check_key_file_permissions(path: str) -> None:
    """Refuse a key file others can read or write, or that someone else owns."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise SecurityConfigError(f"key file {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SecurityConfigError(f"key file {path} is not a regular file")
    if info.st_mode & 0o077:
        raise SecurityConfigError(f"key file {path} is accessible by group/others (mode "
                                  f"{stat.S_IMODE(info.st_mode):o}); run: chmod 600 {path}")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise SecurityConfigError(f"key file {path} is owned by uid {info.st_uid}, not by the "
                                  f"user running this node (uid {os.getuid()})")


def _accept_until(value, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            moment = None
    else:
        moment = None
    if moment is None:
        raise SecurityConfigError(f"{where}: accept_until must be an ISO 8601 UTC time or Unix "
                                  f"seconds, got {value!r}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def _parse_key(item, path: str, index: int) -> PacketKey:
    where = f"key file {path}: keys[{index}]"
    if not isinstance(item, dict) or set(item) - {"id", "key", "accept_until"}:
        raise SecurityConfigError(f"{where} must be a mapping of id, key and optional "
                                  "accept_until")
    key_id = item.get("id")
    if not isinstance(key_id, int) or isinstance(key_id, bool) or not 0 <= key_id <= 255:
        raise SecurityConfigError(f"{where}: id must be an integer 0..255")
    where = f"key file {path}: key id {key_id}"
    try:
        secret = bytes.fromhex(str(item.get("key", "")))
    except ValueError:
        secret = b""
    if len(secret) not in KEY_SIZES:
        raise SecurityConfigError(f"{where}: key must be 32, 48 or 64 hex digits (AES-128/192/"
                                  "256); the value is not shown")
    return PacketKey(key_id, secret, _accept_until(item.get("accept_until"), where))


def _default_send_key(keys: dict, path: str) -> int:
    current = [k for k in keys.values() if k.accept_until_s is None]
    if len(keys) == 1:
        return next(iter(keys))
    if not current:
        raise SecurityConfigError(f"key file {path}: every key has accept_until; name the key "
                                  "to send with in send_key")
    return max(k.key_id for k in current)


def load_key_file(path: str) -> KeyRing:
    """Read and check a key file; SecurityConfigError naming the file and the problem."""
    check_key_file_permissions(path)
    try:
        with open(path, encoding="utf-8") as stream:
            data = yaml.safe_load(stream)
    except OSError as exc:
        raise SecurityConfigError(f"key file {path}: {exc.strerror}") from None
    except yaml.YAMLError:
        raise SecurityConfigError(f"key file {path}: not valid YAML") from None
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list) or not data["keys"]:
        raise SecurityConfigError(f"key file {path}: expected a mapping with a non-empty "
                                  "'keys' list")
    unknown = set(data) - {"keys", "send_key"}
    if unknown:
        raise SecurityConfigError(f"key file {path}: unknown keys {sorted(unknown)}")
    keys: dict = {}
    for index, item in enumerate(data["keys"]):
        key = _parse_key(item, path, index)
        if key.key_id in keys:
            raise SecurityConfigError(f"key file {path}: key id {key.key_id} appears twice")
        keys[key.key_id] = key
    send_key_id = data.get("send_key")
    if send_key_id is None:
        send_key_id = _default_send_key(keys, path)
    elif send_key_id not in keys:
        raise SecurityConfigError(f"key file {path}: send_key {send_key_id!r} is not a key id "
                                  f"of the file ({sorted(keys)})")
    return KeyRing(path=path, keys=keys, send_key_id=send_key_id)
