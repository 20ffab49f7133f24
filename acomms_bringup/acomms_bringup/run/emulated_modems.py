"""EvoLogics emulators for the vehicles of a scenario whose modem is `{kind: evologics,
connection: emulated}` (acomms_run).

`EmulatedModems.start()` puts one `EvologicsModel` per such vehicle (address = its SRC, a USBL
head when the modem has `usbl: {...}`, with that error model) on one `SimChannelBackend` built
from the scenario's `channel:` (propagation, noise, fading and seed, as the sim modems' nodes build
theirs: acomms_sim.nodes.sim_node_support), serves each on its own pseudo-terminal and returns the
ptys, which the runner gives to the vehicles' evologics_driver_node (`with_emulated_ports`).
Emulators run on the wall clock (so such a scenario runs with `use_sim_time: false`): a thread
moves each modem along its vehicle's trajectory, trajectory time 0 being `start_wall_s`, the
moment the runner also gives the trajectory_nodes (`start_time_seconds`), so the channel and the
vehicle's published `fix` follow one track. `close()` stops the thread and closes every pty,
model and timer (the runner calls it from `stop()`: at the end, on a failed start-up and on
Ctrl-C).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time

from acomms_bringup.description.scenario import Scenario, Vehicle
from acomms_bringup.description.stack import (
    StackDescription,
    channel_parameters,
    emulated_vehicles,
    noise_parameters,
)
from acomms_bringup.run.run_errors import RunError
from acomms_sim.emulator.channel_backend import SimChannelBackend
from acomms_sim.emulator.evologics_emulator import serve_modem
from acomms_sim.emulator.usbl_errors import UsblErrorModel
from acomms_sim.nodes.sim_node_support import build_fading, build_noise, build_propagation
from acomms_sim.physics.sound_speed import SoundSpeedProfile

POSITION_PERIOD_S = 0.1  # wall seconds between moves of a modem along its trajectory


def channel_backend(scenario: Scenario) -> SimChannelBackend:
    """The emulators' channel from the scenario's `channel:` keys (the sim modems' builders)."""
    channel = scenario.channel
    values = {**channel_parameters(scenario), **noise_parameters(scenario)}
    profile = None
    if channel.sound_speed_profile:
        depths, speeds = zip(*channel.sound_speed_profile, strict=True)
        profile = SoundSpeedProfile(depths, speeds)
    fading = build_fading({"fading_model": channel.fading.model,
                           "fading_k_factor": channel.fading.k_factor,
                           "coherence_time_s": channel.fading.coherence_time_s})
    return SimChannelBackend(build_propagation(values, profile), build_noise(values),
                             source_level_db=channel.source_level_db, seed=scenario.seed,
                             fading=fading,
                             capture_margin_db=channel.capture_margin_db or math.inf)


def with_emulated_ports(stack: StackDescription, ports: dict[str, str],
                        start_wall_s: float) -> StackDescription:
    """The stack with each emulated vehicle's evologics_driver_node on its pty and every
    trajectory_node's time 0 at start_wall_s (the emulators' track)."""
    groups = []
    for group in stack.groups:
        nodes = []
        for node in group.nodes:
            if node.executable == "evologics_driver_node" and group.name in ports:
                node = dataclasses.replace(node, parameters={
                    **node.parameters, "modem_serial_port": ports[group.name]})
            elif node.executable == "trajectory_node" and ports:
                node = dataclasses.replace(node, parameters={
                    **node.parameters, "start_time_seconds": start_wall_s})
            nodes.append(node)
        groups.append(dataclasses.replace(group, nodes=tuple(nodes)))
    return dataclasses.replace(stack, groups=tuple(groups))


class EmulatedModems:
    """The scenario's emulated EvoLogics modems (see the module docstring)."""

    def __init__(self, scenario: Scenario):
        self.vehicles = emulated_vehicles(scenario)
        self.scenario = scenario
        self.backend: SimChannelBackend | None = None
        self.served: dict[str, tuple] = {}  # vehicle name -> (model, server)
        self.start_wall_s = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, start_wall_s: float) -> dict[str, str]:
        """Place and serve every modem; {vehicle name: pty path}. OSError/ValueError if one
        cannot be served (what is already served stays for close())."""
        self.start_wall_s = start_wall_s
        if not self.vehicles:
            return {}
        self.backend = channel_backend(self.scenario)
        for vehicle in self.vehicles:
            self._place(vehicle, start_wall_s)
            usbl = vehicle.modem.connection.get("usbl")
            self.served[vehicle.name] = serve_modem(
                self.backend, vehicle.src, UsblErrorModel(**usbl) if usbl is not None else None)
        if any(v.trajectory for v in self.vehicles):
            self._thread = threading.Thread(target=self._follow, name="evologics emulators",
                                            daemon=True)
            self._thread.start()
        return {name: server.path for name, (_, server) in self.served.items()}

    def serve(self, stack: StackDescription) -> StackDescription:
        """Start the emulators now; the stack with the drivers on their ptys (unchanged without
        emulated modems). RunError naming the reason when one cannot be served."""
        if not self.vehicles:
            return stack
        start_wall_s = time.time()
        try:
            ports = self.start(start_wall_s)
        except (OSError, ValueError) as exc:
            raise RunError(f"EvoLogics emulator: {exc}") from None
        return with_emulated_ports(stack, ports, start_wall_s)

    def _place(self, vehicle: Vehicle, now_s: float) -> None:
        position = (vehicle.trajectory.position_at(now_s - self.start_wall_s)
                    if vehicle.trajectory else vehicle.position)
        self.backend.set_position(vehicle.src, position.latitude, position.longitude,
                                  position.depth)

    def _follow(self) -> None:
        while not self._stop.wait(POSITION_PERIOD_S):
            now = time.time()
            for vehicle in self.vehicles:
                if vehicle.trajectory:
                    self._place(vehicle, now)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        for model, server in self.served.values():
            server.close()
            model.close()
        self.served.clear()
        if self.backend is not None:
            self.backend.close()
