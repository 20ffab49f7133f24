"""SimModem, ROS-free: queue, half duplex, receptions, pings, refusals, next_event_time_s.

`Network` below is a tiny discrete-event driver (what a deterministic clock or netsim builds on):
it jumps straight to the earliest next_event_time_s of all modems and routes every started
transmission to the other modems.
"""

import dataclasses
import math

import pytest

from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.profile import PACKET_TYPE_AUTO, PACKET_TYPE_FDP, PACKET_TYPE_LEGACY_PSK
from acomms_sim.modem.fields import (
    PING_TYPE_REPLY,
    PING_TYPE_REQUEST,
    CstReport,
    ModemPacket,
    PacketReceived,
    PingReplied,
    PingTimedOut,
    ReceptionEvent,
    ReceptionStarted,
    TransmissionStarted,
)
from acomms_sim.modem.sim_modem import SimModem, SimModemConfig
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import DETECTION_WINDOW_S
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.7)
FDP_DURATION_S = MICROMODEM2.packet_duration_s(True, 1, 1, 10, 100)


def make_modem(src, north_m, **config):
    propagation = Propagation(SpreadingModel("spherical", "thorp"),
                              SoundSpeedProfile.constant(1500.0))
    modem = SimModem(SimModemConfig(src, **config), propagation, AmbientNoise("fixed", 50.0),
                     seed=0, profile=MICROMODEM2)
    modem.set_position(*offset_position(*ORIGIN, north_m, 0.0), 20.0)
    return modem


def fdp_packet(dest=2, rate=1, mini=10, data=100, packet_type=PACKET_TYPE_FDP):
    return ModemPacket(0, dest, packet_type, rate, rate, bytes(range(mini)),
                       bytes(i % 256 for i in range(data)))


class Network:
    def __init__(self, *modems):
        self.modems = list(modems)
        self.events = {m.config.src: [] for m in modems}
        self.now_s = 0.0

    def route(self, sender, events):
        self.events[sender.config.src] += events
        for event in events:
            if isinstance(event, TransmissionStarted):
                for modem in self.modems:
                    if modem is not sender:
                        modem.on_channel_packet(event.channel_packet, self.now_s)

    def run_until(self, until_s):
        """Jump from event to event (never polling) until nothing is due before until_s."""
        while True:
            due = [t for t in (m.next_event_time_s() for m in self.modems) if t is not None]
            if not due or min(due) > until_s:
                self.now_s = until_s
                return
            self.now_s = max(self.now_s, min(due))
            for modem in self.modems:
                self.route(modem, modem.advance(self.now_s))

    def of(self, src, kind):
        return [e for e in self.events[src] if isinstance(e, kind)]


def test_packet_arrives_range_over_speed_plus_duration_after_transmit():
    a, b = make_modem(1, 0.0), make_modem(2, 1500.0)
    net = Network(a, b)
    assert a.next_event_time_s() is None and b.next_event_time_s() is None
    net.now_s = 100.0
    result = a.queue_packet(fdp_packet(), 100.0)
    # no level configured: the profile's level for txlevel 3 in the 10 kHz band
    assert (result.position_in_queue, result.source_level_db) == (0, 165.0)
    [started] = result.events
    assert started.channel_packet.transmit_time_s == 100.0
    assert started.channel_packet.duration_s == pytest.approx(FDP_DURATION_S)
    assert started.packet.src == 1  # the modem's own address
    assert (started.xst.num_frames_expected, started.xst.packet_type, started.xst.nbytes) == (
        2, 5, 110)
    net.route(a, result.events)
    # b knows when it detects the packet (1 s travel + the detection window), then when the
    # packet will have fully arrived (+ on-air time)
    assert b.next_event_time_s() == pytest.approx(101.0 + DETECTION_WINDOW_S, abs=1e-3)
    assert b.advance(101.0 + DETECTION_WINDOW_S - 0.01) == []
    [detected] = b.advance(101.0 + DETECTION_WINDOW_S)
    assert detected == ReceptionStarted(1, pytest.approx(101.0, abs=1e-3),
                                        pytest.approx(FDP_DURATION_S, abs=1e-3), 5, 1, 10000)
    assert b.next_event_time_s() == pytest.approx(101.0 + FDP_DURATION_S, abs=1e-3)
    assert b.advance(101.0 + FDP_DURATION_S - 0.01) == []
    net.run_until(200.0)
    [event] = net.of(2, ReceptionEvent)
    assert (event.receiver_src, event.src, event.dest, event.outcome) == (2, 1, 2, "received")
    assert event.arrival_time_s == pytest.approx(101.0, abs=1e-3) and not event.collided
    [received] = net.of(2, PacketReceived)
    assert received.packet.dataframe_bytes == bytes(i % 256 for i in range(100))
    assert received.databytes_valid == [0, 100] and received.cst.mode == 0
    assert received.cst.toa_s == pytest.approx(101.0, abs=1e-3)
    assert received.cst.snr_in > 30  # 185 dB - ~65 dB TL - 50 dB noise
    assert net.of(2, CstReport)[0].cst == received.cst
    assert net.of(1, ReceptionEvent) == []  # a modem does not hear itself
    assert b.counters["rx_received"] == 1 and a.counters["transmitted"] == 1


