"""The runner's recorder node `/acomms_run`: publishes a scenario's traffic, records what happened.

- publishes each traffic entry (`acomms_bringup.run.traffic.TrafficPlan`) on its source vehicle's
  topic when it is due (simulated time), and each local event once (`local_events`);
- records every transmission (`<vehicle>/transmit`: start, on-air time by the vehicle's modem
  profile, bytes), every arrival's fate (`<vehicle>/reception_events`, SimReceptionEvent: outcome,
  SNR, RL, NL, TL, range, frames; a modem_sim_node in this process hands them over instead,
  `reception_observer`, and publishes none when nobody else listens) and the transmitter's
  position of every packet on the simulated channel (`/acoustic_channel`) as
  `acomms_bringup.run.report` records, and hands each record to its `listeners` (the live
  view: objects with `on_record(record)`); a vehicle whose modem is a
  driver (`micromodem`, `evologics`: no simulator reports its arrivals) has its receptions
  learnt from its driver's `packet_rx` (`records.driver_reception`: what it decoded, paired
  with the sender's transmission; what it never heard stays in flight);
- hands every message that comes out of a vehicle's packet_dispatch_node on a traffic entry's
  publish_topic to the delivery matcher (`acomms_bringup.run.matching`) with the vehicle that
  sent its packet: the in-process dispatch nodes tell `on_dispatched` (their `observer` hook)
  the SRC of each message's packet before they publish it; the arrival takes the first pending
  SRC of its topic with the same match key. A participant's dispatch nodes report it over ROS
  (`listen_remote`, `remote_events`): an arrival at its vehicles waits for that report. The
  arrival subscriptions keep every message (reliable, KEEP_ALL: a packet may carry hundreds);
  messages the middleware still reports lost are counted (`RunRecord.lost_arrivals`, a
  warning in the summary);
- keeps the ERROR lines of `/rosout` per logger (and those lean nodes hand over: `note_error`), so
  the runner can quote a failing node's reason.

All callbacks run in one mutually exclusive group; `lock` guards the record against the runner's
thread.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Collection, Mapping

from rcl_interfaces.msg import Log
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from acomms_bringup.description.scenario import Scenario, Vehicle
from acomms_bringup.run import report
from acomms_bringup.run.local_events import EventPlan, LocalEventPublisher
from acomms_bringup.run.matching import DeliveryMatcher, Stream
from acomms_bringup.run.reception_records import reception_from_event, reception_from_msg
from acomms_bringup.run.traffic import TrafficPlan, match_key
from acomms_core.modems.profile import ModemProfile
from acomms_core.modems.registry import MODEM_PROFILE_PARAMETER, modem_profile
from acomms_core.ros.ros_support import NodeResources, now_s, stamp_seconds, wake_timer_at
from acomms_core.ros.shared_messages import shared_callback
from acomms_core.time_grid import TimeGrid, seconds_to_ns

TRAFFIC_TICK_MAX_S = 0.5  # the traffic timer runs at least this often (simulated seconds)
ARRIVAL_QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)


def transmitted_duration_s(profile: ModemProfile, packet) -> float:
    """On-air time of an acomms_interfaces/Packet by the modem profile; 0 for a packet the
    profile refuses (the modem refused it too)."""
    try:
        fdp = profile.is_fdp(packet.packet_type, packet.dataframe_rate)
        return profile.packet_duration_s(fdp, packet.miniframe_rate, packet.dataframe_rate,
                                         len(packet.miniframe_bytes), len(packet.dataframe_bytes))
    except ValueError:
        return 0.0


class Recorder(Node):
    """Publishes the scenario's traffic and records what happened (see the module docstring)."""

    def __init__(self, scenario: Scenario, plans: list[TrafficPlan], record: report.RunRecord,
                 profiles: Mapping[str, ModemProfile] | None = None,
                 events: list[EventPlan] = (), observed_receptions: Collection[str] = (),
                 **kwargs):
        """observed_receptions: vehicles whose reception_events the recorder is handed by their
        in-process modem (`reception_observer`) instead of subscribing."""
        super().__init__("acomms_run", parameter_overrides=[
            Parameter("use_sim_time", value=scenario.clock.use_sim_time)], **kwargs)
        self.scenario, self.plans, self.record = scenario, plans, record
        self.matcher = DeliveryMatcher(record)
        self.lock = threading.Lock()
        self.errors: dict[str, list[str]] = defaultdict(list)  # logger name -> ERROR lines
        self.listeners: list = []  # objects with on_record(record), called under `lock`
        self._books_closed = False  # `close_books`: the run has ended, nothing more is booked
        self._vehicle_by_src = {v.src: v.name for v in scenario.vehicles}
        self._vehicles = {v.name: v for v in scenario.vehicles}
        self._observed_receptions = set(observed_receptions)
        # resolved arrival topic -> [(SRC, match key)] the dispatch node published, not yet heard
        self._pending: dict[str, deque] = {}
        # vehicles run by participants (`listen_remote`); their arrivals on a resolved topic
        # wait here for the SRC the participant reports: [(receiver, streams, key, time)]
        self._remote_receivers: set[str] = set()
        self._waiting: dict[str, deque] = {}
        default_profile = modem_profile(MODEM_PROFILE_PARAMETER.default)
        self._profiles = {v.name: (profiles or {}).get(v.name, default_profile)
                          for v in scenario.vehicles}
        self._group = MutuallyExclusiveCallbackGroup()
        self._traffic = NodeResources(self)  # the traffic timer, between start and stop
        self._traffic_timer = None
        self._traffic_grid: TimeGrid | None = None
        # not `_publishers`: rclpy's Node keeps its own list under that name
        self._traffic_publishers = [(plan, self.create_publisher(
            plan.cls, f"{plan.vehicle.namespace}/{plan.traffic.topic}", 50)) for plan in plans]
        self.local_events = LocalEventPublisher(self, list(events), record, self.lock,
                                                self._group)
        self._subscribe_channel_events()
        self._subscribe_arrivals()
        # Transient local, as /rosout publishers are: a node's error logged before this
        # subscription matched it (a failed configure at start-up) still arrives.
        self.create_subscription(Log, "/rosout", self._on_log, QoSProfile(
            depth=1000, durability=DurabilityPolicy.TRANSIENT_LOCAL,
            reliability=ReliabilityPolicy.RELIABLE), callback_group=self._group)

    def _subscribe_channel_events(self) -> None:
        from acomms_interfaces.msg import ReceivedPacket, SimPacket, TransmittedPacket

        self.create_subscription(SimPacket, "/acoustic_channel",
                                 shared_callback(SimPacket, self._on_channel_packet), 100,
                                 callback_group=self._group, raw=True)
        for vehicle in self.scenario.vehicles:
            ns = vehicle.namespace
            self.create_subscription(TransmittedPacket, f"{ns}/transmit", shared_callback(
                TransmittedPacket, lambda m, v=vehicle: self._on_transmit(v, m)), 100,
                callback_group=self._group, raw=True)
            if vehicle.name not in self._observed_receptions:
                self.subscribe_receptions(vehicle.name)
            if vehicle.modem.kind != "sim":   # a driver: what it decoded, from packet_rx
                self.create_subscription(ReceivedPacket, f"{ns}/packet_rx",
                                         lambda m, v=vehicle: self._on_driver_rx(v, m), 100,
                                         callback_group=self._group)

    def subscribe_receptions(self, vehicle_name: str) -> None:
        """Book the vehicle's receptions from its reception_events topic."""
        from acomms_interfaces.msg import SimReceptionEvent

        namespace = self._vehicles[vehicle_name].namespace
        self.create_subscription(
            SimReceptionEvent, f"{namespace}/reception_events", shared_callback(
                SimReceptionEvent, lambda msg, name=vehicle_name: self._book(
                    self.record.receptions, reception_from_msg(name, msg))), 100,
            callback_group=self._group, raw=True)

    def reception_observer(self, vehicle_name: str):
        """What books the plain reception events an in-process modem_sim_node hands it
        (`ModemOutputs.reception_observer`): the records its messages would give."""
        if vehicle_name not in self._vehicles:
            raise KeyError(vehicle_name)
        return lambda event: self._book(self.record.receptions,
                                        reception_from_event(vehicle_name, event))

    def _subscribe_arrivals(self) -> None:
        """One subscription per (publish topic, type) and vehicle, for the streams it carries."""
        by_topic: dict[tuple[str, type], list[Stream]] = defaultdict(list)
        for plan in self.plans:
            by_topic[(plan.publish_topic, plan.cls)].append(plan.stream)
        for (topic, cls), streams in by_topic.items():
            for receiver in self.scenario.vehicles:
                name = f"{receiver.namespace}/{topic}"
                subscription = self.create_subscription(
                    cls, name, lambda m, r=receiver, s=tuple(streams), t=name:
                    self._on_arrival(r, s, m, t), ARRIVAL_QOS, callback_group=self._group,
                    event_callbacks=SubscriptionEventCallbacks(
                        message_lost=lambda info, t=name: self._on_arrivals_lost(t, info)))
                self._pending[subscription.topic_name] = deque()
                self._pending[name] = self._pending[subscription.topic_name]
                self._waiting[subscription.topic_name] = self._waiting[name] = deque()

    # ---- traffic ---------------------------------------------------------------------------
    def start_traffic(self, origin_s: float | None = None) -> None:
        """Publish each plan's messages when due, polled on a grid of at most
        TRAFFIC_TICK_MAX_S; the timer wakes only at the grid time of the next due message, so a
        deterministic clock skips the empty polls and messages keep their polled times. Local
        events (`local_events`) start here too. origin_s: the ROS time the plans' times count
        from when the clock has no fixed start (a wall-clock run: its start), else None (they
        count from clock.start_time)."""
        if origin_s is not None:
            for plan in [*self.plans, *self.local_events.plans]:
                plan.move_origin(origin_s)
        self.local_events.start()
        if not self.plans:
            return
        period = min(TRAFFIC_TICK_MAX_S,
                     min(p.traffic.period_seconds for p in self.plans) / 2.0)
        now_ns = self.get_clock().now().nanoseconds
        self._traffic_grid = TimeGrid(now_ns, seconds_to_ns(period))
        self._traffic_timer = self._traffic.timer(period, self._on_traffic_timer,
                                                  callback_group=self._group)
        self._on_traffic_timer()

    def traffic_without_subscribers(self) -> list[str]:
        """The traffic topics nobody subscribes to yet (a participant still joining)."""
        return [publisher.topic_name for _plan, publisher in self._traffic_publishers
                if publisher.get_subscription_count() == 0]

    def stop_traffic(self) -> None:
        self.local_events.stop()
        self._traffic.release()
        self._traffic_timer = None

    def _on_traffic_timer(self) -> None:
        now = now_s(self)
        for plan, publisher in self._traffic_publishers:
            if not plan.due(now):
                continue
            message = plan.build(now)
            with self.lock:
                self.matcher.sent(plan.stream, match_key(message), plan.seq, now)
            publisher.publish(message)
        if self._traffic_timer is not None and self._traffic_publishers:
            now_ns = self.get_clock().now().nanoseconds
            next_due_s = min(plan.next_due_s for plan, _ in self._traffic_publishers)
            wake_timer_at(self._traffic_timer, self._traffic_grid.wake_for(next_due_s, now_ns),
                          now_ns)

    def on_dispatched(self, topic: str, src: int, message) -> None:
        """A packet_dispatch_node's observer: it is about to publish `message` on `topic` (a
        resolved name), out of a packet from `src`."""
        self.on_dispatched_key(topic, src, match_key(message))

    def on_dispatched_key(self, topic: str, src: int, key) -> None:
        """As on_dispatched, with the message's match key (a participant's dispatch node told
        it over ROS: `remote_events`); an arrival waiting for it is booked now."""
        pending = self._pending.get(topic)
        if pending is not None:
            with self.lock:
                pending.append((src, key))
                self._book_waiting(topic)

    def listen_remote(self, events, receivers: set[str]) -> None:
        """Book the participants' `remote_events` lines with `events`; arrivals at `receivers`
        (vehicles run by participants) wait for the SRC their dispatch node reports."""
        from std_msgs.msg import String

        from acomms_bringup.run.remote_events import REMOTE_EVENTS_DEPTH, REMOTE_EVENTS_TOPIC

        self._remote_receivers = set(receivers)
        self.create_subscription(String, REMOTE_EVENTS_TOPIC, lambda m: events(m.data),
                                 QoSProfile(depth=REMOTE_EVENTS_DEPTH,
                                            durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                            reliability=ReliabilityPolicy.RELIABLE),
                                 callback_group=self._group)

    def _arrival_source(self, topic: str, key) -> str | None:
        """The vehicle whose packet carried an arrival on topic with this key (None: not
        known); takes it from the pending list."""
        pending = self._pending.get(topic, ())
        for index, (src, pending_key) in enumerate(pending):
            if pending_key == key:
                del pending[index]
                return self._vehicle_by_src.get(src, f"SRC {src}")
        return None

    def _on_arrival(self, receiver: Vehicle, streams: tuple[Stream, ...], message,
                    topic: str) -> None:
        now = now_s(self)
        key = match_key(message)
        with self.lock:
            if self._after_end():
                return
            if receiver.name in self._remote_receivers:  # its SRC comes over ROS: in order
                self._waiting[topic].append((receiver, streams, key, now))
                self._book_waiting(topic)
                return
            source = self._arrival_source(topic, key)
            self.matcher.arrived(receiver.name, streams, key, now, source)

    def _book_waiting(self, topic: str) -> None:
        """Book the arrivals at a participant's vehicle on `topic` whose SRC is known, in
        arrival order (the dispatch node reports them in that order); under `lock`."""
        waiting = self._waiting.get(topic)
        while waiting:
            receiver, streams, key, now = waiting[0]
            source = self._arrival_source(topic, key)
            if source is None:
                return
            waiting.popleft()
            self.matcher.arrived(receiver.name, streams, key, now, source)

    def book_unexplained_arrivals(self) -> int:
        """At the end: book the arrivals whose SRC never came (source not known); how many."""
        booked = 0
        with self.lock:
            for waiting in {id(w): w for w in self._waiting.values()}.values():
                while waiting:
                    receiver, streams, key, now = waiting.popleft()
                    self.matcher.arrived(receiver.name, streams, key, now, None)
                    booked += 1
        return booked

    def _on_arrivals_lost(self, topic: str, info) -> None:
        with self.lock:
            self.record.lost_arrivals[topic] += info.total_count_change

    # ---- channel events --------------------------------------------------------------------
    def _on_transmit(self, vehicle: Vehicle, message) -> None:
        packet = message.packet
        duration = transmitted_duration_s(self._profiles[vehicle.name], packet)
        payload = bytes(packet.miniframe_bytes) + bytes(packet.dataframe_bytes)
        self._book(self.record.transmissions, report.Transmission(
            vehicle.name, vehicle.src, int(packet.dest), stamp_seconds(message.xst.time),
            duration, len(payload), payload))

    def _on_driver_rx(self, vehicle: Vehicle, message) -> None:
        packet, cst = message.packet, message.cst
        payload = bytes(packet.miniframe_bytes) + bytes(packet.dataframe_bytes)
        with self.lock:
            reception = report.driver_reception(
                vehicle.name, int(packet.src), int(packet.dest),
                stamp_seconds(message.header.stamp), payload, self.record.transmissions,
                float(cst.snr_in), int(cst.num_frames), int(cst.bad_frames_num))
        self._book(self.record.receptions, reception)

    def _on_channel_packet(self, packet) -> None:
        vehicle = self._vehicle_by_src.get(int(packet.packet.src))
        if vehicle is not None:
            self._book(self.record.fixes, report.Fix(
                vehicle, stamp_seconds(packet.transmit_time), float(packet.src_latitude),
                float(packet.src_longitude), float(packet.src_depth)))

    def _book(self, records: list, record) -> None:
        with self.lock:
            if self._after_end():
                return
            records.append(record)
            for listener in self.listeners:
                listener.on_record(record)

    def _after_end(self) -> bool:
        """Under `lock`: whether the books are closed (what came is counted, not booked)."""
        self.record.after_end += self._books_closed
        return self._books_closed

    def close_books(self) -> bool:
        """The run has ended: transmissions, receptions, fixes and arrivals that come later
        (a wall or free run's nodes go on while they shut down) are counted in
        `record.after_end`, not booked, as run.mcap does not record them either. Whether
        the books were open."""
        with self.lock:
            was_open, self._books_closed = not self._books_closed, True
            return was_open

    def _on_log(self, log: Log) -> None:
        if log.level >= Log.ERROR:
            self.note_error(log.name, log.msg)

    def note_error(self, logger_name: str, line: str) -> None:
        """An ERROR line of a node (from /rosout, or from a lean node's logger)."""
        with self.lock:
            self.errors[logger_name].append(line)
