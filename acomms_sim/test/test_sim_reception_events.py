"""modem_sim_node's `reception_events`: one SimReceptionEvent per arrival, with its outcome."""

import math

import pytest
from test_sim_modem_node import SimWorld, fdp_packet

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import SimReceptionEvent
from acomms_sim.nodes.sim_node_support import stamp_seconds


@pytest.fixture
def world():
    with RosHarness() as ros:
        yield SimWorld(ros)


def listen(world, name):
    events = []
    world.ros.helper.create_subscription(SimReceptionEvent, f"/{name}/reception_events",
                                         events.append, 10)
    return events


def test_received_and_half_duplex_arrivals_are_reported(world):
    world.add_modem("a", 1, 0.0)
    world.add_modem("b", 2, 1500.0)
    events_a, events_b = listen(world, "a"), listen(world, "b")
    world.set_time(10.0)
    assert world.queue("a", fdp_packet()).success
    assert world.advance_until(lambda: events_b and world.rx["b"], until=30.0, step=0.25)
    event = events_b[0]
    assert (event.receiver_src, event.src, event.dest) == (2, 1, 2)
    assert event.outcome == SimReceptionEvent.OUTCOME_RECEIVED and not event.collided
    assert stamp_seconds(event.transmit_time) == pytest.approx(10.0)
    assert stamp_seconds(event.arrival_time) == pytest.approx(11.0, abs=1e-3)
    assert event.snr_db == pytest.approx(world.rx["b"][0].cst.snr_in)
    assert event.num_bad_frames == 0 and event.num_bytes == 110
    assert event.slant_range_m == pytest.approx(1500.0, rel=1e-3)

    # Both transmit at once: each arrival overlaps the receiver's own transmission.
    world.set_time(40.0)
    assert world.queue("a", fdp_packet()).success
    assert world.queue("b", fdp_packet(dest=1)).success
    assert world.advance_until(lambda: len(events_b) == 2 and events_a, until=60.0, step=0.25)
    for event in (events_b[1], events_a[0]):
        assert event.outcome == SimReceptionEvent.OUTCOME_HALF_DUPLEX
        assert math.isnan(event.snr_db)
        assert event.num_bad_frames == event.num_frames > 0


def test_weak_and_colliding_arrivals_are_reported(world):
    world.add_modem("a", 1, 0.0, source_level_db=120.0)  # far too quiet to be detected
    world.add_modem("b", 2, 1500.0)
    world.add_modem("c", 3, 3000.0)
    events_b = listen(world, "b")
    world.set_time(10.0)
    assert world.queue("a", fdp_packet()).success
    assert world.queue("c", fdp_packet()).success  # same time, same distance from b: collision
    assert world.advance_until(lambda: len(events_b) == 2, until=30.0, step=0.25)
    by_src = {event.src: event for event in events_b}
    assert by_src[1].outcome == SimReceptionEvent.OUTCOME_UNDETECTED
    assert by_src[1].collided and by_src[3].collided
    assert by_src[1].snr_db < -10.0
    assert by_src[3].interference_db > -math.inf
    assert by_src[3].outcome in (SimReceptionEvent.OUTCOME_RECEIVED,
                                 SimReceptionEvent.OUTCOME_PARTIAL)
