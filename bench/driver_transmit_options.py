"""Transmit options of the Micromodem client against the emulator (issue 13): how long each takes
end to end, host side included (ROS-free MicromodemClient over TCP, two emulated modems on a
loopback channel with 0.05 s delay, on-air times x --airtime-scale).

Reported per option, over --count packets:
- PPS queue: queue -> $CAXST, and the transmission's start offset from the whole second (the
  modem's PPS edge; 0 by construction of the model, printed as a check);
- TXTRIG queue: pulse -> $CATXF at the host;
- FDP with the ack flag: queue -> $CACDR acknowledgement at the host;
- JANUS: queue -> reception at the far modem (its $CAJRX);
- query_modem_param: $CCCFQ -> answer, one parameter and the pwramp group.
Run:

    source env.sh && python bench/driver_transmit_options.py [--count 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time

from acomms_driver.micromodem.client_config import ClientCallbacks, ClientSettings
from acomms_driver.micromodem.micromodem_client import MicromodemClient
from acomms_driver.micromodem.modem_link import TcpClientLink
from acomms_driver.micromodem.packet_rules import (
    PACKET_TYPE_FDP,
    PACKET_TYPE_JANUS,
    QUEUE_PPS,
    QUEUE_TXTRIG,
    ModemPacket,
)
from acomms_sim.emulator.micromodem_emulator import TcpServer
from acomms_sim.emulator.micromodem_model import LoopbackBackend, MicromodemModel


class Events:
    def __init__(self):
        self.condition = threading.Condition()
        self.items: list[tuple[str, float, tuple]] = []

    def recorder(self, name):
        def record(*args):
            with self.condition:
                self.items.append((name, time.monotonic(), args))
                self.condition.notify_all()
        return record

    def wait(self, name, after: float, timeout: float = 10.0):
        end = time.monotonic() + timeout
        with self.condition:
            while True:
                for item in self.items:
                    if item[0] == name and item[1] >= after:
                        self.items.remove(item)
                        return item
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(name)
                self.condition.wait(left)


def _summary(label: str, values_s: list[float]) -> None:
    ms = sorted(v * 1000 for v in values_s)
    print(f"{label:48s} n={len(ms):3d}  median {statistics.median(ms):8.1f} ms  "
          f"p90 {ms[int(0.9 * (len(ms) - 1))]:8.1f} ms  max {ms[-1]:8.1f} ms")


def _fdp(data: bytes, queue: int = 1, ack: bool = False) -> ModemPacket:
    return ModemPacket(dest=2, packet_type=PACKET_TYPE_FDP, miniframe_rate=1, dataframe_rate=1,
                       dataframe_bytes=data, queue=queue, ack=ack)


def run(count: int, scale: float) -> None:
    backend = LoopbackBackend(delay_s=0.05)
    a = MicromodemModel(1, backend, airtime_scale=scale)
    b = MicromodemModel(2, backend, airtime_scale=scale)
    heard_janus = []
    b_output = b.output
    b.output = lambda line: (heard_janus.append(time.monotonic()) if "$CAJRX" in line
                             else None, b_output(line))
    server = TcpServer(a)
    server.start()
    events = Events()
    callbacks = ClientCallbacks(on_transmit=events.recorder("transmit"),
                                on_ack=events.recorder("ack"), on_txf=events.recorder("txf"))
    with tempfile.TemporaryDirectory() as logs:
        client = MicromodemClient(ClientSettings(
            link_factory=lambda: TcpClientLink("127.0.0.1", server.port), log_dir=logs,
            handshake_timeout_s=1.0, use_janus_packets=True, config_query=""), callbacks)
        client.start()
        while not client.connected:
            time.sleep(0.05)
        time.sleep(0.5)
        pps, pps_offsets, trig, ack, jan, query_one, query_group = [], [], [], [], [], [], []
        for i in range(count):
            start = time.monotonic()
            client.queue_packet(_fdp(bytes([i]) * 20, QUEUE_PPS))
            _, done, (_, xst) = events.wait("transmit", start)
            pps.append(done - start)
            pps_offsets.append(abs(xst["time"] - round(xst["time"])))
            client.queue_packet(_fdp(bytes([i]) * 20, QUEUE_TXTRIG))
            time.sleep(0.05)
            pulse = time.monotonic()
            a.pulse_txtrig()
            trig.append(events.wait("txf", pulse)[1] - pulse)
            start = time.monotonic()
            client.queue_packet(_fdp(bytes([i]) * 80, ack=True))
            ack.append(events.wait("ack", start)[1] - start)
            start = time.monotonic()
            client.queue_packet(ModemPacket(dest=2, packet_type=PACKET_TYPE_JANUS,
                                            dataframe_bytes=bytes([i]) * 16))
            events.wait("txf", start)
            while not heard_janus or heard_janus[-1] < start:
                time.sleep(0.005)
            jan.append(heard_janus[-1] - start)
            for param, results in (("pwramp.txlevel", query_one), ("pwramp", query_group)):
                start = time.monotonic()
                value, reason = client.query_config(param, 3.0)
                assert value is not None, reason
                results.append(time.monotonic() - start)
        client.close()
    server.close()
    a.close()
    b.close()
    backend.close()
    print(f"airtime scale {scale}, loopback delay 0.05 s, {count} packets per option")
    _summary("PPS queue: queue -> $CAXST", pps)
    _summary("PPS queue: start offset from the whole second", pps_offsets)
    _summary("TXTRIG queue: pulse -> $CATXF at the host", trig)
    _summary("FDP with ack flag: queue -> $CACDR at the host", ack)
    _summary("JANUS 16 B: queue -> $CAJRX at the far modem", jan)
    _summary("query_modem_param pwramp.txlevel", query_one)
    _summary("query_modem_param pwramp (group)", query_group)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--airtime-scale", type=float, default=0.02)
    options = parser.parse_args()
    run(options.count, options.airtime_scale)


if __name__ == "__main__":
    main()
