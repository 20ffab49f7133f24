"""Reliable transfer of messages larger than one packet (issue 15), ROS-free.

- `wire`: the fragment and ack formats (session start 14 B, continuation 5 B, ack >= 6 B, each
  after the message codec's 1-byte id; the packet codec's id slot holds a reserved kind id);
- `ranges`: inclusive block ranges <-> sets;
- `ack`: which blocks an ack says arrived; the shorter of the ACK / NACK lists;
- `sender`: `Fragmenter` (blocks, window, selective retransmission, ack timeout, TTL);
- `ack_timeout`: the automatic ack timeout, from the period of the MAC's packet requests;
- `receiver`: `Reassembler` (bounded sessions keyed by (src, session id), every bad case counted);
- `settings`: the ParameterSpec tables, the pure validator and `FragmentationSettings`;
- `queue_hooks` / `dispatch_hooks`: what the queue and dispatch nodes call (and bench/ too).
"""
