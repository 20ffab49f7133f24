"""MBARI WEC bridges through their ROS interfaces: telemetry decimated latest-only, and every
command service called over a simulated link (the test relays the envelopes through the codec
config), with out-of-range refusal, server- and caller-side timeouts and "not available".
The service test runs on sim time: timeouts fire only when the test moves /clock."""

import pathlib

import pytest
import rclpy
from bitstring import ConstBitStream
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock

from acomms_bringup.run.compose import start_sim_clock
from acomms_core.codecs.config import load_codec_config
from acomms_core.ros.ros_support import now_s, seconds_to_time_msg, stamp_seconds
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import RemoteServiceRequest, RemoteServiceResponse
from acomms_sim.clock.events_stepper import (
    EventsStepper,
    events_executor_available,
    make_events_executor,
)
from acomms_sim.clock.local_clocks import LocalClocks
from acomms_sim.clock.stepping import next_step_ns

buoy_srv = pytest.importorskip("buoy_interfaces.srv", reason="scripts/buoy_interfaces.sh not run")
from buoy_interfaces.msg import BCRecord, PBRecord  # noqa: E402

from acomms_bringup.bridges.remote_service_nodes import (  # noqa: E402
    RemoteServiceCaller,
    RemoteServiceServer,
)
from acomms_bringup.bridges.wec_standin import WecStandinBuoy, WecStandinOperator  # noqa: E402
from acomms_bringup.bridges.wec_telemetry_bridge import WecTelemetryBridge  # noqa: E402

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config" / "wec_buoy_codecs.yaml"
CODECS = {m.id: m.codec for m in load_codec_config(str(CONFIG)).message_codecs}
BAD_SOCK, BAD_INPUT, NOT_IMPLEMENTED = -1, -3, -99
CALLS = [("pump_command", "PumpCommand", "duration_mins", 5.0),
         ("valve_command", "ValveCommand", "duration_sec", 20),
         ("tf_set_pos_command", "TFSetPosCommand", "position", 1),
         ("pc_scale_command", "PCScaleCommand", "scale", 0.75),
         ("pc_retract_command", "PCRetractCommand", "retract", 0.5),
         ("pc_wind_curr_command", "PCWindCurrCommand", "wind_curr", -12.5),
         ("pc_bias_curr_command", "PCBiasCurrCommand", "bias_curr", 3.25)]


def _p(name, value):
    return Parameter(name, value=value)


def test_telemetry_is_decimated_latest_only():
    with RosHarness() as ros:
        standin = ros.add(WecStandinBuoy(context=ros.context, namespace="/buoy",
                                         parameter_overrides=[_p("publish_period_s", 0.02),
                                                              _p("telemetry_prefix", "")]))
        bridge = ros.add(WecTelemetryBridge(context=ros.context, namespace="/buoy",
                                            parameter_overrides=[
                                                _p("telemetry_prefix", ""),
                                                _p("powerbuoy_data_period_s", 0.25),
                                                _p("battery_data_period_s", 0.25)]))
        out = {"pb": [], "bc": []}
        ros.helper.create_subscription(PBRecord, "/buoy/to_acomms/powerbuoy_data",
                                       out["pb"].append, 10)
        ros.helper.create_subscription(BCRecord, "/buoy/to_acomms/battery_data",
                                       out["bc"].append, 10)
        ros.configure_and_activate(bridge)
        ros.configure_and_activate(standin)
        assert ros.spin_until(lambda: len(out["pb"]) >= 3 and out["bc"], timeout=15.0)
        counts = bridge.counts
        assert counts["powerbuoy_data_decimated"] > 0
        assert counts["powerbuoy_data_received"] > counts["powerbuoy_data_forwarded"] >= 3
        seqs = [m.pc.seq_num for m in out["pb"]]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert max(b - a for a, b in zip(seqs, seqs[1:], strict=False)) > 1   # decimated
        assert "power_data_received" not in counts   # period 0: not forwarded
        for node in (standin, bridge):   # stop the 50 Hz timers before the harness tears down
            node.trigger_deactivate()


class Link:
    """Relays the envelopes between /top and /buoy through the codec config."""

    def __init__(self, ros):
        self.drop = False
        self.requests = 0
        h = ros.helper
        self.to_buoy = h.create_publisher(RemoteServiceRequest,
                                          "/buoy/from_acomms/service_request", 10)
        self.to_top = h.create_publisher(RemoteServiceResponse,
                                         "/top/from_acomms/service_response", 10)
        h.create_subscription(RemoteServiceRequest, "/top/to_acomms/service_request",
                              lambda m: self.relay(m, 56, self.to_buoy), 10)
        h.create_subscription(RemoteServiceResponse, "/buoy/to_acomms/service_response",
                              lambda m: self.relay(m, 57, self.to_top), 10)

    def relay(self, msg, codec_id, publisher):
        self.requests += codec_id == 56
        if not self.drop:
            codec = CODECS[codec_id]
            publisher.publish(codec.decode(ConstBitStream(codec.encode(msg)[0])))


