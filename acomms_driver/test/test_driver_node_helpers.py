"""ROS-free (no rclpy context): the helpers the driver nodes share for their client callbacks."""

from types import SimpleNamespace

import rclpy.logging

from acomms_driver.nodes.driver_messages import log_at_level, publish_when_active


class _Recorder:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, *args))


def _node(state: str):
    return SimpleNamespace(_state_machine=SimpleNamespace(current_state=(0, state)))


def test_log_at_level_maps_each_level_to_one_severity():
    logger = _Recorder()
    for level in ("error", "warn", "info", "debug"):
        log_at_level(logger, level, level)
    assert logger.calls == [("error", "error"), ("warning", "warn"), ("info", "info"),
                            ("info", "debug")]


def test_log_at_level_mixes_severities_on_one_rclpy_logger():
    # rclpy raises ValueError when one call site logs at a second severity (unless the logger
    # filters the line out first: so no set_level here)
    logger = rclpy.logging.get_logger("test_driver_node_helpers")
    for level in ("info", "warn", "error", "info", "warn"):
        log_at_level(logger, level, f"a {level} line")


def test_publish_when_active_skips_inactive_nodes_and_unknown_topics():
    publisher = _Recorder()
    publishers = {"cst": publisher}
    publish_when_active(_node("active"), publishers, "cst", "m1")
    publish_when_active(_node("inactive"), publishers, "cst", "m2")
    publish_when_active(_node("deactivating"), publishers, "cst", "m3")
    publish_when_active(_node("active"), publishers, "xst", "m4")
    assert publisher.calls == [("publish", "m1")]
