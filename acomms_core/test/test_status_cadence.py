"""Status that costs nothing while nobody listens (acomms_core.ros.status_cadence), through
message_queue_node on simulated time: published on the status timer's grid while subscribed,
silent and timer-free otherwise, and TTL housekeeping still at the grid time a plain 1 Hz timer
would have used."""

from __future__ import annotations

import pytest
from core_ros_helpers import RELIABLE, publisher, queue_node
from std_msgs.msg import UInt8
from tdma_test_support import SimClock

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import QueueStatus

NS = "/auv_cadence"
START_S = 100.0
CONFIG = """\
- codec_name: behaviour
  miniframe_header: [0xac]
  message_codecs:
    - {id: 3, ros_type: std_msgs/UInt8, subscribe_topic: to_acomms/ttl,
       publish_topic: from_acomms/ttl, ttl_seconds: 3, priority: 20,
       fields: {data: {codec: uint8}}}
"""


@pytest.fixture
def ros():
    with RosHarness() as harness:
        yield harness


@pytest.fixture
def setup(ros, tmp_path):
    path = tmp_path / "ttl.yaml"
    path.write_text(CONFIG)
    clock = SimClock(ros, START_S)
    node = queue_node(ros, NS, str(path), use_sim_time=True, default_dest=7)
    clock.watch(node)
    clock.start()
    node.trigger_deactivate()  # re-activate on sim time: the status grid starts at START_S
    node.trigger_activate()
    return clock, node


def _deadline_s(node) -> float | None:
    """The status timer's next call, node-clock seconds (None: not armed)."""
    timer = node.status_report.cadence.timer
    until = timer.time_until_next_call()
    if until is None or timer.is_canceled():
        return None
    return (node.get_clock().now().nanoseconds + until) / 1e9


def test_status_follows_its_subscribers_on_the_timer_grid(ros, setup):
    clock, node = setup
    assert _deadline_s(node) is None  # nobody listens, nothing queued: no timer, no steps
    statuses: list = []
    subscription = ros.helper.create_subscription(QueueStatus, f"{NS}/queue_status",
                                                  statuses.append, RELIABLE)
    assert ros.spin_until(lambda: _deadline_s(node) is not None, timeout=5.0)
    assert _deadline_s(node) == pytest.approx(START_S + 1.0)
    clock.set(START_S + 0.5)
    for second in (1.0, 2.0, 3.0):
        clock.set(START_S + second)
        assert ros.spin_until(lambda s=second: any(
            m.header.stamp.sec == START_S + s for m in statuses), timeout=5.0)
    stamps = sorted({m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in statuses})
    assert stamps == [START_S + 1.0, START_S + 2.0, START_S + 3.0]  # the grid, nothing between
    ros.helper.destroy_subscription(subscription)
    assert ros.spin_until(lambda: _deadline_s(node) is None, timeout=5.0)


def test_ttl_expiry_keeps_the_plain_timers_grid_time_with_nobody_listening(ros, setup):
    clock, node = setup
    pub = publisher(ros, UInt8, f"{NS}/to_acomms/ttl")
    clock.set(START_S + 0.2)
    pub.publish(UInt8(data=5))
    assert ros.spin_until(lambda: node.queues.counts.messages_queued == 1, timeout=5.0)
    # queued at 100.2 with a 3 s TTL: gone at the first 1 s grid time after 103.2, i.e. 104
    assert ros.spin_until(lambda: _deadline_s(node) == pytest.approx(START_S + 4.0), 5.0)
    clock.set(START_S + 3.9)
    ros.spin_for(0.2)
    assert node.queues.counts.expired_ttl == 0
    clock.set(START_S + 4.0)
    assert ros.spin_until(lambda: node.queues.counts.expired_ttl == 1, timeout=5.0)
    assert ros.spin_until(lambda: _deadline_s(node) is None, timeout=5.0)  # nothing left to do