def _call(ros, name, srv, field, value, jump=None):
    """Call /top/<name>; with jump=(predicate, clock publisher, seconds): once predicate() holds
    (the call is in flight), move sim time forward so that its timeout fires."""
    cls = getattr(buoy_srv, srv)
    client = ros.helper.create_client(cls, f"/top/{name}")
    assert client.wait_for_service(timeout_sec=15.0)
    future = client.call_async(cls.Request(**{field: value}))
    if jump is not None:
        in_flight, clock, seconds = jump
        assert ros.spin_until(in_flight, timeout=15.0)
        clock.publish(Clock(clock=seconds_to_time_msg(seconds)))
    assert ros.spin_until(future.done, timeout=15.0), name
    return future.result().result.value


def test_every_command_round_trip_refusals_and_timeouts():
    with RosHarness() as ros:
        sim = [_p("use_sim_time", True)]
        clock = ros.helper.create_publisher(Clock, "/clock", 10)
        standin = ros.add(WecStandinBuoy(context=ros.context, namespace="/buoy",
                                         parameter_overrides=sim + [
                                             _p("publish_period_s", 1000.0),
                                             _p("service_prefix", "")]))
        server = ros.add(RemoteServiceServer(context=ros.context, namespace="/buoy",
                                             parameter_overrides=sim + [
                                                 _p("service_timeout_s", 5.0),
                                                 _p("target_prefix", "")]))
        caller = ros.add(RemoteServiceCaller(context=ros.context, namespace="/top",
                                             parameter_overrides=sim + [
                                                 _p("call_timeout_s", 60.0)]))
        link = Link(ros)
        clock.publish(Clock(clock=seconds_to_time_msg(100.0)))
        assert ros.spin_until(lambda: now_s(caller) == 100.0 and now_s(server) == 100.0, 10.0)
        for node in (standin, server, caller):
            ros.configure_and_activate(node)
        for name, srv, field, value in CALLS:
            assert _call(ros, name, srv, field, value) == 0, name
            got_name, request = standin.commands[-1]
            assert got_name == name and getattr(request, field) == pytest.approx(value)
        assert caller.counts["answered"] == len(CALLS)

        # Out of range: answered at once with BAD_INPUT, nothing transmitted.
        sent = link.requests
        for name, srv, field, value in [("pump_command", "PumpCommand", "duration_mins", 12.0),
                                        ("pc_scale_command", "PCScaleCommand", "scale", 1.5),
                                        ("valve_command", "ValveCommand", "duration_sec", 128)]:
            assert _call(ros, name, srv, field, value) == BAD_INPUT
        assert link.requests == sent and caller.counts["refused_out_of_range"] == 3
        assert _call(ros, "pump_command", "PumpCommand", "duration_mins", 0.0) == 0   # OFF

        standin.silent.add("valve_command")          # the buoy's service never answers
        assert _call(ros, "valve_command", "ValveCommand", "duration_sec", 5, jump=(
            lambda: server.counts["called"] == len(CALLS) + 2, clock, 106.0)) == BAD_SOCK
        assert server.counts["timeouts"] == 1 and caller.counts["timeouts"] == 0

        link.drop = True                             # the link loses the request
        assert _call(ros, "pc_scale_command", "PCScaleCommand", "scale", 1.0, jump=(
            lambda: caller.counts["requests_sent"] == len(CALLS) + 3, clock, 170.0)) == BAD_SOCK
        assert caller.counts["timeouts"] == 1
        link.drop = False

        standin.trigger_deactivate()                 # its services are gone
        assert _call(ros, "tf_set_pos_command", "TFSetPosCommand", "position", 0) == \
            NOT_IMPLEMENTED
        assert server.counts["not_available"] == 1
        for node in (caller, server):
            node.trigger_deactivate()


# ---- on acomms_run's deterministic clock (EventsExecutor, clocks set directly), far from now --
S = 1_000_000_000
START_2031 = 1938038400.0   # 2031-06-01T00:00:00Z: neither the 2025 default start nor today


class SteppedClock:
    """acomms_run's deterministic clock for a few sim-time nodes: their clocks read `start_s`
    from creation (as acomms_run sets them), an EventsExecutor drained to quiescence after each
    step, time moved straight to the next timer deadline (acomms_bringup.run.stepped_run)."""

    def __init__(self, ros, start_s: float):
        self.context = ros.context
        self.nodes = []
        self.now_ns = round(start_s * S)
        self.executor = self.stepper = self.clocks = None

    def node(self, node):
        start_sim_clock(node, self.now_ns / S)
        self.nodes.append(node)
        return node

    def start(self) -> None:
        self.executor = make_events_executor(self.context)
        for node in self.nodes:
            self.executor.add_node(node)
        self.stepper = EventsStepper(self.executor, self.context, step_timeout_s=10.0)
        self.clocks = LocalClocks(self.nodes)
        assert self.clocks.adopt() == len(self.nodes)
        self.stepper.driven = self.clocks.clock_ids()
        self.step_to(self.now_ns)

    def step_to(self, now_ns: int) -> None:
        self.now_ns = now_ns
        self.clocks.set_ns(now_ns)
        self.stepper.drain(now_ns / S, now_ns=now_ns)

    def run_until(self, end_s: float) -> None:
        end_ns = round(end_s * S)
        while self.now_ns < end_ns:
            self.step_to(next_step_ns(self.now_ns, self.stepper.next_deadline_ns(), end_ns))

    def close(self) -> None:
        if self.stepper is not None:
            self.stepper.close()
            self.clocks.release()
        for node in reversed(self.nodes):
            if self.executor is not None:
                self.executor.remove_node(node)
            node.destroy_node()
        if self.executor is not None:
            self.executor.shutdown()


