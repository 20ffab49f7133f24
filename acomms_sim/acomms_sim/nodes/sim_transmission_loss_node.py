"""sim_transmission_loss_node: receive level, TL and delay between two positions, as a service.

Services `sim_transmission_loss` (SimTransmissionLoss) and `get_optimal_tx_depth`
(GetOptimalTxDepth); subscribes `sound_speed_profile` (SoundSpeedProfile) to replace the constant
sound speed. Uses the same channel parameters (and ROS-free library) as modem_sim_node. A bad
request (position out of range, depth below the seafloor for Bellhop, Bellhop failure) is answered
with NaN levels, logged with the reason and counted in `errors`; the node keeps running.
"""

from __future__ import annotations

import collections
import math
import sys

import numpy as np
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn

from acomms_core.ros.ros_support import (
    NodeResources,
    declare_parameters,
    is_active,
    parameter_values,
    run_node,
)
from acomms_interfaces.msg import SoundSpeedProfile
from acomms_interfaces.srv import GetOptimalTxDepth, SimTransmissionLoss
from acomms_sim.nodes.sim_node_support import (
    PROPAGATION_NAMES,
    PROPAGATION_SPECS,
    build_propagation,
    profile_from_msg,
    seconds_to_duration_msg,
    validate_choices,
)
from acomms_sim.physics.transmission_loss import BellhopError

DEPTH_SEARCH_STEPS = 41


class SimTransmissionLossNode(LifecycleNode):
    def __init__(self, node_name: str = "sim_transmission_loss_node", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, PROPAGATION_SPECS, validate_choices, self._apply)
        self.propagation = None
        self.profile = None
        self.errors = collections.Counter()
        self._resources = NodeResources(self)

    def _apply(self, values: dict, changed: frozenset) -> None:
        if self.propagation is not None:
            try:
                self.propagation = build_propagation(values, self.profile)
            except ValueError as exc:
                self.get_logger().error(f"could not apply parameters: {exc}")

    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            self.propagation = build_propagation(parameter_values(self, PROPAGATION_NAMES), None)
        except ValueError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        r = self._resources
        r.service(SimTransmissionLoss, "sim_transmission_loss", self._on_tl)
        r.service(GetOptimalTxDepth, "get_optimal_tx_depth", self._on_optimal)
        r.subscription(SoundSpeedProfile, "sound_speed_profile", self._on_profile, 10)
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._resources.release()
        self.propagation = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._resources.release()
        return TransitionCallbackReturn.SUCCESS

    def _on_profile(self, msg) -> None:
        try:
            profile = profile_from_msg(msg)
            values = parameter_values(self, PROPAGATION_NAMES)
            if msg.water_depth > 0:
                values["water_depth_m"] = float(msg.water_depth)
            self.propagation = build_propagation(values, profile)
            self.profile = profile
        except ValueError as exc:
            self.errors["bad_sound_speed_profile"] += 1
            self.get_logger().error(f"sound_speed_profile refused: {exc}")

    def _refuse(self, what: str, exc: Exception) -> None:
        self.errors[what] += 1
        self.get_logger().warning(f"{what} refused: {exc}")

    def _on_tl(self, request, response):
        response.rcv_rx_level_db = math.nan
        response.transmission_loss_db = math.nan
        if not is_active(self):
            self._refuse("sim_transmission_loss", RuntimeError("node is not active"))
            return response
        try:
            path = self.propagation.path(
                (request.src_latitude, request.src_longitude, float(request.src_depth)),
                (request.rcv_latitude, request.rcv_longitude, float(request.rcv_depth)),
                float(request.center_frequency_hz))
        except (ValueError, BellhopError) as exc:
            self._refuse("sim_transmission_loss", exc)
            return response
        response.transmission_loss_db = float(path.transmission_loss_db)
        response.rcv_rx_level_db = float(request.src_tx_level_db - path.transmission_loss_db)
        response.transmission_delay = seconds_to_duration_msg(path.delay_s)
        return response

    def _on_optimal(self, request, response):
        response.optimal_tx_depth = math.nan
        response.rcv_rx_level_db = math.nan
        if not is_active(self):
            self._refuse("get_optimal_tx_depth", RuntimeError("node is not active"))
            return response
        try:
            low, high = float(request.src_min_depth), float(request.src_max_depth)
            if not 0 <= low <= high:
                raise ValueError(f"depth interval {low}..{high} m is empty or above the surface")
            rcv = (request.rcv_latitude, request.rcv_longitude, float(request.rcv_depth))
            best = None
            for depth in np.linspace(low, high, DEPTH_SEARCH_STEPS if high > low else 1):
                if request.horizontal_range > 0:
                    loss = self.propagation.model.transmission_loss_db(
                        float(depth), rcv[2], float(request.horizontal_range),
                        float(request.center_frequency_hz))
                else:
                    loss = self.propagation.path(
                        (request.src_latitude, request.src_longitude, float(depth)), rcv,
                        float(request.center_frequency_hz)).transmission_loss_db
                if best is None or loss < best[1]:
                    best = (float(depth), loss)
        except (ValueError, BellhopError) as exc:
            self._refuse("get_optimal_tx_depth", exc)
            return response
        response.optimal_tx_depth = best[0]
        response.rcv_rx_level_db = float(request.src_tx_level_db - best[1])
        return response


def main(args=None) -> int:
    return run_node(SimTransmissionLossNode, args)


if __name__ == "__main__":
    sys.exit(main())
