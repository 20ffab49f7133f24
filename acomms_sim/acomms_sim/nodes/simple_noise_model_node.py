"""simple_noise_model_node: publishes a randomly varying ambient noise level (ros_acomms' node).

Publishes std_msgs/Float32 on `ambient_noise` (relative: put it in the modem's namespace): a level
in dB re 1 uPa drawn from N(mean_noise_db, noise_stddev_db²) once on activation and then every
`update_every_seconds` of node-clock time (sim time with use_sim_time), seeded by `random_seed`
(-1: a fresh seed each run, as ros_acomms' default). `modem_sim_node` uses the latest level as
the noise in its receiver band. The draws are `acomms_sim.physics.ambient_noise.RandomNoiseLevels`.
"""

from __future__ import annotations

import sys

from rclpy.lifecycle import TransitionCallbackReturn
from std_msgs.msg import Float32

from acomms_core.ros.ros_support import (
    ManagedNode,
    ParameterSpec,
    declare_parameters,
    parameter_values,
    run_node,
)
from acomms_sim.physics.ambient_noise import RandomNoiseLevels

SPECS = [
    ParameterSpec("mean_noise_db", 60.0, "mean noise level, dB re 1 uPa in the receiver band",
                  0.0, 250.0),
    ParameterSpec("noise_stddev_db", 3.0, "standard deviation of the level, dB", 0.0, 50.0),
    ParameterSpec("update_every_seconds", 10.0, "period of the draws (node clock), s",
                  0.001, 86400.0),
    ParameterSpec("random_seed", -1, "seed of the draws; -1: unseeded", -1, 2**31 - 1),
]
NAMES = [spec.name for spec in SPECS]


class SimpleNoiseModelNode(ManagedNode):
    def __init__(self, node_name: str = "simple_noise_model", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, SPECS)
        self.levels: RandomNoiseLevels | None = None
        self.published = 0

    def on_configure(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, NAMES)
        seed = values["random_seed"]
        try:
            self.levels = RandomNoiseLevels(values["mean_noise_db"], values["noise_stddev_db"],
                                            None if seed < 0 else seed)
        except ValueError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self._pub = self.configured.publisher(Float32, "ambient_noise", 10)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        result = super().on_activate(state)
        period = self.get_parameter("update_every_seconds").value
        self.activated.timer(period, self._publish_level)
        self._publish_level()
        return result

    def on_release(self) -> None:
        self.levels = None

    def _publish_level(self) -> None:
        if self.levels is None:
            return
        self._pub.publish(Float32(data=self.levels.next_db()))
        self.published += 1


def main(args=None) -> int:
    return run_node(SimpleNoiseModelNode, args)


if __name__ == "__main__":
    sys.exit(main())
