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
"""

from __future__ import annotations

from acomms_bringup.run.accounting import QueueLedger
from acomms_bringup.run.remote_events import RemoteEvents
from acomms_bringup.run.traffic import match_key


def _relative(topic: str, namespace: str) -> str:
    topic = topic.strip("/")
    prefix = namespace.strip("/") + "/"
    return topic[len(prefix):] if prefix != "/" and topic.startswith(prefix) else topic


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
        node = runner.nodes.get(f"{vehicle.namespace.rstrip('/')}/message_queue_node")
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


def attach_dispatch_observers(runner) -> int:
    """Make the recorder the observer of every in-process packet_dispatch_node; how many."""
    from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode

    attached = 0
    for vehicle in runner.scenario.vehicles:
        node = runner.nodes.get(f"{vehicle.namespace.rstrip('/')}/packet_dispatch_node")
        if isinstance(node, PacketDispatchNode):
            node.observer = runner.recorder.on_dispatched
            attached += 1
    return attached
