"""ROS-free link budget, FER tables, seeded packet draws, channel timing/collisions, Bellhop."""

import math

import pytest

from acomms_core.modems.modem_rates import UnknownRateError, rate_info
from acomms_sim.physics import geodesy, packet_performance, transmission_loss
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import ReceiverChannel, Transmission
from acomms_sim.physics.packet_performance import PacketPerformance, frame_error_rate
from acomms_sim.physics.sound_speed import SoundSpeedProfile

ORIGIN = (41.5, -70.7)


def test_sonar_equation_snr():
    assert packet_performance.snr_db(185, 70, 80) == pytest.approx(35)
    assert packet_performance.snr_db(185, 70, 80, directivity_index_db=3) == pytest.approx(38)
    assert packet_performance.sum_levels_db([60, 60]) == pytest.approx(60 + 10 * math.log10(2))


def test_fer_table_interpolation_and_clamp():
    assert frame_error_rate(1, -10) == 1.0
    assert frame_error_rate(1, 0) == 0.0
    assert frame_error_rate(1, -6.845) == pytest.approx(0.170)
    assert frame_error_rate(1, (-6.845 - 6.444) / 2) == pytest.approx((0.170 + 0.020) / 2)
    assert frame_error_rate(5, 20) == 0.0
    # rate 3's measured table ends at FER 0.025; extended by one step it reaches 0 (defect 5)
    assert frame_error_rate(3, 0.0044) == pytest.approx(0.025)
    assert frame_error_rate(3, 0.8363) == 0.0 and frame_error_rate(3, 10) == 0.0
    with pytest.raises(UnknownRateError, match="valid rates"):
        frame_error_rate(9, 0)


def test_durations_per_rate():
    for rate in (1, 3, 5):
        info = rate_info(rate)
        assert packet_performance.packet_duration_s(True, rate, rate, 10, 100) == pytest.approx(
            info.miniframe_duration_s + info.dataframe_duration_s)
        assert packet_performance.packet_duration_s(True, rate, rate, 10, 0) == pytest.approx(
            info.miniframe_duration_s)
    assert (packet_performance.packet_duration_s(True, 1, 1, 5, 0)
            != packet_performance.packet_duration_s(True, 5, 5, 5, 0))
    with pytest.raises(ValueError, match="FDP"):
        packet_performance.packet_duration_s(True, 2, 2, 0, 10)


@pytest.mark.parametrize("rate,snr", [(1, -6.845), (1, -7.234), (3, -1.5853), (3, -0.8275),
                                      (5, 4.443), (5, 3.8)])
def test_success_statistics_match_one_minus_fer_to_the_frames(rate, snr):
    """Over 4000 seeded trials the success rate matches (1-FER)^frames within 4 sigma."""
    info = rate_info(rate)
    fer = frame_error_rate(rate, snr)
    expected = (1 - fer) ** info.frames
    perf = PacketPerformance(seed=1234)
    trials = 4000
    successes = sum(perf.draw_packet(rate, rate, 0, info.max_dataframe_bytes, snr, snr)
                    .packet_success for _ in range(trials))
    sigma = math.sqrt(expected * (1 - expected) / trials)
    assert abs(successes / trials - expected) <= 4 * sigma + 1e-9, (successes, expected)


def test_seed_reproduces_exactly():
    def run(seed):
        perf = PacketPerformance(seed=seed)
        return [perf.draw_full_packet(3, -1.5).frame_success for _ in range(50)]
    assert run(7) == run(7)
    assert run(7) != run(8)


def test_valid_byte_ranges():
    assert packet_performance.valid_byte_ranges([True, False, True], 64, 192) == [0, 64, 128, 192]
    assert packet_performance.valid_byte_ranges([True, True, False], 64, 150) == [0, 128]
    assert packet_performance.valid_byte_ranges([False, True, True], 64, 150) == [64, 150]


def _channel(noise_db=60.0, seed=1, fc=10000.0, bw=5000.0):
    propagation = transmission_loss.Propagation(
        transmission_loss.SpreadingModel("spherical", "thorp"), SoundSpeedProfile.constant(1500))
    return ReceiverChannel(propagation, AmbientNoise("fixed", noise_db), PacketPerformance(seed),
                           fc, bw)


