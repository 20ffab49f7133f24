"""acomms_recorder (launch setups): every topic into an MCAP file while active; refusals."""

import rclpy
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_msgs.msg import String

from acomms_bringup.nodes.recorder_node import RecorderNode
from acomms_core.ros.ros_support import lifecycle_state_label
from acomms_core.ros.testing import RosHarness


def recorded(path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with path.open("rb") as handle:
        reader = make_reader(handle, decoder_factories=[DecoderFactory()])
        return [(c.topic, m.data if hasattr(m, "data") else m)
                for _s, c, _r, m in reader.iter_decoded_messages()]


def test_records_topics_that_appear_while_active(tmp_path):
    path = tmp_path / "trial.mcap"
    with RosHarness() as harness:
        node = harness.add(RecorderNode(context=harness.context, parameter_overrides=[
            Parameter("output_path", value=str(path)),
            Parameter("rescan_period_s", value=0.1)]))
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        talker = harness.add(rclpy.create_node("talker", context=harness.context))
        publisher = talker.create_publisher(String, "/chat", 10)  # appears after activation
        assert harness.spin_until(lambda: "/chat" in node.topics.subscriptions, timeout=10.0)
        assert harness.spin_until(lambda: publisher.get_subscription_count() > 0, timeout=10.0)
        for index in range(5):
            publisher.publish(String(data=f"hello {index}"))
        assert harness.spin_until(lambda: node.sink.counts.get("/chat") == 5, timeout=10.0)
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        assert node.sink is None and node.topics is None
    chat = [data for topic, data in recorded(path) if topic == "/chat"]
    assert chat == [f"hello {index}" for index in range(5)]


def test_refuses_an_existing_file_and_a_bad_name(tmp_path):
    existing = tmp_path / "old.mcap"
    existing.write_bytes(b"keep")
    with RosHarness() as harness:
        node = harness.add(RecorderNode(context=harness.context, parameter_overrides=[
            Parameter("output_path", value=str(existing))]))
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert lifecycle_state_label(node) == "unconfigured"
        result = node.set_parameters([Parameter("output_path", value=str(tmp_path / "x.bag"))])
        assert not result[0].successful and ".mcap" in result[0].reason
    assert existing.read_bytes() == b"keep"
