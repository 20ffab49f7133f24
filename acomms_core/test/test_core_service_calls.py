"""acomms_core.ros.service_calls without a ROS graph: a reply that rmw could not send (the client's
reader not matched yet: rclpy only warns) is sent again until it goes, bounded in wall time;
awaited calls are listed (per node) until their reply is in or the caller forgets them."""

import gc
import warnings

import pytest
from rclpy.task import Future

from acomms_core.ros import service_calls
from acomms_core.ros.service_calls import (
    AWAITED,
    HANDLED,
    LOST_REPLY_WARNING,
    RESEND_AFTER_WALL_S,
    AwaitedCalls,
    ReliableReplies,
    Resend,
    call_awaited,
    forget,
)

RMW_TEXT = f"{LOST_REPLY_WARNING}: client will not receive response, at ./src/rmw_response.cpp:154"


class FlakyService:
    """send_response as rclpy's: warns (does not raise) while the client's reader is unmatched."""

    service_name = "/v/get_next_packet_data"

    def __init__(self, unmatched_attempts: int):
        self.callback = lambda request, response: response
        self.unmatched_attempts = unmatched_attempts
        self.attempts = 0
        self.delivered = []

    def send_response(self, response, header):
        self.attempts += 1
        if self.attempts <= self.unmatched_attempts:
            warnings.warn(RMW_TEXT, RuntimeWarning, stacklevel=1)
            return
        self.delivered.append((response, header))


class Logger:
    def __init__(self):
        self.errors = []

    def error(self, text):
        self.errors.append(text)


def test_a_reply_lost_to_an_unmatched_reader_is_sent_again_until_it_goes():
    service = FlakyService(unmatched_attempts=3)
    replies = ReliableReplies(service, Logger())
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        service.send_response("reply", "header")  # what rclpy's executor calls
        assert service.attempts == 1  # the executor goes on; a thread sends it again
        replies.retrying.join(timeout=10.0)
    assert service.delivered == [("reply", "header")] and service.attempts == 4
    assert (replies.resent, replies.lost) == (1, 0)
    assert not shown  # the rmw warning is handled, not printed
    assert service.acomms_replies is replies


def test_a_reply_whose_reader_never_matches_is_given_up_with_one_error_line():
    service, log = FlakyService(unmatched_attempts=10**9), Logger()
    replies = ReliableReplies(service, log, retry_wall_s=0.05)
    service.send_response("reply", "header")
    replies.retrying.join(timeout=10.0)
    assert service.delivered == [] and service.attempts > 1
    assert replies.lost == 1
    assert len(log.errors) == 1 and log.errors[0].startswith(
        "/v/get_next_packet_data: the client's reader never matched within 0.05 wall s")


def test_other_warnings_raised_while_sending_are_passed_on():
    class Noisy(FlakyService):
        def send_response(self, response, header):
            warnings.warn("something else", UserWarning, stacklevel=1)
            super().send_response(response, header)

    service = Noisy(unmatched_attempts=0)
    ReliableReplies(service)
    with pytest.warns(UserWarning, match="something else"):
        service.send_response("reply", "header")
    assert len(service.delivered) == 1


class Node:
    def __init__(self, name):
        self.name = name
        self.warnings = []

    def get_fully_qualified_name(self):
        return self.name

    def get_logger(self):
        return self

    def warning(self, text):
        self.warnings.append(text)


class Client:
    service_name = "/v/queue_tx_packet"

    def __init__(self):
        self.sent, self.forgotten = [], []

    def call_async(self, request):
        self.sent.append((request, Future()))
        return self.sent[-1][1]

    def remove_pending_request(self, future):
        self.forgotten.append(future)


def test_awaited_calls_are_listed_per_node_until_answered_or_forgotten():
    calls = AwaitedCalls()
    mac, other = Node("/v/tdma"), Node("/w/tdma")
    first, second = Future(), Future()
    calls.add(first, mac, "/v/get_next_packet_data")
    calls.add(second, other, "/w/get_next_packet_data")
    assert calls.pending([mac]) == ["/v/tdma (waiting for a reply to /v/get_next_packet_data)"]
    assert len(calls.pending()) == 2
    first.set_result("answer")
    assert calls.pending([mac]) == [] and len(calls) == 1
    calls.remove(second)
    assert calls.pending() == [] and len(calls) == 0


def test_call_awaited_registers_in_the_process_registry_and_forget_drops_it():
    mac = Node("/v/tdma")
    future = call_awaited(mac, Client(), request=None)
    try:
        assert AWAITED.pending([mac]) == ["/v/tdma (waiting for a reply to /v/queue_tx_packet)"]
    finally:
        forget(future)
    assert AWAITED.pending([mac]) == []


def test_stepping_is_counted_and_released():
    calls = AwaitedCalls()
    assert not calls.stepped
    with calls.stepping():
        with calls.stepping():
            assert calls.stepped
        assert calls.stepped
    assert not calls.stepped


