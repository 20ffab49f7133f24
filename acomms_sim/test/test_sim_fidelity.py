"""Issue 14: the seven measured channel/modem fidelity defects, each with numbers (ROS-free)."""

import math

import numpy as np
import pytest
from sim_nmea_capture import Capture

from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.modem_rates import rate_info
from acomms_driver.micromodem import nmea
from acomms_sim.emulator.channel_backend import SimChannelBackend
from acomms_sim.emulator.micromodem_model import AcousticBackend, MicromodemModel
from acomms_sim.modem.fields import ModemPacket
from acomms_sim.modem.sim_modem import SimModem, SimModemConfig
from acomms_sim.nodes import sim_node_support
from acomms_sim.physics import ambient_noise, geodesy, packet_performance, sound_speed
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import ReceiverChannel, Transmission
from acomms_sim.physics.fading import FadingModel
from acomms_sim.physics.packet_performance import PacketPerformance, frame_error_rate
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.7)
RECEIVER = (ORIGIN[0], ORIGIN[1], 20.0)
FC, BW = 10000.0, 5000.0


def channel(noise_db=60.0, seed=1, **options):
    propagation = Propagation(SpreadingModel("spherical", "thorp"),
                              SoundSpeedProfile.constant(1500.0))
    return ReceiverChannel(propagation, AmbientNoise("fixed", noise_db), PacketPerformance(seed),
                           FC, BW, **options)


def tx(start, north_m=1000.0, sl=185.0, fc=FC, rate=1, src=1, mini=10, data=100):
    lat, lon = geodesy.offset_position(*ORIGIN, north_m, 0.0)
    return Transmission(src=src, start_s=start, latitude=lat, longitude=lon, depth_m=20.0,
                        source_level_db=sl, center_frequency_hz=fc, bandwidth_hz=BW, fdp=True,
                        miniframe_rate=rate, dataframe_rate=rate, num_miniframe_bytes=mini,
                        num_dataframe_bytes=data)


# ---- defect 1: one receiver decoded several overlapping packets ------------------------------
def test_equal_overlapping_packets_only_the_first_is_decoded():
    """Two equal rate-1 packets arriving together (0 dB SINR each) were both received 500/500;
    now the receiver locks onto one (ties: lower SRC) and the other is `busy`."""
    both = decoded = 0
    for trial in range(200):
        ch = channel(seed=trial)
        ch.add_transmission(tx(10.0 * trial, src=1), RECEIVER)
        ch.add_transmission(tx(10.0 * trial, src=2), RECEIVER)
        outcome = {r.arrival.transmission.src: r for r in ch.pop_due(10.0 * trial + 9.0)}
        assert outcome[2].outcome == "busy"
        assert outcome[1].snr_db == pytest.approx(0.0, abs=0.01)
        ok = [r.outcome == "received" and r.frames.packet_success for r in outcome.values()]
        both += all(ok)
        decoded += any(ok)
    assert both == 0
    assert decoded == 200  # rate 1 decodes at 0 dB SINR (its FER is 0 above -6.0 dB)


def test_capture_rule_and_lock_ends_when_the_packet_ends():
    ch = channel(capture_margin_db=6.0)
    first = ch.add_transmission(tx(0.0, north_m=1000.0, src=1), RECEIVER)
    # 10 dB louder, starts 1 s into the first: takes the receiver (margin 6 dB)
    ch.add_transmission(tx(1.0, north_m=1000.0, sl=195.0, src=2), RECEIVER)
    # a third after both ended locks normally
    ch.add_transmission(tx(first.end_s + 5.0, north_m=1000.0, src=3), RECEIVER)
    outcomes = {r.arrival.transmission.src: r.outcome for r in ch.pop_due(100.0)}
    assert outcomes == {1: "busy", 2: "received", 3: "received"}
    assert ch.counters.captured == 1
    # without a capture rule the locked packet keeps the receiver
    ch = channel()
    ch.add_transmission(tx(0.0, north_m=1000.0, src=1), RECEIVER)
    ch.add_transmission(tx(1.0, north_m=1000.0, sl=195.0, src=2), RECEIVER)
    outcomes = {r.arrival.transmission.src: r.outcome for r in ch.pop_due(100.0)}
    assert outcomes == {1: "received", 2: "busy"}


