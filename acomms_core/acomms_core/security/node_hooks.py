"""What the queue and dispatch nodes call for authenticated packet codecs (ROS-free).

- `SECURITY_PARAMETERS`: `security_state_dir`, declared by message_queue_node and
  packet_dispatch_node.
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

SECURITY_COUNTERS = ("packets_authenticated", "auth_failed", "auth_replayed", "auth_too_old",
                     "auth_unknown_key", "auth_key_expired", "auth_truncated", "auth_partial",
                     "source_refused")


def state_dir_or_default(state_dir: str) -> str:
    return os.path.abspath(os.path.expanduser(state_dir)) if state_dir else default_state_dir()


def secured_codecs(codec_config) -> list[SecuredPacketCodec]:
    codecs = (getattr(p.packet_codec, "inner", None) if getattr(p.packet_codec, "relayable",
                                                                  False) else p.packet_codec
              for p in codec_config.packet_codecs)   # a relayable codec wraps a secured one
    return [codec for codec in codecs if isinstance(codec, SecuredPacketCodec)]


def bind_senders(codec_config, src: int, state_dir: str, clock=None) -> int:
    """Bind every secured codec for sending; how many; SecurityConfigError with the reason."""
    codecs = secured_codecs(codec_config)
    for codec in codecs:
        codec.clock = clock or codec.clock
        codec.bind_sender(src, state_dir_or_default(state_dir))
    return len(codecs)


def bind_receivers(codec_config, receiver_name: str, state_dir: str, clock=None) -> int:
    """Give the secured codecs one persisted replay guard named after the receiving node."""
    codecs = secured_codecs(codec_config)
    if not codecs:
        return 0
    for codec in codecs:
        codec.clock = clock or codec.clock
    directory = state_dir_or_default(state_dir)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", receiver_name.strip("/").replace("/", "."))
    try:
        path = os.path.join(ensure_state_dir(directory), f"rx_{name}.json")
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
