"""ROS-free: the driver's packet decisions come from the modem profile plus its own Micromodem
rules; its parameters are checked by a pure function."""

import dataclasses

import pytest

from acomms_core.modems import registry
from acomms_core.modems.micromodem2 import Micromodem2Profile
from acomms_core.ros.parameter_spec import defaults
from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.packet_rules import (
    PACKET_TYPE_AUTO,
    PACKET_TYPE_FDP,
    PACKET_TYPE_FSK,
    ModemPacket,
    PacketRules,
)
from acomms_driver.nodes.driver_parameters import (
    PARAMETERS,
    check_parameters,
    default_dest,
    modem_config,
)


def test_fdp_or_legacy_follows_the_profile_and_use_legacy_packets():
    rules = PacketRules()
    assert rules.sends_fdp(ModemPacket(dest=2, dataframe_rate=5))
    # AUTO at a rate without FDP packets: a legacy cycle, as the profile says.
    legacy = ModemPacket(dest=2, dataframe_rate=2, dataframe_bytes=b"x")
    assert not rules.sends_fdp(legacy) and rules.check(legacy) is None
    forced = dataclasses.replace(rules, use_legacy_packets=True)
    assert not forced.sends_fdp(ModemPacket(dest=2, dataframe_rate=5))
    assert forced.sends_fdp(ModemPacket(dest=2, packet_type=PACKET_TYPE_FDP, dataframe_rate=5))
    assert PacketRules.legacy_rate(ModemPacket(packet_type=PACKET_TYPE_FSK,
                                               dataframe_rate=3)) == 0


def test_tdp_has_no_miniframe_and_needs_an_fdp_dataframe_rate():
    tdp = PacketRules(use_tdp=True)
    # The miniframe rate is unused by $CCTDP: a legacy one does not matter.
    assert tdp.check(ModemPacket(dest=2, packet_type=PACKET_TYPE_FDP, miniframe_rate=2,
                                 dataframe_rate=3, dataframe_bytes=b"x" * 512)) is None
    reason = tdp.check(ModemPacket(dest=2, packet_type=PACKET_TYPE_FDP, dataframe_rate=2))
    assert reason is not None and "rate" in reason
    assert "use_tdp" in tdp.check(ModemPacket(dest=2, miniframe_bytes=b"m"))


def test_a_different_profile_changes_the_decisions(monkeypatch):
    class NarrowProfile(Micromodem2Profile):
        name = "narrow"
        broadcast_address = 200

        def is_fdp(self, packet_type, dataframe_rate):  # no FDP at all
            return False

    profile = NarrowProfile()
    rules = PacketRules(profile)
    assert not rules.sends_fdp(ModemPacket(dest=2, packet_type=PACKET_TYPE_AUTO,
                                           dataframe_rate=5))
    monkeypatch.setitem(registry.MODEM_PROFILES, "narrow", profile)
    values = {**defaults(PARAMETERS), "modem_profile": "narrow"}
    assert check_parameters(values, None, False) is None
    assert default_dest(values) == 200


def test_default_dest_is_the_broadcast_address_unless_set():
    values = defaults(PARAMETERS)
    assert default_dest(values) == 121
    assert default_dest({**values, "default_modem_dest": 7}) == 7


def test_check_parameters_is_pure_and_names_the_problem():
    values = defaults(PARAMETERS)
    assert check_parameters(values, None, False) is None
    assert "modem_profile" in check_parameters({**values, "modem_profile": "nope"}, None, False)
    assert "modem_config" in check_parameters({**values, "modem_config": "[1"}, None, False)
    moved = {**values, "modem_remote_port": 4100}
    assert "cannot change while active" in check_parameters(moved, values, True)
    assert check_parameters(moved, values, False) is None
    assert modem_config({**values, "modem_config": "{BR1: 3}"}) == {"pwramp.txlevel": 3,
                                                                    "BR1": 3}


@pytest.mark.parametrize("text, expected", [
    ("$CCCFQ,SRC", "$CCCFQ,SRC*3A\r\n"),
    ("  $CCCFQ,SRC*3A ", "$CCCFQ,SRC*3A\r\n"),
])
def test_complete_sentence(text, expected):
    assert nmea.complete_sentence(text) == expected


def test_complete_sentence_refuses_bad_checksums_and_garbage():
    for text in ("$CCCFQ,SRC*00", "CCCFQ,SRC", "$ccc\u00e9"):
        with pytest.raises(nmea.NmeaError):
            nmea.complete_sentence(text)
