"""The described simulation stack, composed in one process from the real acomms_sim nodes.

Uses the demo scenario's description, restricted to what exists on this branch: the simulator
services, each vehicle's trajectory_node and modem_sim_node, and the sim clock — each group
started by its own lifecycle_manager. Checks that every node reaches `active` (asked through
get_state), that the moving AUV's modem follows its trajectory (trajectory_node → /auv/fix →
platform_location_node → /read_location → modem_sim_node), and that a packet crosses the simulated
channel between two described modems.
"""

import dataclasses
import pathlib

import pytest
from lifecycle_msgs.msg import State
from lifecycle_msgs.srv import GetState

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.description.stack import NodeGroup, describe_stack
from acomms_bringup.run.compose import ComposeError, create_group, create_node
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import Packet, ReceivedPacket
from acomms_interfaces.srv import QueueTxPacket

pytest.importorskip("acomms_sim.nodes.modem_sim_node")

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
TRIES = 5  # packets sent on the lossy gateway -> topside link before the test gives up
SIM_EXECUTABLES = {"platform_location_node", "sim_transmission_loss_node",
                   "sim_packet_performance_node", "sim_clock_node", "trajectory_node",
                   "modem_sim_node"}


def sim_only(group: NodeGroup) -> NodeGroup:
    """The group without the nodes of packages not on this branch; manager list to match."""
    nodes = tuple(n for n in group.nodes if n.executable in SIM_EXECUTABLES)
    manager = dataclasses.replace(group.manager, parameters={
        **group.manager.parameters, "node_names": [n.fully_qualified_name for n in nodes]})
    return dataclasses.replace(group, nodes=nodes, manager=manager)


def test_described_sim_stack_comes_up_and_carries_a_packet():
    scenario = load_scenario(CONFIG / "demo.yaml")
    scenario = dataclasses.replace(scenario, clock=dataclasses.replace(scenario.clock,
                                                                       warp_factor=20.0))
    groups = [sim_only(g) for g in describe_stack(scenario).groups]
    assert [g.name for g in groups] == ["simulation", "auv", "gateway", "topside", "clock"]
    with RosHarness() as ros:
        nodes = {}
        for group in groups:  # start-up order; each manager autostarts its group
            created = [ros.add(node) for node in create_group(group, ros.context)]
            manager = created[-1]
            assert ros.spin_until(lambda m=manager: m.manager_state in ("active", "failed"),
                                  timeout=30.0), group.name
            assert manager.manager_state == "active", manager.last_message
            nodes.update({n.get_fully_qualified_name(): n for n in created[:-1]})

        for name in nodes:  # every managed node is active, asked through its service
            client = ros.helper.create_client(GetState, f"{name}/get_state")
            state = ros.call(client, GetState.Request(), timeout=5.0).current_state
            assert state.id == State.PRIMARY_STATE_ACTIVE, (name, state.label)

        auv_modem = nodes["/auv/modem_sim_node"]
        first = scenario.vehicle("auv").trajectory.waypoints[0].position
        clock = nodes["/sim_clock_node"]
        # Sim time moves (warp 20); the AUV's modem position follows its trajectory.
        started_ns = clock.get_clock().now().nanoseconds
        assert ros.spin_until(lambda: clock.get_clock().now().nanoseconds > started_ns + 20e9,
                              timeout=20.0)
        assert ros.spin_until(lambda: auv_modem.position is not None
                              and auv_modem.position[0] > first.latitude + 1e-5, timeout=20.0)
        assert auv_modem.position[2] > first.depth  # diving towards the second waypoint

        received = []
        ros.helper.create_subscription(ReceivedPacket, "/topside/packet_rx", received.append, 10)
        client = ros.helper.create_client(QueueTxPacket, "/gateway/queue_tx_packet")
        packet = Packet(src=2, dest=3, packet_type=Packet.PACKET_TYPE_FDP, miniframe_rate=1,
                        dataframe_rate=1, miniframe_bytes=b"hello", dataframe_bytes=b"world" * 4)
        # The 7.5 km gateway -> topside link loses some packets or frames to noise and fading
        # (draws keyed by transmit time, which a free-running clock does not fix; a frame that
        # fails arrives as zeros in a partial packet): up to TRIES tries for a whole packet.
        def whole():  # both frames decoded (either can fail alone: its bytes arrive as zeros)
            return [r for r in received if bytes(r.packet.dataframe_bytes) == b"world" * 4
                    and bytes(r.packet.miniframe_bytes) == b"hello"]

        for _attempt in range(TRIES):
            response = ros.call(client, QueueTxPacket.Request(queue=1, packet=packet),
                                timeout=5.0)
            assert response.success
            if ros.spin_until(whole, timeout=15.0):
                break
        assert whole(), f"{TRIES} packets sent, none received whole: {received}"
        assert whole()[0].packet.src == 2


def test_create_node_names_the_node_that_cannot_be_made():
    scenario = load_scenario(CONFIG / "two_vehicles.yaml")
    modem = describe_stack(scenario).group("alpha").node("modem_sim_node")
    bad = dataclasses.replace(modem, parameters={**modem.parameters, "SRC": 300})
    with RosHarness() as ros:
        with pytest.raises(ComposeError, match="/alpha/modem_sim_node: .*SRC"):
            create_node(bad, ros.context)
        missing = dataclasses.replace(modem, plugin="acomms_sim.no_such_module:Nope")
        with pytest.raises(ComposeError, match="cannot load acomms_sim.no_such_module:Nope"):
            create_node(missing, ros.context)
