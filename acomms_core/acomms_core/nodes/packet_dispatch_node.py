"""packet_dispatch_node: decodes received packets and publishes their messages.

For each ReceivedPacket on `packet_rx`, every packet codec of the codec config whose match_src /
match_dest / except_src / except_dest lists and header bytes match decodes it (as ros_acomms
does); each decoded message is published on its codec's `publish_topic` with the config's type.
Truncated, corrupted (checksum), partially valid (minibytes_valid / databytes_valid) and
unknown-id packets never raise: whatever decodes is published, the rest is counted on
`dispatch_status` (DispatchStatus, published after every packet while anyone subscribes) and
logged. Authenticated packet codecs (`acomms_core.security`) open the packet first: forged,
tampered, replayed, too old, unknown-key, truncated and partial packets publish nothing and
are counted (auth_*); a message
codec's `accept_src` list refuses (counts `source_refused`) messages from other sources.
Relayable packet codecs (`acomms_core.relay`): messages of a relayed packet come from the
origin in its relay header, and a copy of a packet already published (the direct and the relayed
copy) is not published again (counted `relay_duplicates` on `/diagnostics`).
An optional `observer(topic, src, msg)` (an additive hook, as the queue's) hears every message
just before it is published: its resolved topic name and the SRC of the packet it came in.

Lifecycle: configure reads `codec_config_file` (custom packet codecs from
`custom_packet_codec_paths`) and creates the publishers; activate subscribes `packet_rx`;
deactivate unsubscribes; cleanup and shutdown release everything.
"""

from __future__ import annotations

import sys
import threading

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Header

from acomms_core.codecs import CodecConfigError
from acomms_core.codecs.config import (
    CODEC_CONFIG_PARAMETERS,
    check_codec_config_parameters,
    codec_config_from_parameters,
)
from acomms_core.fragmentation.settings import fragmenting_packet_codecs
from acomms_core.nodes.fragmentation_ros import DISPATCH_PARAMETERS as FRAGMENTATION_PARAMETERS
from acomms_core.nodes.fragmentation_ros import DispatchFragmentation
from acomms_core.nodes.fragmentation_ros import declare as declare_fragmentation
from acomms_core.queue.message_queue import BROADCAST_ADDRESS
from acomms_core.ros.ros_support import (
    ManagedNode,
    counters_diagnostics,
    declare_parameters,
    is_active,
    listened,
    now_s,
    parameter_values,
    run_node,
    seconds_to_time_msg,
)
from acomms_core.ros.shared_messages import shared_callback
from acomms_core.ros.status_cadence import StatusCadence
from acomms_core.security import (
    SECURITY_COUNTERS,
    SECURITY_PARAMETERS,
    SecurityConfigError,
    bind_receivers,
    source_accepted,
)
from acomms_interfaces.msg import DispatchStatus, ReceivedPacket

PARAMETERS = CODEC_CONFIG_PARAMETERS + SECURITY_PARAMETERS

# Every parameter the node declares (its own table, then fragmentation's): what scenarios check.
DECLARED_PARAMETERS = PARAMETERS + FRAGMENTATION_PARAMETERS

COUNTERS = ("packets_received", "packets_unmatched", "messages_published", "unknown_ids",
            "checksum_failures", "invalid_bytes", "decode_errors", "no_publish_topic",
            "packets_lost_on_arrival") + SECURITY_COUNTERS
# packet_rx: packets arrive seconds apart, but a burst (a replay, a flood) waits in the
# middleware (KEEP_ALL) rather than being overwritten unseen; what the middleware reports lost
# (message_lost) is counted as packets_lost_on_arrival.
FRAGMENT_EXPIRY_PERIOD_S = 10.0   # how often stalled incoming fragment sessions are looked for
PACKET_RX_QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)


