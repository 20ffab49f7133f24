"""acomms_driver_node's ROS side of the modem's own reports (issue 13): /diagnostics (link state,
firmware, last modem error, clock offset, counts per sentence type), `ack` from $CAACK and the
`ping_transponders` service, against the emulator."""

import pytest
from test_driver_node import NS, DriverUnderTest, base_params, connection_params

from acomms_core.ros.testing import RosHarness
from acomms_driver.micromodem import nmea
from acomms_interfaces.msg import ModemAck
from acomms_interfaces.srv import PingTransponders
from acomms_sim.emulator.micromodem_emulator import TcpServer
from acomms_sim.emulator.micromodem_model import LoopbackBackend, MicromodemModel


@pytest.fixture
def modem():
    backend = LoopbackBackend(delay_s=0.05)
    model = MicromodemModel(1, backend, airtime_scale=0.02)
    server = TcpServer(model)
    server.start()
    yield model, server
    server.close()
    model.close()
    backend.close()


def test_diagnostics_ack_and_transponders(modem, tmp_path):
    model, server = modem
    model.transponders = {"B": 0.75}
    with RosHarness() as ros:
        driver = DriverUnderTest(ros, base_params(tmp_path, set_modem_time=True,
                                                  **connection_params(server)))
        acks = []
        ros.helper.create_subscription(ModemAck, f"/{NS}/ack", acks.append, 10)
        transponders = ros.helper.create_client(PingTransponders, f"/{NS}/ping_transponders")
        ros.configure_and_activate(driver.node)
        driver.wait_connected()
        assert ros.spin_until(lambda: driver.diagnostics.get("clock_set") == "true"
                              and int(driver.diagnostics.get("sentences_CACFG", 0)) > 15, 5.0)
        values = driver.diagnostics
        assert values["link_state"] == "connected" and values["_message"] == "connected"
        assert values["firmware_version"] == model.config["info.firmware_version"]
        assert abs(float(values["clock_offset_s"])) < 1.0
        assert values["last_modem_error"] == "" and values["modem_errors"] == "0"

        server.write_bytes(nmea.format_sentence("CAERR", ["120000", "XYZ", 7, "it broke"]).encode())
        server.write_bytes(nmea.format_sentence("CAREV", ["120000", "AUV", "2.0.1234"]).encode())
        server.write_bytes(nmea.format_sentence("CAACK", [2, 1, 1, 1]).encode())
        assert ros.spin_until(lambda: driver.diagnostics.get("modem_revision") == "2.0.1234"
                              and acks, 5.0)
        values = driver.diagnostics
        assert values["last_modem_error"] == "XYZ 7: it broke" and values["modem_errors"] == "1"
        assert values["_level"] == 1 and "it broke" in values["_message"]  # WARN
        assert (acks[0].src, acks[0].dest, acks[0].frame_num, acks[0].ack) == (2, 1, 1, True)

        reply = ros.call(transponders, PingTransponders.Request(
            transponder_dest_mask=[False, True, False, False], timeout_sec=1.0), timeout=8.0)
        assert list(reply.travel_times) == pytest.approx([-1.0, 0.75, -1.0, -1.0])
