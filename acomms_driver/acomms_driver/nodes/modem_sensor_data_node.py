"""modem_sensor_data_node: polls the modem's sensor values and publishes ModemSensorData.

Every `query_interval_s` it sends `$CCCFQ,<name>` for the five sensor parameters on
`nmea_to_modem` (served by acomms_driver_node) and collects the `$CACFG,<name>,<value>` replies from
`nmea_from_modem`. It publishes `modem_sensor_data` as soon as all five arrived, or after
`reply_timeout_s` with NaN for the values that did not (counted in `missing_replies`).
"""

from __future__ import annotations

import math

from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from std_msgs.msg import String

from acomms_core.ros.ros_support import (
    NodeResources,
    ParameterSpec,
    declare_parameters,
    now_s,
    run_node,
    seconds_to_time_msg,
)
from acomms_core.time_grid import seconds_to_ns
from acomms_driver.micromodem import nmea
from acomms_interfaces.msg import ModemSensorData

# modem configuration parameter -> ModemSensorData field
SENSOR_FIELDS = {
    "pwramp.temperature_degC": "pwramp_temperature",
    "pwramp.vbat": "pwramp_vbat",
    "pwramp.vtransmit": "pwramp_vtransmit",
    "hwd.batt_v": "modem_batt_v",
    "hwd.temp": "modem_temp",
}

PARAMETERS = (
    ParameterSpec("query_interval_s", 30.0, "time between sensor polls (node clock), s", 1.0,
                  3600.0),
    ParameterSpec("reply_timeout_s", 3.0, "wait for the modem's replies of one poll (wall "
                  "clock: an I/O timeout), s", 0.1, 60.0),
)


def sensor_value(sentence_line: str) -> tuple[str, float] | None:
    """(field, value) if the line is a $CACFG reply for a sensor parameter, else None."""
    try:
        sentence = nmea.parse_line(sentence_line)
    except nmea.NmeaError:
        return None
    if sentence.type != "CACFG" or len(sentence.fields) < 2:
        return None
    field = SENSOR_FIELDS.get(sentence.fields[0])
    if field is None:
        return None
    text = "".join(c for c in sentence.fields[1] if c.isdigit() or c in ".-+eE")
    try:
        return field, float(text)
    except ValueError:
        return None


class ModemSensorDataNode(LifecycleNode):
    def __init__(self, node_name: str = "modem_sensor_data_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self.params = declare_parameters(self, PARAMETERS, apply=self._apply)
        self.counters = {"polls": 0, "published": 0, "missing_replies": 0, "unparseable": 0}
        self._values: dict[str, float] = {}
        self._polling = False
        self._resources = NodeResources(self)         # configure .. cleanup
        self._active_resources = NodeResources(self)  # activate .. deactivate
        self._poll_timer = None
        self._deadline_timer = None
        self._sensor_publisher = None
        self._nmea_out = None

    def _apply(self, values: dict, changed: frozenset) -> None:
        """Post-set: a new query interval restarts the poll timer."""
        self.params = dict(values)
        if "query_interval_s" in changed and self._poll_timer is not None:
            self._poll_timer.timer_period_ns = seconds_to_ns(values["query_interval_s"])
            self._poll_timer.reset()

    def on_configure(self, state) -> TransitionCallbackReturn:
        self._sensor_publisher = self._resources.publisher(ModemSensorData, "modem_sensor_data")
        self._nmea_out = self._resources.publisher(String, "nmea_to_modem")
        self._resources.subscription(String, "nmea_from_modem", self._on_nmea, 100)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        result = super().on_activate(state)
        self._poll_timer = self._active_resources.timer(self.params["query_interval_s"],
                                                        self._poll)
        # One-shot per poll: started by _poll, stopped by _finish.
        self._deadline_timer = self._active_resources.timer(
            self.params["reply_timeout_s"], self._finish, autostart=False,
            clock=Clock(clock_type=ClockType.STEADY_TIME))  # the modem answers in wall time
        return result

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._stop_polling()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._stop_polling()
        self._resources.release()
        self._sensor_publisher = self._nmea_out = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        return self.on_cleanup(state)

    def _stop_polling(self) -> None:
        self._active_resources.release()
        self._poll_timer = self._deadline_timer = None
        self._polling = False

    def _poll(self) -> None:
        if self._polling:  # previous poll still waiting: finish it first
            self._finish()
        self.counters["polls"] += 1
        self._values = {}
        self._polling = True
        for name in SENSOR_FIELDS:
            self._nmea_out.publish(String(data=f"$CCCFQ,{name}"))
        self._deadline_timer.timer_period_ns = seconds_to_ns(self.params["reply_timeout_s"])
        self._deadline_timer.reset()

    def _on_nmea(self, msg: String) -> None:
        if "CACFG" not in msg.data:
            return
        parsed = sensor_value(msg.data)
        if parsed is None:
            if any(name in msg.data for name in SENSOR_FIELDS):
                self.counters["unparseable"] += 1
            return
        if self._polling:
            self._values[parsed[0]] = parsed[1]
            if len(self._values) == len(SENSOR_FIELDS):
                self._finish()

    def _finish(self) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        if not self._polling:
            return
        self._polling = False
        missing = [f for f in SENSOR_FIELDS.values() if f not in self._values]
        self.counters["missing_replies"] += len(missing)
        if missing:
            self.get_logger().warning(f"modem did not report {missing}")
        msg = ModemSensorData(**{f: self._values.get(f, math.nan) for f in SENSOR_FIELDS.values()})
        msg.header.stamp = seconds_to_time_msg(now_s(self))
        self._sensor_publisher.publish(msg)
        self.counters["published"] += 1


def main(args=None) -> int:
    return run_node(ModemSensorDataNode, args)
