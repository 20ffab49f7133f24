"""Services over acoustics: the caller's end and the server's end (lifecycle nodes).

`remote_service_caller` (e.g. on the topside) serves every service of its `service_table` under
the usual names (relative to its namespace, after `service_prefix`). A call is range-checked
first: out of range, it is answered at once with the table's refusal code and a logged error, and
nothing is transmitted. Otherwise it gets a correlation id and goes out as a RemoteServiceRequest
on `to_acomms/service_request`; the RemoteServiceResponse from `from_acomms/service_response`
completes the call with the real answer, or with the table's code for "timeout" / "not
available" / "bad request"; no answer within `call_timeout_s` (node clock) completes it with the
"timeout" code. `remote_service_server` (e.g. on the buoy) calls the real service
(`target_prefix` + name) for each request and answers on `to_acomms/service_response`.
Both count what happened on /diagnostics.

Both timeouts run on the node clock, not the wall clock: what they bound is the link's round trip
and the buoy's answer, which in a simulation take simulated time (at `--warp max` a minute of it
passes in milliseconds; a wall-clock timeout would fire at arbitrary simulated times). On a real
vehicle the node clock is the system clock. No bridge uses the wall clock.
"""

from __future__ import annotations

import sys

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.serialization import deserialize_message, serialize_message

from acomms_bringup.bridges import remote_service as rs
from acomms_bringup.bridges.deferred_service import DeferredService
from acomms_bringup.bridges.registry import SERVICE_TABLES
from acomms_core.ros.ros_support import (
    ManagedNode,
    ParameterSpec,
    counters_diagnostics,
    declare_parameters,
    is_active,
    now_s,
    parameter_values,
    run_node,
    wake_timer_at,
)
from acomms_interfaces.msg import RemoteServiceRequest, RemoteServiceResponse

TABLE_SPEC = ParameterSpec("service_table", "wec_buoy", "Services carried (a key of "
                           "acomms_bringup.bridges.registry.SERVICE_TABLES); both ends alike.",
                           read_only=True)
IDLE_WAKE_S = 3600.0   # timeout timer period while nothing is in flight


def check_table(values: dict) -> str | None:
    if values.get("service_table") not in SERVICE_TABLES:
        return (f"service_table: {values.get('service_table')!r} is not one of "
                f"{', '.join(sorted(SERVICE_TABLES))}")
    return None


def copy_message(source, target) -> None:
    for field in target.get_fields_and_field_types():
        setattr(target, field, getattr(source, field))


class _RemoteServiceNode(ManagedNode):
    """Table, service classes, pending calls, the deadline timer and counters."""

    PARAMETERS: tuple = ()
    COUNTERS: tuple = ()

    def __init__(self, node_name: str, **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, self.PARAMETERS, check_table)
        self.values = parameter_values(self, [spec.name for spec in self.PARAMETERS])
        self.table = SERVICE_TABLES[self.values["service_table"]]
        self.classes = []
        self.pending = rs.PendingCalls()
        self.counts = dict.fromkeys(self.COUNTERS, 0)
        self._timer = self._diag_pub = None

    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            self.classes = [rs.srv_class(service.srv_type) for service in self.table]
        except (ImportError, AttributeError) as exc:
            self.get_logger().error(f"configure refused: service types of table "
                                    f"{self.values['service_table']!r} not available ({exc}); "
                                    "for buoy_interfaces run scripts/buoy_interfaces.sh")
            return TransitionCallbackReturn.FAILURE
        self._diag_pub = self.configured.publisher(DiagnosticArray, "/diagnostics")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._timer = self.activated.timer(IDLE_WAKE_S, self.on_deadline)
        return super().on_activate(state)

    def on_release(self) -> None:
        self._timer = self._diag_pub = None

    def rearm(self) -> None:
        """Wake the deadline timer at the earliest deadline in flight."""
        deadline = self.pending.next_deadline_s()
        if self._timer is None:
            return
        now_ns = self.get_clock().now().nanoseconds
        wake_ns = now_ns + int(IDLE_WAKE_S * 1e9) if deadline is None else int(deadline * 1e9)
        wake_timer_at(self._timer, max(wake_ns, now_ns + 1), now_ns)

    def on_deadline(self) -> None:
        if not is_active(self):   # a timer that fired while the node is being deactivated
            return
        for waiter in self.pending.expired(now_s(self)):
            self.expire(waiter)
        self.rearm()
        self.publish_counters()

    def expire(self, waiter) -> None:
        """A call in flight passed its deadline."""

    def bridge_summary(self) -> dict:
        return dict(self.counts)

    def publish_counters(self) -> None:
        if self._diag_pub is not None:
            self._diag_pub.publish(counters_diagnostics(
                self.get_fully_qualified_name(), f"{len(self.pending)} in flight", self.counts,
                self.get_clock().now().to_msg()))


