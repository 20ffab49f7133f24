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
    assert rate_info(5).packet_duration_s == pytest.approx(0.286 + 3.1)


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
