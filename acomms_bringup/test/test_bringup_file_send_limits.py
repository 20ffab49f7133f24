"""send_file reads only inside send_directories, and names that cannot be written or that
display as something else are refused (issue 28 item 6). Reproduced on main: /etc/hostname was
sent; 250-byte names passed the check and then failed to write (`.{name}.{pid}.part` over
NAME_MAX); C1 controls and U+202E were written raw into file names."""

from __future__ import annotations

import hashlib
import os

import pytest

from acomms_bringup.file_transfer.store import (
    MAX_NAME_BYTES,
    NAME_MAX,
    FileRefused,
    checked_name,
    read_for_sending,
    write_received,
)

DATA = b"leg 2\n"
SHA = hashlib.sha256(DATA).digest()


def _file(directory, name="plan.txt"):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(DATA)
    return str(path)


def test_only_files_inside_send_directories_are_read(tmp_path):
    outbox = tmp_path / "outbox"
    inside = _file(outbox / "legs")
    outside = _file(tmp_path / "private")
    allowed = [os.path.realpath(outbox)]
    assert read_for_sending(inside, 100, allowed)[0] == "plan.txt"      # subdirectories: yes
    refusals = {
        "/etc/hostname": "outside send_directories",
        outside: "outside send_directories",
        str(outbox / "legs" / ".." / ".." / "private" / "plan.txt"): "outside send_directories",
        _file(outbox / ".ssh", "id"): "hidden file or directory '.ssh'",
        _file(outbox, ".env"): "hidden file or directory '.env'",
        str(outbox): "outside send_directories",
    }
    os.symlink(outside, outbox / "link.txt")                            # a symlink out
    refusals[str(outbox / "link.txt")] = "outside send_directories"
    for path, reason in refusals.items():
        with pytest.raises(FileRefused, match=reason) as info:
            read_for_sending(path, 100, allowed)
        assert info.value.counter == "files_failed"
    with pytest.raises(FileRefused, match="send_directories is empty"):
        read_for_sending(inside, 100, [])
    os.mkfifo(outbox / "pipe")                                          # never blocks on it
    with pytest.raises(FileRefused, match="not a regular file"):
        read_for_sending(str(outbox / "pipe"), 100, allowed)


def test_the_longest_accepted_name_is_written_and_one_byte_more_is_refused(tmp_path):
    assert MAX_NAME_BYTES == NAME_MAX - len(f"..{2 ** 22}.part") == 241
    longest = "é" * ((MAX_NAME_BYTES - 1) // 2) + "x"                  # 241 UTF-8 bytes
    assert len(longest.encode()) == MAX_NAME_BYTES
    assert write_received(str(tmp_path), longest, DATA, SHA) == str(tmp_path / longest)
    assert write_received(str(tmp_path), longest, DATA, SHA).endswith(".1")   # numbered copy
    for name in ("x" * (MAX_NAME_BYTES + 1), "x" * 250, "x" * 255):
        with pytest.raises(FileRefused, match="longer than 241 bytes") as info:
            write_received(str(tmp_path), name, DATA, SHA)
        assert info.value.counter == "files_path_refused"
    sendable = _file(tmp_path / "out", "y" * 250)
    with pytest.raises(FileRefused, match="longer than 241 bytes"):
        read_for_sending(sendable, 100, [str(tmp_path / "out")])


@pytest.mark.parametrize("name", ["report\u202etxt.exe", "a\u2066b", "a\u2069b", "a\u200eb",
                                  "a\u200fb", "a\u202ab", "a\u061cb", "bell\x85.txt",
                                  "csi\x9b31m.txt", "del\x7f.txt", "tab\t.txt"])
def test_control_and_bidi_characters_are_refused_and_shown_escaped(tmp_path, name):
    with pytest.raises(FileRefused) as info:
        write_received(str(tmp_path), name, DATA, SHA)
    assert info.value.counter == "files_path_refused"
    reason = str(info.value)
    assert reason.isascii() and reason.isprintable(), reason
    assert "control" in reason and list(tmp_path.iterdir()) == []
    assert checked_name("café.txt") == "café.txt"                        # letters stay fine


def test_the_node_refuses_a_file_outside_its_working_directory_by_default(tmp_path, monkeypatch):
    from acomms_bringup.file_transfer.file_transfer_node import FileTransferNode
    from acomms_core.ros.testing import RosHarness
    from acomms_interfaces.srv import SendFile

    monkeypatch.chdir(tmp_path)          # the default send_directories ["."]: this directory
    with RosHarness() as ros:
        node = ros.add(FileTransferNode(context=ros.context, namespace="/ship"))
        ros.configure_and_activate(node)
        assert node.values["send_directories"] == [os.path.realpath(tmp_path)]
        send = ros.helper.create_client(SendFile, "/ship/send_file")
        assert send.wait_for_service(timeout_sec=10.0)
        refused = ros.call(send, SendFile.Request(dest=2, path="/etc/hostname"))
        assert not refused.success and "outside send_directories" in refused.message
        assert node.counts["files_failed"] == 1 and node.counts["files_sent"] == 0


def test_a_long_name_in_a_refusal_keeps_its_end():
    """A long path is shortened in the middle: the file name a user looks for stays visible."""
    from acomms_bringup.file_transfer.store import shown

    text = shown("/tmp/" + "d" * 200 + "/survey_0042.bin")
    assert len(text) <= 83 and text.startswith("'/tmp/") and text.endswith("survey_0042.bin'")
    assert shown("short.bin") == "'short.bin'"
