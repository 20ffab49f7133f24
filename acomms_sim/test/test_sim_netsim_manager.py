"""netsim manager: the documented line protocol, the four status codes, bad input, and emulated
Micromodems that the manager's NavUpdates move on the simulated channel (ROS-free, ports 0)."""

from __future__ import annotations

import base64
import socket
import time

import pytest

from acomms_driver.micromodem import nmea
from acomms_sim.netsim import wire
from acomms_sim.netsim.client import NetsimClient
from acomms_sim.netsim.manager import NetsimManager
from acomms_sim.netsim.manager_config import parse_config
from acomms_sim.netsim.proto import netsim_pb2

# netsim's documentation: an example request line and an example response line.
DOC_REQUEST = (b"NETSIM|netsim.protobuf.NetSimManagerRequest|CEISOgiz5AMRQ4tUIbbq10EZQUDRT0vLUUAh"
               b"QylH7tbMYcApMzMzMzMz0z8x65lyHNEpUj85AAAAAAAALkA=\n")
DOC_RESPONSE = b"NETSIM|netsim.protobuf.NetSimManagerResponse|CEEQAQ==\n"
Response = netsim_pb2.NetSimManagerResponse
WAIT_S = 5.0
LAT, LON = 41.5, -70.6


def _spec(**pair_overrides) -> dict:
    pair = {"modem_tcp_port": 0, "endpoint_ip_address": "127.0.0.1", "environment_id": 1}
    return {
        "manager": {"port": 0}, "airtime_scale": 0.05,
        "channel": {"ambient_noise_db": 50.0, "seed": 1},
        "env_bounds": [{"environment_id": 1, "lat_min": 41.0, "lat_max": 42.0,
                        "lon_min": -71.0, "lon_max": -70.0, "depth_max": 100.0},
                       {"environment_id": 2, "lat_min": 10.0, "lat_max": 11.0,
                        "lon_min": 10.0, "lon_max": 11.0, "depth_max": 100.0}],
        "sim_env_pair": [{**pair, "src": 1}, {**pair, "src": 2, **pair_overrides},
                         {**pair, "src": 3, "endpoint_ip_address": "192.0.2.7"}],
    }


@pytest.fixture
def manager():
    manager = NetsimManager(parse_config(_spec())).start()
    try:
        yield manager
    finally:
        manager.close()


