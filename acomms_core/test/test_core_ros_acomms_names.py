"""ros_acomms compatibility of the queue and dispatch nodes: `packet_codec_file` and
`codec_directory` (set for a whole namespace by a params file, as ros_acomms searched them up
the namespace), and `src` asked from the modem's query_modem_src when not set."""

from __future__ import annotations

import textwrap

import pytest
from rclpy.parameter import Parameter

from acomms_core.codecs.config import (
    CODEC_CONFIG_PARAMETERS,
    CodecConfigError,
    check_codec_config_parameters,
    codec_config_from_parameters,
)
from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_core.ros.parameter_spec import defaults
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.srv import QueryModemSrc

TOP = """\
- codec_name: t
  miniframe_header: [0xac]
  message_codecs:
    - !include {include}
"""
MESSAGE = """\
id: 3
ros_type: std_msgs/UInt8
subscribe_topic: to_acomms/x
publish_topic: from_acomms/x
fields: {data: {codec: uint8}}
"""


@pytest.fixture
def ros_acomms_layout(tmp_path):
    """ros_acomms layout: the packet codec file in one place, message codecs in codec_directory,
    included by a path relative to that directory."""
    codecs = tmp_path / "codecs"
    (codecs / "messages").mkdir(parents=True)
    (codecs / "messages" / "x.yaml").write_text(MESSAGE)
    launch = tmp_path / "launch"
    launch.mkdir()
    (launch / "packet_codecs.yaml").write_text(TOP.format(include="messages/x.yaml"))
    return launch / "packet_codecs.yaml", codecs


def values(**given):
    return {**defaults(CODEC_CONFIG_PARAMETERS), **given}


def test_packet_codec_file_and_codec_directory(ros_acomms_layout):
    packet_codec_file, codec_directory = ros_acomms_layout
    config = codec_config_from_parameters(values(packet_codec_file=str(packet_codec_file),
                                                 codec_directory=str(codec_directory)))
    assert [m.id for m in config.message_codecs] == [3]
    with pytest.raises(CodecConfigError, match="messages/x.yaml' not found"):
        codec_config_from_parameters(values(packet_codec_file=str(packet_codec_file)))
    with pytest.raises(CodecConfigError, match="codec_directory .* is not a directory"):
        codec_config_from_parameters(values(packet_codec_file=str(packet_codec_file),
                                            codec_directory=str(codec_directory / "none")))


def test_both_file_names_must_agree():
    assert check_codec_config_parameters(values(codec_config_file="a.yaml",
                                                packet_codec_file="a.yaml")) is None
    reason = check_codec_config_parameters(values(codec_config_file="a.yaml",
                                                  packet_codec_file="b.yaml"))
    assert "name different files" in reason


def test_a_namespace_params_file_reaches_queue_and_dispatch(ros_acomms_layout, tmp_path):
    """`/veh/**` in a params file sets the ros_acomms names for every node of the namespace."""
    packet_codec_file, codec_directory = ros_acomms_layout
    params = tmp_path / "vehicle.yaml"
    params.write_text(textwrap.dedent(f"""\
        /veh/**:
          ros__parameters:
            packet_codec_file: {packet_codec_file}
            codec_directory: {codec_directory}
            src: 4
        """))
    with RosHarness(args=["test", "--ros-args", "--params-file", str(params)]) as ros:
        queue = ros.add(MessageQueueNode(context=ros.context, namespace="/veh"))
        dispatch = ros.add(PacketDispatchNode(context=ros.context, namespace="/veh"))
        other = ros.add(MessageQueueNode(context=ros.context, namespace="/other"))
        for node in (queue, dispatch):
            ros.configure_and_activate(node)
            assert [m.id for m in node.codec_config.message_codecs] == [3]
        assert queue.get_parameter("src").value == 4
        assert other.get_parameter("packet_codec_file").value == ""


def test_queue_asks_the_modem_for_src_when_unset(ros_acomms_layout):
    packet_codec_file, codec_directory = ros_acomms_layout
    overrides = [Parameter("packet_codec_file", value=str(packet_codec_file)),
                 Parameter("codec_directory", value=str(codec_directory))]
    with RosHarness() as ros:
        answers = iter([-1, 7])  # the modem does not know its address at first

        def answer(request, response):
            response.src = next(answers, 7)
            return response

        ros.helper.create_service(QueryModemSrc, "/q/query_modem_src", answer)
        queue = ros.add(MessageQueueNode(context=ros.context, namespace="/q",
                                         parameter_overrides=overrides))
        given = ros.add(MessageQueueNode(
            node_name="given", context=ros.context, namespace="/q",
            parameter_overrides=[*overrides, Parameter("src", value=2)]))
        ros.configure_and_activate(queue)
        ros.configure_and_activate(given)
        assert ros.spin_until(lambda: queue.get_parameter("src").value == 7, timeout=15.0)
        assert given.get_parameter("src").value == 2
        assert queue._src_timer is None  # stops asking once answered