def test_own_transmission_ends_the_lock():
    ch = channel()
    first = ch.add_transmission(tx(0.0, src=1), RECEIVER)
    ch.add_own_transmission(first.start_s + 1.0, first.start_s + 1.5)
    ch.add_transmission(tx(2.0, src=2), RECEIVER)  # arrives after our transmission ended
    outcomes = {r.arrival.transmission.src: r.outcome for r in ch.pop_due(100.0)}
    assert outcomes == {1: "half_duplex", 2: "received"}


# ---- defect 2: interference ignored band and time overlap ------------------------------------
def test_interference_weighted_by_band_overlap():
    """An interferer overlapping 2 % of the band dropped the SINR from 40.5 to 1.25 dB; now its
    power counts with that 2 %: 40.5 dB -> 16.96 dB."""
    victim_tl = SpreadingModel("spherical", "thorp").transmission_loss_db(20, 20, 1000, FC)
    level = 185.0 - victim_tl
    ch = channel(noise_db=level - 40.5)
    alone = channel(noise_db=level - 40.5)
    alone.add_transmission(tx(0.0, src=1), RECEIVER)
    assert alone.pop_due(100.0)[0].snr_db == pytest.approx(40.5, abs=1e-6)
    ch.add_transmission(tx(0.0, src=1), RECEIVER)
    # equal level at the receiver (its carrier 0.98 B away absorbs more), 2 % of its band in ours
    other_fc = FC + 0.98 * BW
    extra = SpreadingModel("spherical", "thorp").transmission_loss_db(20, 20, 1000, other_fc) \
        - victim_tl
    interferer = ch.add_transmission(tx(-0.01, sl=185.0 + extra, fc=other_fc, src=2), RECEIVER)
    assert interferer.receive_level_db == pytest.approx(level)
    assert interferer.band_fraction == pytest.approx(0.02)
    (reception,) = ch.pop_due(100.0)  # the interferer is not decodable here: not reported
    expected = -10 * math.log10(10 ** -4.05 + 0.02)
    assert expected == pytest.approx(16.96, abs=0.02)
    assert reception.snr_db == pytest.approx(expected, abs=0.02)
    assert ch.counters.interference_only == 1


def test_interference_weighted_by_time_overlap():
    """A 1 ms overlap set a whole frame's SINR to 0 dB; now it weighs 1 ms / frame length."""
    ch = channel(noise_db=185.0 - SpreadingModel("spherical", "thorp").transmission_loss_db(
        20, 20, 1000, FC) - 40.5)
    victim = ch.add_transmission(tx(0.0, src=1), RECEIVER)
    # an equal packet whose sound starts 1 ms before the victim ends
    ch.add_transmission(tx(victim.end_s - victim.delay_s - 0.001, src=2), RECEIVER)
    receptions = {r.arrival.transmission.src: r for r in ch.pop_due(100.0)}
    last_frame = receptions[1].segment_snrs_db[-1]
    # 100 bytes use 2 of rate 1's 3 frames; they share the 3.072 s dataframe: 1.536 s each
    _, start, end = victim.transmission.segments(victim.start_s)[-1]
    frame_s = end - start
    assert frame_s == pytest.approx(rate_info(1).dataframe_duration_s / 2)
    assert last_frame == pytest.approx(-10 * math.log10(10 ** -4.05 + 0.001 / frame_s), abs=0.01)
    assert 31.0 < last_frame < 31.5 and receptions[1].frames.packet_success
    assert receptions[2].outcome == "busy"  # it arrived while the receiver was locked


