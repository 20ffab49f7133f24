"""bench/sim_scale_scenario.py beyond 120 vehicles: the EvoLogics S2C profile (broadcast 255) on
the sim modems and MACs, with a codec config that broadcasts to 255 and carries its header in the
dataframe; the scenario loads (the scenario check accepts it)."""

from __future__ import annotations

import pathlib
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from sim_scale_scenario import default_profile, scale_scenario, write_scale_scenario  # noqa: E402


def test_the_micromodem_up_to_120_vehicles_then_the_s2c():
    assert default_profile(120) == "micromodem2"
    assert default_profile(121) == "evologics_s2c"
    with pytest.raises(ValueError, match="below its broadcast 121"):
        scale_scenario(121)
    with pytest.raises(ValueError, match="below its broadcast 255"):
        scale_scenario(255, profile="evologics_s2c")


def test_128_vehicles_load_with_the_s2c_profile_and_a_255_broadcast(tmp_path):
    from acomms_bringup.description.scenario import load_scenario

    path = write_scale_scenario(128, tmp_path / "scale128.yaml", duration_s=60.0)
    data = yaml.safe_load(path.read_text())
    assert {v["parameters"]["modem"]["modem_profile"] for v in data["vehicles"]} == {
        "evologics_s2c"}
    assert {v["parameters"]["mac"]["modem_profile"] for v in data["vehicles"]} == {
        "evologics_s2c"}
    codecs = yaml.safe_load(pathlib.Path(data["vehicles"][0]["codec_config"]).read_text())
    nav = next(c for c in codecs[0]["message_codecs"]
               if c["subscribe_topic"] == "to_acomms/nav_status")
    assert nav["default_dest"] == 255
    assert codecs[0]["miniframe_header"] == [] and codecs[0]["dataframe_header"] == [0xAC]
    scenario = load_scenario(path)
    assert len(scenario.vehicles) == 128 and scenario.vehicles[-1].src == 128


def test_the_s2c_nav_packet_is_shorter_than_the_micromodems():
    from acomms_core.modems.registry import modem_profile

    def airtime(name: str) -> float:
        return modem_profile(name).packet_duration_s(False, 1, 1, 0, 14)

    assert airtime("evologics_s2c") < airtime("micromodem2")
