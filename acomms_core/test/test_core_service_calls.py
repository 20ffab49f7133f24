"""acomms_core.ros.service_calls without a ROS graph: a reply that rmw could not send (the client's
reader not matched yet: rclpy only warns) is sent again until it goes, bounded in wall time;
awaited calls are listed (per node) until their reply is in or the caller forgets them."""

import warnings

import pytest
from rclpy.task import Future

from acomms_core.ros.service_calls import (
    AWAITED,
    LOST_REPLY_WARNING,
    AwaitedCalls,
    ReliableReplies,
    call_awaited,
    forget,
)

RMW_TEXT = f"{LOST_REPLY_WARNING}: client will not receive response, at ./src/rmw_response.cpp:154"


class FlakyService:
    """send_response as rclpy's: warns (does not raise) while the client's reader is unmatched."""

    srv_name = "/v/get_next_packet_data"

    def __init__(self, unmatched_attempts: int):
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
    assert service.delivered == [("reply", "header")] and service.attempts == 4
    assert (replies.resent, replies.lost) == (1, 0)
    assert not shown  # the rmw warning is handled, not printed
    assert service.acomms_replies is replies


def test_a_reply_whose_reader_never_matches_is_given_up_with_one_error_line():
    service, log = FlakyService(unmatched_attempts=10**9), Logger()
    replies = ReliableReplies(service, log, retry_wall_s=0.05)
    service.send_response("reply", "header")
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

    def get_fully_qualified_name(self):
        return self.name


class Client:
    srv_name = "/v/queue_tx_packet"

    def call_async(self, request):
        return Future()


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
