"""message_queue_node: queues ROS messages from the codec config's topics and fills packets.

Thin lifecycle adapter over `acomms_core.queue.message_queue.MessageQueues`.

- configure: reads `codec_config_file` (packet codecs registered by `custom_packet_codec_paths`
  first; refused with a reason naming file/codec/field when bad), binds authenticated packet
  codecs to this vehicle's `src` and `security_state_dir` (acomms_core.security), builds one queue
  per subscribe_topic, creates the `queue_status` / `queue_counters` publishers.
- activate: subscribes every subscribe_topic and `neighbor_reachability`, serves
  `get_next_packet_data`, `priority_update`, `queue_active`, starts the status timer
  (`queue_status.QueueStatusReport`: every 1/update_rate s while anyone subscribes, else only
  when a TTL or fragment session is due, at the same grid times).
- deactivate: stops all of that; queued messages are kept and sent after the next activate.
- cleanup / shutdown: releases every entity (NodeResources) and drops the queues.

Parameter changes are validated by a pure validator and applied afterwards (`_apply`):
default_dest / default_priority / reachability / max_packet_bytes act on the queues at once,
update_rate changes the status timer's period.

main() spins the node on a SingleThreadedExecutor (`EXECUTOR`): under a flood of messages a
MultiThreadedExecutor spent its CPU on thread hand-offs, took in under a tenth of the offered
messages and answered get_next_packet_data in seconds; one thread takes every message and answers
within milliseconds (bench/queue_ingest.py --overload). Services still run in a
ReentrantCallbackGroup and the queues have one lock, so a multi-threaded host executor works too.
Subscriptions are reliable with a KEEP_ALL history (`SUBSCRIPTION_QOS`): a burst waits in the
middleware until the node takes it, so every message reaches the queue, which counts what it
cannot keep (dropped_queue_full, ...). With KEEP_LAST, Fast DDS overwrote unread messages
without any event (measured: 1,000 published at once, 100 received, 0 reported lost). What the
middleware does report lost (message_lost event: best-effort gaps, a writer that dropped samples
before delivering them) is counted as `dropped_on_arrival` on queue_counters. A best-effort
publisher (which a reliable subscription never matches) is counted as `incompatible_qos` and
then received by a second, best-effort subscription on its topic
(acomms_core.nodes.best_effort_intake).
"""

from __future__ import annotations

import sys

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.executors import (
    MultiThreadedExecutor,
    SingleThreadedExecutor,
)
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from acomms_core.codecs import CodecConfigError
from acomms_core.codecs.config import (
    CODEC_CONFIG_PARAMETERS,
    check_codec_config_parameters,
    codec_config_from_parameters,
)
from acomms_core.fragmentation.settings import fragmenting_packet_codecs
from acomms_core.modems.registry import DEFAULT_MODEM_PROFILE, modem_profile
from acomms_core.nodes.best_effort_intake import BestEffortIntake
from acomms_core.nodes.dynamic_queue_link import DynamicQueueLink, fill_response, packet_request
from acomms_core.nodes.fragmentation_ros import QUEUE_PARAMETERS as FRAGMENTATION_PARAMETERS
from acomms_core.nodes.fragmentation_ros import QueueFragmentation
from acomms_core.nodes.fragmentation_ros import declare as declare_fragmentation
from acomms_core.nodes.queue_status import QueueStatusReport
from acomms_core.nodes.relay_ros import RELAY_PARAMETERS, QueueRelay
from acomms_core.nodes.relay_ros import declare as declare_relay
from acomms_core.queue.dynamic_queue import DynamicQueues
from acomms_core.queue.message_queue import BROADCAST_ADDRESS, MessageQueues
from acomms_core.ros.ros_support import (
    ManagedNode,
    ParameterSpec,
    declare_parameters,
    now_s,
    parameter_values,
    run_node,
)
from acomms_core.security import (
    SECURITY_PARAMETERS,
    SENDER_SECURITY_PARAMETERS,
    SecurityConfigError,
    bind_senders,
)
from acomms_interfaces.msg import (
    NeighborReachability,
    QueueEnable,
    QueuePriority,
)
from acomms_interfaces.srv import GetNextPacketData, PriorityUpdate, QueryModemSrc, QueueActive

