"""Encoded sizes of the issue-17 bridges' messages against their ROS 2 CDR size.

Prints the cola2 struct (byte-exact: 37 bytes + custom) and its compact encoding
(config/cola2_codecs.yaml), every MBARI WEC record and the service-over-acoustics envelopes
(config/wec_buoy_codecs.yaml). Field codecs are fixed-width here, so default-valued messages give
the sizes of real ones (variable arrays are shown empty and at their maximum). Run:

    source env.sh && python bench/bridge_sizes.py
"""

from __future__ import annotations

import math
import pathlib

from rclpy.serialization import serialize_message

from acomms_bringup.bridges import cola2_struct
from acomms_core.codecs.config import load_codec_config

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "acomms_bringup" / "config"


def rows(config_name: str):
    for entry in load_codec_config(str(CONFIG / config_name)).message_codecs:
        msg = entry.msg_class()
        bits = len(entry.codec.encode(msg)[0])
        yield (entry.ros_type.split("/")[-1], len(serialize_message(msg)), bits,
               entry.codec.max_length_bits)


def _pump_request_envelope() -> tuple[int, int]:
    """(CDR bytes, encoded bits) of a RemoteServiceRequest carrying a pump command."""
    from buoy_interfaces.srv import PumpCommand

    from acomms_interfaces.msg import RemoteServiceRequest

    entry = next(m for m in load_codec_config(str(CONFIG / "wec_buoy_codecs.yaml")).message_codecs
                 if m.id == 56)
    msg = RemoteServiceRequest(correlation_id=1, service_id=0, request=list(
        serialize_message(PumpCommand.Request(duration_mins=5.0))))
    return len(serialize_message(msg)), len(entry.codec.encode(msg)[0])


def main() -> None:
    print(f"cola2 struct (byte_exact): {cola2_struct.STRUCT_BYTES} bytes + custom data "
          f"(format {cola2_struct.struct_format('little')!r} / "
          f"{cola2_struct.struct_format('big')!r})")
    header = (f"{'message':24} {'CDR B':>6} {'bits':>6} {'bytes':>6} {'max bytes':>9} "
              f"{'bytes/CDR':>9}")
    for config in ("cola2_codecs.yaml", "wec_buoy_codecs.yaml"):
        print(f"\n{config}\n{header}\n{'-' * len(header)}")
        for name, cdr, bits, max_bits in rows(config):
            print(f"{name:24} {cdr:6d} {bits:6d} {math.ceil(bits / 8):6d} "
                  f"{math.ceil(max_bits / 8):9d} {bits / 8 / cdr:9.1%}")
    pump = _pump_request_envelope()
    print(f"{'  with a PumpCommand':24} {pump[0]:6d} {pump[1]:6d} {math.ceil(pump[1] / 8):6d}")
    print("\ncola2 compact navigation content (time, lat, lon, depth, heading): 118 bits = 15 B; "
          "CDR includes its 4-byte encapsulation header; each message also costs its 8-bit "
          "codec id in a packet.")


if __name__ == "__main__":
    main()
