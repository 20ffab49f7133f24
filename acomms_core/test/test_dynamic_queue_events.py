"""What a dynamic queue's user node hears and what happens when it does not answer, through the
ROS interface (issue 19): UpdateQueuedMessage QUEUED, then DEQUEUED or TRANSMITTED for each
accepted offer; a GetNextQueuedMessage that is not answered in time counts as no offer."""

from __future__ import annotations

import yaml
from core_ros_helpers import RELIABLE, collector, publisher, queue_node, request
from diagnostic_msgs.msg import DiagnosticArray
from std_msgs.msg import UInt8

from acomms_core.codecs import RosPacketCodec, load_codec_config
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import UpdateQueuedMessage
from acomms_interfaces.srv import GetNextPacketData, GetNextQueuedMessage

QUEUED = UpdateQueuedMessage.EVENT_LINK_QUEUED
DEQUEUED = UpdateQueuedMessage.EVENT_LINK_DEQUEUED
TRANSMITTED = UpdateQueuedMessage.EVENT_LINK_TRANSMITTED


def _config(tmp_path, service: str):
    entries = [
        {"id": 101, "ros_type": "std_msgs/UInt8", "subscribe_topic": "to_acomms/byte",
         "publish_topic": "from_acomms/byte", "priority": 10, "default_dest": 9,
         "fields": {"data": {"codec": "uint8"}}},
        {"id": 102, "ros_type": "std_msgs/UInt8", "dynamic_queue_service": service,
         "dynamic_update_topic": "update_queue", "publish_topic": "from_acomms/dynamic",
         "default_dest": 9, "fields": {"data": {"codec": "uint8"}}}]
    path = tmp_path / "codecs.yaml"
    path.write_text(yaml.safe_dump([{"codec_name": "default", "packet_codec": "ros",
                                     "miniframe_header": [0xAC], "message_codecs": entries}]))
    return str(path), load_codec_config(str(path))


def _decode(config, response) -> list:
    codecs = {m.id: m.codec for m in config.message_codecs}
    result = RosPacketCodec().decode(bytes(response.miniframe_bytes),
                                     bytes(response.dataframe_bytes), codecs)
    return [(codec_id, m.data) for codec_id, m in result.messages]


class DestAwareQueue:
    """A user node's queue {id: (value, priority, dest)}: offers in id order the first message
    for the asked dest; forgets a message when it hears TRANSMITTED, keeps it on DEQUEUED."""

    def __init__(self, ros, ns: str, codec, messages: dict):
        self.codec, self.messages, self.updates = codec, messages, []
        ros.helper.create_service(GetNextQueuedMessage, f"{ns}/get_next", self.serve)
        ros.helper.create_subscription(UpdateQueuedMessage, f"{ns}/update_queue",
                                       self.on_update, RELIABLE)

    def serve(self, req, response):
        for message_id, (value, priority, dest) in sorted(self.messages.items()):
            if message_id in req.exclude_message_ids or req.dest_address not in (0, dest):
                continue
            bits, _ = self.codec.encode(UInt8(data=value))
            response.has_message, response.message_id, response.priority = True, message_id, \
                priority
            response.dest_address, response.data_size_in_bits = dest, len(bits)
            response.data = list(bits.tobytes())
            break
        return response

    def on_update(self, msg: UpdateQueuedMessage) -> None:
        self.updates.append((msg.message_id, msg.event))
        if msg.event == TRANSMITTED:
            self.messages.pop(msg.message_id, None)