class RemoteServiceCaller(_RemoteServiceNode):
    PARAMETERS = (
        TABLE_SPEC,
        ParameterSpec("call_timeout_s", 900.0, "Seconds (node clock, not wall clock: "
                      "simulated time in a simulation) a call waits for its answer over the "
                      "link.", minimum=1.0, maximum=86400.0, read_only=True),
        ParameterSpec("service_prefix", "", "Prefix of the served names ('' : relative to "
                      "the namespace).", read_only=True),
    )
    COUNTERS = ("calls", "refused_out_of_range", "requests_sent", "answered", "remote_errors",
                "timeouts", "unmatched_responses")

    def __init__(self, node_name: str = "remote_service_caller", **kwargs):
        super().__init__(node_name, **kwargs)
        self._request_pub = None
        self._servers = []

    def on_configure(self, state) -> TransitionCallbackReturn:
        result = super().on_configure(state)
        if result == TransitionCallbackReturn.SUCCESS:
            self._request_pub = self.configured.publisher(RemoteServiceRequest,
                                                          "to_acomms/service_request")
        return result

    def on_activate(self, state) -> TransitionCallbackReturn:
        prefix = self.values["service_prefix"]
        self._servers = [
            DeferredService(self.activated, cls, prefix + service.name,
                            lambda request, response, index=index: self.on_call(index, request,
                                                                                response))
            for index, (service, cls) in enumerate(zip(self.table, self.classes, strict=True))]
        self.activated.subscription(RemoteServiceResponse, "from_acomms/service_response",
                                    self.on_response)
        return super().on_activate(state)

    def on_release(self) -> None:
        super().on_release()
        self._request_pub = None
        self._servers = []

    def on_call(self, index: int, request, response):
        service = self.table[index]
        self.counts["calls"] += 1
        reason = service.check_request(request)
        if reason:
            self.counts["refused_out_of_range"] += 1
            self.get_logger().error(f"refused before transmitting: {reason}")
            return service.fill_error(response, rs.OUT_OF_RANGE)
        server = self._servers[index]
        deadline = now_s(self) + self.values["call_timeout_s"]
        correlation_id = self.pending.add(deadline, (index, response, server))
        self._request_pub.publish(RemoteServiceRequest(
            correlation_id=correlation_id, service_id=index,
            request=list(serialize_message(request))))
        self.counts["requests_sent"] += 1
        self.rearm()
        return server.defer(response)

    def on_response(self, msg: RemoteServiceResponse) -> None:
        waiter = self.pending.pop(msg.correlation_id)
        if waiter is None:
            self.counts["unmatched_responses"] += 1
            self.get_logger().warning(f"response #{msg.correlation_id} matches no call in "
                                      "flight (late, duplicate or foreign); ignored")
            return
        index, response, server = waiter
        service = self.table[index]
        status = rs.STATUS_NAMES.get(msg.status, "bad request")
        if msg.service_id != index:   # the other end answered another service: not trusted
            status = "bad request"
        if status == "ok":
            try:
                copy_message(deserialize_message(bytes(msg.response),
                                                 self.classes[index].Response), response)
                self.counts["answered"] += 1
            except Exception as exc:  # undecodable answer: an error for the caller, no crash
                status = "bad request"
                self.get_logger().error(f"{service.name} #{msg.correlation_id}: answer not "
                                        f"decodable ({exc})")
        if status != "ok":
            self.counts["remote_errors"] += 1
            self.get_logger().error(f"{service.name} #{msg.correlation_id}: {status} on the "
                                    "remote side")
            service.fill_error(response, status)
        server.complete(response)
        self.rearm()

    def expire(self, waiter) -> None:
        index, response, server = waiter
        self.counts["timeouts"] += 1
        self.get_logger().error(f"{self.table[index].name}: no answer within "
                                f"{self.values['call_timeout_s']:g} s over the link (timeout)")
        server.complete(self.table[index].fill_error(response, "timeout"))


