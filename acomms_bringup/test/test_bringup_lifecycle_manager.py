"""lifecycle_manager driven through its ROS interface against small test-only lifecycle nodes.

Everything runs in one process (RosHarness: private Context, multi-threaded executor). Every test
runs twice: with the manager reaching the nodes only through their change_state/get_state
services, as it would across processes ("services"), and with the node objects handed over by
`use_local_nodes` ("in_process", the embedded runner's fast path; a node that is not handed over,
like "ghost", is still reached through its services). Both must behave the same.
"""

import itertools
import sys
import time

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import GetState
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_srvs.srv import Trigger

from acomms_bringup.nodes.lifecycle_manager import LifecycleManager, check_node_names
from acomms_core.ros.ros_support import lifecycle_state_label
from acomms_core.ros.testing import RosHarness

NAMESPACE = "/lm_test"


class RecordingNode(LifecycleNode):
    """Records every transition callback into a shared journal; can be told to fail one."""

    def __init__(self, name, journal, fail=None, hang_seconds=0.0, **kwargs):
        super().__init__(name, namespace=NAMESPACE, **kwargs)
        self.journal = journal
        self.fail = fail  # None | "configure" | "activate" | "hang:configure"
        self.hang_seconds = hang_seconds

    def _record(self, what):
        self.journal.append((self.get_name(), what))
        if self.fail == f"hang:{what}":
            time.sleep(self.hang_seconds)  # a node stuck in its callback (test only)
        if what == self.fail:
            self.get_logger().error(f"{what} refused on purpose (test)")
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def on_configure(self, state):
        return self._record("configure")

    def on_activate(self, state):
        result = self._record("activate")
        if result == TransitionCallbackReturn.SUCCESS:
            return super().on_activate(state)
        return result

    def on_deactivate(self, state):
        self._record("deactivate")
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        return self._record("cleanup")


def state_of(node):
    return lifecycle_state_label(node)


def make_manager(ros, names, autostart=False, **extra):
    overrides = [Parameter("node_names", value=[f"{NAMESPACE}/{n}" for n in names]),
                 Parameter("autostart", value=autostart),
                 Parameter("transition_timeout_seconds", value=extra.get("timeout", 5.0)),
                 Parameter("service_wait_seconds", value=extra.get("service_wait", 20.0)),
                 Parameter("retry_deadline_seconds", value=extra.get("retry_deadline", 5.0))]
    overrides += [Parameter(name, value=value) for name, value in extra.get("more", {}).items()]
    manager = LifecycleManager(node_name=extra.get("name", "lifecycle_manager"),
                               namespace=NAMESPACE, context=ros.context,
                               parameter_overrides=overrides)
    if ros.reach == "in_process":
        local = {n.get_fully_qualified_name(): n for n in ros.nodes
                 if isinstance(n, LifecycleNode)}
        assert manager.use_local_nodes(local) == [name for name in manager.node_names
                                                  if name in local]
    return ros.add(manager)


def timed_out(ros, what, seconds):
    """The reason a transition that outlasts the timeout gets: over a service the answer does
    not come in time; in-process the call returns late."""
    if ros.reach == "in_process":
        return f"{what} took "
    return f"{what} got no answer within {seconds:g} s"


def trigger(ros, service, timeout=20.0):
    client = ros.helper.create_client(Trigger, f"{NAMESPACE}/lifecycle_manager/{service}")
    return ros.call(client, Trigger.Request(), timeout=timeout)


def get_state(ros, fqn):
    client = ros.helper.create_client(GetState, f"{fqn}/get_state")
    return ros.call(client, GetState.Request(), timeout=5.0).current_state.id


_TEST_NUMBERS = itertools.count()


@pytest.fixture(autouse=True)
def _namespace_of_its_own(monkeypatch):
    """Each test in its own namespace: its nodes never share names with the previous test's,
    whose graph entries DDS may still be removing under load (a service then reads "not
    ready")."""
    monkeypatch.setattr(sys.modules[__name__], "NAMESPACE",
                        f"{NAMESPACE}_{next(_TEST_NUMBERS)}")


@pytest.fixture(params=["services", "in_process"])
def ros(request):
    with RosHarness() as harness:
        harness.reach = request.param
        yield harness