def test_offered_message_is_dequeued_when_not_sent_and_transmitted_when_sent(tmp_path):
    path, config = _config(tmp_path, "get_next")
    ns = "/events"
    with RosHarness() as ros:
        codec = next(m.codec for m in config.message_codecs if m.id == 102)
        # 1 (to dest 3) is offered first; the static message (priority 10, dest 9) then fixes
        # the packet's dest, so 1 is let go and 2 (dest 9) goes instead
        user = DestAwareQueue(ros, ns, codec, {1: (11, 5, 3), 2: (22, 20, 9)})
        node = queue_node(ros, ns, path, default_dest=7)
        publisher(ros, UInt8, f"{ns}/to_acomms/byte").publish(UInt8(data=5))
        assert ros.spin_until(lambda: node.queues.counts.messages_queued == 1, timeout=10.0)
        client = ros.helper.create_client(GetNextPacketData, f"{ns}/get_next_packet_data")
        first = request(client, ros, mini=32)
        assert _decode(config, first) == [(101, 5), (102, 22)] and first.dest == 9
        expected = [(1, QUEUED), (1, DEQUEUED), (2, QUEUED), (2, TRANSMITTED)]
        assert ros.spin_until(lambda: user.updates == expected, timeout=10.0), user.updates
        # the user kept 1 after DEQUEUED: a slot for dest 3 takes it
        second = request(client, ros, mini=32, match_dest=True, dest=3)
        assert _decode(config, second) == [(102, 11)] and second.dest == 3
        expected += [(1, QUEUED), (1, TRANSMITTED)]
        assert ros.spin_until(lambda: user.updates == expected, timeout=10.0), user.updates
        assert user.messages == {}
        counts = node.dynamic_link.dynamic.counts
        assert counts["dynamic_dequeued"] == 1 and counts["dynamic_messages_sent"] == 2


class SilentQueue:
    """A user node whose GetNextQueuedMessage never answers in time: its responses are held
    (rclpy sends a service's answer through send_response) until `answer_late()`."""

    def __init__(self, ros, ns: str, codec):
        self.codec, self.held, self.updates = codec, [], []
        self.service = ros.helper.create_service(GetNextQueuedMessage, f"{ns}/slow_next",
                                                 lambda req, response: response)
        self._send = self.service.send_response
        self.service.send_response = lambda response, header: self.held.append(header)
        ros.helper.create_subscription(UpdateQueuedMessage, f"{ns}/update_queue",
                                       lambda m: self.updates.append(m.event), RELIABLE)

    def answer_late(self) -> None:
        bits, _ = self.codec.encode(UInt8(data=77))
        for header in self.held:
            self._send(GetNextQueuedMessage.Response(
                has_message=True, message_id=9, priority=50, data=list(bits.tobytes()),
                data_size_in_bits=len(bits)), header)
        self.held = []


def _timeouts(diagnostics: list) -> list:
    return [int(v.value) for d in diagnostics for s in d.status
            if s.name.endswith("dynamic_queues") for v in s.values if v.key == "dynamic_timeouts"]


def test_dynamic_queue_that_does_not_answer_in_time_counts_as_no_offer(tmp_path):
    path, config = _config(tmp_path, "slow_next")
    ns = "/silent"
    with RosHarness() as ros:
        user = SilentQueue(ros, ns, next(m.codec for m in config.message_codecs if m.id == 102))
        diagnostics = collector(ros, DiagnosticArray, "/diagnostics")
        node = queue_node(ros, ns, path, default_dest=7, dynamic_queue_timeout_seconds=0.3,
                          update_rate=10.0)
        static = publisher(ros, UInt8, f"{ns}/to_acomms/byte")
        client = ros.helper.create_client(GetNextPacketData, f"{ns}/get_next_packet_data")
        counts = node.dynamic_link.dynamic.counts
        for value, timeouts in ((5, 1), (6, 2)):
            static.publish(UInt8(data=value))
            assert ros.spin_until(lambda n=timeouts: node.queues.counts.messages_queued == n,
                                  timeout=10.0)
            # the slot is answered with the static message once the query is overdue
            response = request(client, ros, mini=32)
            assert _decode(config, response) == [(101, value)] and response.dest == 9
            assert counts["dynamic_timeouts"] == timeouts and len(user.held) == 1
            assert ros.spin_until(lambda n=timeouts: n in _timeouts(diagnostics), timeout=10.0), \
                _timeouts(diagnostics)
            # an answer after the timeout is ignored: nothing queued, nothing sent
            user.answer_late()
            ros.spin_for(0.3)
            assert counts["dynamic_offers"] == 0 and user.updates == []
        assert counts["dynamic_errors"] == 0 and node.queues.counts.messages_sent == 2
