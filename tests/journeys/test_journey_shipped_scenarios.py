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

from journey_support import ROOT, Background, documented, run_summary, shell
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock

from acomms_bringup.description.scenario import load_scenario
from acomms_core.ros.testing import RosHarness

CONFIG = ROOT / "acomms_bringup" / "config"
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
    """The 'simulator' starts publishing 40 simulated seconds into the run: auv1 (whose nav
    status is due at 5 s and 35 s) transmits nothing before, then from where the Odometry says."""
    command = documented("acomms_run acomms_bringup/config/external_positions.yaml")
    origin_s = load_scenario(CONFIG / "external_positions.yaml").clock.origin_s
    out = tmp_path / "run"
    east, north, up = 300.0, 400.0, -20.0    # 500 m from the buoy horizontally, 20 m deep
    first_odometry_s = None
    with RosHarness() as ros:
        clock = []
        ros.helper.create_subscription(Clock, "/clock", lambda m: clock.append(m.clock), 10)
        odom_pub = ros.helper.create_publisher(Odometry, "/gazebo/auv1/odom", 10)
        run = Background(f"{command} --duration 120 --out {out}",
                         log_path=tmp_path / "run.log")
        deadline = time.monotonic() + 90.0
        while run.process.poll() is None and time.monotonic() < deadline:
            now_s = clock[-1].sec + clock[-1].nanosec * 1e-9 - origin_s if clock else 0.0
            if now_s >= 40.0:
                odom_pub.publish(_odometry(east, north, up, clock[-1]))
                first_odometry_s = first_odometry_s or now_s
            ros.spin_for(0.1)
        status = run.stop()
    assert status == 0, run.output[-3000:]
    assert first_odometry_s is not None and first_odometry_s < 100.0, run.output[-3000:]
    with open(out / "timeline.csv", newline="") as stream:
        events = [e for e in csv.DictReader(stream) if e["src"] == "1"]
    sent = [float(e["start_s"]) for e in events if e["kind"] == "tx"]
    assert sent and min(sent) >= first_odometry_s, (sent, first_odometry_s)
    heard = [float(e["slant_range_m"]) for e in events
             if e["kind"] == "rx" and e["vehicle"] == "buoy"]
    assert heard and all(abs(r - math.hypot(500.0, 15.0)) < 1.0 for r in heard), heard
    nav, = [t for t in run_summary(out)["topics"] if t["source"] == "auv1"
            and t["destination"] == "buoy" and t["topic"].endswith("nav_status")]
    assert nav["delivered"] >= 1, nav
