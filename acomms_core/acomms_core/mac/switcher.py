"""MAC switcher (ROS-free), with ros_acomms' mac_switcher semantics.

Several MAC nodes of one vehicle run side by side, each in its own namespace; exactly one is
unmuted (software_mute false) at a time. The switcher starts with every managed MAC muted and
then unmutes `default_mac_namespace`.

- select(ns, True) for a MAC that is not active: mute the active one, unmute ns.
- select(active, False): back to the default MAC, or, with `revert_on_deselect`, to the MAC that
  was active before it.
- With `managed_mac_heartbeat_timeout_sec` > 0, a selected MAC other than the default must be kept
  alive by heartbeats (or repeated selects) at least that often; otherwise the switcher falls back
  to the default (the dead man's switch). -1 disables it.
- Unknown namespaces are refused (counted) and change nothing.

Every decision returns the mute commands to send, `[(namespace, mute), ...]`, in order (mute the
old MAC before unmuting the new one, so two MACs are never unmuted together).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from typing import Any

from acomms_core.ros.parameter_spec import ParameterSpec

SWITCHER_PARAMETERS = (
    ParameterSpec("default_mac_namespace", "tdma",
                  "Namespace (relative to the switcher) of the MAC active at start and after a "
                  "deselect or heartbeat timeout", read_only=True),
    ParameterSpec("managed_mac_namespaces", [""],
                  "Namespaces of the other MACs this switcher manages (the default is always "
                  "managed)", parameter_type="string_array", read_only=True),
    ParameterSpec("managed_mac_heartbeat_timeout_sec", -1.0,
                  "A selected non-default MAC falls back to the default without a heartbeat or "
                  "select this long (node clock), s; -1: never", -1.0, 86400.0),
    ParameterSpec("revert_on_deselect", False,
                  "Deselecting the active MAC returns to the previously active one instead of "
                  "the default"),
    ParameterSpec("status_period_seconds", 1.0, "mac_switcher_status period (node clock), s",
                  0.01, 3600.0, read_only=True),
)

Commands = list[tuple[str, bool]]


def check_switcher_values(values: Mapping[str, Any]) -> str | None:
    """Pure validator: the reason to refuse, or None."""
    default = values["default_mac_namespace"]
    if not isinstance(default, str) or not default.strip("/"):
        return "default_mac_namespace: give the namespace of the default MAC"
    names = [n for n in values["managed_mac_namespaces"] if n]
    if any(not isinstance(n, str) or not n.strip("/") for n in names):
        return "managed_mac_namespaces: empty namespace"
    if len(set(names)) != len(names):
        return "managed_mac_namespaces: a namespace is listed twice"
    timeout = values["managed_mac_heartbeat_timeout_sec"]
    if timeout != -1.0 and timeout <= 0:
        return "managed_mac_heartbeat_timeout_sec: -1 (off) or > 0"
    return None


@dataclasses.dataclass
class MacSwitcher:
    default: str
    managed: tuple[str, ...]          # every managed namespace, the default first
    heartbeat_timeout_s: float = -1.0
    revert_on_deselect: bool = False
    counters: Counter = dataclasses.field(default_factory=Counter)

    @classmethod
    def from_values(cls, values: Mapping[str, Any], counters: Counter | None = None):
        default = values["default_mac_namespace"]
        others = tuple(n for n in values["managed_mac_namespaces"] if n and n != default)
        return cls(default, (default, *others), float(values["managed_mac_heartbeat_timeout_sec"]),
                   bool(values["revert_on_deselect"]),
                   counters if counters is not None else Counter())

    def __post_init__(self):
        self.active = self.default
        self.previous = self.default
        self.last_heartbeat_s: float | None = None
        self.muted = {ns: True for ns in self.managed}

    def start(self) -> Commands:
        """Mute everything, then unmute the default."""
        commands = [(ns, True) for ns in self.managed] + [(self.default, False)]
        self._record(commands)
        return commands

    def _record(self, commands: Commands) -> None:
        for ns, mute in commands:
            self.muted[ns] = mute

    def _transfer(self, ns: str, now_s: float) -> Commands:
        if ns == self.active:
            return []
        commands = [(self.active, True), (ns, False)]
        self.previous, self.active = self.active, ns
        self.last_heartbeat_s = now_s
        self.counters["switches"] += 1
        self._record(commands)
        return commands

    def select(self, ns: str, selected: bool, now_s: float) -> Commands:
        if ns not in self.managed:
            self.counters["unknown_namespace"] += 1
            return []
        if ns == self.active:
            if selected:
                self.last_heartbeat_s = now_s  # a repeated select keeps it alive
                return []
            target = self.previous if self.revert_on_deselect else self.default
            return self._transfer(target, now_s)
        if not selected:
            return []  # deselecting a MAC that is not active changes nothing
        return self._transfer(ns, now_s)

    def heartbeat(self, ns: str, now_s: float) -> None:
        if ns == self.active:
            self.last_heartbeat_s = now_s
        else:
            self.counters["heartbeats_for_inactive"] += 1

    def heartbeat_age_s(self, now_s: float) -> float:
        return -1.0 if self.last_heartbeat_s is None else max(0.0, now_s - self.last_heartbeat_s)

    def timeout_at(self) -> float | None:
        """When the dead man's switch fires (None: it cannot)."""
        if self.heartbeat_timeout_s <= 0 or self.active == self.default:
            return None
        if self.last_heartbeat_s is None:
            return None
        return self.last_heartbeat_s + self.heartbeat_timeout_s

    def tick(self, now_s: float) -> Commands:
        deadline = self.timeout_at()
        if deadline is None or now_s <= deadline:
            return []
        self.counters["heartbeat_timeouts"] += 1
        return self._transfer(self.default, now_s)

    def status(self, now_s: float) -> dict[str, Any]:
        return {
            "active_mac_namespace": self.active,
            "active_mac_software_mute": self.muted[self.active],
            "managed_mac_heartbeat_age": self.heartbeat_age_s(now_s),
            "managed_mac_heartbeat_timeout_sec": self.heartbeat_timeout_s,
            "mac_namespace_on_timeout": (self.previous if self.revert_on_deselect
                                         else self.default),
            "default_mac_namespace": self.default,
        }
