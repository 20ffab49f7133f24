"""`wait_for_managers` of lifecycle_manager (acomms_bringup.nodes.lifecycle_manager): follow other
managers' transient-local `manager_status` and wait until their groups are active before this
manager starts its own. A mixin of LifecycleManager; not a node of its own."""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from acomms_bringup.description.bringup_policy import resolve_node_name
from acomms_bringup.nodes.lifecycle_manager_reach import TransitionError

MANAGER_POLL_SECONDS = 0.1  # while waiting for the managers of wait_for_managers


class _FollowManagers:
    """`wait_for_managers`: other managers whose groups must be active first. Mixed into
    LifecycleManager (uses its `_wait_for`, `_resources`, `_group`, `_sleep`)."""

    def _follow_managers(self) -> None:
        """Subscribe once to each `wait_for_managers` manager's transient-local manager_status
        (kept until destroy_node: destroying entities while a multi-threaded executor builds its
        wait set is not safe)."""
        self._followed = {resolve_node_name(name, self.get_namespace()): "no status yet"
                          for name in self._wait_for}
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
        for name in self._followed:
            self._resources.subscription(
                DiagnosticArray, f"{name}/manager_status",
                lambda array, name=name: self._on_followed_status(name, array), qos,
                callback_group=self._group)

    def _on_followed_status(self, name: str, array: DiagnosticArray) -> None:
        manager = array.status[0]
        state = next((v.value for v in manager.values if v.key == "state"), "?")
        self._followed[name] = "active" if state == "active" else f"{state}: {manager.message}"

    async def _wait_for_managers(self) -> None:
        """Until every manager of `wait_for_managers` reports its group active, or
        manager_wait_seconds pass."""
        if not self._followed:
            return
        self.get_logger().info(f"waiting for {', '.join(self._followed)} to be active")
        deadline = time.monotonic() + self.get_parameter("manager_wait_seconds").value
        while any(state != "active" for state in self._followed.values()):
            if time.monotonic() >= deadline:
                late = "; ".join(f"{n} ({s})" for n, s in self._followed.items()
                                 if s != "active")
                raise TransitionError(f"managers not active in time: {late}")
            await self._sleep(MANAGER_POLL_SECONDS)
