"""ROS-free tests of the byte links: UDP round trip, and clear LinkErrors for dead endpoints."""

import socket

import pytest

from acomms_driver.micromodem.modem_link import LinkError, make_link


def test_udp_link_round_trip():
    modem = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    modem.bind(("127.0.0.1", 0))
    modem.settimeout(2.0)
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    local_port = probe.getsockname()[1]
    probe.close()
    link = make_link("udp", remote_host="127.0.0.1", remote_port=modem.getsockname()[1],
                     local_host="127.0.0.1", local_port=local_port)
    link.open()
    try:
        link.write(b"$CCCFQ,SRC*3A\r\n")
        data, address = modem.recvfrom(100)
        assert data == b"$CCCFQ,SRC*3A\r\n"
        modem.sendto(b"$CACFG,SRC,1*33\r\n", address)
        received = b""
        for _ in range(10):
            received += link.read(0.2)
            if received:
                break
        assert received == b"$CACFG,SRC,1*33\r\n"
        assert link.read(0.01) == b""
    finally:
        link.close()
        modem.close()


def test_dead_endpoints_raise_link_error(tmp_path):
    with pytest.raises(LinkError, match="cannot open serial"):
        make_link("serial", serial_port=str(tmp_path / "no_such_tty")).open()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    with pytest.raises(LinkError, match="cannot open tcp"):
        make_link("tcp", remote_host="127.0.0.1", remote_port=port).open()
    link = make_link("tcp", remote_host="127.0.0.1", remote_port=port)
    with pytest.raises(LinkError):
        link.write(b"x")  # never opened
    with pytest.raises(ValueError, match="serial, tcp or udp"):
        make_link("carrier_pigeon")
