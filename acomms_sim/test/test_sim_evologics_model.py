"""Emulated EvoLogics S2C modems on the simulated channel: instant messages with
acknowledgement, bursts, settings, USBL fixes with the configured error statistics, extended
notifications (RECVSTART at the arrival's start, before RECVIM) and AT?T's travel time."""

import math
import threading
import time

import numpy as np
import pytest

from acomms_driver.evologics import at_protocol as at
from acomms_driver.evologics.at_stream import AtStreamReader
from acomms_sim.emulator.channel_backend import SimChannelBackend
from acomms_sim.emulator.evologics_model import EvologicsModel
from acomms_sim.emulator.usbl_errors import UsblErrorModel
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.6)


class Modem:
    """An emulated modem and what it wrote, parsed as a driver would."""

    def __init__(self, backend, address, north_m, east_m=0.0, depth_m=10.0, **kwargs):
        latitude, longitude = offset_position(*ORIGIN, north_m, east_m)
        backend.set_position(address, latitude, longitude, depth_m)
        self.reader = AtStreamReader("modem")
        self.items, self.raw = [], bytearray()
        self.cond = threading.Condition()
        self.model = EvologicsModel(address, backend, self._output,
                                    relative_position=backend.relative_enu, **kwargs)

    def _output(self, data: bytes) -> None:
        with self.cond:
            self.raw += data
            self.items += self.reader.feed(data)
            self.cond.notify_all()

    def wait_for(self, kind, timeout=5.0, **fields):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for item in self.items:
                    if isinstance(item, kind) and all(getattr(item, k) == v
                                                      for k, v in fields.items()):
                        self.items.remove(item)
                        return item
                left = deadline - time.monotonic()
                assert left > 0, f"no {kind.__name__} {fields} in {self.items}"
                self.cond.wait(left)


@pytest.fixture
def backend():
    propagation = Propagation(SpreadingModel("spherical", "thorp"),
                              SoundSpeedProfile.constant(1500.0))
    channel = SimChannelBackend(propagation, AmbientNoise("fixed", 60.0), seed=3)
    yield channel
    channel.close()


def test_instant_message_with_acknowledgement_and_usbl_fix(backend):
    ship = Modem(backend, 1, 0.0, depth_m=2.0, usbl=UsblErrorModel(seed=5))
    auv = Modem(backend, 2, 600.0, east_m=300.0, depth_m=50.0)
    payload = b"U\x00\n\xff" * 4
    ship.model.feed(at.format_sendim(2, payload, ack=True))
    assert ship.wait_for(at.Reply).kind == "ok"
    recvim = auv.wait_for(at.InstantMessage)
    true_range = math.sqrt(600.0 ** 2 + 300.0 ** 2 + 48.0 ** 2)
    assert (recvim.src, recvim.dest, recvim.ack, recvim.data) == (1, 2, True, payload)
    assert recvim.propagation_time_us == pytest.approx(true_range / 1500.0 * 1e6, rel=0.01)
    assert ship.wait_for(at.DeliveryReport) == at.DeliveryReport(True, "im", 2)
    fix = ship.wait_for(at.UsblLong, remote=2)   # from the acknowledgement
    assert (fix.east_m, fix.north_m, fix.up_m) == pytest.approx((300.0, 600.0, -48.0), abs=25.0)
    assert fix.slant_range_m == pytest.approx(true_range, abs=5.0)
    assert fix.accuracy_m == pytest.approx(math.hypot(true_range * math.radians(1.0),
                                                      true_range * math.radians(1.0)), rel=0.05)
    assert ship.wait_for(at.UsblAngles, remote=2).bearing_rad == pytest.approx(
        math.atan2(300.0, 600.0), abs=math.radians(5))
    assert auv.model.counters["usbl_fixes"] == 0  # no USBL on the vehicle


def test_unacknowledged_message_fails_when_nobody_answers(backend):
    ship = Modem(backend, 1, 0.0, ack_timeout_s=0.5)
    ship.model.feed(at.format_sendim(9, b"hello", ack=True))   # nobody at 9
    assert ship.wait_for(at.Reply).kind == "ok"
    ship.model.feed(at.format_sendim(9, b"again", ack=False))
    assert ship.wait_for(at.Reply).text == "BUSY TRANSMITTING"
    assert ship.wait_for(at.DeliveryReport, timeout=5.0) == at.DeliveryReport(False, "im", 9)


