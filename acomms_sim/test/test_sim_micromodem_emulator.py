"""ROS-free tests of the Micromodem model, its loopback backend and its pty / TCP servers."""

import os
import select
import socket
import threading
import time

import pytest
from sim_nmea_capture import Capture, emulator_pair

from acomms_driver.micromodem import nmea
from acomms_sim.emulator.micromodem_emulator import EmulatorNetwork, PtyServer, TcpServer, main
from acomms_sim.emulator.micromodem_model import LoopbackBackend, MicromodemModel


@pytest.fixture
def pair():
    yield from emulator_pair(delay_s=0.1)


def test_config_query_and_set(pair):
    a, out, _, _ = pair
    a.handle_line(nmea.format_sentence("CCCFQ", ["SRC"]))
    assert out.wait_for("CACFG").fields == ("SRC", "1")
    a.handle_line(nmea.format_sentence("CCCFG", ["BR1", "5"]))
    assert out.wait_for("CACFG").fields == ("BR1", "5")
    a.handle_line(nmea.format_sentence("CCCFQ", ["info"]))
    assert out.wait_for("CACFG").fields[0].startswith("info.")
    a.handle_line(nmea.format_sentence("CCCFQ", ["nonsense"]))
    assert out.wait_for("CAERR")
    a.handle_line("$CCCFQ,SRC*00")
    assert "checksum" in out.wait_for("CAERR").fields[3]


def test_fdp_transmission_reaches_the_peer_with_cst(pair):
    a, out_a, _, out_b = pair
    a.handle_line(nmea.format_sentence("CCTFP", [0, 0, 2, 1, 5, 0, 0, "0102",
                                                 bytes(range(40)).hex()]))
    assert out_a.wait_for("CATXF")
    xst = nmea.parse_xst(out_a.wait_for("CAXST").fields)
    assert (xst["src"], xst["dest"], xst["nbytes"]) == (1, 2, 42)
    rfp = out_b.wait_for("CARFP")
    assert rfp.fields[2:6] == ("1", "2", "1", "5")
    assert nmea.parse_frames(rfp.fields[9]) == [(True, b"\x01\x02")]
    assert nmea.parse_frames(rfp.fields[10]) == [(True, bytes(range(40)))]
    cst = nmea.parse_cst(out_b.wait_for("CACST").fields)
    assert (cst["src"], cst["dest"], cst["mode"], cst["snr_in"]) == (1, 2, 0, 20.0)


def test_legacy_cycle_with_data_requests(pair):
    a, out_a, _, out_b = pair
    a.handle_line(nmea.format_sentence("CCCYC", [0, 1, 2, 1, 0, 2]))
    assert out_a.wait_for("CACYC").fields == ("0", "1", "2", "1", "0", "2")
    assert out_a.wait_for("CADRQ").fields[5] == "1"
    a.handle_line(nmea.format_sentence("CCTXD", [1, 2, 0, "AA" * 64]))
    assert out_a.wait_for("CADRQ").fields[5] == "2"
    a.handle_line(nmea.format_sentence("CCTXD", [1, 2, 0, "BB" * 10]))
    assert out_a.wait_for("CATXF")
    assert out_b.wait_for("CACYC").fields[1:3] == ("1", "2")
    assert out_b.wait_for("CARXD").fields[4] == "AA" * 64
    assert out_b.wait_for("CARXD").fields[4] == "BB" * 10
    assert nmea.parse_cst(out_b.wait_for("CACST").fields)["packet_type"] == 3


def test_ping_reports_one_way_travel_time(pair):
    a, out_a, _, out_b = pair
    a.handle_line(nmea.format_sentence("CCCMD", ["PNG", 1, 2, 1, 0, ""]))
    assert out_a.wait_for("CACMD")
    assert out_b.wait_for("CACMA").fields[2:4] == ("1", "2")
    reply = out_a.wait_for("CACMR")
    assert reply.fields[0] == "PNR" and reply.fields[2:4] == ("2", "1")
    assert float(reply.fields[4]) == pytest.approx(0.1)


def test_frame_errors_from_the_backend_make_a_partial_reception():
    backend = LoopbackBackend(frame_errors=lambda receiver, tx: ([True], [True, False]))
    a, b = MicromodemModel(1, backend, 0.01), MicromodemModel(2, backend, 0.01)
    out_b = Capture(b)
    a.handle_line(nmea.format_sentence("CCTFP", [2, 1, 1, 0, 0, "01", "22" * 100]))
    frames = nmea.parse_frames(out_b.wait_for("CARFP").fields[10])
    assert [ok for ok, _ in frames] == [True, False]
    cst = nmea.parse_cst(out_b.wait_for("CACST").fields)
    assert (cst["mode"], cst["num_bad_data_frames"]) == (1, 1)
    a.close()
    b.close()


def test_bad_fields_are_reported_not_raised(pair):
    a, out, _, _ = pair
    for line in ("CCTFP,2,9,9,0,0,,", "CCTXD,1,2,0,AA", "CCCYC,0,1,2,9,0,1", "CCZZZ,1"):
        a.handle_line(nmea.format_sentence(*line.split(",", 1)) if "," in line else line)
        assert out.wait_for("CAERR")
    assert a.counters["host_bad_fields"] == 3 and a.counters["host_unknown"] == 1


