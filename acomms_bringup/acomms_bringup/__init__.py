"""Bringup for acomms: scenarios, lifecycle manager, launch files, demo."""

from acomms_core.ros.interrupts import quiet_if_node_process

quiet_if_node_process()  # a node process: Ctrl-C during its imports ends it quietly