def test_a_request_its_in_process_server_never_took_is_sent_again_once_overdue(monkeypatch):
    monkeypatch.setitem(HANDLED, "/v/queue_tx_packet", 7)  # served here, 7 requests taken
    calls, mac, client = AwaitedCalls(), Node("/v/tdma"), Client()
    future = client.call_async("packet")
    calls.add(future, mac, client.service_name, Resend(client, "packet", now=100.0))
    assert calls.resend_lost(now=100.0 + RESEND_AFTER_WALL_S / 2) == 0  # not overdue yet
    assert calls.resend_lost(now=100.0 + RESEND_AFTER_WALL_S) == 1
    assert [r for r, _ in client.sent] == ["packet", "packet"] and client.forgotten == [future]
    assert calls.resent == 1 and "sent again" in mac.warnings[0]
    client.sent[1][1].set_result("accepted")  # the answer to the second request ...
    assert future.result() == "accepted"  # ... is the caller's
    assert calls.pending() == []


def test_a_call_is_not_sent_again_once_its_server_took_a_request_or_when_served_elsewhere(
        monkeypatch):
    monkeypatch.setitem(HANDLED, "/v/queue_tx_packet", 7)
    calls, client = AwaitedCalls(), Client()
    future = client.call_async("packet")
    calls.add(future, Node("/v/tdma"), client.service_name, Resend(client, "packet", now=0.0))
    HANDLED["/v/queue_tx_packet"] += 1  # taken: its answer may be slow, it is not lost
    assert calls.resend_lost(now=60.0) == 0
    monkeypatch.delitem(HANDLED, "/v/queue_tx_packet")  # a server in another process
    remote = Resend(client, "packet", now=0.0)
    assert not remote.lost(now=60.0)


def test_reliable_replies_count_the_requests_a_service_takes(monkeypatch):
    monkeypatch.setattr(service_calls, "HANDLED", {})
    service = FlakyService(unmatched_attempts=0)
    ReliableReplies(service)
    assert service_calls.HANDLED == {"/v/get_next_packet_data": 0}
    assert service.callback("request", "response") == "response"
    assert service_calls.HANDLED == {"/v/get_next_packet_data": 1}


def test_a_dynamic_queue_query_never_times_out_on_the_wall_clock_in_a_stepped_run():
    """dynamic_queue_timeout_seconds (wall clock) applies only to a free-running clock; in a
    stepped run the query stays out (the stepper waits for its answer)."""
    import threading
    from collections import Counter

    from acomms_core.nodes.dynamic_queue_link import DynamicQueueLink, _Pending

    link = DynamicQueueLink.__new__(DynamicQueueLink)  # only what the timeout check uses
    link.dynamic, link.timeout_s = type("Dynamic", (), {"counts": Counter()})(), 2.0
    link.log, link._lock, link._pending = Logger(), threading.RLock(), []
    link.log.warning = link.log.error
    link._step_if_answered = lambda pending: None
    pending = _Pending(request=None, response=None)
    pending.waiting, pending.deadline = {"/v/get_next": Future()}, 0.0  # long overdue
    link._pending = [pending]
    with AWAITED.stepping():
        link.check_overdue()
    assert list(pending.waiting) == ["/v/get_next"] and not link.dynamic.counts
    link.check_overdue()  # free-running: the wall-clock timeout applies
    assert pending.waiting == {} and pending.answers == {"/v/get_next": None}
    assert link.dynamic.counts["dynamic_timeouts"] == 1


class _Handle:
    pointer = 1  # rclpy's handle: 0 once the entity is destroyed


class _Served(FlakyService):
    """A service with a handle (server_ready reads whether it was destroyed there)."""

    def __init__(self, name: str):
        super().__init__(0)
        self.service_name = name
        self.handle = _Handle()


class _Client:
    """A client whose graph queries are counted."""

    def __init__(self, name: str, ready: bool = True):
        self.service_name, self.ready, self.asked = name, ready, 0

    def service_is_ready(self) -> bool:
        self.asked += 1
        return self.ready


def test_server_ready_asks_the_graph_only_until_a_live_server_of_this_process_answered():
    """Once ready for a service this process serves (a ReliableReplies one), a client is known
    ready without a graph query (linear in the process's endpoints) until that service is
    destroyed; a server of another process is asked about every time."""
    served = _Served("/v/served_here")
    ReliableReplies(served, Logger())
    assert service_calls.SERVED["/v/served_here"] is served
    client = _Client("/v/served_here", ready=False)
    assert not service_calls.server_ready(client) and client.asked == 1  # not matched yet
    client.ready = True
    assert service_calls.server_ready(client) and client.asked == 2
    assert service_calls.server_ready(client) and client.asked == 2  # no graph query now
    served.handle.pointer = 0  # destroyed
    client.ready = False
    assert not service_calls.server_ready(client) and client.asked == 3  # asked again

    elsewhere = _Client("/v/served_elsewhere")
    for asked in (1, 2, 3):
        assert service_calls.server_ready(elsewhere) and elsewhere.asked == asked
    del served  # not kept alive by the registry (its ReliableReplies is a cycle with it)
    gc.collect()
    assert "/v/served_here" not in service_calls.SERVED
