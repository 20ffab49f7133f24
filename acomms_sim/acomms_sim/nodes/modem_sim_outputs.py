"""The messages modem_sim_node publishes for the events its SimModem returns.

`ModemOutputs.create(resources)` makes the publishers (at configure); `publish(events, stamp)`
publishes the events that are messages (`publish_shared`: in-process subscribers are handed the
message itself) and returns the others (ping results, problems) for the node to handle.

`reception_observer` (a callable, or None) is handed every reception event (the plain
`ReceptionEvent` that a reception_events message is made of, no message built for it):
`acomms_run` books the receptions of the modems it runs in its own process that way
(`acomms_bringup.run.observers`, `acomms_bringup.run.reception_records`). reception_events
and reception_start are built and published only while somebody subscribes (volatile topics:
a later subscriber gets the next one).
"""

from __future__ import annotations

from acomms_core.ros.ros_support import listened
from acomms_core.ros.shared_messages import publish_shared
from acomms_interfaces.msg import (
    CST,
    ReceivedPacket,
    ReceptionStart,
    SimPacket,
    SimReceptionEvent,
    TransmittedPacket,
)
from acomms_sim.modem.fields import (
    CstReport,
    PacketReceived,
    ReceptionEvent,
    ReceptionStarted,
    TransmissionStarted,
)
from acomms_sim.nodes import sim_modem_messages as messages


class ModemOutputs:
    def __init__(self):
        self.reception_observer = None  # callable(SimReceptionEvent message), or None
        self.rx = self.tx = self.cst = self.events = self.starts = self.channel = None

    def create(self, resources) -> None:
        """The publishers, made through the node's `NodeResources` (released with them)."""
        r = resources
        self.rx = r.publisher(ReceivedPacket, "packet_rx", 10)
        self.tx = r.publisher(TransmittedPacket, "transmit", 10)
        self.cst = r.publisher(CST, "cst", 10)
        self.events = r.publisher(SimReceptionEvent, "reception_events", 50)
        self.starts = r.publisher(ReceptionStart, "reception_start", 50)
        self.channel = r.publisher(SimPacket, "/acoustic_channel", 50)

    def starts_heard(self) -> bool:
        """Whether anyone listens to reception_start (else detections need no wake)."""
        return listened(self.starts)

    def publish(self, events: list, stamp) -> list:
        """Publish the events that are messages; the rest, in order."""
        heard = {}  # publisher -> whether anyone subscribes, asked once per call
        rest = []
        for event in events:
            if isinstance(event, TransmissionStarted):
                publish_shared(self.channel, messages.sim_packet_to_msg(event.channel_packet))
                publish_shared(self.tx, messages.transmitted_msg(event, stamp))
            elif isinstance(event, ReceptionStarted):
                if self._heard(heard, self.starts):
                    self.starts.publish(messages.reception_start_msg(event, stamp))
            elif isinstance(event, ReceptionEvent):
                self._reception_event(event, stamp, heard)
            elif isinstance(event, CstReport):
                publish_shared(self.cst, messages.cst_to_msg(event.cst))
            elif isinstance(event, PacketReceived):
                publish_shared(self.rx, messages.received_msg(event, stamp))
            else:
                rest.append(event)
        return rest

    def _reception_event(self, event: ReceptionEvent, stamp, heard: dict) -> None:
        if self.reception_observer is not None:
            self.reception_observer(event)
        if self._heard(heard, self.events):
            publish_shared(self.events, messages.reception_event_msg(event, stamp))

    @staticmethod
    def _heard(heard: dict, publisher) -> bool:
        if publisher not in heard:
            heard[publisher] = listened(publisher)
        return heard[publisher]
