"""TDMA slot schedule: where in the cycle we are and whether this vehicle may transmit now.

ROS-free so the slot math is unit-tested on its own; the TDMA nodes are thin adapters over it.

    in_cycle = (now - (cycle_start_time + skew_seconds)) mod (num_slots * slot_duration_seconds)
    slot     = floor(in_cycle / slot_duration_seconds)

A transmission may start only in an active slot, with remaining slot time >= guard_time_seconds +
packet_length_seconds, and not before the previous transmission start + packet_length_seconds +
guard_time_seconds. So a packet always ends at least one guard time before its slot does, and
vehicles with disjoint active slots never transmit at the same time.

Slot lists (`active_slots`, `nav_slots`, per-slot tags) are written as an int, a list, or a range
string: "0,2,5:7" is slots 0, 2, 5, 6, 7; a range is `start:end[:step]` (`-` and `;` work as
separators too, an empty start/end means the first/last slot) and wraps when end < start, so with
8 slots "6:1" is 6, 7, 0, 1.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import re
from collections.abc import Iterable, Mapping

import yaml

from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.profile import FrameBudget, ModemProfile

# start:end[:step] with ':', ';' or '-' as separators (the forms ros_acomms configurations use).
_RANGE_PATTERN = re.compile(r"^(?P<start>\d*)[:;-](?P<end>\d*)(?:[:;-](?P<step>\d*))?$")
# Rounding slack for float comparisons of times, s (well below any clock resolution that matters).
TIME_EPSILON = 1e-9


class ScheduleError(ValueError):
    """A configuration that cannot work; the message is the reason shown to the user."""


def _expand_item(item, num_slots: int) -> list[int]:
    if isinstance(item, bool):
        raise ScheduleError(f"slot {item!r} is not an integer")
    if isinstance(item, int):
        return [item]
    if isinstance(item, float) and item.is_integer():
        return [int(item)]
    if not isinstance(item, str):
        raise ScheduleError(f"slot {item!r} is not an integer or a range string")
    text = item.strip()
    if not text:
        return []
    if text.lstrip("-").isdigit():
        return [int(text)]
    match = _RANGE_PATTERN.match(text)
    if not match:
        raise ScheduleError(
            f"cannot read slot range {item!r}: use an int, 'start:end' or 'start:end:step'")
    start = int(match["start"]) if match["start"] else 0
    end = int(match["end"]) if match["end"] else num_slots - 1
    step = int(match["step"]) if match["step"] else 1
    if step < 1:
        raise ScheduleError(f"slot range {item!r}: step must be at least 1")
    for bound in (start, end):
        if not 0 <= bound < num_slots:
            raise ScheduleError(
                f"slot range {item!r}: slot {bound} is outside 0..{num_slots - 1}")
    if end >= start:
        return list(range(start, end + 1, step))
    # Wrap-around: start..last slot, then 0..end, stepping through the cycle.
    length = num_slots - start + end + 1
    return [(start + offset) % num_slots for offset in range(0, length, step)]


def parse_slots(value, num_slots: int) -> tuple[int, ...]:
    """Sorted, de-duplicated slot numbers from an int, a list, or a string like "0,2,5:7".

    Raises ScheduleError naming the offending entry for bad syntax or slots outside
    0..num_slots-1.
    """
    if num_slots < 1:
        raise ScheduleError(f"num_slots must be at least 1, got {num_slots}")
    if isinstance(value, str):
        items: Iterable = value.split(",")
    elif not isinstance(value, (int, float)) and hasattr(value, "__iter__"):
        items = []
        for entry in value:
            items.extend(entry.split(",") if isinstance(entry, str) else [entry])
    else:
        items = [value]
    slots = set()
    for item in items:
        for slot in _expand_item(item, num_slots):
            if not 0 <= slot < num_slots:
                raise ScheduleError(
                    f"slot {slot} is outside 0..{num_slots - 1} (slots are zero-indexed)")
            slots.add(slot)
    return tuple(sorted(slots))


def format_slots(slots: Iterable[int]) -> str:
    """Compact range string for status and logs: (0, 1, 2, 5) -> "0:2,5"."""
    ordered = sorted(set(slots))
    parts = []
    index = 0
    while index < len(ordered):
        end = index
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        if end - index >= 2:
            parts.append(f"{ordered[index]}:{ordered[end]}")
        else:
            parts.extend(str(s) for s in ordered[index:end + 1])
        index = end + 1
    return ",".join(parts)


def parse_cycle_start_time(value) -> float:
    """Seconds since the Unix epoch from a number, a numeric string or an ISO 8601 time.

    A time without a zone is UTC (cycle starts must agree across vehicles, so local time would be
    a trap).
    """
    if isinstance(value, bool):
        raise ScheduleError(f"cycle_start_time {value!r} is not a time")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
            try:
                parsed = datetime.datetime.fromisoformat(iso)
            except ValueError:
                raise ScheduleError(
                    f"cycle_start_time {value!r} is neither seconds since the epoch nor an "
                    "ISO 8601 time like 2024-01-01T00:00:00Z") from None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=datetime.timezone.utc)
            seconds = parsed.timestamp()
    if not math.isfinite(seconds):
        raise ScheduleError(f"cycle_start_time {value!r} is not finite")
    return seconds


@dataclasses.dataclass(frozen=True)
class SlotPosition:
    """Where a moment falls in the TDMA cycle."""

    in_cycle_seconds: float        # time since the start of the current cycle, s
    current_slot: int              # slot index, 0..num_slots-1
    remaining_slot_seconds: float  # time until the current slot ends, s


@dataclasses.dataclass(frozen=True)
class TransmitDecision:
    allowed: bool
    reason: str  # why not (empty when allowed)


@dataclasses.dataclass(frozen=True)
class TdmaSchedule:
    """One validated TDMA schedule; build with `TdmaSchedule.create` to get reasons for errors."""

    num_slots: int
    slot_duration_seconds: float
    active_slots: tuple[int, ...]
    cycle_start_time: float = 0.0      # seconds since the epoch
    guard_time_seconds: float = 0.0
    packet_length_seconds: float = 0.0
    skew_seconds: float = 0.0          # shifts the whole cycle (tdma_advanced's skew_cycle_sec)

    @classmethod
    def create(cls, *, num_slots: int, slot_duration_seconds: float, active_slots,
               cycle_start_time=0.0, guard_time_seconds: float = 0.0,
               packet_length_seconds: float = 0.0, skew_seconds: float = 0.0) -> TdmaSchedule:
        """Parse and validate; ScheduleError gives the reason a schedule cannot work."""
        if isinstance(num_slots, bool) or not isinstance(num_slots, int) or num_slots < 1:
            raise ScheduleError(f"num_slots must be an integer >= 1, got {num_slots!r}")
        for name, value in (("slot_duration_seconds", slot_duration_seconds),
                            ("guard_time_seconds", guard_time_seconds),
                            ("packet_length_seconds", packet_length_seconds),
                            ("skew_seconds", skew_seconds)):
            if not math.isfinite(value):
                raise ScheduleError(f"{name} must be finite, got {value!r}")
        if slot_duration_seconds <= 0:
            raise ScheduleError(
                f"slot_duration_seconds must be > 0, got {slot_duration_seconds}")
        if guard_time_seconds < 0 or packet_length_seconds < 0:
            raise ScheduleError("guard_time_seconds and packet_length_seconds must be >= 0")
        slots = parse_slots(active_slots, num_slots)
        if not slots:
            raise ScheduleError("active_slots is empty: this vehicle could never transmit")
        if packet_length_seconds + guard_time_seconds >= slot_duration_seconds:
            raise ScheduleError(
                f"packet_length_seconds + guard_time_seconds ({packet_length_seconds:g} + "
                f"{guard_time_seconds:g}) must be less than slot_duration_seconds "
                f"({slot_duration_seconds:g}), otherwise there is no time to transmit")
        return cls(num_slots=num_slots, slot_duration_seconds=float(slot_duration_seconds),
                   active_slots=slots, cycle_start_time=parse_cycle_start_time(cycle_start_time),
                   guard_time_seconds=float(guard_time_seconds),
                   packet_length_seconds=float(packet_length_seconds),
                   skew_seconds=float(skew_seconds))

    @property
    def cycle_duration_seconds(self) -> float:
        return self.num_slots * self.slot_duration_seconds

    def is_active(self, slot: int) -> bool:
        return slot in self.active_slots

    def position(self, now: float) -> SlotPosition:
        in_cycle = (now - self.cycle_start_time - self.skew_seconds) % self.cycle_duration_seconds
        slot = int(in_cycle // self.slot_duration_seconds)
        if slot >= self.num_slots:  # float rounding right at the end of the cycle
            slot = self.num_slots - 1
        remaining = (slot + 1) * self.slot_duration_seconds - in_cycle
        return SlotPosition(in_cycle, slot, max(0.0, remaining))

    def time_to_slot(self, now: float, slot: int) -> float:
        """Seconds until `slot` next starts; 0 while inside it."""
        if not 0 <= slot < self.num_slots:
            raise ScheduleError(f"slot {slot} is outside 0..{self.num_slots - 1}")
        here = self.position(now)
        if slot == here.current_slot:
            return 0.0
        slots_between = (slot - here.current_slot - 1) % self.num_slots
        return here.remaining_slot_seconds + slots_between * self.slot_duration_seconds

    def time_to_next_in(self, now: float, slots: Iterable[int]) -> float:
        """Seconds until the next of `slots` starts (0 inside one); -1 when `slots` is empty."""
        times = [self.time_to_slot(now, slot) for slot in slots]
        return min(times) if times else -1.0

    def time_to_next_active(self, now: float) -> float:
        return self.time_to_next_in(now, self.active_slots)

    def slot_serial(self, now: float) -> int:
        """Number of whole slots since the (skewed) cycle start: identifies one slot occurrence."""
        return math.floor((now - self.cycle_start_time - self.skew_seconds)
                          / self.slot_duration_seconds)

    def remaining_active_seconds(self, now: float) -> float:
        """Time left in the current run of consecutive active slots (0 when not active)."""
        here = self.position(now)
        if not self.is_active(here.current_slot):
            return 0.0
        remaining = here.remaining_slot_seconds
        for offset in range(1, self.num_slots):
            if not self.is_active((here.current_slot + offset) % self.num_slots):
                break
            remaining += self.slot_duration_seconds
        return remaining

    def closed_for_s(self, now: float, packet_length_seconds: float) -> float:
        """Seconds from now during which `may_transmit` refuses a packet of this length whatever
        the last transmission: to the next active slot from an inactive one, to the end of an
        active slot the packet no longer fits in; 0 when it may fit now; inf: never."""
        here = self.position(now)
        if not self.is_active(here.current_slot):
            wait = self.time_to_next_active(now)
            return math.inf if wait < 0 else wait
        if not self._fits(here, self.guard_time_seconds + packet_length_seconds):
            return here.remaining_slot_seconds
        return 0.0

    @staticmethod
    def _fits(here: SlotPosition, needed_s: float) -> bool:
        """Whether what is left of the slot holds needed_s (guard + packet)."""
        return here.remaining_slot_seconds + TIME_EPSILON >= needed_s

    def may_transmit(self, now: float, last_transmit_start: float | None,
                     packet_length_seconds: float | None = None,
                     previous_packet_length_seconds: float | None = None) -> TransmitDecision:
        """Whether a packet of the given length (default: the schedule's) may start now.

        last_transmit_start is when this vehicle last started a transmission (None: never), and
        previous_packet_length_seconds that packet's length (default: this packet's). A
        last_transmit_start in the future means the clock jumped backwards (sim time restarted);
        it no longer says anything about the channel and is ignored.
        """
        packet_length = (self.packet_length_seconds if packet_length_seconds is None
                         else packet_length_seconds)
        previous_length = (packet_length if previous_packet_length_seconds is None
                           else previous_packet_length_seconds)
        here = self.position(now)
        if not self.is_active(here.current_slot):
            return TransmitDecision(False, f"slot {here.current_slot} is not active")
        needed = self.guard_time_seconds + packet_length
        if not self._fits(here, needed):
            return TransmitDecision(
                False, f"{here.remaining_slot_seconds:.3f} s left in slot {here.current_slot}, "
                       f"a packet needs {needed:.3f} s")
        if last_transmit_start is not None and last_transmit_start <= now:
            free_at = last_transmit_start + previous_length + self.guard_time_seconds
            if now + TIME_EPSILON < free_at:
                return TransmitDecision(
                    False, f"previous transmission plus guard lasts until {free_at:.3f}")
        return TransmitDecision(True, "")


# ---------------------------------------------------------------------------------------------
# Frame budgets


def frame_settings(miniframe_rate: int, dataframe_rate: int, maximum_miniframe_bytes: int = -1,
                   maximum_dataframe_bytes: int = -1, packet_length_seconds: float = -1.0,
                   profile: ModemProfile = MICROMODEM2) -> FrameBudget:
    """The modem profile's frame budget (`ModemProfile.frame_budget`), refusals as ScheduleError.

    A negative maximum_*_bytes means the rate's default, a larger one is clipped to what the rate
    carries (noted in `notes`); a negative packet_length_seconds means a full packet at the rates.
    """
    try:
        return profile.frame_budget(int(miniframe_rate), int(dataframe_rate),
                                    int(maximum_miniframe_bytes), int(maximum_dataframe_bytes),
                                    float(packet_length_seconds))
    except ValueError as exc:  # PacketRefused: unknown rate
        raise ScheduleError(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# Per-slot tags


@dataclasses.dataclass(frozen=True)
class SlotTags:
    """Queue filter for packets sent in one slot (passed on in get_next_packet_data)."""

    require_tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    minimum_priority: int | None = None

    @property
    def is_tagged(self) -> bool:
        return bool(self.require_tags or self.exclude_tags or self.minimum_priority is not None)


def _load_yaml_text_or_file(text: str, what: str):
    text = text.strip()
    if not text:
        return None
    path = os.path.expanduser(text)
    if "\n" not in text and text.lower().endswith((".yaml", ".yml")) \
            and not os.path.isfile(path):
        raise ScheduleError(f"file {path} not found")  # the caller names the parameter
    if "\n" not in text and os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as stream:
                return yaml.safe_load(stream)
        except (OSError, yaml.YAMLError) as exc:
            raise ScheduleError(f"cannot read {what} file {path}: {exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScheduleError(f"{what} is neither a readable file nor valid YAML: {exc}") from None


def parse_slot_tags(config, num_slots: int) -> dict[int, SlotTags]:
    """Slot -> SlotTags from a YAML list (inline text, a file path, or already parsed).

    Entries look like ros_acomms' `slot_tags`: {slots: "0:2", require_tags: [a], exclude_tags:
    [b], minimum_priority: 50}; a top-level {slot_tags: [...]} wrapper is accepted. Tags of
    entries covering the same slot are merged; a later minimum_priority wins.
    """
    if isinstance(config, str):
        config = _load_yaml_text_or_file(config, "slot_tags")
    if config is None:
        return {}
    if isinstance(config, Mapping) and "slot_tags" in config:
        config = config["slot_tags"] or []
    if not isinstance(config, list):
        raise ScheduleError("slot_tags must be a list of {slots, require_tags, exclude_tags, "
                            "minimum_priority} entries")
    merged: dict[int, dict] = {}
    for index, entry in enumerate(config):
        if not isinstance(entry, Mapping) or "slots" not in entry:
            raise ScheduleError(f"slot_tags entry {index} needs a 'slots' key: {entry!r}")
        unknown = set(entry) - {"slots", "require_tags", "exclude_tags", "minimum_priority"}
        if unknown:
            raise ScheduleError(f"slot_tags entry {index}: unknown keys {sorted(unknown)}")
        priority = entry.get("minimum_priority")
        if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)
                                     or not -128 <= priority <= 127):
            raise ScheduleError(
                f"slot_tags entry {index}: minimum_priority must be an int in -128..127")
        tag_lists = {}
        for key in ("require_tags", "exclude_tags"):
            tags = entry.get(key) or []
            if isinstance(tags, str):
                tags = [tags]
            tag_lists[key] = [str(tag) for tag in tags]
        for slot in parse_slots(entry["slots"], num_slots):
            record = merged.setdefault(slot, {"require_tags": [], "exclude_tags": [],
                                              "minimum_priority": None})
            for key, tags in tag_lists.items():
                record[key].extend(t for t in tags if t not in record[key])
            if priority is not None:
                record["minimum_priority"] = priority
    return {slot: SlotTags(tuple(r["require_tags"]), tuple(r["exclude_tags"]),
                           r["minimum_priority"]) for slot, r in merged.items()}


# ---------------------------------------------------------------------------------------------
# tdma_scripted test plans


@dataclasses.dataclass(frozen=True)
class TestPlanEntry:
    """One step of a scripted comms test: packet settings used for packet_tx_count packets."""

    __test__ = False  # not a pytest class

    frames: FrameBudget
    packet_tx_count: int = 1
    modem_commands: tuple[str, ...] = ()
    cycle_on_tx_packet: bool = True  # False: the step counts even when there was nothing to send


_PLAN_KEYS = {"miniframe_rate", "dataframe_rate", "maximum_miniframe_bytes",
              "maximum_dataframe_bytes", "packet_tx_count", "packet_duration_sec",
              "modem_commands", "cycle_on_tx_packet"}


def parse_test_plan(config, defaults: FrameBudget,
                    profile: ModemProfile = MICROMODEM2) -> tuple[TestPlanEntry, ...]:
    """Entries of a tdma_scripted test plan ({test_cycle: [...]}, as text, file path or parsed).

    Settings an entry leaves out come from the modem profile for its rates, and its rates default
    to `defaults` (the node's parameters).
    """
    if isinstance(config, str):
        config = _load_yaml_text_or_file(config, "test plan")
    if config is None:
        return ()
    if not isinstance(config, Mapping) or not isinstance(config.get("test_cycle"), list):
        raise ScheduleError("a test plan is a mapping with a 'test_cycle' list of entries")
    entries = []
    for index, raw in enumerate(config["test_cycle"]):
        if not isinstance(raw, Mapping):
            raise ScheduleError(f"test_cycle entry {index} is not a mapping: {raw!r}")
        unknown = set(raw) - _PLAN_KEYS
        if unknown:
            raise ScheduleError(f"test_cycle entry {index}: unknown keys {sorted(unknown)}")
        try:
            mini_rate = int(raw.get("miniframe_rate", defaults.miniframe_rate))
            data_rate = int(raw.get("dataframe_rate", defaults.dataframe_rate))
            frames = frame_settings(mini_rate, data_rate,
                                    int(raw.get("maximum_miniframe_bytes", -1)),
                                    int(raw.get("maximum_dataframe_bytes", -1)),
                                    float(raw.get("packet_duration_sec", -1.0)), profile)
            count = int(raw.get("packet_tx_count", 1))
        except (TypeError, ValueError) as exc:
            raise ScheduleError(f"test_cycle entry {index}: {exc}") from None
        if count < 1:
            raise ScheduleError(f"test_cycle entry {index}: packet_tx_count must be >= 1")
        commands = raw.get("modem_commands") or []
        if isinstance(commands, str):
            commands = [commands]
        if not all(isinstance(c, str) for c in commands):
            raise ScheduleError(f"test_cycle entry {index}: modem_commands must be strings")
        entries.append(TestPlanEntry(frames, count, tuple(c.strip() for c in commands),
                                     bool(raw.get("cycle_on_tx_packet", True))))
    if not entries:
        raise ScheduleError("the test plan's test_cycle is empty")
    return tuple(entries)
