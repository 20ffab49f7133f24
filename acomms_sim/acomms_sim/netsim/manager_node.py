"""netsim_manager_node: the netsim-compatible manager (`manager.NetsimManager`) as a lifecycle
node, publishing what vehicle simulators push.

Configure reads `config_file` (the YAML `manager_config` describes; a bad file fails the
transition with the reason); activate opens the manager's TCP port and the emulated modems' ports
(`manager_port` overrides the file's port; 0: any free port, see `manager.port`); deactivate
closes them. Publishes `netsim_receive_stats` (acomms_interfaces/NetsimReceiveStats, one per
ReceiveStats push) and /diagnostics (every counter, including the TCP servers' refused and
dropped clients, the last status per modem port, each modem's port). The TCP limits (idle and
write timeouts, wall clock) come from the file's `manager:` mapping.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.lifecycle import TransitionCallbackReturn

from acomms_core.ros.parameter_spec import ParameterSpec
from acomms_core.ros.ros_support import (
    ManagedNode,
    counters_diagnostics,
    declare_parameters,
    now_s,
    run_node,
    seconds_to_time_msg,
)
from acomms_interfaces.msg import NetsimReceiveStats
from acomms_sim.netsim.manager import STATUS_NAMES, NetsimManager
from acomms_sim.netsim.manager_config import load_config

DROPPED = ("clients_refused", "clients_dropped_idle", "clients_dropped_slow",
           "clients_dropped_full")  # counter names (manager and modem ports) in the summary
PARAMETERS = [
    ParameterSpec("config_file", "", "manager YAML (sim_env_pair, env_bounds, channel; see "
                  "acomms_sim/config/netsim_manager.yaml); read at configure"),
    ParameterSpec("manager_port", -1, "TCP port for vehicle simulators (-1: the file's "
                  "manager.port; 0: any free port); read at activate", -1, 65535),
    ParameterSpec("diagnostics_period_s", 1.0, "period of /diagnostics, s", 0.05, 3600.0),
]


class NetsimManagerNode(ManagedNode):
    WORKER = "manager"  # the NetsimManager: opened at activate, closed by ManagedNode

    def __init__(self, node_name: str = "netsim_manager_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self.params = declare_parameters(self, PARAMETERS, None, self._apply)
        self.config = None
        self.manager: NetsimManager | None = None
        self._stats_pub = None
        self._diagnostics_pub = None

    def _apply(self, values: dict, changed: frozenset) -> None:
        self.params = dict(values)

    def on_configure(self, state) -> TransitionCallbackReturn:
        if not self.params["config_file"]:
            self.get_logger().error("configure failed: config_file is not set")
            return TransitionCallbackReturn.FAILURE
        try:
            self.config = load_config(self.params["config_file"])
        except ValueError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self._stats_pub = self.configured.publisher(NetsimReceiveStats, "netsim_receive_stats",
                                                    50)
        self._diagnostics_pub = self.configured.publisher(DiagnosticArray, "/diagnostics", 10)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        if self.params["manager_port"] >= 0:
            self.config.port = self.params["manager_port"]
        try:
            self.manager = NetsimManager(self.config, on_stats=self._on_stats,
                                         on_log=self.get_logger().warning).start()
        except (OSError, ValueError) as exc:
            self.get_logger().error(f"activate failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.get_logger().info(f"netsim manager on port {self.manager.port}; modems (SRC: "
                               f"port) {self.manager.modem_ports}")
        self.activated.timer(self.params["diagnostics_period_s"], self._publish_diagnostics)
        return super().on_activate(state)

    def _on_stats(self, stats, peer_address: str, request_id: int) -> None:
        """From the manager's thread: one message per pushed ReceiveStats."""
        stamp = seconds_to_time_msg(now_s(self))
        for item in stats:
            msg = NetsimReceiveStats(
                peer_address=peer_address, request_id=request_id,
                modem_tcp_port=item.modem_tcp_port, tx_modem_tcp_port=item.tx_modem_tcp_port,
                packet_success=item.packet_success, mm_stats=bytes(item.mm_stats))
            msg.header.stamp = stamp
            self._stats_pub.publish(msg)

    def _publish_diagnostics(self) -> None:
        manager = self.manager
        if manager is None:
            return
        values = {**manager.counters, **manager.modem_counters()}
        values.update({f"modem_src_{src}_port": port
                       for src, port in manager.modem_ports.items()})
        values.update({f"last_status_port_{port}": STATUS_NAMES.get(status, status)
                       for port, status in manager.last_status.items()})
        errors = sum(manager.counters[k] for k in ("bad_framing", "unknown_message_name",
                                                   "bad_base64", "bad_protobuf",
                                                   "line_too_long", "internal_errors"))
        self._diagnostics_pub.publish(counters_diagnostics(
            f"{self.get_fully_qualified_name()}: netsim manager",
            f"port {manager.port}; {manager.counters['requests']} requests, {errors} bad lines, "
            f"{sum(v for k, v in values.items() if k.endswith(DROPPED))} clients refused or "
            "dropped",
            values, seconds_to_time_msg(now_s(self)),
            DiagnosticStatus.WARN if errors else DiagnosticStatus.OK))


def main(args=None) -> int:
    return run_node(NetsimManagerNode, args)