@pytest.fixture
def stepped():
    if not events_executor_available():
        pytest.skip("no EventsExecutor in this rclpy")
    with RosHarness() as ros:
        clock = SteppedClock(ros, START_2031)
        try:
            yield clock
        finally:
            clock.close()


def test_telemetry_forwarded_every_period_on_the_deterministic_clock(stepped):
    """On main the EventsExecutor passed each period timer's TimerInfo as its topic: 0 of 12
    records forwarded, every period idle."""
    sim = [_p("use_sim_time", True)]
    standin = stepped.node(WecStandinBuoy(context=stepped.context, namespace="/buoy",
                                          parameter_overrides=sim + [
                                              _p("publish_period_s", 10.0),
                                              _p("telemetry_prefix", "")]))
    bridge = stepped.node(WecTelemetryBridge(context=stepped.context, namespace="/buoy",
                                             parameter_overrides=sim + [
                                                 _p("telemetry_prefix", ""),
                                                 _p("powerbuoy_data_period_s", 60.0),
                                                 _p("battery_data_period_s", 120.0)]))
    probe = stepped.node(rclpy.create_node("wec_probe", context=stepped.context,
                                           parameter_overrides=sim))
    out = {"pb": [], "bc": []}
    probe.create_subscription(PBRecord, "/buoy/to_acomms/powerbuoy_data", out["pb"].append, 10)
    probe.create_subscription(BCRecord, "/buoy/to_acomms/battery_data", out["bc"].append, 10)
    for node in (bridge, standin):
        node.trigger_configure()
        node.trigger_activate()
    stepped.start()
    stepped.run_until(START_2031 + 125.0)
    counts = bridge.counts
    assert counts["powerbuoy_data_received"] == 12 and counts["battery_data_received"] == 12
    assert counts["powerbuoy_data_forwarded"] == 2 and counts["battery_data_forwarded"] == 1
    assert counts["idle_periods"] == 0
    assert len(out["pb"]) == 2 and len(out["bc"]) == 1
    for k, record in enumerate(out["pb"], 1):   # the newest record at each 60 s period
        assert START_2031 + 60 * k - 10 <= stamp_seconds(record.header.stamp) \
            <= START_2031 + 60 * k
    waiting = "powerbuoy_data" in bridge.decimation.latest   # the newest, for the next period
    assert counts["powerbuoy_data_decimated"] == 12 - 2 - waiting


@pytest.mark.parametrize("parameters,activate_after_s,sent_after_start_s", [
    ({"pump_after_start_s": 100.0, "start_time_seconds": START_2031}, 0.0, 100.0),
    ({"pump_after_start_s": 100.0, "start_time_seconds": START_2031}, 30.0, 100.0),
    ({"pump_at_s": 100.0, "start_time_seconds": START_2031}, 0.0, 100.0),   # deprecated name
    ({"pump_after_start_s": 100.0}, 30.0, 100.0),   # no start given: from the activation
])
def test_pump_called_seconds_after_the_start_not_at_an_absolute_time(
        stepped, parameters, activate_after_s, sent_after_start_s):
    """On main the operator compared pump_at_s with the clock's absolute reading (2025 or later)
    and called the pump at once."""
    sim = [_p("use_sim_time", True)]
    standin = stepped.node(WecStandinBuoy(context=stepped.context, namespace="/top",
                                          parameter_overrides=sim + [
                                              _p("publish_period_s", 1000.0),
                                              _p("service_prefix", "")]))
    operator = stepped.node(WecStandinOperator(
        context=stepped.context, namespace="/top",
        parameter_overrides=sim + [_p(k, v) for k, v in parameters.items()]))
    assert operator.pump_after_start_s == 100.0
    standin.trigger_configure()
    standin.trigger_activate()
    stepped.start()
    stepped.step_to(round((START_2031 + activate_after_s) * S))
    operator.trigger_configure()
    operator.trigger_activate()
    start_s = START_2031 + (activate_after_s if "start_time_seconds" not in parameters else 0.0)
    stepped.run_until(start_s + sent_after_start_s - 0.5)
    assert operator.pump == {} and standin.commands == []
    stepped.run_until(start_s + sent_after_start_s + 1.0)
    assert [name for name, _ in standin.commands] == ["pump_command"]
    assert standin.commands[0][1].duration_mins == 5.0
    pump = operator.bridge_summary()["pump_command"]
    assert pump == {"sent_after_start_s": sent_after_start_s,
                    "answered_after_start_s": sent_after_start_s, "result": 0,
                    "round_trip_s": 0.0}
