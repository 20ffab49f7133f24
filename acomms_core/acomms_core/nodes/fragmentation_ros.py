"""The ROS side of fragmentation for message_queue_node and packet_dispatch_node (issue 15).

Topics (relative, in the vehicle's namespace):
- `fragment_acks_out` (EncodedAck): acks this vehicle owes, published by its dispatch node (dest
  = the fragments' sender, who the ack goes to), queued by its queue node;
- `fragment_acks_in` (EncodedAck): acks heard from other vehicles (src = who sent the ack),
  published by the dispatch node, applied by the queue node's sessions;
- `fragmentation_status` (FragmentationStatus): outgoing sessions (queue node, `outgoing` true,
  at update_rate and when a session ends) and incoming ones (dispatch node, after each piece).
The protocol is in `acomms_core.fragmentation`; these helpers only move it onto ROS.
"""

from __future__ import annotations

from std_msgs.msg import Header

from acomms_core.fragmentation.dispatch_hooks import FragmentReceiver
from acomms_core.fragmentation.queue_hooks import FragmentationSender
from acomms_core.fragmentation.ranges import span, to_ranges
from acomms_core.fragmentation.sender import ACKED, UNSENT
from acomms_core.fragmentation.settings import (
    COMMON_PARAMETERS,
    RECEIVER_PARAMETERS,
    SENDER_PARAMETERS,
    FragmentationSettings,
    check_fragmentation_values,
    config_problem,
)
from acomms_core.queue.message_queue import QueuedMessage
from acomms_core.ros.ros_support import (
    declare_parameters,
    listened,
    now_s,
    parameter_values,
    seconds_to_time_msg,
)
from acomms_interfaces.msg import EncodedAck, FragmentationStatus

ACKS_OUT_TOPIC = "fragment_acks_out"
ACKS_IN_TOPIC = "fragment_acks_in"
STATUS_TOPIC = "fragmentation_status"
QUEUE_PARAMETERS = COMMON_PARAMETERS + SENDER_PARAMETERS
DISPATCH_PARAMETERS = COMMON_PARAMETERS + RECEIVER_PARAMETERS


def declare(node, specs) -> None:
    declare_parameters(node, specs, check_fragmentation_values)


def settings_of(node, specs, codec_config) -> FragmentationSettings:
    """The node's settings; ValueError when the codec config cannot carry fragments."""
    settings = FragmentationSettings.from_values(
        parameter_values(node, [spec.name for spec in specs]))
    problem = config_problem(codec_config, settings)
    if problem:
        raise ValueError(problem)
    return settings


def _status(header, session_id, codec_id, src, dest, timestamp, size, block_bits, transferred,
            acked, state, outgoing) -> FragmentationStatus:
    sent_ranges, acked_ranges = to_ranges(transferred), to_ranges(acked)
    return FragmentationStatus(
        header=header, sequence_num=session_id, fragment_src=max(src, 0) & 0xFF,
        fragment_dest=dest & 0xFF, unix_time=timestamp, payload_size_blocks=size,
        block_size_bits=block_bits, transferred_start=span(sent_ranges)[0],
        transferred_end=span(sent_ranges)[1], transferred_sections=min(len(sent_ranges), 255),
        acked_start=span(acked_ranges)[0], acked_end=span(acked_ranges)[1],
        acked_sections=min(len(acked_ranges), 255), message_codec_id=codec_id, state=state,
        outgoing=outgoing, acked_blocks=min(len(acked), 65535))


def outgoing_status(header, session, state: int) -> FragmentationStatus:
    blocks = range(session.size_blocks)
    return _status(header, session.session_id, session.codec_id, session.src, session.dest,
                   session.timestamp_s, session.size_blocks, session.block_size_bits,
                   [b for b in blocks if session.state[b] != UNSENT],
                   [b for b in blocks if session.state[b] == ACKED], state, True)


def incoming_status(header, session, state: int) -> FragmentationStatus:
    received = session.received_blocks()
    h = session.header
    return _status(header, h.session_id, session.codec_id, session.src, h.dest, h.timestamp_s,
                   h.size_blocks, h.block_size_bits, received, received, state, False)


