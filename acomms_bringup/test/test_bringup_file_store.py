"""Received files stay inside the receive directory, with their SHA-256 checked (issue 15)."""

from __future__ import annotations

import hashlib
import os

import pytest

from acomms_bringup.file_transfer.send_file_cli import progress_line
from acomms_bringup.file_transfer.store import (
    FileRefused,
    checked_name,
    read_for_sending,
    write_received,
)

DATA = b"mission leg 1\n" * 10
SHA = hashlib.sha256(DATA).digest()


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", "a/b.txt", "..", ".", "",
                                  ".hidden", "bad\x00name", "back\\slash", "x" * 300])
def test_path_traversal_and_odd_names_are_refused(tmp_path, name):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with pytest.raises(FileRefused) as info:
        write_received(str(inbox), name, DATA, SHA)
    assert info.value.counter == "files_path_refused"
    assert list(inbox.iterdir()) == [] and not (tmp_path / "escape.txt").exists()


def test_hash_mismatch_is_refused_and_nothing_written(tmp_path):
    with pytest.raises(FileRefused) as info:
        write_received(str(tmp_path), "plan.txt", DATA + b"x", SHA)
    assert info.value.counter == "files_hash_mismatch" and list(tmp_path.iterdir()) == []


def test_written_inside_without_overwriting(tmp_path):
    first = write_received(str(tmp_path), "plan.txt", DATA, SHA)
    second = write_received(str(tmp_path), "plan.txt", DATA, SHA)
    assert first == str(tmp_path / "plan.txt") and second == str(tmp_path / "plan.txt.1")
    assert (tmp_path / "plan.txt").read_bytes() == DATA
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.txt", "plan.txt.1"]
    again = write_received(str(tmp_path), "plan.txt", DATA, SHA, overwrite=True)
    assert again == first


def test_a_symlink_in_the_directory_is_replaced_not_followed(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    os.symlink(outside, inbox / "plan.txt")
    write_received(str(inbox), "plan.txt", DATA, SHA, overwrite=True)
    assert outside.read_bytes() == b"keep me"
    assert (inbox / "plan.txt").read_bytes() == DATA and not (inbox / "plan.txt").is_symlink()


def test_reading_for_sending(tmp_path):
    path = tmp_path / "plan.txt"
    path.write_bytes(DATA)
    sendable = [str(tmp_path)]
    assert read_for_sending(str(path), 1000, sendable) == ("plan.txt", DATA, SHA)
    with pytest.raises(FileRefused, match="more than max_file_bytes"):
        read_for_sending(str(path), 10, sendable)
    with pytest.raises(FileRefused, match="No such file"):
        read_for_sending(str(tmp_path / "missing"), 10, sendable)
    assert checked_name("plan.txt") == "plan.txt"
    assert progress_line(3, 12).endswith("3/12 blocks acknowledged")
