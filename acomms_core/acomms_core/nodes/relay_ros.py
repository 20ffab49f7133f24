"""message_queue_node's relay (issue 32): parameters, packet_rx, relay_status and /diagnostics.

With `relay_enabled`, the queue node listens to its modem's `packet_rx`; every packet of a
`relayable` packet codec goes to `acomms_core.relay.relay_backlog.RelayBacklog` (policy: routes,
hop limit, duplicates), which the queue serves to the MAC ahead of queued messages of a lower
priority than `relay_priority` (so it works with every MAC that asks get_next_packet_data).
Counters (relayed, duplicates_dropped, hop_limit_reached, no_route, ...) go out on
`relay_status` and `/diagnostics` (DiagnosticArray) after every relayable packet heard.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray

from acomms_core.codecs.packet_codec import valid_byte_mask
from acomms_core.relay.relay_backlog import RelayBacklog
from acomms_core.relay.relay_policy import (
    RELAY_PARAMETERS,
    RelayPolicy,
    RelaySettings,
    check_relay_values,
    parse_routes,
)
from acomms_core.ros.ros_support import (
    counters_diagnostics,
    declare_parameters,
    now_s,
    parameter_values,
    seconds_to_time_msg,
)
from acomms_interfaces.msg import ReceivedPacket


def _all_valid(received: ReceivedPacket, mini: bytes, data: bytes) -> bool:
    """Whether every byte was received intact (validity not reported: yes)."""
    mini_valid, data_valid = list(received.minibytes_valid), list(received.databytes_valid)
    if not mini_valid and not data_valid:
        return True
    return (all(valid_byte_mask(len(mini), mini_valid))
            and all(valid_byte_mask(len(data), data_valid)))


def declare(node) -> None:
    declare_parameters(node, RELAY_PARAMETERS, check_relay_values)


def relayable_codecs(codec_config) -> list:
    return [p for p in codec_config.packet_codecs
            if getattr(p.packet_codec, "relayable", False)]


class QueueRelay:
    """The relay of one message_queue_node."""

    def __init__(self, node):
        self.node = node
        self.backlog: RelayBacklog | None = None
        self._packets = []
        self._status_pub = self._diagnostics_pub = None

    def configure(self, codec_config, queues, src: int) -> None:
        """Bind the relayable codecs' SRC; with relay_enabled attach the backlog (ValueError)."""
        self.backlog = None
        self._packets = relayable_codecs(codec_config)
        for packet in self._packets:
            packet.packet_codec.bind_sender(src)
        values = parameter_values(self.node, [spec.name for spec in RELAY_PARAMETERS])
        if not values["relay_enabled"]:
            return
        if src < 0:
            raise ValueError("relay_enabled needs this vehicle's src (parameter src)")
        if not self._packets:
            self.node.get_logger().warning("relay_enabled but no packet codec is relayable")
        settings = RelaySettings(
            src=src, routes=parse_routes([r for r in values["relay_routes"] if r]),
            max_hops=values["relay_max_hops"], priority=values["relay_priority"],
            duplicate_memory=values["relay_duplicate_memory"])
        self.backlog = RelayBacklog(RelayPolicy(settings), values["relay_backlog_size"],
                                    values["relay_ttl_seconds"])
        queues.relay = self.backlog
        self._status_pub = self.node.configured.publisher(DiagnosticArray, "relay_status", 10)
        self._diagnostics_pub = self.node.configured.publisher(DiagnosticArray, "/diagnostics",
                                                               10)

    def set_src(self, src: int) -> None:
        for packet in self._packets:
            packet.packet_codec.bind_sender(src)

    def activate(self, callback_group) -> None:
        if self.backlog is not None:
            self.node.activated.subscription(ReceivedPacket, "packet_rx", self._on_packet_rx,
                                             50, callback_group=callback_group)

    def release(self) -> None:
        self.backlog = self._status_pub = self._diagnostics_pub = None
        self._packets = []

    def _on_packet_rx(self, received: ReceivedPacket) -> None:
        backlog, queues = self.backlog, self.node.queues
        if backlog is None or queues is None:
            return
        packet = received.packet
        mini, data = bytes(packet.miniframe_bytes), bytes(packet.dataframe_bytes)
        matching = [p for p in self._packets if p.matches(packet.src, packet.dest, mini, data)]
        if not matching:
            return
        with queues.lock:
            if _all_valid(received, mini, data):
                outcome = backlog.offer(matching[0].packet_codec, mini, data, packet.src,
                                        now_s(self.node))
            else:   # partially received: the body may be damaged
                outcome = "partial_not_relayed"
                backlog.policy.count(outcome)
        if outcome == "relayed":
            self.node.get_logger().info(f"relaying a packet heard from {packet.src}")
        self.publish()

    def publish(self) -> None:
        backlog = self.backlog
        if backlog is None or self._status_pub is None:
            return
        counts = {**backlog.policy.counts, "relay_backlog": len(backlog.packets)}
        diagnostics = counters_diagnostics(
            f"{self.node.get_fully_qualified_name()}: relay",
            f"{counts['relayed']} packets relayed", counts,
            seconds_to_time_msg(now_s(self.node)))
        self._status_pub.publish(diagnostics)
        self._diagnostics_pub.publish(diagnostics)
