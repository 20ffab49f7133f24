"""The MBARI WEC buoy as the bridges see it (ROS-free tables; one source of truth).

Telemetry records (`buoy_interfaces`, topics of MBARI's buoy software) and the command services
carried over acoustics with the ranges their definitions state. Type names are MBARI's own, so the
bridge connects to a running MBARI WEC simulation or buoy; where `buoy_interfaces` is not
installed, scripts/buoy_interfaces.sh builds a stand-in with identical definitions.
"""

from __future__ import annotations

import dataclasses

from acomms_bringup.bridges.remote_service import OUT_OF_RANGE, FieldRange, RemoteService


@dataclasses.dataclass(frozen=True)
class TelemetryRecord:
    topic: str               # MBARI's topic name (relative: resolved in the buoy's namespace)
    ros_type: str
    default_period_s: float  # 0: not forwarded unless configured


RECORDS = (
    TelemetryRecord("powerbuoy_data", "buoy_interfaces/msg/PBRecord", 60.0),
    TelemetryRecord("battery_data", "buoy_interfaces/msg/BCRecord", 0.0),
    TelemetryRecord("power_data", "buoy_interfaces/msg/PCRecord", 0.0),
    TelemetryRecord("spring_data", "buoy_interfaces/msg/SCRecord", 0.0),
    TelemetryRecord("trefoil_data", "buoy_interfaces/msg/TFRecord", 0.0),
    TelemetryRecord("ahrs_data", "buoy_interfaces/msg/XBRecord", 0.0),
)

# PBCommandResponse codes for outcomes of the acoustic leg (the real service's code otherwise):
# refused range -> BAD_INPUT, undecodable -> BAD_OPTS, no answer in time -> BAD_SOCK (comms
# failed), service not offered on the buoy -> NOT_IMPLEMENTED.
_ERRORS = ((OUT_OF_RANGE, -3), ("bad request", -2), ("timeout", -1), ("not available", -99))


def _command(name: str, srv: str, *ranges: FieldRange) -> RemoteService:
    return RemoteService(name, f"buoy_interfaces/srv/{srv}", ranges, "result.value", _ERRORS)


# Service ids are positions in this tuple: append only, never reorder.
WEC_SERVICES = (
    _command("pump_command", "PumpCommand", FieldRange("duration_mins", 1.0, 10.0, (0.0,))),
    _command("valve_command", "ValveCommand", FieldRange("duration_sec", 1, 127, (0,))),
    _command("tf_set_pos_command", "TFSetPosCommand", FieldRange("position", 0, 1)),
    _command("pc_scale_command", "PCScaleCommand", FieldRange("scale", 0.5, 1.4)),
    _command("pc_retract_command", "PCRetractCommand", FieldRange("retract", 0.4, 1.0)),
    _command("pc_wind_curr_command", "PCWindCurrCommand", FieldRange("wind_curr", -35.0, 35.0)),
    _command("pc_bias_curr_command", "PCBiasCurrCommand", FieldRange("bias_curr", -15.0, 15.0)),
)
