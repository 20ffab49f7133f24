"""wec_telemetry_bridge: MBARI WEC buoy telemetry decimated to the acoustic link (buoy side).

Subscribes each telemetry record whose `<topic>_period_s` is > 0 (`telemetry_prefix` + MBARI's
topic name: `/powerbuoy_data`, `/battery_data`, ...; types `buoy_interfaces/msg/*`), keeps only the
latest message of each, and every period (node clock) hands the latest one not yet forwarded to
the vehicle's message queue on `to_acomms/<topic>`. With the codec config's `queue_maxsize: 1`
(latest-only queues, `config/wec_buoy_codecs.yaml`) the link always carries the newest record;
the remote packet_dispatch_node republishes it under the same topic name in its own namespace.
Counters on /diagnostics: received, forwarded, decimated (superseded before forwarding),
idle periods (`acomms_bringup.bridges.timing.LatestOnly`, ROS-free).

A period timer's callback is a `functools.partial` without parameters: rclpy's EventsExecutor
(acomms_run's deterministic clock) passes a TimerInfo to a callback that takes any parameter, even
a defaulted one (a `lambda topic=topic:` got the TimerInfo as its topic: nothing was forwarded).
"""

from __future__ import annotations

import functools
import sys

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.lifecycle import TransitionCallbackReturn

from acomms_bringup.bridges.remote_service import interface_class
from acomms_bringup.bridges.timing import LatestOnly
from acomms_bringup.bridges.wec_buoy import RECORDS
from acomms_core.ros.ros_support import (
    ManagedNode,
    ParameterSpec,
    counters_diagnostics,
    declare_parameters,
    is_active,
    parameter_values,
    run_node,
)

PARAMETERS = (
    ParameterSpec("telemetry_prefix", "/", "Prefix of the telemetry topics ('/': MBARI's "
                  "absolute names; '': relative to the namespace).", read_only=True),
    *(ParameterSpec(f"{record.topic}_period_s", record.default_period_s,
                    f"Seconds (node clock) between {record.topic} records sent over the link "
                    "(0: not sent).",
                    minimum=0.0, maximum=86400.0, read_only=True) for record in RECORDS),
)


message_class = interface_class


class WecTelemetryBridge(ManagedNode):
    def __init__(self, node_name: str = "wec_telemetry_bridge", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, PARAMETERS)
        self.values = parameter_values(self, [spec.name for spec in PARAMETERS])
        self.records = [r for r in RECORDS if self.values[f"{r.topic}_period_s"] > 0]
        self.decimation = LatestOnly(r.topic for r in self.records)
        self.counts = self.decimation.counts
        self._record_pubs = {}
        self._diag_pub = None
        self._classes = {}

    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            self._classes = {r.topic: message_class(r.ros_type) for r in self.records}
        except (ImportError, AttributeError) as exc:
            self.get_logger().error(f"configure refused: telemetry types not available ({exc});"
                                    " run scripts/buoy_interfaces.sh")
            return TransitionCallbackReturn.FAILURE
        self._record_pubs = {topic: self.configured.publisher(cls, f"to_acomms/{topic}")
                            for topic, cls in self._classes.items()}
        self._diag_pub = self.configured.publisher(DiagnosticArray, "/diagnostics")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        prefix = self.values["telemetry_prefix"]
        for record in self.records:
            topic = record.topic
            self.activated.subscription(self._classes[topic], prefix + topic,
                                        functools.partial(self.on_record, topic))
            self.activated.timer(self.values[f"{topic}_period_s"],
                                 functools.partial(self.on_period, topic))
        return super().on_activate(state)

    def on_release(self) -> None:
        self._record_pubs = {}
        self._diag_pub = None
        self.decimation.clear()

    def bridge_summary(self) -> dict:
        return dict(self.counts)

    def on_record(self, topic: str, msg) -> None:
        self.decimation.record(topic, msg)

    def on_period(self, topic: str) -> None:
        if not is_active(self):   # a timer that fired while the node is being deactivated
            return
        msg = self.decimation.period(topic)
        if msg is not None:
            self._record_pubs[topic].publish(msg)
        self._diag_pub.publish(counters_diagnostics(
            self.get_fully_qualified_name(), "ok", self.counts, self.get_clock().now().to_msg()))


def main(args=None):
    return run_node(WecTelemetryBridge, args)


if __name__ == "__main__":
    sys.exit(main())
