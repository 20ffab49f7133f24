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


def _ask(ros, client, request, deadline: float):
    """One service call with a short timeout (None when unanswered: a request sent before DDS
    matched the server on a loaded machine is lost, so it is asked again)."""
    try:
        return ros.call(client, request, timeout=min(3.0, max(0.5, deadline - time.monotonic())))
    except TimeoutError:
        return None


def configure_and_activate(ros, node_name: str, timeout_s: float = 40.0) -> None:
    """configure then activate `node_name` (fully qualified) through its lifecycle services, as
    a user does from rclpy. The state is read before each transition (a transition whose answer
    was lost is not repeated); AssertionError naming the node and the state it is stuck in."""
    change = ros.helper.create_client(ChangeState, f"{node_name}/change_state")
    get = ros.helper.create_client(GetState, f"{node_name}/get_state")
    deadline = time.monotonic() + timeout_s
    steps = {"unconfigured": Transition.TRANSITION_CONFIGURE,
             "inactive": Transition.TRANSITION_ACTIVATE}
    label = None
    while time.monotonic() < deadline:
        state = _ask(ros, get, GetState.Request(), deadline)
        label = state.current_state.label if state is not None else label
        if label == "active":
            return
        if state is None or label not in steps:
            continue
        request = ChangeState.Request()
        request.transition.id = steps[label]
        answer = _ask(ros, change, request, deadline)
        assert answer is None or answer.success, f"{node_name}: refused to leave {label}"
    raise AssertionError(f"{node_name}: still {label} after {timeout_s} s")
