"""The record of a run on a clock that does not stop (wall, free) ends with the run: what the
vehicles publish while they shut down (`Recorder.close_books`) is counted in summary.json
`after_end` and named on the console, not booked (run.mcap does not record it either)."""

import pathlib

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.run import report
from acomms_bringup.run.recorder import Recorder
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import TransmittedPacket

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def test_transmissions_after_the_books_close_are_counted_not_booked():
    scenario = load_scenario(CONFIG / "demo.yaml")
    vehicle = scenario.vehicles[0]
    record = report.RunRecord(scenario.name, {v.name: v.src for v in scenario.vehicles},
                              scenario.duration_seconds, scenario.clock.warp_factor)
    with RosHarness() as ros:
        recorder = ros.add(Recorder(scenario, [], record, context=ros.context))
        publisher = ros.helper.create_publisher(TransmittedPacket,
                                                f"{vehicle.namespace}/transmit", 10)
        assert ros.spin_until(lambda: publisher.get_subscription_count() >= 1, 10.0)
        publisher.publish(TransmittedPacket())
        assert ros.spin_until(lambda: len(record.transmissions) == 1, 10.0)
        assert recorder.close_books() and not recorder.close_books()  # once
        publisher.publish(TransmittedPacket())
        publisher.publish(TransmittedPacket())
        assert ros.spin_until(lambda: record.after_end == 2, 10.0)
        assert len(record.transmissions) == 1
    summary = report.summarize(record)
    assert summary["after_end"] == 2
    assert ("2 transmissions, receptions or arrivals came after the end, while the vehicles shut "
            "down: not counted here, nor in run.mcap") in report.format_summary(summary)
