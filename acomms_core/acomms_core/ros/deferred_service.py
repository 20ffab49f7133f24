"""A ROS service whose answer comes later, without a coroutine callback.

rclpy answers a service with whatever its callback returns. A coroutine callback could wait, but
rclpy resumes pending coroutines on every executor pass, which the deterministic clock would take
for endless work. `DeferredService` instead lets the callback return `defer(response)`: rclpy's
`send_response` for that response is held back (with the request's header) until `complete()`
sends it, e.g. when an answer arrived over the acoustic link or a timeout fired on the node clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class DeferredService:
    """Wraps `node.create_service` (through a NodeResources holder) with deferrable answers."""

    def __init__(self, resources, srv_type, name: str, callback: Callable, **kwargs):
        self._lock = threading.Lock()
        # id(response) -> [header | None, ready response | None, the response itself (kept
        # alive: a freed one's id could come back as another answer's and be held for it)]
        self._held: dict[int, list] = {}
        self.service = resources.service(srv_type, name, callback, **kwargs)  # qos, group
        self._send = self.service.send_response
        self.service.send_response = self._send_response

    def defer(self, response) -> object:
        """Mark a response (returned by the callback) as answered later through complete()."""
        with self._lock:
            self._held[id(response)] = [None, None, response]
        return response

    def complete(self, response) -> None:
        """Send a deferred response now (or as soon as rclpy handed over the request header)."""
        with self._lock:
            entry = self._held.get(id(response))
            if entry is None:
                return
            if entry[0] is None:
                entry[1] = response
                return
            del self._held[id(response)]
        self._send(response, entry[0])

    def _send_response(self, response, header) -> None:
        with self._lock:
            entry = self._held.get(id(response))
            if entry is None:
                ready = True
            elif entry[1] is not None:
                del self._held[id(response)]
                ready = True
            else:
                entry[0] = header
                ready = False
        if ready:
            self._send(response, header)
