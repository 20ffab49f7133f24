"""One simulated acoustic modem, ROS-free: transmit queue, half duplex, pings, receptions.

`SimModem` is what `modem_sim_node` (and later a discrete-event network simulator) drives. It works
on plain time in seconds and the plain data of `acomms_sim.modem.fields`, and returns events that
the caller turns into messages:

    modem = SimModem(config, propagation, noise, seed=0, profile=modem_profile("micromodem2"))
    modem.set_position(lat, lon, depth_m)
    result = modem.queue_packet(packet, now_s)        # QueueResult; PacketRefused / ValueError
    ping_id, events = modem.ping(dest, rate, payload, timeout_s, now_s)
    modem.on_channel_packet(channel_packet, now_s)    # another modem's transmission
    events = modem.advance(now_s)                     # everything due by now_s, in order
    modem.next_event_time_s()                         # when advance() next has work (or None)

Events: `TransmissionStarted` (announce on the channel, report with its XST), `ReceptionStarted`
(the receiver locked onto an arriving packet: its first sound plus the detection window has
arrived; a Micromodem's $CARXP), `ReceptionEvent` (every in-band arrival, once it ended),
`CstReport` (every detected packet), `PacketReceived` (data with valid bytes), `PingReplied` /
`PingTimedOut` (the answer to `ping`), `ModemProblem` (log it).

Rules (as before in the node): a packet starts once the modem is free and not before it was queued
(a queued-behind packet starts exactly when the previous one ends, whenever `advance` notices);
receptions are evaluated by the channel library (`acomms_sim.physics.channel`) once fully arrived;
a ping request addressed to this modem is answered `ping_turnaround_s` after it fully arrived;
packet kinds, sizes and on-air times come from the modem profile. A modem ignores channel packets
carrying its own SRC.
"""

from __future__ import annotations

import collections
import dataclasses
import math

from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.modem_rates import DEFAULT_TX_LEVEL
from acomms_core.modems.profile import PACKET_TYPE_FDP, ModemProfile
from acomms_sim.modem.fields import (
    PING_TYPE_NONE,
    PING_TYPE_REPLY,
    PING_TYPE_REQUEST,
    ChannelPacket,
    CstFields,
    CstReport,
    ModemEvent,
    ModemPacket,
    ModemProblem,
    PacketReceived,
    PingReplied,
    PingReplyFields,
    PingTimedOut,
    ReceptionEvent,
    ReceptionStarted,
    TransmissionStarted,
    XstFields,
    cst_packet_type,
)
from acomms_sim.physics import geodesy
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import (
    DEFAULT_CARRIER_TOLERANCE_HZ,
    ReceiverChannel,
    Reception,
    Transmission,
)
from acomms_sim.physics.doppler import DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB
from acomms_sim.physics.fading import FadingModel
from acomms_sim.physics.multipath import tolerance_table
from acomms_sim.physics.packet_performance import PacketPerformance
from acomms_sim.physics.transmission_loss import Propagation

CST_VERSION = 6
PING_MATCH_TOLERANCE_S = 1e-6  # a reply's transaction start went through message stamps (ns)
MAX_PING_PAYLOAD_BYTES = 32


@dataclasses.dataclass(frozen=True)
class SimModemConfig:
    src: int
    center_frequency_hz: float = 10000.0
    bandwidth_hz: float = 5000.0
    source_level_db: float = 0.0  # used when a request gives none (<= 0); <= 0: the profile's
    detection_threshold_db: float = -10.0  # level for tx_level in this band
    ping_turnaround_s: float = 0.25
    tx_level: int = DEFAULT_TX_LEVEL  # pwramp.txlevel 0 (loudest) .. 3
    capture_margin_db: float = math.inf  # capture rule of the receiver (channel module)
    fading: FadingModel = FadingModel()
    doppler_tolerance_mps: float = math.inf  # frames fail beyond this closing speed
    isi_tolerance_s: tuple[float, ...] = (0.0,)  # per rate 0..6 (or one for all); 0: no ISI
    carrier_tolerance_hz: float = DEFAULT_CARRIER_TOLERANCE_HZ  # decode only a matching carrier
    doppler_loss_at_tolerance_db: float = DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB  # physics.doppler

    def default_source_level_db(self, profile: ModemProfile) -> float:
        if self.source_level_db > 0:
            return float(self.source_level_db)
        return profile.source_level_db(self.tx_level, self.center_frequency_hz)


