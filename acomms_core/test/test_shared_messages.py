"""Shared messages (issue 30): a message published with `publish_shared` reaches an in-process
`shared_callback` subscriber as the publisher's object, and holds what a plain subscriber takes;
bytes from a plain publisher are deserialized; a float32 field wider than float32 is refused in
the check mode, and `narrowed` rounds it as the wire does."""

from __future__ import annotations

import pytest
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message

from acomms_core.ros import shared_messages
from acomms_core.ros.shared_messages import (
    CHECK_ENV,
    narrowed,
    publish_shared,
    shared_callback,
    shared_counts,
)
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import CST, SimReceptionEvent

TOPIC = "/shared_messages_test"


def test_an_in_process_subscriber_gets_the_published_object_and_a_plain_one_an_equal_message():
    with RosHarness(num_threads=1) as ros:
        node = ros.add(Node("shared_messages_test", context=ros.context))
        shared, plain = [], []
        node.create_subscription(CST, TOPIC, shared_callback(CST, shared.append), 10, raw=True)
        node.create_subscription(CST, TOPIC, plain.append, 10)
        publisher = node.create_publisher(CST, TOPIC, 10)
        foreign = node.create_publisher(CST, TOPIC, 10)
        assert ros.spin_until(lambda: publisher.get_subscription_count() == 2, timeout=10.0)
        before = shared_counts()
        sent = CST(**narrowed(CST, {"src": 3, "snr_in": 12.3456789, "dop": -0.1}))
        publish_shared(publisher, sent)
        assert ros.spin_until(lambda: shared and plain, timeout=10.0)
        assert shared[0] is sent  # handed over, not deserialized
        assert plain[0] == sent and plain[0] is not sent
        foreign.publish(CST(src=4, snr_in=1.5))  # bytes nobody kept: deserialized
        assert ros.spin_until(lambda: len(shared) == 2, timeout=10.0)
        assert shared[1] == CST(src=4, snr_in=1.5)
        after = shared_counts()
        assert after["shared"] - before["shared"] == 1
        assert after["deserialized"] - before["deserialized"] == 1


def test_narrowed_rounds_float32_fields_as_the_wire_does_and_leaves_the_others():
    values = narrowed(SimReceptionEvent, {"snr_db": 64.03553213765966, "src": 7,
                                          "noise_db": float("nan")})
    wire = deserialize_message(serialize_message(SimReceptionEvent(snr_db=64.03553213765966)),
                               SimReceptionEvent)
    assert values["snr_db"] == wire.snr_db != 64.03553213765966
    assert values["src"] == 7 and values["noise_db"] != values["noise_db"]  # NaN stays NaN


def test_the_check_mode_refuses_a_message_wider_than_its_bytes(monkeypatch):
    class Publisher:
        def publish(self, data):
            self.data = data

    monkeypatch.setenv(CHECK_ENV, "1")
    with pytest.raises(ValueError, match="wider than its type"):
        publish_shared(Publisher(), CST(snr_in=12.3456789))
    publisher = Publisher()
    publish_shared(publisher, CST(**narrowed(CST, {"snr_in": 12.3456789})))
    assert deserialize_message(publisher.data, CST).snr_in == pytest.approx(12.3456789, rel=1e-6)


def test_only_the_newest_messages_of_a_type_are_kept(monkeypatch):
    class Publisher:
        def publish(self, data):
            pass

    monkeypatch.setattr(shared_messages, "SHARED_MESSAGES_KEPT", 3)
    monkeypatch.setattr(shared_messages, "_KEPT", {})
    for src in range(5):
        publish_shared(Publisher(), CST(src=src))
    kept = shared_messages._KEPT[CST]
    assert sorted(msg.src for msg in kept.values()) == [2, 3, 4]
