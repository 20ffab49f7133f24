"""The EvoLogics S2C modem profile: in the registry, limits and durations as documented."""

import pytest

from acomms_core.modems import evologics_s2c as s2c
from acomms_core.modems.profile import (
    PACKET_TYPE_AUTO,
    PACKET_TYPE_FDP,
    ModemProfile,
    PacketRefused,
)
from acomms_core.modems.registry import MODEM_PROFILES, check_modem_profile, modem_profile


def test_registered_and_satisfies_the_profile_protocol():
    profile = modem_profile("evologics_s2c")
    assert profile is s2c.EVOLOGICS_S2C and isinstance(profile, ModemProfile)
    assert check_modem_profile({"modem_profile": "evologics_s2c"}) is None
    assert "evologics_s2c" in MODEM_PROFILES and profile.broadcast_address == 255


def test_budgets_follow_the_instant_message_and_burst_limits():
    profile = s2c.EVOLOGICS_S2C
    im = profile.frame_budget(1, s2c.IM_RATE)
    assert (im.maximum_miniframe_bytes, im.maximum_dataframe_bytes) == (0, 64)
    burst = profile.frame_budget(1, s2c.BURST_RATE, maximum_miniframe_bytes=72,
                                 maximum_dataframe_bytes=5000)
    assert burst.budget_bytes == 1024 and len(burst.notes) == 2
    assert profile.frame_budget(1, s2c.BURST_RATE, maximum_dataframe_bytes=300).budget_bytes == 300
    profile.check_packet(False, 1, s2c.IM_RATE, 0, 64)
    with pytest.raises(PacketRefused, match="65 bytes exceed the 64"):
        profile.check_packet(False, 1, s2c.IM_RATE, 0, 65)
    with pytest.raises(PacketRefused, match="no FDP"):
        profile.check_packet(True, 1, s2c.BURST_RATE, 0, 10)
    with pytest.raises(PacketRefused, match="unknown S2C rate 3"):
        profile.frame_budget(1, 3)
    assert not profile.is_fdp(PACKET_TYPE_AUTO, 5)
    with pytest.raises(PacketRefused):
        profile.is_fdp(PACKET_TYPE_FDP, 5)
    assert [s2c.packet_kind(n) for n in (1, 64, 65, 1024)] == ["im", "im", "burst", "burst"]
    with pytest.raises(PacketRefused, match="1025"):
        s2c.packet_kind(1025)


def test_durations_are_overhead_plus_bytes_at_the_rate():
    profile = s2c.EVOLOGICS_S2C
    assert profile.packet_duration_s(False, 0, s2c.IM_RATE, 0, 4) == pytest.approx(0.182)
    assert profile.packet_duration_s(False, 0, s2c.IM_RATE, 0, 64) == pytest.approx(0.662)
    full_burst = profile.packet_duration_s(False, 0, s2c.BURST_RATE, 0, 1024)
    assert full_burst == pytest.approx(0.3 + 8192 / 13900)
    assert full_burst == pytest.approx(profile.rate_info(s2c.BURST_RATE).packet_duration_s)
    assert profile.rate_info(s2c.BURST_RATE).bit_rate_bps == 13900
    assert profile.source_level_db(0, 26000) - profile.source_level_db(3, 26000) == 18
    with pytest.raises(ValueError, match="not 0-3"):
        profile.source_level_db(4, 26000)