@dataclasses.dataclass
class QueueResult:
    position_in_queue: int
    source_level_db: float
    events: list  # transmissions that started at once


@dataclasses.dataclass
class _QueuedTx:
    packet: ModemPacket
    source_level_db: float
    fdp: bool
    not_before_s: float  # queue time, or the earliest time a ping reply may start
    ping_type: int = PING_TYPE_NONE
    ping_transaction_start_s: float = 0.0
    ping_reply: PingReplyFields | None = None
    ping_id: int | None = None


@dataclasses.dataclass
class _Ping:
    timeout_s: float
    start_s: float | None = None  # set when the request goes on the water
    duration_s: float = 0.0

    @property
    def deadline_s(self) -> float | None:
        return None if self.start_s is None else self.start_s + self.timeout_s


class SimModem:
    def __init__(self, config: SimModemConfig, propagation: Propagation, noise: AmbientNoise, *,
                 seed: int = 0, profile: ModemProfile = MICROMODEM2,
                 counters: collections.Counter | None = None):
        self.config = config
        self.profile = profile
        self.channel = ReceiverChannel(propagation, noise, PacketPerformance([seed, config.src]),
                                       config.center_frequency_hz, config.bandwidth_hz,
                                       config.detection_threshold_db,
                                       capture_margin_db=config.capture_margin_db,
                                       fading=config.fading,
                                       doppler_tolerance_mps=config.doppler_tolerance_mps,
                                       isi_tolerance_s=tolerance_table(config.isi_tolerance_s),
                                       carrier_tolerance_hz=config.carrier_tolerance_hz,
                                       doppler_loss_at_tolerance_db=(
                                           config.doppler_loss_at_tolerance_db))
        self.counters = counters if counters is not None else collections.Counter()
        self.position: tuple[float, float, float] | None = None
        self.velocity_mps: tuple[float, float, float] | None = None  # from timed positions
        self._position_time_s: float | None = None
        self._queue: collections.deque[_QueuedTx] = collections.deque()
        self._busy_until_s = -math.inf
        self._pings: dict[int, _Ping] = {}
        self._next_ping_id = 0
        self._started: list[ReceptionStarted] = []  # locks decided by `settle`, not yet reported

    # ---- configuration ------------------------------------------------------------------
    def set_config(self, config: SimModemConfig) -> None:
        """Apply changed settings (the seed of the frame draws stays)."""
        self.config = config
        self.channel.center_frequency_hz = config.center_frequency_hz
        self.channel.bandwidth_hz = config.bandwidth_hz
        self.channel.detection_threshold_db = config.detection_threshold_db
        self.channel.capture_margin_db = config.capture_margin_db
        self.channel.fading = config.fading
        self.channel.doppler_tolerance_mps = config.doppler_tolerance_mps
        self.channel.isi_tolerance_s = tolerance_table(config.isi_tolerance_s)
        self.channel.carrier_tolerance_hz = config.carrier_tolerance_hz
        self.channel.doppler_loss_at_tolerance_db = config.doppler_loss_at_tolerance_db

    def set_position(self, latitude: float, longitude: float, depth_m: float,
                     time_s: float | None = None) -> None:
        """ValueError for an impossible position (the old one stays). With time_s, the velocity
        (for Doppler) is the displacement since the previous timed position over the time."""
        geodesy.check_position(latitude, longitude, depth_m)
        previous, self._position_time_s = (self.position, self._position_time_s), time_s
        self.position = (latitude, longitude, depth_m)
        (old, old_time) = previous
        if time_s is None or old is None or old_time is None or time_s <= old_time:
            return
        east, north, up = geodesy.geodetic_to_enu(
            latitude, longitude, depth_m, geodesy.EnuOrigin(old[0], old[1], -old[2]))
        dt = time_s - old_time
        self.velocity_mps = (east / dt, north / dt, up / dt)

    def check_packet(self, packet: ModemPacket) -> bool:
        """Whether the packet goes out FDP-style; PacketRefused with the reason when it cannot."""
        fdp = self.profile.is_fdp(packet.packet_type, packet.dataframe_rate)
        sizes = (packet.miniframe_rate, packet.dataframe_rate, len(packet.miniframe_bytes),
                 len(packet.dataframe_bytes))
        self.profile.check_packet(fdp, *sizes)
        return fdp

    # ---- transmit -----------------------------------------------------------------------
    def queue_packet(self, packet: ModemPacket, now_s: float, source_level_db: float = 0.0,
                     insert_at_head: bool = False) -> QueueResult:
        """Queue a packet (its src becomes this modem's); ValueError with the reason if refused.

        source_level_db <= 0 means the configured level (or the profile's for tx_level). A
        packet that can start now starts at once: its TransmissionStarted is in the result's
        events."""
        try:
            fdp = self.check_packet(packet)
        except ValueError:
            self.counters["tx_refused_bad_packet"] += 1
            raise
        if self.position is None:
            self.counters["tx_refused_no_position"] += 1
            raise ValueError("position not known yet")
        level = float(source_level_db if source_level_db > 0
                      else self.config.default_source_level_db(self.profile))
        item = _QueuedTx(dataclasses.replace(packet, src=int(self.config.src)), level, fdp,
                         not_before_s=now_s)
        if insert_at_head:
            self._queue.appendleft(item)
            position = 0
        else:
            self._queue.append(item)
            position = len(self._queue) - 1
        return QueueResult(position, level, self._start_queued(now_s))

    def ping(self, dest: int, rate: int, payload: bytes, timeout_s: float,
             now_s: float) -> tuple[int, list[ModemEvent]]:
        """Send a ping request (ahead of queued packets); ValueError with the reason if refused.

        Returns the ping id, answered later by PingReplied or PingTimedOut (timeout_s, at least
        1 s, counted from the request's start), and the events of a transmission that started."""
        packet = ModemPacket(int(self.config.src), int(dest), PACKET_TYPE_FDP, int(rate),
                             int(rate), bytes(payload[:MAX_PING_PAYLOAD_BYTES]))
        try:
            if self.position is None:
                raise ValueError("position not known yet")
            self.check_packet(packet)
        except ValueError:
            self.counters["ping_refused"] += 1
            raise
        ping_id = self._next_ping_id
        self._next_ping_id += 1
        self._pings[ping_id] = _Ping(max(1.0, float(timeout_s)))
        level = self.config.default_source_level_db(self.profile)
        self._queue.appendleft(_QueuedTx(packet, level, True, now_s,
                                         PING_TYPE_REQUEST, ping_id=ping_id))
        return ping_id, self._start_queued(now_s)

    def _start_queued(self, now_s: float) -> list[ModemEvent]:
        """Start queued packets once the modem is free, at the exact time each could start."""
        events = []
        while self._queue:
            start = max(self._busy_until_s, self._queue[0].not_before_s)
            if start > now_s:
                break
            events.append(self._transmit(self._queue.popleft(), start))
        return events

    def _transmit(self, item: _QueuedTx, start_s: float) -> TransmissionStarted:
        lat, lon, depth = self.position
        packet, config = item.packet, self.config
        sizes = (packet.miniframe_rate, packet.dataframe_rate, len(packet.miniframe_bytes),
                 len(packet.dataframe_bytes))
        tx = Transmission(int(config.src), start_s, lat, lon, depth, item.source_level_db,
                          config.center_frequency_hz, config.bandwidth_hz, item.fdp, *sizes,
                          duration_s=self.profile.packet_duration_s(item.fdp, *sizes),
                          velocity_mps=self.velocity_mps)
        self._busy_until_s = tx.end_s
        self.channel.add_own_transmission(tx.start_s, tx.end_s)
        if item.ping_type == PING_TYPE_REQUEST:
            item.ping_transaction_start_s = start_s
            ping = self._pings.get(item.ping_id)
            if ping is not None:
                ping.start_s, ping.duration_s = start_s, tx.duration_s
        channel_packet = ChannelPacket(
            packet, lat, lon, float(depth), item.source_level_db,
            float(config.center_frequency_hz), float(config.bandwidth_hz), start_s,
            tx.duration_s, item.ping_type, item.ping_transaction_start_s, item.ping_reply,
            self.velocity_mps)
        frames = len(tx.segments(start_s)) - (1 if item.fdp else 0)
        xst = XstFields(CST_VERSION, start_s, 0, int(config.bandwidth_hz),
                        int(config.center_frequency_hz), int(config.center_frequency_hz),
                        packet.dataframe_rate, packet.src, packet.dest, 0, frames, frames,
                        cst_packet_type(packet.packet_type, item.fdp),
                        len(packet.miniframe_bytes) + len(packet.dataframe_bytes))
        self.counters["transmitted"] += 1
        return TransmissionStarted(channel_packet, xst)

    # ---- receive ------------------------------------------------------------------------
    def on_channel_packet(self, sim_packet: ChannelPacket, now_s: float) -> None:
        """Another modem's transmission, heard at now_s (its arrival here is planned from its
        transmit time); ValueError (counted) for a packet that cannot be evaluated."""
        packet = sim_packet.packet
        if packet.src == self.config.src:
            return  # our own transmission
        if self.position is None:
            self.counters["rx_dropped_no_position"] += 1
            return
        try:
            fdp = self.profile.is_fdp(packet.packet_type, packet.dataframe_rate)
            tx = Transmission(packet.src, sim_packet.transmit_time_s, sim_packet.src_latitude,
                              sim_packet.src_longitude, sim_packet.src_depth_m,
                              sim_packet.source_level_db, sim_packet.center_frequency_hz,
                              sim_packet.bandwidth_hz, fdp, packet.miniframe_rate,
                              packet.dataframe_rate, len(packet.miniframe_bytes),
                              len(packet.dataframe_bytes), duration_s=sim_packet.duration_s,
                              payload=sim_packet, velocity_mps=sim_packet.src_velocity_mps)
            self.channel.add_transmission(tx, self.position, self.velocity_mps)
        except Exception:
            self.counters["rx_bad_sim_packet"] += 1
            raise

    def settle(self, now_s: float) -> None:
        """Decide the receiver's locks due by now_s (their ReceptionStarted come with the next
        `advance`). A lock is decided by what held at its time whenever this runs, as long as
        the thresholds, band and noise did not change since: a caller that skips the wakes of
        detections (`next_event_time_s(detections=False)`) settles before changing those."""
        for arrival in self.channel.pop_detected(now_s):
            self.counters["rx_detected"] += 1
            self._started.append(reception_started(arrival))

    def advance(self, now_s: float) -> list[ModemEvent]:
        """Everything due by now_s: queued transmissions, detected packets, completed receptions,
        ping timeouts."""
        events = self._start_queued(now_s)
        self.settle(now_s)
        events += self._started
        self._started = []
        for reception in self.channel.pop_due(now_s):
            try:
                events += self._report(reception)
            except Exception as exc:  # never let one reception stop the modem
                self.counters["rx_report_errors"] += 1
                events.append(ModemProblem(f"reporting a reception failed: {exc}"))
        for ping_id, ping in list(self._pings.items()):
            if ping.deadline_s is not None and now_s >= ping.deadline_s:
                del self._pings[ping_id]
                self.counters["ping_timeouts"] += 1
                events.append(PingTimedOut(ping_id))
        return events

    def next_event_time_s(self, detections: bool = True) -> float | None:
        """The earliest time at which advance() has something to do; None when idle. Without
        detections: leaving out the lock decisions, for a caller that does not report reception
        starts (nobody listens) and settles before changing what decides locks: advance decides
        them later exactly as at their time (in order of first sound, see `settle`)."""
        times = [self.channel.next_due_s()]
        if detections or not self.channel.in_order_whenever_decided():
            times.append(self.channel.next_detection_s())
        if self._queue:
            times.append(max(self._busy_until_s, self._queue[0].not_before_s))
        times += [ping.deadline_s for ping in self._pings.values()]
        times = [t for t in times if t is not None]
        return min(times) if times else None

    def _report(self, reception: Reception) -> list[ModemEvent]:
        self.counters[f"rx_{reception.outcome}"] += 1
        events: list[ModemEvent] = [reception_event(reception, int(self.config.src))]
        if reception.outcome != "received":
            return events
        sim_packet: ChannelPacket = reception.arrival.transmission.payload
        cst = cst_fields(reception)
        events.append(CstReport(cst))
        if sim_packet.ping_type != PING_TYPE_NONE:
            return events + self._on_ping_packet(reception, cst)
        frames = reception.frames
        if not (reception.minibytes_valid or reception.databytes_valid):
            if len(frames.miniframe_success) + len(frames.frame_success) > 0:
                self.counters["rx_all_frames_bad"] += 1
                return events
        sent = sim_packet.packet
        packet = dataclasses.replace(
            sent, miniframe_bytes=keep_valid(sent.miniframe_bytes, reception.minibytes_valid),
            dataframe_bytes=keep_valid(sent.dataframe_bytes, reception.databytes_valid))
        events.append(PacketReceived(packet, list(reception.minibytes_valid),
                                     list(reception.databytes_valid), cst))
        return events

    # ---- ping ---------------------------------------------------------------------------
    def _on_ping_packet(self, reception: Reception, cst: CstFields) -> list[ModemEvent]:
        sim_packet: ChannelPacket = reception.arrival.transmission.payload
        me = int(self.config.src)
        if sim_packet.packet.dest != me:
            return []
        if sim_packet.ping_type == PING_TYPE_REQUEST:
            request = sim_packet.packet
            reply = ModemPacket(me, request.src, PACKET_TYPE_FDP, request.miniframe_rate,
                                request.dataframe_rate)
            tat = float(self.config.ping_turnaround_s)
            fields = PingReplyFields(me, request.src, tat, cst.snr_in, cst.snr_out, cst=cst)
            # reply tat seconds after the request has fully arrived
            self._queue.appendleft(_QueuedTx(
                reply, self.config.default_source_level_db(self.profile), True,
                reception.arrival.end_s + tat, PING_TYPE_REPLY,
                sim_packet.ping_transaction_start_s, fields))
            self.counters["ping_replies_sent"] += 1
        elif sim_packet.ping_type == PING_TYPE_REPLY:
            return self._ping_replied(reception, cst, sim_packet)
        return []

    def _ping_replied(self, reception: Reception, cst: CstFields,
                      sim_packet: ChannelPacket) -> list[ModemEvent]:
        start = sim_packet.ping_transaction_start_s
        for ping_id, ping in self._pings.items():
            if ping.start_s is not None and abs(ping.start_s - start) < PING_MATCH_TOLERANCE_S:
                del self._pings[ping_id]
                reply = sim_packet.ping_reply
                owtt = (reception.arrival.start_s - ping.start_s - ping.duration_s
                        - reply.tat_s) / 2.0
                return [PingReplied(ping_id, owtt, reply.tat_s, reply.tx_level, cst)]
        return []


