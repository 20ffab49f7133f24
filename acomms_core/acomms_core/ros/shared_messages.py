"""Messages taken in the process that published them are handed over, not deserialized again.

At 64 simulated vehicles in one process, every broadcast SimPacket is deserialized by 65
subscribers, and each reception's CST, packet_rx and reception_events by their subscribers:
message construction was a fifth of a run. `publish_shared(publisher, msg)` serializes the
message itself, keeps the message object by its bytes (the last `SHARED_MESSAGES_KEPT` per
type) and publishes the bytes; a `shared_callback` subscription (created with `raw=True`)
looks the bytes it took up and hands the publisher's object to its callback, or deserializes
them when they came from elsewhere (another process, a plain publisher, or evicted).

What a callback sees does not depend on which, provided the published message holds what its
bytes hold: a float32 field a Python float wider than float32 would arrive rounded, so builders
of shared messages round them (`narrowed`). With ACOMMS_CHECK_SHARED_MESSAGES=1 (the test suite
sets it) `publish_shared` deserializes what it published and raises if that differs. When and
in which order callbacks run is unchanged: the subscription is still a ROS subscription, the
executor still takes its messages. The one rule for callbacks: do not change the message given
(subscribers of one publish share it).
"""

from __future__ import annotations

import functools
import os
import struct
import threading

from rclpy.serialization import deserialize_message, serialize_message

SHARED_MESSAGES_KEPT = 512  # per message type; older ones are deserialized if still taken
CHECK_ENV = "ACOMMS_CHECK_SHARED_MESSAGES"
_FLOAT32 = struct.Struct("<f")

_LOCK = threading.Lock()
_KEPT: dict[type, dict[bytes, object]] = {}
_COUNTS = {"shared": 0, "deserialized": 0}


def publish_shared(publisher, msg) -> None:
    """Publish `msg` on `publisher`, keeping it for this process's `shared_callback`s."""
    data = serialize_message(msg)
    if os.environ.get(CHECK_ENV) == "1":
        arrives = deserialize_message(data, type(msg))
        if repr(arrives) != repr(msg):
            raise ValueError(f"{type(msg).__name__} published as {msg!r} arrives as "
                             f"{arrives!r}: a field is wider than its type (see `narrowed`)")
    with _LOCK:
        kept = _KEPT.setdefault(type(msg), {})
        kept[data] = msg
        if len(kept) > SHARED_MESSAGES_KEPT:
            del kept[next(iter(kept))]
    publisher.publish(data)


def shared_callback(msg_type, callback):
    """A raw subscription's callback: `callback(message)` with the message the bytes are."""
    def on_bytes(data: bytes) -> None:
        kept = _KEPT.get(msg_type)
        msg = None if kept is None else kept.get(data)
        if msg is None:
            msg = deserialize_message(data, msg_type)
            _COUNTS["deserialized"] += 1
        else:
            _COUNTS["shared"] += 1
        callback(msg)

    return on_bytes


def shared_counts() -> dict[str, int]:
    """How many taken messages were handed over and how many deserialized (this process)."""
    return dict(_COUNTS)


@functools.cache
def float32_fields(msg_type) -> tuple[str, ...]:
    """The float32 fields of a message type (they hold Python floats until serialized)."""
    return tuple(name for name, kind in msg_type.get_fields_and_field_types().items()
                 if kind == "float")


def narrowed(msg_type, values: dict) -> dict:
    """`values` (field -> value, for msg_type) with its float32 fields rounded as the wire
    rounds them; changed in place."""
    for name in float32_fields(msg_type):
        if name in values:
            values[name] = _FLOAT32.unpack(_FLOAT32.pack(values[name]))[0]
    return values
