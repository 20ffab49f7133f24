"""Destroying DDS endpoints later, once the process's context is shut down (the end of a run).

Destroying one publisher, subscription, service or client costs Fast DDS time in proportion to
every endpoint of the process (it unmatches the endpoint from every local one and looks through
all the readers or writers of the participant). Bringing 64 vehicles' nodes down (deactivate,
clean up: most of the process's 6,000 endpoints released one by one during the transitions)
took about 27 s of a loaded 2-core machine; destroyed together after the context is shut
down, the same endpoints and the nodes took about half of that (bench/sim_scale.py, the end
line's `lifecycle` and `destroy` phases).

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