def test_startup_configures_all_then_activates_all_in_order(ros):
    journal = []
    nodes = [ros.add(RecordingNode(n, journal, context=ros.context)) for n in ("a", "b", "c")]
    make_manager(ros, ["a", "b", "c"])
    response = trigger(ros, "startup")
    assert response.success, response.message
    assert journal == [("a", "configure"), ("b", "configure"), ("c", "configure"),
                       ("a", "activate"), ("b", "activate"), ("c", "activate")]
    for node in nodes:
        assert get_state(ros, node.get_fully_qualified_name()) == State.PRIMARY_STATE_ACTIVE
    status = trigger(ros, "status")
    assert status.success
    assert f"{NAMESPACE}/c: active" in status.message


def test_autostart_brings_nodes_up_without_a_call(ros):
    journal = []
    nodes = [ros.add(RecordingNode(n, journal, context=ros.context)) for n in ("a", "b")]
    manager = make_manager(ros, ["a", "b"], autostart=True)
    assert ros.spin_until(lambda: manager.manager_state == "active", timeout=15.0)
    assert all(state_of(n) == "active" for n in nodes)


def test_failed_configure_names_node_and_rolls_back(ros):
    journal = []
    good = ros.add(RecordingNode("a", journal, context=ros.context))
    ros.add(RecordingNode("b", journal, context=ros.context, fail="configure"))
    untouched = ros.add(RecordingNode("c", journal, context=ros.context))
    manager = make_manager(ros, ["a", "b", "c"])
    statuses = []
    ros.helper.create_subscription(
        DiagnosticArray, f"{NAMESPACE}/lifecycle_manager/manager_status", statuses.append,
        QoSProfile(depth=5, durability=DurabilityPolicy.TRANSIENT_LOCAL))

    response = trigger(ros, "startup")
    assert not response.success
    assert f"{NAMESPACE}/b: configure failed" in response.message
    assert f"rolled back {NAMESPACE}/a" in response.message
    # a was configured then cleaned up; b's configure failed; c was never touched.
    assert journal == [("a", "configure"), ("b", "configure"), ("a", "cleanup")]
    assert state_of(good) == "unconfigured"
    assert state_of(untouched) == "unconfigured"
    assert manager.manager_state == "failed"
    # The status topic names the failed node with level ERROR.
    assert ros.spin_until(lambda: statuses and statuses[-1].status[0].message.startswith(
        "startup failed"), timeout=5.0)
    by_name = {s.name: s for s in statuses[-1].status}
    assert by_name[f"{NAMESPACE}/b"].level == DiagnosticStatus.ERROR
    assert "configure failed" in by_name[f"{NAMESPACE}/b"].message
    assert by_name[f"{NAMESPACE}/a"].level == DiagnosticStatus.OK


def test_failed_activate_rolls_back_every_node_it_started(ros):
    journal = []
    nodes = [ros.add(RecordingNode("a", journal, context=ros.context)),
             ros.add(RecordingNode("b", journal, context=ros.context)),
             ros.add(RecordingNode("c", journal, context=ros.context, fail="activate"))]
    make_manager(ros, ["a", "b", "c"])
    response = trigger(ros, "startup")
    assert not response.success
    assert f"{NAMESPACE}/c: activate failed" in response.message
    assert all(state_of(n) == "unconfigured" for n in nodes), [state_of(n) for n in nodes]
    rollback = journal[6:]
    assert rollback == [("c", "cleanup"), ("b", "deactivate"), ("b", "cleanup"),
                        ("a", "deactivate"), ("a", "cleanup")]


def test_transition_timeout_is_reported_and_the_slow_node_rolled_back(ros):
    journal = []
    first = ros.add(RecordingNode("a", journal, context=ros.context))
    slow = ros.add(RecordingNode("slow", journal, context=ros.context, fail="hang:configure",
                                 hang_seconds=1.0))
    make_manager(ros, ["a", "slow"], timeout=0.4, retry_deadline=0.3)
    response = trigger(ros, "startup")
    assert not response.success
    assert f"{NAMESPACE}/slow: {timed_out(ros, 'configure', 0.4)}" in response.message
    # The slow node finished configuring after the timeout; it is cleaned up, not left inactive.
    assert ros.spin_until(lambda: state_of(slow) == "unconfigured" and
                          state_of(first) == "unconfigured", timeout=5.0)
    assert ("slow", "cleanup") in journal and ("a", "cleanup") in journal


def test_missing_node_is_reported_and_nothing_left_started(ros):
    journal = []
    first = ros.add(RecordingNode("a", journal, context=ros.context))
    make_manager(ros, ["a", "ghost"], service_wait=0.5)
    response = trigger(ros, "startup")
    assert not response.success
    assert f"{NAMESPACE}/ghost: lifecycle services" in response.message
    assert "did not appear" in response.message
    assert journal == []  # services are checked before anything is configured
    assert state_of(first) == "unconfigured"


