"""message_queue_node's ROS side of dynamic queues (acomms_core.queue.dynamic_queue decides).

With dynamic queues in the codec config, `get_next_packet_data` is a `DeferredService`: each
request becomes a `PacketBuild`; its GetNextQueuedMessage queries go out as asynchronous calls
(a service that is not up counts as no offer, `dynamic_unavailable`), and the MAC's answer is
sent when the packet is done. Requests are built one at a time, in arrival order, so two packets
never take the same message. A query not answered within `dynamic_queue_timeout_seconds` (wall
clock, checked when the next request arrives and at every status period) counts as no offer
(`dynamic_timeouts`); its answer, if it comes later, is ignored. Queries are `call_awaited`: in a
deterministic run simulated time waits for their answers and this timeout never applies
(acomms_core.ros.service_calls). The build's events go out as
UpdateQueuedMessage on the queue's `dynamic_update_topic` as they happen: EVENT_LINK_QUEUED when
an offer is accepted, then EVENT_LINK_DEQUEUED (let go unsent, also when the build fails or the
node deactivates) or EVENT_LINK_TRANSMITTED (in the packet handed to the MAC); the rules are
acomms_core.queue.dynamic_queue's. Clients and update publishers are made in configure, the
service in activate.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from std_msgs.msg import Header

from acomms_core.queue.dynamic_queue import (
    DEQUEUED,
    QUEUED,
    TRANSMITTED,
    DynamicQueues,
    Offer,
    PacketBuild,
)
from acomms_core.queue.message_queue import PacketData, PacketRequest
from acomms_core.ros.deferred_service import DeferredService
from acomms_core.ros.ros_support import now_s, seconds_to_time_msg
from acomms_core.ros.service_calls import AWAITED, call_awaited, forget, server_ready
from acomms_interfaces.msg import UpdateQueuedMessage
from acomms_interfaces.srv import GetNextPacketData, GetNextQueuedMessage


def packet_request(request) -> PacketRequest:
    """A GetNextPacketData request as the queue's PacketRequest."""
    return PacketRequest(
        num_miniframe_bytes=max(int(request.num_miniframe_bytes), 0),
        num_dataframe_bytes=max(int(request.num_dataframe_bytes), 0),
        match_dest=bool(request.match_dest), dest=int(request.dest),
        minimum_priority=int(request.minimum_priority),
        require_tags=tuple(request.require_tags), exclude_tags=tuple(request.exclude_tags))


def fill_response(response, packet: PacketData):
    response.dest = packet.dest
    response.miniframe_bytes = list(packet.miniframe_bytes)
    response.dataframe_bytes = list(packet.dataframe_bytes)
    response.queued_message_ids = packet.message_seqs
    response.num_miniframe_bytes = len(packet.miniframe_bytes)
    response.num_dataframe_bytes = len(packet.dataframe_bytes)
    response.num_messages = packet.num_messages
    return response


EVENTS = {QUEUED: UpdateQueuedMessage.EVENT_LINK_QUEUED,
          DEQUEUED: UpdateQueuedMessage.EVENT_LINK_DEQUEUED,
          TRANSMITTED: UpdateQueuedMessage.EVENT_LINK_TRANSMITTED}


def _offer(response) -> Offer | None:
    if response is None or not response.has_message:
        return None
    return Offer(message_id=int(response.message_id), dest_address=int(response.dest_address),
                 priority=int(response.priority), data=bytes(response.data),
                 data_size_in_bits=int(response.data_size_in_bits),
                 msg_tags=tuple(response.msg_tags))


class _Pending:
    """A get_next_packet_data request waiting for (or in) its build."""

    def __init__(self, request: PacketRequest, response):
        self.request, self.response = request, response
        self.build: PacketBuild | None = None
        self.answers: dict = {}
        self.waiting: dict = {}    # service -> future still out
        self.deadline = 0.0


