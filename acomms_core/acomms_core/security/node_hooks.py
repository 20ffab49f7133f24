"""What the queue and dispatch nodes call for authenticated packet codecs (ROS-free).

- `SECURITY_PARAMETERS`: `security_state_dir`, declared by message_queue_node and
  packet_dispatch_node; `SENDER_SECURITY_PARAMETERS`: `security_fresh_key_ids`, the queue's.
- `bind_senders(codec_config, src, state_dir, clock)`: message_queue_node's configure; every
  secured packet codec seals as this SRC with counters persisted in state_dir.
- `bind_receivers(codec_config, receiver_name, state_dir, clock)`: packet_dispatch_node's
  configure; one persisted replay guard per receiving node, shared by its secured packet codecs.
  `clock` (Unix seconds): the node's clock, which key expiry (`accept_until`, a time of day) is
  checked against, so a simulated run decides on simulated time.
- `source_accepted(message_config, src)`: the optional `accept_src` policy of a message codec.
- `SECURITY_COUNTERS`: the dispatch_status counters a secured codec reports.
"""

from __future__ import annotations

import os
import re

from acomms_core.ros.parameter_spec import ParameterSpec
from acomms_core.security.keys import SecurityConfigError
from acomms_core.security.secured_codec import SecuredPacketCodec
from acomms_core.security.state import ReplayGuard, default_state_dir, ensure_state_dir

SECURITY_PARAMETERS = (
    ParameterSpec("security_state_dir", "", "Directory of the nonce counters (sender) and "
                  "replay windows (receiver) of authenticated packet codecs; empty: "
                  "$ROS_HOME/acomms_security (~/.ros/acomms_security); read at configure",
                  parameter_type="string"),
)

SENDER_SECURITY_PARAMETERS = (
    ParameterSpec("security_fresh_key_ids", None, "Key ids (0..255) that this vehicle may start at "
                  "nonce counter 0 when security_state_dir holds no counter state for them: the "
                  "operator's acknowledgement that the key was never used by this src (after a "
                  "lost state directory, restarting a used key at 0 reuses nonces: add a new key "
                  "id instead); remove it after the first start; a key made by "
                  "acomms_security_key needs no entry; unset: none; read at configure",
                  parameter_type="integer_array"),
)

SECURITY_COUNTERS = ("packets_authenticated", "auth_failed", "auth_replayed", "auth_too_old",
                     "auth_unknown_key", "auth_key_expired", "auth_truncated", "auth_partial",
                     "auth_state_failed", "source_refused")


def state_dir_or_default(state_dir: str) -> str:
    return os.path.abspath(os.path.expanduser(state_dir)) if state_dir else default_state_dir()


def secured_codecs(codec_config) -> list[SecuredPacketCodec]:
    codecs = (getattr(p.packet_codec, "inner", None) if getattr(p.packet_codec, "relayable",
                                                                  False) else p.packet_codec
              for p in codec_config.packet_codecs)   # a relayable codec wraps a secured one
    return [codec for codec in codecs if isinstance(codec, SecuredPacketCodec)]


def bind_senders(codec_config, src: int, state_dir: str, clock=None,
                 fresh_key_ids=()) -> int:
    """Bind every secured codec for sending; how many; SecurityConfigError with the reason.
    fresh_key_ids: the security_fresh_key_ids parameter (state.py explains it)."""
    codecs = secured_codecs(codec_config)
    for codec in codecs:
        codec.clock = clock or codec.clock
        codec.bind_sender(src, state_dir_or_default(state_dir),
                          allow_fresh=codec.keyring.send_key_id in set(fresh_key_ids or ()))
    return len(codecs)


def bind_receivers(codec_config, receiver_name: str, state_dir: str, clock=None) -> int:
    """Give the secured codecs one persisted replay guard named after the receiving node."""
    codecs = secured_codecs(codec_config)
    if not codecs:
        return 0
    for codec in codecs:
        codec.clock = clock or codec.clock
        codec.load_keys()  # the key file is read here (configure), not when parsing
    directory = state_dir_or_default(state_dir)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", receiver_name.strip("/").replace("/", "."))
    path = os.path.join(ensure_state_dir(directory), f"rx_{name}.json")
    try:
        guard = ReplayGuard(path, window=min(c.settings.replay_window for c in codecs))
    except OSError as exc:
        raise SecurityConfigError(f"security state directory {directory}: "
                                  f"{exc.strerror}") from None
    for codec in codecs:
        codec.bind_replay_guard(guard)
    return len(codecs)


def source_accepted(message_config, src: int) -> bool:
    """Whether the message codec's accept_src list (empty: any source) lets src through."""
    accept = getattr(message_config, "accept_src", ())
    return not accept or src in accept
