"""Micromodem emulators on the simulated channel: physics decides delay, SNR and losses."""

import math
import time

import pytest
from sim_nmea_capture import Capture

from acomms_driver.micromodem import nmea
from acomms_sim.emulator.channel_backend import SimChannelBackend
from acomms_sim.emulator.micromodem_model import MicromodemModel
from acomms_sim.physics.absorption import thorp_db_per_km
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import DETECTION_WINDOW_S
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.6)
SOURCE_LEVEL_DB = 185.0
NOISE_DB = 70.0
AIRTIME_SCALE = 0.02  # fast on-air time; propagation delays stay physical


@pytest.fixture
def channel():
    propagation = Propagation(SpreadingModel("spherical", "thorp"),
                              SoundSpeedProfile.constant(1500.0))
    backend = SimChannelBackend(propagation, AmbientNoise("fixed", NOISE_DB),
                                source_level_db=SOURCE_LEVEL_DB, seed=7)
    models = []

    def add(src, north_m, depth_m=10.0):
        latitude, longitude = offset_position(*ORIGIN, north_m, 0.0)
        backend.set_position(src, latitude, longitude, depth_m)
        model = MicromodemModel(src, backend, airtime_scale=AIRTIME_SCALE)
        models.append(model)
        return model, Capture(model)

    yield backend, add
    for model in models:
        model.close()
    backend.close()


def _send_fdp(model, dest, data=bytes(range(40))):
    model.handle_line(nmea.format_sentence("CCTFP", [0, 0, dest, 1, 5, 0, 0, "0102", data.hex()]))


def test_delay_and_snr_come_from_the_physics(channel):
    backend, add = channel
    a, out_a = add(1, 0.0)
    b, out_b = add(2, 750.0)
    _send_fdp(a, 2)
    xst = nmea.parse_xst(out_a.wait_for("CAXST").fields)
    rfp = out_b.wait_for("CARFP", timeout=5.0)
    assert nmea.parse_frames(rfp.fields[10]) == [(True, bytes(range(40)))]
    cst = nmea.parse_cst(out_b.wait_for("CACST").fields)
    assert cst["toa"] - xst["time"] == pytest.approx(750.0 / 1500.0, abs=0.01)
    expected_tl = 20 * math.log10(750.0) + thorp_db_per_km(25.0) * 0.75
    assert cst["snr_in"] == pytest.approx(SOURCE_LEVEL_DB - expected_tl - NOISE_DB, abs=0.05)
    assert backend.counters["received"] == 1