def test_shutdown_reverse_order_and_restart(ros):
    journal = []
    nodes = [ros.add(RecordingNode(n, journal, context=ros.context)) for n in ("a", "b")]
    make_manager(ros, ["a", "b"])
    assert trigger(ros, "startup").success
    journal.clear()
    response = trigger(ros, "shutdown")
    assert response.success, response.message
    assert journal == [("b", "deactivate"), ("b", "cleanup"), ("a", "deactivate"),
                       ("a", "cleanup")]
    assert all(state_of(n) == "unconfigured" for n in nodes)
    status = trigger(ros, "status")
    assert not status.success and f"{NAMESPACE}/a: unconfigured" in status.message

    assert trigger(ros, "startup").success
    journal.clear()
    response = trigger(ros, "restart")
    assert response.success, response.message
    assert journal == [("b", "deactivate"), ("b", "cleanup"), ("a", "deactivate"),
                       ("a", "cleanup"), ("a", "configure"), ("b", "configure"),
                       ("a", "activate"), ("b", "activate")]
    assert all(state_of(n) == "active" for n in nodes)


def test_startup_skips_nodes_already_up(ros):
    journal = []
    nodes = [ros.add(RecordingNode(n, journal, context=ros.context)) for n in ("a", "b")]
    ros.configure_and_activate(nodes[0])
    journal.clear()
    make_manager(ros, ["a", "b"])
    assert trigger(ros, "startup").success
    assert journal == [("b", "configure"), ("b", "activate")]


def test_bad_node_names_refused_at_construction(ros):
    with pytest.raises(ValueError, match="is not a node name"):
        LifecycleManager(context=ros.context,
                         parameter_overrides=[Parameter("node_names", value=["trailing/"])])
    with pytest.raises(ValueError, match="at least one"):
        LifecycleManager(node_name="lm_empty", context=ros.context)


@pytest.mark.parametrize("names, words", [
    ([], "at least one"),
    (None, "at least one"),
    (["/a/x", "b"], None),  # relative: resolved in the manager's namespace
    (["/a/x", "b/c"], None),
    (["/a/x/"], "'/a/x/' is not a node name"),
    (["/a//x"], "is not a node name"),
    (["~/x"], "is not a node name"),
    (["/a/x", "/a/y", "/a/x"], "listed more than once: ['/a/x']"),
    (["/a/x", "/a/y"], None),
])
def test_node_names_validator_is_pure(names, words):
    values = {"node_names": names, "autostart": True}
    reason = check_node_names(values)
    assert reason is None if words is None else words in reason
    assert values == {"node_names": names, "autostart": True}  # nothing changed


def test_runtime_timeout_change_applies_to_the_next_call(ros):
    journal = []
    slow = ros.add(RecordingNode("a", journal, context=ros.context, fail="hang:configure",
                                 hang_seconds=1.0))
    manager = make_manager(ros, ["a"], timeout=5.0, retry_deadline=0.2)
    result = manager.set_parameters([Parameter("transition_timeout_seconds", value=0.3)])[0]
    assert result.successful
    response = trigger(ros, "startup")
    assert not response.success
    assert f"{NAMESPACE}/a: {timed_out(ros, 'configure', 0.3)}" in response.message
    ((name, problem),) = manager.node_problems()
    assert name == f"{NAMESPACE}/a"
    # (over the services the roll-back's get_state may be the call that timed out last)
    assert "got no answer within 0.3 s (" in problem if ros.reach == "services" else (
        problem.startswith("configure took ") and "the 0.3 s transition timeout" in problem)
    # Let the slow node finish and its late answers arrive before the harness tears down.
    assert ros.spin_until(lambda: state_of(slow) in ("inactive", "unconfigured"), timeout=5.0)
    ros.spin_for(0.5)


def test_destroy_node_releases_the_managers_entities(ros):
    manager = make_manager(ros, ["a"], service_wait=0.2)
    assert len(manager._resources) == 1 + 4  # status publisher, 4 services; clients come later
    assert not trigger(ros, "startup").success  # no node "a": its clients were made and waited
    assert len(manager._resources) == 2 + 1 + 4  # two clients, status publisher, 4 services
    ros.nodes.remove(manager)
    ros.executor.remove_node(manager)
    manager.destroy_node()
    assert len(manager._resources) == 0


