"""sim_packet_performance_node: does a packet at this level, noise and rate get through?

Service `sim_packet_performance` (SimPacketPerformance). SNR = rx_level_db − noise_level_db, where
noise_level_db is the noise in the receiver band (the convention of
acomms_sim.physics.packet_performance). Draws one miniframe (FDP rates) and every dataframe frame
of a full packet at that rate with the table FER, from a generator seeded by `seed`. An unknown
rate or NaN input is answered with packet_success false, frame_error_probability NaN, empty lists,
a log line and a count in `errors`.
"""

from __future__ import annotations

import collections
import math
import sys

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn

from acomms_core.modems.modem_rates import UnknownRateError
from acomms_core.ros.ros_support import (
    NodeResources,
    ParameterSpec,
    declare_parameters,
    is_active,
    parameter_values,
    run_node,
)
from acomms_interfaces.srv import SimPacketPerformance
from acomms_sim.physics.packet_performance import PacketPerformance

SPECS = [ParameterSpec("seed", 0, "random seed of the frame draws (applied at configure)",
                       0, 2**31 - 1)]


class SimPacketPerformanceNode(LifecycleNode):
    def __init__(self, node_name: str = "sim_packet_performance_node", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, SPECS)
        self.performance = None
        self.errors = collections.Counter()
        self._resources = NodeResources(self)

    def on_configure(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, ["seed"])
        self.performance = PacketPerformance(values["seed"])
        self._resources.service(SimPacketPerformance, "sim_packet_performance", self._on_request)
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._resources.release()
        self.performance = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._resources.release()
        return TransitionCallbackReturn.SUCCESS

    def _on_request(self, request, response):
        response.packet_success = False
        response.frame_error_probability = math.nan
        if not is_active(self):
            self.errors["inactive"] += 1
            self.get_logger().warning("sim_packet_performance refused: node is not active")
            return response
        snr = float(request.rx_level_db) - float(request.noise_level_db)
        if math.isnan(snr):
            self.errors["nan_input"] += 1
            self.get_logger().warning("sim_packet_performance refused: NaN level")
            return response
        try:
            outcome = self.performance.draw_full_packet(int(request.packet_rate), snr)
        except UnknownRateError as exc:
            self.errors["unknown_rate"] += 1
            self.get_logger().warning(f"sim_packet_performance refused: {exc}")
            return response
        response.packet_success = outcome.packet_success
        response.frame_error_probability = outcome.frame_error_probability
        response.miniframe_success = outcome.miniframe_success
        response.frame_success = outcome.frame_success
        return response


def main(args=None) -> int:
    return run_node(SimPacketPerformanceNode, args)


if __name__ == "__main__":
    sys.exit(main())
