"""carrier_sense_node: listen-before-talk MAC; hears the channel through the modem's reports.

The decisions are `acomms_core.mac.carrier_sense`'s policy. This node feeds it what the modem
heard: every `cst` report (a detection by a real or simulated modem; the arrival is taken to end
when the report comes) or, with sense_source "reception_events", every detected arrival of the
simulator's `reception_events` (arrival time + duration; undetected arrivals and those lost to
this modem's own transmission are not heard). With `sense_reception_start` (default on) it also
hears `reception_start` (ReceptionStart: the modem detected a packet still arriving; the
simulator gives its expected end, a Micromodem's $CARXP does not): the channel is busy from then
on (see the policy). Arrivals are tracked from configure on, so the channel state is known at
activation. Publishes `carrier_sense_status` (CarrierSenseStatus).
"""

from __future__ import annotations

import sys

from acomms_core.nodes.mac_node import MacNode
from acomms_core.ros.ros_support import now_s, run_node, stamp_seconds
from acomms_interfaces.msg import CST, ReceptionStart, SimReceptionEvent

DETECTED = {SimReceptionEvent.OUTCOME_RECEIVED, SimReceptionEvent.OUTCOME_PARTIAL,
            SimReceptionEvent.OUTCOME_FRAME_ERRORS}


class CarrierSenseNode(MacNode):
    """Carrier-sense MAC with seeded random backoff (lifecycle node)."""

    MAC_KIND = "carrier_sense"

    def create_interfaces(self, resources) -> None:
        if self.get_parameter("sense_source").value == "reception_events":
            resources.subscription(SimReceptionEvent, "reception_events", self._on_event, 100)
        else:
            resources.subscription(CST, "cst", self._on_cst, 100)
        resources.subscription(ReceptionStart, "reception_start", self._on_reception_start, 100)

    def _on_reception_start(self, msg: ReceptionStart) -> None:
        start = stamp_seconds(msg.arrival_time)
        duration = stamp_seconds(msg.expected_duration)
        with self._lock:
            self.policy.reception_started(int(msg.src), start,
                                          start + duration if duration > 0 else None)

    def _on_cst(self, msg: CST) -> None:
        with self._lock:
            self.policy.channel_heard(int(msg.src), now_s(self))

    def _on_event(self, msg: SimReceptionEvent) -> None:
        if msg.outcome not in DETECTED:
            self.counters["arrivals_not_detected"] += 1
            return
        end = stamp_seconds(msg.arrival_time) + stamp_seconds(msg.duration)
        with self._lock:
            self.policy.channel_heard(int(msg.src), end)


def main(args=None) -> int:
    return run_node(CarrierSenseNode, args)


if __name__ == "__main__":
    sys.exit(main())