def test_in_process_transitions_wait_for_the_nodes_running_callback(ros):
    """A transition driven in-process runs in the node's change_state callback group, as the
    service would: never while the node is inside another callback of that group."""
    journal = []
    node = ros.add(RecordingNode("a", journal, context=ros.context))

    def busy():
        timer.cancel()
        journal.append(("a", "busy from"))
        time.sleep(0.5)
        journal.append(("a", "busy until"))

    timer = node.create_timer(0.0, busy)  # the node's default (mutually exclusive) group
    assert ros.spin_until(lambda: journal, timeout=5.0)
    make_manager(ros, ["a"])
    assert trigger(ros, "startup").success
    assert journal == [("a", "busy from"), ("a", "busy until"), ("a", "configure"),
                       ("a", "activate")]


def test_use_local_nodes_refuses_a_node_of_another_name(ros):
    other = ros.add(RecordingNode("b", [], context=ros.context))
    manager = make_manager(ros, ["a"])
    with pytest.raises(ValueError, match=f"the node given is {NAMESPACE}/b"):
        manager.use_local_nodes({f"{NAMESPACE}/a": other})


def test_relative_node_names_are_resolved_in_the_managers_namespace(ros):
    journal = []
    nodes = [ros.add(RecordingNode(n, journal, context=ros.context)) for n in ("a", "b")]
    overrides = [Parameter("node_names", value=["a", f"{NAMESPACE}/b"]),
                 Parameter("autostart", value=True)]
    manager = LifecycleManager(namespace=NAMESPACE, context=ros.context,
                               parameter_overrides=overrides)
    assert manager.node_names == [f"{NAMESPACE}/a", f"{NAMESPACE}/b"]
    if ros.reach == "in_process":
        manager.use_local_nodes({n.get_fully_qualified_name(): n for n in nodes})
    ros.add(manager)
    assert ros.spin_until(lambda: manager.manager_state == "active", timeout=15.0)
    assert all(state_of(n) == "active" for n in nodes)


def test_services_listed_but_not_reported_ready_are_used(ros):
    """Fast DDS reports a service not ready while half of a dead server with the same name is
    still in its graph (seen under load: a node restarted within its lease). The manager then
    uses the services the node lists, instead of waiting out service_wait_seconds."""
    journal = []
    ros.add(RecordingNode("a", journal, context=ros.context))
    manager = make_manager(ros, ["a"], service_wait=30.0)
    if ros.reach == "in_process":  # no service clients in-process
        return
    make_clients = manager._make_clients

    def never_ready_clients(managed):
        make_clients(managed)
        for client in (managed.change_state, managed.get_state):
            client.service_is_ready = lambda: False

    manager._make_clients = never_ready_clients
    started = time.monotonic()
    response = trigger(ros, "startup")
    assert response.success, response.message
    assert journal == [("a", "configure"), ("a", "activate")]
    assert time.monotonic() - started < 10.0


class _RecordingLogger:
    """Stands in for the manager's logger: what it was told, per severity."""

    def __init__(self, logger):
        self.logger, self.lines = logger, {"debug": [], "warning": []}

    def __getattr__(self, name):
        if name in ("debug", "warning"):
            return lambda message, **kwargs: self.lines[name].append(message)
        return getattr(self.logger, name)


def _services_not_ready_start(ros, duplicates: int):
    """Startup while DDS calls the node's services not ready and the graph holds `duplicates`
    nodes of its name; the manager's log lines."""
    journal = []
    ros.add(RecordingNode("a", journal, context=ros.context))
    manager = make_manager(ros, ["a"], service_wait=30.0)
    logger = _RecordingLogger(manager.get_logger())
    manager.get_logger = lambda: logger
    make_clients = manager._make_clients

    def never_ready_clients(managed):
        make_clients(managed)
        for client in (managed.change_state, managed.get_state):
            client.service_is_ready = lambda: False

    manager._make_clients = never_ready_clients
    if duplicates > 1:
        graph = manager.get_node_names_and_namespaces
        manager.get_node_names_and_namespaces = lambda: graph() + [("a", NAMESPACE)] * (
            duplicates - 1)
    response = trigger(ros, "startup")
    assert response.success, response.message
    assert journal == [("a", "configure"), ("a", "activate")]
    return logger.lines