class QueueFragmentation:
    """message_queue_node's fragmentation: sender state, ack topics, status."""

    def __init__(self, node):
        self.node = node
        self.sender: FragmentationSender | None = None
        self._status_pub = None

    def configure(self, codec_config, queues, src: int, broadcast_address: int) -> None:
        """Attach a FragmentationSender to queues when the config fragments (ValueError: why
        not)."""
        self.sender = None
        settings = settings_of(self.node, QUEUE_PARAMETERS, codec_config)
        by_id = codec_config.by_id()
        self.sender = FragmentationSender(
            settings, lambda cid: by_id[cid].packet_codec.packet_codec if cid in by_id else None,
            QueuedMessage, broadcast_address, src)
        queues.fragmentation = self.sender
        self.queues = queues
        # open sessions' status goes out with the queue status
        self._status_pub = self.node.status_report.cadence.publisher(
            self.node.configured, FragmentationStatus, STATUS_TOPIC)

    def activate(self, callback_group) -> None:
        for topic, callback in ((ACKS_OUT_TOPIC, self._on_ack_to_send),
                                (ACKS_IN_TOPIC, self._on_ack_heard)):
            self.node.activated.subscription(EncodedAck, topic, callback, 100,
                                             callback_group=callback_group)

    def release(self) -> None:
        self.sender = self._status_pub = None

    def _on_ack_to_send(self, msg: EncodedAck) -> None:
        sender = self.sender
        if sender is not None:
            with self.queues.lock:
                problem = sender.queue_ack(msg.dest, bytes(msg.encoded_ack))
            if problem:
                self.node.get_logger().warning(problem, throttle_duration_sec=5.0)

    def _on_ack_heard(self, msg: EncodedAck) -> None:
        sender = self.sender
        if sender is not None:
            with self.queues.lock:
                sender.on_ack(msg.src, msg.dest, bytes(msg.encoded_ack), now_s(self.node))
                self._publish_finished(now_s(self.node))

    def counters(self) -> dict:
        if self.sender is None:
            return {}
        with self.queues.lock:
            return self.sender.counters()

    def next_expiry_s(self) -> float | None:
        """When `publish` next has work: now while finished sessions wait to be reported, else
        the earliest session expiry; None without sessions."""
        sender = self.sender
        if sender is None:
            return None
        with self.queues.lock:
            return sender.next_expiry_s(now_s(self.node))

    def publish(self, now: float) -> None:
        """Expire stalled sessions (logged), publish every open session's status."""
        sender, pub = self.sender, self._status_pub
        if sender is None or pub is None:
            return
        with self.queues.lock:
            for line in sender.expire(now):
                self.node.get_logger().warning(line)
            self._publish_finished(now)
            if not listened(pub):
                return
            header = Header(stamp=seconds_to_time_msg(now))
            for session in sender.fragmenter.sessions.values():
                pub.publish(outgoing_status(header, session, FragmentationStatus.STATE_OPEN))

    def _publish_finished(self, now: float) -> None:
        pub = self._status_pub
        header = Header(stamp=seconds_to_time_msg(now))
        for session, outcome in self.sender.take_finished():
            state = (FragmentationStatus.STATE_COMPLETED if outcome == "completed"
                     else FragmentationStatus.STATE_EXPIRED)
            if pub is not None:
                pub.publish(outgoing_status(header, session, state))


class DispatchFragmentation:
    """packet_dispatch_node's fragmentation: reassembly, ack topics, status."""

    def __init__(self, node):
        self.node = node
        self.receiver: FragmentReceiver | None = None
        self._acks_out = self._acks_in = self._status_pub = None

    def configure(self, codec_config, broadcast_address: int) -> None:
        settings = settings_of(self.node, DISPATCH_PARAMETERS, codec_config)
        self.receiver = FragmentReceiver(settings, broadcast_address)
        configured = self.node.configured
        self._acks_out = configured.publisher(EncodedAck, ACKS_OUT_TOPIC, 100)
        self._acks_in = configured.publisher(EncodedAck, ACKS_IN_TOPIC, 100)
        self._status_pub = configured.publisher(FragmentationStatus, STATUS_TOPIC, 10)

    def release(self) -> None:
        self.receiver = self._acks_out = self._acks_in = self._status_pub = None

    def decoders(self, packet_config, src: int) -> dict:
        if self.receiver is None:
            return packet_config.codecs_by_id()
        return self.receiver.decoders(packet_config, src)

    def is_piece(self, codec_id: int) -> bool:
        return self.receiver is not None and codec_id in self.receiver.reserved_ids

    def handle(self, received, codec_id: int, piece, codecs, now: float):
        """A piece from a packet: acks published, status published; returns (codec id,
        message) when a message is complete, or None."""
        packet = received.packet
        outcome = self.receiver.handle(packet.src, packet.dest, codec_id, piece, codecs, now,
                                       received)
        header = Header(stamp=seconds_to_time_msg(now))
        if outcome.ack_out is not None:
            dest, encoded = outcome.ack_out
            self._acks_out.publish(EncodedAck(header=header, src=packet.dest & 0xFF,
                                              dest=dest & 0xFF, encoded_ack=list(encoded)))
        if outcome.ack_heard is not None:
            self._acks_in.publish(EncodedAck(header=header, src=packet.src & 0xFF,
                                             dest=packet.dest & 0xFF,
                                             encoded_ack=list(outcome.ack_heard)))
        if outcome.session is not None:
            state = (FragmentationStatus.STATE_COMPLETED if outcome.codec_id
                     else FragmentationStatus.STATE_OPEN)
            self._status_pub.publish(incoming_status(header, outcome.session, state))
        if outcome.error:
            self.node.get_logger().warning(outcome.error, throttle_duration_sec=2.0)
        return (outcome.codec_id, outcome.message) if outcome.message is not None else None

    def expire(self, now: float) -> None:
        if self.receiver is not None:
            for line in self.receiver.expire(now):
                self.node.get_logger().warning(line)

    def next_expiry_s(self) -> float | None:
        return None if self.receiver is None else self.receiver.next_expiry_s()

    def counters(self) -> dict:
        return {} if self.receiver is None else self.receiver.counters()
