"""A simulated modem's reception, as acomms_run books it, from its message or its plain event.

acomms_run takes the receptions of the simulated modems of other processes from their
`reception_events` messages, and those of its own modems from the modems themselves (the plain
`acomms_sim.modem.fields.ReceptionEvent`, no message built: `ModemOutputs.reception_observer`).
Both give the same record: the plain event's times go through a message's sec/nanosec and its
float32 fields are rounded, as the message would carry them.
"""

from __future__ import annotations

from acomms_bringup.run.records import Reception
from acomms_core.ros.ros_support import stamp_seconds, stamped_seconds
from acomms_core.ros.shared_messages import narrowed
from acomms_interfaces.msg import SimReceptionEvent

_LEVELS = ("snr_db", "receive_level_db", "noise_db", "transmission_loss_db", "slant_range_m")


def reception_from_msg(vehicle: str, msg) -> Reception:
    """The record of an acomms_interfaces/SimReceptionEvent heard by `vehicle`."""
    return Reception(
        vehicle, int(msg.src), int(msg.dest), stamp_seconds(msg.transmit_time),
        stamp_seconds(msg.arrival_time), stamp_seconds(msg.duration), msg.outcome,
        float(msg.snr_db), bool(msg.collided), float(msg.receive_level_db),
        float(msg.noise_db), float(msg.transmission_loss_db), float(msg.slant_range_m),
        int(msg.num_frames), int(msg.num_bad_frames))


def reception_from_event(vehicle: str, event) -> Reception:
    """The same record from the plain event its message is made of."""
    levels = narrowed(SimReceptionEvent, {name: getattr(event, name) for name in _LEVELS})
    return Reception(
        vehicle, int(event.src), int(event.dest), stamped_seconds(event.transmit_time_s),
        stamped_seconds(event.arrival_time_s), stamped_seconds(event.duration_s), event.outcome,
        float(levels["snr_db"]), bool(event.collided), float(levels["receive_level_db"]),
        float(levels["noise_db"]), float(levels["transmission_loss_db"]),
        float(levels["slant_range_m"]), int(event.num_frames), int(event.num_bad_frames))