def _tx(start, north_m=0.0, sl=185.0, fc=10000.0, rate=1, src=1):
    lat, lon = geodesy.offset_position(*ORIGIN, north_m, 0.0)
    return Transmission(src=src, start_s=start, latitude=lat, longitude=lon, depth_m=20.0,
                        source_level_db=sl, center_frequency_hz=fc, bandwidth_hz=5000.0,
                        fdp=True, miniframe_rate=rate, dataframe_rate=rate,
                        num_miniframe_bytes=10, num_dataframe_bytes=100)


RECEIVER = (ORIGIN[0], ORIGIN[1], 20.0)


def test_arrival_at_range_over_speed_plus_duration():
    channel = _channel()
    tx = _tx(100.0, north_m=1500.0)
    arrival = channel.add_transmission(tx, RECEIVER)
    assert arrival.start_s == pytest.approx(101.0, abs=1e-4)
    assert arrival.end_s == pytest.approx(101.0 + tx.duration_s, abs=1e-4)
    assert channel.pop_due(arrival.end_s - 0.01) == []
    (reception,) = channel.pop_due(arrival.end_s)
    assert reception.outcome == "received" and reception.frames.packet_success
    assert reception.databytes_valid == [0, 100] and reception.minibytes_valid == [0, 10]
    # SNR from the sonar equation
    tl = 20 * math.log10(1500) + 1.5 * transmission_loss.absorption_db_per_km("thorp", 10)
    assert reception.snr_db == pytest.approx(185 - tl - 60, abs=0.01)


def test_collision_first_arrival_locks_the_receiver_the_later_one_is_interference():
    """Replaces the old 'weaker sees stronger as noise' test: the receiver now locks onto the
    first arrival; the later one is `busy` (not decoded) and interferes, time-weighted."""
    channel = _channel(seed=3)
    strong = channel.add_transmission(_tx(0.0, north_m=500.0, src=1), RECEIVER)
    # starts 1.5 s earlier but arrives 0.17 s after the strong one: both whole packets overlap
    weak = channel.add_transmission(_tx(-1.5, north_m=3000.0, src=2), RECEIVER)
    receptions = {r.arrival.transmission.src: r for r in channel.pop_due(100.0)}
    assert strong and weak and weak.start_s - strong.start_s == pytest.approx(1/6, abs=1e-3)
    assert receptions[2].outcome == "busy" and channel.counters.busy == 1
    overlap = (strong.end_s - weak.start_s) / (weak.end_s - weak.start_s)
    assert receptions[2].interference_db == pytest.approx(
        strong.receive_level_db + 10 * math.log10(overlap), abs=1e-6)
    # the strong one sees the weak one as extra noise but still decodes (SINR ~16 dB); its
    # miniframe slot is overlapped only from 0.17 s on, so its SINR there is higher
    assert receptions[1].outcome == "received" and receptions[1].frames.packet_success
    margin = strong.receive_level_db - weak.receive_level_db
    snrs = receptions[1].segment_snrs_db
    assert snrs[1:] == pytest.approx([margin] * (len(snrs) - 1), abs=0.1)
    mini_share = (1.574 - (weak.start_s - strong.start_s)) / 1.574
    assert snrs[0] == pytest.approx(margin - 10 * math.log10(mini_share), abs=0.1)
    assert channel.counters.collisions == 2


def test_no_collision_without_overlap_and_out_of_band_ignored():
    channel = _channel()
    channel.add_transmission(_tx(0.0, north_m=500.0, src=1), RECEIVER)
    channel.add_transmission(_tx(10.0, north_m=3000.0, src=2), RECEIVER)
    assert channel.add_transmission(_tx(0.2, north_m=100.0, src=3, fc=25000.0), RECEIVER) is None
    receptions = channel.pop_due(100.0)
    assert [r.outcome for r in receptions] == ["received", "received"]
    assert channel.counters.out_of_band == 1 and channel.counters.collisions == 0


def test_half_duplex():
    channel = _channel()
    arrival = channel.add_transmission(_tx(0.0, north_m=1500.0), RECEIVER)
    channel.add_own_transmission(arrival.end_s - 0.5, arrival.end_s + 3.0)
    (reception,) = channel.pop_due(100.0)
    assert reception.outcome == "half_duplex"
    assert channel.counters.half_duplex_lost == 1


