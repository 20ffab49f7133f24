"""tdma_advanced_node: TDMA MAC with software mute, nav/comms slots, modem pings and skew.

Adds to tdma_node (all parameters changeable at runtime, schedule changes at the next slot
boundary; software_mute at once); the decisions are `acomms_core.mac.tdma_advanced`'s policy:

- software_mute: no transmissions at all while true (status shows we_are_active false);
- nav_slots / comms_slots: which active slots carry navigation pings and which carry data
  packets ("" = every active slot, "none" = no slot; slots outside active_slots are ignored);
- pings_per_slot modem pings (`ping_modem` service of the driver or simulator) to ping_modem_src,
  then one transponder ping (`ping_transponders`) if ping_transponders, at the start of each nav
  slot, before any data packet of that slot; a ping is only started when ping_modem_timeout_sec
  (transponder_reply_timeout_sec) plus the guard time still fits in the slot;
- skew_cycle_sec: shifts this vehicle's whole cycle relative to cycle_start_time;
- per-slot tags and minimum priority (slot_tags, from tdma_node) go to the queue with each request.

Publishes `tdma_advanced_status` (TdmaAdvancedStatus) instead of `tdma_status`.
"""

from __future__ import annotations

import sys

from acomms_core.mac.policy import Ping
from acomms_core.nodes.mac_node import MacNode
from acomms_core.ros.ros_support import now_s, run_node
from acomms_core.ros.service_calls import server_ready
from acomms_interfaces.srv import PingModem, PingTransponders


class TdmaAdvancedNode(MacNode):
    """TDMA MAC with mute, nav pings and comms/nav slot masks (lifecycle node)."""

    MAC_KIND = "tdma_advanced"

    def __init__(self, node_name: str | None = None, **kwargs):
        self._ping_clients = {}
        super().__init__(node_name, **kwargs)

    def create_interfaces(self, resources) -> None:
        self._ping_clients = {
            "modem": resources.client(PingModem, "ping_modem"),
            "transponder": resources.client(PingTransponders, "ping_transponders")}

    def forget_interfaces(self) -> None:
        self._ping_clients = {}

    def _ping_request(self, kind: str):
        config = self.policy.config
        pings = config.pings
        if kind == "modem":
            return PingModem.Request(dest=pings.ping_modem_src, rate=config.frames.miniframe_rate,
                                     cdr=pings.ping_cdr, hexdata=[],
                                     timeout_sec=pings.ping_modem_timeout_sec)
        return PingTransponders.Request(transponder_dest_mask=list(pings.transponder_mask),
                                        timeout_sec=pings.transponder_reply_timeout_sec)

    def handle_action(self, action, now: float) -> None:
        if not isinstance(action, Ping):
            return
        client = self._ping_clients[action.kind]
        if not server_ready(client):
            self.policy.ping_unavailable(action.kind)
            self.get_logger().warning(f"{client.srv_name} service not available; skipping "
                                      f"{action.kind} pings", throttle_duration_sec=10.0)
            return
        self.policy.ping_started(action.kind, now, action.timeout_s)
        future = client.call_async(self._ping_request(action.kind))
        self.pipeline.track(future, node_clock_s=action.timeout_s)
        future.add_done_callback(lambda f: self.locked(self._on_ping_done, f, action.kind))

    def _on_ping_done(self, future, kind: str) -> None:
        if future is not self.pipeline.busy_future:
            return
        self.pipeline.busy_future = None
        self.policy.ping_finished(now_s(self))
        try:
            response = future.result()
        except Exception as exc:
            self.counters[f"{kind}_ping_errors"] += 1
            self.get_logger().error(f"{kind} ping failed: {exc}")
            return
        if kind == "transponder":
            self.get_logger().info(f"transponder ping travel times: {list(response.travel_times)}")
        elif response.timed_out:
            self.counters["modem_ping_timeouts"] += 1
        else:
            self.counters["modem_ping_replies"] += 1
            self.get_logger().info(f"modem ping reply: one-way travel time "
                                   f"{response.one_way_travel_time:.4f} s")


def main(args=None) -> int:
    return run_node(TdmaAdvancedNode, args)


if __name__ == "__main__":
    sys.exit(main())
