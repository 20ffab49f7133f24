"""A dynamic queue end to end in the embedded runner (issue 19): a user node on bravo offers a
message at packet-build time; bravo's MAC sends it over the simulated channel, alpha's dispatch
publishes it, and the user node hears that it was transmitted."""

import dataclasses
import io
import pathlib

import yaml
from std_msgs.msg import UInt8
from test_bringup_runner import wait

from acomms_bringup.description.scenario import parse_scenario
from acomms_bringup.run.runner import Runner
from acomms_core.codecs import load_codec_config
from acomms_interfaces.msg import UpdateQueuedMessage
from acomms_interfaces.srv import GetNextQueuedMessage

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
DYNAMIC_ENTRY = {"ros_type": "std_msgs/UInt8", "dynamic_queue_service": "get_next",
                 "dynamic_update_topic": "update_queue", "publish_topic": "from_acomms/dynamic",
                 "priority": 50, "fields": {"data": {"codec": "uint8"}}}


def test_dynamic_queue_message_crosses_the_channel(tmp_path):
    codecs = yaml.safe_load((CONFIG / "demo_codecs.yaml").read_text())
    # The dynamic queue takes the next id the demo codecs leave free.
    entry = dict(DYNAMIC_ENTRY, id=1 + max(m["id"] for m in codecs[0]["message_codecs"]))
    codecs[0]["message_codecs"].append(entry)
    codec_path = tmp_path / "codecs.yaml"
    codec_path.write_text(yaml.safe_dump(codecs))
    codec = next(m.codec for m in load_codec_config(str(codec_path)).message_codecs
                 if m.id == entry["id"])
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(codec_path)
    scenario = parse_scenario(data, file="s.yaml", base_dir=CONFIG)
    scenario = dataclasses.replace(scenario, clock=dataclasses.replace(scenario.clock,
                                                                       warp_factor=20.0))
    pending, updates, arrived = {1: 42}, [], []

    def serve(request, response):
        for message_id, value in pending.items():
            if message_id not in request.exclude_message_ids:
                bits, _ = codec.encode(UInt8(data=value))
                response.has_message, response.message_id, response.priority = (
                    True, message_id, 50)
                response.data, response.data_size_in_bits = list(bits.tobytes()), len(bits)
                break
        return response

    def on_update(msg):
        updates.append((msg.message_id, msg.event))
        if msg.event == UpdateQueuedMessage.EVENT_LINK_TRANSMITTED:
            pending.pop(msg.message_id, None)

    runner = Runner(scenario, stream=io.StringIO(), progress=False)
    try:
        runner.start()
        node = runner.recorder
        node.create_service(GetNextQueuedMessage, "/bravo/get_next", serve)
        node.create_subscription(UpdateQueuedMessage, "/bravo/update_queue", on_update, 10)
        node.create_subscription(UInt8, "/alpha/from_acomms/dynamic",
                                 lambda m: arrived.append(m.data), 10)
        # bravo's slot comes once per 30 simulated s (1.5 wall s at warp 20)
        assert wait(lambda: arrived == [42], 30.0), (arrived, updates)
        # QUEUED then TRANSMITTED (a slot that could not take it: QUEUED, DEQUEUED before)
        queued, dequeued, transmitted = (UpdateQueuedMessage.EVENT_LINK_QUEUED,
                                         UpdateQueuedMessage.EVENT_LINK_DEQUEUED,
                                         UpdateQueuedMessage.EVENT_LINK_TRANSMITTED)
        assert wait(lambda: updates[-1:] == [(1, transmitted)], 10.0), updates
        tries = len(updates) // 2
        assert updates == [(1, queued), (1, dequeued)] * (tries - 1) + [
            (1, queued), (1, transmitted)], updates
    finally:
        problems = runner.stop()
    assert problems == []
