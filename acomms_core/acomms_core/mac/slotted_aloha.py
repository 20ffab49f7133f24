"""Slotted ALOHA on the TDMA cycle (ROS-free), parameters as ros_acomms' tdma_slotted_aloha.

On top of the advanced TDMA MAC (`tdma_advanced`): `aloha_slots` are slots shared by every vehicle
of the cycle. A vehicle transmits in its own `active_slots` (the comms_slots among them) and in
every aloha slot, whether or not that slot is one of its active slots. In an aloha slot only
messages of priority >= `aloha_slot_priority` (0..99) go out: it is the slot's minimum priority
for the queue (other slot_tags of that slot are kept). Nav slots that fall in aloha slots are
removed (no pings in a shared slot); if every nav slot is an aloha slot while pings are enabled
the configuration is refused. When every active slot is an aloha slot the vehicle has no slot of
its own, which is refused unless `allow_aloha_slots_only` is true.

Added to ros_acomms' behaviour: `aloha_transmit_probability` (default 1: ros_acomms, always
transmit) is the probability that this vehicle uses a given aloha slot at all; the draw is
`seeded_uniform(random_seed, node name, "aloha", slot serial)`, so it is the same in every run on
the deterministic clock and independent between vehicles (p-persistent slotted ALOHA).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from acomms_core.mac.policy import Action, blame
from acomms_core.mac.seeded_random import RANDOM_SEED_PARAMETER, seeded_uniform
from acomms_core.mac.tdma import TDMA_PARAMETERS
from acomms_core.mac.tdma_advanced import (
    ADVANCED_PARAMETERS,
    AdvancedConfig,
    TdmaAdvancedPolicy,
    build_advanced_config,
)
from acomms_core.mac.tdma_schedule import ScheduleError, SlotTags, format_slots, parse_slots
from acomms_core.modems.profile import FrameBudget
from acomms_core.ros.parameter_spec import ParameterSpec

ALOHA_PARAMETERS = (
    ParameterSpec("aloha_slots", "",
                  "Slots shared by every vehicle (slotted ALOHA): int, list or range string; "
                  "'' = none. This vehicle may transmit in them even when they are not among "
                  "its active_slots", dynamic_typing=True),
    ParameterSpec("aloha_slot_priority", 0,
                  "Minimum message priority sent in an aloha slot", 0, 99),
    ParameterSpec("allow_aloha_slots_only", False,
                  "Allow a vehicle whose active slots are all aloha slots (no slot of its own)"),
    ParameterSpec("aloha_transmit_probability", 1.0,
                  "Probability that this vehicle uses a given aloha slot (seeded random "
                  "backoff); 1 = always, as ros_acomms", 0.0, 1.0),
    RANDOM_SEED_PARAMETER,
)


@dataclasses.dataclass(frozen=True)
class AlohaConfig(AdvancedConfig):
    aloha_slots: tuple[int, ...] = ()
    own_slots: tuple[int, ...] = ()          # active_slots that are not aloha slots
    aloha_slot_priority: int = 0
    transmit_probability: float = 1.0
    random_seed: int = 0

    @property
    def exclusive_slots(self) -> tuple[int, ...]:
        """Slots this vehicle should have to itself (scenario overlap warnings)."""
        return self.own_slots


def _aloha_tags(slot_tags: Mapping[int, SlotTags], aloha_slots, priority: int) -> dict:
    tags = dict(slot_tags)
    for slot in aloha_slots:
        old = tags.get(slot, SlotTags())
        tags[slot] = dataclasses.replace(
            old, minimum_priority=max(priority, old.minimum_priority or 0))
    return tags


def build_aloha_config(values: Mapping[str, Any]) -> AlohaConfig:
    num_slots = values["num_slots"]
    with blame("aloha_slots"):
        raw = values["aloha_slots"]
        aloha = () if isinstance(raw, str) and not raw.strip() else parse_slots(raw, num_slots)
    with blame("active_slots"):
        active = parse_slots(values["active_slots"], num_slots)
    if set(active) <= set(aloha) and not values["allow_aloha_slots_only"]:
        raise ScheduleError(
            f"allow_aloha_slots_only: every active slot ({format_slots(active) or 'none'}) is "
            "an aloha slot, so this vehicle has no slot of its own; set allow_aloha_slots_only "
            "to true if that is intended")
    union = tuple(sorted(set(active) | set(aloha)))
    base = build_advanced_config({**values, "active_slots": list(union)})
    nav = tuple(s for s in base.nav_slots if s not in aloha)
    pings = base.pings
    if base.nav_slots and not nav and (pings.modem_pings or pings.ping_transponders):
        raise ScheduleError(
            f"nav_slots: every nav slot ({format_slots(base.nav_slots)}) is an aloha slot and "
            "pings are enabled; nav pings cannot go in shared slots")
    tags = _aloha_tags(base.slot_tags, aloha, values["aloha_slot_priority"])
    own = tuple(s for s in active if s not in aloha)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(AdvancedConfig)}
    fields.update(nav_slots=nav, slot_tags=tags,
                  comms_slots=tuple(sorted(set(base.comms_slots) | set(aloha))),
                  untagged_slots=tuple(s for s in base.untagged_slots if s not in aloha))
    return AlohaConfig(**fields, aloha_slots=aloha, own_slots=own,
                       aloha_slot_priority=values["aloha_slot_priority"],
                       transmit_probability=values["aloha_transmit_probability"],
                       random_seed=values["random_seed"])


class TdmaSlottedAlohaPolicy(TdmaAdvancedPolicy):
    """Advanced TDMA plus shared aloha slots with a minimum priority and seeded backoff."""

    PARAMETERS = TDMA_PARAMETERS + ADVANCED_PARAMETERS + ALOHA_PARAMETERS

    @classmethod
    def build_config(cls, values: Mapping[str, Any]):
        return build_aloha_config(values)

    def reset(self) -> None:
        super().reset()
        self.drawn_serial: int | None = None  # the aloha slot occurrence of the last draw

    def aloha_draw_allows(self, t: float) -> bool:
        """The seeded draw of the aloha slot occurrence at t: may this vehicle use it?"""
        config: AlohaConfig = self.config
        if config.transmit_probability >= 1.0:
            return True
        draw = seeded_uniform(config.random_seed, self.identity, "aloha",
                              config.schedule.slot_serial(t))
        return draw < config.transmit_probability

    def uses_aloha_slot(self, now: float) -> bool:
        """aloha_draw_allows, counted once per slot occurrence."""
        allowed = self.aloha_draw_allows(now)
        serial = self.config.schedule.slot_serial(now)
        if serial != self.drawn_serial:
            self.drawn_serial = serial
            self.counters["aloha_slots_used" if allowed else "aloha_slots_backed_off"] += 1
        return allowed

    def next_action(self, now: float, held: FrameBudget | None) -> Action:
        config: AlohaConfig = self.config
        if config.schedule.position(now).current_slot in config.aloha_slots:
            if self.software_mute or not self.uses_aloha_slot(now):
                return None
            return self.data_action(now, held)
        return super().next_action(now, held)

    def scan_horizon_s(self) -> float:
        """Backed-off slots can repeat: look further ahead than one cycle."""
        cycles = 1 if self.config.transmit_probability >= 1.0 else 50
        return cycles * self.config.schedule.cycle_duration_seconds

    def predictable(self) -> bool:
        config: AlohaConfig = self.config
        return not (config.nav_slots and (config.pings.modem_pings
                                          or config.pings.ping_transponders))

    def could_act(self, t: float, duration_s: float) -> bool:
        config: AlohaConfig = self.config
        if self.software_mute or not self.may_send(t, duration_s):
            return False
        slot = config.schedule.position(t).current_slot
        if slot in config.aloha_slots:
            return self.aloha_draw_allows(t)
        return slot in config.comms_slots

    def status(self, now: float) -> dict[str, Any]:
        """TdmaSlottedAlohaStatus fields."""
        config: AlohaConfig = self.config
        schedule = config.schedule
        advanced = super().status(now)
        advanced["message"] = f"aloha_slots: {format_slots(config.aloha_slots)}, " + \
            advanced["message"]
        return {
            **advanced,  # flat, as ros_acomms
            "aloha_slots": list(config.aloha_slots),
            "aloha_slot_priority": config.aloha_slot_priority,
            "aloha_transmit_probability": config.transmit_probability,
            "time_to_next_aloha": schedule.time_to_next_in(now, config.aloha_slots),
            "time_to_next_own_slot": schedule.time_to_next_in(now, config.own_slots),
            "in_aloha_slot": schedule.position(now).current_slot in config.aloha_slots,
        }
