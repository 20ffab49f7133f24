"""Partitioned runs without ROS: the plan of `acomms_run --processes K`, the participants'
command lines and process handling, and the remote events that carry a participant's queue
accounting and dispatch sources to the runner (booked as the in-process hooks book them)."""

import pathlib
import sys
import threading

import pytest
import yaml

from acomms_bringup.description.scenario import ScenarioError, parse_scenario
from acomms_bringup.run.accounting import Ledger, QueueLedger
from acomms_bringup.run.partition import (
    ParticipantProcesses,
    PartitionError,
    check_processes,
    participant_command,
    plan_partition,
)
from acomms_bringup.run.remote_events import RemoteEvents, RemoteObserver, decode, encode

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def test_shares_are_balanced_contiguous_in_scenario_order_and_named():
    names = [f"v{i}" for i in range(7)]
    shares = plan_partition(names, 3, "run42")
    assert [share.vehicles for share in shares] == [
        ("v0", "v1", "v2"), ("v3", "v4"), ("v5", "v6")]
    assert [share.name for share in shares] == ["", "run42_p1", "run42_p2"]
    for k in range(1, 8):
        sizes = [len(s.vehicles) for s in plan_partition(names, k)]
        assert sum(sizes) == 7 and max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes)[::-1]
    assert plan_partition(names, 3, "run42") == shares  # the same plan on every machine


def test_more_processes_than_vehicles_or_none_is_refused_with_one_line():
    with pytest.raises(PartitionError, match=r"^4 processes for 3 vehicles: each process runs "
                                             r"at least one vehicle$"):
        plan_partition(["a", "b", "c"], 4)
    assert check_processes(0, 3) == "0 processes: must be 1..64"
    assert check_processes(3, 3) is None


def test_the_scenario_key_runtime_processes_is_validated():
    path = CONFIG / "two_vehicles.yaml"
    data = yaml.safe_load(path.read_text())

    def load(runtime=None):
        return parse_scenario({**data, **({"runtime": runtime} if runtime else {})},
                              base_dir=path.parent)

    assert load().processes == 1
    assert load({"processes": 2}).processes == 2
    with pytest.raises(ScenarioError, match="runtime.processes: 3 processes for 2 vehicles"):
        load({"processes": 3})
    with pytest.raises(ScenarioError, match="runtime.processes: must be >= 1"):
        load({"processes": 0})


def test_participant_command_carries_the_share_lean_and_timeout():
    share = plan_partition(["a", "b", "c"], 2, "r")[1]
    command = participant_command("s.yaml", share, 60.0, True, "info")
    assert command[:3] == [sys.executable, "-m", "acomms_bringup.run.participant"]
    assert command[3:] == ["s.yaml", "--groups", "c", "--name", "r_p1", "--step-timeout", "60",
                           "--log-level", "info", "--lean"]


def test_a_participant_that_exits_is_named_and_the_others_are_stopped(tmp_path):
    processes = ParticipantProcesses(tmp_path / "participants.log")
    processes.start({"quick": [sys.executable, "-c", "import sys; print('bye'); sys.exit(3)"],
                     "slow": [sys.executable, "-c", "import time; time.sleep(60)"]})
    processes.processes["quick"].wait(timeout=30)
    with pytest.raises(PartitionError, match=r"^participant quick \(pid \d+\) exited with "
                                             r"status 3; its output is in .*participants.log$"):
        processes.check()
    statuses = processes.stop(timeout_s=10.0)
    assert statuses["quick"] == 3 and statuses["slow"] == -15  # SIGTERM, not killed
    assert "bye" in (tmp_path / "participants.log").read_text()
    processes.check()  # once stopped, an exit is expected


def test_remote_queue_events_book_the_same_ledger_as_the_queue_itself():
    """A queue's events through RemoteObserver -> JSON -> RemoteEvents give the ledger the
    in-process QueueLedger books from the same events."""
    sent = {("nav", 1.5): "m1", ("nav", 2.5): "m2", ("cmd", "go"): "m3"}

    class Message:
        def __init__(self, key):
            self.key = key

    class Sent:
        def __init__(self, name):
            self.topic, self.source, self.seq = name, "auv", int(name[1])

    def identify_msg(topic, msg):
        return Sent(sent[(topic, msg.key)]) if (topic, msg.key) in sent else None

    def identify_key(topic, key):
        return Sent(sent[(topic, key)]) if (topic, key) in sent else None

    events = [("queued", {"topic": "nav", "msg": Message(1.5), "seq": 1, "time_s": 1.0}),
              ("queued", {"topic": "nav", "msg": Message(2.5), "seq": 2, "time_s": 2.0}),
              ("refused", {"topic": "cmd", "msg": Message("go"), "reason": "encode_failures"}),
              ("packed", {"seqs": [1], "payload": b"\x01\xff", "time_s": 3.0}),
              ("expired", {"seq": 2})]
    local, remote = Ledger(), Ledger()
    here = QueueLedger("auv", local, identify_msg, threading.Lock())
    lines = []
    observer = RemoteObserver("auv", lines.append, lambda msg: msg.key)
    for event, facts in events:
        here(event, **dict(facts))
        observer(event, **dict(facts))
    observer.dispatched("/gw/nav", 1, Message(1.5))
    dispatched = []
    books = RemoteEvents({"auv": QueueLedger("auv", remote, identify_key, threading.Lock())},
                         lambda *facts: dispatched.append(facts))
    for line in [*lines, "not json", encode("queue", "ghost", "expired", seq=1)]:
        books(line)
    assert remote == local and local.fates  # same fates, same packets (bytes included)
    assert dispatched == [("/gw/nav", 1, 1.5)]
    assert books.refused == 2
    assert decode(lines[3])[3]["payload"] == b"\x01\xff"


def test_acomms_run_refuses_more_processes_than_vehicles_with_one_line(tmp_path, capsys):
    from acomms_bringup.run import cli

    assert cli.main([str(CONFIG / "demo.yaml"), "--processes", "4", "--quiet",
                     "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"acomms_run: {CONFIG / 'demo.yaml'}: 4 processes for 3 vehicles: each "
                   "process runs at least one vehicle"]
    assert not (tmp_path / "out").exists()
    assert cli.main([str(CONFIG / "demo.yaml"), "--processes", "2", "--clock", "free",
                     "--quiet"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"acomms_run: {CONFIG / 'demo.yaml'}: --processes 2: needs the deterministic clock "
        "(this run's clock is free)")