def cst_fields(reception: Reception) -> CstFields:
    """The CST a Micromodem would report for this (detected) reception."""
    arrival = reception.arrival
    packet = arrival.transmission.payload.packet
    frames = reception.frames
    data_ok = frames.frame_success if frames else []
    mini_ok = frames.miniframe_success if frames else []
    bad_data = sum(not ok for ok in data_ok)
    bad = bad_data + sum(not ok for ok in mini_ok)
    level = int(round(arrival.faded_level_db))
    return CstFields(
        version_number=CST_VERSION, mode=0 if bad == 0 else 1, toa_s=arrival.start_s,
        rate_num=packet.miniframe_rate, src=packet.src, dest=packet.dest,
        psk_error=0 if bad == 0 else 3,
        packet_type=cst_packet_type(packet.packet_type, arrival.transmission.fdp),
        num_frames=len(data_ok), bad_frames_num=bad_data, snr_rss=level, mfd_spl=level,
        snr_in=float(reception.snr_db), snr_out=float(reception.snr_db),
        noise=int(round(reception.noise_db)),
        carrier=int(arrival.transmission.center_frequency_hz),
        bandwidth=int(arrival.transmission.bandwidth_hz), data_rate=packet.dataframe_rate,
        num_data_frames=len(data_ok), num_bad_data_frames=bad_data,
        dop=float(arrival.doppler_mps))


