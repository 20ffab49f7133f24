"""message_queue_node's dynamic queues through the ROS interface (issue 19, ros_acomms parity):
a user node serves GetNextQueuedMessage, hears UpdateQueuedMessage, and its messages share
packets with the subscribed (static) queues by priority, static queues winning ties."""

from __future__ import annotations

import yaml
from core_ros_helpers import publisher, queue_node, request
from std_msgs.msg import UInt8

from acomms_core.codecs import RosPacketCodec, load_codec_config
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import QueueEnable, UpdateQueuedMessage
from acomms_interfaces.srv import GetNextPacketData, GetNextQueuedMessage

NS = "/auv1"
CONFIG = [{
    "codec_name": "default", "packet_codec": "ros", "miniframe_header": [0xAC],
    "message_codecs": [
        {"id": 101, "ros_type": "std_msgs/UInt8", "subscribe_topic": "to_acomms/byte",
         "publish_topic": "from_acomms/byte", "priority": 10, "default_dest": 9,
         "fields": {"data": {"codec": "uint8"}}},
        {"id": 102, "ros_type": "std_msgs/UInt8", "dynamic_queue_service": "get_next",
         "dynamic_update_topic": "update_queue", "publish_topic": "from_acomms/dynamic",
         "default_dest": 9, "fields": {"data": {"codec": "uint8"}}},
        {"id": 103, "ros_type": "std_msgs/UInt8", "dynamic_queue_service": "nobody_serves",
         "publish_topic": "from_acomms/nobody", "fields": {"data": {"codec": "uint8"}}},
    ]}]


class UserQueue:
    """The user's node side: offers its messages (id -> (value, priority)) until transmitted."""

    def __init__(self, ros, codec):
        self.codec = codec
        self.messages = {1: (11, 20), 2: (22, 10)}
        self.queries: list = []
        self.updates: list = []
        ros.helper.create_service(GetNextQueuedMessage, f"{NS}/get_next", self.serve)
        ros.helper.create_subscription(UpdateQueuedMessage, f"{NS}/update_queue",
                                       self.on_update, 10)

    def serve(self, req, response):
        self.queries.append(list(req.exclude_message_ids))
        for message_id, (value, priority) in sorted(self.messages.items()):
            if message_id in req.exclude_message_ids:
                continue
            bits, _ = self.codec.encode(UInt8(data=value))
            if len(bits) > req.max_size_in_bits:
                continue
            response.has_message, response.message_id = True, message_id
            response.priority, response.data_size_in_bits = priority, len(bits)
            response.data = list(bits.tobytes())
            return response
        return response

    def on_update(self, msg: UpdateQueuedMessage) -> None:
        self.updates.append((msg.message_id, msg.event))
        if msg.event == UpdateQueuedMessage.EVENT_LINK_TRANSMITTED:
            self.messages.pop(msg.message_id, None)


def _decode(config, response) -> list:
    codecs = {m.id: m.codec for m in config.message_codecs}
    result = RosPacketCodec().decode(bytes(response.miniframe_bytes),
                                     bytes(response.dataframe_bytes), codecs)
    return [(codec_id, m.data) for codec_id, m in result.messages]


def test_dynamic_queue_offers_merge_by_priority_and_hear_transmitted(tmp_path):
    path = tmp_path / "codecs.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    config = load_codec_config(str(path))
    with RosHarness() as ros:
        _exercise(ros, config, str(path))


def _exercise(ros, config, path: str) -> None:
    dynamic_codec = next(m.codec for m in config.message_codecs if m.id == 102)
    user = UserQueue(ros, dynamic_codec)
    node = queue_node(ros, NS, path, default_dest=7)
    publisher(ros, UInt8, f"{NS}/to_acomms/byte").publish(UInt8(data=5))
    assert ros.spin_until(lambda: node.queues.counts.messages_queued == 1, timeout=10.0)
    client = ros.helper.create_client(GetNextPacketData, f"{NS}/get_next_packet_data")
    first = request(client, ros, mini=32)
    # priority 20 (dynamic) first, then the static 10 before the dynamic 10 (tie)
    assert _decode(config, first) == [(102, 11), (101, 5), (102, 22)]
    assert first.num_messages == 3 and first.dest == 9
    assert user.queries[:3] == [[], [1], [1, 2]]
    queued, transmitted = (UpdateQueuedMessage.EVENT_LINK_QUEUED,
                           UpdateQueuedMessage.EVENT_LINK_TRANSMITTED)
    expected = [(1, queued), (2, queued), (1, transmitted), (2, transmitted)]
    assert ros.spin_until(lambda: user.updates == expected, timeout=10.0), user.updates
    assert request(client, ros, mini=32).num_messages == 0  # everything went
    counts = node.dynamic_link.dynamic.counts
    assert counts["dynamic_messages_sent"] == 2 and counts["dynamic_unavailable"] >= 2
    # queue_enable by message-codec id switches a dynamic queue off and on
    user.messages[3] = (33, 10)
    enable = publisher(ros, QueueEnable, f"{NS}/queue_enable")
    enable.publish(QueueEnable(queue_id=102, enable=False))
    assert ros.spin_until(lambda: not node.dynamic_link.dynamic.queues[0].active, timeout=10.0)
    asked = len(user.queries)
    assert request(client, ros, mini=32).num_messages == 0 and len(user.queries) == asked
    enable.publish(QueueEnable(queue_id=102, enable=True))
    assert ros.spin_until(lambda: node.dynamic_link.dynamic.queues[0].active, timeout=10.0)
    assert _decode(config, request(client, ros, mini=32)) == [(102, 33)]
