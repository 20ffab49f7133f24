"""SecuredPacketCodec: any packet codec wrapped in the authenticated format (ROS-free).

The codec YAML turns it on per packet codec, with the key file path and the mode only (keys never
live in the codec YAML):

    - codec_name: commands
      packet_codec: ros
      miniframe_header: [0xa5]       # sent in clear; tells this codec's packets apart
      security:
        key_file: fleet.keys         # relative to this YAML; mode 0600, see keys.py
        mode: authenticate           # authenticate (integrity) | encrypt (integrity + secrecy)
        tag_bytes: 4                 # 4..16, even; forgery chance 2^-(8*tag_bytes) per try
        replay_window: 64            # counters below the newest accepted once (per src)

The wrapper keeps the configured headers in clear in front of each frame, builds the inner codec
without headers and hands it one frame (the body) of the packet's bytes minus headers and
overhead; queue and dispatch see an ordinary `PacketCodec`. Sending needs the sender's SRC and a
state directory (`bind_sender`, done by message_queue_node); receiving uses the packet's SRC and a
per-receiver replay guard (`bind_replay_guard`, done by packet_dispatch_node). A packet is
all-or-nothing: any byte the modem marked invalid rejects the whole packet.
"""

from __future__ import annotations

import dataclasses
import os
import time

from acomms_core.codecs.packet_codec import PacketDecodeResult, valid_byte_mask
from acomms_core.security.aead import TAG_BYTES, PacketSealer
from acomms_core.security.keys import KeyRing, SecurityConfigError, load_key_file
from acomms_core.security.state import (
    DEFAULT_WINDOW,
    CounterExhausted,
    ReplayGuard,
    SenderCounter,
    sender_counter,
)

SECURITY_KEYS = ("key_file", "mode", "tag_bytes", "replay_window")


@dataclasses.dataclass(frozen=True)
class SecuritySettings:
    key_file: str          # absolute
    mode: str = "authenticate"
    tag_bytes: int = 4
    replay_window: int = DEFAULT_WINDOW


def parse_security(value, base_directory: str) -> SecuritySettings:
    """The `security` mapping of a packet codec entry; SecurityConfigError saying what is wrong."""
    if not isinstance(value, dict):
        raise SecurityConfigError(f"security must be a mapping ({', '.join(SECURITY_KEYS)})")
    unknown = sorted(set(value) - set(SECURITY_KEYS))
    if unknown:
        raise SecurityConfigError(f"unknown keys {unknown} (allowed: {', '.join(SECURITY_KEYS)}; "
                                  "keys themselves belong in the key file)")
    key_file = value.get("key_file")
    if not isinstance(key_file, str) or not key_file.strip():
        raise SecurityConfigError("key_file is required (path of the key file)")
    mode = value.get("mode", "authenticate")
    if mode not in ("authenticate", "encrypt"):
        raise SecurityConfigError(f"mode must be authenticate or encrypt, got {mode!r}")
    tag_bytes = value.get("tag_bytes", 4)
    if tag_bytes not in TAG_BYTES or isinstance(tag_bytes, bool):
        raise SecurityConfigError(f"tag_bytes must be one of {list(TAG_BYTES)} (AES-CCM), got "
                                  f"{tag_bytes!r}")
    window = value.get("replay_window", DEFAULT_WINDOW)
    if not isinstance(window, int) or isinstance(window, bool) or not 1 <= window <= 1024:
        raise SecurityConfigError(f"replay_window must be an integer 1..1024, got {window!r}")
    path = os.path.normpath(os.path.join(base_directory, os.path.expanduser(key_file)))
    return SecuritySettings(path, mode, tag_bytes, window)


def secure_packet_codec(inner, value, miniframe_header: bytes, dataframe_header: bytes,
                        base_directory: str) -> SecuredPacketCodec:
    """The wrapper for a codec YAML `security` entry. Pure: the key file is read by
    `load_keys` (the queue and dispatch nodes' configure, through bind_senders/bind_receivers),
    so planning a run from the codec config opens no key or state file."""
    return SecuredPacketCodec(inner, parse_security(value, base_directory), None,
                              miniframe_header, dataframe_header)