def reception_started(arrival) -> ReceptionStarted:
    """The start of a detected arrival (physics.channel.Arrival), as $CARXP announces it."""
    tx = arrival.transmission
    packet = tx.payload.packet
    return ReceptionStarted(
        src=int(packet.src), arrival_time_s=arrival.start_s,
        duration_s=arrival.end_s - arrival.start_s,
        packet_type=cst_packet_type(packet.packet_type, tx.fdp), rate=int(packet.miniframe_rate),
        carrier_hz=int(tx.center_frequency_hz))


def reception_event(reception: Reception, receiver_src: int) -> ReceptionEvent:
    """The accounting record of one arrival: outcome, levels, frames."""
    arrival = reception.arrival
    tx = arrival.transmission
    sim_packet: ChannelPacket = tx.payload
    num_frames = len(tx.segments(arrival.start_s))
    if reception.outcome != "received":
        outcome, bad = reception.outcome, num_frames
    else:
        results = list(reception.frames.miniframe_success) + list(reception.frames.frame_success)
        bad = sum(not ok for ok in results)
        outcome = ("received" if bad == 0 else "frame_errors" if bad == len(results)
                   else "partial")
    return ReceptionEvent(
        receiver_src=receiver_src, src=int(sim_packet.packet.src),
        dest=int(sim_packet.packet.dest), outcome=outcome,
        collided=reception.interference_db > -math.inf, ping_type=int(sim_packet.ping_type),
        transmit_time_s=tx.start_s, arrival_time_s=arrival.start_s, duration_s=tx.duration_s,
        snr_db=float(reception.snr_db), receive_level_db=float(arrival.faded_level_db),
        noise_db=float(reception.noise_db), interference_db=float(reception.interference_db),
        transmission_loss_db=float(arrival.transmission_loss_db),
        slant_range_m=float(arrival.slant_range_m), num_frames=num_frames, num_bad_frames=bad,
        num_bytes=tx.num_miniframe_bytes + tx.num_dataframe_bytes,
        delay_spread_s=float(arrival.delay_spread_s), isi_loss_db=float(reception.isi_loss_db),
        doppler_mps=float(arrival.doppler_mps))


def keep_valid(data: bytes, ranges: list[int]) -> bytes:
    """The bytes inside the valid [start, end) ranges; bytes of failed frames are zeroed."""
    out = bytearray(len(data))
    for start, end in zip(ranges[0::2], ranges[1::2], strict=True):
        out[start:end] = bytes(data[start:end])
    return bytes(out)
