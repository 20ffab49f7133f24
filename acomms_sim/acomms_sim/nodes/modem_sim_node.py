"""modem_sim_node: one simulated acoustic modem with the driver's ROS interface.

Serves `queue_tx_packet` and `ping_modem`; publishes `packet_rx` (ReceivedPacket), `transmit`
(TransmittedPacket with XST), `cst`, `reception_start` (ReceptionStart: the receiver detected a
packet that is still arriving, as a Micromodem's $CARXP; with its expected end) and
`reception_events` (SimReceptionEvent: one per in-band arrival with its outcome — received,
partial, frame_errors, undetected, half_duplex — SNR and whether it collided, so losses can be
accounted for); shares the global `/acoustic_channel` (SimPacket) with every other simulated
modem. reception_start and reception_events are published while anyone subscribes (acomms_run
takes the events of the modems it runs from `outputs.reception_observer`).

The modem itself is the ROS-free `acomms_sim.modem.sim_modem.SimModem` (transmit queue, half
duplex, pings, receptions through the channel library, CST/XST synthesis, counters); this node
feeds it the node clock's time, service requests and channel messages, and publishes the events
it returns (`acomms_sim.nodes.modem_sim_outputs`; `sim_modem_messages` converts). Packet kinds,
sizes and on-air times come from the modem profile named by `modem_profile`. With
`use_sim_time` a network runs as fast as the sim clock goes.

Events (queued transmissions, detected packets, completed receptions, ping timeouts) are
processed at the times a poll every `event_period_s` of node-clock time would handle them, but the
node's event timer only wakes at the poll time that follows `SimModem.next_event_time_s()`
(rescheduled after every request, channel packet and event; cancelled while the modem is idle),
so a deterministic clock jumps straight to it. The physics uses exact event times (CST.toa is the
exact arrival time), only the publication can lag by up to one period. SRC must be unique per
channel: a modem ignores SimPackets carrying its own SRC.

Noise: the channel parameters' model (Wenz or fixed) until a level arrives on `ambient_noise`
(std_msgs/Float32, dB re 1 uPa in the receiver band, as ros_acomms' modem_sim_node takes it);
the latest published level then holds (bad values are counted in `bad_ambient_noise`).

Position (`location_source`): `static` (latitude/longitude/depth), `service` (polls
`read_location`), or `topic`: follows `modem_location_topic` as ros_acomms does — Odometry or
PoseStamped in a local ENU frame with a configured origin, NavSatFix, or Location; the rules and
counters are in `acomms_sim.modem.location_topic`. Until a position is known the modem refuses to
transmit and its /diagnostics status is WARN.
"""

from __future__ import annotations

import collections
import math
import sys
import threading

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.task import Future
from std_msgs.msg import Float32

from acomms_core.modems.modem_rates import DEFAULT_TX_LEVEL
from acomms_core.modems.registry import (
    MODEM_PROFILE_PARAMETER,
    check_modem_profile,
    modem_profile,
)
from acomms_core.ros.ros_support import (
    ManagedNode,
    ParameterSpec,
    counters_diagnostics,
    declare_parameters,
    is_active,
    listened,
    now_s,
    parameter_values,
    run_node,
    wake_timer_at,
)
from acomms_core.ros.shared_messages import shared_callback
from acomms_core.ros.status_cadence import StatusCadence
from acomms_core.time_grid import TimeGrid, grid_deadline_ns
from acomms_interfaces.msg import (
    SimPacket,
    SoundSpeedProfile,
)
from acomms_interfaces.srv import PingModem, QueryModemSrc, QueueTxPacket
from acomms_sim.clock.stepping import seconds_to_ns
from acomms_sim.modem.fields import (
    ModemProblem,
    PingReplied,
    PingTimedOut,
)
from acomms_sim.modem.location_topic import (
    LOCATION_TOPIC_NAMES,
    LOCATION_TOPIC_SPECS,
    check_location_topic,
    reader_from_values,
)
from acomms_sim.modem.sim_modem import SimModem, SimModemConfig
from acomms_sim.nodes import sim_modem_messages as messages
from acomms_sim.nodes.modem_location import ModemLocation
from acomms_sim.nodes.modem_sim_outputs import ModemOutputs
from acomms_sim.nodes.sim_node_support import (
    FADING_SPECS,
    NOISE_NAMES,
    NOISE_SPECS,
    PROPAGATION_NAMES,
    PROPAGATION_SPECS,
    build_fading,
    build_noise,
    build_propagation,
    profile_from_msg,
    validate_choices,
)
from acomms_sim.physics.ambient_noise import check_published_level
from acomms_sim.physics.channel import DEFAULT_CARRIER_TOLERANCE_HZ
from acomms_sim.physics.doppler import DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB
from acomms_sim.physics.multipath import tolerance_table

