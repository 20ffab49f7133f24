"""acomms_link_budget: the simulator's own models (TL, NL, SNR, expected packet error rate)."""

import json
import math

import numpy as np
import pytest

from acomms_sim.physics import geodesy
from acomms_sim.physics.channel import ReceiverChannel, Transmission
from acomms_sim.physics.packet_performance import PacketPerformance
from acomms_sim.tools import link_budget


def budgets(capsys, *args):
    assert link_budget.main(["--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_table_over_ranges_is_monotonic(capsys):
    rows = budgets(capsys, "--source-level", "160", "--ranges", "500:20000:500",
                   "--noise", "fixed", "--noise-db", "90")
    assert len(rows) == 40
    assert all(b["transmission_loss_db"] > a["transmission_loss_db"]
               for a, b in zip(rows, rows[1:], strict=False))
    assert all(r["noise_db"] == 90.0 for r in rows)
    for rate in ("1", "5"):
        pers = [r["packet_error_rate"][rate] for r in rows]
        assert pers == sorted(pers) and pers[0] < 0.01 and pers[-1] == 1.0, (rate, pers)
    assert link_budget.main(["--ranges", "1000:3000:1000"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("# ")]
    assert table[0].split()[:4] == ["range_m", "TL_db", "NL_db", "SNR_db"] and len(table) == 4


def test_assumptions_are_printed_before_the_numbers(capsys):
    assert link_budget.main(["--range", "2000", "--center-frequency", "25000", "--bandwidth",
                             "4000", "--noise", "fixed", "--noise-db", "77"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = [line for line in lines if line.startswith("# ")]
    assert lines[:len(header)] == header and len(header) == 4  # all of them first
    text = "\n".join(header)
    assert "modem profile micromodem2" in text
    assert "centre frequency 25000 Hz, band 4000 Hz (23000-27000 Hz)" in text
    assert "noise: fixed 77 dB re 1 uPa in band" in text
    assert "transmission loss: practical spreading + francois_garrison absorption" in text
    # no --source-level: the simulated modem's own level, said so, and used for the SNR
    level = link_budget.default_source_level_db(25000.0)
    assert f"source level {level:.1f} dB re 1 uPa @ 1 m (the micromodem2 profile's" in text
    assert f"SL {level:.1f} dB" in "\n".join(lines)
    assert link_budget.main(["--range", "2000", "--source-level", "180", "--noise", "wenz",
                             "--shipping", "0.3"]) == 0
    text = capsys.readouterr().out
    assert "source level 180.0 dB re 1 uPa @ 1 m (--source-level)" in text
    assert "noise: wenz (shipping 0.3, wind 5 m/s): " in text


def test_snr_is_what_the_simulated_receiver_computes(capsys):
    """Same models, same geometry: the link budget's SNR equals ReceiverChannel's reception."""
    arguments = link_budget.parser().parse_args(["--range", "3000", "--spreading", "practical",
                                                 "--shipping", "0.8", "--wind", "12"])
    calculator = link_budget.LinkBudgetCalculator(link_budget.model_values(arguments), 185.0,
                                                  10000.0, 5000.0)
    budget = calculator.at_range(3000.0, 20.0, 30.0)
    channel = ReceiverChannel(calculator.propagation, calculator.noise, PacketPerformance(1),
                              10000.0, 5000.0)
    lat, lon = geodesy.offset_position(*link_budget.ORIGIN, 0.0, 3000.0)
    tx = Transmission(src=1, start_s=0.0, latitude=link_budget.ORIGIN[0],
                      longitude=link_budget.ORIGIN[1], depth_m=20.0, source_level_db=185.0,
                      center_frequency_hz=10000.0, bandwidth_hz=5000.0, fdp=True,
                      miniframe_rate=1, dataframe_rate=1, num_miniframe_bytes=10,
                      num_dataframe_bytes=100)
    arrival = channel.add_transmission(tx, (lat, lon, 30.0))
    (reception,) = channel.pop_due(arrival.end_s)
    assert reception.snr_db == pytest.approx(budget.snr_db, abs=1e-6)
    assert budget.horizontal_range_m == pytest.approx(3000.0, rel=1e-6)


@pytest.mark.parametrize("rate,snr", [(1, -6.8), (5, 5.5)])
def test_packet_error_rate_matches_the_simulators_draws(rate, snr):
    expected = link_budget.packet_error_rate(rate, snr, -10.0)
    assert 0.05 < expected < 0.95
    draws = PacketPerformance(seed=5)
    trials = 2000
    failures = sum(not draws.draw_full_packet(rate, snr).packet_success for _ in range(trials))
    sigma = math.sqrt(expected * (1 - expected) / trials)
    assert abs(failures / trials - expected) <= 4 * sigma


def test_text_output_and_errors(capsys):
    assert link_budget.main(["--source-level", "185", "--from", "41.52,-70.67,20",
                             "--to", "41.525,-70.662,5", "--rates", "1,5"]) == 0
    text = capsys.readouterr().out
    assert "SNR" in text and "rate 1 (" in text and "rate 5 (" in text and "rate 3" not in text
    assert link_budget.main(["--range", "1000", "--rates", "9"]) == 1
    assert "rate" in capsys.readouterr().err
    assert link_budget.main(["--from", "41.5,-70.6,10"]) == 1
    assert capsys.readouterr().err.strip() == ("acomms_link_budget: --from and --to go "
                                               "together")


def test_default_source_level_is_the_modem_profiles():
    """Issue 29: without --source-level the budget used 0 dB (SNR -134.8 dB at 2 km)."""
    from acomms_core.modems.micromodem2 import MICROMODEM2

    for fc, expected in ((10000.0, 165.0), (25000.0, 167.0)):  # txlevel 3
        assert MICROMODEM2.source_level_db(3, fc) == expected
        assert link_budget.default_source_level_db(fc) == expected
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert link_budget.main(["--range", "2000", "--json"]) == 0
    (row,) = json.loads(out.getvalue())
    assert row["receive_level_db"] == pytest.approx(165.0 - row["transmission_loss_db"])
    assert row["snr_db"] > 0


def rate0_fer_by_hand(snr):
    """Rate 0 (FH-FSK) written out independently: 160 chips/s in 5 kHz, Rayleigh-faded
    non-coherent BFSK chips, K=9 rate-1/2 code (its spectrum to d = 26), 1-bit CRC repair."""
    ec_n0 = 10 ** ((snr + 10 * math.log10(5000 / 160)) / 10)
    p = 1 / (2 + ec_n0)
    pb = 0.0
    spectrum = {12: 33, 14: 281, 16: 2179, 18: 15035, 20: 105166, 22: 692330, 24: 4580007,
                26: 29692894}
    for d, c in spectrum.items():
        pb += c * p ** d * sum(math.comb(d - 1 + k, k) * (1 - p) ** k for k in range(d))
    pb = min(pb, 0.5)
    return 1 - ((1 - pb) ** 256 + 256 * pb * (1 - pb) ** 255)


def test_rate0_curve_follows_coded_fh_fsk():
    from acomms_sim.physics.packet_performance import FER_TABLES, frame_error_rate

    for snr in (-7.6, -7.3, -7.0, -6.5):
        assert frame_error_rate(0, snr) == pytest.approx(rate0_fer_by_hand(snr), abs=0.02), snr
    snrs, fers = FER_TABLES[0]
    half = float(np.interp(0.5, fers[::-1], snrs[::-1]))
    assert -7.5 < half < -7.1  # FER 0.5 near -7.3 dB in the 5 kHz band
    assert frame_error_rate(0, -8.5) == 1.0 and frame_error_rate(0, -4.9) == 0.0
    assert frame_error_rate(0, -6.2) > 1e-3 > frame_error_rate(0, -6.1)
    # steeper than the uncoded curve it replaces (FER 0.22 at -7 dB, 0.05 at -6 dB)
    assert frame_error_rate(0, -6.0) < 1e-3
    # and at -1 dB (the link budget's 0.000) rate 0 has 6 dB of margin
    assert link_budget.packet_error_rate(0, -1.0, -10.0) == 0.0
