"""Stand-ins for the WEC demo and tests: a buoy and an operator (not simulations).

`wec_standin_buoy`: a stand-in MBARI WEC buoy.

Publishes synthetic telemetry every `publish_period_s` (node clock): PBRecord on
`powerbuoy_data` and its five sub-records on their own topics (after `telemetry_prefix`), with
slowly varying, physically plausible values; serves the command services of the WEC table (after
`service_prefix`) answering OK, except those in `silent_services` (served, never answered: for
timeout tests) and those not in `offered_services` (not served: "not available"). A pump command
sets the spring controller's PUMP_STATUS bit for its duration.

`wec_standin_operator` (on the topside): counts the telemetry records arriving on
`telemetry_topics` (relative: the records the topside's packet_dispatch_node republishes) and
`pump_after_start_s` after the run's start calls `pump_command` for `pump_minutes`, recording the
result code, when it was sent and answered (s after the start) and the round-trip time;
`bridge_summary()` reports them (the runner prints it). The start is `start_time_seconds` on the
node clock (the stack sets it to the scenario's `clock.start_time`), or the node's activation when
that is negative; the old parameter name `pump_at_s` is still accepted, with a logged note.
"""

from __future__ import annotations

import math
import sys

from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from acomms_bringup.bridges.deferred_service import DeferredService
from acomms_bringup.bridges.remote_service import srv_class
from acomms_bringup.bridges.timing import renamed_parameter, run_start_s, seconds_until
from acomms_bringup.bridges.wec_buoy import RECORDS, WEC_SERVICES
from acomms_bringup.bridges.wec_telemetry_bridge import message_class
from acomms_core.ros.ros_support import (
    ManagedNode,
    ParameterSpec,
    declare_parameters,
    is_active,
    now_s,
    parameter_values,
    run_node,
)

ALL_SERVICES = [service.name for service in WEC_SERVICES]
PARAMETERS = (
    ParameterSpec("publish_period_s", 1.0, "Seconds between telemetry records (node clock).",
                  minimum=0.01, maximum=3600.0, read_only=True),
    ParameterSpec("telemetry_prefix", "/", "Prefix of the telemetry topics.", read_only=True),
    ParameterSpec("service_prefix", "/", "Prefix of the served command services.",
                  read_only=True),
    ParameterSpec("offered_services", ALL_SERVICES, "Command services served.",
                  read_only=True),
    ParameterSpec("silent_services", [""], "Services served but never answered.",
                  parameter_type="string_array", read_only=True),
)
PUMP_STATUS = 512   # SCRecord.PUMP_STATUS
MIN_DELAY_S = 0.001  # a time already past: call at once (a timer needs a period > 0)


class WecStandinBuoy(ManagedNode):
    def __init__(self, node_name: str = "wec_standin_buoy", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, PARAMETERS)
        self.values = parameter_values(self, [spec.name for spec in PARAMETERS])
        self.seq = 0
        self.pump_until_s = -1.0
        self.commands: list[tuple[str, object]] = []   # (service name, request) received
        self.silent = {name for name in self.values["silent_services"] if name}
        self._record_pubs = {}
        self._classes = {}

    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            self._classes = {r.topic: message_class(r.ros_type) for r in RECORDS}
        except (ImportError, AttributeError) as exc:
            self.get_logger().error(f"configure refused: buoy_interfaces not available ({exc})")
            return TransitionCallbackReturn.FAILURE
        prefix = self.values["telemetry_prefix"]
        self._record_pubs = {topic: self.configured.publisher(cls, prefix + topic)
                            for topic, cls in self._classes.items()}
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        for service in WEC_SERVICES:
            if service.name not in self.values["offered_services"]:
                continue
            holder = []
            server = DeferredService(
                self.activated, srv_class(service.srv_type),
                self.values["service_prefix"] + service.name,
                lambda request, response, name=service.name, holder=holder: self.on_command(
                    name, request, response, holder[0]))
            holder.append(server)
        self.activated.timer(self.values["publish_period_s"], self.on_publish)
        return super().on_activate(state)

    def on_release(self) -> None:
        self._record_pubs = {}

    def on_command(self, name: str, request, response, server):
        self.commands.append((name, request))
        self.get_logger().info(f"{name}: {request}")
        if name == "pump_command" and request.duration_mins > 0:
            self.pump_until_s = now_s(self) + 60.0 * request.duration_mins
        if name in self.silent:
            return server.defer(response)   # never completed
        response.result.value = 0
        return response

    def records(self, t: float) -> dict:
        """Synthetic records at node time t (s)."""
        c = self._classes
        stamp = self.get_clock().now().to_msg()
        wave = math.sin(2 * math.pi * t / 9.0)
        pc = c["power_data"](seq_num=self.seq % 32768, rpm=800.0 * wave, sd_rpm=120.0,
                             voltage=313.5, draw_curr_limit=12.0, bcurrent=2.5 * wave,
                             wcurrent=-8.0 * wave, torque=40.0 * wave, diff_press=150.0 * wave,
                             bias_current=0.0, loaddc=0.1, scale=1.0, retract=0.6,
                             target_v=320.0, target_a=2.0, charge_curr_limit=7.0, status=1)
        bc = c["battery_data"](seq_num=self.seq % 32768, voltage=318.25, ips=2.5 * wave,
                               vbalance=3.95, vstopcharge=325.0, gfault=1.2, hydrogen=0.05)
        pump = PUMP_STATUS if t < self.pump_until_s else 0
        sc = c["spring_data"](seq_num=self.seq % 32768, load_cell=1200, range_finder=1.5 + 0.4
                              * wave, upper_psi=210.0, lower_psi=180.0, epoch=int(t),
                              salinity=33.5, temperature=12.4, status=pump)
        tf = c["trefoil_data"](seq_num=self.seq, tether_voltage=300.0, battery_voltage=24.2,
                               pressure=14.7, encoder=1000 + self.seq)
        tf.imu.orientation.w = 1.0
        tf.imu.linear_acceleration.z = 9.81
        tf.mag.magnetic_field.x = 2.2e-5
        xb = c["ahrs_data"]()
        xb.imu.orientation.w = 1.0
        xb.gps.latitude, xb.gps.longitude, xb.gps.altitude = 36.7985, -121.9090, 1.0
        xb.ned_velocity.z = 0.5 * wave
        xb.x_rate_temp.temperature = 18.5
        for record in (pc, bc, sc, tf, xb):
            record.header.stamp = stamp
        pb = c["powerbuoy_data"](pc=pc, bc=bc, sc=sc, tf=tf, xb=xb)
        pb.header.stamp = stamp
        return {"powerbuoy_data": pb, "power_data": pc, "battery_data": bc, "spring_data": sc,
                "trefoil_data": tf, "ahrs_data": xb}

    def on_publish(self) -> None:
        if not is_active(self):   # a timer that fired while the node is being deactivated
            return
        self.seq += 1
        for topic, msg in self.records(now_s(self)).items():
            self._record_pubs[topic].publish(msg)


