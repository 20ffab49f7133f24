"""What a relay does with an overheard relayable packet (ROS-free).

A relay (a vehicle with `relay.enabled`) forwards a relayable packet when its final destination
has a configured route (`routes: {dest: next_hop}`), the destination is not the relay itself,
the next hop is neither the packet's transmitter nor its origin, hops are left, and the packet
(origin, packet codec, sequence) was not forwarded before (bounded memory). Every refusal is
counted; nothing raises.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict

from acomms_core.ros.parameter_spec import ParameterSpec

COUNTERS = ("relay_packets_heard", "relayed", "duplicates_dropped", "hop_limit_reached",
            "no_route", "addressed_to_self", "relay_backlog_full", "relay_expired",
            "partial_not_relayed")


class DuplicateFilter:
    """The most recent `capacity` keys (oldest forgotten first)."""

    def __init__(self, capacity: int = 256):
        self.capacity = max(1, int(capacity))
        self._keys: OrderedDict = OrderedDict()

    def seen(self, key) -> bool:
        return key in self._keys

    def add(self, key) -> None:
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > self.capacity:
            self._keys.popitem(last=False)

    def __len__(self) -> int:
        return len(self._keys)


def parse_routes(value) -> dict[int, int]:
    """{dest: next_hop} from a mapping or from 'dest:next_hop' strings; ValueError if bad."""
    items = value.items() if isinstance(value, dict) else (
        str(entry).split(":", 1) for entry in (value or ()))
    routes = {}
    for item in items:
        if len(item) != 2:
            raise ValueError(f"route {item!r} is not dest:next_hop")
        try:
            dest, hop = int(item[0]), int(item[1])
        except (TypeError, ValueError):
            raise ValueError(f"route {item!r}: dest and next hop must be integers") from None
        if not (0 <= dest <= 255 and 0 <= hop <= 255):
            raise ValueError(f"route {dest}:{hop}: addresses are 0..255")
        routes[dest] = hop
    return routes


def routes_problem(value) -> str | None:
    try:
        parse_routes(value)
    except ValueError as exc:
        return str(exc)
    return None


RELAY_PARAMETERS = (
    ParameterSpec("relay_enabled", False, "Forward overheard packets of relayable packet codecs "
                  "to destinations in relay_routes (issue 32)"),
    ParameterSpec("relay_routes", [""], "Static routes of this relay, 'dest:next_hop' strings "
                  "(e.g. '1:1': packets for SRC 1 go straight to 1); destinations not listed are "
                  "not relayed", parameter_type="string_array"),
    ParameterSpec("relay_priority", 20, "Priority of relayed packets against queued messages "
                  "(higher is sent first; equal: relayed packets first)",
                  minimum=0, maximum=32767),
    ParameterSpec("relay_max_hops", 15, "Most hops a forwarded packet keeps left (its own "
                  "hop count, set by the sender's relay_hop_limit, is decremented by one)",
                  minimum=0, maximum=15),
    ParameterSpec("relay_backlog_size", 16, "Packets waiting to be forwarded (the oldest is "
                  "dropped beyond it, counted relay_backlog_full)", minimum=1, maximum=1000),
    ParameterSpec("relay_ttl_seconds", 600.0, "A packet not forwarded within this time is "
                  "dropped (relay_expired; node clock; 0: never), s", minimum=0.0,
                  maximum=1e6),
    ParameterSpec("relay_duplicate_memory", 256, "(origin, packet codec, sequence) keys "
                  "remembered to drop duplicates", minimum=1, maximum=100000),
)


def check_relay_values(values: dict) -> str | None:
    routes = [r for r in values.get("relay_routes", ()) if r]
    problem = routes_problem(routes)
    return f"relay_routes: {problem}" if problem else None


@dataclasses.dataclass(frozen=True)
class RelaySettings:
    src: int
    routes: dict
    max_hops: int = 15          # a forwarded packet keeps at most this many hops left
    priority: int = 20
    duplicate_memory: int = 256


@dataclasses.dataclass(frozen=True)
class RelayDecision:
    outcome: str                # "relayed" or the counter that names the refusal
    next_hop: int | None = None
    hops_left: int = 0


class RelayPolicy:
    def __init__(self, settings: RelaySettings):
        self.settings = settings
        self.forwarded = DuplicateFilter(settings.duplicate_memory)
        self.counts = dict.fromkeys(COUNTERS, 0)

    def decide(self, header, codec_name: str, transmitter: int) -> RelayDecision:
        """Whether to forward a relayable packet heard from `transmitter` (header: RelayHeader);
        counted. A "relayed" decision marks the packet as forwarded."""
        settings = self.settings
        self.counts["relay_packets_heard"] += 1
        key = (header.origin, codec_name, header.seq)
        next_hop = settings.routes.get(header.final_dest)
        if header.final_dest == settings.src or header.origin == settings.src:
            outcome = "addressed_to_self"
        elif self.forwarded.seen(key):
            outcome = "duplicates_dropped"
        elif next_hop is None or next_hop in (transmitter, header.origin, settings.src):
            outcome = "no_route"
        elif header.hops_left < 1:
            outcome = "hop_limit_reached"
        else:
            self.forwarded.add(key)
            self.counts["relayed"] += 1
            return RelayDecision("relayed", next_hop,
                                 min(header.hops_left - 1, settings.max_hops))
        self.counts[outcome] += 1
        return RelayDecision(outcome)

    def count(self, counter: str) -> None:
        self.counts[counter] += 1
