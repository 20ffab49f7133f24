"""acomms_run --mcap-exclude: topics matching the regex are not recorded in run.mcap (status
nobody else subscribes to is then not even published), everything else still is; a bad regex is
refused before anything starts."""

import pathlib
import re

import pytest

from acomms_bringup.run import cli

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
STATUS = r".*(_status|_counters)|/diagnostics"


def recorded_topics(path: pathlib.Path) -> set[str]:
    from mcap.reader import make_reader

    with path.open("rb") as stream:
        summary = make_reader(stream).get_summary()
        return {channel.topic for channel in summary.channels.values()
                if summary.statistics.channel_message_counts.get(channel.id)}


def test_status_topics_can_be_left_out_of_the_recording(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main([str(CONFIG / "demo.yaml"), "--duration", "25", "--warp", "max", "--quiet",
                     "--out", str(out), "--mcap-exclude", STATUS]) == 0
    topics = recorded_topics(out / "run.mcap")
    assert {"/auv/transmit", "/acoustic_channel"} <= topics
    assert not [t for t in topics if re.fullmatch(STATUS, t)], topics
    assert "delivered" in capsys.readouterr().out


def test_a_bad_regex_is_refused_with_a_reason(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main([str(CONFIG / "demo.yaml"), "--out", str(tmp_path / "x"),
                  "--mcap-exclude", "(unclosed"])
    assert stopped.value.code == 2
    assert "--mcap-exclude: not a regular expression" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
