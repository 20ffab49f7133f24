"""acomms_driver_node against the Micromodem emulator, over a pty and over TCP, through ROS.

Configuration sentences, transmit sentences, receptions with CST, pings, faults (emulator killed
and restarted, silent modem, a corrupt line stream), parameters, and modem_sensor_data_node.
"""

import os
import random
import subprocess
import sys
import time

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from std_msgs.msg import String
from test_driver_nmea import _fuzz_stream

from acomms_core.ros.testing import RosHarness
from acomms_driver.micromodem import nmea
from acomms_driver.nodes.acomms_driver_node import AcommsDriverNode
from acomms_driver.nodes.modem_sensor_data_node import ModemSensorDataNode
from acomms_interfaces.msg import ModemSensorData, Packet, ReceivedPacket, TransmittedPacket
from acomms_interfaces.srv import PingModem, QueryModemSrc, QueueTxPacket
from acomms_sim.emulator.micromodem_emulator import PtyServer, TcpServer
from acomms_sim.emulator.micromodem_model import LoopbackBackend, MicromodemModel

NS = "auv1"
DELAY_S = 0.2


class DriverUnderTest:
    """A driver node in a harness plus helper subscriptions and clients on its ROS interface."""

    def __init__(self, ros: RosHarness, params: dict):
        overrides = [Parameter(k, value=v) for k, v in params.items()]
        self.ros = ros
        self.node = ros.add(AcommsDriverNode(context=ros.context, namespace=NS,
                                             parameter_overrides=overrides))
        helper = ros.helper
        self.rx, self.tx, self.nmea = [], [], []
        self.diagnostics = {}
        helper.create_subscription(ReceivedPacket, f"/{NS}/packet_rx", self.rx.append, 10)
        helper.create_subscription(TransmittedPacket, f"/{NS}/transmit", self.tx.append, 10)
        helper.create_subscription(String, f"/{NS}/nmea_from_modem", self.nmea.append, 1000)
        helper.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self.queue_client = helper.create_client(QueueTxPacket, f"/{NS}/queue_tx_packet")
        self.ping_client = helper.create_client(PingModem, f"/{NS}/ping_modem")
        self.src_client = helper.create_client(QueryModemSrc, f"/{NS}/query_modem_src")
        self.param_client = helper.create_client(
            SetParameters, f"/{NS}/acomms_driver_node/set_parameters")

    def _on_diagnostics(self, msg):
        for status in msg.status:
            if status.name.startswith(f"/{NS}/acomms_driver_node"):
                self.diagnostics = {kv.key: kv.value for kv in status.values}
                self.diagnostics["_level"] = int.from_bytes(status.level, "little") \
                    if isinstance(status.level, bytes) else int(status.level)
                self.diagnostics["_message"] = status.message

    def wait_connected(self, connected=True, timeout=10.0):
        want = "true" if connected else "false"
        assert self.ros.spin_until(lambda: self.diagnostics.get("connected") == want, timeout), \
            f"diagnostics never said connected={want}: {self.diagnostics.get('_message')}"

    def wait_lines_quiet(self, quiet_s=1.0, timeout=10.0):
        """Until the line counter has not moved for quiet_s (the handshake's replies are in)."""
        seen = {"lines": None, "since": time.monotonic()}

        def quiet():
            lines = self.diagnostics.get("lines_lines")
            if lines != seen["lines"]:
                seen.update(lines=lines, since=time.monotonic())
            return time.monotonic() - seen["since"] >= quiet_s

        assert self.ros.spin_until(quiet, timeout), "modem kept sending lines"

    def queue(self, packet, timeout=5.0):
        return self.ros.call(self.queue_client, QueueTxPacket.Request(
            queue=QueueTxPacket.Request.QUEUE_IMMEDIATE, packet=packet), timeout)

    def set_parameter(self, name, value):
        message = Parameter(name, value=value).to_parameter_msg()
        request = SetParameters.Request(parameters=[message])
        return self.ros.call(self.param_client, request).results[0]


def base_params(tmp_path, **extra):
    params = {"modem_log_dir": str(tmp_path / "logs"), "reconnect_initial_s": 0.1,
              "reconnect_max_s": 0.5, "handshake_timeout_s": 1.0, "diagnostics_period_s": 0.2,
              "pwramp_txlevel": 2, "modem_config": "{BR1: 5, 'xmit.txinhibit': 1}"}
    params.update(extra)
    return params


def connection_params(server):
    if isinstance(server, PtyServer):
        return {"modem_connection_type": "serial", "modem_serial_port": server.path}
    return {"modem_connection_type": "tcp", "modem_remote_host": "127.0.0.1",
            "modem_remote_port": server.port}