class PacketDispatchNode(ManagedNode):
    """Lifecycle node: packet_rx -> decoded messages on their publish topics."""

    EXECUTOR = "single"   # run_node: one thread; dispatch is serial (one lock) anyway

    def __init__(self, node_name: str = "packet_dispatch_node", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, PARAMETERS, check_codec_config_parameters)
        self.fragmentation = DispatchFragmentation(self)   # issue 15
        declare_fragmentation(self, FRAGMENTATION_PARAMETERS)
        self.codec_config = None
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.last_error = ""
        self._dispatch_lock = threading.Lock()
        self._topic_publishers = {}        # (codec id, src or None) -> lifecycle publisher
        self._status_pub = None
        self._diagnostics_pub = None
        self.relay_duplicates = 0   # relayed copies not published again (issue 32)
        self.observer = None  # optional callable(topic, src, msg), see the module docstring
        # stalled incoming sessions are looked for every FRAGMENT_EXPIRY_PERIOD_S while any is
        # open (StatusCadence without publishers: only when one can have expired)
        self.fragment_expiry = StatusCadence(self, self._expire_fragments,
                                             self._next_fragment_expiry_s)

    # -- lifecycle --------------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, [spec.name for spec in PARAMETERS])
        try:
            self.codec_config = codec_config_from_parameters(values)
            bind_receivers(self.codec_config, self.get_fully_qualified_name(),
                           values["security_state_dir"], clock=lambda: now_s(self))
        except (CodecConfigError, SecurityConfigError) as exc:
            self.get_logger().error(f"configure refused: {exc}")
            return TransitionCallbackReturn.FAILURE
        for warning in self.codec_config.warnings:
            self.get_logger().warning(warning)
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.last_error = ""
        if fragmenting_packet_codecs(self.codec_config):
            try:
                self.fragmentation.configure(self.codec_config, BROADCAST_ADDRESS)
            except ValueError as exc:
                self.get_logger().error(f"configure refused: {exc}")
                return TransitionCallbackReturn.FAILURE
        qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        for message in self.codec_config.message_codecs:
            for src, topic in message.publish_topics().items():
                self._topic_publishers[(message.id, src)] = self.configured.publisher(
                    message.msg_class, topic, qos)
        self._status_pub = self.configured.publisher(DispatchStatus, "dispatch_status", 10)
        self.relay_duplicates = 0
        relayable = [p.packet_codec for p in self.codec_config.packet_codecs
                     if getattr(p.packet_codec, "relayable", False)]
        for codec in relayable:   # its own packets relayed back are not published (issue 32)
            codec.bind_sender(self.get_parameter("src").value)
        if relayable:
            self._diagnostics_pub = self.configured.publisher(DiagnosticArray, "/diagnostics", 10)
        self.get_logger().info(f"configured {len(self.codec_config.message_codecs)} message "
                               f"codecs from {self.codec_config.path}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        try:
            self.activated.subscription(
                ReceivedPacket, "packet_rx", shared_callback(ReceivedPacket, self.on_packet_rx),
                PACKET_RX_QOS, raw=True,
                event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_packet_lost))
            if self.fragmentation.receiver is not None:
                self.fragment_expiry.start(self.activated, FRAGMENT_EXPIRY_PERIOD_S)
        except Exception as exc:  # e.g. QoS the middleware refuses
            return self.activate_failed(exc)
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self.fragment_expiry.stop()
        return super().on_deactivate(state)

    def _on_packet_lost(self, info) -> None:
        with self._dispatch_lock:
            self.counts["packets_lost_on_arrival"] += info.total_count_change
            self.last_error = (f"{info.total_count_change} packets lost before dispatch took "
                               "them")
            self.get_logger().warning(self.last_error, throttle_duration_sec=2.0)

    def _expire_fragments(self) -> None:
        with self._dispatch_lock:
            self.fragmentation.expire(now_s(self))

    def _next_fragment_expiry_s(self) -> float | None:
        with self._dispatch_lock:
            return self.fragmentation.next_expiry_s()

    def on_release(self) -> None:
        """Drop references to what configure made (ManagedNode releases the entities)."""
        self.fragment_expiry.stop()
        self.fragmentation.release()
        self._topic_publishers = {}
        self._status_pub = self._diagnostics_pub = None
        self.codec_config = None

    # -- dispatch ---------------------------------------------------------------------------------
    def on_packet_rx(self, received: ReceivedPacket) -> None:
        config = self.codec_config
        if config is None or not is_active(self):
            return
        with self._dispatch_lock:
            try:
                self._dispatch(config, received)
            except Exception as exc:  # never let one packet take the node down
                self._problem("decode_errors", f"packet dropped: {type(exc).__name__}: {exc}")
            self._publish_status()
        if self.fragmentation.receiver is not None:
            self.fragment_expiry.rearm()  # a session may have started (or moved on)

    def _dispatch(self, config, received: ReceivedPacket) -> None:
        self.counts["packets_received"] += 1
        packet = received.packet
        miniframe, dataframe = bytes(packet.miniframe_bytes), bytes(packet.dataframe_bytes)
        matching = [p for p in config.packet_codecs
                    if p.matches(packet.src, packet.dest, miniframe, dataframe)]
        if not matching:
            if miniframe.strip(b"\x00") or dataframe.strip(b"\x00"):
                self._problem("packets_unmatched", f"packet from {packet.src} to {packet.dest} "
                                                   "matched no packet codec")
            else:  # empty / zero-padded packet: nothing was lost
                self.counts["packets_unmatched"] += 1
            return
        for packet_config in matching:
            codecs = self.fragmentation.decoders(packet_config, packet.src)
            result = packet_config.packet_codec.decode(
                miniframe, dataframe, codecs, received_packet=received,
                minibytes_valid=list(received.minibytes_valid),
                databytes_valid=list(received.databytes_valid))
            for name in ("unknown_ids", "checksum_failures", "invalid_bytes", "decode_errors"):
                self.counts[name] += getattr(result, name)
            self._count_extra(result.counters)
            for error in result.errors:
                self.last_error = f"packet from {packet.src}: {error}"
                self.get_logger().warning(self.last_error, throttle_duration_sec=2.0)
            # a relayed packet's messages come from its origin (acomms_core.relay)
            src = packet.src if result.src is None else result.src
            for codec_id, message in result.messages:
                if self.fragmentation.is_piece(codec_id):   # issue 15: a fragment or an ack
                    complete = self.fragmentation.handle(received, codec_id, message, codecs,
                                                         now_s(self))
                    if complete is None:
                        continue
                    codec_id, message = complete
                if not self._source_accepted(config, codec_id, src):
                    continue
                publisher = (self._topic_publishers.get((codec_id, src))
                             or self._topic_publishers.get((codec_id, None)))
                if publisher is None:
                    self._problem("no_publish_topic", f"message id {codec_id} from {src} "
                                                      "has no publish_topic")
                    continue
                if self.observer is not None:
                    self.observer(publisher.topic_name, int(src), message)
                publisher.publish(message)
                self.counts["messages_published"] += 1

    def _count_extra(self, counters: dict) -> None:
        """Counters a packet codec reports by name (the authenticated codecs' auth_*)."""
        for name, count in counters.items():
            if name == "relay_duplicates":   # a relayed copy of a packet already published
                self.relay_duplicates += count
                self._publish_relay_diagnostics()
            elif name in self.counts:
                self.counts[name] += count
            else:
                self._problem("decode_errors", f"packet codec reported unknown counter {name}")

    def _publish_relay_diagnostics(self) -> None:
        if self._diagnostics_pub is not None:
            self._diagnostics_pub.publish(counters_diagnostics(
                f"{self.get_fully_qualified_name()}: relay receiver",
                f"{self.relay_duplicates} relayed duplicates not published",
                {"relay_duplicates": self.relay_duplicates},
                seconds_to_time_msg(now_s(self))))

    def _source_accepted(self, config, codec_id: int, src: int) -> bool:
        """The message codec's accept_src policy; a refused message is counted, not published."""
        message_config = config.by_id().get(codec_id)
        if message_config is None or source_accepted(message_config, src):
            return True
        self._problem("source_refused", f"message id {codec_id} from {src} refused: not in "
                                        f"accept_src {list(message_config.accept_src)}")
        return False

    def _problem(self, counter: str, reason: str) -> None:
        self.counts[counter] += 1
        self.last_error = reason
        self.get_logger().warning(reason, throttle_duration_sec=2.0)

    def _publish_status(self) -> None:
        status_pub = self._status_pub
        if listened(status_pub):  # a simulation of many vehicles has no one listening
            status_pub.publish(DispatchStatus(
                header=Header(stamp=seconds_to_time_msg(now_s(self))), last_error=self.last_error,
                **self.counts, **self.fragmentation.counters()))


def main(args=None) -> int:
    return run_node(PacketDispatchNode, args)


if __name__ == "__main__":
    sys.exit(main())
