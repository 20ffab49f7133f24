"""Service calls that a deterministic run waits for, and replies that are not lost to discovery.

Why a reply went missing (issue 26): with rmw_fastrtps, `service_is_ready()` on the client only
says that the *client's* endpoints matched the server's. The server may not have matched the
client's response reader yet; it then takes and handles the request, waits at most the response
writer's max_blocking_time (100 ms) for that match in `send_response`, and gives up: rclpy only
emits `RuntimeWarning: failed to send response (timeout): client will not receive response`
and the client waits forever. A fresh node's first call under CPU load hits this.

The mirror case, the request dropped because the server's reader had not matched the client's
writer yet, leaves the server with nothing to answer. Sending a request again blindly would
handle it twice when only the reply was late (a second packet taken from the queue, a packet
queued twice at the modem), so:
- `ReliableReplies` wraps a service's `send_response`: a reply that could not be sent for that
  reason is sent again, from a thread of its own, until the client's reader has matched, for at
  most `REPLY_RETRY_WALL_S` (an I/O timeout, wall clock); then it is counted (`lost`) and
  logged.
  It also counts the requests the service took (`HANDLED`, by service name, in this process).
  NodeResources.service puts it on every service a node makes through it.
- `call_awaited(client, request)`: `call_async`, registered in `AWAITED` until the reply is in.
  A deterministic stepper (acomms_sim.clock) does not move simulated time while a call of one
  of its nodes is registered: it waits (wall time, bounded by its step timeout) for the reply, so
  no wall-clock timeout of the caller decides anything in such a run. `AWAITED.stepped` says
  whether a stepper of this process drives the clock (then callers must not abandon a call on a
  wall-clock timeout either). While it waits, the stepper calls `AWAITED.resend_lost()`: a call
  to a service served in this process that has taken no request at all since the call went out
  `RESEND_AFTER_WALL_S` ago was dropped on the way, and is sent again (same request, same
  future for the caller; counted in `AWAITED.resent`, logged by the caller's node).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import time
import warnings
import weakref
from collections.abc import Iterable

LOST_REPLY_WARNING = "failed to send response (timeout)"  # rclpy's text for the lost reply
REPLY_RETRY_WALL_S = 10.0  # longest a reply is re-sent while the client's reader is unmatched
RETRY_PAUSE_WALL_S = 0.02  # between attempts (each may wait 100 ms in rmw for the match)
RESEND_AFTER_WALL_S = 1.0  # an in-process server that took nothing this long never got the call
PRUNE_AT = 64  # outstanding entries before answered ones are forgotten on the next add
HANDLED: dict[str, int] = {}  # requests taken, by resolved service name, in this process
SERVED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # the latest
# ReliableReplies service of this process, by resolved name (not kept alive from here)


class AwaitedCalls:
    """The process's outstanding `call_awaited` calls (see the module docstring)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls: dict[int, list] = {}  # id(future) -> [future, node, what, Resend]
        self._stepping = 0
        self.resent = 0  # requests sent again (lost on the way to the server)

    def add(self, future, node, what: str, resend: Resend | None = None) -> None:
        with self._lock:  # forgotten once done, by `pending` or here (a done callback would
            if len(self._calls) >= PRUNE_AT:  # cost an executor task per call)
                self._forget_done()
            self._calls[id(future)] = [future, node, what, resend]

    def _forget_done(self) -> None:
        for key in [k for k, call in self._calls.items() if _over(call[0])]:
            del self._calls[key]

    def remove(self, future) -> None:
        with self._lock:
            self._calls.pop(id(future), None)

    def __len__(self) -> int:
        return len(self._calls)

    def pending(self, nodes: Iterable | None = None) -> list[str]:
        """'<node> (waiting for a reply to <service>)' for every outstanding call of `nodes`
        (None: of any node); calls that are done or cancelled are forgotten here."""
        with self._lock:
            self._forget_done()
            calls = list(self._calls.values())
        if not calls:
            return []
        wanted = None if nodes is None else {id(node) for node in nodes}
        return [f"{_name(node)} (waiting for a reply to {what})"
                for _future, node, what, _resend in calls if wanted is None or id(node) in wanted]

    def resend_lost(self, now: float | None = None) -> int:
        """Send again every call whose request never reached its in-process server (module
        docstring); how many."""
        with self._lock:
            calls = [c for c in self._calls.values() if c[3] is not None]
        now = time.monotonic() if now is None else now
        sent = 0
        for future, node, what, resend in calls:
            if not _over(future) and resend.lost(now):
                resend.send_again(future, now)
                sent += 1
                self.resent += 1
                node.get_logger().warning(f"{what}: the request never reached the server "
                                          "(discovery still under way); sent again")
        return sent

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


