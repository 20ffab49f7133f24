"""Journey: docs/guide/simulate-a-network.md "cola2 with EvoLogics USBL modems". The shipped
`acomms_bringup/config/cola2_usbl.yaml` runs a ship with a USBL modem and an AUV on EvoLogics
emulators (wall clock): the ship receives the AUV's 'S' navigation, its USBL fixes of the AUV
become 'U' positions that the AUV receives, and each received 'U' position lies within the
ship's configured USBL error model of the AUV's true track at the fix time. Ctrl-C stops it like
any run, and the emulators (in acomms_run's own process: no child process) leave no pty."""

from __future__ import annotations

import os
import signal
import statistics
from collections import Counter

from journey_support import ROOT, Background, documented, run_summary, shell

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.run.emulated_modems import POSITION_PERIOD_S
from acomms_bringup.run.usbl_run_errors import u_errors
from acomms_sim.emulator.usbl_errors import UsblErrorModel

SCENARIO = "acomms_bringup/config/cola2_usbl.yaml"
RUN = "acomms_run acomms_bringup/config/cola2_usbl.yaml --out /tmp/usbl_run"
BENCH = "python bench/usbl_accuracy.py --run /tmp/usbl_run"
DURATION_S = 20    # wall seconds of the run (the scenario's 600 s shortened)
TIME_RESOLUTION_S = 1.0   # the 'U' time_s in config/cola2_codecs.yaml: precision 0 (1 s)
SIGMAS = 3.0       # a fix beyond 3 model RMS is a ~1e-4 event of the 2-D Gaussian error


def test_cola2_usbl_run_delivers_s_and_u_within_the_usbl_model(tmp_path):
    command = documented(RUN)   # run here into tmp_path: the later --out wins
    out = tmp_path / "run"
    result = shell(f"{command} --duration {DURATION_S} --out {out}", timeout_s=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Bridges" in result.stdout, result.stdout[-3000:]
    bridges = run_summary(out)["bridges"]
    auv, ship = bridges["/auv/cola2_vehicle_bridge"], bridges["/ship/cola2_topside_bridge"]
    assert ship["structs_received"] >= 1 and ship["usbl_fixes_used"] >= 1, bridges
    assert auv["structs_received"] >= 1, bridges
    assert ship["usbl_refused_address"] == ship["usbl_refused_stale"] == 0, bridges
    # each measurement comes as USBLLONG + USBLANGLES: the angles are no refusal
    assert ship["usbl_refused_no_position"] == 0, bridges
    assert ship["usbl_angles_with_position"] >= ship["usbl_fixes_used"], bridges
    _assert_links_from_the_drivers(out)

    usbl = load_scenario(ROOT / SCENARIO).vehicle("ship").modem.connection["usbl"]
    errors, truth = u_errors(out, UsblErrorModel(**usbl))
    assert errors, "no 'U' position received within the true track"
    # the fix time the 'U' carries is 1 s coarse, the emulated modem moves every 0.1 s
    slack_m = truth.max_speed_mps() * (TIME_RESOLUTION_S + POSITION_PERIOD_S)
    for error in errors:
        assert error.error_m <= SIGMAS * error.model_rms_m + slack_m, (error, slack_m)
    mean_rms = statistics.fmean(e.model_rms_m for e in errors)
    mean_error = statistics.fmean(e.error_m for e in errors)
    assert mean_error <= 2 * mean_rms + slack_m, errors

    # the bench reads the same run: its 'all' row is these errors' mean
    report = shell(f"{documented(BENCH)} --run {out}", timeout_s=60, check=True).stdout
    assert f"{len(errors)} 'U' positions received" in report, report
    (row,) = [line.split() for line in report.splitlines() if line.split()[:1] == ["all"]]
    assert row[1] == str(len(errors)) and abs(float(row[2]) - mean_error) < 0.006, report


def _driver_packets(mcap_path) -> tuple[Counter, Counter]:
    """From the run's run.mcap: transmissions per vehicle (its driver's `transmit`) and packets
    decoded per (sender SRC, receiver) (its driver's `packet_rx`)."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    sent, heard = Counter(), Counter()
    with open(mcap_path, "rb") as handle:
        reader = make_reader(handle, decoder_factories=[DecoderFactory()])
        topics = [f"/{v}/{t}" for v in ("auv", "ship") for t in ("transmit", "packet_rx")]
        for _schema, channel, _message, msg in reader.iter_decoded_messages(topics=topics):
            vehicle, topic = channel.topic.strip("/").split("/")
            if topic == "transmit":
                sent[vehicle] += 1
            else:
                heard[(msg.packet.src, vehicle)] += 1
    return sent, heard


def _assert_links_from_the_drivers(out) -> None:
    """The Links table counts what the receiving driver decoded as received (not in flight):
    each link's numbers are those of the drivers' own topics in run.mcap."""
    summary = run_summary(out)
    # the record ends with the run, as run.mcap does: not after the vehicles' shutdown
    assert summary["simulated_seconds"] < DURATION_S + 1.0, summary["simulated_seconds"]
    sent, heard = _driver_packets(out / "run.mcap")
    srcs = {v.name: v.src for v in load_scenario(ROOT / SCENARIO).vehicles}
    for link in summary["links"]:
        source, receiver = link["source"], link["receiver"]
        received = heard[(srcs[source], receiver)]
        assert received >= 1, (link, heard)
        assert (link["sent"], link["received"], link["partial"]) == (
            sent[source], received, 0), (link, sent, heard)
        assert link["in_flight"] == link["sent"] - received, link
        assert link["lost_noise"] == link["lost_collision"] == link["lost_half_duplex"] == 0


def _ptys_and_children(pid: int) -> tuple[set[str], list[int]]:
    """The pty devices the process has open (/dev/pts/N) and its child processes."""
    ptys = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/dev/pts/"):
            ptys.add(target)
    children = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(p) == pid]
    return ptys, children


def _parent(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_ctrl_c_stops_the_emulated_run_and_leaves_no_pty(tmp_path):
    command = documented(RUN)
    out, log = tmp_path / "run", tmp_path / "run.log"
    with Background(f"{command} --out {out}", log_path=log) as run:
        assert run.wait_for_output("running", timeout_s=60), log.read_text()[-3000:]
        ptys, children = _ptys_and_children(run.process.pid)
        status = run.stop(signal.SIGINT)
    assert len(ptys) >= 2 and children == [], (ptys, children)   # one pty per emulated modem
    assert status == 130, run.output[-3000:]
    assert "SIGINT: stopped at simulated" in run.output, run.output[-3000:]
    assert "shutdown:" not in run.output, run.output[-3000:]
    assert run_summary(out)["interrupted"] == "SIGINT"
    assert not any(os.path.exists(pty) for pty in ptys), ptys
