"""Receptions of driver-based modems (micromodem, evologics): no simulator reports their
arrivals, so the runner learns them from the driver's packet_rx (`driver_reception`): paired
with the sender's transmission (start, on-air time), they count as received on the summary's
links instead of staying "in flight"."""

import math

from acomms_bringup.run import report
from acomms_bringup.run.records import RunRecord, Transmission, driver_reception


def _tx(start_s, payload, src=1, vehicle="auv"):
    return Transmission(vehicle, src, 2, start_s, 0.5, len(payload), payload)


def test_a_reception_is_paired_with_the_latest_transmission_of_its_bytes():
    sent = [_tx(10.0, b"a"), _tx(12.0, b"b"), _tx(14.0, b"a"), _tx(20.0, b"a"),
            _tx(13.0, b"a", src=3, vehicle="other")]
    got = driver_reception("ship", 1, 2, 15.2, b"a", sent, snr_db=math.nan, num_frames=1)
    assert (got.transmit_s, got.arrival_s, got.duration_s) == (14.0, 15.2 - 0.5, 0.5)
    assert (got.vehicle, got.src, got.dest, got.outcome, got.loss_cause) == (
        "ship", 1, 2, "received", None)
    # bytes not sent (bad frames): the latest transmission of the sender by then
    assert driver_reception("ship", 1, 2, 12.9, b"?", sent).transmit_s == 12.0
    assert driver_reception("ship", 1, 2, 12.9, b"b", sent, num_frames=3,
                            num_bad_frames=1).outcome == "partial"
    lost = driver_reception("ship", 1, 2, 12.9, b"b", sent, num_frames=3, num_bad_frames=3)
    assert (lost.outcome, lost.loss_cause) == ("frame_errors", "noise")
    alone = driver_reception("ship", 9, 2, 12.9, b"b", sent)   # no transmission of SRC 9
    assert math.isnan(alone.transmit_s) and alone.arrival_s == 12.9


def test_the_links_count_driver_receptions_as_received():
    record = RunRecord("s", {"auv": 1, "ship": 2}, 60.0, 1.0)
    record.transmissions += [_tx(float(t), bytes([t])) for t in range(10, 50, 5)]
    heard = record.transmissions[:-1]          # the last one is still on its way
    record.receptions += [driver_reception("ship", 1, 2, t.start_s + 1.0, t.payload,
                                           record.transmissions, num_frames=1) for t in heard]
    [link] = [row for row in report.summarize(record)["links"] if row["source"] == "auv"]
    assert (link["sent"], link["received"], link["in_flight"]) == (
        len(record.transmissions), len(heard), 1)
    rows = [row for row in report.timeline_rows(record) if row["kind"] == "rx"]
    assert [row["sent_s"] for row in rows] == [t.start_s for t in heard]