def _over(future) -> bool:
    return future.done() or future.cancelled()


def _name(node) -> str:
    try:
        return node.get_fully_qualified_name()
    except Exception:  # destroyed node
        return "<destroyed node>"


class Resend:
    """How to send one awaited call again, and whether its request was lost."""

    def __init__(self, client, request, now: float):
        self.client, self.request, self.name = client, request, client.service_name
        self.sent_at, self.handled_then = now, HANDLED.get(self.name)
        self.attempt = None  # the future of the latest re-sent request

    def lost(self, now: float) -> bool:
        """Served in this process, and no request taken there since it was sent, long ago."""
        return (self.handled_then is not None and now - self.sent_at >= RESEND_AFTER_WALL_S
                and HANDLED.get(self.name) == self.handled_then)

    def send_again(self, future, now: float) -> None:
        self.sent_at, self.handled_then = now, HANDLED.get(self.name)
        with contextlib.suppress(Exception):  # a client destroyed meanwhile: nothing to send
            for stale in (future, self.attempt):  # a reply to an earlier request is not awaited
                if stale is not None:
                    self.client.remove_pending_request(stale)
            self.attempt = self.client.call_async(self.request)
            self.attempt.add_done_callback(functools.partial(_pass_on, future))


def _pass_on(future, attempt) -> None:
    if not _over(future) and not attempt.cancelled():
        future.set_result(attempt.result())


_READY_SERVER: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # client -> ref(service)


def server_ready(client) -> bool:
    """`client.service_is_ready()`, without asking the ROS graph again while the server it was
    ready for is a service of this process that has not been destroyed since.

    The graph query is linear in the process's DDS endpoints: at 64 simulated vehicles in one
    process, a MAC's two checks per transmission were 9 % of the run. A client stays matched to
    a live server, so the answer cannot change until that service is destroyed (its handle's
    pointer is then 0); a server in another process is asked about every time."""
    server = _READY_SERVER.get(client)
    if server is not None:
        if _alive(server()):
            return True
        _READY_SERVER.pop(client, None)  # another thread may have dropped it already
    if not client.service_is_ready():
        return False
    server = SERVED.get(resolved_name(client))
    if server is not None and _alive(server):
        _READY_SERVER[client] = weakref.ref(server)
    return True


def resolved_name(entity) -> str | None:
    """A client's or service's resolved service name (`srv_name` is the name as the node asked
    for it, namespace not applied); None once the entity is destroyed."""
    try:
        return entity.service_name
    except Exception:  # InvalidHandle: destroyed meanwhile
        return None


def _alive(service) -> bool:
    if service is None:  # collected
        return False
    try:
        return service.handle.pointer != 0  # 0 once destroyed
    except Exception:
        return False


def call_awaited(node, client, request):
    """`client.call_async(request)`, registered in AWAITED until its reply is in."""
    future = client.call_async(request)
    AWAITED.add(future, node, client.service_name, Resend(client, request, time.monotonic()))
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
        self.retrying: threading.Thread | None = None  # the latest thread sending one again
        self.send_once = service.send_response  # rclpy's own (tests may replace it)
        service.send_response = self.send_response
        self.name = service.service_name  # resolved (srv_name is as the node asked for it)
        service.callback = _counting_requests(service.callback, self.name)
        service.acomms_replies = self
        HANDLED.setdefault(self.name, 0)
        SERVED[self.name] = service

    def send_response(self, response, header) -> None:
        """Send now, as rclpy would; a reply rmw could not send yet is sent again from a
        thread of its own (the executor goes on: a client that is gone without having
        matched would otherwise hold it for retry_wall_s)."""
        if not self._timed_out(response, header):
            return
        self.retrying = threading.Thread(target=self._send_again, args=(response, header),
                                         name=f"reply {self.name}", daemon=True)
        self.retrying.start()

    def _send_again(self, response, header) -> None:
        deadline = time.monotonic() + self.retry_wall_s
        attempts = 1
        while time.monotonic() < deadline:
            time.sleep(RETRY_PAUSE_WALL_S)  # rmw waited already, unless it refused at once
            attempts += 1
            if not self._timed_out(response, header):
                self.resent += 1
                return
        self.lost += 1
        if self.logger is not None:
            self.logger.error(f"{self.name}: the client's reader never matched "
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


def _counting_requests(callback, name: str):
    """`callback` (plain or coroutine, as rclpy awaits those) counting in HANDLED[name]."""
    if inspect.iscoroutinefunction(callback):
        async def counted(*args):
            HANDLED[name] = HANDLED.get(name, 0) + 1
            return await callback(*args)
    else:
        def counted(*args):
            HANDLED[name] = HANDLED.get(name, 0) + 1
            return callback(*args)
    return functools.wraps(callback)(counted)