class SecuredPacketCodec:
    """A `PacketCodec` that seals what `inner` packs and opens what it decodes."""

    def __init__(self, inner, settings: SecuritySettings, keyring: KeyRing | None,
                 miniframe_header: bytes = b"", dataframe_header: bytes = b"", clock=time.time):
        self.inner = inner
        self.settings = settings
        self._keyring = keyring  # None: read from settings.key_file by load_keys()
        self.name = inner.name
        self.message_ids = inner.message_ids
        self.miniframe_header = bytes(miniframe_header)
        self.dataframe_header = bytes(dataframe_header)
        self.sealer = PacketSealer(settings.mode, settings.tag_bytes, self.miniframe_header,
                                   self.dataframe_header)
        self.overhead_bytes = self.sealer.overhead_bytes
        self.clock = clock      # Unix seconds for key expiry: the node's clock once bound
        self.replay_guard = ReplayGuard(window=settings.replay_window)
        self.src: int | None = None
        self._counter: SenderCounter | None = None

    # -- binding (nodes) --------------------------------------------------------------------------
    def load_keys(self) -> KeyRing:
        """The key file, read and checked on first use; SecurityConfigError with the reason."""
        if self._keyring is None:
            self._keyring = load_key_file(self.settings.key_file)
        return self._keyring

    @property
    def keyring(self) -> KeyRing:
        return self.load_keys()

    def bind_sender(self, src: int, state_dir: str, allow_fresh: bool = False) -> None:
        """Seal as `src`, counters persisted in state_dir; SecurityConfigError if impossible.
        allow_fresh: the operator says the send key was never used by src (state.py)."""
        if not isinstance(src, int) or not 0 <= src <= 255:
            raise SecurityConfigError(f"authenticated packets need this vehicle's SRC 0..255 "
                                      f"(message_queue_node parameter src), got {src!r}")
        key = self.keyring.send_key
        if not key.accepted_at(self.clock()):
            raise SecurityConfigError(f"key file {self.keyring.path}: send key id {key.key_id} "
                                      "is past its accept_until; rotate to a new key")
        try:
            self._counter = sender_counter(state_dir, key.fingerprint, src)
            self._counter.check(allow_fresh)
        except OSError as exc:
            raise SecurityConfigError(f"security state directory {state_dir}: "
                                      f"{exc.strerror}") from None
        except CounterExhausted as exc:
            raise SecurityConfigError(str(exc)) from None
        self.src = src

    def bind_replay_guard(self, guard: ReplayGuard) -> None:
        self.replay_guard = guard

    # -- sizes ------------------------------------------------------------------------------------
    def _body_bytes(self, num_miniframe_bytes: int, num_dataframe_bytes: int) -> int:
        """Bytes left for the inner codec in this budget (< 0: the packet cannot be used)."""
        if num_miniframe_bytes < len(self.miniframe_header):
            return -1
        if num_dataframe_bytes < len(self.dataframe_header):
            return -1
        return (num_miniframe_bytes + num_dataframe_bytes - len(self.miniframe_header)
                - len(self.dataframe_header) - self.overhead_bytes)

    def payload_capacity_bits(self, num_miniframe_bytes: int, num_dataframe_bytes: int) -> int:
        body = self._body_bytes(num_miniframe_bytes, num_dataframe_bytes)
        return self.inner.payload_capacity_bits(body, 0) if body > 0 else 0

    def total_capacity_bits(self, num_packet_bytes: int) -> int:
        body = (num_packet_bytes - len(self.miniframe_header) - len(self.dataframe_header)
                - self.overhead_bytes)
        return self.inner.total_capacity_bits(body) if body > 0 else 0

    def message_cost_bits(self, message_bits: int) -> int:
        return self.inner.message_cost_bits(message_bits)

    # -- sending ----------------------------------------------------------------------------------
    def pack(self, messages, num_miniframe_bytes: int, num_dataframe_bytes: int,
             dest: int = 0):
        """The sealed frames; `dest` (the packet's destination) is authenticated with them."""
        if self._counter is None:
            raise ValueError("authenticated packet codec has no sender binding (SRC and state "
                             "directory); message_queue_node binds it at configure")
        body_bytes = self._body_bytes(num_miniframe_bytes, num_dataframe_bytes)
        if body_bytes <= 0:
            raise ValueError(f"a {num_miniframe_bytes}+{num_dataframe_bytes}-byte packet has no "
                             f"room after headers and {self.overhead_bytes} security bytes")
        first, second = self.inner.pack(messages, body_bytes, 0)
        try:
            counter = self._counter.next()
        except OSError as exc:
            raise ValueError(f"nonce counter state {self._counter.path} cannot be saved "
                             f"({exc.strerror}); authenticated packet not sent") from None
        sealed = self.sealer.seal(self.keyring.send_key, self.src, dest, counter,
                                  bytes(first) + bytes(second))
        room = num_miniframe_bytes - len(self.miniframe_header)
        dataframe = (self.dataframe_header + sealed[room:]) if num_dataframe_bytes else b""
        return self.miniframe_header + sealed[:room], dataframe

    def headers_match(self, miniframe: bytes, dataframe: bytes) -> bool:
        return (bytes(miniframe).startswith(self.miniframe_header)
                and bytes(dataframe).startswith(self.dataframe_header))

    # -- receiving --------------------------------------------------------------------------------
    def open(self, miniframe: bytes, dataframe: bytes, src: int, minibytes_valid=(),
             databytes_valid=(), dest: int = 0) -> tuple[str, bytes | None, str]:
        """(outcome, body, reason): outcome 'packets_authenticated' with the body, or the
        dispatch_status counter that names the rejection."""
        if not self.headers_match(miniframe, dataframe):
            return "auth_failed", None, "codec header bytes do not match"
        if len(minibytes_valid) or len(databytes_valid):
            if not _all_valid(len(miniframe), minibytes_valid) or not _all_valid(
                    len(dataframe), databytes_valid):
                return "auth_partial", None, "partially received authenticated packet dropped"
        sealed = (bytes(miniframe[len(self.miniframe_header):])
                  + bytes(dataframe[len(self.dataframe_header):]))
        if len(sealed) < self.overhead_bytes:
            return "auth_truncated", None, (f"{len(sealed)} bytes after the headers, fewer than "
                                            f"the {self.overhead_bytes} security bytes")
        key_id, counter = self.sealer.key_and_counter(sealed)
        key = self.keyring.keys.get(key_id)
        if key is None:
            return "auth_unknown_key", None, f"key id {key_id} is not in the key file"
        if not key.accepted_at(self.clock()):
            return "auth_key_expired", None, f"key id {key_id} is past its accept_until"
        body = self.sealer.open(key, src, dest, sealed) if 0 <= src <= 255 else None
        if body is None:
            return "auth_failed", None, (f"authentication failed (forged or tampered; key id "
                                         f"{key_id}, counter {counter})")
        verdict = self.replay_guard.check(key.fingerprint, src, counter)
        if verdict == "state_failed":
            return "auth_state_failed", None, (f"replay state {self.replay_guard.path} cannot "
                                               f"be saved; packet (counter {counter}) refused")
        if verdict != "ok":
            return f"auth_{verdict}", None, f"counter {counter} (key id {key_id}) {verdict}"
        return "packets_authenticated", body, ""

    def decode(self, miniframe: bytes, dataframe: bytes, message_codecs, received_packet=None,
               minibytes_valid=(), databytes_valid=()) -> PacketDecodeResult:
        src, dest = _packet_src(received_packet), _packet_dest(received_packet)
        if src is None:
            result = PacketDecodeResult(errors=["authenticated packet without its SRC"])
            result.counters["auth_failed"] = 1
            return result
        outcome, body, reason = self.open(miniframe, dataframe, src, minibytes_valid,
                                          databytes_valid, dest)
        if body is None:
            result = PacketDecodeResult(errors=[reason])
        else:
            result = self.inner.decode(body, b"", message_codecs, received_packet)
        result.counters[outcome] = result.counters.get(outcome, 0) + 1
        return result


def _all_valid(num_bytes: int, ranges) -> bool:
    return all(valid_byte_mask(num_bytes, ranges))


def _packet_src(received_packet) -> int | None:
    packet = getattr(received_packet, "packet", None)
    src = getattr(packet, "src", None)
    return int(src) if src is not None else None


def _packet_dest(received_packet) -> int:
    packet = getattr(received_packet, "packet", None)
    return int(getattr(packet, "dest", 0) or 0)