def _read_until(fd_or_sock, text, timeout=3.0):
    data, end = b"", time.monotonic() + timeout
    while text not in data and time.monotonic() < end:
        ready, _, _ = select.select([fd_or_sock], [], [], 0.1)
        if ready:
            data += (os.read(fd_or_sock, 4096) if isinstance(fd_or_sock, int)
                     else fd_or_sock.recv(4096))
    return data


def test_pty_and_tcp_servers_answer(tmp_path):
    model = MicromodemModel(7)
    pty = PtyServer(model, link=str(tmp_path / "modem"))
    pty.start()
    fd = os.open(str(tmp_path / "modem"), os.O_RDWR | os.O_NOCTTY)
    try:
        os.write(fd, nmea.format_sentence("CCCFQ", ["SRC"]).encode())
        assert b"$CACFG,SRC,7*" in _read_until(fd, b"SRC,7")
    finally:
        os.close(fd)
        pty.close()
    assert not os.path.lexists(tmp_path / "modem")
    model2 = MicromodemModel(8)
    server = TcpServer(model2)
    server.start()
    with socket.create_connection(("127.0.0.1", server.port), timeout=2) as sock:
        sock.sendall(nmea.format_sentence("CCCFQ", ["SRC"]).encode())
        assert b"$CACFG,SRC,8*" in _read_until(sock, b"SRC,8")
    server.close()


def test_main_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["--src", "300"])
    with pytest.raises(SystemExit):
        main(["--config", "novalue"])
    assert "--src must be 0-255" in capsys.readouterr().err


def _never_reading_client(port: int, query_bytes: int = 300_000) -> socket.socket:
    """A client that sends config queries whose answers (30 times their size) exceed every
    socket buffer and never reads them. It stops when all are sent, when the server takes
    none for 3 s (the server is stuck) or when the server drops it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    queries = nmea.format_sentence("CCCFQ", ["ALL"]).encode() * 100
    sent, last_sent = 0, time.monotonic()
    while sent < query_bytes and time.monotonic() - last_sent < 3.0:
        try:
            sent += sock.send(queries)
            last_sent = time.monotonic()
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:  # dropped by the server
            break
    return sock


def _query_src(port: int, timeout: float = 3.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(nmea.format_sentence("CCCFQ", ["SRC"]).encode())
        return _read_until(sock, b"CACFG,SRC", timeout)


def test_a_client_that_never_reads_does_not_stall_the_modem():
    """Issue 28: a client that never reads blocked the server thread in sendall; the next
    client got no reply. By default (replace) the new client takes over at once."""
    model = MicromodemModel(9)
    logs = []
    server = TcpServer(model, on_log=logs.append)
    server.start()
    try:
        slow = _never_reading_client(server.port)
        start = time.monotonic()
        assert b"$CACFG,SRC,9*" in _query_src(server.port)
        assert time.monotonic() - start < 3.0
        # the slow client was replaced by the new one, or dropped before for its unread output
        counters = server.counters
        replaced, dropped = counters["clients_replaced"], counters["clients_dropped_slow"]
        assert replaced + dropped == 1, counters
        assert any(("replaces" if replaced else "dropped_slow") in line for line in logs), logs
        slow.close()
    finally:
        server.close()
        model.close()


def test_write_bytes_floods_as_fast_as_the_client_reads_without_dropping_it():
    """Tests and benches flood a driver with write_bytes: it waits for room (backpressure)
    instead of piling output past the bound that drops a client."""
    model = MicromodemModel(4)
    server = TcpServer(model)
    server.start()
    chunk, chunks = b"$CAXXX," + b"x" * 50_000 + b"\n", 100  # 5 MB, over the output bound
    received = 0
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=2) as sock:
            assert _wait_for(lambda: server.counters["connections"] == 1)
            writer = threading.Thread(target=lambda: [server.write_bytes(chunk)
                                                      for _ in range(chunks)])
            writer.start()
            end = time.monotonic() + 30.0
            while received < len(chunk) * chunks and time.monotonic() < end:
                received += len(sock.recv(1 << 20))
            writer.join(30.0)
        assert received == len(chunk) * chunks
        assert server.counters["clients_dropped_slow"] == 0
    finally:
        server.close()
        model.close()


def _wait_for(predicate, timeout_s: float = 5.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and not predicate():
        time.sleep(0.01)
    return predicate()


def test_network_tcp_modems_follow_the_new_client_rule_and_summarise_their_counters():
    network = EmulatorNetwork({"modems": [
        {"src": 1, "tcp_port": 0, "latitude": 41.5, "longitude": -70.6, "depth": 10.0},
        {"src": 2, "latitude": 41.5, "longitude": -70.6, "depth": 20.0}]},
        on_new_client="refuse")
    try:
        port = int(network.endpoints[1].rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=2) as first, \
                socket.create_connection(("127.0.0.1", port), timeout=2) as second:
            assert second.recv(100) == b""  # refused
            first.sendall(nmea.format_sentence("CCCFQ", ["SRC"]).encode())
            assert b"$CACFG,SRC,1*" in _read_until(first, b"SRC,1")
        assert _wait_for(lambda: "disconnections 1" in network.summary()[0])
        assert network.summary() == [f"SRC 1 port {port}: connections 1, disconnections 1, "
                                     "clients_refused 1"]  # the pty modem has none
    finally:
        network.close()
