"""DeferredService lives in acomms_core.ros.deferred_service (the queue node uses it too)."""

from acomms_core.ros.deferred_service import DeferredService

__all__ = ["DeferredService"]
