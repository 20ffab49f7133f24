"""Issue 26 at scenario level: under a mac_switcher, the default MAC's first get_next_packet_data
at t = 0 got no reply now and then (the queue's reply lost to the Fast DDS discovery race); the
MAC waited service_timeout_seconds of wall time while simulated time ran on, and at --warp max
its first transmission came hundreds of simulated seconds late. Here the queue's first reply is
made to come 3 wall s late, on purpose: the deterministic clock waits for it, and alpha's first
transmission is still in its slot of the first cycle."""

import csv
import threading

import yaml
from test_bringup_mac_switcher import CONFIG, _scenario_data

from acomms_bringup.run import cli
from acomms_core.ros import ros_support
from acomms_core.ros.service_calls import ReliableReplies

LATE_WALL_S = 3.0  # more than the run needs for its first cycle at --warp max
SLOT_S, CYCLE_S = 15.0, 30.0  # alpha's default MAC: slot 0 of two 15 s slots


class FirstReplyLate(ReliableReplies):
    """alpha's queue sends its first get_next_packet_data reply LATE_WALL_S later, from
    another thread (as a reply that rmw could only deliver once discovery caught up)."""

    delayed: list = []

    def __init__(self, service, logger=None, **kwargs):
        super().__init__(service, logger, **kwargs)
        if service.service_name == "/alpha/get_next_packet_data":
            send, first = self.send_once, [True]

            def late_once(response, header):
                if first[0]:
                    first[0] = False
                    FirstReplyLate.delayed.append(service.service_name)
                    threading.Timer(LATE_WALL_S, send, (response, header)).start()
                    return
                send(response, header)

            self.send_once = late_once


def test_the_default_mac_under_a_switcher_sends_in_the_first_cycle_when_a_reply_is_late(
        tmp_path, monkeypatch):
    monkeypatch.setattr(ros_support, "ReliableReplies", FirstReplyLate)
    FirstReplyLate.delayed.clear()
    data = _scenario_data()
    data["vehicles"][0]["traffic"] = [{"topic": "to_acomms/command", "period_seconds": 5.0,
                                       "fields": {"data": "cmd {seq}"}}]
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(CONFIG / vehicle["codec_config"])
    path = tmp_path / "switcher.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    assert cli.main([str(path), "--duration", str(CYCLE_S), "--warp", "max", "--quiet",
                     "--out", str(out)]) == 0
    assert FirstReplyLate.delayed == ["/alpha/get_next_packet_data"]
    with open(out / "timeline.csv", newline="") as stream:
        starts = [float(r["start_s"]) for r in csv.DictReader(stream)
                  if r["kind"] == "tx" and r["src"] == "1"]
    assert starts and min(starts) < SLOT_S, starts  # in the first cycle's slot 0
    assert all(s % CYCLE_S < SLOT_S for s in starts), starts
