"""Helpers of the tool journeys: a README shell block verbatim, free ports, and the lifecycle
transitions a user makes from rclpy (no `ros2 lifecycle` without a ROS install)."""

from __future__ import annotations

import re
import socket
import time

from journey_support import DOC_FILES
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState

FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.M | re.S)


def doc_block(marker: str) -> str:
    """The fenced code block of README.md or docs/ that contains `marker`, verbatim."""
    for path in DOC_FILES:
        for block in FENCE.findall(path.read_text(encoding="utf-8")):
            if marker in block:
                return block
    raise AssertionError(f"no code block in README.md or docs/ contains {marker!r}")


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def configure_and_activate(ros, node_name: str, timeout_s: float = 30.0) -> None:
    """configure then activate `node_name` (fully qualified) through its lifecycle services,
    as a user does from rclpy; AssertionError naming the node and the transition that failed."""
    change = ros.helper.create_client(ChangeState, f"{node_name}/change_state")
    get = ros.helper.create_client(GetState, f"{node_name}/get_state")
    deadline = time.monotonic() + timeout_s
    for transition, label in ((Transition.TRANSITION_CONFIGURE, "inactive"),
                              (Transition.TRANSITION_ACTIVATE, "active")):
        request = ChangeState.Request()
        request.transition.id = transition
        answer = ros.call(change, request, timeout=max(1.0, deadline - time.monotonic()))
        state = ros.call(get, GetState.Request(), timeout=max(1.0, deadline - time.monotonic()))
        assert answer.success and state.current_state.label == label, (
            f"{node_name}: transition {transition} left it {state.current_state.label}")
