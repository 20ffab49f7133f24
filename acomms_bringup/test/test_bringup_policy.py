"""The lifecycle manager's bring-up policy without ROS: names, retry schedule, next transition."""

import pytest

from acomms_bringup.description.bringup_policy import (
    DOWN,
    UP,
    Attempts,
    Blocked,
    RetrySchedule,
    Step,
    Wait,
    is_valid_node_name,
    next_step,
    resolve_node_name,
)


@pytest.mark.parametrize("name, namespace, resolved", [
    ("modem_sim_node", "/auv", "/auv/modem_sim_node"),
    ("modem_sim_node", "/", "/modem_sim_node"),
    ("sub/node", "/fleet/auv", "/fleet/auv/sub/node"),
    ("/other/node", "/auv", "/other/node"),
])
def test_relative_names_resolve_in_the_namespace(name, namespace, resolved):
    assert resolve_node_name(name, namespace) == resolved


@pytest.mark.parametrize("name, valid", [
    ("node", True), ("/a/node", True), ("a/node", True), ("", False), ("/", False),
    ("a/", False), ("a//b", False), ("~/x", False)])
def test_node_name_validity(name, valid):
    assert is_valid_node_name(name) is valid


def test_backoff_doubles_up_to_its_ceiling():
    pauses = RetrySchedule(first_pause_s=0.1, factor=2.0, max_pause_s=0.5).pauses()
    assert [round(next(pauses), 3) for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]


def test_attempts_stop_at_the_deadline_and_cut_the_last_pause():
    now = [100.0]
    attempts = Attempts(1.0, RetrySchedule(0.4, 2.0, 10.0), clock=lambda: now[0])
    assert attempts.next_pause_s() == pytest.approx(0.4)
    now[0] += 0.4
    assert attempts.next_pause_s() == pytest.approx(0.6)  # 0.8 wanted, 0.6 left
    now[0] += 0.6
    assert attempts.next_pause_s() is None
    assert attempts.remaining_s() == 0.0


def test_startup_configures_all_in_order_then_activates_all():
    states = ["unconfigured", "unconfigured", "inactive"]
    moves = []
    while (step := next_step(states, UP)) is not None:
        assert isinstance(step, Step)
        moves.append((step.index, step.transition))
        states[step.index] = step.expected
    assert moves == [(0, "configure"), (1, "configure"), (0, "activate"), (1, "activate"),
                     (2, "activate")]
    assert states == ["active"] * 3


def test_bring_down_goes_node_by_node_in_reverse():
    states = ["active", "inactive", "active"]
    moves = []
    while (step := next_step(states, DOWN)) is not None:
        moves.append((step.index, step.transition))
        states[step.index] = step.expected
    assert moves == [(2, "deactivate"), (2, "cleanup"), (1, "cleanup"), (0, "deactivate"),
                     (0, "cleanup")]


def test_transition_states_are_waited_for_and_odd_states_block():
    assert next_step(["active", "configuring", "unconfigured"]) == Wait(1, "configuring")
    assert next_step(["active", "activating"], DOWN) == Wait(1, "activating")
    blocked = next_step(["unconfigured", "finalized"])
    assert isinstance(blocked, Blocked) and blocked.index == 1
    assert blocked.reason == "cannot start from state finalized"
    assert next_step(["unknown"], DOWN) == Blocked(0, "cannot stop from state unknown")
    assert next_step(["active", "active"]) is None
    assert next_step(["unconfigured"], DOWN) is None
