"""Journey: watch a run live (README, "Live view").

A user starts the demo with `--live`, connects a Foxglove-protocol client (here the classic
`foxglove.websocket.v1` subprotocol, as Lichtblick offers it) while the run goes on, finds the
run's ROS topics among the channels (with their ros2msg schemas), subscribes to a vehicle's
`tdma_status` and to `/acomms/progress`, and gets messages it can decode; the run then ends as
usual.
"""

import json
import pathlib
import socket
import sys

from journey_support import ROOT, Background, documented

sys.path.insert(0, str(ROOT / "acomms_bringup" / "test"))
from foxglove_ws_client import CLASSIC_SUBPROTOCOL, FoxgloveClient  # noqa: E402

COMMAND = "acomms_run acomms_bringup/config/demo.yaml --live --live-port 8765"
STATUS = "/auv/tdma_status"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_live_view_serves_the_runs_ros_topics(tmp_path: pathlib.Path):
    from rclpy.serialization import deserialize_message

    from acomms_bringup.run.mcap_recording import message_class

    port = _free_port()
    command = documented(COMMAND).replace("8765", str(port))
    run = Background(f"{command} --warp 5 --duration 30 --no-mcap --out {tmp_path / 'run'}",
                     log_path=tmp_path / "log.txt")
    client = None
    try:
        assert run.wait_for_output(f"on ws://127.0.0.1:{port}", 60.0), "no live view announced"
        client = FoxgloveClient(port, subprotocol=CLASSIC_SUBPROTOCOL)
        assert client.subprotocol == CLASSIC_SUBPROTOCOL
        assert client.wait_for(lambda c: {STATUS, "/topside/from_acomms/nav_status",
                                          "/acomms/progress"} <= set(c.channels), 10.0), \
            sorted(client.channels)
        status = client.channels[STATUS]
        assert (status["encoding"], status["schemaEncoding"]) == ("cdr", "ros2msg")
        assert "MSG: std_msgs/Header" in status["schema"]  # dependencies included
        client.subscribe([STATUS, "/acomms/progress"])
        assert client.wait_for(lambda c: c.received(STATUS) and c.received("/acomms/progress"),
                               20.0), "no data"
        decoded = deserialize_message(client.received(STATUS)[0][1],
                                      message_class(status["schemaName"]))
        assert decoded.slot_duration_seconds == 25.0  # the demo's TDMA slots
        assert 0.0 <= json.loads(client.received("/acomms/progress")[-1][1])["fraction"] <= 1.0
        assert run.process.wait(timeout=60) == 0
    finally:
        if client is not None:
            client.close()
        run.stop()
    assert "Wrote" in run.output
