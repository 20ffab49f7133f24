"""Relaying through gateways (issue 32): ROS-free relay header, packet codec wrapper, policy and
the queue's backlog of packets to forward. See docs/guide/relaying.md."""
