"""What travels between emulated Micromodems: a transmission as it leaves a modem and as one
receiver hears it (ROS-free; the model, its transmit options and the backends share it)."""

from __future__ import annotations

import dataclasses

from acomms_core.modems.micromodem2 import MICROMODEM2

CARRIER_HZ = 25000
BANDWIDTH_HZ = 5000

# The emulated modem: rates, FDP rules, payload limits and on-air times come from its profile.
PROFILE = MICROMODEM2


@dataclasses.dataclass
class AcousticTransmission:
    """One transmission as it leaves a modem."""

    kind: str                 # "fdp", "tdp", "legacy", "ping", "ping_reply"
    src: int
    dest: int
    start_time: float         # Unix seconds when the signal starts
    duration_s: float         # on-air time
    miniframe_rate: int = 0
    dataframe_rate: int = 0
    miniframe_bytes: bytes = b""
    dataframe_bytes: bytes = b""
    frames: list[bytes] = dataclasses.field(default_factory=list)  # legacy frames
    ack: bool = False
    ping_out_travel_s: float = 0.0  # ping_reply: travel time of the ping it answers
    acknowledged: dict | None = None  # ack: what the acknowledging modem received
    carrier_hz: int = CARRIER_HZ
    bandwidth_hz: int = BANDWIDTH_HZ

    def dataframes(self) -> list[bytes]:
        """The payload split into the frames of its rate (legacy: the frames as sent)."""
        if self.kind == "legacy":
            return list(self.frames)
        size = (PROFILE.rate_info(self.dataframe_rate).frame_bytes
                if self.dataframe_rate in PROFILE.rates else 64)
        data = self.dataframe_bytes
        return [data[i:i + size] for i in range(0, len(data), size)]


@dataclasses.dataclass
class Reception:
    """A transmission as heard by one receiver, decided by the backend."""

    transmission: AcousticTransmission
    travel_time_s: float
    snr_in_db: float = 20.0
    snr_out_db: float = 15.0
    noise_db: int = 60
    miniframe_ok: list[bool] | None = None  # None: all good
    dataframe_ok: list[bool] | None = None