def test_extended_notifications_and_propagation_time(backend):
    a = Modem(backend, 1, 0.0)
    b = Modem(backend, 2, 450.0, depth_m=70.0)
    a.model.feed(b"AT?T\n")
    assert a.wait_for(at.Reply).text == "0"  # nothing delivered yet
    b.model.feed(b"AT@ZX1\n")
    assert b.wait_for(at.Reply).kind == "ok"
    sent_s = time.time()
    a.model.feed(at.format_sendim(2, b"ping", ack=True))
    assert a.wait_for(at.Reply).kind == "ok"
    start = b.wait_for(at.Notification, name="RECVSTART")
    started_s = time.time()
    b.wait_for(at.InstantMessage)
    assert start.fields == () and b.raw.index(b"RECVSTART\r\n") < b.raw.index(b"RECVIM,")
    true_s = math.sqrt(450.0 ** 2 + 60.0 ** 2) / 1500.0
    assert started_s - sent_s >= true_s  # announced once the sound arrived, not before
    assert len(b.wait_for(at.Notification, name="RECVEND").fields) == 4
    assert a.wait_for(at.DeliveryReport) == at.DeliveryReport(True, "im", 2)
    assert not any(isinstance(i, at.Notification) for i in a.items)  # a's are off
    a.model.feed(b"AT?T\n")
    assert int(a.wait_for(at.Reply).text) == pytest.approx(true_s * 1e6, abs=1000)


def test_burst_and_settings(backend):
    a = Modem(backend, 1, 0.0)
    b = Modem(backend, 2, 300.0)
    a.model.feed(b"AT?AL\r\n")
    assert a.wait_for(at.Reply).text == "1"
    a.model.feed(b"AT!AL3\n")
    assert a.wait_for(at.Reply).kind == "ok" and a.model.src == 3
    backend.set_position(3, *offset_position(*ORIGIN, 0.0, 0.0), 10.0)
    a.model.feed(at.format_send(2, bytes(range(256)) * 2))
    assert a.wait_for(at.Reply).kind == "ok"
    burst = b.wait_for(at.BurstData)
    assert burst.src == 3 and burst.data == bytes(range(256)) * 2
    assert a.wait_for(at.DeliveryReport) == at.DeliveryReport(True, "burst", 2, 512)
    a.model.feed(b"AT*SENDIM,65,2,ack," + b"x" * 65 + b"\n")
    a.model.feed(b"AT!L7\nATO\n+++AT?AL\n")
    assert [a.wait_for(at.Reply).text for _ in range(4)] == [
        "ERROR INVALID MESSAGE LENGTH", "ERROR WRONG FORMAT", "OK", "3"]
    assert a.raw.endswith(b"+++AT?AL:1:3\r\n")


def test_usbl_error_statistics_match_the_configured_model():
    model = UsblErrorModel(range_error_fraction=0.001, range_error_floor_m=0.05,
                           bearing_error_deg=2.0, elevation_error_deg=0.5, seed=11)
    rng = model.generator(4)
    east, north, up = 800.0, -600.0, -30.0
    true_range = math.sqrt(east ** 2 + north ** 2 + up ** 2)
    fixes = [model.measure(rng, east, north, up) for _ in range(4000)]
    range_errors = np.array([f.range_m - true_range for f in fixes])
    bearing_errors = np.degrees([f.bearing_rad - math.atan2(east, north) for f in fixes])
    elevation_errors = np.degrees([f.elevation_rad - math.atan2(up, 1000.0) for f in fixes])
    assert abs(range_errors.mean()) < 0.1 * true_range * 0.001
    assert range_errors.std() == pytest.approx(0.001 * true_range, rel=0.05)
    assert bearing_errors.std() == pytest.approx(2.0, rel=0.05)
    assert elevation_errors.std() == pytest.approx(0.5, rel=0.05)
    horizontal = np.hypot([f.east_m - east for f in fixes], [f.north_m - north for f in fixes])
    # cross-range (1000 m x 2 deg = 34.9 m) dominates the along-range 1 m: |N(0, sigma)|
    assert np.percentile(horizontal, 95) == pytest.approx(
        1.96 * math.hypot(1000.0 * math.radians(2.0), 1.0), rel=0.1)
    near = [model.measure(rng, 3.0, 4.0, 0.0).range_m - 5.0 for _ in range(4000)]
    assert np.std(near) == pytest.approx(0.05, rel=0.05)   # the floor, not 0.1 % of 5 m
    again = UsblErrorModel(range_error_fraction=0.001, range_error_floor_m=0.05,
                           bearing_error_deg=2.0, elevation_error_deg=0.5, seed=11)
    assert again.measure(again.generator(4), east, north, up) == fixes[0]
    with pytest.raises(ValueError, match="bearing_error_deg"):
        UsblErrorModel(bearing_error_deg=-1.0)


def test_send_without_a_channel_position_fails_cleanly(backend):
    lost = EvologicsModel(7, backend)   # never placed on the channel
    out = AtStreamReader("modem")
    items = []
    lost.output = lambda data: items.extend(out.feed(data))
    lost.feed(at.format_sendim(2, b"x"))
    assert items == [at.Reply("OK"), at.DeliveryReport(False, "im", 2)]
    assert lost.counters["tx_refused_by_channel"] == 1
    lost.close()