OPERATOR_PARAMETERS = (
    ParameterSpec("telemetry_topics", ["powerbuoy_data"], "Telemetry topics counted.",
                  read_only=True),
    ParameterSpec("pump_after_start_s", 120.0, "Seconds after the run's start (node clock) at "
                  "which pump_command is called (< 0: never).", minimum=-1.0, maximum=1e7,
                  read_only=True),
    ParameterSpec("pump_at_s", None, "Deprecated name of pump_after_start_s (when set, used "
                  "instead of it, with a logged note).", parameter_type=Parameter.Type.DOUBLE,
                  read_only=True),
    ParameterSpec("start_time_seconds", -1.0, "Node-clock time of the run's start, s (the "
                  "stack sets clock.start_time); negative: the node's activation.",
                  read_only=True),
    ParameterSpec("pump_minutes", 5.0, "Pump duration requested, minutes.", read_only=True),
)


class WecStandinOperator(ManagedNode):
    def __init__(self, node_name: str = "wec_standin_operator", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, OPERATOR_PARAMETERS)
        self.values = parameter_values(self, [spec.name for spec in OPERATOR_PARAMETERS])
        self.pump_after_start_s, note = renamed_parameter(self.values, "pump_at_s",
                                                          "pump_after_start_s")
        if note:
            self.get_logger().warning(note)
        self.received = dict.fromkeys(self.values["telemetry_topics"], 0)
        self.start_s = None  # node-clock time of the run's start (set at activation)
        self.pump = {}       # sent_after_start_s, answered_after_start_s, result
        self._client = self._timer = None

    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            self._classes = {r.topic: message_class(r.ros_type) for r in RECORDS}
            self._client = self.configured.client(srv_class(WEC_SERVICES[0].srv_type),
                                                  WEC_SERVICES[0].name)
        except (ImportError, AttributeError) as exc:
            self.get_logger().error(f"configure refused: buoy_interfaces not available ({exc})")
            return TransitionCallbackReturn.FAILURE
        unknown = [t for t in self.received if t not in self._classes]
        if unknown:
            self.get_logger().error(f"configure refused: unknown telemetry topics {unknown}")
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        for topic in self.received:
            self.activated.subscription(self._classes[topic], topic,
                                        lambda msg, topic=topic: self.on_record(topic))
        now = now_s(self)
        if self.start_s is None:
            self.start_s = run_start_s(self.values["start_time_seconds"], now)
        delay = seconds_until(self.pump_after_start_s, self.start_s, now)
        if delay is not None and not self.pump:
            self._timer = self.activated.timer(max(MIN_DELAY_S, delay), self.on_pump_time)
        return super().on_activate(state)

    def on_release(self) -> None:
        self._client = self._timer = None

    def on_record(self, topic: str) -> None:
        self.received[topic] += 1

    def on_pump_time(self) -> None:
        self._timer.cancel()
        request = self._client.srv_type.Request(duration_mins=self.values["pump_minutes"])
        self.pump = {"sent_after_start_s": self.after_start_s()}
        self._client.call_async(request).add_done_callback(self.on_pump_answer)

    def on_pump_answer(self, future) -> None:
        result = future.result()
        self.pump.update(answered_after_start_s=self.after_start_s(),
                         result=None if result is None else int(result.result.value))
        self.get_logger().info(f"pump_command answered {self.pump}")

    def after_start_s(self) -> float:
        return now_s(self) - self.start_s

    def bridge_summary(self) -> dict:
        pump = {k: round(v, 3) if isinstance(v, float) else v for k, v in self.pump.items()}
        if "answered_after_start_s" in self.pump:
            pump["round_trip_s"] = round(self.pump["answered_after_start_s"]
                                         - self.pump["sent_after_start_s"], 3)
        return {"telemetry_received": dict(self.received), "pump_command": pump}


def main(args=None):
    return run_node(WecStandinBuoy, args)


def main_operator(args=None):
    return run_node(WecStandinOperator, args)


if __name__ == "__main__":
    sys.exit(main())
