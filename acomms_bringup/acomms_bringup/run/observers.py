"""Ties the in-process message queues and dispatch nodes to the run's accounting and matching.

`attach_queue_ledgers(runner)` runs once every group is up: each vehicle's message_queue_node in
this process gets a ledger as its queue's observer, which names the sent message a queued ROS
message is by the traffic plan of that vehicle and topic and the message's match key. Vehicles
run by participants in other processes get theirs through `attach_remote_events` (the
participants publish their queues' and dispatch nodes' events: `remote_events`); a participant
that does not publish them (an older one) leaves its messages' fate `unknown`.
A queue node configured again later gets a new queue without a ledger (also `unknown`).

`attach_dispatch_observers(runner)` makes the recorder (`Recorder.on_dispatched`) the observer of
each vehicle's packet_dispatch_node in this process: it learns the SRC of every arrival's packet.

`observed_receptions(scenario, stack)` names the vehicles whose simulated modem runs in this
process: the recorder does not subscribe to their reception_events; `ReceptionObservers` (the
start-up's `created` hook) hands each such modem_sim_node, as it is created (before it can
publish anything), the recorder's `reception_observer`, and `subscribe_unobserved` subscribes
for any vehicle whose modem it never met (none, unless a node was named otherwise).
"""

from __future__ import annotations

from acomms_bringup.description.bringup_policy import resolve_node_name
from acomms_bringup.description.scenario_vehicle import MODEM_EXECUTABLES
from acomms_bringup.run.accounting import QueueLedger
from acomms_bringup.run.remote_events import RemoteEvents
from acomms_bringup.run.traffic import match_key


def _relative(topic: str, namespace: str) -> str:
    topic = topic.strip("/")
    prefix = namespace.strip("/") + "/"
    return topic[len(prefix):] if prefix != "/" and topic.startswith(prefix) else topic


def _node_name(vehicle, node: str) -> str:
    """The fully qualified name of one of the vehicle's nodes."""
    return resolve_node_name(node, vehicle.namespace)


def _identifier(runner, vehicle, keyed: bool = False):
    """identify(topic, msg) for a QueueLedger of `vehicle`: the sent message a queued ROS
    message is (keyed: `msg` is already its match key, as remote events carry it)."""
    recorder = runner.recorder
    streams = {_relative(plan.traffic.topic, vehicle.namespace): plan.stream
               for plan in runner.plans if plan.vehicle.name == vehicle.name}

    def identify(topic, msg):
        stream = streams.get(_relative(topic, vehicle.namespace))
        if stream is None:
            return None
        return recorder.matcher.queued(stream, msg if keyed else match_key(msg))

    return identify


def attach_queue_ledgers(runner) -> int:
    """Give every in-process queue of a scenario vehicle a ledger; how many got one."""
    from acomms_core.nodes.message_queue_node import MessageQueueNode

    attached = 0
    for vehicle in runner.scenario.vehicles:
        node = runner.nodes.get(_node_name(vehicle, "message_queue_node"))
        if not isinstance(node, MessageQueueNode) or node.queues is None:
            continue
        node.queues.observer = QueueLedger(vehicle.name, runner.record.ledger,
                                           _identifier(runner, vehicle), runner.recorder.lock)
        attached += 1
    return attached


def attach_remote_events(runner, remote: set[str]) -> RemoteEvents | None:
    """The recorder books what the queues and dispatch nodes of the `remote` vehicles (run by
    participants) did, from their `remote_events` lines; None when every vehicle is here."""
    if not remote:
        return None
    ledgers = {v.name: QueueLedger(v.name, runner.record.ledger,
                                   _identifier(runner, v, keyed=True), runner.recorder.lock)
               for v in runner.scenario.vehicles if v.name in remote}
    events = RemoteEvents(ledgers, runner.recorder.on_dispatched_key)
    runner.recorder.listen_remote(events, {v.name for v in runner.scenario.vehicles
                                           if v.name in remote})
    return events


def observed_receptions(scenario, stack) -> set[str]:
    """The vehicles with a simulated modem (modem.kind sim) in a group this process runs."""
    here = {group.name for group in stack.groups}
    return {v.name for v in scenario.vehicles if v.modem.kind == "sim" and v.name in here}


class ReceptionObservers:
    """Startup's `created(name, node)` hook: the recorder observes each vehicle's in-process
    modem_sim_node (`ModemOutputs.reception_observer`)."""

    def __init__(self, runner, vehicles: set[str]):
        self.runner = runner
        self.pending = {_node_name(v, MODEM_EXECUTABLES["sim"]): v.name
                        for v in runner.scenario.vehicles if v.name in vehicles}

    def __call__(self, name: str, node) -> None:
        from acomms_sim.nodes.modem_sim_node import ModemSimNode

        vehicle = self.pending.get(name)
        if vehicle is not None and isinstance(node, ModemSimNode):
            node.outputs.reception_observer = self.runner.recorder.reception_observer(vehicle)
            del self.pending[name]

    def subscribe_unobserved(self) -> list[str]:
        """Subscribe the recorder to the reception_events of the vehicles whose modem was not
        met; their names."""
        for vehicle in self.pending.values():
            self.runner.recorder.subscribe_receptions(vehicle)
        return sorted(self.pending.values())


def attach_dispatch_observers(runner) -> int:
    """Make the recorder the observer of every in-process packet_dispatch_node; how many."""
    from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode

    attached = 0
    for vehicle in runner.scenario.vehicles:
        node = runner.nodes.get(_node_name(vehicle, "packet_dispatch_node"))
        if isinstance(node, PacketDispatchNode):
            node.observer = runner.recorder.on_dispatched
            attached += 1
    return attached
