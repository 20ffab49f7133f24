"""Acoustic modem drivers for acomms (WHOI Micromodem)."""

from acomms_core.ros.interrupts import quiet_if_node_process

quiet_if_node_process()  # a node process: Ctrl-C during its imports ends it quietly
