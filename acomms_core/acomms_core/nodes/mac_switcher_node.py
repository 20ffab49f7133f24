"""mac_switcher_node: one active MAC at a time among several, by software mute (ros_acomms).

The decisions are `acomms_core.mac.switcher.MacSwitcher`'s. Managed MACs run in namespaces below
the switcher's (e.g. `/auv1/tdma` and `/auv1/aloha` for a switcher in `/auv1`) and must have a
`software_mute` parameter (every kind except basic `tdma`); every MacNode listens on
`set_software_mute` (std_msgs/Bool, transient local) in its namespace.

- publishes `<ns>/set_software_mute` for every managed ns (on activate: all muted, then the
  default unmuted) and `mac_switcher_status` (MacSwitcherStatus);
- subscribes `~/<ns>/select` (Bool: true selects ns, false deselects it if active) and
  `~/<ns>/heartbeat` (Bool: keeps a selected non-default MAC alive);
- parameters `default_mac_namespace`, `managed_mac_namespaces` (read-only),
  `managed_mac_heartbeat_timeout_sec`, `revert_on_deselect` (changeable at run time).
"""

from __future__ import annotations

import sys
import threading
from collections import Counter

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from acomms_core.mac.switcher import SWITCHER_PARAMETERS, MacSwitcher, check_switcher_values
from acomms_core.ros.ros_support import (
    ManagedNode,
    counters_diagnostics,
    declare_parameters,
    now_s,
    parameter_values,
    run_node,
)
from acomms_interfaces.msg import MacSwitcherStatus, ManagedMacState

MUTE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)
MUTE_TOPIC = "set_software_mute"


class MacSwitcherNode(ManagedNode):
    """Selects which managed MAC transmits (lifecycle node)."""

    def __init__(self, node_name: str = "mac_switcher_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self._lock = threading.RLock()
        self.counters: Counter[str] = Counter()
        self.switcher: MacSwitcher | None = None
        self._mute_publishers = {}
        self._status_publisher = self._diagnostics_publisher = None
        declare_parameters(self, SWITCHER_PARAMETERS, check_switcher_values, self._apply)

    def _apply(self, values: dict, changed: frozenset) -> None:
        with self._lock:
            if self.switcher is not None:
                self.switcher.heartbeat_timeout_s = float(
                    values["managed_mac_heartbeat_timeout_sec"])
                self.switcher.revert_on_deselect = bool(values["revert_on_deselect"])

    def on_configure(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, [spec.name for spec in SWITCHER_PARAMETERS])
        with self._lock:
            self.switcher = MacSwitcher.from_values(values, self.counters)
        self._mute_publishers = {ns: self.configured.publisher(Bool, f"{ns}/{MUTE_TOPIC}",
                                                               MUTE_QOS)
                                 for ns in self.switcher.managed}
        self._status_publisher = self.configured.publisher(MacSwitcherStatus,
                                                           "mac_switcher_status", 10)
        self._diagnostics_publisher = self.configured.publisher(DiagnosticArray, "/diagnostics",
                                                                10)
        self.get_logger().info(f"managing {', '.join(self.switcher.managed)}; default "
                               f"{self.switcher.default}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        for ns in self.switcher.managed:
            self.activated.subscription(Bool, f"~/{ns}/select",
                                        lambda msg, n=ns: self._on_select(n, msg), 10)
            self.activated.subscription(Bool, f"~/{ns}/heartbeat",
                                        lambda msg, n=ns: self._on_heartbeat(n), 10)
        self.activated.timer(self.get_parameter("status_period_seconds").value, self._on_timer)
        result = super().on_activate(state)  # lifecycle publishers publish from here on
        with self._lock:
            self._send(self.switcher.start())
        self._publish_status()
        return result

    def on_release(self) -> None:
        self._mute_publishers = {}
        self._status_publisher = self._diagnostics_publisher = None
        self.switcher = None

    def _send(self, commands) -> None:
        for ns, mute in commands:
            self._mute_publishers[ns].publish(Bool(data=mute))
            self.get_logger().info(f"{ns}: software_mute {mute}")

    def _on_select(self, ns: str, msg: Bool) -> None:
        with self._lock:
            commands = self.switcher.select(ns, bool(msg.data), now_s(self))
            self._send(commands)
        if commands:
            self._publish_status()

    def _on_heartbeat(self, ns: str) -> None:
        with self._lock:
            self.switcher.heartbeat(ns, now_s(self))

    def _on_timer(self) -> None:
        with self._lock:
            commands = self.switcher.tick(now_s(self))
            if commands:
                self.get_logger().warning(f"no heartbeat from {commands[0][0]} within "
                                          f"{self.switcher.heartbeat_timeout_s:g} s; back to "
                                          f"{self.switcher.default}")
            self._send(commands)
        self._publish_status()

    def _publish_status(self) -> None:
        with self._lock:
            if self.switcher is None or self._status_publisher is None:
                return
            time = self.get_clock().now()
            fields = self.switcher.status(now_s(self))
            states = [ManagedMacState(ns=ns, software_mute=muted)
                      for ns, muted in self.switcher.muted.items()]
            counters = dict(self.counters)
        msg = MacSwitcherStatus(managed_mac_namespaces=states, **fields)
        msg.header.stamp = time.to_msg()
        self._status_publisher.publish(msg)
        self._diagnostics_publisher.publish(counters_diagnostics(
            f"{self.get_fully_qualified_name()}: mac_switcher",
            f"active {fields['active_mac_namespace']}", counters, msg.header.stamp))


def main(args=None) -> int:
    return run_node(MacSwitcherNode, args)


if __name__ == "__main__":
    sys.exit(main())