class LineClient:
    """A raw TCP client reading whole lines."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), 2.0)
        self.sock.settimeout(0.05)
        self.splitter = wire.LineSplitter(1 << 20)
        self.lines: list[bytes] = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def wait_for(self, predicate, timeout_s: float = WAIT_S):
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            found = [line for line in self.lines if predicate(line)]
            if found:
                return found[0]
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            if not data:
                return None
            self.lines += self.splitter.feed(data)
        return None

    def response(self, request_id: int):
        line = self.wait_for(lambda line: line.startswith(b"NETSIM|"))
        assert line is not None, "no response line"
        self.lines.remove(line)
        response = wire.decode_line(line, Response)
        assert response.request_id == request_id
        return response.status

    def close(self):
        self.sock.close()


def _request(request_id: int, port: int, lat: float = LAT, lon: float = LON,
             depth: float = 10.0) -> bytes:
    request = netsim_pb2.NetSimManagerRequest(id=request_id)
    request.nav.add(modem_tcp_port=port, time=1.7e9, lat=lat, lon=lon, depth=depth, speed=1.0,
                    heading=90.0)
    return wire.encode_line(request)


def test_documented_request_line_decodes_to_its_values():
    request = wire.decode_line(DOC_REQUEST, netsim_pb2.NetSimManagerRequest)
    assert request.id == 66 and len(request.nav) == 1 and not request.stats
    nav = request.nav[0]
    assert nav.modem_tcp_port == 62003
    assert nav.time == pytest.approx(1605032069.321, abs=1e-3)
    assert nav.lat == pytest.approx(71.1764716667, abs=1e-9)
    assert nav.lon == pytest.approx(-142.4012366667, abs=1e-9)
    assert nav.depth == pytest.approx(0.3)
    assert nav.speed == pytest.approx(0.0011086, abs=1e-6)
    assert nav.heading == 15.0


def test_response_line_matches_the_documented_one():
    line = wire.encode_line(Response(request_id=65, status=Response.UPDATE_ACCEPTED))
    assert line == DOC_RESPONSE
    assert wire.decode_line(DOC_RESPONSE, Response).status == Response.UPDATE_ACCEPTED


def test_each_status_code_from_its_case(manager):
    ports = {src: port for src, port in manager.modem_ports.items()}
    unused_port = max(ports.values()) + 1 if max(ports.values()) < 65535 else 1
    client = LineClient(manager.port)
    try:
        cases = [(_request(1, ports[1]), Response.UPDATE_ACCEPTED),
                 (_request(2, unused_port), Response.UPDATE_FAILED_INVALID_MODEM_TCP_PORT),
                 (_request(3, ports[3]), Response.UPDATE_FAILED_INVALID_SOURCE_ADDRESS),
                 (_request(4, ports[1], lat=43.0), Response.UPDATE_FAILED_OUT_OF_DEFINED_REGION),
                 (_request(5, ports[1], depth=150.0),
                  Response.UPDATE_FAILED_OUT_OF_DEFINED_REGION)]
        for request_id, (line, status) in enumerate(cases, start=1):
            client.send(line)
            assert client.response(request_id) == status, request_id
    finally:
        client.close()
    assert manager.counters["nav_accepted"] == 1
    assert manager.counters["status_update_failed_invalid_modem_tcp_port"] == 1
    assert manager.counters["status_update_failed_invalid_source_address"] == 1
    assert manager.counters["status_update_failed_out_of_defined_region"] == 2


def test_first_failing_nav_decides_and_stats_are_passed_on():
    seen = []
    manager = NetsimManager(parse_config(_spec()), on_stats=lambda s, peer, i: seen.append(
        (len(s), peer, i)))
    try:
        ports = manager.modem_ports
        request = netsim_pb2.NetSimManagerRequest(id=9)
        request.nav.add(modem_tcp_port=ports[1], time=0, lat=LAT, lon=LON, depth=5, speed=0,
                        heading=0)
        request.nav.add(modem_tcp_port=ports[2], time=0, lat=LAT, lon=LON, depth=500, speed=0,
                        heading=0)
        request.stats.add(modem_tcp_port=ports[2], tx_modem_tcp_port=ports[1],
                          packet_success=True, mm_stats=b"\x08\x00")
        response = manager.process_request(request, "127.0.0.1")
    finally:
        manager.close()
    assert response.status == Response.UPDATE_FAILED_OUT_OF_DEFINED_REGION
    assert manager.counters["nav_accepted"] == 1 and manager.counters["stats_received"] == 1
    assert seen == [(1, "127.0.0.1", 9)]


def test_malformed_lines_are_counted_and_the_connection_stays_usable(manager):
    good = base64.b64encode(netsim_pb2.NetSimManagerRequest(id=1).SerializeToString())
    truncated = base64.b64encode(bytes.fromhex("0842123a08b3e40311438b54"))
    bad_lines = {
        "bad_base64": b"NETSIM|netsim.protobuf.NetSimManagerRequest|%%%not*base64\n",
        "unknown_message_name": b"NETSIM|netsim.protobuf.NoSuchMessage|" + good + b"\n",
        "bad_protobuf": b"NETSIM|netsim.protobuf.NetSimManagerRequest|" + truncated + b"\n",
        "line_too_long": b"NETSIM|netsim.protobuf.NetSimManagerRequest|" + b"A" * (1 << 20)
                         + b"\n",
        "bad_framing": bytes(range(256)).replace(b"\n", b"") + b"\n",
    }
    client = LineClient(manager.port)
    try:
        for line in bad_lines.values():
            client.send(line)
        client.send(_request(77, manager.modem_ports[1]))
        assert client.response(77) == Response.UPDATE_ACCEPTED
    finally:
        client.close()
    for kind in bad_lines:
        assert manager.counters[kind] == 1, (kind, dict(manager.counters))
    assert manager.counters["requests"] == 1


def test_bad_configuration_is_refused_with_the_key():
    spec = _spec()
    spec["sim_env_pair"][1]["environment_id"] = 7
    with pytest.raises(ValueError, match=r"sim_env_pair\[1\]: no env_bounds for environment 7"):
        parse_config(spec)
    spec = _spec()
    spec["env_bounds"][0]["lat_min"] = 50.0
    with pytest.raises(ValueError, match=r"env_bounds\[0\]: a minimum exceeds its maximum"):
        parse_config(spec)
    for manager, message in (({"idle": 1}, r"manager: unknown keys \['idle'\]"),
                             ({"idle_timeout_s": -1}, "manager: idle_timeout_s -1.0 outside"),
                             ({"max_clients": 0}, "manager: max_clients 0 outside"),
                             ({"modem_on_new_client": "steal"}, "modem_on_new_client 'steal'")):
        spec = _spec()
        spec["manager"].update(manager)
        with pytest.raises(ValueError, match=message):
            parse_config(spec)


def _tdp(dest: int, data: bytes) -> bytes:
    return nmea.format_sentence("CCTDP", [dest, 1, 0, 0, data.hex()]).encode() + b"\r\n"


def test_accepted_nav_updates_move_the_emulated_modems(manager):
    """Before any NavUpdate a modem cannot transmit; after both are placed a packet crosses."""
    ports = manager.modem_ports
    modem_a, modem_b = LineClient(ports[1]), LineClient(ports[2])
    netsim = LineClient(manager.port)
    try:
        modem_a.send(_tdp(2, b"before"))
        assert modem_a.wait_for(lambda line: line.startswith(b"$CAERR")), "unplaced modem sent"
        netsim.send(_request(1, ports[1]))
        assert netsim.response(1) == Response.UPDATE_ACCEPTED
        netsim.send(_request(2, ports[2], lat=LAT + 0.005))  # ~555 m north
        assert netsim.response(2) == Response.UPDATE_ACCEPTED
        payload = b"across the netsim channel"
        line = None
        for _ in range(5):  # the refused transmission above may still hold the modem busy
            modem_a.send(_tdp(2, payload))
            line = modem_b.wait_for(lambda line: line.startswith(b"$CARDP"), 1.0)
            if line is not None:
                break
        assert line is not None, "no reception at modem 2"
        assert payload.hex().upper() in line.decode().upper()
    finally:
        for client in (modem_a, modem_b, netsim):
            client.close()


def _wait(predicate, timeout_s: float = WAIT_S) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and not predicate():
        time.sleep(0.01)
    return predicate()


def test_client_reads_responses_and_reconnects_after_the_manager_restarts():
    config = parse_config(_spec())
    manager = NetsimManager(config).start()
    config.port = manager.port
    responses = []
    client = NetsimClient("127.0.0.1", manager.port, responses.append,
                          reconnect_initial_s=0.05, reconnect_max_s=0.1)
    client.start()
    try:
        assert _wait(lambda: client.connected)
        port = manager.modem_ports[1]
        assert client.send_nav(port, 1.7e9, LAT, LON, 5.0) == 0
        assert _wait(lambda: responses) and responses[0].status == Response.UPDATE_ACCEPTED
        manager.close()
        assert _wait(lambda: not client.connected)
        assert client.send_nav(port, 1.7e9, LAT, LON, 5.0) is None
        manager = NetsimManager(config).start()
        assert _wait(lambda: client.connected), client.last_reason
        assert client.send_nav(manager.modem_ports[1], 1.7e9, LAT, LON, 5.0) == 1
        assert _wait(lambda: len(responses) == 2) and responses[1].request_id == 1
    finally:
        client.stop()
        manager.close()
    assert client.counters["connections"] == 2 and client.counters["requests_not_sent"] == 1


@pytest.mark.parametrize("opening", [b"", b"NETSIM|netsim.protobuf.NetSimManagerRequest|CEIS"],
                         ids=["idle", "half_line"])
def test_idle_or_half_line_connections_do_not_lock_out_a_new_client(manager, opening):
    """Issue 28: 64 idle connections (or 200 sending half a line) reset every new client.
    Now the oldest idle client is dropped when the client limit is reached."""
    abusers = []
    try:
        for _ in range(200):
            sock = socket.create_connection(("127.0.0.1", manager.port), 2.0)
            if opening:
                sock.sendall(opening)
            abusers.append(sock)
        client = LineClient(manager.port)
        client.send(_request(5, manager.modem_ports[1]))
        assert client.response(5) == Response.UPDATE_ACCEPTED
        limit = manager.config.max_clients
        assert _wait(lambda: manager.counters["clients_dropped_full"] == 201 - limit)
        assert manager.counters["connections"] == 201
        client.send(_request(6, manager.modem_ports[1]))  # the newest is never dropped first
        assert client.response(6) == Response.UPDATE_ACCEPTED
        client.close()
    finally:
        for sock in abusers:
            sock.close()


def test_idle_clients_are_dropped_after_the_idle_timeout():
    spec = _spec()
    spec["manager"].update(idle_timeout_s=1.5)
    manager = NetsimManager(parse_config(spec)).start()
    idle = socket.create_connection(("127.0.0.1", manager.port), 2.0)
    half = socket.create_connection(("127.0.0.1", manager.port), 2.0)
    busy = LineClient(manager.port)
    try:
        half.sendall(b"NETSIM|netsim.protobuf")  # bytes without a line are not activity
        end = time.monotonic() + 2.5
        request_id = 0
        while time.monotonic() < end:  # a client sending lines stays connected
            busy.send(_request(request_id, manager.modem_ports[1]))
            assert busy.response(request_id) == Response.UPDATE_ACCEPTED
            request_id += 1
            time.sleep(0.1)
        for sock in (idle, half):
            sock.settimeout(WAIT_S)
            assert sock.recv(100) == b""  # closed by the manager
        assert manager.counters["clients_dropped_idle"] == 2
    finally:
        for sock in (idle, half, busy.sock):
            sock.close()
        manager.close()
