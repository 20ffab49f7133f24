"""Parsing a codec config is pure (issue 27 item 7): it reads the YAML and nothing else, so a run
can be planned from a secured config whose key file is missing or whose state directory cannot
be written; the queue and dispatch nodes read the key file and state at configure and refuse
there, with the reason."""

from __future__ import annotations

import builtins
import io
import os

import pytest
import yaml
from lifecycle_msgs.msg import State
from rcl_interfaces.msg import Log
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from security_support import KEY_1, secured_entry, write_key_file

from acomms_core.codecs import load_codec_config
from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_core.ros.testing import RosHarness
from acomms_core.security import SecurityConfigError
from acomms_core.security.state import forget_sender_counters


def _config(tmp_path, key_file) -> str:
    path = tmp_path / "codecs.yaml"
    path.write_text(yaml.safe_dump([secured_entry(str(key_file))]))
    return str(path)


@pytest.fixture
def opened(monkeypatch):
    """Every path opened (open, io.open, os.open) while the fixture is active."""
    paths = []

    def spy(real):
        def wrapper(file, *args, **kwargs):
            paths.append(os.fspath(file) if isinstance(file, (str, os.PathLike)) else file)
            return real(file, *args, **kwargs)
        return wrapper

    for module, name in ((builtins, "open"), (io, "open"), (os, "open")):
        monkeypatch.setattr(module, name, spy(getattr(module, name)))
    forget_sender_counters()
    yield paths
    forget_sender_counters()


def test_parsing_opens_only_the_yaml_even_with_a_missing_key_file(tmp_path, opened):
    config_path = _config(tmp_path, tmp_path / "missing.keys")
    opened.clear()  # what the test itself wrote
    config = load_codec_config(config_path)
    assert [m.id for m in config.message_codecs] == [5, 6]
    assert set(opened) == {config_path}, opened
    codec = config.packet_codecs[0].packet_codec
    with pytest.raises(SecurityConfigError, match="missing.keys"):
        codec.load_keys()  # what configure does: the reason names the file


def test_parsing_a_config_with_a_good_key_file_does_not_read_it(tmp_path, opened):
    key_file = write_key_file(tmp_path / "fleet.keys", [(1, KEY_1, None)])
    config_path = _config(tmp_path, key_file)
    opened.clear()  # what the test itself wrote
    codec = load_codec_config(config_path).packet_codecs[0].packet_codec
    assert key_file not in opened and config_path in opened
    codec.bind_sender(1, str(tmp_path / "state"), allow_fresh=True)  # a new key
    assert key_file in opened and codec.keyring.send_key_id == 1


def _configure(node_class, config: str, state_dir: str, namespace: str):
    """(configure result, state label, ERROR lines the node logged)."""
    with RosHarness() as ros:
        errors = []
        ros.helper.create_subscription(
            Log, "/rosout", lambda m: errors.append(m.msg) if m.level >= Log.ERROR else None, 50)
        node = ros.add(node_class(context=ros.context, namespace=namespace, parameter_overrides=[
            Parameter("codec_config_file", value=config), Parameter("src", value=1),
            Parameter("security_state_dir", value=state_dir)]))
        result = node.trigger_configure()
        state = node._state_machine.current_state[0]
        ros.spin_until(lambda: errors, 5.0)
        return result, state, errors


@pytest.mark.parametrize("node_class", [MessageQueueNode, PacketDispatchNode])
def test_configure_refuses_a_missing_key_file_with_the_reason(tmp_path, node_class):
    config = _config(tmp_path, tmp_path / "missing.keys")
    result, state, errors = _configure(node_class, config, str(tmp_path / "state"), "/auv7")
    assert result == TransitionCallbackReturn.FAILURE
    assert state == State.PRIMARY_STATE_UNCONFIGURED
    assert any("configure refused" in e and "missing.keys" in e for e in errors), errors


@pytest.mark.parametrize("node_class", [MessageQueueNode, PacketDispatchNode])
def test_an_unwritable_state_dir_parses_and_configure_refuses(tmp_path, node_class):
    key_file = write_key_file(tmp_path / "fleet.keys", [(1, KEY_1, None)])
    config = _config(tmp_path, key_file)
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("")
    state_dir = str(blocker / "state")  # below a file: cannot be created, even by root
    assert load_codec_config(config).packet_codecs[0].packet_codec.src is None
    result, _, errors = _configure(node_class, config, state_dir, "/auv8")
    assert result == TransitionCallbackReturn.FAILURE
    assert any("security state directory" in e and state_dir in e for e in errors), errors
