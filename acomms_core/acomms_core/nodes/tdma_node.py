"""tdma_node: basic TDMA media access control for one vehicle's modem.

In this vehicle's active slots it asks the message queue for a packet's worth of data
(`get_next_packet_data`, with the frame budget of the configured rates from the `modem_profile`
and the slot's tags) and hands the packet to the modem (`queue_tx_packet`, driver or simulator).
The decisions live in the ROS-free `acomms_core.mac.tdma.TdmaPolicy` (slot math in
`acomms_core.mac.tdma_schedule`); the ROS plumbing and the transmit pipeline are shared by every
MAC node (`acomms_core.nodes.mac_node`, `acomms_core.nodes.mac_transmit`):

- every schedule parameter can be changed while active (`ros2 param set`); a valid change takes
  effect at the next slot boundary of the running schedule, an invalid one is refused with the
  reason and the old schedule keeps running;
- all timing uses the node clock, so `use_sim_time` and faster-than-real-time simulation work;
- a packet the queue returned too late to start inside its slot (slow service, clock jump) is held
  and sent at the next opportunity, never sent outside the slot;
- `tdma_status` (TdmaStatus) every status_period_seconds; counters of what was sent, held or
  dropped on `/diagnostics`.
"""

from __future__ import annotations

import sys

from acomms_core.nodes.mac_node import MacNode
from acomms_core.ros.ros_support import run_node


class TdmaNode(MacNode):
    """Basic TDMA MAC (lifecycle node)."""

    MAC_KIND = "tdma"


def main(args=None) -> int:
    return run_node(TdmaNode, args)


if __name__ == "__main__":
    sys.exit(main())