LARGEST_PACKET_BYTES = max(r.max_miniframe_bytes + r.max_dataframe_bytes
                           for r in modem_profile(DEFAULT_MODEM_PROFILE).rates.values())

PARAMETERS = CODEC_CONFIG_PARAMETERS + (
    ParameterSpec("default_dest", BROADCAST_ADDRESS, "Destination of queues whose config gives "
                  "no default_dest", minimum=0, maximum=255),
    ParameterSpec("default_priority", 10, "Priority of queues whose config gives no priority "
                  "(higher is sent first)", minimum=0, maximum=32767),
    ParameterSpec("unknown_dests_are_reachable", True, "Treat destinations without a "
                  "neighbor_reachability report as reachable"),
    ParameterSpec("update_rate", 1.0, "queue_status / queue_counters publish rate, Hz",
                  minimum=0.01, maximum=100.0),
    ParameterSpec("src", -1, "This modem's address (-1: unknown: asked from the modem's "
                  "query_modem_src after configure, as ros_acomms does; the ros packet codec "
                  "does not need it, authenticated packet codecs need it at configure)",
                  minimum=-1, maximum=255),
    ParameterSpec("max_packet_bytes", LARGEST_PACKET_BYTES, "Largest packet (miniframe + "
                  "dataframe bytes) any MAC will ask for; messages that can never fit are refused "
                  "on arrival", minimum=1, maximum=65535),
    ParameterSpec("dynamic_queue_timeout_seconds", 2.0, "Time a dynamic queue's get-next "
                  "service may take to answer before it counts as no offer (wall clock; a "
                  "deterministic run waits for the answer instead), s",
                  minimum=0.01, maximum=600.0),
) + SECURITY_PARAMETERS + SENDER_SECURITY_PARAMETERS

# Every parameter the node declares (its own table, then fragmentation's): what scenarios check.
DECLARED_PARAMETERS = PARAMETERS + FRAGMENTATION_PARAMETERS + RELAY_PARAMETERS


SRC_QUERY_PERIOD_S = 1.0  # src unknown: query_modem_src is asked this often (node clock)

# Every subscribe_topic (module doc): nothing is overwritten before the node takes it.
SUBSCRIPTION_QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL,
                              reliability=ReliabilityPolicy.RELIABLE)