@pytest.fixture
def modems():
    backend = LoopbackBackend(delay_s=DELAY_S)
    a = MicromodemModel(1, backend, airtime_scale=0.02)
    b = MicromodemModel(2, backend, airtime_scale=0.02)
    yield a, b
    a.close()
    b.close()
    backend.close()


def host_lines(model):
    """Sentences the host sent the model, without checksums."""
    return [line.split("*")[0].lstrip("$") for line in model.host_sentences]


@pytest.mark.parametrize("transport", ["pty", "tcp"])
def test_driver_with_emulator(transport, modems, tmp_path):
    a, b = modems
    server = PtyServer(a) if transport == "pty" else TcpServer(a)
    server.start()
    with RosHarness() as ros:
        driver = DriverUnderTest(ros, base_params(tmp_path, **connection_params(server)))
        ros.configure_and_activate(driver.node)
        driver.wait_connected()
        # configure: SRC/firmware queries, then every configured $CCCFG
        lines = host_lines(a)
        assert lines[:3] == ["CCCFQ,SRC", "CCCFQ,TAT", "CCCFQ,info"]
        for expected in ("CCCFG,pwramp.txlevel,2", "CCCFG,BR1,5", "CCCFG,xmit.txinhibit,1"):
            assert expected in lines
        assert a.config["BR1"] == "5"
        assert ros.call(driver.src_client, QueryModemSrc.Request()).src == 1

        # FDP transmit -> $CCTFP with the bytes; TransmittedPacket with XST
        mini, data = b"\xac\x01", bytes(range(100))
        response = driver.queue(Packet(dest=2, packet_type=Packet.PACKET_TYPE_FDP,
                                       miniframe_rate=1, dataframe_rate=5,
                                       miniframe_bytes=mini, dataframe_bytes=data))
        assert response.success and response.position_in_queue == 0
        assert ros.spin_until(lambda: len(driver.tx) == 1, 15.0)
        assert f"CCTFP,0,0,2,1,5,0,0,{mini.hex()},{data.hex()}" in host_lines(a)
        sent = driver.tx[0]
        assert bytes(sent.packet.dataframe_bytes) == data and sent.xst.dest == 2
        assert sent.xst.nbytes == len(mini) + len(data)

        # legacy PSK transmit -> $CCCYC then one $CCTXD per $CADRQ
        data = bytes(range(100, 200))
        assert driver.queue(Packet(dest=2, packet_type=Packet.PACKET_TYPE_LEGACY_PSK,
                                   dataframe_rate=1, dataframe_bytes=data)).success
        assert ros.spin_until(lambda: len(driver.tx) == 2, 15.0)
        lines = host_lines(a)
        assert "CCCYC,0,1,2,1,0,2" in lines
        assert f"CCTXD,1,2,0,{data[:64].hex()}" in lines
        assert f"CCTXD,1,2,0,{data[64:].hex()}" in lines

        # emulated reception -> ReceivedPacket with the bytes and CST
        mini, data = b"\x01\x02\x03", bytes(range(256)) * 2
        b.handle_line(nmea.format_sentence("CCTFP", [1, 3, 3, 0, 0, mini.hex(), data.hex()]))
        assert ros.spin_until(lambda: driver.rx, 15.0)
        rx = driver.rx[0]
        assert (rx.packet.src, rx.packet.dest, rx.packet.packet_type) == (2, 1, 3)
        assert bytes(rx.packet.miniframe_bytes) == mini
        assert bytes(rx.packet.dataframe_bytes) == data
        assert list(rx.minibytes_valid) == [0, 3] and list(rx.databytes_valid) == [0, 512]
        assert (rx.cst.src, rx.cst.dest, rx.cst.mode, rx.cst.data_rate) == (2, 1, 0, 3)
        assert rx.cst.snr_in == pytest.approx(20.0) and rx.cst.num_data_frames == 2
        assert rx.cst.toa.sec > 1_600_000_000

        # ping -> one-way travel time of the emulated channel
        reply = ros.call(driver.ping_client, PingModem.Request(dest=2, rate=1, timeout_sec=5.0),
                         timeout=8.0)
        assert not reply.timed_out
        assert reply.one_way_travel_time == pytest.approx(DELAY_S, abs=0.01)
        assert reply.cst.src == 2 and reply.tat == pytest.approx(0.05)
        assert any(m.data.startswith("$CACMR,PNR") for m in driver.nmea)
        timed_out = ros.call(driver.ping_client, PingModem.Request(dest=9, rate=1,
                                                                   timeout_sec=1.0), timeout=5.0)
        assert timed_out.timed_out
        assert driver.diagnostics["lines_bad_checksum"] == "0"
    server.close()


