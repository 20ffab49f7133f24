"""Fragmentation parameters (ParameterSpec tables), their pure validator and plain settings.

The queue node declares COMMON + SENDER, the dispatch node COMMON + RECEIVER (read at configure:
change them, then cleanup + configure); both ends of a link must use the same reserved ids.
Defaults and why:
- reserved slot ids 252/253/254 (start/continuation/ack): high ids, rarely used by codec configs;
  a config that uses them together with allow_fragmentation is refused at configure;
- block size 0 = auto: the largest block <= 255 bits that tiles the payload of the last packet
  the MAC asked for (after the 7-byte continuation framing) without waste; 248 bits before any
  request;
- window 512 blocks (~16 KB in flight before an ack is needed);
- ack timeout 120 s (longer than a typical TDMA cycle, so a lost ack costs time, not packets:
  gaps are resent as soon as a later ack shows them; only the tail waits for the timeout);
- session TTL 1800 s without progress (no new block acknowledged / received);
- acks at priority 100 (above ros_acomms' default 10), at most 16 ranges each (70 bytes), each
  sent again up to 3 times, at least 30 s apart, while no newer ack replaces it.
"""

from __future__ import annotations

import dataclasses

from acomms_core.fragmentation.wire import MAX_ACK_RANGES, MAX_BLOCK_SIZE_BITS, MAX_BLOCKS
from acomms_core.ros.parameter_spec import ParameterSpec

COMMON_PARAMETERS = (
    ParameterSpec("fragment_start_id", 252, "Packet-codec message id reserved for fragment "
                  "session starts (same on every vehicle)", minimum=1, maximum=255),
    ParameterSpec("fragment_continuation_id", 253, "Packet-codec message id reserved for "
                  "fragment continuations", minimum=1, maximum=255),
    ParameterSpec("fragment_ack_id", 254, "Packet-codec message id reserved for fragment acks",
                  minimum=1, maximum=255),
    ParameterSpec("fragment_max_blocks", 4096, "Largest fragmented message, in blocks: larger "
                  "messages are refused (sender) and start headers claiming more are dropped "
                  "(receiver)", minimum=1, maximum=MAX_BLOCKS - 1),
    ParameterSpec("fragment_session_ttl_s", 1800.0, "A fragment session without progress (no "
                  "new block acknowledged / received) for this long ends, with a log line",
                  minimum=1.0, maximum=1e7),
)

SENDER_PARAMETERS = (
    ParameterSpec("fragment_block_size_bits", 0, "Block size of new sessions, bits (0: auto, "
                  "tiles the last requested packet)", minimum=0, maximum=MAX_BLOCK_SIZE_BITS),
    ParameterSpec("fragment_above_bytes", 0, "Messages of allow_fragmentation queues longer "
                  "than this are fragmented (0: those that do not fit the last packet the MAC "
                  "asked for, or never fit max_packet_bytes)",
                  minimum=0, maximum=2 ** 31 - 1),
    ParameterSpec("fragment_window_blocks", 512, "Blocks in flight (sent, not yet acknowledged) "
                  "per session before the sender waits for an ack", minimum=1,
                  maximum=MAX_BLOCKS - 1),
    ParameterSpec("fragment_ack_timeout_s", 120.0, "Blocks sent this long ago and still not "
                  "acknowledged are sent again (node clock), s", minimum=0.1, maximum=1e6),
    ParameterSpec("fragment_ack_priority", 100, "Queue priority of fragment acks (higher is "
                  "sent first)", minimum=0, maximum=32767),
    ParameterSpec("fragment_ack_repeats", 3, "Times an ack is sent again (unless a newer ack "
                  "for its session replaces it), against lost acks", minimum=0, maximum=100),
    ParameterSpec("fragment_ack_repeat_s", 30.0, "Least time between repeats of one ack",
                  minimum=0.0, maximum=1e6),
    ParameterSpec("fragment_max_sessions", 16, "Outgoing fragment sessions open at once; more "
                  "messages are refused (counted)", minimum=1, maximum=255),
)