class MessageQueueNode(ManagedNode):
    """Lifecycle node serving get_next_packet_data from per-topic priority queues."""

    EXECUTOR = "single"   # what run_node spins it with (module doc)

    def __init__(self, node_name: str = "message_queue_node", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, PARAMETERS, check_codec_config_parameters, self._apply)
        self.fragmentation = QueueFragmentation(self)   # issue 15
        declare_fragmentation(self, FRAGMENTATION_PARAMETERS)
        self.relay = QueueRelay(self)   # issue 32
        declare_relay(self)
        self.queues: MessageQueues | None = None
        self.codec_config = None
        self._service_group = ReentrantCallbackGroup()
        self._subscription_group = MutuallyExclusiveCallbackGroup()
        self.best_effort = BestEffortIntake(self, self._on_message)  # issue 28
        self.status_report = QueueStatusReport(self)
        self.control_errors = 0  # queue_priority / queue_enable for unknown queue ids
        self._src_client = self._src_timer = self._src_future = None  # src from the modem
        self.dynamic_link: DynamicQueueLink | None = None  # with dynamic queues (issue 19)

    # -- parameters -------------------------------------------------------------------------------
    def _apply(self, values: dict, changed: frozenset) -> None:
        """Accepted parameter changes that act at once (the rest are read at configure)."""
        queues = self.queues
        if queues is not None:
            if changed & {"default_dest", "default_priority"}:
                queues.set_defaults(values["default_dest"], values["default_priority"])
            queues.unknown_dests_are_reachable = values["unknown_dests_are_reachable"]
            queues.max_packet_bytes = values["max_packet_bytes"]
        sender = self.fragmentation.sender
        if "src" in changed and sender is not None:  # e.g. src learnt from query_modem_src
            with queues.lock:
                sender.src = values["src"]
        if "src" in changed:
            self.relay.set_src(values["src"])
        link = self.dynamic_link
        if link is not None:
            link.dynamic.default_dest = values["default_dest"]
            link.timeout_s = values["dynamic_queue_timeout_seconds"]
        if "update_rate" in changed:
            self.status_report.cadence.set_period(1.0 / values["update_rate"])

    # -- lifecycle --------------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, [spec.name for spec in PARAMETERS])
        self.status_report.cadence.forget_publishers()  # a failed configure's, if any
        try:
            self.codec_config = codec_config_from_parameters(values)
            bind_senders(self.codec_config, values["src"], values["security_state_dir"],
                         clock=lambda: now_s(self),
                         fresh_key_ids=values["security_fresh_key_ids"])
        except (CodecConfigError, SecurityConfigError) as exc:
            self.get_logger().error(f"configure refused: {exc}")
            return TransitionCallbackReturn.FAILURE
        for warning in self.codec_config.warnings:
            self.get_logger().warning(warning)
        self.queues = MessageQueues(
            self.codec_config, default_dest=values["default_dest"],
            default_priority=values["default_priority"],
            unknown_dests_are_reachable=values["unknown_dests_are_reachable"],
            max_packet_bytes=values["max_packet_bytes"])
        if fragmenting_packet_codecs(self.codec_config):
            try:
                self.fragmentation.configure(self.codec_config, self.queues, values["src"],
                                             BROADCAST_ADDRESS)
            except ValueError as exc:
                self.get_logger().error(f"configure refused: {exc}")
                return TransitionCallbackReturn.FAILURE
        try:
            self.relay.configure(self.codec_config, self.queues, values["src"])
        except ValueError as exc:
            self.get_logger().error(f"configure refused: {exc}")
            return TransitionCallbackReturn.FAILURE
        self._warn_unsendable_queues()
        if values["src"] < 0:
            self._start_src_query()
        dynamic = DynamicQueues(self.codec_config, values["default_dest"])
        if dynamic:
            self.dynamic_link = DynamicQueueLink(self, dynamic, self.configured,
                                                 values["dynamic_queue_timeout_seconds"])
        self.status_report.configure(with_diagnostics=bool(dynamic))
        self.get_logger().info(f"configured {len(self.queues.queues)} queues from "
                               f"{self.codec_config.path}")
        return TransitionCallbackReturn.SUCCESS

    # -- src from the modem (ros_acomms: the queue asks query_modem_src when src is not set) --
    def _start_src_query(self) -> None:
        """Ask the modem's query_modem_src until it answers with an address; then set `src`.
        (Authenticated packet codecs need src at configure: there it must be given.)"""
        self.get_logger().info("src parameter not set: asking the modem (query_modem_src)")
        self._src_client = self.configured.client(QueryModemSrc, "query_modem_src",
                                                  callback_group=self._service_group)
        self._src_future = None
        self._src_timer = self.configured.timer(SRC_QUERY_PERIOD_S, self._query_src,
                                                callback_group=self._service_group)
        self._query_src()

    def _query_src(self) -> None:
        client, future = self._src_client, self._src_future
        if client is None or (future is not None and not future.done()):
            return
        if client.service_is_ready():
            self._src_future = client.call_async(QueryModemSrc.Request())
            self._src_future.add_done_callback(self._on_src_answer)

    def _on_src_answer(self, future) -> None:
        try:
            src = int(future.result().src)
        except Exception as exc:  # a failed call: the timer asks again
            self.get_logger().warning(f"query_modem_src failed: {exc}", throttle_duration_sec=10.0)
            return
        if not 0 <= src <= 255 or self._src_timer is None:
            return  # the modem does not know yet (-1): asked again by the timer
        self._src_timer.cancel()
        self._src_timer = None
        self.set_parameters([Parameter("src", value=src)])
        self.get_logger().info(f"src {src} from the modem (query_modem_src)")

    def _warn_unsendable_queues(self) -> None:
        queues = self.queues
        for topic, queue in queues.queues.items():
            shortest = queue.codec.min_length_bits
            if queues.never_fits(queue, shortest):
                self.get_logger().warning(
                    f"{topic}: every message is at least {shortest} bits "
                    f"({queue.packet_codec.message_cost_bits(shortest)} in a packet), more than "
                    f"a {queues.max_packet_bytes}-byte packet carries "
                    f"({queues.largest_payload_bits(queue)}); all will be refused")

    def on_activate(self, state) -> TransitionCallbackReturn:
        try:
            self._create_activated()
        except Exception as exc:  # e.g. a topic or QoS the middleware refuses
            self.status_report.cadence.stop()
            return self.activate_failed(exc)
        return super().on_activate(state)

    def _on_message_lost(self, info) -> None:
        queues = self.queues
        if queues is not None:
            with queues.lock:
                queues.counts.dropped_on_arrival += info.total_count_change
                queues.counts.last_error = (f"{info.total_count_change} messages lost before "
                                            "the queue took them")

    def _create_activated(self) -> None:
        self.best_effort.reset()
        for topic, queue in self.queues.queues.items():
            events = SubscriptionEventCallbacks(
                message_lost=self._on_message_lost,
                incompatible_qos=lambda info, t=topic, c=queue.codec.msg_class:
                    self.best_effort.on_incompatible_qos(t, c, info, self._subscription_group))
            self.activated.subscription(
                queue.codec.msg_class, topic, lambda msg, t=topic: self._on_message(t, msg),
                SUBSCRIPTION_QOS, callback_group=self._subscription_group, event_callbacks=events)
        self.activated.subscription(NeighborReachability, "neighbor_reachability",
                                     self._on_reachability, 10,
                                     callback_group=self._subscription_group)
        # A deep request queue: many MACs/tools may call at once and none may be dropped.
        service_qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        services = [(PriorityUpdate, "priority_update", self._on_priority_update),
                    (QueueActive, "queue_active", self._on_queue_active)]
        if self.dynamic_link is None:
            services.insert(0, (GetNextPacketData, "get_next_packet_data",
                                self._on_get_next_packet_data))
        else:  # answered once the dynamic queues have (acomms_core.nodes.dynamic_queue_link)
            self.dynamic_link.serve(self.activated, qos_profile=service_qos,
                                    callback_group=self._service_group)
        for srv_type, name, callback in services:
            self.activated.service(srv_type, name, callback, qos_profile=service_qos,
                                    callback_group=self._service_group)
        self.status_report.cadence.start(
            self.activated, 1.0 / self.get_parameter("update_rate").value,
            callback_group=self._service_group)
        self._subscribe_queue_controls()
        if self.fragmentation.sender is not None:
            self.fragmentation.activate(self._subscription_group)
        self.relay.activate(self._subscription_group)

    def _subscribe_queue_controls(self) -> None:
        """`queue_priority` / `queue_enable` topics beside the services (ros_acomms v8): the
        queue is named by its message-codec id, so the command can travel acoustically."""
        self.activated.subscription(QueuePriority, "queue_priority", self._on_queue_priority, 10,
                                    callback_group=self._subscription_group)
        self.activated.subscription(QueueEnable, "queue_enable", self._on_queue_enable, 10,
                                    callback_group=self._subscription_group)

    def _queue_topic_for(self, queue_id: int, what: str) -> str | None:
        topic = None if self.queues is None else self.queues.topic_of_queue_id(queue_id)
        if topic is None:
            self.control_errors += 1
            self.get_logger().warning(f"{what}: no queue with id {queue_id}; ignored")
        return topic

    def _on_queue_priority(self, msg: QueuePriority) -> None:
        topic = self._queue_topic_for(msg.queue_id, "queue_priority")
        if topic is not None:
            self.queues.set_priority(topic, msg.priority)

    def _on_queue_enable(self, msg: QueueEnable) -> None:
        link = self.dynamic_link
        if link is not None and link.dynamic.set_active(msg.queue_id, msg.enable):
            return
        topic = self._queue_topic_for(msg.queue_id, "queue_enable")
        if topic is not None:
            self.queues.set_active(topic, msg.enable)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self.status_report.cadence.stop()
        if self.dynamic_link is not None:
            self.dynamic_link.close()
        return super().on_deactivate(state)

    def on_release(self) -> None:
        """Drop references to what configure and activate made (ManagedNode releases them)."""
        self.status_report.release()
        self._src_client = self._src_timer = self._src_future = None
        if self.dynamic_link is not None:
            self.dynamic_link.close()
        self.dynamic_link = None
        self.fragmentation.release()
        self.relay.release()
        self.queues = None
        self.codec_config = None

    # -- callbacks --------------------------------------------------------------------------------
    def _on_message(self, topic: str, msg) -> None:
        queues = self.queues
        if queues is None:
            return
        outcome = queues.add(topic, msg, now_s(self))
        self.status_report.cadence.rearm()  # a TTL or fragment session may now be due sooner
        for warning in queues.take_clamp_warnings():
            self.get_logger().warning(f"{topic}: {warning}")
        if outcome in ("encode_failures", "rejected_too_large"):
            self.get_logger().warning(f"message on {topic} not queued: "
                                      f"{queues.counts.last_error}", throttle_duration_sec=5.0)
        elif outcome == "fragment_sessions_full":
            self.get_logger().warning(f"message on {topic} not queued: "
                                      f"{queues.counts.last_error}", throttle_duration_sec=5.0)
        elif outcome == "dropped_queue_full":
            self.get_logger().warning(f"{topic}: queue full, new message dropped",
                                      throttle_duration_sec=5.0)

    def _on_reachability(self, msg: NeighborReachability) -> None:
        if self.queues is not None:
            self.queues.set_reachable(msg.dest, msg.reachable)

    def _on_get_next_packet_data(self, request, response):
        queues = self.queues
        if queues is None:
            return response
        try:
            packet = queues.next_packet(packet_request(request), now_s(self))
        except Exception as exc:  # a bug here must not take the MAC down with it
            self.get_logger().error(f"get_next_packet_data failed: {type(exc).__name__}: {exc}")
            queues.counts.last_error = f"get_next_packet_data: {exc}"
            return response
        return fill_response(response, packet)

    def _on_priority_update(self, request, response):
        ok = self.queues is not None and self.queues.set_priority(request.topic_name,
                                                                  request.priority_desired)
        if not ok:
            self.get_logger().warning(f"priority_update: no queue for topic '{request.topic_name}'")
        response.response = ok
        return response

    def _on_queue_active(self, request, response):
        ok = self.queues is not None and self.queues.set_active(request.topic_name,
                                                                request.set_active)
        if not ok:
            self.get_logger().warning(f"queue_active: no queue for topic '{request.topic_name}'")
        response.success = ok
        return response


def make_executor(name: str = MessageQueueNode.EXECUTOR):
    """The executor main() uses ('single') or 'multi' (services in parallel threads)."""
    if name == "single":
        return SingleThreadedExecutor()
    return MultiThreadedExecutor()


def main(args=None) -> int:
    return run_node(MessageQueueNode, args)


if __name__ == "__main__":
    sys.exit(main())
