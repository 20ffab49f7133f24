"""Modem profiles by name (the `modem_profile` parameter); a new modem is one line here."""

from __future__ import annotations

from acomms_core.modems.evologics_s2c import EVOLOGICS_S2C
from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.profile import ModemProfile
from acomms_core.ros.parameter_spec import ParameterSpec

MODEM_PROFILES: dict[str, ModemProfile] = {
    MICROMODEM2.name: MICROMODEM2,
    EVOLOGICS_S2C.name: EVOLOGICS_S2C,
}
DEFAULT_MODEM_PROFILE = MICROMODEM2.name


def modem_profile(name: str) -> ModemProfile:
    """The named profile; ValueError naming the known ones."""
    try:
        return MODEM_PROFILES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown modem_profile {name!r}; known: "
                         f"{', '.join(sorted(MODEM_PROFILES))}") from None


def check_modem_profile(values: dict) -> str | None:
    """Pure validator piece for nodes with a `modem_profile` parameter."""
    name = values.get("modem_profile", DEFAULT_MODEM_PROFILE)
    return None if name in MODEM_PROFILES else (
        f"unknown modem_profile {name!r}; known: {', '.join(sorted(MODEM_PROFILES))}")


MODEM_PROFILE_PARAMETER = ParameterSpec(
    "modem_profile", DEFAULT_MODEM_PROFILE,
    f"Which modem's rates, budgets and packet durations to use ({', '.join(MODEM_PROFILES)})",
    read_only=True)