def test_too_weak_is_not_heard(channel):
    backend, add = channel
    backend.source_level_db = 100.0  # SNR = 100 - 66 - 70 dB: far below detection
    a, _ = add(1, 0.0)
    _, out_far = add(3, 1500.0)
    _send_fdp(a, 3)
    deadline = time.monotonic() + 5.0
    while backend.counters["undetected"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert backend.counters["undetected"] == 1
    assert "CARFP" not in out_far.types()


def test_half_duplex_receiver_loses_the_packet(channel):
    backend, add = channel
    a, _ = add(1, 0.0)
    b, out_b = add(2, 1500.0)  # arrival 1.0 s after a starts
    # b first starts a long legacy-rate-0 packet (seconds on air at full scale), then a sends:
    # a's packet reaches b while b transmits, however late the scheduler runs a's send.
    b.airtime_scale = 1.0
    b.handle_line(nmea.format_sentence("CCTFP", [0, 0, 1, 1, 1, 0, 0, "00", "AA" * 100]))
    _send_fdp(a, 2)
    deadline = time.monotonic() + 5.0
    while backend.counters["half_duplex"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert backend.counters["half_duplex"] == 1
    assert "CARFP" not in out_b.types()


def test_unique_src_and_position_required(channel):
    backend, add = channel
    add(1, 0.0)
    with pytest.raises(ValueError, match="already on the channel"):
        MicromodemModel(1, backend)
    with pytest.raises(ValueError, match="latitude"):
        backend.set_position(5, 123.0, 0.0, 10.0)
    lonely = MicromodemModel(9, backend, airtime_scale=AIRTIME_SCALE)
    out = Capture(lonely)
    _send_fdp(lonely, 1)
    assert "no position" in out.wait_for("CAERR").fields[3]
    lonely.close()


def _read_until(sock, sentence_type, timeout=5.0):
    buffer, end = b"", time.monotonic() + timeout
    sock.settimeout(0.2)
    while time.monotonic() < end:
        try:
            buffer += sock.recv(4096)
        except TimeoutError:
            continue
        for line in buffer.split(b"\n"):
            if line.startswith(b"$" + sentence_type.encode()):
                return nmea.parse_line(line)
    raise AssertionError(f"no {sentence_type} within {timeout} s")


def test_network_file_serves_modems_on_the_channel(tmp_path):
    import socket

    from acomms_sim.emulator.micromodem_emulator import load_network

    north = offset_position(*ORIGIN, 300.0, 0.0)
    path = tmp_path / "net.yaml"
    path.write_text(f"""
channel: {{ambient_noise_db: 60.0, seed: 3}}
modems:
  - {{src: 1, tcp_port: 0, latitude: {ORIGIN[0]}, longitude: {ORIGIN[1]}, depth: 5.0}}
  - {{src: 2, tcp_port: 0, latitude: {north[0]}, longitude: {north[1]}, depth: 5.0}}
""")
    network = load_network(str(path), airtime_scale=AIRTIME_SCALE)
    try:
        ports = {src: int(where.rsplit(":", 1)[1]) for src, where in network.endpoints.items()}
        with socket.create_connection(("127.0.0.1", ports[1]), timeout=2) as a, \
                socket.create_connection(("127.0.0.1", ports[2]), timeout=2) as b:
            time.sleep(0.2)  # let both servers accept
            a.sendall((nmea.format_sentence("CCTFP", [0, 0, 2, 1, 5, 0, 0, "", "C0FFEE"])
                       + "\r\n").encode())
            rfp = _read_until(b, "CARFP")
            assert nmea.parse_frames(rfp.fields[10]) == [(True, bytes.fromhex("C0FFEE"))]
            assert network.backend.counters["received"] == 1
    finally:
        network.close()


@pytest.mark.parametrize("content, message", [
    ("modems: []", "modems: a non-empty list"),
    ("modems: [{src: 1, latitude: 0, longitude: 0}]", "modems[0]: missing depth"),
    ("modems: [{src: 1, latitude: 95, longitude: 0, depth: 1}]", "modems[0]: latitude 95"),
    ("channel: {colour: blue}\nmodems: [{src: 1, latitude: 0, longitude: 0, depth: 1}]",
     "channel: unknown keys ['colour']"),
])
def test_network_file_errors_name_the_key(tmp_path, content, message):
    from acomms_sim.emulator.micromodem_emulator import load_network, main

    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_network(str(path))
    assert main(["--network", str(path)]) == 1


def test_a_detected_packet_is_announced_by_carxp_while_it_arrives(channel):
    backend, add = channel
    a, out_a = add(1, 0.0)
    b, out_b = add(2, 1500.0)  # first sound 1.0 s after a starts; on air 0.02 x the packet
    _send_fdp(a, 2)
    xst = nmea.parse_xst(out_a.wait_for("CAXST").fields)
    rxp = out_b.wait_for("CARXP", timeout=5.0)
    announced = time.time()
    assert nmea.parse_rxp(rxp.fields) == {"packet_type": 5}  # FDP
    # At the end of the detection window after the first sound: before the packet has arrived.
    assert announced - xst["time"] == pytest.approx(1.0 + DETECTION_WINDOW_S, abs=0.15)
    cst = nmea.parse_cst(out_b.wait_for("CACST").fields)
    assert cst["src"] == 1 and b.counters["rx_detected"] == 1
    assert "CARXP" not in out_a.types()  # a modem does not detect itself


def test_rxp_zero_silences_carxp(channel):
    backend, add = channel
    a, _ = add(1, 0.0)
    b, out_b = add(2, 300.0)
    b.handle_line(nmea.format_sentence("CCCFG", ["RXP", 0]))
    _send_fdp(a, 2)
    out_b.wait_for("CACST", timeout=5.0)
    assert b.counters["rx_detected"] == 1 and b.counters["silenced_output"] >= 1
