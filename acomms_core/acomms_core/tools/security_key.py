"""acomms_security_key: make packet keys and tell this vehicle's counter state they are new.

    acomms_security_key add KEYFILE [--bytes 16|24|32] [--state-dir DIR]
    acomms_security_key mark-new KEYFILE [--key-id N] [--state-dir DIR]

`add` creates KEYFILE (mode 600, its directory 700) with key id 1, or adds a key with the next
free id to an existing file (it becomes the send key; the file is rewritten as plain YAML, so
comments are not kept). Both commands record in the security state directory (default
$ROS_HOME/acomms_security, the default of the nodes' `security_state_dir`) that the key is new:
each src of this vehicle may then start it once at nonce counter 0 without the
`security_fresh_key_ids` acknowledgement (acomms_core.security.state). Run `mark-new` on every
other vehicle that receives a copy of a new key file, before its first start. Never run it for a
key that a vehicle has sent with: after a lost state directory add a new key instead.
Exit 1 with a one-line reason on any problem; the key is never printed.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys

import yaml

from acomms_core.security.keys import KEY_SIZES, SecurityConfigError, load_key_file
from acomms_core.security.node_hooks import state_dir_or_default
from acomms_core.security.state import mark_key_new


def _write_key_file(path: str, data: dict) -> None:
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    descriptor = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        yaml.safe_dump(data, stream, sort_keys=False, default_flow_style=None)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)


def add_key(path: str, num_bytes: int, state_dir: str) -> int:
    """Create the key file or add a key to it; the new key id (marked new in state_dir)."""
    if os.path.exists(path):
        ring = load_key_file(path)
        with open(path, encoding="utf-8") as stream:
            data = yaml.safe_load(stream)
        key_id = max(ring.keys) + 1
        if key_id > 255:
            raise SecurityConfigError(f"key file {path}: key id 255 is used; remove old keys")
        data.pop("send_key", None)     # the new key: the highest id without accept_until
        if any(k.accept_until_s is None and k.key_id != key_id for k in ring.keys.values()):
            print(f"acomms_security_key: older keys of {path} have no accept_until; give them "
                  "one to end their acceptance", file=sys.stderr)
    else:
        data, key_id = {"keys": []}, 1
    data["keys"].append({"id": key_id, "key": secrets.token_hex(num_bytes)})
    _write_key_file(path, data)
    mark_key_new(state_dir, load_key_file(path).keys[key_id].fingerprint)
    return key_id


def mark_new(path: str, key_id: int | None, state_dir: str) -> int:
    ring = load_key_file(path)
    key_id = ring.send_key_id if key_id is None else key_id
    if key_id not in ring.keys:
        raise SecurityConfigError(f"key file {path}: no key id {key_id} ({sorted(ring.keys)})")
    mark_key_new(state_dir, ring.keys[key_id].fingerprint)
    return key_id


def main(argv: list[str] | None = None) -> int:
    """acomms_security_key: make packet keys; mark a key new in this vehicle's state."""
    parser = argparse.ArgumentParser(prog="acomms_security_key", description=main.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("add", help="create the key file or add a key (the send key)")
    add.add_argument("key_file")
    add.add_argument("--bytes", type=int, default=16, choices=KEY_SIZES,
                     help="AES key size in bytes (16: AES-128)")
    new = commands.add_parser("mark-new", help="a copied key file: its key is new here")
    new.add_argument("key_file")
    new.add_argument("--key-id", type=int, default=None, help="default: the send key")
    for command in (add, new):
        command.add_argument("--state-dir", default="",
                             help="security_state_dir of the nodes (default: theirs)")
    arguments = parser.parse_args(argv)
    path = os.path.abspath(os.path.expanduser(arguments.key_file))
    state_dir = state_dir_or_default(arguments.state_dir)
    try:
        if arguments.command == "add":
            key_id = add_key(path, arguments.bytes, state_dir)
        else:
            key_id = mark_new(path, arguments.key_id, state_dir)
    except (SecurityConfigError, OSError, yaml.YAMLError) as exc:
        print(f"acomms_security_key: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    print(f"key id {key_id} of {path} is new in {state_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
