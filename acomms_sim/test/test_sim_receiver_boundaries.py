"""Receiver boundary arithmetic, ROS-free: packets sent back to back never interfere.

A sender that queues packets one after another starts packet n+1 exactly when packet n ends;
after the propagation delay (a float sum) packet n+1 must not be seen as arriving before packet n
has ended (issue 29: it was dropped as `busy`, and both marked `collided` at about −65 dB).
"""

import pytest

from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.modem_rates import DEFAULT_MINIFRAME_BYTES, rate_info
from acomms_core.modems.profile import PACKET_TYPE_FDP
from acomms_sim.modem.fields import ModemPacket, ReceptionEvent, TransmissionStarted
from acomms_sim.modem.sim_modem import SimModem, SimModemConfig
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import overlap_s
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.7)


def modem(src, north_m, **config):
    propagation = Propagation(SpreadingModel(), SoundSpeedProfile.mackenzie(20.0, 35.0, 100.0))
    sim = SimModem(SimModemConfig(src, **config), propagation, AmbientNoise(), seed=3,
                   profile=MICROMODEM2)
    sim.set_position(*offset_position(*ORIGIN, north_m, 0.0), 20.0)
    return sim


def full_packet(rate, dest=2):
    info = rate_info(rate)
    return ModemPacket(0, dest, PACKET_TYPE_FDP, rate, rate, bytes(DEFAULT_MINIFRAME_BYTES),
                       bytes(info.max_dataframe_bytes))


def run(modems, now, until_s):
    """Event to event: route every started transmission to the other modems."""
    received = {m.config.src: [] for m in modems}
    while True:
        due = [t for t in (m.next_event_time_s() for m in modems) if t is not None]
        if not due or min(due) > until_s:
            return received
        now = max(now, min(due))
        for sender in modems:
            for event in sender.advance(now):
                received[sender.config.src].append(event)
                if isinstance(event, TransmissionStarted):
                    for other in modems:
                        if other is not sender:
                            other.on_channel_packet(event.channel_packet, now)


def back_to_back(rate, north_m, start_s):
    """A queues three full packets at start_s; B (north_m away) reports each arrival."""
    a, b = modem(1, 0.0), modem(2, north_m)
    sent = []
    for _ in range(3):
        result = a.queue_packet(full_packet(rate), start_s)
        sent += result.events
        for event in result.events:
            b.on_channel_packet(event.channel_packet, start_s)
    events = run([a, b], start_s, start_s + 60.0)
    sent += [e for e in events[1] if isinstance(e, TransmissionStarted)]
    return sent, [e for e in events[2] if isinstance(e, ReceptionEvent)], b


# (rate, range, start) triples that lost a packet before boundaries had a tolerance, and the
# absolute start of the simulated clock (2025-01-01T00:00:00Z)
CASES = [(3, 1000.0, 0.1), (1, 2718.0, 0.1), (1, 4000.0, 0.1), (5, 1000.0, 12.3),
         (3, 3000.0, 12.3), (5, 3000.0, 12.3), (1, 3000.0, 1735689600.1)]


@pytest.mark.parametrize("rate,north_m,start_s", CASES)
def test_back_to_back_packets_are_all_received_without_collision(rate, north_m, start_s):
    sent, receptions, b = back_to_back(rate, north_m, start_s)
    assert len(sent) == 3
    # each starts exactly when the previous ends (the float sum the sender computes)
    for first, second in zip(sent, sent[1:], strict=False):
        assert second.channel_packet.transmit_time_s == (
            first.channel_packet.transmit_time_s + first.channel_packet.duration_s)
    assert [r.outcome for r in receptions] == ["received"] * 3
    assert [r.collided for r in receptions] == [False] * 3
    assert all(r.interference_db == float("-inf") for r in receptions)
    assert b.channel.counters.collisions == 0 and b.channel.counters.busy == 0


def test_a_real_overlap_still_collides():
    """The tolerance only merges touching boundaries: 1 ms of real overlap is interference."""
    assert overlap_s(0.0, 1.0, 1.0 - 1e-7, 2.0) == 0.0
    assert overlap_s(10.0, 11.0, 11.0 - 1e-3, 12.0) == pytest.approx(1e-3)
    a, b, c = modem(1, 0.0), modem(3, 0.0), modem(2, 3000.0)
    c.on_channel_packet(a.queue_packet(full_packet(1), 0.1).events[0].channel_packet, 0.1)
    late = 0.1 + rate_info(1).miniframe_duration_s  # b starts while a's packet is on the water
    c.on_channel_packet(b.queue_packet(full_packet(1), late).events[0].channel_packet, late)
    receptions = [e for e in run([c], late, late + 60.0)[2] if isinstance(e, ReceptionEvent)]
    assert [(r.outcome, r.collided) for r in receptions] == [("received", True), ("busy", True)]
