"""tdma_slotted_aloha_node: advanced TDMA plus shared aloha slots (ros_acomms' parameters).

The decisions are `acomms_core.mac.slotted_aloha`'s policy: aloha_slots shared by every vehicle
(transmit there even outside active_slots), aloha_slot_priority as the queue's minimum priority in
them, allow_aloha_slots_only, nav slots inside aloha slots removed, and the optional seeded
backoff aloha_transmit_probability / random_seed. Everything else is tdma_advanced_node (pings,
mute, slot masks); all parameters change at run time, schedules at the next slot boundary.
Publishes `tdma_slotted_aloha_status` (TdmaSlottedAlohaStatus).
"""

from __future__ import annotations

import sys

from acomms_core.nodes.tdma_advanced_node import TdmaAdvancedNode
from acomms_core.ros.ros_support import run_node


class TdmaSlottedAlohaNode(TdmaAdvancedNode):
    """Slotted-ALOHA TDMA MAC (lifecycle node)."""

    MAC_KIND = "tdma_slotted_aloha"


def main(args=None) -> int:
    return run_node(TdmaSlottedAlohaNode, args)


if __name__ == "__main__":
    sys.exit(main())