def test_bad_requests_and_parameters_are_refused(modems, tmp_path):
    a, _ = modems
    server = TcpServer(a)
    server.start()
    with RosHarness() as ros:
        with pytest.raises(ValueError, match="modem_connection_type"):
            AcommsDriverNode(context=ros.context, parameter_overrides=[
                Parameter("modem_connection_type", value="carrier_pigeon")])
        driver = DriverUnderTest(ros, base_params(tmp_path, **connection_params(server)))
        driver.node.trigger_configure()
        refused = driver.queue(Packet(dest=2, dataframe_rate=1, miniframe_rate=1))
        assert not refused.success  # configured but not active
        driver.node.trigger_activate()
        driver.wait_connected()
        for packet in (Packet(dest=2, miniframe_rate=1, dataframe_rate=2),
                       Packet(dest=2, miniframe_rate=1, dataframe_rate=1,
                              dataframe_bytes=bytes(200)),
                       Packet(dest=2, packet_type=Packet.PACKET_TYPE_LEGACY_PSK,
                              dataframe_rate=1)):
            assert not driver.queue(packet).success
        assert not driver.set_parameter("modem_remote_port", 4100).successful
        assert not driver.set_parameter("modem_config", "[1, 2").successful
        assert driver.set_parameter("pwramp_txlevel", 1).successful
        assert ros.spin_until(lambda: a.config["pwramp.txlevel"] == "1", 10.0)
        assert ros.spin_until(lambda: driver.diagnostics.get("bad_requests") == "4", 10.0)
    server.close()


@pytest.mark.parametrize("when", ["queued_while_down", "in_flight"])
def test_kill_and_restart_emulator_keeps_queued_packet(when, tmp_path):
    """The emulator process dies (its pty vanishes) and comes back on the same --link path."""
    link = str(tmp_path / "modem")
    # In flight: a slow modem (0.5 x real on-air time, ~2.3 s) so the kill lands mid-packet.
    scale = "0.5" if when == "in_flight" else "0.02"
    command = [sys.executable, "-m", "acomms_sim.emulator.micromodem_emulator", "--src", "1",
               "--link", link, "--airtime-scale", scale]

    def start_emulator():
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert "micromodem_emulator: SRC 1" in proc.stdout.readline()
        return proc

    data = b"queued for transmit, must survive the modem going away"
    packet = Packet(dest=2, packet_type=Packet.PACKET_TYPE_FDP, miniframe_rate=1,
                    dataframe_rate=1, dataframe_bytes=data)
    proc = start_emulator()
    try:
        with RosHarness() as ros:
            driver = DriverUnderTest(ros, base_params(
                tmp_path, modem_connection_type="serial", modem_serial_port=link))
            ros.configure_and_activate(driver.node)
            driver.wait_connected()
            if when == "in_flight":
                assert driver.queue(packet).success
                assert ros.spin_until(
                    lambda: driver.diagnostics.get("tx_handed_to_modem") == "1", 10.0)
            proc.kill()
            proc.wait(5)
            # The device vanishes with the modem. A killed emulator leaves its symlink behind,
            # pointing at a pty number that another test's emulator may reuse at once.
            os.unlink(link)
            driver.wait_connected(False)
            assert "disconnected" in driver.diagnostics["_message"]
            if when == "queued_while_down":
                assert driver.queue(packet).success
            else:
                assert driver.diagnostics["tx_requeued_after_link_loss"] == "1"
            ros.spin_for(0.5)
            assert driver.diagnostics["tx_queue_length"] == "1" and not driver.tx
            proc = start_emulator()
            driver.wait_connected(True, timeout=10.0)
            assert ros.spin_until(lambda: driver.tx, 10.0)
            assert bytes(driver.tx[0].packet.dataframe_bytes) == data
            assert ros.spin_until(lambda: driver.diagnostics.get("connects") == "2"
                                  and driver.diagnostics.get("tx_queue_length") == "0", 10.0), \
                driver.diagnostics
    finally:
        proc.kill()
        proc.wait(5)


def test_silent_modem_is_detected_and_recovered(modems, tmp_path):
    a, _ = modems
    server = TcpServer(a)
    server.start()
    with RosHarness() as ros:
        driver = DriverUnderTest(ros, base_params(tmp_path, modem_silence_timeout_s=1.0,
                                                  **connection_params(server)))
        ros.configure_and_activate(driver.node)
        driver.wait_connected()
        a.muted = True
        driver.wait_connected(False, timeout=5.0)
        assert "silent" in driver.diagnostics["_message"]
        a.muted = False
        driver.wait_connected(True, timeout=5.0)
        assert int(driver.diagnostics["silence_timeouts"]) >= 1
    server.close()


