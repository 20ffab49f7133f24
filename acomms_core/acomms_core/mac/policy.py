"""What a MAC policy tells its node, ROS-free: the actions of one transmit decision.

A policy (`acomms_core.mac.tdma.TdmaPolicy` and its extensions) owns the validated configuration
and the channel bookkeeping and decides, at each tick, what the node does now. The node's transmit
pipeline (`acomms_core.nodes.mac_transmit.TransmitPipeline`) carries the action out over ROS and
reports back (`on_transmit`, `on_nothing_to_send`, ...).

Reasons a policy gives for refusing parameter values start with the parameter to blame
(``"active_slots: slot 9 is outside 0..3"``), so a scenario file can point at the key.
"""

from __future__ import annotations

import contextlib
import dataclasses

from acomms_core.mac.tdma_schedule import ScheduleError, SlotTags
from acomms_core.modems.profile import FrameBudget


@dataclasses.dataclass(frozen=True)
class RequestData:
    """Ask the queue for a packet with this budget and slot filter, then send it."""

    frames: FrameBudget
    tags: SlotTags = SlotTags()
    modem_commands: tuple[str, ...] = ()  # publish these before the request (scripted plans)
    dest: int | None = None  # only messages to this destination (rate adaptation)
    fallback: FrameBudget | None = None  # nothing for dest: ask again for any, with this budget


@dataclasses.dataclass(frozen=True)
class SendHeld:
    """Send the packet the pipeline holds (it arrived too late for an earlier opportunity)."""


@dataclasses.dataclass(frozen=True)
class Ping:
    """Start a navigation ping of `kind` ("modem" or "transponder") with this reply timeout."""

    kind: str
    timeout_s: float


@dataclasses.dataclass(frozen=True)
class Wait:
    """The channel is held (a ping or packet still runs): do nothing else this tick."""


SEND_HELD = SendHeld()
WAIT = Wait()
Action = RequestData | SendHeld | Ping | Wait | None


@contextlib.contextmanager
def blame(parameter: str):
    """Re-raise a ScheduleError (or any ValueError) as 'parameter: reason'."""
    try:
        yield
    except ValueError as exc:
        text = str(exc)
        if text.startswith(f"{parameter}: "):
            raise
        raise ScheduleError(f"{parameter}: {text}") from None


def split_reason(reason: str, names) -> tuple[str | None, str]:
    """'name: problem' -> (name, problem) when name is one of `names`; else (None, reason)."""
    name, separator, problem = reason.partition(": ")
    if separator and name in names:
        return name, problem
    return None, reason
