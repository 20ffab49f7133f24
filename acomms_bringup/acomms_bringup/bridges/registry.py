"""The bridges: one line per bridge node, one line per service table.

`BRIDGES` maps a bridge kind (what a scenario's `vehicles[i].bridges` names, and the node's
executable) to its node class; `SERVICE_TABLES` maps a `service_table` parameter value to the
services carried over acoustics. A new bridge is one module in this folder plus one line here
(and its console script in acomms_bringup/setup.py). A bridge that counts times from the run's
start names its start parameter (`start_parameter`): the stack sets it to the scenario's
`clock.start_time` (sim time; -1 in wall-clock time: the node's activation).
"""

from __future__ import annotations

import dataclasses
import importlib

from acomms_bringup.bridges.wec_buoy import WEC_SERVICES


@dataclasses.dataclass(frozen=True)
class BridgeKind:
    plugin: str        # "module:Class"
    description: str
    start_parameter: str | None = None   # node-clock time of the run's start, s (see above)

    def load_class(self) -> type:
        module_name, _, class_name = self.plugin.partition(":")
        return getattr(importlib.import_module(module_name), class_name)


_P = "acomms_bringup.bridges."
BRIDGES: dict[str, BridgeKind] = {
    "cola2_vehicle_bridge": BridgeKind(f"{_P}cola2_vehicle_bridge:Cola2VehicleBridge",
                                       "cola2 struct, AUV end"),
    "cola2_topside_bridge": BridgeKind(f"{_P}cola2_topside_bridge:Cola2TopsideBridge",
                                       "cola2 struct, topside end"),
    "wec_telemetry_bridge": BridgeKind(f"{_P}wec_telemetry_bridge:WecTelemetryBridge",
                                       "MBARI WEC telemetry, decimated to the link"),
    "remote_service_caller": BridgeKind(f"{_P}remote_service_nodes:RemoteServiceCaller",
                                        "serves remote services, calls them over acoustics"),
    "remote_service_server": BridgeKind(f"{_P}remote_service_nodes:RemoteServiceServer",
                                        "answers remote calls with the real services"),
    "wec_standin_buoy": BridgeKind(f"{_P}wec_standin:WecStandinBuoy",
                                   "stand-in WEC buoy: telemetry and command services (demo)"),
    "wec_standin_operator": BridgeKind(f"{_P}wec_standin:WecStandinOperator",
                                       "stand-in operator: counts telemetry, calls the pump",
                                       start_parameter="start_time_seconds"),
}

SERVICE_TABLES = {"wec_buoy": WEC_SERVICES}
