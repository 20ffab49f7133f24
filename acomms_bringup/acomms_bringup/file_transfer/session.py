"""Which fragment session carries the file file_transfer_node sent (ROS-free).

The queue node opens a session when it takes the file. Its statuses (FragmentationStatus on
`fragmentation_status`, `outgoing` true) name the destination, a session id (0..255, reused),
the session's start (`unix_time`) and size, all stamped on the queue node's clock. The
file_transfer_node may run on another clock (wall time while the queue node runs on simulated
time, or a simulated clock started in 2031), so a session is never told apart by comparing its
stamps with this node's clock. Instead, stamps are only compared with stamps of the same source:

- `SessionWatch` hears every outgoing status: which sessions are open, and the newest status
  stamp (a lower bound of the queue node's clock when the file is published);
- `SessionWatch.expect(dest, data_bits)` at publishing time: the file's session is the first one
  to `dest` that was not open before, started no earlier than that newest stamp (whole seconds,
  as `unix_time` counts), and whose blocks can hold the file's bytes. From then on only that
  session (its id and start) is the file's.
"""

from __future__ import annotations

import dataclasses

STATE_OPEN = 0   # FragmentationStatus.STATE_OPEN


@dataclasses.dataclass(frozen=True)
class SessionKey:
    dest: int
    session_id: int
    start: int          # unix_time: the session's start on the queue node's clock, whole s


def key_of(status) -> SessionKey:
    return SessionKey(int(status.fragment_dest), int(status.sequence_num),
                      int(status.unix_time))


@dataclasses.dataclass
class Expected:
    """The session of one file being sent (see the module docstring)."""

    dest: int
    data_bits: int
    open_before: frozenset
    floor_s: int | None          # newest status stamp heard before publishing (whole s)
    key: SessionKey | None = None

    def claims(self, status) -> bool:
        """True when the status is this file's session (the first fitting one claims it)."""
        if not status.outgoing or int(status.fragment_dest) != self.dest:
            return False
        key = key_of(status)
        if self.key is not None:
            return key == self.key
        if key in self.open_before:
            return False          # an older session to the same destination
        if self.floor_s is not None and key.start < self.floor_s:
            return False          # started before the file was published
        if int(status.payload_size_blocks) * int(status.block_size_bits) < self.data_bits:
            return False          # too small to carry the file
        self.key = key
        return True


class SessionWatch:
    """Open outgoing sessions and the newest status stamp (the queue node's clock)."""

    def __init__(self):
        self.open: set[SessionKey] = set()
        self.newest_stamp_s: float | None = None

    def heard(self, status, stamp_s: float) -> None:
        if not status.outgoing:
            return
        if self.newest_stamp_s is None or stamp_s > self.newest_stamp_s:
            self.newest_stamp_s = stamp_s
        key = key_of(status)
        if int(status.state) == STATE_OPEN:
            self.open.add(key)
        else:
            self.open.discard(key)

    def expect(self, dest: int, data_bytes: int) -> Expected:
        floor = None if self.newest_stamp_s is None else int(self.newest_stamp_s)
        return Expected(int(dest) & 0xFF, 8 * int(data_bytes),
                        frozenset(k for k in self.open if k.dest == int(dest) & 0xFF), floor)