SPECS = [
    ParameterSpec("SRC", 0, "modem address of this simulated modem (unique on the channel)",
                  0, 255),
    ParameterSpec("center_frequency_hz", 10000.0, "carrier centre frequency, Hz", 100.0, 1e6),
    ParameterSpec("bandwidth_hz", 5000.0, "signal bandwidth, Hz", 10.0, 1e5),
    ParameterSpec("source_level_db", 0.0,
                  "source level when a request gives none (requested_src_level_db <= 0), "
                  "dB re 1 uPa @ 1 m; 0: the modem profile's level for tx_level in this band",
                  0.0, 240.0),
    ParameterSpec("tx_level", DEFAULT_TX_LEVEL,
                  "transmit power setting (Micromodem pwramp.txlevel): 0 loudest .. 3 quietest",
                  0, 3),
    ParameterSpec("capture_margin_db", 0.0,
                  "capture rule: a packet arriving while the receiver is locked takes it over "
                  "when this much stronger, dB; 0: never (the receiver stays locked)",
                  0.0, 100.0),
    ParameterSpec("doppler_tolerance_mps", 0.0,
                  "frames fail when the closing speed of the two modems exceeds this, m/s "
                  "(0: no limit); velocities come from timed positions", 0.0, 100.0),
    ParameterSpec("doppler_loss_at_tolerance_db", DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB,
                  "SINR loss of every frame at a closing speed of doppler_tolerance_mps, dB; "
                  "below it the loss grows with the square of the speed (residual Doppler "
                  "after the modem's compensation). Default 3 dB: a modelling assumption, no "
                  "published Micromodem figure; 0: pass/fail at the limit only", 0.0, 30.0),
    ParameterSpec("carrier_tolerance_hz", DEFAULT_CARRIER_TOLERANCE_HZ,
                  "a packet is demodulated only when its carrier and bandwidth are each within "
                  "this of center_frequency_hz / bandwidth_hz, Hz (a Micromodem decodes only its "
                  "own FC0/BW0); other overlapping packets are interference weighted by band "
                  "overlap", 0.0, 1e5),
    ParameterSpec("isi_tolerance_s", [0.0],
                  "multipath delay spread each rate tolerates, s: one value for every rate or "
                  "one per rate 0..6; signal power arriving later is inter-symbol interference "
                  "(the share of Bellhop's arrivals later than it, else an exponential profile "
                  "of the path's delay spread); 0: no penalty"),
    ParameterSpec("location_source", "static",
                  "'static' (latitude/longitude/depth parameters), 'service' (poll "
                  "read_location with platform_name) or 'topic' (follow modem_location_topic)"),
    ParameterSpec("latitude", 0.0, "static latitude, degrees", -90.0, 90.0),
    ParameterSpec("longitude", 0.0, "static longitude, degrees", -180.0, 180.0),
    ParameterSpec("depth", 10.0, "static depth, m, positive down", 0.0, 12000.0),
    ParameterSpec("platform_name", "", "name passed to read_location (empty: the namespace)"),
    ParameterSpec("location_period_s", 1.0, "read_location polling period (node clock), s",
                  0.01, 3600.0),
    ParameterSpec("detection_threshold_db", -10.0,
                  "minimum in-band SINR of a packet's first segment for it to be detected, dB",
                  -50.0, 50.0),
    ParameterSpec("ping_turnaround_s", 0.25, "delay before a ping reply is sent, s", 0.0, 10.0),
    ParameterSpec("seed", 0, "random seed of the frame draws (mixed with SRC)", 0, 2**31 - 1),
    ParameterSpec("event_period_s", 0.05, "event processing period on the node clock, s",
                  0.001, 10.0),
    ParameterSpec("diagnostics_period_s", 1.0,
                  "period of the counters on /diagnostics (node clock, while anyone "
                  "subscribes), s", 0.01, 3600.0),
    *LOCATION_TOPIC_SPECS,
    MODEM_PROFILE_PARAMETER,
    *PROPAGATION_SPECS,
    *NOISE_SPECS,
    *FADING_SPECS,
]
NAMES = [spec.name for spec in SPECS]
CHOICES = {"location_source": ("static", "service", "topic")}