# ---- defect 3: the emulator ignored pwramp.txlevel -------------------------------------------
def test_emulator_source_level_follows_txlevel():
    """Levels 0 and 3 gave the same SNR; now 185 vs 167 dB at 25 kHz: 18 dB apart."""
    propagation = Propagation(SpreadingModel("spherical", "thorp"),
                              SoundSpeedProfile.constant(1500.0))
    backend = SimChannelBackend(propagation, AmbientNoise("fixed", 70.0), seed=3)
    models = []
    try:
        for src, north in ((1, 0.0), (2, 300.0)):
            backend.set_position(src, *geodesy.offset_position(*ORIGIN, north, 0.0), 10.0)
            models.append(MicromodemModel(src, backend, airtime_scale=0.02))
        a, b = models
        out_b = Capture(b)
        snrs = []
        for level in ("0", "3"):
            a.handle_line(nmea.format_sentence("CCCFG", ["pwramp.txlevel", level]))
            a.handle_line(nmea.format_sentence("CCTFP", [0, 0, 2, 1, 1, 0, 0, "01", "0203"]))
            snrs.append(nmea.parse_cst(out_b.wait_for("CACST", timeout=5.0).fields)["snr_in"])
            a._busy_until = 0.0  # next packet at once (the test does not wait for $CATXF)
        assert snrs[0] - snrs[1] == pytest.approx(185.0 - 167.0, abs=0.05)
        tl = SpreadingModel("spherical", "thorp").transmission_loss_db(10, 10, 300.0, 25000.0)
        assert snrs[1] == pytest.approx(167.0 - tl - 70.0, abs=0.05)
    finally:
        for model in models:
            model.close()
        backend.close()


# ---- defect 4: packet durations disagreed between modem_sim_node and the emulator ------------
class _Recorder(AcousticBackend):
    def __init__(self):
        self.sent = []

    def attach(self, modem):
        pass

    def detach(self, modem):
        pass

    def transmit(self, sender, transmission):
        self.sent.append(transmission)


def _sim_modem_duration(packet_type, rate, mini, data):
    modem = SimModem(SimModemConfig(1), Propagation(SpreadingModel(),
                                                    SoundSpeedProfile.constant(1500.0)),
                     AmbientNoise("fixed", 60.0))
    modem.set_position(*ORIGIN, 10.0)
    result = modem.queue_packet(ModemPacket(0, 2, packet_type, rate, rate, mini, data), 0.0)
    return result.events[0].channel_packet.duration_s


def test_emulator_and_sim_modem_durations_are_identical():
    """A one-frame rate-2 packet lasted 6.5 s in modem_sim_node and 2.167 s in the emulator;
    both now take the profile's 2.024 s. FDP: ros_acomms' 1.574 + 3.072 s etc."""
    recorder = _Recorder()
    model = MicromodemModel(5, recorder)
    try:
        model.handle_line(nmea.format_sentence("CCCYC", [0, 5, 2, 2, 0, 1]))
        model.handle_line(nmea.format_sentence("CCTXD", [5, 2, 0, bytes(64).hex()]))
        legacy = recorder.sent[-1].duration_s
        assert legacy == pytest.approx(2.024)
        assert _sim_modem_duration(2, 2, b"", bytes(64)) == pytest.approx(legacy)
        for rate, expected in ((1, 1.574 + 3.072), (3, 0.755 + 3.072), (5, 0.286 + 3.000)):
            model._busy_until = 0.0
            model.handle_line(nmea.format_sentence(
                "CCTFP", [0, 0, 2, rate, rate, 0, 0, "01", bytes(40).hex()]))
            fdp = recorder.sent[-1].duration_s
            assert fdp == pytest.approx(expected)
            assert _sim_modem_duration(3, rate, b"\x01", bytes(40)) == pytest.approx(fdp)
    finally:
        model.close()


