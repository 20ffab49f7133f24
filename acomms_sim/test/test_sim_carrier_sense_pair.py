"""Carrier sense on the simulated channel, ROS-free: two saturated vehicles 300 m apart.

Each vehicle is a `SimModem` driven by a `CarrierSensePolicy` (the MAC's decisions) the way
carrier_sense_node drives it: a tick every TICK_S, a packet handed to the modem when the policy
allows it, the modem's `cst` reports (end of a detected packet) and `reception_start` events
(ReceptionStarted: a packet detected while it still arrives) fed back. The loop steps the clock by
the modem's event period, as modem_sim_node polls.

Hearing only the end of a packet, a vehicle can start in the middle of the other's packet: the
quiet time and backoff both run from the end of the previous packet, so the two start within a
propagation delay of each other often (issue 29: 186 of 204 packets collided). Hearing the start,
a vehicle that is not transmitting yet defers: only starts within the detection delay (300 m /
1500 m/s + the 50 ms detection window) of each other can still collide.
"""

from __future__ import annotations

import collections

import pytest

from acomms_core.mac.carrier_sense import CarrierSensePolicy
from acomms_core.mac.policy import RequestData
from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.profile import PACKET_TYPE_FDP
from acomms_core.ros.parameter_spec import defaults
from acomms_sim.modem.fields import (
    CstReport,
    ModemPacket,
    ReceptionEvent,
    ReceptionStarted,
    TransmissionStarted,
)
from acomms_sim.modem.sim_modem import SimModem, SimModemConfig
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.7)
START_S = 1_735_689_600.0  # the simulated clock's default start, 2025-01-01T00:00:00Z
STEP_S = 0.05              # modem_sim_node's event_period_s
TICK_S = 0.2               # the MAC's default tick_period_seconds


class Log:
    def info(self, *_args, **_kwargs):
        pass

    warning = error = debug = info


class Vehicle:
    def __init__(self, src: int, north_m: float, seed: int, **mac_values):
        propagation = Propagation(SpreadingModel("practical", "thorp"),
                                  SoundSpeedProfile.constant(1500.0))
        self.modem = SimModem(SimModemConfig(src), propagation, AmbientNoise("fixed", 60.0),
                              seed=seed, profile=MICROMODEM2)
        self.modem.set_position(*offset_position(*ORIGIN, north_m, 0.0), 20.0)
        self.mac = CarrierSensePolicy(Log(), collections.Counter())
        self.mac.identity = f"/v{src}/carrier_sense_node"
        self.mac.configure({**defaults(CarrierSensePolicy.PARAMETERS), "random_seed": seed,
                            **mac_values})
        self.receptions: list[ReceptionEvent] = []

    def tick(self, now: float) -> list:
        self.mac.begin_tick(now)
        action = self.mac.next_action(now, None)
        if not isinstance(action, RequestData):
            return []
        frames = action.frames
        packet = ModemPacket(0, 0, PACKET_TYPE_FDP, frames.miniframe_rate, frames.dataframe_rate,
                             bytes(frames.maximum_miniframe_bytes),
                             bytes(frames.maximum_dataframe_bytes))
        events = self.modem.queue_packet(packet, now).events
        self.mac.on_transmit(frames, now)
        return events

    def hear(self, events: list, now: float) -> None:
        for event in events:
            if isinstance(event, CstReport):
                self.mac.channel_heard(event.cst.src, now)
            elif isinstance(event, ReceptionStarted):
                self.mac.reception_started(event.src, event.arrival_time_s,
                                           event.arrival_time_s + event.duration_s)
            elif isinstance(event, ReceptionEvent):
                self.receptions.append(event)


def run_pair(duration_s: float, seed: int = 1, distance_m: float = 300.0,
             **mac_values) -> tuple[int, int]:
    """(packets lost or collided at the other vehicle, packets sent) after duration_s."""
    vehicles = [Vehicle(1, 0.0, seed, **mac_values), Vehicle(2, distance_m, seed, **mac_values)]
    ticks_per_step = round(TICK_S / STEP_S)
    for step in range(round(duration_s / STEP_S)):
        now = round(START_S + step * STEP_S, 6)
        started = []
        for vehicle in vehicles:
            events = vehicle.modem.advance(now)
            if step % ticks_per_step == 0:
                events += vehicle.tick(now)
            vehicle.hear(events, now)
            started += [(vehicle, e) for e in events if isinstance(e, TransmissionStarted)]
        for sender, event in started:
            for vehicle in vehicles:
                if vehicle is not sender:
                    vehicle.modem.on_channel_packet(event.channel_packet, now)
    sent = sum(v.modem.counters["transmitted"] for v in vehicles)
    bad = sum(1 for v in vehicles for r in v.receptions
              if r.collided or r.outcome not in ("received", "partial"))
    return bad, sent


@pytest.fixture(scope="module")
def results():
    return {sense: run_pair(1800.0, sense_reception_start=sense) for sense in (False, True)}


def test_hearing_only_packet_ends_two_saturated_vehicles_collide_often(results):
    bad, sent = results[False]
    assert sent > 100
    assert bad / sent > 0.5, (bad, sent)  # the defect of issue 29 (91 % there)


def test_hearing_reception_starts_they_collide_on_far_fewer_packets(results):
    bad, sent = results[True]
    old_bad, old_sent = results[False]
    assert sent > 100
    # Only starts within one detection delay (0.25 s) of each other collide: with the default
    # 0..4 s backoff that is a few percent of the packets; 30 % leaves room for other seeds.
    assert bad / sent < 0.30, (bad, sent)
    assert bad / sent < 0.5 * old_bad / old_sent


def test_same_seed_same_result(results):
    assert run_pair(600.0, sense_reception_start=True) == run_pair(
        600.0, sense_reception_start=True)