RECEIVER_PARAMETERS = (
    ParameterSpec("src", -1, "This modem's address: fragments for other destinations are not "
                  "reassembled (-1: reassemble every session heard)", minimum=-1, maximum=255),
    ParameterSpec("fragment_max_open_sessions", 8, "Incoming sessions being reassembled at "
                  "once; further start headers are dropped (counted)", minimum=1, maximum=1024),
    ParameterSpec("fragment_max_ack_ranges", 16, "Ranges in one ack (a longer ACK list is cut, "
                  "which only under-reports)", minimum=1, maximum=MAX_ACK_RANGES),
    ParameterSpec("fragment_max_session_bytes", 262144, "Memory one incoming session may hold "
                  "(blocks x block size); larger start headers are dropped (counted)",
                  minimum=64, maximum=2 ** 31 - 1),
)

ID_NAMES = ("fragment_start_id", "fragment_continuation_id", "fragment_ack_id")


def check_fragmentation_values(values: dict) -> str | None:
    """Pure validator of the fragmentation parameters (merged candidate values)."""
    ids = [values[name] for name in ID_NAMES if name in values]
    if len(set(ids)) != len(ids):
        return f"{', '.join(ID_NAMES)} must differ, got {ids}"
    return None


# parameter name -> FragmentationSettings field
FIELD_OF = {"fragment_start_id": "start_id", "fragment_continuation_id": "continuation_id",
            "fragment_ack_id": "ack_id", "fragment_max_blocks": "max_blocks",
            "fragment_session_ttl_s": "session_ttl_s",
            "fragment_block_size_bits": "block_size_bits", "fragment_above_bytes": "above_bytes",
            "fragment_window_blocks": "window_blocks", "fragment_ack_timeout_s": "ack_timeout_s",
            "fragment_ack_priority": "ack_priority", "fragment_ack_repeats": "ack_repeats",
            "fragment_ack_repeat_s": "ack_repeat_s", "fragment_max_sessions": "max_sessions",
            "src": "own_address", "fragment_max_open_sessions": "max_open_sessions",
            "fragment_max_ack_ranges": "max_ack_ranges",
            "fragment_max_session_bytes": "max_session_bytes"}
ALL_PARAMETERS = COMMON_PARAMETERS + SENDER_PARAMETERS + RECEIVER_PARAMETERS


@dataclasses.dataclass(frozen=True)
class FragmentationSettings:
    """Plain values of the parameters; `from_values({})` gives the specs' defaults."""

    start_id: int
    continuation_id: int
    ack_id: int
    max_blocks: int
    session_ttl_s: float
    block_size_bits: int
    above_bytes: int
    window_blocks: int
    ack_timeout_s: float
    ack_priority: int
    ack_repeats: int
    ack_repeat_s: float
    max_sessions: int
    own_address: int
    max_open_sessions: int
    max_ack_ranges: int
    max_session_bytes: int

    @property
    def reserved_ids(self) -> tuple[int, int, int]:
        return (self.start_id, self.continuation_id, self.ack_id)

    @classmethod
    def from_values(cls, values: dict | None = None, **changes) -> FragmentationSettings:
        """Settings from parameter values (missing ones: defaults); `changes` by field name."""
        merged = {spec.name: spec.default for spec in ALL_PARAMETERS}
        merged.update(values or {})
        fields = {FIELD_OF[name]: value for name, value in merged.items() if name in FIELD_OF}
        return cls(**{**fields, **changes})


def fragmenting_packet_codecs(codec_config) -> list:
    """The packet codec configs holding a message codec with allow_fragmentation."""
    return [p for p in codec_config.packet_codecs
            if any(m.allow_fragmentation for m in p.message_codecs)]


def config_problem(codec_config, settings: FragmentationSettings) -> str | None:
    """Why the codec config cannot carry fragments with these reserved ids, or None."""
    for packet in fragmenting_packet_codecs(codec_config):
        ids = packet.packet_codec.message_ids
        for reserved in settings.reserved_ids:
            if reserved not in ids:
                return (f"packet codec '{packet.codec_name}' has allow_fragmentation message "
                        f"codecs but its ids {ids.start}..{ids.stop - 1} cannot hold the "
                        f"reserved fragment id {reserved}")
            if any(m.id == reserved for m in packet.message_codecs):
                return (f"packet codec '{packet.codec_name}': message codec id {reserved} is "
                        "reserved for fragmentation (fragment_start_id / "
                        "fragment_continuation_id / fragment_ack_id); use another id or change "
                        "those parameters")
    return None
