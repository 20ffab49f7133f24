"""tdma_scripted_node: TDMA MAC that cycles a test plan of per-packet settings (comms testing).

The plan is a YAML file (parameter tdma_scripted_test_plan_file) with a `test_cycle` list; each
entry sets, for its next packet_tx_count packets, the miniframe/dataframe rates, the byte budgets
(default: the modem profile's), packet_duration_sec (default: a full packet at those rates) and
modem_commands, NMEA strings published on `nmea_to_modem` (std_msgs/String) when the entry
starts, before its first packet. With cycle_on_tx_packet false an entry's packet counts even when
the queue had nothing to send (the channel time is still used), so command-only plans advance.
After the last entry the plan starts over. Example: config/tdma_scripted_test_plan.yaml.

Everything else is tdma_advanced_node (slots, mute, pings). With no plan, or with
tdma_scripted_test_plan_enabled false, the node sends with its own rate parameters. A new plan file
(or a changed one, re-read when the parameter is set again) is validated like every parameter and
takes effect at the next slot boundary, starting from its first entry. The plan stepping is
`acomms_core.mac.tdma_scripted`'s policy. Publishes `tdma_scripted_status` (TdmaScriptedStatus).
"""

from __future__ import annotations

import sys

from acomms_core.nodes.tdma_advanced_node import TdmaAdvancedNode
from acomms_core.ros.ros_support import run_node


class TdmaScriptedNode(TdmaAdvancedNode):
    """TDMA MAC running a scripted comms test plan (lifecycle node)."""

    MAC_KIND = "tdma_scripted"

    # The plan's modem commands go out through MacNode.publish_modem_commands (nmea_to_modem).


def main(args=None) -> int:
    return run_node(TdmaScriptedNode, args)


if __name__ == "__main__":
    sys.exit(main())