# ---- defect 5: FER tables that never reach 0; rate 0 borrowing rate 5's table ----------------
def test_full_rate3_packets_succeed_at_high_snr_and_rate0_follows_fsk():
    perf = PacketPerformance(seed=2)
    full = [perf.draw_full_packet(3, 40.0).packet_success for _ in range(300)]
    assert sum(full) == 300  # was (1 - 0.025)^3 = 92.7 %
    # rate 0: 80 bps FH-FSK in 5 kHz; at 0 dB SNR no frame is lost (was FER 1 below 3.1 dB
    # with rate 5's table); the curve itself: test_sim_link_budget.py
    assert packet_performance.eb_n0_db(0, 0.0) == pytest.approx(10 * math.log10(5000 / 80))
    assert frame_error_rate(0, 0.0) == 0.0
    # legacy PSK rate 2 from coherent PSK: Q(sqrt(2 Eb/N0)) over 512-bit frames
    gamma = 10 ** (packet_performance.eb_n0_db(2, -4.0) / 10)
    expected = 1 - (1 - 0.5 * math.erfc(math.sqrt(gamma))) ** 512
    assert frame_error_rate(2, -4.0) == pytest.approx(expected, abs=0.02)
    for rate, (snrs, fers) in packet_performance.FER_TABLES.items():
        assert fers[0] == 1.0 and fers[-1] == 0.0, rate
        assert all(np.diff(fers) <= 0) and all(np.diff(snrs) > 0), rate


# ---- defect 6: fixed 1500 m/s, straight path, sphere, inconsistent defaults ------------------
def test_default_sound_speed_is_mackenzie_and_distances_are_wgs84():
    values = {spec.name: spec.default for spec in sim_node_support.PROPAGATION_SPECS}
    propagation = sim_node_support.build_propagation(values, None)
    src = (*ORIGIN, 10.0)
    rcv = (*geodesy.offset_position(*ORIGIN, 1000.0, 0.0), 10.0)
    path = propagation.path(src, rcv, FC)
    c = sound_speed.mackenzie(10.0, 35.0, 10.0)
    assert c == pytest.approx(1490.0, abs=0.5)
    assert path.delay_s == pytest.approx(1000.0 / c, abs=2e-5)
    assert path.delay_s - 1000.0 / 1500.0 == pytest.approx(0.0045, abs=0.0003)  # was the error
    # WGS84: one degree of longitude on the equator is 111319.49 m (the sphere said 111195.08)
    assert geodesy.horizontal_distance_m(0, 0, 0, 1) == pytest.approx(111319.49, abs=0.01)
    assert geodesy.haversine_distance_m(0, 0, 0, 1) == pytest.approx(111195.08, abs=0.01)


def test_library_and_node_defaults_agree():
    specs = {spec.name: spec.default for spec in (*sim_node_support.PROPAGATION_SPECS,
                                                  *sim_node_support.NOISE_SPECS)}
    model = SpreadingModel()
    assert (specs["spreading"], specs["absorption_model"]) == (model.spreading,
                                                                model.absorption_model)
    assert specs["water_temperature_c"] == model.temperature_c
    noise = AmbientNoise()
    assert specs["wind_speed_mps"] == noise.wind_speed_mps == 5.0
    assert ambient_noise.wenz_band_level_db(FC, BW) == pytest.approx(noise.band_level_db(FC, BW))
    assert SimModemConfig(1).default_source_level_db(MICROMODEM2) == 165.0  # txlevel 3, 10 kHz


# ---- defect 7: no fading ---------------------------------------------------------------------
def _fading_channel(seed, fading):
    return channel(seed=seed, fading=fading)


def test_fading_is_seeded_per_packet_whatever_else_happens():
    fading = FadingModel("rician", k_factor=2.0)
    quiet = _fading_channel(5, fading)
    busy = _fading_channel(5, fading)
    # `busy` also hears unrelated packets from another SRC, planned in a different order
    for start in (300.0, 100.0, 200.0):
        busy.add_transmission(tx(start + 50.0, src=9), RECEIVER)
        busy.add_transmission(tx(start, src=1), RECEIVER)
    for start in (100.0, 200.0, 300.0):
        quiet.add_transmission(tx(start, src=1), RECEIVER)
    mine = [r for r in busy.pop_due(1000.0) if r.arrival.transmission.src == 1]
    reference = quiet.pop_due(1000.0)
    assert [r.fading_db for r in mine] == [r.fading_db for r in reference]
    assert len({round(r.fading_db, 6) for r in reference}) == 3  # differs packet to packet
    other_seed = _fading_channel(6, fading)
    other_seed.add_transmission(tx(100.0, src=1), RECEIVER)
    assert other_seed.pop_due(1000.0)[0].fading_db != reference[0].fading_db


