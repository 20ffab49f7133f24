"""Which fragment session is the sent file's (file_transfer.session), and the tool's progress
line: never by comparing the queue node's stamps with another clock (issue 26)."""

from __future__ import annotations

from types import SimpleNamespace

from acomms_bringup.file_transfer.send_file_cli import Progress
from acomms_bringup.file_transfer.session import SessionWatch

OPEN, COMPLETED = 0, 1
SIM_2031 = 1_924_992_000.0      # 2031-01-01: a simulated clock far from the wall clock


def status(session, start, dest=2, blocks=10, state=OPEN, acked=0, outgoing=True):
    return SimpleNamespace(outgoing=outgoing, fragment_dest=dest, sequence_num=session,
                           unix_time=int(start), payload_size_blocks=blocks,
                           block_size_bits=64, state=state, acked_blocks=acked)


def test_older_open_session_to_the_same_destination_is_not_the_file():
    watch = SessionWatch()
    watch.heard(status(3, SIM_2031), SIM_2031 + 5.0)
    expected = watch.expect(2, data_bytes=70)
    assert not expected.claims(status(3, SIM_2031, acked=4))
    assert not expected.claims(status(4, SIM_2031 + 9, dest=7))       # another destination
    assert not expected.claims(status(4, SIM_2031 + 9, outgoing=False))
    assert expected.claims(status(4, SIM_2031 + 9))
    assert expected.claims(status(4, SIM_2031 + 9, state=COMPLETED, acked=10))
    assert not expected.claims(status(3, SIM_2031, state=COMPLETED))


def test_a_session_started_before_the_newest_status_or_too_small_is_not_the_file():
    watch = SessionWatch()
    watch.heard(status(1, SIM_2031 - 50, state=COMPLETED), SIM_2031)   # stamp: queue's clock
    expected = watch.expect(2, data_bytes=70)                        # 560 bits: >= 9 blocks
    assert not expected.claims(status(5, SIM_2031 - 20))      # opened before the publish
    assert not expected.claims(status(6, SIM_2031 + 1, blocks=8))   # a smaller message
    assert expected.claims(status(7, SIM_2031 + 1, blocks=9))
    assert expected.key.session_id == 7


def test_first_session_is_taken_whatever_the_clock_without_any_status_before():
    """Nothing heard yet (no reference on the queue's clock): the first fitting session."""
    for start in (0, 1_735_689_600, SIM_2031):
        expected = SessionWatch().expect(2, data_bytes=10)
        assert expected.claims(status(0, start))


def test_finished_sessions_leave_the_open_set():
    watch = SessionWatch()
    watch.heard(status(3, 100), 101.0)
    watch.heard(status(3, 100, state=COMPLETED), 102.0)
    assert watch.open == set() and watch.newest_stamp_s == 102.0


def test_progress_line_follows_one_session_only():
    progress = Progress(dest=2)
    assert progress.update(status(8, 1, state=COMPLETED, acked=10)) is None  # an earlier file's
    first = progress.update(status(9, 5, acked=1))
    assert first.startswith("session 9: [") and first.endswith(" 1/10 blocks acknowledged")
    assert progress.update(status(9, 5, acked=1)) is None          # unchanged
    assert progress.update(status(4, 5, acked=7)) is None          # another session
    assert progress.update(status(9, 5, dest=3, acked=7)) is None
    assert progress.update(status(9, 5, state=COMPLETED, acked=10)).endswith("10/10 blocks "
                                                                             "acknowledged")
