"""The live view as a bridge (issue 26): ROS topics with ros2msg schemas, JSON-schema channels,
both Foxglove subprotocols (foxglove.sdk.v1 and the classic foxglove.websocket.v1 through
`ws_adapter`), --live-host/--live-port validation, log lines above the progress bar.

The LiveView here is fed by hand (as the topic recorder feeds it in a run: `add_topic`, `write`
with CDR); `test_bringup_run_outputs` checks it fed by a real demo run.
"""

import io
import json
import logging
import pathlib
import socket
import types

import pytest
from foxglove_ws_client import CLASSIC_SUBPROTOCOL, SUBPROTOCOL, FoxgloveClient
from rclpy.serialization import deserialize_message, serialize_message

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.run import cli, ws_adapter
from acomms_bringup.run.live_view import LINK_SCHEMA, LiveView
from acomms_bringup.run.mcap_recording import message_class, message_definition
from acomms_bringup.run.progress import Progress
from acomms_bringup.run.report import Reception
from acomms_bringup.run.run_outputs import LIVE_LOGGERS, RunOutputs
from acomms_bringup.run.runner import RunError

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
STATUS_TYPE = "acomms_interfaces/msg/TdmaStatus"
REQUEST = (b"GET / HTTP/1.1\r\nHost: localhost:8765\r\nUpgrade: websocket\r\n"
           b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n\r\n")


# ---- the subprotocol adapter, pure ------------------------------------------------------------
def test_classic_offer_is_rewritten_and_the_answer_named_back():
    head, kind = ws_adapter.rewrite_request(REQUEST % CLASSIC_SUBPROTOCOL.encode())
    assert kind == "classic"
    assert ws_adapter.offered_subprotocols(head) == ["foxglove.sdk.v1"]
    assert head.endswith(b"\r\n\r\n") and b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" in head
    answer = (b"HTTP/1.1 101 Switching Protocols\r\nsec-websocket-protocol: foxglove.sdk.v1\r\n"
              b"sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
    named = ws_adapter.rewrite_response(answer)
    assert ws_adapter.offered_subprotocols(named) == [CLASSIC_SUBPROTOCOL]
    assert named.replace(CLASSIC_SUBPROTOCOL.encode(), b"foxglove.sdk.v1").lower() \
        == answer.lower()


@pytest.mark.parametrize("offer, kind", [(b"foxglove.sdk.v1", "sdk"),
                                         (b"foxglove.websocket.v1, foxglove.sdk.v1", "sdk"),
                                         (b"foxglove.sdk.v1.1", "sdk"), (b"chat", "other")])
def test_other_offers_pass_unchanged(offer, kind):
    request = REQUEST % offer
    assert ws_adapter.rewrite_request(request) == (request, kind)


# ---- a live view fed by hand ------------------------------------------------------------------
@pytest.fixture
def live():
    view = LiveView(["auv", "gateway"], {1: "auv", 2: "gateway"}, host="127.0.0.1", port=0)
    clients = []

    def connect(subprotocol):
        client = FoxgloveClient(view.port, subprotocol=subprotocol)
        clients.append(client)
        return client

    yield view, connect
    for client in clients:
        client.close()
    view.close()


def _status(slot: int):
    message = message_class(STATUS_TYPE)()
    message.current_slot = slot
    return message


@pytest.mark.parametrize("subprotocol", [SUBPROTOCOL, CLASSIC_SUBPROTOCOL])
def test_ros_topic_and_synthetic_channel_reach_either_subprotocol(live, subprotocol):
    view, connect = live
    view.add_topic("/auv/tdma_status", STATUS_TYPE)
    client = connect(subprotocol)
    assert client.subprotocol == subprotocol
    assert client.wait_for(lambda c: {"/auv/tdma_status", "/acomms/links"} <= set(c.channels))
    channel = client.channels["/auv/tdma_status"]
    assert (channel["encoding"], channel["schemaEncoding"], channel["schemaName"]) == (
        "cdr", "ros2msg", STATUS_TYPE)
    assert channel["schema"] == message_definition(STATUS_TYPE)
    links = client.channels["/acomms/links"]
    assert (links["encoding"], links["schemaEncoding"]) == ("json", "jsonschema")
    assert json.loads(links["schema"]) == LINK_SCHEMA
    client.subscribe(["/auv/tdma_status", "/acomms/links"])
    assert client.wait_for(lambda c: _feed(view, c))
    time_ns, cdr = client.received("/auv/tdma_status")[0]
    assert deserialize_message(cdr, message_class(STATUS_TYPE)).current_slot == 2
    assert time_ns == 1_735_689_600_000_000_000
    link = json.loads(client.received("/acomms/links")[0][1])
    assert (link["source"], link["receiver"], link["snr_db"]) == ("auv", "gateway", 12.5)
    assert view.counts["/auv/tdma_status"] >= 1
    assert view.adapter.counts["classic" if subprotocol == CLASSIC_SUBPROTOCOL else "sdk"] == 1


def _feed(view, client) -> bool:
    """Publish one status and one reception until the client got both (a subscription takes
    effect a moment after it is sent)."""
    view.write("/auv/tdma_status", STATUS_TYPE, serialize_message(_status(2)),
               1_735_689_600_000_000_000)
    view.on_record(Reception(vehicle="gateway", src=1, dest=2, transmit_s=1_735_689_599.0,
                             arrival_s=1_735_689_600.0, duration_s=0.5, outcome="received",
                             snr_db=12.5, collided=False))
    return bool(client.received("/auv/tdma_status") and client.received("/acomms/links"))


def test_topics_are_advertised_when_they_appear_and_unsubscribe_stops_them(live):
    view, connect = live
    client = connect(CLASSIC_SUBPROTOCOL)
    assert client.wait_for(lambda c: "/acomms/progress" in c.channels)
    assert "/gateway/tdma_status" not in client.channels
    view.write("/gateway/tdma_status", STATUS_TYPE, serialize_message(_status(1)), 1)  # new topic
    assert client.wait_for(lambda c: "/gateway/tdma_status" in c.channels)
    client.subscribe(["/gateway/tdma_status"])

    def fed(c):
        view.write("/gateway/tdma_status", STATUS_TYPE, serialize_message(_status(1)), 2)
        return bool(c.received("/gateway/tdma_status"))

    assert client.wait_for(fed)
    client.unsubscribe(["/gateway/tdma_status"])
    client.wait_for(lambda c: False, 0.5)  # the unsubscribe reaches the server
    before = len(client.received("/gateway/tdma_status"))
    for stamp in range(3, 13):
        view.write("/gateway/tdma_status", STATUS_TYPE, serialize_message(_status(1)), stamp)
    client.wait_for(lambda c: False, 0.5)
    assert len(client.received("/gateway/tdma_status")) == before


def test_ros_topic_in_the_synthetic_namespace_is_not_served(live, caplog):
    view, _connect = live
    with caplog.at_level(logging.WARNING, logger="acomms_run.live"):
        assert view.add_topic("/acomms/links", STATUS_TYPE) is None
    assert "/acomms/links" in view.skipped and "not served" in caplog.text


def test_a_port_in_use_is_one_clear_error(tmp_path):
    scenario = load_scenario(CONFIG / "demo.yaml")
    runner = types.SimpleNamespace(scenario=scenario, start_s=0.0, stream=io.StringIO(),
                                   progress=Progress(io.StringIO(), 10.0, enabled=False))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(OSError):
            LiveView(["auv"], {1: "auv"}, host="127.0.0.1", port=port)
        outputs = RunOutputs(tmp_path, record_mcap=False, live_port=port)
        with pytest.raises(RunError, match=f"--live: cannot listen on 127.0.0.1:{port}: "):
            outputs(runner)
    outputs.close()


def test_all_interfaces_host_serves_this_machine_too():
    view = LiveView(["auv"], {1: "auv"}, host="0.0.0.0", port=0)
    try:
        client = FoxgloveClient(view.port, host="127.0.0.1")
        assert client.wait_for(lambda c: "/acomms/auv/fix" in c.channels)
        client.close()
    finally:
        view.close()


class _Collecting:
    def __init__(self):
        self.topics, self.written = [], []

    def add_topic(self, topic, type_name):
        self.topics.append(topic)

    def write(self, topic, type_name, cdr, time_ns):
        self.written.append(topic)


def test_mcap_exclude_leaves_topics_out_of_run_mcap_but_not_out_of_the_live_view(tmp_path):
    outputs = RunOutputs(tmp_path, record_mcap=True, live_port=0, mcap_exclude=".*_status")
    outputs.live = live = _Collecting()
    sink = outputs._topic_sink()
    data = serialize_message(_status(0))
    for topic in ("/auv/tdma_status", "/auv/tdma_advanced"):
        sink.add_topic(topic, STATUS_TYPE)
        sink.write(topic, STATUS_TYPE, data, 5)
    outputs.sink.close()
    assert outputs.sink.counts == {"/auv/tdma_advanced": 1}
    assert live.topics == live.written == ["/auv/tdma_status", "/auv/tdma_advanced"]


# ---- command line -----------------------------------------------------------------------------
def test_live_host_and_port_are_validated(capsys):
    arguments = cli.parser().parse_args(["demo.yaml", "--live", "--live-host", "0.0.0.0",
                                         "--live-port", "0"])
    assert (arguments.live_host, arguments.live_port) == ("0.0.0.0", 0)
    assert cli.parser().parse_args(["demo.yaml"]).live_host == "127.0.0.1"
    for flag, value, error in (("--live-port", "70000", "not a TCP port"),
                               ("--live-port", "http", "not a TCP port"),
                               ("--live-host", "no such host!", "not an IP address")):
        with pytest.raises(SystemExit):
            cli.parser().parse_args(["demo.yaml", "--live", flag, value])
        assert error in capsys.readouterr().err


# ---- log lines above the progress bar ---------------------------------------------------------
class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_log_line_is_printed_above_the_bar():
    screen = _Terminal()
    progress = Progress(screen, 100.0)
    progress.update(40.0, 1.0)
    bar = progress.line(40.0, 1.0)
    handler = progress.log_handler("acomms_run: live view: ")
    logger = logging.getLogger("foxglove.websocket.test")
    logger.addHandler(handler)
    try:
        logger.warning("Dropping client %s", "127.0.0.1:5000")
    finally:
        logger.removeHandler(handler)
    # everything went to one terminal here (the stream stands in for stderr too)
    progress.note("x", err=screen)
    text = screen.getvalue()
    assert text.endswith(f"\r\x1b[Kx\n{bar}")  # cleared, the line, the bar drawn again


def test_foxglove_sdk_log_lines_go_through_the_handler(live):
    """A client that drops its connection without the closing handshake makes foxglove-sdk log
    an error: it reaches the handler RunOutputs installs, not the terminal raw."""
    view, connect = live
    progress, lines = Progress(io.StringIO(), 10.0), io.StringIO()
    progress.note = lambda text, err=None: lines.write(text + "\n")
    handler = progress.log_handler("acomms_run: live view: ")
    loggers = [logging.getLogger(name) for name in LIVE_LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        client = connect(SUBPROTOCOL)
        assert client.wait_for(lambda c: "/acomms/links" in c.channels)
        client.sock.shutdown(socket.SHUT_RDWR)
        assert client.wait_for(lambda c: "acomms_run: live view: " in lines.getvalue(), 5.0)
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