def test_rayleigh_outage_matches_analytic_and_coherence_blocks():
    fading = FadingModel("rayleigh")
    rng = np.random.default_rng(11)
    gains = np.array(fading.draw_gains_db(rng, 4000))
    share = float(np.mean(gains < -10.0))  # 10 dB mean margin
    analytic = fading.outage_probability(10.0)
    assert analytic == pytest.approx(1 - math.exp(-0.1))
    sigma = math.sqrt(analytic * (1 - analytic) / len(gains))
    assert abs(share - analytic) < 2 * sigma
    assert np.mean(10 ** (gains / 10)) == pytest.approx(1.0, abs=0.06)  # mean level kept
    # K = 10 Rician: fewer deep fades than Rayleigh
    assert FadingModel("rician", 10.0).outage_probability(10.0) < analytic / 5
    # per-frame fading: a 4.6 s packet with 1 s coherence has 5 independent blocks
    blocks = FadingModel("rayleigh", coherence_time_s=1.0)
    ch = _fading_channel(1, blocks)
    arrival = ch.add_transmission(tx(0.0), RECEIVER)
    assert len(arrival.gains_db) == 5 and len(set(arrival.gains_db)) == 5
    with pytest.raises(ValueError, match="fading model"):
        FadingModel("nakagami").validate()


def test_doppler_from_radial_velocity():
    """Defect 7 (Doppler): CST dop was always 0. A receiver closing at 2 m/s reports dop 2,
    the packet arrives compressed by (1 - 2/c), and beyond the tolerance every frame fails."""
    propagation = Propagation(SpreadingModel("spherical", "thorp"),
                              SoundSpeedProfile.constant(1500.0))

    def modem(src, north_m, **config):
        m = SimModem(SimModemConfig(src, **config), propagation, AmbientNoise("fixed", 50.0))
        m.set_position(*geodesy.offset_position(*ORIGIN, north_m, 0.0), 20.0)
        return m

    sender = modem(1, 0.0)
    for tolerance, expect_ok in ((math.inf, True), (1.5, False)):
        receiver = modem(2, 1002.0, doppler_tolerance_mps=tolerance)
        # timed positions 1 s apart: moving 2 m/s south, towards the sender
        receiver.set_position(*geodesy.offset_position(*ORIGIN, 1002.0, 0.0), 20.0, time_s=0.0)
        receiver.set_position(*geodesy.offset_position(*ORIGIN, 1000.0, 0.0), 20.0, time_s=1.0)
        assert receiver.velocity_mps[1] == pytest.approx(-2.0, abs=1e-3)
        started = sender.queue_packet(ModemPacket(0, 2, 3, 1, 1, b"\x01", bytes(40)), 10.0)
        channel_packet = started.events[0].channel_packet
        receiver.on_channel_packet(channel_packet, 10.0)
        (arrival,) = receiver.channel.arrivals
        assert arrival.doppler_mps == pytest.approx(2.0, abs=1e-3)
        duration = arrival.end_s - arrival.start_s
        assert duration == pytest.approx(channel_packet.duration_s * (1 - 2.0 / 1500.0),
                                         rel=1e-6)
        events = receiver.advance(100.0)
        cst = next(e.cst for e in events if hasattr(e, "cst") and not hasattr(e, "packet"))
        assert cst.dop == pytest.approx(2.0, abs=1e-3)
        assert (cst.num_bad_data_frames == 0) == expect_ok
        sender._busy_until_s = -math.inf
