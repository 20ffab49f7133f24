"""Service calls that a deterministic run waits for, and replies that are not lost to discovery.

Why a reply went missing (issue 26): with rmw_fastrtps, `service_is_ready()` on the client only
says that the *client's* endpoints matched the server's. The server may not have matched the
client's response reader yet; it then takes and handles the request, waits at most the response
writer's max_blocking_time (100 ms) for that match in `send_response`, and gives up: rclpy only
emits `RuntimeWarning: failed to send response (timeout): client will not receive response`
and the client waits forever. A fresh node's first call under CPU load hits this.

Sending the *request* again would handle it twice (a second packet taken from the queue, a
packet queued twice at the modem), so the reply is what is sent again:
- `ReliableReplies` wraps a service's `send_response`: a reply that could not be sent for that
  reason is sent again until the client's reader has matched, for at most
  `REPLY_RETRY_WALL_S` (an I/O timeout, wall clock); then it is counted (`replies_lost`) and
  logged once. NodeResources.service puts it on every service a node makes through it.
- `call_awaited(client, request)`: `call_async`, registered in `AWAITED` until the reply is in.
  A deterministic stepper (acomms_sim.clock) does not move simulated time while a call of one
  of its nodes is registered: it waits (wall time, bounded by its step timeout) for the reply, so
  no wall-clock timeout of the caller decides anything in such a run. `AWAITED.stepped` says
  whether a stepper of this process drives the clock (then callers must not abandon a call on a
  wall-clock timeout either).
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Iterable

LOST_REPLY_WARNING = "failed to send response (timeout)"  # rclpy's text for the lost reply
REPLY_RETRY_WALL_S = 10.0  # longest a reply is re-sent while the client's reader is unmatched
RETRY_PAUSE_WALL_S = 0.005


class AwaitedCalls:
    """The process's outstanding `call_awaited` calls (see the module docstring)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls: dict[int, tuple] = {}  # id(future) -> (future, node, what)
        self._stepping = 0

    def add(self, future, node, what: str) -> None:
        with self._lock:
            self._calls[id(future)] = (future, node, what)
        future.add_done_callback(self.remove)

    def remove(self, future) -> None:
        with self._lock:
            self._calls.pop(id(future), None)

    def __len__(self) -> int:
        return len(self._calls)

    def pending(self, nodes: Iterable | None = None) -> list[str]:
        """'<node> (waiting for a reply to <service>)' for every outstanding call of `nodes`
        (None: of any node); calls that are done or cancelled are forgotten here."""
        with self._lock:
            calls = list(self._calls.values())
        if not calls:
            return []
        wanted = None if nodes is None else {id(node) for node in nodes}
        waiting = []
        for future, node, what in calls:
            if future.done() or future.cancelled():
                self.remove(future)
            elif wanted is None or id(node) in wanted:
                waiting.append(f"{_name(node)} (waiting for a reply to {what})")
        return waiting

    @property
    def stepped(self) -> bool:
        """A deterministic stepper drives this process's clocks (inside `stepping()`)."""
        return self._stepping > 0

    @contextlib.contextmanager
    def stepping(self):
        with self._lock:
            self._stepping += 1
        try:
            yield self
        finally:
            with self._lock:
                self._stepping -= 1


AWAITED = AwaitedCalls()


def _name(node) -> str:
    try:
        return node.get_fully_qualified_name()
    except Exception:  # destroyed node
        return "<destroyed node>"


def call_awaited(node, client, request):
    """`client.call_async(request)`, registered in AWAITED until its reply is in."""
    future = client.call_async(request)
    AWAITED.add(future, node, client.srv_name)
    return future


def forget(future) -> None:
    """The caller gave up on a call (its wall-clock timeout passed, free-running clock only): no
    stepper waits for it any more (a late reply still reaches the caller's done callback)."""
    AWAITED.remove(future)


class ReliableReplies:
    """Wraps `service.send_response` so a reply lost to the discovery race is sent again."""

    def __init__(self, service, logger=None, retry_wall_s: float = REPLY_RETRY_WALL_S):
        self.service = service
        self.logger = logger
        self.retry_wall_s = retry_wall_s
        self.resent = 0  # replies that needed more than one attempt
        self.lost = 0  # replies given up after retry_wall_s
        self.send_once = service.send_response  # rclpy's own (tests may replace it)
        service.send_response = self.send_response
        service.acomms_replies = self

    def send_response(self, response, header) -> None:
        deadline = time.monotonic() + self.retry_wall_s
        attempts = 0
        while True:
            attempts += 1
            if not self._timed_out(response, header):
                self.resent += attempts > 1
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(RETRY_PAUSE_WALL_S)  # rmw waited already, unless it refused at once
        self.lost += 1
        if self.logger is not None:
            self.logger.error(f"{self.service.srv_name}: the client's reader never matched "
                              f"within {self.retry_wall_s:g} wall s; reply lost "
                              f"({attempts} attempts)")

    def _timed_out(self, response, header) -> bool:
        """Send once; True when rmw gave up on an unmatched client reader (rclpy only warns).
        Other warnings raised meanwhile are passed on."""
        with _WARNINGS_LOCK, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.send_once(response, header)
        timed_out = False
        for item in caught:
            if issubclass(item.category, RuntimeWarning) and \
                    str(item.message).startswith(LOST_REPLY_WARNING):
                timed_out = True
            else:
                warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
        return timed_out


_WARNINGS_LOCK = threading.Lock()  # catch_warnings swaps process-wide state