class DynamicQueueLink:
    """Serves get_next_packet_data for a node with dynamic queues (module doc)."""

    def __init__(self, node, dynamic: DynamicQueues, resources, timeout_s: float):
        self.node, self.dynamic, self.timeout_s = node, dynamic, timeout_s
        self.log = node.get_logger()
        self.clients = {q.service: resources.client(GetNextQueuedMessage, q.service)
                        for q in dynamic.queues}
        self.updates = {q.service: resources.publisher(UpdateQueuedMessage, q.update_topic, 10)
                        for q in dynamic.queues if q.update_topic}
        self.service: DeferredService | None = None
        self._pending: deque[_Pending] = deque()
        self._lock = threading.RLock()  # futures may complete on other executor threads

    def serve(self, resources, **kwargs) -> None:
        self.service = DeferredService(resources, GetNextPacketData, "get_next_packet_data",
                                       self.on_request, **kwargs)

    # ----- requests -----------------------------------------------------------------------

    def on_request(self, request, response):
        with self._lock:
            if self.node.queues is None:
                return response
            self.check_overdue()
            self._pending.append(_Pending(packet_request(request), response))
            deferred = self.service.defer(response)
            if len(self._pending) == 1:
                self._start(self._pending[0])
            return deferred

    def close(self) -> None:
        """Answer every waiting request with an empty packet (deactivate, cleanup)."""
        with self._lock:
            while self._pending:
                pending = self._pending.popleft()
                self._abandon(pending)
                try:
                    self.service.complete(fill_response(pending.response, PacketData()))
                except Exception as exc:  # the service may already be gone (shutdown)
                    self.dynamic.counts["dynamic_errors"] += 1
                    self.log.warning(f"get_next_packet_data left unanswered: {exc}")

    def _start(self, pending: _Pending) -> None:
        try:
            pending.build = PacketBuild(self.node.queues, self.dynamic, pending.request,
                                        now_s(self.node))
        except Exception as exc:  # a bug here must not take the MAC down with it
            self._failed(pending, exc)
            return
        self._ask(pending)

    def _ask(self, pending: _Pending) -> None:
        """Send the build's queries; answer at once for services that are not up."""
        build = pending.build
        self._publish_events(build)
        if build.done:
            self._finish(pending)
            return
        pending.answers, pending.waiting = {}, {}
        pending.deadline = time.monotonic() + self.timeout_s
        for query in build.queries:
            service = query.queue.service
            client = self.clients[service]
            if not server_ready(client):
                self.dynamic.counts["dynamic_unavailable"] += 1
                pending.answers[service] = None
                continue
            future = call_awaited(self.node, client, GetNextQueuedMessage.Request(
                max_size_in_bits=query.max_size_in_bits,
                minimum_priority=query.minimum_priority, dest_address=query.dest_address,
                packet_codec=query.packet_codec, exclude_message_ids=query.exclude_message_ids,
                require_tags=query.require_tags, exclude_tags=query.exclude_tags))
            pending.waiting[service] = future
            future.add_done_callback(lambda f, p=pending, s=service: self._answered(p, s, f))
        self._step_if_answered(pending)

    def _answered(self, pending: _Pending, service: str, future) -> None:
        with self._lock:
            self._take_answer(pending, service, future)

    def _take_answer(self, pending: _Pending, service: str, future) -> None:
        if pending.waiting.get(service) is not future:
            return  # timed out already
        del pending.waiting[service]
        try:
            pending.answers[service] = _offer(future.result())
        except Exception as exc:
            self.dynamic.counts["dynamic_errors"] += 1
            self.log.warning(f"{service} failed: {exc}", throttle_duration_sec=10.0)
            pending.answers[service] = None
        self._step_if_answered(pending)

    def _step_if_answered(self, pending: _Pending) -> None:
        if pending.waiting or not self._pending or self._pending[0] is not pending:
            return
        try:
            pending.build.answer(pending.answers)
        except Exception as exc:
            self._failed(pending, exc)
            return
        self._ask(pending)

    def check_overdue(self) -> None:
        """Queries out longer than the timeout count as no offer (module doc)."""
        with self._lock:
            if self._pending:
                self._expire(self._pending[0])

    def _expire(self, pending: _Pending) -> None:
        if pending.waiting and not AWAITED.stepped and time.monotonic() > pending.deadline:
            for service, future in list(pending.waiting.items()):
                forget(future)
                self.dynamic.counts["dynamic_timeouts"] += 1
                self.log.warning(f"{service} did not answer within {self.timeout_s:g} s; "
                                 "no offer from it for this packet")
                pending.answers[service] = None
            pending.waiting = {}
            self._step_if_answered(pending)

    # ----- results ------------------------------------------------------------------------

    def _publish_events(self, build: PacketBuild) -> None:
        events = build.take_events()
        if not events:
            return
        stamp = seconds_to_time_msg(now_s(self.node))
        for event in events:
            publisher = self.updates.get(event.service)
            if publisher is not None:
                publisher.publish(UpdateQueuedMessage(header=Header(stamp=stamp),
                                                      message_id=event.message_id,
                                                      event=EVENTS[event.event]))

    def _abandon(self, pending: _Pending) -> None:
        """The pending packet will not be sent: its held messages are DEQUEUED."""
        if pending.build is not None and not pending.build.done:
            try:
                pending.build.abandon()
                self._publish_events(pending.build)
            except Exception as exc:  # the publishers may already be gone (shutdown)
                self.dynamic.counts["dynamic_errors"] += 1
                self.log.warning(f"dynamic queue events not sent: {exc}")

    def _failed(self, pending: _Pending, exc: Exception) -> None:
        self._abandon(pending)
        self.dynamic.counts["dynamic_errors"] += 1
        self.log.error(f"get_next_packet_data failed: {type(exc).__name__}: {exc}")
        self._complete(pending, PacketData())

    def _finish(self, pending: _Pending) -> None:
        packet = pending.build.result
        if self.dynamic.last_error:
            self.log.warning(self.dynamic.last_error, throttle_duration_sec=5.0)
            self.dynamic.last_error = ""
        self._complete(pending, packet)

    def _complete(self, pending: _Pending, packet: PacketData) -> None:
        self._pending.popleft()
        self.service.complete(fill_response(pending.response, packet))
        if self._pending:
            self._start(self._pending[0])
