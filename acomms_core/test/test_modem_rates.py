import pytest

from acomms_core.modems.modem_rates import (
    FDP_RATES,
    UnknownRateError,
    frames_used,
    rate_info,
)


def test_fdp_capacities_and_frames():
    assert FDP_RATES == (1, 3, 5)
    assert [rate_info(r).max_dataframe_bytes for r in FDP_RATES] == [192, 512, 2048]
    assert [rate_info(r).frames for r in FDP_RATES] == [3, 2, 8]
    # ros_acomms' uModem2 durations (defect 4): miniframes 1.574 / 0.755 / 0.286 s,
    # dataframes 3.072 / 3.072 / 3.000 s
    assert [rate_info(r).miniframe_duration_s for r in FDP_RATES] == [1.574, 0.755, 0.286]
    assert [rate_info(r).dataframe_duration_s for r in FDP_RATES] == [3.072, 3.072, 3.000]
    assert rate_info(5).packet_duration_s == pytest.approx(0.286 + 3.000)
    assert [round(rate_info(r).bit_rate_bps) for r in FDP_RATES] == [500, 1333, 5461]


def test_legacy_durations_follow_the_documented_rule():
    """Defect 4: legacy rates 2/4/6 used 6.5/6.0/5.0 s matching no rule; now overhead + frames
    at the bit rate of the FDP rate with the same coding class (rate 0: 80 bps FSK)."""
    from acomms_core.modems.micromodem2 import MICROMODEM2
    from acomms_core.modems.modem_rates import LEGACY_OVERHEAD_S
    expected = {0: 1.0 + 256 / 80, 2: 1.0 + 1536 / 500, 4: 1.0 + 4096 / (4096 / 3.072),
                6: 1.0 + 1536 / 500}
    for rate, seconds in expected.items():
        assert rate_info(rate).dataframe_duration_s == pytest.approx(seconds)
        info = rate_info(rate)
        for frames in range(1, info.frames + 1):
            assert MICROMODEM2.packet_duration_s(False, 0, rate, 0, frames * info.frame_bytes) \
                == pytest.approx(LEGACY_OVERHEAD_S + frames * info.frame_duration_s)
    # a one-frame rate-2 packet: 2.024 s (the emulator and modem_sim_node both ask the profile)
    assert MICROMODEM2.packet_duration_s(False, 0, 2, 0, 64) == pytest.approx(2.024)


def test_source_levels_per_txlevel_and_band():
    """Defect 3: ros_acomms' source levels per pwramp.txlevel 0..3 at 25 and 10 kHz."""
    from acomms_core.modems.micromodem2 import MICROMODEM2
    assert [MICROMODEM2.source_level_db(t, 25000) for t in range(4)] == [185, 181, 179, 167]
    assert [MICROMODEM2.source_level_db(t, 10000) for t in range(4)] == [183, 179, 177, 165]
    assert MICROMODEM2.source_level_db(3, 17500) == pytest.approx(166.0)
    with pytest.raises(ValueError, match="txlevel 4"):
        MICROMODEM2.source_level_db(4, 25000)


def test_legacy_rates():
    assert rate_info(0).max_dataframe_bytes == 32
    assert rate_info(6).max_dataframe_bytes == 192
    assert not rate_info(2).fdp and rate_info(2).max_miniframe_bytes == 0


def test_frames_used():
    assert frames_used(5, 0) == 0
    assert frames_used(5, 1) == 1
    assert frames_used(5, 257) == 2
    assert frames_used(1, 10_000) == 3


@pytest.mark.parametrize("bad", [7, -1, "x", None])
def test_unknown_rate(bad):
    with pytest.raises(UnknownRateError, match="valid rates"):
        rate_info(bad)