def test_queue_waits_for_the_modem_and_next_event_time_says_when():
    a = make_modem(1, 0.0)
    first = a.queue_packet(fdp_packet(), 10.0)
    second = a.queue_packet(fdp_packet(), 10.5)
    assert len(first.events) == 1 and second.events == [] and second.position_in_queue == 0
    assert a.next_event_time_s() == pytest.approx(10.0 + FDP_DURATION_S)
    assert a.advance(10.0 + FDP_DURATION_S - 1e-3) == []
    [started] = a.advance(20.0)  # noticed late, started exactly when the first one ended
    assert started.channel_packet.transmit_time_s == pytest.approx(10.0 + FDP_DURATION_S)
    assert a.next_event_time_s() is None
    head = a.queue_packet(fdp_packet(dest=3), 21.0)
    tail = a.queue_packet(fdp_packet(dest=4), 21.0)
    urgent = a.queue_packet(fdp_packet(dest=5), 21.0, source_level_db=170.0, insert_at_head=True)
    # head went out at once; tail waits behind it; urgent jumps ahead of tail
    assert len(head.events) == 1 and tail.events == [] == urgent.events
    assert (tail.position_in_queue, urgent.position_in_queue) == (0, 0)
    assert urgent.source_level_db == 170.0
    order = [e.packet.dest for e in a.advance(40.0)]
    assert order == [5, 4]


def test_half_duplex():
    a, b = make_modem(1, 0.0), make_modem(2, 1500.0)
    net = Network(a, b)
    net.now_s = 10.0
    net.route(a, a.queue_packet(fdp_packet(), 10.0).events)
    net.now_s = 10.5
    net.route(b, b.queue_packet(fdp_packet(dest=1), 10.5).events)
    net.run_until(30.0)
    assert [e.outcome for e in net.of(1, ReceptionEvent)] == ["half_duplex"]
    assert [e.outcome for e in net.of(2, ReceptionEvent)] == ["half_duplex"]
    assert math.isnan(net.of(2, ReceptionEvent)[0].snr_db)
    assert net.of(1, PacketReceived) == net.of(2, PacketReceived) == []


def test_refusals_are_counted_with_a_reason():
    a = make_modem(1, 0.0)
    with pytest.raises(ValueError, match="rate"):
        a.queue_packet(fdp_packet(rate=9), 0.0)
    with pytest.raises(ValueError, match="dataframe bytes"):
        a.queue_packet(fdp_packet(data=5000), 0.0)
    with pytest.raises(ValueError, match="FDP"):
        a.queue_packet(fdp_packet(rate=2, mini=0), 0.0)  # rate 2 is legacy only
    with pytest.raises(ValueError, match="legacy"):
        a.queue_packet(fdp_packet(rate=2, packet_type=PACKET_TYPE_LEGACY_PSK), 0.0)
    assert a.counters["tx_refused_bad_packet"] == 4
    lost = SimModem(SimModemConfig(7), a.channel.propagation, a.channel.noise)
    with pytest.raises(ValueError, match="position"):
        lost.queue_packet(fdp_packet(), 0.0)
    assert lost.counters["tx_refused_no_position"] == 1
    with pytest.raises(ValueError):
        a.set_position(95.0, 0.0, 10.0)
    # the profile decides FDP vs legacy: auto at a legacy rate goes out legacy
    legacy = a.queue_packet(fdp_packet(rate=2, mini=0, packet_type=PACKET_TYPE_AUTO), 0.0)
    [started] = legacy.events
    # 100 bytes at rate 2 fill 2 of its 64-byte frames: overhead + 2 frames at 500 bps
    assert started.channel_packet.duration_s == pytest.approx(1.0 + 2 * 64 * 8 / 500.0)
    assert started.channel_packet.duration_s == MICROMODEM2.packet_duration_s(False, 2, 2, 0, 100)
    assert started.xst.packet_type == 3


def test_ping_round_trip_owtt_and_timeout():
    a, b = make_modem(1, 0.0), make_modem(2, 1500.0, ping_turnaround_s=0.25)
    net = Network(a, b)
    net.now_s = 5.0
    ping_id, events = a.ping(2, 1, b"\x01\x02", timeout_s=20.0, now_s=5.0)
    [request] = events
    assert request.channel_packet.ping_type == PING_TYPE_REQUEST
    assert request.channel_packet.ping_transaction_start_s == 5.0
    assert a.next_event_time_s() == pytest.approx(25.0)  # the ping's deadline
    net.route(a, events)
    net.run_until(40.0)
    [reply] = net.of(1, PingReplied)
    assert reply.ping_id == ping_id
    assert reply.one_way_travel_time_s == pytest.approx(1.0, abs=1e-3)
    assert reply.tat_s == 0.25 and reply.cst.src == 2
    [answer] = [e for e in net.of(2, TransmissionStarted)]
    assert answer.channel_packet.ping_type == PING_TYPE_REPLY
    assert answer.channel_packet.transmit_time_s == pytest.approx(
        5.0 + 1.0 + MICROMODEM2.rate_info(1).miniframe_duration_s + 0.25, abs=1e-3)
    assert net.of(1, PacketReceived) == [] and net.of(1, PingTimedOut) == []
    assert b.counters["ping_replies_sent"] == 1
    # nobody at address 9: the ping times out at start + timeout
    lonely_id, events = a.ping(9, 1, b"", timeout_s=3.0, now_s=50.0)
    net.route(a, events)
    assert a.next_event_time_s() == pytest.approx(53.0)
    assert a.advance(52.9) == []
    assert a.advance(53.0) == [PingTimedOut(lonely_id)]
    assert a.counters["ping_timeouts"] == 1 and a.next_event_time_s() is None


def test_own_and_bad_channel_packets():
    a, b = make_modem(1, 0.0), make_modem(2, 1500.0)
    [started] = a.queue_packet(fdp_packet(), 0.0).events
    a.on_channel_packet(started.channel_packet, 0.0)  # its own SRC: ignored
    assert a.next_event_time_s() is None
    bad = dataclasses.replace(started.channel_packet, packet=ModemPacket(1, 2, 42, 1, 1))
    with pytest.raises(ValueError):
        b.on_channel_packet(bad, 0.0)
    assert b.counters["rx_bad_sim_packet"] == 1
