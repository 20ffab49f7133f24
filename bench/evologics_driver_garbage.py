"""Hostile EvoLogics AT lines to a running evologics_driver_node (issue 31).

Two emulated S2C modems on ptys (`evologics_emulator.start_modems`), one evologics_driver_node
each (in-process rclpy). The modem side of driver b's pty is flooded with N seeded hostile lines
(the mix of bench/evologics_at_garbage.py: bad lengths, truncated USBLLONG, non-ASCII, overlong
lines, bad data-mode headers, random bytes); then driver a sends a packet to b. Printed: lines
and bytes written, wall time, lines/s, the refusals counted by b's reader (as on /diagnostics),
whether b stayed connected, and whether the valid packet reached b's packet_rx afterwards. Run:

    source env.sh && python bench/evologics_driver_garbage.py [--lines 100000]
"""

from __future__ import annotations

import os
import select
import sys
import time

from rclpy.parameter import Parameter

from acomms_core.ros.testing import RosHarness
from acomms_driver.nodes.evologics_driver_node import EvologicsDriverNode
from acomms_interfaces.msg import Packet, ReceivedPacket
from acomms_interfaces.srv import QueueTxPacket
from acomms_sim.emulator import evologics_emulator as emulator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evologics_at_garbage import (  # noqa: E402 - the shared hostile mix and command line
    hostile_line,
    hostile_options,
    rate_line,
)


def write_all(fd: int, data: bytes, ros: RosHarness) -> None:
    """Every byte to the pty master (waits for room; the driver keeps reading meanwhile)."""
    view = memoryview(data)
    while view:
        _, ready, _ = select.select([], [fd], [], 1.0)
        if not ready:
            continue
        try:
            view = view[os.write(fd, view[:4096]):]
        except BlockingIOError:
            time.sleep(0.001)


def main() -> None:
    options, rng = hostile_options(__doc__.split("\n")[0])
    backend, served = emulator.start_modems([emulator.parse_modem("1:0,0,5"),
                                             emulator.parse_modem("2:500,0,20")])
    received: list = []
    with RosHarness() as ros:
        nodes = {}
        for name, (_, server) in zip("ab", served, strict=True):
            nodes[name] = ros.add(EvologicsDriverNode(
                context=ros.context, namespace=name, parameter_overrides=[
                    Parameter("modem_serial_port", value=server.path),
                    Parameter("reconnect_initial_s", value=0.1)]))
            ros.configure_and_activate(nodes[name])
        ros.helper.create_subscription(ReceivedPacket, "/b/packet_rx", received.append, 10)
        if not ros.spin_until(lambda: all(n.session.connected for n in nodes.values()), 20.0):
            raise SystemExit("the drivers never connected")
        stream = b"".join(hostile_line(rng) for _ in range(options.lines))
        start = time.perf_counter()
        write_all(served[1][1]._master, stream, ros)
        write_all(served[1][1]._master, b"\r\n", ros)  # ends the last hostile line
        session = nodes["b"].session
        ros.spin_until(lambda: session.reader.buffered_bytes == 0, 30.0)
        elapsed = time.perf_counter() - start
        client = ros.helper.create_client(QueueTxPacket, "/a/queue_tx_packet")
        ros.call(client, QueueTxPacket.Request(packet=Packet(dest=2, dataframe_bytes=b"alive")))
        got = ros.spin_until(lambda: any(bytes(m.packet.dataframe_bytes) == b"alive"
                                         for m in received), 20.0)
        counters = session.all_counters()
        refused = {k: v for k, v in sorted(counters.items()) if k.startswith("reader_refused_")}
        print(f"{rate_line(options.lines, len(stream), elapsed)} through the pty and the driver")
        print(f"refused (b's /diagnostics): {refused} (total {sum(refused.values())}); "
              f"unexpected_replies: {counters.get('unexpected_replies', 0)}")
        print(f"driver b connected: {session.connected}; valid packet received afterwards: {got}")
    for model, server in served:
        server.close()
        model.close()
    backend.close()


if __name__ == "__main__":
    main()
