"""The 'U' positions an AUV received in a run, against its true track (cola2_usbl.yaml).

Reads a run's run.mcap: the AUV's true track (`/<auv>/fix`, trajectory_node's NavSatFix, the
track its emulated modem follows), the ship's GPS (`/<ship>/fix`, where its USBL head is) and
the 'U' positions the AUV's cola2_vehicle_bridge published (`/<auv>/usbl_fix_position`, stamped
with the fix's time). Each 'U' gives a `UError`: the horizontal distance from the AUV's true
position at the fix time, the horizontal range and the height of the AUV from the ship then, and
the horizontal RMS error the USBL error model implies there
(`acomms_sim.emulator.usbl_errors.UsblErrorModel.horizontal_rms_m`). Used by
`bench/usbl_accuracy.py --run DIR` and the cola2_usbl journey.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import pathlib

from acomms_sim.emulator.usbl_errors import UsblErrorModel
from acomms_sim.physics.geodesy import horizontal_distance_m

Sample = tuple[float, float, float, float]  # time s, latitude, longitude, depth m


@dataclasses.dataclass(frozen=True)
class UError:
    time_s: float
    horizontal_range_m: float
    up_m: float              # the AUV above the USBL head (negative: below)
    error_m: float           # horizontal, from the true position at the fix time
    model_rms_m: float       # horizontal RMS the USBL error model implies here
    reported_accuracy_m: float


class Track:
    """Positions in time order, linearly interpolated (None outside the samples)."""

    def __init__(self, samples: list[Sample]):
        self.samples = sorted(samples)
        self.times = [s[0] for s in self.samples]

    def at(self, time_s: float) -> tuple[float, float, float] | None:
        index = bisect.bisect_left(self.times, time_s)
        if not self.samples or index == len(self.samples) or (
                index == 0 and time_s < self.times[0]):
            return None
        after = self.samples[index]
        if after[0] == time_s or index == 0:
            return after[1:]
        before = self.samples[index - 1]
        fraction = (time_s - before[0]) / (after[0] - before[0])
        return tuple(b + fraction * (a - b) for b, a in zip(before[1:], after[1:], strict=True))

    def max_speed_mps(self) -> float:
        speeds = [horizontal_distance_m(a[1], a[2], b[1], b[2]) / (b[0] - a[0])
                  for a, b in zip(self.samples, self.samples[1:], strict=False) if b[0] > a[0]]
        return max(speeds, default=0.0)


def read_fixes(mcap_path: pathlib.Path, topics: tuple[str, ...]) -> dict[str, list]:
    """{topic: [(stamp s, latitude, longitude, depth, accuracy m)]} of the NavSatFix topics
    (accuracy: sqrt of the first covariance entry, NaN without a covariance)."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    fixes: dict[str, list] = {topic: [] for topic in topics}
    with pathlib.Path(mcap_path).open("rb") as handle:
        reader = make_reader(handle, decoder_factories=[DecoderFactory()])
        for _schema, channel, _message, msg in reader.iter_decoded_messages(topics=topics):
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            accuracy = (math.sqrt(max(msg.position_covariance[0], 0.0))
                        if msg.position_covariance_type else math.nan)
            fixes[channel.topic].append((stamp, msg.latitude, msg.longitude, -msg.altitude,
                                         accuracy))
    return fixes


def u_errors(run_dir: pathlib.Path, model: UsblErrorModel, auv: str = "auv",
             ship: str = "ship") -> tuple[list[UError], Track]:
    """Every received 'U' position of the run against the truth, and the AUV's true track."""
    topics = (f"/{auv}/fix", f"/{ship}/fix", f"/{auv}/usbl_fix_position")
    fixes = read_fixes(pathlib.Path(run_dir) / "run.mcap", topics)
    truth = Track([f[:4] for f in fixes[topics[0]]])
    ship_track = Track([f[:4] for f in fixes[topics[1]]])
    errors = []
    for time_s, latitude, longitude, _depth, accuracy in fixes[topics[2]]:
        true, head = truth.at(time_s), ship_track.at(time_s)
        if true is None or head is None:
            continue
        horizontal = horizontal_distance_m(head[0], head[1], true[0], true[1])
        up = head[2] - true[2]
        errors.append(UError(time_s, horizontal, up,
                             horizontal_distance_m(true[0], true[1], latitude, longitude),
                             model.horizontal_rms_m(horizontal, up), accuracy))
    return errors, truth
