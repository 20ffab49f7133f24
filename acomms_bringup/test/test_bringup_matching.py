"""The runner's delivery matcher, ROS-free: sent messages against arrivals, by stamp or content."""

import pytest

from acomms_bringup.run.matching import DeliveryMatcher, Outcome, Stream, stamp_tolerance_s
from acomms_bringup.run.report import RunRecord, summarize

NAV = Stream("nav", "auv", ("gateway", "topside"), stamp_tolerance_s(60.0))  # broadcast
CMD = Stream("cmd", "topside", ("auv",), stamp_tolerance_s(90.0))


def new_matcher():
    record = RunRecord("unit", {"auv": 1, "gateway": 2, "topside": 3}, duration_s=600.0,
                       warp_factor=10.0)
    return record, DeliveryMatcher(record)


def test_tolerance_is_half_a_period_at_most_one_second():
    assert stamp_tolerance_s(60.0) == 1.0
    assert stamp_tolerance_s(1.0) == 0.5


def test_stamp_match_tolerates_codec_rounding_and_computes_latency():
    record, matcher = new_matcher()
    matcher.sent(NAV, 5.0, 1, 5.0)
    assert matcher.arrived("topside", [NAV], 5.3, 9.5) is Outcome.DELIVERED
    (delivery,) = record.deliveries
    assert (delivery.topic, delivery.source, delivery.destination, delivery.seq) == (
        "nav", "auv", "topside", 1)
    assert delivery.latency_s == pytest.approx(4.5)


def test_broadcast_is_delivered_once_to_each_destination():
    record, matcher = new_matcher()
    matcher.sent(NAV, 5.0, 1, 5.0)
    assert matcher.arrived("gateway", [NAV], 5.0, 8.0) is Outcome.DELIVERED
    assert matcher.arrived("topside", [NAV], 5.0, 9.0) is Outcome.DELIVERED
    assert sorted(d.destination for d in record.deliveries) == ["gateway", "topside"]
    rows = {r["destination"]: r for r in summarize(record)["topics"]}
    assert rows["gateway"]["delivered"] == rows["topside"]["delivered"] == 1


def test_duplicates_count_once():
    record, matcher = new_matcher()
    matcher.sent(CMD, "cmd 1", 1, 15.0)
    assert matcher.arrived("auv", [CMD], "cmd 1", 30.0) is Outcome.DELIVERED
    assert matcher.arrived("auv", [CMD], "cmd 1", 45.0) is Outcome.DUPLICATE
    assert len(record.deliveries) == 1 and record.deliveries[0].received_s == 30.0
    assert not record.unmatched and not record.overheard
    assert record.duplicates == {"cmd at auv": 1}
    assert summarize(record)["duplicates"] == {"cmd at auv": 1}


def test_identical_content_is_taken_in_order_per_destination():
    record, matcher = new_matcher()
    matcher.sent(CMD, "same", 1, 15.0)
    matcher.sent(CMD, "same", 2, 105.0)
    assert matcher.arrived("auv", [CMD], "same", 110.0) is Outcome.DELIVERED
    assert matcher.arrived("auv", [CMD], "same", 120.0) is Outcome.DELIVERED
    assert matcher.arrived("auv", [CMD], "same", 130.0) is Outcome.DUPLICATE
    assert [(d.seq, d.received_s) for d in record.deliveries] == [(1, 110.0), (2, 120.0)]


def test_overheard_and_unmatched_are_counted_apart():
    record, matcher = new_matcher()
    matcher.sent(CMD, "cmd 1", 1, 15.0)
    assert matcher.arrived("gateway", [CMD], "cmd 1", 30.0) is Outcome.OVERHEARD
    assert matcher.arrived("auv", [CMD], "cmd 9", 30.0) is Outcome.UNMATCHED
    matcher.sent(NAV, 5.0, 1, 5.0)
    assert matcher.arrived("topside", [NAV], 6.5, 9.0) is Outcome.UNMATCHED  # beyond 1 s
    assert record.overheard == {"cmd at gateway": 1}
    assert record.unmatched == {"cmd at auv": 1, "nav at topside": 1}
    assert record.deliveries == []


def test_own_stream_is_skipped_so_another_source_can_match():
    record, matcher = new_matcher()
    gateway_nav = Stream("nav", "gateway", ("auv", "topside"), 1.0)
    matcher.sent(NAV, 5.0, 1, 5.0)
    matcher.sent(gateway_nav, 5.2, 1, 5.2)
    # At the AUV the AUV's own stream is skipped: the arrival is the gateway's message.
    assert matcher.arrived("auv", [NAV, gateway_nav], 5.2, 9.0) is Outcome.DELIVERED
    assert record.deliveries[0].source == "gateway"
    # Its own message coming back to the AUV matches nothing.
    assert matcher.arrived("auv", [NAV], 5.0, 9.0) is Outcome.UNMATCHED


def test_late_arrival_matches_its_own_message_not_the_newest():
    record, matcher = new_matcher()
    for seq, sent_s in ((1, 5.0), (2, 65.0), (3, 125.0)):
        matcher.sent(NAV, sent_s, seq, sent_s)
    matcher.sent(CMD, "cmd 1", 1, 15.0)
    matcher.sent(CMD, "cmd 2", 2, 105.0)
    assert matcher.arrived("topside", [NAV], 125.0, 130.0) is Outcome.DELIVERED
    assert matcher.arrived("topside", [NAV], 5.0, 140.0) is Outcome.DELIVERED  # late
    assert matcher.arrived("auv", [CMD], "cmd 1", 150.0) is Outcome.DELIVERED  # late
    by_seq = {(d.topic, d.seq): d for d in record.deliveries}
    assert by_seq[("nav", 1)].latency_s == pytest.approx(135.0)
    assert by_seq[("nav", 3)].latency_s == pytest.approx(5.0)
    assert by_seq[("cmd", 1)].latency_s == pytest.approx(135.0)
    assert summarize(record)["messages_delivered"] == 3


def test_arrival_before_anything_was_sent_is_unmatched():
    record, matcher = new_matcher()
    assert matcher.arrived("topside", [NAV], 5.0, 6.0) is Outcome.UNMATCHED
    assert matcher.arrived("auv", [CMD], "x", 6.0) is Outcome.UNMATCHED
    assert record.unmatched == {"nav at topside": 1, "cmd at auv": 1}


def test_matcher_continues_a_record_without_double_counting():
    record, matcher = new_matcher()
    matcher.sent(CMD, "cmd 1", 1, 15.0)
    matcher.arrived("auv", [CMD], "cmd 1", 30.0)
    again = DeliveryMatcher(record)  # e.g. a second matcher over the same record
    again.sent(CMD, "cmd 1", 1, 15.0)
    assert again.arrived("auv", [CMD], "cmd 1", 31.0) is Outcome.DUPLICATE
