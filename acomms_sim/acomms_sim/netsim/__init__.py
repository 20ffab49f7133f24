"""netsim (WHOI/MIT hardware-in-the-loop simulation) protocol: manager, client, wire format."""
