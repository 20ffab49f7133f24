"""Hostile modem stream: acomms_driver_node fed N malformed lines at full speed (issue 13).

An emulated Micromodem (TCP) writes, as fast as the driver takes them, a mix of lines: wrong
checksums, truncated sentences, binary junk, overlong lines, CR-only endings, valid-checksum
`$CARFP` with bad hex and `$CACST` / `$CAXST` / `$CAACK` with `1e999` / `inf` fields. The driver
node runs in this process (RosHarness). Reported: lines/s the driver sustains (wall clock, and per
CPU second of this process, which also runs the emulator side), RSS before, during
and after (flat = no growth per line), how many /diagnostics messages it published during the
flood (it must keep publishing), and that a real reception afterwards still arrives. Run:

    source env.sh && python bench/driver_garbage.py [--lines 1000000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.parameter import Parameter

from acomms_core.ros.testing import RosHarness
from acomms_driver.micromodem import nmea
from acomms_driver.nodes.acomms_driver_node import AcommsDriverNode
from acomms_interfaces.msg import ReceivedPacket
from acomms_sim.emulator.micromodem_emulator import TcpServer
from acomms_sim.emulator.micromodem_model import LoopbackBackend, MicromodemModel

CHUNK_LINES = 2000


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def hostile_lines(rng: random.Random, count: int) -> list[bytes]:
    """`count` malformed lines (each with its own line end)."""
    valid_bad = [nmea.format_sentence("CARFP", ["20240101000000.0", 1, 2, 1, 1, 1, 0, 0, "",
                                                "1;2;ZZ", "1;3;XYZ"]),
                 nmea.format_sentence("CACST", ["1e999"] + ["inf"] * 33),
                 nmea.format_sentence("CAXST", ["7", "20240101", "0"] + ["1e999"] * 14),
                 nmea.format_sentence("CAACK", ["inf", "1e999", "1", "1"])]
    good = nmea.format_sentence("CATXF", [1])
    makers = [
        lambda: good[:-4] + "00\r\n",                                    # wrong checksum
        lambda: good[:good.index("*")] + "\r\n",                         # truncated
        lambda: bytes(rng.randrange(256) for _ in range(40)).translate(None, b"\r\n") + b"\n",
        lambda: "$CARFP," + "A" * (nmea.MAX_LINE_LENGTH + 50) + "\r\n",  # overlong
        lambda: rng.choice(valid_bad).replace("\r\n", "\r"),             # CR-only, bad fields
        lambda: rng.choice(valid_bad),
    ]
    weights = [30, 20, 20, 1, 14, 15]
    lines = []
    for maker in rng.choices(makers, weights, k=count):
        line = maker()
        lines.append(line if isinstance(line, bytes) else line.encode("ascii"))
    return lines


class Flood:
    def __init__(self, ros: RosHarness, log_dir: str):
        self.backend = LoopbackBackend(delay_s=0.05)
        self.a = MicromodemModel(1, self.backend, airtime_scale=0.02)
        self.b = MicromodemModel(2, self.backend, airtime_scale=0.02)
        self.server = TcpServer(self.a)
        self.server.start()
        params = {"modem_connection_type": "tcp", "modem_remote_host": "127.0.0.1",
                  "modem_remote_port": self.server.port, "modem_log_dir": log_dir,
                  "diagnostics_period_s": 0.5, "handshake_timeout_s": 1.0,
                  "modem_silence_timeout_s": 30.0, "modem_config_query": "",
                  "query_modem_clock": False}  # no handshake replies in the counts
        self.node = ros.add(AcommsDriverNode(
            context=ros.context, namespace="flood",
            parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]))
        self.diagnostics, self.rx = [], []
        ros.helper.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        ros.helper.create_subscription(ReceivedPacket, "/flood/packet_rx", self.rx.append, 10)
        self.ros = ros

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        if any(status.name.startswith("/flood/") for status in msg.status):
            self.diagnostics.append(time.monotonic())

    def close(self) -> None:
        self.server.close()
        self.a.close()
        self.b.close()
        self.backend.close()

    def lines_seen(self) -> int:
        return self.node.client.reader.counters.lines

    def write_all(self, total: int, seed: int, done: threading.Event) -> None:
        rng = random.Random(seed)
        pool = hostile_lines(rng, min(total, 20_000))
        sent = 0
        while sent < total:
            count = min(CHUNK_LINES, total - sent)
            start = rng.randrange(0, len(pool) - count + 1) if len(pool) > count else 0
            self.server.write_bytes(b"".join(pool[start:start + count]))
            sent += count
        done.set()


def run(total: int, seed: int = 13, timeout_s: float = 600.0) -> dict:
    """Flood the driver with `total` lines; the measured numbers."""
    with tempfile.TemporaryDirectory() as log_dir, RosHarness() as ros:
        flood = Flood(ros, log_dir)
        try:
            ros.configure_and_activate(flood.node)
            if not ros.spin_until(lambda: flood.node.client.connected, 15.0):
                raise RuntimeError("driver did not connect to the emulator")
            return _measure(ros, flood, total, seed, timeout_s)
        finally:
            flood.close()


def _measure(ros: RosHarness, flood: Flood, total: int, seed: int, timeout_s: float) -> dict:
    base, rss_start = flood.lines_seen(), rss_mb()
    done = threading.Event()
    writer = threading.Thread(target=flood.write_all, args=(total, seed, done), daemon=True)
    started, cpu_started = time.monotonic(), time.process_time()
    writer.start()
    rss_samples = []
    while flood.lines_seen() - base < total and time.monotonic() - started < timeout_s:
        ros.spin_for(0.25)
        rss_samples.append(rss_mb())
    elapsed, cpu = time.monotonic() - started, time.process_time() - cpu_started
    flood_diagnostics = sum(1 for t in flood.diagnostics if t >= started)
    handled = flood.lines_seen() - base
    flood.b.handle_line(nmea.format_sentence("CCTFP", [1, 1, 1, 0, 0, "", b"after".hex()]))
    received = ros.spin_until(lambda: any(bytes(m.packet.dataframe_bytes) == b"after"
                                          for m in flood.rx), 10.0)
    client = flood.node.client
    return {"lines": handled, "seconds": elapsed, "lines_per_s": handled / max(elapsed, 1e-9),
            "cpu_seconds": cpu, "lines_per_cpu_s": handled / max(cpu, 1e-9),
            "rss_start_mb": rss_start, "rss_mid_mb": rss_samples[len(rss_samples) // 2]
            if rss_samples else rss_start, "rss_end_mb": rss_mb(),
            "diagnostics_during_flood": flood_diagnostics,
            "diagnostics_expected": int(elapsed / 0.5),
            "connected": client.connected, "reader_alive": client.link.reader_alive,
            "valid_after": received, "counters": client.reader.counters.as_dict(),
            "unparseable_sentences": client.counters["unparseable_sentences"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=13)
    options = parser.parse_args()
    result = run(options.lines, options.seed)
    for key, value in result.items():
        print(f"{key}: {value:.1f}" if isinstance(value, float) else f"{key}: {value}")


if __name__ == "__main__":
    main()
