"""Raw payloads on the modem interface: what a bridge uses when its bytes must travel unchanged.

A bridge in a byte-exact wire mode (the cola2 struct) takes the place of the vehicle's message
queue and packet dispatch: it serves `get_next_packet_data` to the vehicle's MAC (the MAC still
decides when to transmit) and reads `packet_rx`. `RawPacketLink` holds the payload waiting for
the next transmit opportunity (latest only: a newer payload replaces an unsent one, counted) and
turns received packets into payloads. It also offers cola2_comms' own raw topics:
`comms/to_modem` (bytes to send, e.g. from a real cola2_comms node) and `comms/from_modem`
(every payload received), both std_msgs/UInt8MultiArray (ROS 2 strings cannot carry raw bytes).
"""

from __future__ import annotations

from collections.abc import Callable

from std_msgs.msg import UInt8MultiArray

from acomms_core.codecs.packet_codec import valid_byte_mask
from acomms_interfaces.msg import ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData

RAW_LINK_COUNTERS = ("payloads_sent", "payloads_replaced", "payloads_too_large",
                     "packets_received", "packets_partial", "packets_rejected")


class RawPacketLink:
    """The raw-payload side of a bridge node; counters live in the node's `counts` dict."""

    def __init__(self, node, counts: dict, on_payload: Callable[[bytes, int], str | None],
                 dest: int, packet_service: str = "get_next_packet_data"):
        self._node = node
        self._counts = counts
        self._on_payload = on_payload   # (payload, src) -> None, or a reason it was rejected
        self._dest = int(dest)
        self._packet_service = packet_service
        self._pending: bytes | None = None
        self._from_modem = None
        for name in RAW_LINK_COUNTERS:
            counts.setdefault(name, 0)

    def configure(self) -> None:
        self._from_modem = self._node.configured.publisher(UInt8MultiArray, "comms/from_modem")

    def activate(self) -> None:
        resources = self._node.activated
        resources.service(GetNextPacketData, self._packet_service, self._on_get_next_packet)
        resources.subscription(ReceivedPacket, "packet_rx", self._on_packet_rx)
        resources.subscription(UInt8MultiArray, "comms/to_modem",
                               lambda msg: self.offer(bytes(msg.data)))

    def offer(self, payload: bytes) -> None:
        """Send payload at the next transmit opportunity (replacing one still waiting)."""
        if self._pending is not None:
            self._counts["payloads_replaced"] += 1
        self._pending = bytes(payload)

    @property
    def pending(self) -> bytes | None:
        return self._pending

    def _on_get_next_packet(self, request, response):
        payload = self._pending
        response.dest = self._dest
        if payload is None or (request.match_dest and request.dest != self._dest):
            return response
        if len(payload) <= request.num_dataframe_bytes:
            response.dataframe_bytes = list(payload)
            response.num_dataframe_bytes = len(payload)
        elif len(payload) <= request.num_miniframe_bytes:
            response.miniframe_bytes = list(payload)
            response.num_miniframe_bytes = len(payload)
        else:
            self._counts["payloads_too_large"] += 1
            self._node.get_logger().warning(
                f"payload of {len(payload)} bytes does not fit this packet "
                f"({request.num_miniframe_bytes} + {request.num_dataframe_bytes} bytes); kept "
                "for a larger one")
            return response
        response.num_messages = 1
        self._pending = None
        self._counts["payloads_sent"] += 1
        return response

    def _on_packet_rx(self, received: ReceivedPacket) -> None:
        packet = received.packet
        mini, data = bytes(packet.miniframe_bytes), bytes(packet.dataframe_bytes)
        self._counts["packets_received"] += 1
        mini_valid, data_valid = list(received.minibytes_valid), list(received.databytes_valid)
        if (mini_valid or data_valid) and not (
                all(valid_byte_mask(len(mini), mini_valid))
                and all(valid_byte_mask(len(data), data_valid))):
            self._counts["packets_partial"] += 1   # both empty: every byte valid
            return
        payload = mini + data
        if self._from_modem is not None:
            self._from_modem.publish(UInt8MultiArray(data=list(payload)))
        reason = self._on_payload(payload, int(packet.src))
        if reason:
            self._counts["packets_rejected"] += 1
            self._node.get_logger().warning(f"packet from SRC {packet.src} rejected: {reason}")
