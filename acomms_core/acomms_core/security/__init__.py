"""Authenticated (optionally encrypted) acoustic packets with replay protection, ROS-free.

- `keys`: key file (permission check, key ids, rotation with accept_until), `SecurityConfigError`;
- `aead`: the packet format, AES-CCM with a truncated tag (`PacketSealer`, `forgery_probability`);
- `state`: sender counters persisted ahead in blocks, per-source replay windows;
- `secured_codec`: `SecuredPacketCodec`, any packet codec wrapped (the codec YAML `security` key);
- `node_hooks`: what message_queue_node and packet_dispatch_node call.
"""

from acomms_core.security.aead import PacketSealer, forgery_probability
from acomms_core.security.keys import KeyRing, PacketKey, SecurityConfigError, load_key_file
from acomms_core.security.node_hooks import (
    SECURITY_COUNTERS,
    SECURITY_PARAMETERS,
    SENDER_SECURITY_PARAMETERS,
    bind_receivers,
    bind_senders,
    source_accepted,
)
from acomms_core.security.secured_codec import (
    SecuredPacketCodec,
    SecuritySettings,
    parse_security,
    secure_packet_codec,
)
from acomms_core.security.state import ReplayGuard, SenderCounter

__all__ = [
    "SECURITY_COUNTERS", "SECURITY_PARAMETERS", "SENDER_SECURITY_PARAMETERS", "KeyRing",
    "PacketKey", "PacketSealer",
    "ReplayGuard", "SecuredPacketCodec", "SecurityConfigError", "SecuritySettings",
    "SenderCounter", "bind_receivers", "bind_senders", "forgery_probability", "load_key_file",
    "parse_security", "secure_packet_codec", "source_accepted",
]
