"""MBARI WEC bridges through their ROS interfaces: telemetry decimated latest-only, and every
command service called over a simulated link (the test relays the envelopes through the codec
config), with out-of-range refusal, server- and caller-side timeouts and "not available".
The service test runs on sim time: timeouts fire only when the test moves /clock."""

import pathlib

import pytest
from bitstring import ConstBitStream
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock

from acomms_core.codecs.config import load_codec_config
from acomms_core.ros.ros_support import now_s, seconds_to_time_msg
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import RemoteServiceRequest, RemoteServiceResponse

buoy_srv = pytest.importorskip("buoy_interfaces.srv", reason="scripts/buoy_interfaces.sh not run")
from buoy_interfaces.msg import BCRecord, PBRecord  # noqa: E402

from acomms_bringup.bridges.remote_service_nodes import (  # noqa: E402
    RemoteServiceCaller,
    RemoteServiceServer,
)
from acomms_bringup.bridges.wec_standin import WecStandinBuoy  # noqa: E402
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
