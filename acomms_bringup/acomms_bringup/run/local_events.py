"""The runner's local events: each vehicle's `events:` entries (description.scenario_events)
published once on the vehicle's own topic at their simulated time, never queued for the link.

`plan_events` resolves each entry's ROS type and builds its message once (an unknown type or a
field that does not fit: `TrafficError` naming the scenario key), as acomms_check_scenario and
acomms_run do before anything starts. Times count from the run's second 0: `clock.start_time`
with simulated time; in a wall-clock run the run's start on the wall clock, known only when the
run starts (`EventPlan.move_origin`, called by the recorder's `start_traffic`).
`LocalEventPublisher` (owned by the recorder node) creates the publishers, wakes one timer at
each event's time on the node's ROS clock (a deterministic clock steps straight to it),
publishes what is due and books each event as a `report.LocalEventRecord` (the summary's "Local
events", messages.csv rows with fate `local_event`; not counted as link traffic)."""

from __future__ import annotations

import dataclasses
import threading

from acomms_bringup.description.scenario import Scenario, Vehicle
from acomms_bringup.description.scenario_events import LocalEvent
from acomms_bringup.run import report
from acomms_bringup.run.traffic import build_message, message_class
from acomms_core.ros.ros_support import NodeResources, now_s, wake_timer_at
from acomms_core.time_grid import seconds_to_ns

EVENT_QOS_DEPTH = 10


@dataclasses.dataclass
class EventPlan:
    """One local event with its message class and absolute ROS publish time."""

    vehicle: Vehicle
    event: LocalEvent
    cls: type
    due_s: float  # ROS time: the run's second 0 (origin_s) + at_seconds
    origin_s: float  # ROS time of the run's second 0 (`{time}` counts from here)
    done: bool = False

    def move_origin(self, origin_s: float) -> None:
        """Count from origin_s instead (a wall-clock run: its start, known only then)."""
        self.due_s += origin_s - self.origin_s
        self.origin_s = origin_s

    @property
    def topic(self) -> str:
        return f"{self.vehicle.namespace}/{self.event.topic}"

    def build(self, now_s: float):
        return build_message(self.cls, self.event.fields, seq=1, vehicle=self.vehicle.name,
                             time_s=now_s, origin_s=self.origin_s, key_path=self.event.key_path)


def plan_events(scenario: Scenario) -> list[EventPlan]:
    """Every vehicle's events, in publish order; TrafficError (naming the scenario key) for an
    unknown type or a field that does not fit it."""
    plans = []
    origin = scenario.clock.origin_s
    for vehicle in scenario.vehicles:
        for event in vehicle.events:
            cls = message_class(event.ros_type, event.key_path)
            plan = EventPlan(vehicle, event, cls, origin + event.at_seconds, origin)
            plan.build(plan.due_s)  # a bad field or template: TrafficError now
            plans.append(plan)
    return sorted(plans, key=lambda plan: plan.due_s)


class LocalEventPublisher:
    """Publishes the plans from `node` when due and books them into `record` under `lock`."""

    def __init__(self, node, plans: list[EventPlan], record: report.RunRecord,
                 lock: threading.Lock, callback_group=None):
        self.node, self.plans, self.record, self.lock = node, plans, record, lock
        self._group = callback_group
        self._resources = NodeResources(node)
        self._timer = None
        self._publishers = {}
        for plan in plans:
            key = (plan.topic, plan.cls)
            if key not in self._publishers:
                self._publishers[key] = node.create_publisher(plan.cls, plan.topic,
                                                              EVENT_QOS_DEPTH)

    def start(self) -> None:
        """Publish what is due now; wake at the next event's time."""
        if not self.plans:
            return
        self._timer = self._resources.timer(1.0, self._on_timer, callback_group=self._group)
        self._on_timer()

    def stop(self) -> None:
        self._resources.release()
        self._timer = None

    def _on_timer(self) -> None:
        now = now_s(self.node)
        for plan in self.plans:
            if plan.done or plan.due_s > now:
                continue
            plan.done = True
            self._publishers[(plan.topic, plan.cls)].publish(plan.build(now))
            with self.lock:
                self.record.local_events.append(report.LocalEventRecord(
                    plan.vehicle.name, plan.event.topic, plan.event.ros_type, now))
        pending = [plan.due_s for plan in self.plans if not plan.done]
        if self._timer is None:
            return
        if not pending:
            self._timer.cancel()  # a canceled timer has no deadline for the stepper
            return
        now_ns = self.node.get_clock().now().nanoseconds
        wake_timer_at(self._timer, max(seconds_to_ns(min(pending)), now_ns + 1), now_ns)
