"""A modem whose reception starts nobody hears skips the wakes of its lock decisions
(`next_event_time_s(detections=False)`, decided at its next wake by `advance` or `settle`):
every reception, CST and received packet is the one of waking at each decision, in a busy
network of colliding, capturing and half-duplex packets, woken on an event grid as the node is."""

import math
import random

from test_sim_modem_core import fdp_packet, make_modem

from acomms_sim.modem.fields import ReceptionStarted, TransmissionStarted

GRID_S = 0.05  # the node's event_period_s


def _on_grid(t):
    return math.ceil(round(t / GRID_S, 9)) * GRID_S


def run_network(detections: bool, seed: int, settle_at=(), noise_db=None, settle=True):
    """Six modems 0.3..6 km apart; each queues packets at random times; woken at grid times of
    their next events. settle_at: times at which every modem settles (as a parameter change or
    a diagnostics read would make the node do), then with noise_db(time) the published noise
    level changes (settle=False: without settling first). Returns every modem's events but the
    reception starts, and the reception starts apart, in order."""
    rng = random.Random(seed)
    modems = [make_modem(src, north_m, capture_margin_db=rng.choice([3.0, math.inf]))
              for src, north_m in enumerate((0, 300, 1200, 2500, 4000, 6000), start=1)]
    sends = sorted((rng.uniform(0, 120), rng.randrange(len(modems)),
                    rng.choice([(1, 10, 64), (1, 10, 192), (3, 10, 512)])) for _ in range(60))
    events = {m.config.src: [] for m in modems}
    starts = {m.config.src: [] for m in modems}
    settles = sorted(settle_at)
    now = 0.0

    def route(sender, out):
        for event in out:
            if isinstance(event, ReceptionStarted):
                starts[sender.config.src].append(event)
            else:
                events[sender.config.src].append((round(now, 9), event))
            if isinstance(event, TransmissionStarted):
                for modem in modems:
                    if modem is not sender:
                        modem.on_channel_packet(event.channel_packet, now)

    while True:
        due = [_on_grid(t) for t in (m.next_event_time_s(detections) for m in modems)
               if t is not None]
        nexts = [s[0] for s in sends[:1]] + settles[:1] + due
        if not nexts:
            break
        now = max(now, min(nexts))
        while settles and settles[0] <= now:
            settles.pop(0)
            for modem in modems:
                if settle:
                    modem.settle(math.floor(round(now / GRID_S, 9)) * GRID_S)
                if noise_db is not None:
                    modem.channel.noise.published_level_db = noise_db(now)
        while sends and sends[0][0] <= now:
            _, index, (rate, mini, data) = sends.pop(0)
            sender = modems[index]
            result = sender.queue_packet(fdp_packet(dest=0, rate=rate, mini=mini, data=data), now)
            route(sender, result.events)
        for modem in modems:
            if modem.next_event_time_s(detections) is not None and _on_grid(
                    modem.next_event_time_s(detections)) <= now:
                route(modem, modem.advance(now))
    return events, starts, [dict(m.counters) for m in modems]


def test_skipped_detection_wakes_give_the_same_receptions():
    for seed in range(4):
        eager = run_network(True, seed)
        lazy = run_network(False, seed)
        assert lazy[0] == eager[0], seed          # receptions, CSTs, packets: same time, same
        assert lazy[1] == eager[1], seed          # the same locks, in the same order
        assert lazy[2] == eager[2], seed          # counters (rx_detected included)
        outcomes = [e.outcome for events in eager[0].values() for _, e in events
                    if hasattr(e, "outcome")]
        assert {"received", "busy"} <= set(outcomes) or "half_duplex" in outcomes, outcomes


def test_settling_in_between_changes_nothing():
    eager = run_network(True, 1)
    settled = run_network(False, 1, settle_at=[i * 3.7 for i in range(1, 30)])
    assert settled == eager


def test_a_lock_wake_is_kept_while_a_short_arrival_is_pending():
    """Shorter than the detection window, an arrival's lock comes due out of order of first
    sound: its wake is kept, so the order of decisions stays the eager one."""
    from acomms_sim.physics.channel import DETECTION_WINDOW_S

    a, b = make_modem(1, 0.0), make_modem(2, 1500.0)
    out = a.queue_packet(fdp_packet(dest=2), 0.0).events
    (tx,) = [e for e in out if isinstance(e, TransmissionStarted)]
    b.on_channel_packet(tx.channel_packet, 0.0)
    assert b.next_event_time_s(False) == b.channel.next_due_s()   # whole window: no lock wake
    arrival = b.channel.arrivals[0]
    arrival.end_s = arrival.start_s + DETECTION_WINDOW_S / 2    # as a very short packet's
    assert b.next_event_time_s(False) == b.channel.next_detection_s()


def test_a_noise_change_after_settling_meets_the_locks_it_would_have():
    """The node settles before the noise level changes: the locks due before the change are
    decided with the old level, as with a wake at each; without settling they would not be."""
    times = [round(0.8 + i * 1.37, 2) for i in range(80)]

    def noise(t):
        return 50.0 + 25.0 * (round(t * 100) % 3)

    eager = run_network(True, 2, settle_at=times, noise_db=noise)
    assert run_network(False, 2, settle_at=times, noise_db=noise) == eager
    assert run_network(False, 2, settle_at=times, noise_db=noise, settle=False) != eager