def test_a_clean_start_does_not_warn(ros):
    """Services listed before DDS matches the clients is a normal first start: debug only."""
    journal = []
    ros.add(RecordingNode("a", journal, context=ros.context))
    manager = make_manager(ros, ["a"])
    logger = _RecordingLogger(manager.get_logger())
    manager.get_logger = lambda: logger
    assert trigger(ros, "startup").success
    assert logger.lines["warning"] == []


def test_services_listed_before_dds_matches_them_is_no_warning(ros):
    """DDS matching the clients late (a loaded machine's first start) is logged at debug."""
    if ros.reach == "in_process":  # no service clients in-process
        return
    lines = _services_not_ready_start(ros, duplicates=1)
    assert lines["warning"] == []
    assert any("lifecycle services listed, DDS not yet reporting them ready" in line
               for line in lines["debug"]), lines


def test_a_second_node_of_the_same_name_is_warned_about(ros):
    if ros.reach == "in_process":
        return
    lines = _services_not_ready_start(ros, duplicates=2)
    assert lines["warning"], lines  # (throttled by the real logger)
    for warning in lines["warning"]:
        assert warning.startswith(f"{NAMESPACE}/a: 2 nodes of that name are in the graph")


def test_a_late_transition_answer_is_waited_out_not_repeated(ros):
    """configure outlasts the answer timeout: the manager reads the state again (with backoff)
    until the node is out of its transition, finds it inactive and goes on; configure ran once."""
    journal = []
    slow = ros.add(RecordingNode("a", journal, context=ros.context, fail="hang:configure",
                                 hang_seconds=0.8))
    manager = make_manager(ros, ["a"], timeout=0.3, retry_deadline=10.0)
    if ros.reach == "in_process":  # in-process there is no answer to lose
        return
    response = trigger(ros, "startup")
    assert response.success, response.message
    assert journal == [("a", "configure"), ("a", "activate")]
    assert state_of(slow) == "active" and manager.manager_state == "active"


def test_a_lost_change_state_is_sent_again(ros):
    """The first change_state is answered too late and did nothing (a lost request): the state
    read again is still unconfigured, so the manager sends configure again and goes on."""
    journal = []
    node = ros.add(RecordingNode("a", journal, context=ros.context))
    service = node._service_change_state
    real_callback, dropped = service.callback, []

    def lose_first(request, response):
        if not dropped:
            dropped.append(request.transition.id)
            time.sleep(0.5)  # answer after the manager's 0.2 s timeout, without transitioning
            response.success = False
            return response
        return real_callback(request, response)

    service.callback = lose_first
    manager = make_manager(ros, ["a"], timeout=0.2, retry_deadline=10.0)
    if ros.reach == "in_process":
        return
    response = trigger(ros, "startup")
    assert response.success, response.message
    assert dropped == [Transition.TRANSITION_CONFIGURE]
    assert journal == [("a", "configure"), ("a", "activate")]
    assert manager.manager_state == "active"


def test_a_manager_waits_for_the_managers_it_follows(ros):
    """`wait_for_managers`: the clock group starts only when the vehicle group is active."""
    journal = []
    ros.add(RecordingNode("vehicle_node", journal, context=ros.context))
    ros.add(RecordingNode("clock_node", journal, context=ros.context))
    vehicle = make_manager(ros, ["vehicle_node"], name="vehicle_manager")
    clock = make_manager(ros, ["clock_node"], autostart=True, name="clock_manager",
                         more={"wait_for_managers": ["vehicle_manager"]})
    ros.spin_for(0.5)
    assert clock.manager_state == "starting" and journal == []
    client = ros.helper.create_client(Trigger, f"{NAMESPACE}/vehicle_manager/startup")
    assert ros.call(client, Trigger.Request(), timeout=20.0).success
    assert ros.spin_until(lambda: clock.manager_state == "active", timeout=15.0)
    assert journal == [("vehicle_node", "configure"), ("vehicle_node", "activate"),
                       ("clock_node", "configure"), ("clock_node", "activate")]
    assert vehicle.manager_state == "active"


def test_a_manager_gives_up_on_managers_that_never_come_up(ros):
    ros.add(RecordingNode("clock_node", [], context=ros.context))
    clock = make_manager(ros, ["clock_node"], autostart=True, name="clock_manager",
                         more={"wait_for_managers": [f"{NAMESPACE}/absent_manager"],
                               "manager_wait_seconds": 0.3})
    assert ros.spin_until(lambda: clock.manager_state == "failed", timeout=10.0)
    assert f"managers not active in time: {NAMESPACE}/absent_manager (no status yet)" in (
        clock.last_message)
