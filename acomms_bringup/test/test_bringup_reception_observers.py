"""acomms_run books the receptions of the simulated modems it runs in its own process from the
modems themselves (issue 30: one ROS message fewer per reception at 64 vehicles):

- the recorder has no reception_events subscription for them, each in-process modem_sim_node
  has the recorder as its `reception_observer`, and the run still books every reception;
- a modem publishes reception_events only while somebody subscribes, and always hands them to
  its observer (`ModemOutputs`);
- a vehicle whose modem node was never met gets the subscription after all.
"""

from __future__ import annotations

import dataclasses
import io
import math
import random
import types

from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message
from test_bringup_lean_nodes import CONFIG

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.run.observers import ReceptionObservers, observed_receptions
from acomms_bringup.run.reception_records import reception_from_event, reception_from_msg
from acomms_bringup.run.runner import Runner
from acomms_interfaces.msg import SimReceptionEvent
from acomms_sim.modem.fields import ReceptionEvent
from acomms_sim.nodes.modem_sim_node import ModemSimNode
from acomms_sim.nodes.modem_sim_outputs import ModemOutputs
from acomms_sim.nodes.sim_modem_messages import reception_event_msg


def test_in_process_modems_hand_their_receptions_to_the_recorder():
    scenario = load_scenario(CONFIG / "demo.yaml")
    runner = Runner(scenario, stream=io.StringIO(), progress=False, clock_mode="deterministic",
                    warp=None)
    try:
        runner.start()
        topics = {s.topic_name for s in runner.recorder.subscriptions}
        assert "/auv/transmit" in topics  # the recorder's other channel subscriptions stay
        assert not any(t.endswith("/reception_events") for t in topics), topics
        modems = [n for n in runner.nodes.values() if isinstance(n, ModemSimNode)]
        assert len(modems) == 3
        assert all(m.outputs.reception_observer is not None for m in modems)
        assert all(m.outputs.events.get_subscription_count() == 0 for m in modems)
        runner.run(60.0)
        heard = {(r.vehicle, r.src) for r in runner.record.receptions}
        senders = {t.src for t in runner.record.transmissions}
        assert senders == {1, 3}
        # every transmission reached both other vehicles, and each reception was booked
        assert heard == {(v.name, src) for src in senders for v in scenario.vehicles
                         if v.src != src}, heard
        assert len(runner.record.receptions) == 2 * len(runner.record.transmissions)
    finally:
        assert runner.stop() == []


class _Publisher:
    def __init__(self, subscribers: int):
        self.subscribers, self.sent = subscribers, []

    def get_subscription_count(self) -> int:
        return self.subscribers

    def publish(self, data) -> None:
        self.sent.append(data)


EVENT = ReceptionEvent(2, 1, 2, "received", False, 0, 10.0, 11.0, 1.5, 20.0, 150.0, 60.0,
                       float("-inf"), 70.0, 1500.0, 3, 0, 64)


def test_reception_events_go_to_the_observer_and_to_the_topic_only_when_subscribed():
    for subscribers in (0, 1):
        outputs, observed = ModemOutputs(), []
        outputs.events = _Publisher(subscribers)
        outputs.reception_observer = observed.append
        assert outputs.publish([EVENT], Time(sec=11)) == []
        assert observed == [EVENT]  # the plain event: no message built for the observer
        assert len(outputs.events.sent) == subscribers
        if subscribers:
            sent = deserialize_message(outputs.events.sent[0], SimReceptionEvent)
            assert sent.snr_db == 20.0 and sent.slant_range_m == 1500.0
    outputs = ModemOutputs()  # nobody at all: nothing is built
    outputs.events = _Publisher(0)
    assert outputs.publish([EVENT, "not an event"], Time()) == ["not an event"]
    assert outputs.events.sent == []


def test_a_vehicle_whose_modem_was_not_met_is_subscribed():
    scenario = load_scenario(CONFIG / "two_vehicles.yaml")
    stack = types.SimpleNamespace(groups=[types.SimpleNamespace(name="alpha")])
    assert observed_receptions(scenario, stack) == {"alpha"}  # bravo runs elsewhere
    subscribed = []
    recorder = types.SimpleNamespace(subscribe_receptions=subscribed.append,
                                     reception_observer=lambda vehicle: vehicle)
    observers = ReceptionObservers(types.SimpleNamespace(scenario=scenario, recorder=recorder),
                                   {"alpha", "bravo"})
    observers("/alpha/message_queue_node", object())  # not a modem: nothing
    assert observers.subscribe_unobserved() == ["alpha", "bravo"]
    assert subscribed == ["alpha", "bravo"]


def test_a_reception_booked_from_its_plain_event_equals_the_one_from_its_message():
    """acomms_run books its own modems' receptions from the plain events and other processes'
    from their messages: the records must be the same (times through sec/nanosec, float32)."""
    rng = random.Random(7)
    for _ in range(2000):
        event = dataclasses.replace(
            EVENT, transmit_time_s=rng.uniform(0, 1.8e9), arrival_time_s=rng.uniform(0, 1e5),
            duration_s=rng.uniform(0, 20), snr_db=rng.uniform(-20, 40),
            receive_level_db=rng.uniform(60, 200), noise_db=rng.uniform(30, 90),
            transmission_loss_db=rng.uniform(20, 120), slant_range_m=rng.uniform(0, 2e4),
            collided=rng.random() < 0.5, num_bad_frames=rng.randint(0, 3))
        msg = deserialize_message(serialize_message(reception_event_msg(event, Time())),
                                  SimReceptionEvent)
        assert reception_from_event("alpha", event) == reception_from_msg("alpha", msg)
    half_duplex = dataclasses.replace(EVENT, outcome="half_duplex", snr_db=math.nan)
    plain = reception_from_event("alpha", half_duplex)
    assert math.isnan(plain.snr_db) and plain.outcome == "half_duplex"
