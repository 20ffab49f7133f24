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


def test_dispatch_looks_for_stalled_fragment_sessions_only_while_one_is_open(ros, tmp_path):
    """packet_dispatch_node's fragment expiry (every 10 s) is armed only while an incoming
    session is open, at the 10 s grid time after the session runs out of its TTL."""
    from core_ros_helpers import dispatch_node, received_packet
    from fragmentation_support import text_of, write_config
    from std_msgs.msg import String

    from acomms_interfaces.msg import ReceivedPacket
    from acomms_interfaces.srv import GetNextPacketData

    config = write_config(tmp_path)
    clock = SimClock(ros, START_S)
    sender = queue_node(ros, "/frag1", config, src=1)
    receiver = dispatch_node(ros, "/frag2", config, src=2, use_sim_time=True,
                             fragment_session_ttl_s=25.0)
    clock.watch(receiver)
    clock.start()
    receiver.trigger_deactivate()  # re-activate on sim time: the expiry grid starts at START_S
    receiver.trigger_activate()
    cadence = receiver.fragment_expiry

    def deadline_s():
        timer = cadence.timer
        until = None if timer is None or timer.is_canceled() else timer.time_until_next_call()
        return None if until is None else (receiver.get_clock().now().nanoseconds + until) / 1e9

    assert deadline_s() is None  # no session: no timer
    publisher(ros, String, "/frag1/blob").publish(String(data=text_of(2500, 5)))
    assert ros.spin_until(lambda: sender.queues.counts.messages_queued == 1, 10.0)
    client = ros.helper.create_client(GetNextPacketData, "/frag1/get_next_packet_data")
    first = ros.call(client, GetNextPacketData.Request(num_miniframe_bytes=72,
                                                       num_dataframe_bytes=192))
    clock.set(START_S + 3.0)
    publisher(ros, ReceivedPacket, "/frag2/packet_rx").publish(received_packet(
        1, first.dest, first.miniframe_bytes, first.dataframe_bytes))
    assert ros.spin_until(lambda: receiver.fragmentation.receiver.reassembler.sessions, 5.0)
    # open since 103 s with a 25 s TTL: looked at first at the 10 s grid time after 128 s
    assert ros.spin_until(lambda: deadline_s() == pytest.approx(START_S + 30.0), 5.0)
    clock.set(START_S + 30.0)
    counts = receiver.fragmentation.receiver.counts
    assert ros.spin_until(lambda: counts["sessions_expired"] == 1, 5.0)
    assert ros.spin_until(lambda: deadline_s() is None, 5.0)
