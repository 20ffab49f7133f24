"""Journey: the shipped scenarios other than the demos, run with `acomms_run`.

- `two_vehicles.yaml` (README: the smallest network, a starting point) runs to its end and
  writes the outputs the README lists.
- `external_positions.yaml` (README "trajectory_node ... external simulator"): auv1's modem
  follows nav_msgs/Odometry on /gazebo/auv1/odom. Here the test plays the external simulator (a
  separate ROS participant, as Gazebo is), publishing a fixed pose stamped with the run's /clock;
  auv1's broadcasts reach the buoy and the channel puts auv1 where the Odometry says.
"""

from __future__ import annotations

import csv
import math
import time

from journey_support import Background, documented, run_summary, shell
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock

from acomms_core.ros.testing import RosHarness

OUTPUTS = ("run.mcap", "summary.json", "timeline.png", "timeline.csv", "timeline.json",
           "messages.csv", "accounting.csv", "map.png", "positions.csv")


def test_two_vehicles_runs_to_its_end(tmp_path):
    documented("`two_vehicles.yaml`")
    out = tmp_path / "run"
    result = shell(f"acomms_run acomms_bringup/config/two_vehicles.yaml --warp max --out {out}",
                   timeout_s=100)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = run_summary(out)
    assert summary["clock_mode"] == "deterministic", summary
    assert sorted(p.name for p in out.iterdir() if p.name in OUTPUTS) == sorted(OUTPUTS)
    assert "Traceback" not in result.stdout + result.stderr


def _odometry(east_m: float, north_m: float, up_m: float, stamp) -> Odometry:
    odom = Odometry()
    odom.header.stamp = stamp
    odom.pose.pose.position.x, odom.pose.pose.position.y = east_m, north_m
    odom.pose.pose.position.z = up_m
    odom.pose.pose.orientation.w = 1.0
    return odom


def test_external_positions_follow_the_simulators_odometry(tmp_path):
    command = documented("acomms_run acomms_bringup/config/external_positions.yaml")
    out = tmp_path / "run"
    east, north, up = 300.0, 400.0, -20.0    # 500 m from the buoy horizontally, 20 m deep
    with RosHarness() as ros:
        clock = []
        ros.helper.create_subscription(Clock, "/clock", lambda m: clock.append(m.clock), 10)
        odom_pub = ros.helper.create_publisher(Odometry, "/gazebo/auv1/odom", 10)
        run = Background(f"{command} --duration 120 --out {out}",
                         log_path=tmp_path / "run.log")
        deadline = time.monotonic() + 90.0
        while run.process.poll() is None and time.monotonic() < deadline:
            if clock:
                odom_pub.publish(_odometry(east, north, up, clock[-1]))
            ros.spin_for(0.1)
        status = run.stop()
    assert status == 0, run.output[-3000:]
    with open(out / "timeline.csv", newline="") as stream:
        events = list(csv.DictReader(stream))
    heard = [e for e in events if e.get("src") == "auv1" or e.get("source") == "auv1"]
    assert heard, (list(events[0]) if events else "no events", run.output[-2000:])
    ranges = {round(float(e["range_m"])) for e in heard if e.get("range_m")}
    assert ranges and all(abs(r - math.hypot(500.0, 15.0)) <= 2 for r in ranges), ranges
    nav = run_summary(out)["topics"]
    assert any(t.get("delivered", 0) > 0 for t in (nav.values() if isinstance(nav, dict)
                                                   else nav)), nav
