"""Manual modem commands sent in a MAC's transmit opportunity (ros_acomms' manual transmit).

ROS-free.

A user publishes an NMEA command (or several, one per line) on the MAC's `tdma/nmea_to_modem`
topic; the MAC keeps the latest `maxlen_manual_queue` of them and, at its next transmit
opportunity, sends the oldest one to the modem (every non-empty line on `nmea_to_modem`) instead
of asking the queue for a packet. The opportunity's channel time is used as for a packet, so a
manual transmission (e.g. `$CCTXD`/`$CCCYC`, a `$CCTDP` of the user's own bytes or a ping
command) never overlaps the vehicle's other transmissions or another vehicle's slot. In a slot
with a minimum priority the manual queue waits unless `allow_manual_tx_during_priority_slots`.
When the queue is full the oldest command is dropped (counted: `manual_transmits_dropped`).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping
from typing import Any

from acomms_core.mac.tdma_schedule import SlotTags
from acomms_core.ros.parameter_spec import ParameterSpec

MANUAL_TRANSMIT_PARAMETERS = (
    ParameterSpec("maxlen_manual_queue", 1,
                  "Manual modem commands (tdma/nmea_to_modem) kept for the next transmit "
                  "opportunities; a new one beyond this drops the oldest", 1, 1000),
    ParameterSpec("allow_manual_tx_during_priority_slots", False,
                  "Send manual modem commands also in slots with a minimum priority"),
)
MANUAL_TRANSMIT_PARAMETER_NAMES = frozenset(spec.name for spec in MANUAL_TRANSMIT_PARAMETERS)


class ManualTransmitQueue:
    """The pending manual commands of one MAC and the rule for when one may go."""

    def __init__(self, counters: Counter):
        self.counters = counters
        self.allow_in_priority_slots = False
        self.pending: deque[str] = deque(maxlen=1)

    def configure(self, values: Mapping[str, Any]) -> None:
        maxlen = int(values["maxlen_manual_queue"])
        if maxlen != self.pending.maxlen:
            kept = list(self.pending)[-maxlen:]
            self.counters["manual_transmits_dropped"] += len(self.pending) - len(kept)
            self.pending = deque(kept, maxlen=maxlen)
        self.allow_in_priority_slots = bool(values["allow_manual_tx_during_priority_slots"])

    def add(self, text: str) -> bool:
        """Queue one request (one or more lines); False: nothing to send in it (counted)."""
        if not any(line.strip() for line in text.splitlines()):
            self.counters["manual_transmits_empty"] += 1
            return False
        if len(self.pending) == self.pending.maxlen:
            self.counters["manual_transmits_dropped"] += 1
        self.pending.append(text)
        self.counters["manual_transmits_queued"] += 1
        return True

    def take(self, tags: SlotTags) -> tuple[str, ...] | None:
        """The lines to send in this opportunity instead of a packet, or None."""
        if not self.pending or (tags.minimum_priority and not self.allow_in_priority_slots):
            return None
        self.counters["manual_transmits_sent"] += 1
        return tuple(line.strip() for line in self.pending.popleft().splitlines()
                     if line.strip())
