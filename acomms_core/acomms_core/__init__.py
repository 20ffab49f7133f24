"""Transport core of acomms: codecs, message queue, packet dispatch, TDMA."""

from acomms_core.ros.interrupts import quiet_if_node_process

quiet_if_node_process()  # a node process: Ctrl-C during its imports ends it quietly