class RemoteServiceServer(_RemoteServiceNode):
    PARAMETERS = (
        TABLE_SPEC,
        ParameterSpec("service_timeout_s", 10.0, "Seconds (node clock, not wall clock) the "
                      "real service may take.", minimum=0.1, maximum=3600.0, read_only=True),
        ParameterSpec("target_prefix", "/", "Prefix of the real services' names ('': relative "
                      "to the namespace, '/': MBARI's absolute names).", read_only=True),
    )
    COUNTERS = ("requests", "called", "answered", "timeouts", "not_available", "bad_requests",
                "duplicates")

    def __init__(self, node_name: str = "remote_service_server", **kwargs):
        super().__init__(node_name, **kwargs)
        self._response_pub = None
        self._targets = []

    def on_configure(self, state) -> TransitionCallbackReturn:
        result = super().on_configure(state)
        if result == TransitionCallbackReturn.SUCCESS:
            self._response_pub = self.configured.publisher(RemoteServiceResponse,
                                                           "to_acomms/service_response")
            prefix = self.values["target_prefix"]
            self._targets = [self.configured.client(cls, prefix + service.name)
                             for service, cls in zip(self.table, self.classes, strict=True)]
        return result

    def on_activate(self, state) -> TransitionCallbackReturn:
        self.activated.subscription(RemoteServiceRequest, "from_acomms/service_request",
                                    self.on_request)
        return super().on_activate(state)

    def on_release(self) -> None:
        super().on_release()
        self._response_pub = None
        self._targets = []

    def answer(self, msg: RemoteServiceRequest, status: int, response=None) -> None:
        self._response_pub.publish(RemoteServiceResponse(
            correlation_id=msg.correlation_id, service_id=msg.service_id, status=status,
            response=list(serialize_message(response)) if response is not None else []))
        self.publish_counters()

    def on_request(self, msg: RemoteServiceRequest) -> None:
        self.counts["requests"] += 1
        if msg.service_id >= len(self.table):
            self.counts["not_available"] += 1
            self.get_logger().error(f"request #{msg.correlation_id}: no service id "
                                    f"{msg.service_id} in table {self.values['service_table']}")
            return self.answer(msg, rs.STATUS_NOT_AVAILABLE)
        service, client = self.table[msg.service_id], self._targets[msg.service_id]
        try:
            request = deserialize_message(bytes(msg.request), self.classes[msg.service_id].Request)
            reason = service.check_request(request)
        except Exception as exc:  # undecodable bytes must not crash the node
            reason = f"{service.name}: request not decodable ({exc})"
        if reason:
            self.counts["bad_requests"] += 1
            self.get_logger().error(f"request #{msg.correlation_id} refused: {reason}")
            return self.answer(msg, rs.STATUS_BAD_REQUEST)
        if not client.service_is_ready():
            self.counts["not_available"] += 1
            self.get_logger().error(f"request #{msg.correlation_id}: {client.srv_name} is not "
                                    "available")
            return self.answer(msg, rs.STATUS_NOT_AVAILABLE)
        future = client.call_async(request)
        if not self.pending.put(msg.correlation_id, now_s(self) + self.values[
                "service_timeout_s"], (msg, client, future)):
            self.counts["duplicates"] += 1
            client.remove_pending_request(future)
            return None
        self.counts["called"] += 1
        future.add_done_callback(lambda done, msg=msg: self.on_answered(msg, done))
        self.rearm()
        return None

    def on_answered(self, msg: RemoteServiceRequest, future) -> None:
        if self.pending.pop(msg.correlation_id) is None or future.cancelled():
            return   # timed out already
        self.counts["answered"] += 1
        self.answer(msg, rs.STATUS_OK, future.result())
        self.rearm()

    def expire(self, waiter) -> None:
        msg, client, future = waiter
        client.remove_pending_request(future)
        self.counts["timeouts"] += 1
        self.get_logger().error(f"request #{msg.correlation_id}: {client.srv_name} did not "
                                f"answer within {self.values['service_timeout_s']:g} s")
        self.answer(msg, rs.STATUS_TIMEOUT)


def main_caller(args=None):
    return run_node(RemoteServiceCaller, args)


def main_server(args=None):
    return run_node(RemoteServiceServer, args)


if __name__ == "__main__":
    sys.exit(main_caller())