def test_corrupt_line_stream_is_counted_and_skipped(modems, tmp_path):
    a, b = modems
    server = TcpServer(a)
    server.start()
    with RosHarness() as ros:
        # No parameter list after the handshake: its replies must not land in the counts below.
        driver = DriverUnderTest(ros, base_params(tmp_path, modem_config_query="",
                                                  **connection_params(server)))
        ros.configure_and_activate(driver.node)
        driver.wait_connected()
        driver.wait_lines_quiet()
        before = {k: int(v) for k, v in driver.diagnostics.items() if k.startswith("lines_")}
        chunks, expected, _ = _fuzz_stream(random.Random(7), 3000)
        # Valid-checksum sentences of real types with nonsense fields, for pyacomms to choke on.
        rng = random.Random(8)
        for sentence_type in ("CACST", "CAXST", "CARFP", "CACYC", "CARXD", "CACMR", "CACFG"):
            for _ in range(20):
                fields = [rng.choice(["", "x", "-1", "1e99", "20240101", "1;2;zz"])
                          for _ in range(rng.randint(0, 40))]
                chunks.append(nmea.format_sentence(sentence_type, fields).encode())
                expected.lines += 1
                expected.valid += 1
        for chunk in chunks:
            server.write_bytes(chunk)
        total = before["lines_lines"] + expected.lines
        assert ros.spin_until(lambda: int(driver.diagnostics.get("lines_lines", 0)) >= total,
                              20.0)
        for name in ("lines", "valid", "bad_checksum", "malformed", "overlong"):
            got = int(driver.diagnostics[f"lines_{name}"]) - before[f"lines_{name}"]
            assert got == getattr(expected, name), name
        # Still alive and working: a reception goes through.
        b.handle_line(nmea.format_sentence("CCTFP", [1, 1, 1, 0, 0, "AB", "CD"]))
        assert ros.spin_until(lambda: any(bytes(r.packet.dataframe_bytes) == b"\xcd"
                                          for r in driver.rx), 5.0)
        assert driver.diagnostics["connected"] == "true"
    server.close()


def test_modem_sensor_data_node(modems, tmp_path):
    a, _ = modems
    server = TcpServer(a)
    server.start()
    with RosHarness() as ros:
        driver = DriverUnderTest(ros, base_params(tmp_path, **connection_params(server)))
        sensors = ros.add(ModemSensorDataNode(context=ros.context, namespace=NS,
                                              parameter_overrides=[
                                                  Parameter("query_interval_s", value=1.0)]))
        received = []
        ros.helper.create_subscription(ModemSensorData, f"/{NS}/modem_sensor_data",
                                       received.append, 10)
        ros.configure_and_activate(driver.node)
        driver.wait_connected()
        ros.configure_and_activate(sensors)
        assert ros.spin_until(lambda: received, 6.0)
        msg = received[0]
        assert msg.modem_batt_v == pytest.approx(24.1)
        assert msg.pwramp_vtransmit == pytest.approx(48.0)
        assert msg.modem_temp == pytest.approx(21.5)
        assert sensors.counters["missing_replies"] == 0
    server.close()


def test_deactivate_closes_and_activate_reopens(modems, tmp_path):
    a, _ = modems
    server = TcpServer(a)
    server.start()
    with RosHarness() as ros:
        driver = DriverUnderTest(ros, base_params(tmp_path, **connection_params(server)))
        ros.configure_and_activate(driver.node)
        driver.wait_connected()
        driver.node.trigger_deactivate()
        start = time.monotonic()
        assert not driver.node.client.connected
        assert time.monotonic() - start < 5.0
        count = len(a.host_sentences)
        driver.node.trigger_activate()
        assert ros.spin_until(lambda: driver.node.client.connected, 5.0)
        assert len(a.host_sentences) > count
        driver.node.trigger_deactivate()
        driver.node.trigger_cleanup()
        assert driver.node.client is None
        assert len(driver.node.configured) == 0 and len(driver.node.activated) == 0
    server.close()


def test_sensor_poll_interval_applies_at_run_time_and_cleanup_releases():
    with RosHarness() as ros:
        sensors = ros.add(ModemSensorDataNode(context=ros.context, namespace=NS,
                                              parameter_overrides=[
                                                  Parameter("query_interval_s", value=600.0),
                                                  Parameter("reply_timeout_s", value=0.2)]))
        ros.configure_and_activate(sensors)
        ros.spin_for(0.3)
        assert sensors.counters["polls"] == 0
        assert sensors.set_parameters([Parameter("query_interval_s", value=1.0)])[0].successful
        # No driver answers: each poll ends at reply_timeout_s with every value missing.
        assert ros.spin_until(lambda: sensors.counters["published"] >= 1, 5.0)
        assert sensors.counters["missing_replies"] == 5
        sensors.trigger_deactivate()
        polls = sensors.counters["polls"]
        ros.spin_for(1.5)
        assert sensors.counters["polls"] == polls
        sensors.trigger_cleanup()
        assert len(sensors._resources) == 0 and len(sensors._active_resources) == 0
