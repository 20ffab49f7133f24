"""modem_sim_node: one simulated acoustic modem with the driver's ROS interface.

Serves `queue_tx_packet` and `ping_modem`; publishes `packet_rx` (ReceivedPacket), `transmit`
(TransmittedPacket with XST), `cst` and `reception_events` (SimReceptionEvent: one per in-band
arrival with its outcome — received, partial, frame_errors, undetected, half_duplex — SNR and
whether it collided, so losses can be accounted for); shares the global `/acoustic_channel`
(SimPacket) with every other simulated modem. Receptions are evaluated in-process with the ROS-free
channel library (`acomms_sim.physics.channel`): arrival at transmit time + slant range / sound
speed, reported once the packet has fully arrived (+ duration), half duplex, collisions as
interference, seeded FER draws, partial packets with valid-byte lists. All timing uses the node
clock, so with `use_sim_time` a network runs as fast as the sim clock goes.

Events (queued transmissions, completed receptions, ping timeouts) are processed by a timer every
`event_period_s` of node-clock time; the physics uses exact event times (CST.toa is the exact
arrival time), only the publication can lag by up to one period. SRC must be unique per channel:
a modem ignores SimPackets carrying its own SRC.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import sys

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.task import Future

from acomms_core.modems.modem_rates import rate_info
from acomms_core.ros.ros_support import (
    ParameterSpec,
    declare_parameters,
    destroy_entities,
    parameter_values,
    run_node,
)
from acomms_interfaces.msg import (
    CST,
    XST,
    Packet,
    PingReply,
    ReceivedPacket,
    SimPacket,
    SimReceptionEvent,
    SoundSpeedProfile,
    TransmittedPacket,
)
from acomms_interfaces.srv import GetPlatformLocation, PingModem, QueueTxPacket
from acomms_sim.nodes.sim_node_support import (
    NOISE_NAMES,
    NOISE_SPECS,
    PROPAGATION_NAMES,
    PROPAGATION_SPECS,
    build_noise,
    build_propagation,
    profile_from_msg,
    seconds_to_duration_msg,
    seconds_to_time_msg,
    stamp_seconds,
    validate_choices,
)
from acomms_sim.physics import geodesy
from acomms_sim.physics.channel import ReceiverChannel, Reception, Transmission
from acomms_sim.physics.packet_performance import PacketPerformance, check_packet_size

CST_PACKET_TYPE = {Packet.PACKET_TYPE_FSK: 1, Packet.PACKET_TYPE_LEGACY_PSK: 3,
                   Packet.PACKET_TYPE_FDP: 5}

SPECS = [
    ParameterSpec("SRC", 0, "modem address of this simulated modem (unique on the channel)",
                  0, 255),
    ParameterSpec("center_frequency_hz", 10000.0, "carrier centre frequency, Hz", 100.0, 1e6),
    ParameterSpec("bandwidth_hz", 5000.0, "signal bandwidth, Hz", 10.0, 1e5),
    ParameterSpec("source_level_db", 185.0,
                  "source level when a request gives none (requested_src_level_db <= 0), "
                  "dB re 1 uPa @ 1 m", 100.0, 240.0),
    ParameterSpec("location_source", "static",
                  "'static' (latitude/longitude/depth parameters) or 'service' (poll "
                  "read_location with platform_name)"),
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
    *PROPAGATION_SPECS,
    *NOISE_SPECS,
]
CHOICES = {"location_source": ("static", "service")}


@dataclasses.dataclass
class QueuedTx:
    packet: Packet
    source_level_db: float
    fdp: bool
    ping_type: int = SimPacket.PING_TYPE_NONE
    ping_transaction_start: object = None
    ping_reply: PingReply | None = None
    on_start: object = None  # called with the exact start time once the packet is on the water
    not_before_s: float = -math.inf  # queue time, or the earliest time a ping reply may start


@dataclasses.dataclass
class PingTransaction:
    future: Future
    start_s: float
    deadline_s: float
    request_duration_s: float
    dest: int


class ModemSimNode(LifecycleNode):
    def __init__(self, node_name: str = "modem_sim_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self.values = declare_parameters(self, SPECS, self._validate)
        self.add_post_set_parameters_callback(self._after_set)
        self.channel: ReceiverChannel | None = None
        self.position: tuple[float, float, float] | None = None
        self.tx_queue: collections.deque[QueuedTx] = collections.deque()
        self.busy_until_s = -math.inf
        self.pings: dict[float, PingTransaction] = {}
        self.counters = collections.Counter()
        self._entities = []
        self._profile = None
        self._timers = []

    # ---- parameters -------------------------------------------------------------------
    def _validate(self, change: dict) -> str | None:
        reason = validate_choices(change)
        if reason:
            return reason
        for name, allowed in CHOICES.items():
            if name in change and change[name] not in allowed:
                return f"{name} must be one of {list(allowed)}, not {change[name]!r}"
        return None

    def _after_set(self, parameters) -> None:
        names = {p.name for p in parameters}
        self.values.update({p.name: p.value for p in parameters})
        if self.channel is None:
            return
        try:
            if names & set(PROPAGATION_NAMES):
                self.channel.propagation = build_propagation(self.values, self._profile)
            if names & set(NOISE_NAMES):
                self.channel.noise = build_noise(self.values)
            self.channel.center_frequency_hz = self.values["center_frequency_hz"]
            self.channel.bandwidth_hz = self.values["bandwidth_hz"]
            self.channel.detection_threshold_db = self.values["detection_threshold_db"]
            if self.values["location_source"] == "static":
                self._set_static_position()
        except ValueError as exc:  # validated already; keep the node alive regardless
            self.get_logger().error(f"could not apply parameters: {exc}")

    def _set_static_position(self) -> None:
        position = (self.values["latitude"], self.values["longitude"], self.values["depth"])
        geodesy.check_position(*position)
        self.position = position

    def now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # ---- lifecycle --------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        self.values = parameter_values(self, [s.name for s in SPECS])
        try:
            propagation = build_propagation(self.values, None)
            noise = build_noise(self.values)
            if self.values["location_source"] == "static":
                self._set_static_position()
        except ValueError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.channel = ReceiverChannel(
            propagation, noise, PacketPerformance([self.values["seed"], self.values["SRC"]]),
            self.values["center_frequency_hz"], self.values["bandwidth_hz"],
            self.values["detection_threshold_db"])
        self.rx_pub = self.create_lifecycle_publisher(ReceivedPacket, "packet_rx", 10)
        self.tx_pub = self.create_lifecycle_publisher(TransmittedPacket, "transmit", 10)
        self.cst_pub = self.create_lifecycle_publisher(CST, "cst", 10)
        self.event_pub = self.create_lifecycle_publisher(SimReceptionEvent, "reception_events",
                                                         50)
        self.channel_pub = self.create_lifecycle_publisher(SimPacket, "/acoustic_channel", 50)
        self._group = MutuallyExclusiveCallbackGroup()
        self._entities = [
            self.create_subscription(SimPacket, "/acoustic_channel", self._on_sim_packet, 50,
                                     callback_group=self._group),
            self.create_subscription(SoundSpeedProfile, "sound_speed_profile", self._on_profile,
                                     10, callback_group=self._group),
            self.create_service(QueueTxPacket, "queue_tx_packet", self._on_queue_tx_packet,
                                callback_group=self._group),
            self.create_service(PingModem, "ping_modem", self._on_ping_modem,
                                callback_group=ReentrantCallbackGroup()),
        ]
        self.location_client = None
        if self.values["location_source"] == "service":
            self.location_client = self.create_client(GetPlatformLocation, "read_location")
        self.get_logger().info(
            f"configured SRC={self.values['SRC']} fc={self.values['center_frequency_hz']} Hz "
            f"B={self.values['bandwidth_hz']} Hz model={self.values['transmission_loss_model']}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._timers = [self.create_timer(self.values["event_period_s"], self._on_event_timer,
                                          callback_group=self._group)]
        if self.location_client is not None:
            self._timers.append(self.create_timer(self.values["location_period_s"],
                                                  self._poll_location,
                                                  callback_group=self._group))
            self._poll_location()
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        for timer in self._timers:
            self.destroy_timer(timer)
        self._timers = []
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        destroy_entities(self, self._entities)
        if self.location_client is not None:
            self.destroy_client(self.location_client)
        for pub in (self.rx_pub, self.tx_pub, self.cst_pub, self.channel_pub, self.event_pub):
            self.destroy_lifecycle_publisher(pub)
        self._entities = []
        self.channel = None
        self.tx_queue.clear()
        return TransitionCallbackReturn.SUCCESS

    @property
    def active(self) -> bool:
        return self._state_machine.current_state[1] == "active"

    # ---- location ---------------------------------------------------------------------
    def _poll_location(self) -> None:
        if not self.location_client.service_is_ready():
            self.counters["location_service_unavailable"] += 1
            return
        name = self.values["platform_name"] or self.get_namespace().strip("/")
        future = self.location_client.call_async(GetPlatformLocation.Request(name=name))
        future.add_done_callback(self._on_location)

    def _on_location(self, future) -> None:
        response = future.result()
        if response is None or not response.valid:
            self.counters["location_unknown"] += 1
            return
        position = (response.latitude, response.longitude, float(response.depth))
        try:
            geodesy.check_position(*position)
        except ValueError as exc:
            self.counters["location_invalid"] += 1
            self.get_logger().warning(f"read_location gave a bad position: {exc}")
            return
        self.position = position

    def _on_profile(self, msg) -> None:
        try:
            profile = profile_from_msg(msg)
            values = dict(self.values)
            if msg.water_depth > 0:
                values["water_depth_m"] = float(msg.water_depth)
            propagation = build_propagation(values, profile)
        except ValueError as exc:
            self.counters["bad_sound_speed_profile"] += 1
            self.get_logger().error(f"sound_speed_profile refused: {exc}")
            return
        self._profile = profile
        self.channel.propagation = propagation

    # ---- transmit ---------------------------------------------------------------------
    def _packet_is_fdp(self, packet: Packet) -> bool:
        if packet.packet_type == Packet.PACKET_TYPE_FDP:
            return True
        if packet.packet_type == Packet.PACKET_TYPE_AUTO:
            return rate_info(packet.dataframe_rate).fdp
        if packet.packet_type in (Packet.PACKET_TYPE_FSK, Packet.PACKET_TYPE_LEGACY_PSK):
            return False
        raise ValueError(f"unknown packet_type {packet.packet_type}")

    def _check_packet(self, packet: Packet) -> bool:
        """Returns whether the packet is FDP; ValueError with the reason when it cannot be sent."""
        fdp = self._packet_is_fdp(packet)
        check_packet_size(fdp, packet.miniframe_rate, packet.dataframe_rate,
                          len(packet.miniframe_bytes), len(packet.dataframe_bytes))
        Transmission(0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, fdp, packet.miniframe_rate,
                     packet.dataframe_rate, len(packet.miniframe_bytes),
                     len(packet.dataframe_bytes))  # raises for rate/duration problems
        return fdp

    def _on_queue_tx_packet(self, request, response):
        response.success = False
        response.position_in_queue = -1
        if not self.active:
            self.counters["tx_refused_inactive"] += 1
            self.get_logger().warning("queue_tx_packet refused: node is not active")
            return response
        try:
            fdp = self._check_packet(request.packet)
        except ValueError as exc:
            self.counters["tx_refused_bad_packet"] += 1
            self.get_logger().warning(f"queue_tx_packet refused: {exc}")
            return response
        if self.position is None:
            self.counters["tx_refused_no_position"] += 1
            self.get_logger().warning("queue_tx_packet refused: position not known yet")
            return response
        level = (request.requested_src_level_db if request.requested_src_level_db > 0
                 else self.values["source_level_db"])
        packet = request.packet
        packet.src = int(self.values["SRC"])
        item = QueuedTx(packet, float(level), fdp, not_before_s=self.now_s())
        if request.insert_at_head:
            self.tx_queue.appendleft(item)
            response.position_in_queue = 0
        else:
            self.tx_queue.append(item)
            response.position_in_queue = len(self.tx_queue) - 1
        response.success = True
        response.actual_src_level_db = float(level)
        self._start_queued(self.now_s())
        return response

    def _start_queued(self, now_s: float) -> None:
        """Start the next queued packet once the modem is free.

        A packet queued behind another starts exactly when the previous one ends, even though
        the event timer notices that up to one event period later (the SimPacket carries the
        exact start time, and receivers use it).
        """
        while self.tx_queue:
            start = max(self.busy_until_s, self.tx_queue[0].not_before_s)
            if start > now_s:
                return
            self._transmit(self.tx_queue.popleft(), start)

    def _transmit(self, item: QueuedTx, start_s: float) -> Transmission:
        lat, lon, depth = self.position
        packet = item.packet
        tx = Transmission(int(self.values["SRC"]), start_s, lat, lon, depth, item.source_level_db,
                          self.values["center_frequency_hz"], self.values["bandwidth_hz"],
                          item.fdp, packet.miniframe_rate, packet.dataframe_rate,
                          len(packet.miniframe_bytes), len(packet.dataframe_bytes))
        self.busy_until_s = tx.end_s
        self.channel.add_own_transmission(tx.start_s, tx.end_s)
        if item.ping_type == SimPacket.PING_TYPE_REQUEST:
            item.ping_transaction_start = seconds_to_time_msg(start_s)
        if item.on_start is not None:
            item.on_start(start_s)
        msg = SimPacket(src_latitude=lat, src_longitude=lon, src_depth=float(depth),
                        src_tx_level_db=item.source_level_db,
                        center_frequency_hz=float(self.values["center_frequency_hz"]),
                        bandwidth_hz=float(self.values["bandwidth_hz"]),
                        transmit_time=seconds_to_time_msg(start_s),
                        transmit_duration=seconds_to_duration_msg(tx.duration_s),
                        packet=packet, ping_type=item.ping_type)
        if item.ping_transaction_start is not None:
            msg.ping_transaction_start = item.ping_transaction_start
        if item.ping_reply is not None:
            msg.ping_reply = item.ping_reply
        self.channel_pub.publish(msg)
        frames = len(tx.segments(start_s)) - (1 if item.fdp else 0)
        xst = XST(version_number=6, time=seconds_to_time_msg(start_s), mode=0,
                  bandwidth=int(self.values["bandwidth_hz"]),
                  carrier=int(self.values["center_frequency_hz"]),
                  actual_carrier=int(self.values["center_frequency_hz"]),
                  rate_num=packet.dataframe_rate, src=packet.src, dest=packet.dest, ack=0,
                  num_frames_expected=frames, num_frames_sent=frames,
                  packet_type=CST_PACKET_TYPE.get(packet.packet_type, 5 if item.fdp else 3),
                  nbytes=len(packet.miniframe_bytes) + len(packet.dataframe_bytes))
        transmitted = TransmittedPacket(packet=packet, xst=xst)
        transmitted.header.stamp = self.get_clock().now().to_msg()
        self.tx_pub.publish(transmitted)
        self.counters["transmitted"] += 1
        return tx

    # ---- receive ----------------------------------------------------------------------
    def _on_sim_packet(self, msg: SimPacket) -> None:
        if self.channel is None or not self.active:
            return
        if msg.packet.src == self.values["SRC"]:
            return  # our own transmission
        if self.position is None:
            self.counters["rx_dropped_no_position"] += 1
            return
        try:
            fdp = self._packet_is_fdp(msg.packet)
            tx = Transmission(msg.packet.src, stamp_seconds(msg.transmit_time), msg.src_latitude,
                              msg.src_longitude, float(msg.src_depth),
                              float(msg.src_tx_level_db), float(msg.center_frequency_hz),
                              float(msg.bandwidth_hz), fdp, msg.packet.miniframe_rate,
                              msg.packet.dataframe_rate, len(msg.packet.miniframe_bytes),
                              len(msg.packet.dataframe_bytes),
                              duration_s=stamp_seconds(msg.transmit_duration), payload=msg)
            self.channel.add_transmission(tx, self.position)
        except Exception as exc:  # bad message or model failure: count and report, keep running
            self.counters["rx_bad_sim_packet"] += 1
            self.get_logger().warning(f"SimPacket from SRC {msg.packet.src} ignored: {exc}",
                                      throttle_duration_sec=5.0)

    def _on_event_timer(self) -> None:
        if self.channel is None:
            return
        now = self.now_s()
        self._start_queued(now)
        for reception in self.channel.pop_due(now):
            try:
                self._report(reception)
            except Exception as exc:  # never let one reception kill the node
                self.counters["rx_report_errors"] += 1
                self.get_logger().error(f"reporting a reception failed: {exc}")
        for key, ping in list(self.pings.items()):
            if now >= ping.deadline_s:
                del self.pings[key]
                if not ping.future.done():
                    ping.future.set_result(None)

    def _cst(self, reception: Reception) -> CST:
        arrival = reception.arrival
        packet = arrival.transmission.payload.packet
        frames = reception.frames
        data_ok = frames.frame_success if frames else []
        bad = sum(not ok for ok in data_ok) + sum(not ok for ok in
                                                  (frames.miniframe_success if frames else []))
        rl = arrival.receive_level_db
        return CST(version_number=6, mode=0 if bad == 0 else 1,
                   toa=seconds_to_time_msg(arrival.start_s), rate_num=packet.miniframe_rate,
                   src=packet.src, dest=packet.dest, psk_error=0 if bad == 0 else 3,
                   packet_type=CST_PACKET_TYPE.get(
                       packet.packet_type, 5 if arrival.transmission.fdp else 3),
                   num_frames=len(data_ok), bad_frames_num=sum(not ok for ok in data_ok),
                   snr_rss=int(round(rl)), mfd_spl=int(round(rl)),
                   snr_in=float(reception.snr_db), snr_out=float(reception.snr_db),
                   noise=int(round(reception.noise_db)),
                   carrier=int(arrival.transmission.center_frequency_hz),
                   bandwidth=int(arrival.transmission.bandwidth_hz),
                   data_rate=packet.dataframe_rate, num_data_frames=len(data_ok),
                   num_bad_data_frames=sum(not ok for ok in data_ok))

    def _reception_event(self, reception: Reception) -> SimReceptionEvent:
        arrival = reception.arrival
        tx = arrival.transmission
        sim_packet = tx.payload
        frames = reception.frames
        num_frames = len(tx.segments(arrival.start_s))
        if reception.outcome != "received":
            outcome, bad = reception.outcome, num_frames
        else:
            results = list(frames.miniframe_success) + list(frames.frame_success)
            bad = sum(not ok for ok in results)
            outcome = (SimReceptionEvent.OUTCOME_RECEIVED if bad == 0 else
                       SimReceptionEvent.OUTCOME_FRAME_ERRORS if bad == len(results) else
                       SimReceptionEvent.OUTCOME_PARTIAL)
        event = SimReceptionEvent(
            receiver_src=int(self.values["SRC"]), src=int(sim_packet.packet.src),
            dest=int(sim_packet.packet.dest), outcome=outcome,
            collided=reception.interference_db > -math.inf, ping_type=int(sim_packet.ping_type),
            transmit_time=seconds_to_time_msg(tx.start_s),
            arrival_time=seconds_to_time_msg(arrival.start_s),
            duration=seconds_to_duration_msg(tx.duration_s),
            snr_db=float(reception.snr_db), receive_level_db=float(arrival.receive_level_db),
            noise_db=float(reception.noise_db), interference_db=float(reception.interference_db),
            transmission_loss_db=float(arrival.transmission_loss_db),
            slant_range_m=float(arrival.slant_range_m), num_frames=num_frames,
            num_bad_frames=bad, num_bytes=tx.num_miniframe_bytes + tx.num_dataframe_bytes)
        event.header.stamp = self.get_clock().now().to_msg()
        return event

    def _report(self, reception: Reception) -> None:
        self.counters[f"rx_{reception.outcome}"] += 1
        self.event_pub.publish(self._reception_event(reception))
        if reception.outcome != "received":
            return
        sim_packet = reception.arrival.transmission.payload
        cst = self._cst(reception)
        self.cst_pub.publish(cst)
        frames = reception.frames
        if sim_packet.ping_type != SimPacket.PING_TYPE_NONE:
            self._on_ping_packet(reception, cst)
            return
        if not (reception.minibytes_valid or reception.databytes_valid):
            if len(frames.miniframe_success) + len(frames.frame_success) > 0:
                self.counters["rx_all_frames_bad"] += 1
                return
        packet = Packet(src=sim_packet.packet.src, dest=sim_packet.packet.dest,
                        packet_type=sim_packet.packet.packet_type,
                        miniframe_rate=sim_packet.packet.miniframe_rate,
                        dataframe_rate=sim_packet.packet.dataframe_rate,
                        miniframe_bytes=_keep_valid(sim_packet.packet.miniframe_bytes,
                                                    reception.minibytes_valid),
                        dataframe_bytes=_keep_valid(sim_packet.packet.dataframe_bytes,
                                                    reception.databytes_valid))
        msg = ReceivedPacket(packet=packet, minibytes_valid=reception.minibytes_valid,
                             databytes_valid=reception.databytes_valid, cst=cst)
        msg.header.stamp = self.get_clock().now().to_msg()
        self.rx_pub.publish(msg)

    # ---- ping -------------------------------------------------------------------------
    async def _on_ping_modem(self, request, response):
        response.timed_out = True
        if not self.active or self.position is None:
            self.counters["ping_refused"] += 1
            self.get_logger().warning("ping_modem refused: node inactive or position unknown")
            return response
        packet = Packet(src=int(self.values["SRC"]), dest=int(request.dest),
                        packet_type=Packet.PACKET_TYPE_FDP, miniframe_rate=int(request.rate),
                        dataframe_rate=int(request.rate),
                        miniframe_bytes=bytes(request.hexdata[:32]))
        try:
            self._check_packet(packet)
        except ValueError as exc:
            self.counters["ping_refused"] += 1
            self.get_logger().warning(f"ping_modem refused: {exc}")
            return response
        future = Future()
        duration = rate_info(request.rate).miniframe_duration_s
        timeout = max(1.0, float(request.timeout_sec))

        def on_start(start_s: float) -> None:
            key = stamp_seconds(seconds_to_time_msg(start_s))
            self.pings[key] = PingTransaction(future, start_s, start_s + timeout, duration,
                                              int(request.dest))

        self.tx_queue.appendleft(QueuedTx(packet, float(self.values["source_level_db"]), True,
                                          SimPacket.PING_TYPE_REQUEST, on_start=on_start,
                                          not_before_s=self.now_s()))
        self._start_queued(self.now_s())
        reply = await future
        if reply is None:
            self.counters["ping_timeouts"] += 1
            return response
        reception, cst, ping_reply, start = reply
        owtt = (reception.arrival.start_s - start - duration - ping_reply.tat) / 2.0
        response.timed_out = False
        response.one_way_travel_time = float(owtt)
        response.tat = ping_reply.tat
        response.txlevel = ping_reply.tx_level
        response.cst = cst
        return response

    def _on_ping_packet(self, reception: Reception, cst: CST) -> None:
        sim_packet = reception.arrival.transmission.payload
        me = self.values["SRC"]
        if sim_packet.packet.dest != me:
            return
        if sim_packet.ping_type == SimPacket.PING_TYPE_REQUEST:
            reply_packet = Packet(src=me, dest=sim_packet.packet.src,
                                  packet_type=Packet.PACKET_TYPE_FDP,
                                  miniframe_rate=sim_packet.packet.miniframe_rate,
                                  dataframe_rate=sim_packet.packet.dataframe_rate)
            tat = float(self.values["ping_turnaround_s"])
            ping_reply = PingReply(src=me, dest=sim_packet.packet.src, tat=tat,
                                   snr_in=cst.snr_in, snr_out=cst.snr_out, cst=cst)
            # reply tat seconds after the request has fully arrived
            item = QueuedTx(reply_packet, float(self.values["source_level_db"]), True,
                            SimPacket.PING_TYPE_REPLY, sim_packet.ping_transaction_start,
                            ping_reply, not_before_s=reception.arrival.end_s + tat)
            self.tx_queue.appendleft(item)
            self.counters["ping_replies_sent"] += 1
        elif sim_packet.ping_type == SimPacket.PING_TYPE_REPLY:
            key = stamp_seconds(sim_packet.ping_transaction_start)
            ping = self.pings.pop(key, None)
            if ping is not None and not ping.future.done():
                ping.future.set_result((reception, cst, sim_packet.ping_reply, ping.start_s))


def _keep_valid(data, ranges: list[int]) -> bytes:
    """The bytes inside the valid [start, end) ranges; bytes of failed frames are zeroed."""
    out = bytearray(len(data))
    for start, end in zip(ranges[0::2], ranges[1::2], strict=True):
        out[start:end] = bytes(data[start:end])
    return bytes(out)


def main(args=None) -> int:
    return run_node(ModemSimNode, args)


if __name__ == "__main__":
    sys.exit(main())