def test_partial_packet_has_valid_byte_list():
    channel = _channel(noise_db=0.0, seed=5)
    # pick the source level so the SNR sits where rate-1 FER is ~0.5: many partial packets
    tl = transmission_loss.SpreadingModel("spherical", "thorp").transmission_loss_db(
        20, 20, 1500, 10000)
    partial = None
    for i in range(40):
        tx = _tx(i * 10.0, north_m=1500.0, sl=tl - 7.1)
        tx.num_dataframe_bytes = 192
        tx.num_miniframe_bytes = 0
        channel.add_transmission(tx, RECEIVER)
        for reception in channel.pop_due(i * 10.0 + 9.0):
            success = reception.frames.frame_success
            if any(success) and not all(success):
                partial = reception
    assert partial is not None
    expected = packet_performance.valid_byte_ranges(partial.frames.frame_success, 64, 192)
    assert partial.databytes_valid == expected and expected


def test_bellhop_isovelocity_agrees_with_spherical_plus_configured_absorption():
    """Deep isovelocity water, mid-column source and receiver: the direct path dominates, so the
    incoherent Bellhop TL must agree with spherical spreading + the configured absorption
    (Thorp inside Bellhop replaced by the model's) within 1 dB, and the strongest eigenray's
    delay is the straight path's."""
    model = transmission_loss.BellhopModel(SoundSpeedProfile.constant(1500.0), water_depth_m=5000)
    thorp = transmission_loss.BellhopModel(SoundSpeedProfile.constant(1500.0), water_depth_m=5000,
                                           absorption_model="thorp")
    for horizontal in (500.0, 1000.0, 2000.0):
        bellhop = model.transmission_loss_db(2500.0, 2500.0, horizontal, 10000.0)
        slant = horizontal  # Bellhop ran at the cell's centre; corrected to the actual range
        alpha = transmission_loss.absorption_db_per_km("francois_garrison", 10.05, 10.0, 35.0,
                                                       2500.0)
        expected = 20 * math.log10(slant) + alpha * slant / 1000
        assert bellhop == pytest.approx(expected, abs=1.0), horizontal
        alpha_thorp = transmission_loss.absorption_db_per_km("thorp", 10.0)
        alpha_fg = transmission_loss.absorption_db_per_km("francois_garrison", 10.0, 10.0, 35.0,
                                                          2500.0)
        assert bellhop - thorp.transmission_loss_db(2500.0, 2500.0, horizontal, 10000.0) == \
            pytest.approx((alpha_fg - alpha_thorp) * horizontal / 1000, abs=1e-6)
        delay, spread = model.timing(2500.0, 2500.0, horizontal, 10000.0)
        # whatever bounces arrive later, the direct path is the strongest eigenray
        assert delay == pytest.approx(slant / 1500.0, abs=5e-4) and spread >= 0
    runs, hits = model.runs, model.cache_hits  # TL and timing of a geometry: one cache entry
    assert runs == 6 and hits == 3
    model.transmission_loss_db(2500.4, 2500.2, 1003.0, 10010.0)  # same cell: cached
    assert model.runs == runs and model.cache_hits == hits + 1


def test_bellhop_delay_follows_the_refracted_eigenray():
    """Defect 6: with Bellhop the delay was the straight path's even where rays refract."""
    profile = SoundSpeedProfile([0.0, 200.0, 1000.0, 3000.0], [1520.0, 1500.0, 1485.0, 1510.0])
    model = transmission_loss.BellhopModel(profile, water_depth_m=3000.0)
    propagation = transmission_loss.Propagation(model, profile)
    src = (*ORIGIN, 100.0)
    rcv = (*geodesy.offset_position(*ORIGIN, 15000.0, 0.0), 900.0)
    path = propagation.path(src, rcv, 10000.0)
    straight = path.slant_range_m / profile.mean_speed_between(100.0, 900.0)
    delay, spread = model.timing(100.0, 900.0, path.horizontal_range_m, 10000.0)
    assert path.delay_s == delay and path.delay_spread_s == spread
    assert abs(path.delay_s - straight) > 0.002  # refraction: not the straight path
    assert 9.0 < path.delay_s < 11.0


def test_bellhop_errors_are_clear():
    model = transmission_loss.BellhopModel(SoundSpeedProfile.constant(1500.0), water_depth_m=100)
    with pytest.raises(ValueError, match="outside the water column"):
        model.transmission_loss_db(150.0, 10.0, 500.0, 10000.0)
    with pytest.raises(ValueError, match="positive water depth"):
        transmission_loss.BellhopModel(SoundSpeedProfile.constant(1500.0), water_depth_m=0)
