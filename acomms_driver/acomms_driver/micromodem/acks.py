"""Micromodem acknowledgements as plain values (the driver's `ack` topic). ROS-free.

A packet sent with the acknowledgement flag is acknowledged by the modem it is addressed to:

- legacy packets: `$CAACK,src,dest,frame,ack`, one per frame (frames counted from 1);
- FDP packets: `$CACDR,time,rx_sequence_num,src,dest,minirate,miniframe_ack,dataframe_ack`,
  the frame acknowledgements as bit masks (bit i: frame i+1), decimal integers (a `0x` prefix is
  read as hex). pyacomms mis-parses this sentence (every field read from the minirate), so the
  driver parses it here.

Both give the fields of acomms_interfaces/msg/ModemAck, whose later fields are ros_acomms' (a
legacy acknowledgement has ack_type LEGACY, rx_sequence_num and minirate -1, dataframe_ack
`1 << frame`).
"""

from __future__ import annotations

import math

from acomms_driver.micromodem.modem_status import parse_clock_time

ACK_TYPE_FDP = 0
ACK_TYPE_LEGACY = 1
_MAX_LEGACY_FRAME_BIT = 15  # dataframe_ack is 16 bits wide


def _integer(text: str) -> int:
    text = text.strip()
    return int(text, 16) if text.lower().startswith("0x") else int(text)


def parse_caack(fields) -> dict:
    """`$CAACK` fields; ValueError for a malformed sentence."""
    if len(fields) < 4:
        raise ValueError("CAACK needs src,dest,frame,ack")
    src, dest, frame = (int(float(f)) for f in fields[:3])
    acknowledged = int(float(fields[3])) == 1
    return {"src": src, "dest": dest, "frame_num": frame, "ack": acknowledged,
            "ack_type": ACK_TYPE_LEGACY, "rx_sequence_num": -1, "minirate": -1,
            "miniframe_ack": 0,
            "dataframe_ack": 1 << frame if 0 <= frame <= _MAX_LEGACY_FRAME_BIT else 0,
            "timestamp": math.nan}


def parse_cacdr(fields) -> dict:
    """`$CACDR` fields; ValueError for a malformed sentence."""
    if len(fields) < 7:
        raise ValueError("CACDR needs time,seq,src,dest,minirate,miniframe_ack,dataframe_ack")
    stamp = parse_clock_time(fields[0])
    mini_ack, data_ack = _integer(fields[5]), _integer(fields[6])
    if not (0 <= mini_ack <= 0xFF and 0 <= data_ack <= 0xFFFF):
        raise ValueError(f"CACDR masks {fields[5]!r}, {fields[6]!r} out of range")
    return {"src": int(fields[2]), "dest": int(fields[3]), "frame_num": -1,
            "ack": bool(mini_ack or data_ack), "ack_type": ACK_TYPE_FDP,
            "rx_sequence_num": int(fields[1]), "minirate": int(fields[4]),
            "miniframe_ack": mini_ack, "dataframe_ack": data_ack,
            "timestamp": math.nan if stamp is None else stamp}


def frame_mask(flags) -> int:
    """Bit mask of the frames that arrived (bit i: frame i+1); the emulator's side."""
    return sum(1 << i for i, ok in enumerate(flags) if ok)
