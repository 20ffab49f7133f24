"""Destroying DDS endpoints later, once the process's context is shut down (the end of a run).

While a context is up, destroying one publisher, subscription, service or client costs time in
proportion to every endpoint of the process: the rmw republishes the process's whole graph (each
node's endpoint list) and its own listener takes that in again. Bringing 64 vehicles' nodes down
(deactivate, clean up: about 12,000 endpoints released one by one) took 17 s of a loaded 2-core
machine that way, 128 vehicles several minutes; once the context is shut down the same destruction
costs a small fraction of that (no graph is republished).

`DeferredEndpoints` is that order for a process that is about to end: while it is open (`with
deferred:`), `ros_support.destroy_entities` (what nodes use to release what they created) takes
the entity out of its node exactly as rclpy does (the node and every executor no longer see it)
but keeps the endpoint itself; `destroy()` (after `rclpy.shutdown(context=...)`) destroys them.
Timers are destroyed at once (they are not DDS endpoints). Only one is open at a time
(`deferring()`: the open one, or None).
"""

from __future__ import annotations

import threading
from typing import Any

_open: DeferredEndpoints | None = None
_lock = threading.Lock()


def deferring() -> DeferredEndpoints | None:
    """The open DeferredEndpoints, if any."""
    return _open


class DeferredEndpoints:
    """See the module docstring."""

    def __init__(self):
        self.kept: list[Any] = []

    def __enter__(self) -> DeferredEndpoints:
        global _open
        with _lock:
            if _open is not None:
                raise RuntimeError("endpoints are being deferred already")
            _open = self
        return self

    def __exit__(self, *exc_info) -> None:
        global _open
        with _lock:
            _open = None

    def release(self, node_destroy, entity) -> None:
        """`node_destroy(entity)` (a node's destroy_publisher, ...: its bookkeeping) with the
        entity's own destroy() kept for later."""
        entity.destroy = lambda: self.kept.append(entity)  # shadows the method for this call
        try:
            node_destroy(entity)
        finally:
            del entity.destroy

    def destroy(self) -> int:
        """Destroy every endpoint kept; how many (one already gone is skipped)."""
        kept, self.kept = self.kept, []
        for entity in kept:
            try:
                entity.destroy()
            except Exception:  # noqa: BLE001 - already invalid: nothing left to destroy
                continue
        return len(kept)
