"""Matching by source and content (issue 26), ROS-free: arrivals of equal stamps from several
vehicles, equal contents in order, the queue's intake, and the end-of-run reconciliation with the
accounting's evidence (which packet was decoded where), or a warning where nothing decides."""

from acomms_bringup.run.accounting import Ledger, PackedPacket, message_fates
from acomms_bringup.run.matching import DeliveryMatcher, Outcome, Stream, pair_arrivals
from acomms_bringup.run.report import (
    Reception,
    RunRecord,
    Transmission,
    format_summary,
    message_rows,
    summarize,
)

VEHICLES = {"v1": 1, "v2": 2, "v3": 3, "v4": 4}
TICK = Stream("tick", "v1", ("v2",), 0.5)  # headerless: matched by content


def nav(source: str) -> Stream:
    return Stream("nav", source, tuple(v for v in VEHICLES if v != source), 1.0)


def new_record() -> RunRecord:
    return RunRecord("unit", dict(VEHICLES), duration_s=100.0, warp_factor=1.0)


def test_equal_stamps_from_several_sources_are_told_apart_by_the_packet_source():
    record = new_record()
    matcher = DeliveryMatcher(record)
    streams = [nav(v) for v in VEHICLES]
    for stream in streams:  # every vehicle's nav_status published at the same 1.5 s
        matcher.sent(stream, 1.5, 1, 1.5)
    for receiver in VEHICLES:
        for source in VEHICLES:
            if source != receiver:
                outcome = matcher.arrived(receiver, streams, 1.5, 5.0, source=source)
                assert outcome is Outcome.DELIVERED, (source, receiver)
    assert len(record.deliveries) == 12 == summarize(record)["messages_delivered"]
    assert {(d.source, d.destination) for d in record.deliveries} == {
        (s, r) for s in VEHICLES for r in VEHICLES if s != r}
    assert not record.ambiguous and summarize(record)["warnings"] == []


def test_without_the_source_equal_stamps_are_booked_for_the_first_and_warned_about():
    record = new_record()
    matcher = DeliveryMatcher(record)
    streams = [nav(v) for v in VEHICLES]
    for stream in streams:
        matcher.sent(stream, 1.5, 1, 1.5)
    assert matcher.arrived("v4", streams, 1.5, 5.0) is Outcome.DELIVERED
    assert matcher.arrived("v4", streams, 1.5, 6.0) is Outcome.DUPLICATE
    assert record.ambiguous == {"nav at v4": 2}
    (warning,) = summarize(record)["warnings"]
    assert warning.startswith("nav at v4: 2 arrivals fit messages of more than one traffic entry")
    assert f"WARNING: {warning}" in format_summary(summarize(record))


def test_an_arrival_from_a_source_that_sent_nothing_equal_is_unmatched():
    record = new_record()
    matcher = DeliveryMatcher(record)
    matcher.sent(nav("v1"), 1.5, 1, 1.5)
    assert matcher.arrived("v2", [nav("v1"), nav("v3")], 1.5, 5.0, source="v3") is \
        Outcome.UNMATCHED
    assert record.unmatched == {"nav at v2": 1}


def test_the_queue_takes_equal_messages_in_publish_order():
    record = new_record()
    matcher = DeliveryMatcher(record)
    sent = [matcher.sent(TICK, "data=0", seq, float(seq)) for seq in (1, 2, 3)]
    assert [matcher.queued(TICK, "data=0") for _ in range(4)] == [*sent, None]
    assert matcher.queued(TICK, "data=1") is None


def lossy_record(arrivals: list[float]) -> RunRecord:
    """v1 sends 3 equal ticks: packet A (ticks 1, 2) is lost to noise at v2, packet B (tick 3)
    is decoded at v2 at 23 s; `arrivals` are booked the way the matcher books them (in order)."""
    record = new_record()
    matcher = DeliveryMatcher(record)
    for seq in (1, 2, 3):
        matcher.sent(TICK, "data=0", seq, float(seq))
    record.ledger = Ledger(fates={("tick", "v1", 1): 0, ("tick", "v1", 2): 0,
                                  ("tick", "v1", 3): 1},
                           packets=[PackedPacket("v1", 10.0, b"A", [("tick", "v1", 1),
                                                                     ("tick", "v1", 2)]),
                                    PackedPacket("v1", 20.0, b"B", [("tick", "v1", 3)])])
    record.transmissions += [Transmission("v1", 1, 2, 10.0, 2.0, 1, b"A"),
                             Transmission("v1", 1, 2, 20.0, 2.0, 1, b"B")]
    record.receptions += [Reception("v2", 1, 2, 10.0, 11.0, 2.0, "undetected", -5.0, False),
                          Reception("v2", 1, 2, 20.0, 21.0, 2.0, "received", 15.0, False)]
    for t in arrivals:
        matcher.arrived("v2", [TICK], "data=0", t, source="v1")
    return record


def test_reconcile_gives_the_arrival_to_the_message_whose_packet_was_decoded():
    record = lossy_record([23.0])
    assert [d.seq for d in record.deliveries] == [1]  # in order: the first tick, wrongly
    summary = summarize(record)
    assert [d.seq for d in record.deliveries] == [3]
    assert record.deliveries[0].latency_s == 20.0
    fates = message_fates(record)
    assert [fates[("tick", "v1", seq, "v2")] for seq in (1, 2, 3)] == [
        "lost_noise", "lost_noise", "delivered"]
    assert summary["warnings"] == []
    assert summarize(record) == summary  # idempotent
    assert [row["fate"] for row in message_rows(record)] == ["lost_noise", "lost_noise",
                                                             "delivered"]


def test_equal_messages_in_one_packet_of_which_only_some_came_out_are_warned_about():
    record = lossy_record([23.0])
    record.receptions[0] = Reception("v2", 1, 2, 10.0, 11.0, 2.0, "received", 15.0, False)
    record.receptions[1] = Reception("v2", 1, 2, 20.0, 21.0, 2.0, "undetected", -5.0, False)
    summary = summarize(record)  # the arrival at 23 s came out of packet A (decoded at 13 s)
    assert [d.seq for d in record.deliveries] == [1]
    assert record.indistinct == {"tick from v1 to v2": 2}
    (warning,) = summary["warnings"]
    assert warning.startswith("tick from v1 to v2: 2 messages with equal content could not be "
                              "told apart")


def test_without_evidence_order_decides_only_when_every_message_arrived():
    a, b, c = (DeliveryMatcher(new_record()).sent(TICK, "x", seq, float(seq))
               for seq in (1, 2, 3))
    unknown = {seq: ("unknown", None) for seq in (1, 2, 3)}
    chosen, guessed = pair_arrivals([5.0, 6.0, 7.0], [a, b, c], unknown)
    assert chosen == [a, b, c] and guessed == 0
    chosen, guessed = pair_arrivals([5.0, 6.0], [a, b, c], unknown)
    assert chosen == [a, b] and guessed == 3


def test_an_arrival_no_decoded_packet_explains_is_a_guess():
    a, b = (DeliveryMatcher(new_record()).sent(TICK, "x", seq, float(seq)) for seq in (1, 2))
    evidence = {1: ("lost_noise", None), 2: ("expired", None)}
    chosen, guessed = pair_arrivals([5.0], [a, b], evidence)
    assert chosen == [a] and guessed == 1


def test_arrivals_the_middleware_lost_are_a_warning():
    record = new_record()
    record.lost_arrivals["/v2/from_acomms/tick"] += 3
    assert summarize(record)["warnings"] == [
        "/v2/from_acomms/tick: the middleware lost 3 arrivals before the runner took them"]