def validate(values: dict) -> str | None:
    """Pure validator over the merged candidate values: a reason to refuse, or None."""
    reason = (validate_choices(values) or check_modem_profile(values)
              or check_location_topic(values))
    if reason:
        return reason
    try:
        tolerance_table(values["isi_tolerance_s"])
    except ValueError as exc:
        return str(exc)
    for name, allowed in CHOICES.items():
        if values[name] not in allowed:
            return f"{name} must be one of {list(allowed)}, not {values[name]!r}"
    return None


def modem_config(values: dict) -> SimModemConfig:
    capture = values["capture_margin_db"]
    return SimModemConfig(int(values["SRC"]), values["center_frequency_hz"],
                          values["bandwidth_hz"], values["source_level_db"],
                          values["detection_threshold_db"], values["ping_turnaround_s"],
                          int(values["tx_level"]), capture if capture > 0 else math.inf,
                          build_fading(values), values["doppler_tolerance_mps"] or math.inf,
                          tuple(values["isi_tolerance_s"]), values["carrier_tolerance_hz"],
                          values["doppler_loss_at_tolerance_db"])


def static_position(values: dict) -> tuple[float, float, float]:
    return values["latitude"], values["longitude"], values["depth"]


class ModemSimNode(ManagedNode):
    def __init__(self, node_name: str = "modem_sim_node", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, SPECS, validate, self._apply)
        self.counters = collections.Counter()
        self.modem: SimModem | None = None
        self._lock = threading.RLock()  # the ping service runs beside the other callbacks
        self._pings: dict[int, Future] = {}
        self._sound_speed = None  # last accepted SoundSpeedProfile (physics object)
        self.location = ModemLocation(self)
        self.status_cadence = StatusCadence(self, self._publish_diagnostics)
        self.outputs = ModemOutputs()  # the publishers and `reception_observer`

    @property
    def channel(self):
        return None if self.modem is None else self.modem.channel

    @property
    def position(self) -> tuple[float, float, float] | None:
        return None if self.modem is None else self.modem.position

    # ---- parameters -------------------------------------------------------------------
    def _apply(self, values: dict, changed: frozenset) -> None:
        if self.modem is None:
            return
        try:
            with self._lock:
                self._settle()
                if changed & set(PROPAGATION_NAMES):
                    self.modem.channel.propagation = build_propagation(values, self._sound_speed)
                if changed & set(NOISE_NAMES):
                    published = self.modem.channel.noise.published_level_db
                    self.modem.channel.noise = build_noise(values)
                    self.modem.channel.noise.published_level_db = published
                self.modem.set_config(modem_config(values))
                if values["location_source"] == "static":
                    self.modem.set_position(*static_position(values))
                if changed & set(LOCATION_TOPIC_NAMES):
                    self.location.reader = reader_from_values(values)
        except ValueError as exc:  # validated already; keep the node alive regardless
            self.get_logger().error(f"could not apply parameters: {exc}")

    # ---- lifecycle --------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, NAMES)
        try:
            modem = SimModem(modem_config(values), build_propagation(values, None),
                             build_noise(values), seed=values["seed"],
                             profile=modem_profile(values["modem_profile"]),
                             counters=self.counters)
            if values["location_source"] == "static":
                modem.set_position(*static_position(values))
        except ValueError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.modem = modem
        self._create_entities()
        if not self.location.configure(values, self.configured, self._group):
            self.release_resources()
            return TransitionCallbackReturn.FAILURE
        self.get_logger().info(
            f"configured SRC={values['SRC']} fc={values['center_frequency_hz']} Hz "
            f"B={values['bandwidth_hz']} Hz model={values['transmission_loss_model']} "
            f"profile={values['modem_profile']}")
        return TransitionCallbackReturn.SUCCESS

    def _create_entities(self) -> None:
        r = self.configured
        self.outputs.create(r)
        self.status_cadence.forget_publishers()
        self._diagnostics_pub = self.status_cadence.publisher(r, DiagnosticArray, "/diagnostics")
        self._group = MutuallyExclusiveCallbackGroup()
        r.subscription(SimPacket, "/acoustic_channel",
                       shared_callback(SimPacket, self._on_sim_packet), 50,
                       callback_group=self._group, raw=True)
        r.subscription(SoundSpeedProfile, "sound_speed_profile", self._on_sound_speed, 10,
                       callback_group=self._group)
        r.subscription(Float32, "ambient_noise", self._on_ambient_noise, 10,
                       callback_group=self._group)
        r.service(QueueTxPacket, "queue_tx_packet", self._on_queue_tx_packet,
                  callback_group=self._group)
        r.service(PingModem, "ping_modem", self._on_ping_modem,
                  callback_group=ReentrantCallbackGroup())
        # ros_acomms: a message queue without `src` asks the modem (answered once configured)
        r.service(QueryModemSrc, "query_modem_src", self._on_query_modem_src,
                  callback_group=ReentrantCallbackGroup())

    def _on_query_modem_src(self, request, response):
        response.src = int(self.get_parameter("SRC").value)
        return response

    def on_activate(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, ["event_period_s", "location_period_s",
                                         "diagnostics_period_s"])
        self._event_anchor_ns = self.get_clock().now().nanoseconds
        self._event_timer = self.activated.timer(values["event_period_s"], self._on_event_timer,
                                                 callback_group=self._group)
        self.status_cadence.start(self.activated, values["diagnostics_period_s"],
                                  callback_group=self._group)
        if self.location.client is not None:
            self.activated.timer(values["location_period_s"], self.location.poll,
                                 callback_group=self._group)
            self.location.poll()
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._event_timer = None
        self.status_cadence.stop()
        return super().on_deactivate(state)

    def on_release(self) -> None:
        """The modem goes (ManagedNode releases the entities); pending pings time out."""
        self._event_timer = None
        self.status_cadence.release()
        self.location.release()
        with self._lock:
            self.modem = None
            pings, self._pings = self._pings, {}
        for future in pings.values():
            if not future.done():
                future.set_result(None)

    def diagnostic_counters(self) -> dict:
        """The counters, plus the Bellhop model's runs and cache hits when it is the model."""
        with self._lock:
            self._settle()
            counters = dict(self.counters)
            model = None if self.modem is None else self.modem.channel.propagation.model
        if hasattr(model, "cache_hits"):
            counters.update(bellhop_runs=model.runs, bellhop_cache_hits=model.cache_hits)
        return counters

    def _publish_diagnostics(self) -> None:
        if not listened(self._diagnostics_pub):
            return
        counters = self.diagnostic_counters()
        level, message = self.location.status()
        self._diagnostics_pub.publish(counters_diagnostics(
            f"{self.get_fully_qualified_name()}: simulated modem", message, counters,
            self.get_clock().now().to_msg(), level))

    # ---- events -----------------------------------------------------------------------
    def _on_event_timer(self) -> None:
        with self._lock:
            if self.modem is None:
                return
            events = self.modem.advance(now_s(self))
        self._publish(events)

    def _publish(self, events: list) -> None:
        for event in self.outputs.publish(events, self.get_clock().now().to_msg()):
            if isinstance(event, (PingReplied, PingTimedOut)):
                future = self._pings.pop(event.ping_id, None)
                if future is not None and not future.done():
                    future.set_result(event if isinstance(event, PingReplied) else None)
            elif isinstance(event, ModemProblem):
                self.get_logger().error(event.message)
        self._schedule_events()

    def _event_grid(self) -> TimeGrid:
        """The event timer's poll times: from its activation, every event_period_s."""
        return TimeGrid(self._event_anchor_ns,
                        seconds_to_ns(self.get_parameter("event_period_s").value))

    def _settle(self) -> None:
        """Decide the locks whose event grid time has come, as the wakes this node skips would
        have (`SimModem.settle`): before what decides locks changes, and before the counters
        are read. Under `_lock`."""
        if self.modem is not None and getattr(self, "_event_anchor_ns", None) is not None:
            now_ns = self.get_clock().now().nanoseconds
            self.modem.settle(self._event_grid().latest_at_or_before(now_ns) * 1e-9)

    def _schedule_events(self) -> None:
        """Wake the event timer at the poll time of the modem's next event (idle: cancelled).
        Nobody listening to reception_start, the lock decisions need no wake of their own."""
        timer = getattr(self, "_event_timer", None)
        detections = self.outputs.starts_heard()
        with self._lock:
            next_s = None if self.modem is None else self.modem.next_event_time_s(detections)
        if timer is None:
            return
        if next_s is None:
            timer.cancel()
            return
        now_ns = self.get_clock().now().nanoseconds
        grid = self._event_grid()  # set at activation, as the timer
        deadline = grid_deadline_ns(seconds_to_ns(next_s), now_ns, grid.anchor_ns, grid.period_ns)
        wake_timer_at(timer, deadline, now_ns)

    # ---- sound speed ------------------------------------------------------------------
    def _on_sound_speed(self, msg) -> None:
        try:
            sound_speed = profile_from_msg(msg)
            values = parameter_values(self, PROPAGATION_NAMES)
            if msg.water_depth > 0:
                values["water_depth_m"] = float(msg.water_depth)
            propagation = build_propagation(values, sound_speed)
        except ValueError as exc:
            self.counters["bad_sound_speed_profile"] += 1
            self.get_logger().error(f"sound_speed_profile refused: {exc}")
            return
        with self._lock:
            self._sound_speed = sound_speed
            if self.modem is not None:
                self.modem.channel.propagation = propagation

    def _on_ambient_noise(self, msg: Float32) -> None:
        """A published noise level in the receiver band (dB re 1 uPa) replaces the noise model
        from now on, as in ros_acomms' modem_sim_node."""
        try:
            check_published_level(float(msg.data))
        except ValueError as exc:
            self.counters["bad_ambient_noise"] += 1
            self.get_logger().warning(f"ambient_noise ignored: {exc}",
                                      throttle_duration_sec=5.0)
            return
        with self._lock:
            self.counters["ambient_noise_messages"] += 1
            if self.modem is not None:
                self._settle()
                self.modem.channel.noise.published_level_db = float(msg.data)

    # ---- services and the channel -----------------------------------------------------
    def _on_queue_tx_packet(self, request, response):
        response.success = False
        response.position_in_queue = -1
        if not is_active(self) or self.modem is None:
            self.counters["tx_refused_inactive"] += 1
            self.get_logger().warning("queue_tx_packet refused: node is not active")
            return response
        try:
            with self._lock:
                result = self.modem.queue_packet(
                    messages.packet_from_msg(request.packet), now_s(self),
                    float(request.requested_src_level_db), bool(request.insert_at_head))
        except ValueError as exc:
            self.get_logger().warning(f"queue_tx_packet refused: {exc}")
            return response
        response.success = True
        response.position_in_queue = result.position_in_queue
        response.actual_src_level_db = result.source_level_db
        self._publish(result.events)
        return response

    def _on_sim_packet(self, msg: SimPacket) -> None:
        if self.modem is None or not is_active(self):
            return
        try:
            with self._lock:
                self.modem.on_channel_packet(messages.sim_packet_from_msg(msg), now_s(self))
        except Exception as exc:  # bad message or model failure: counted, reported, keep running
            self.get_logger().warning(f"SimPacket from SRC {msg.packet.src} ignored: {exc}",
                                      throttle_duration_sec=5.0)
        self._schedule_events()

    async def _on_ping_modem(self, request, response):
        response.timed_out = True
        if not is_active(self) or self.position is None:
            self.counters["ping_refused"] += 1
            self.get_logger().warning("ping_modem refused: node inactive or position unknown")
            return response
        future = Future()
        try:
            with self._lock:
                ping_id, events = self.modem.ping(int(request.dest), int(request.rate),
                                                  bytes(request.hexdata),
                                                  float(request.timeout_sec), now_s(self))
                self._pings[ping_id] = future
        except ValueError as exc:
            self.get_logger().warning(f"ping_modem refused: {exc}")
            return response
        self._publish(events)
        reply = await future
        if reply is None:
            return response
        response.timed_out = False
        response.one_way_travel_time = float(reply.one_way_travel_time_s)
        response.tat = reply.tat_s
        response.txlevel = reply.tx_level
        response.cst = messages.cst_to_msg(reply.cst)
        return response


def main(args=None) -> int:
    return run_node(ModemSimNode, args)


if __name__ == "__main__":
    sys.exit(main())
