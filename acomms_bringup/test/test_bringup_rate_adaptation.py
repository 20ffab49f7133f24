"""Scenarios pass the rate adaptation parameters to every MAC kind; bad values name their key."""

import pytest
import yaml

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.description.stack import describe_vehicle

RATE_KEYS = {"rate_policy": "adaptive", "rate_candidates": "1,3,5", "rate_target_per": 0.2,
             "rate_margin_db": 2.0, "rate_hysteresis_db": 0.5, "rate_snr_smoothing": 0.5,
             "rate_link_max_age_seconds": 120.0}
MACS = {"tdma": ("tdma_node", {"num_slots": 2, "active_slots": 0}),
        "tdma_slotted_aloha": ("tdma_slotted_aloha_node", {"num_slots": 2, "active_slots": 0}),
        "carrier_sense": ("carrier_sense_node", {}),
        "polled": ("mac_node", {"poll_list": "1:10,2:10"})}


def scenario_with(tmp_path, mac: dict):
    (tmp_path / "c.yaml").write_text("- codec_name: c\n  message_codecs: []\n")
    vehicles = [{"name": name, "src": src, "modem": {"kind": "sim"}, "codec_config": "c.yaml",
                 "position": {"latitude": 1.0, "longitude": 2.0 + src / 1000, "depth": 3.0},
                 "mac": mac} for name, src in (("a", 1), ("b", 2))]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"duration_seconds": 10, "vehicles": vehicles}))
    return load_scenario(path)


@pytest.mark.parametrize("kind", sorted(MACS))
def test_rate_parameters_reach_every_mac_node(tmp_path, kind):
    executable, extra = MACS[kind]
    scenario = scenario_with(tmp_path, {"kind": kind, **extra, **RATE_KEYS})
    parameters = describe_vehicle(scenario, "a").node(executable).parameters
    assert {key: parameters[key] for key in RATE_KEYS} == RATE_KEYS


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("rate_policy", "fastest", r"mac\.rate_policy.*fixed, adaptive"),
    ("rate_candidates", "1,9", r"mac\.rate_candidates.*rate 9"),
    ("rate_target_per", 1.5, r"mac\.rate_target_per"),
])
def test_bad_rate_values_are_refused_with_the_key(tmp_path, key, value, reason):
    with pytest.raises(ValueError, match=reason):
        scenario_with(tmp_path, {"kind": "tdma", "num_slots": 2, "active_slots": 0, key: value})
