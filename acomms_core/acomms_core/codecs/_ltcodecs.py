"""Import ltcodecs with its middleware shim in native mode (no ROS 1/ROS 2 CLI packages needed).

Every module of acomms_core.codecs imports ltcodecs through here so the environment variable is
set before ltcodecs (and armw) are first imported.
"""

import os

os.environ.setdefault("ARMW_MIDDLEWARE", "native")

import ltcodecs  # noqa: E402
from ltcodecs.multiple_field_codec import MultipleFieldCodec  # noqa: E402

FIELD_CODEC_CLASSES = ltcodecs.field_codec_classes
# Zero-bit fields whose decoded value comes from the received packet (src, dest, toa, snr_in).
METADATA_DECODERS = ltcodecs.metadata_decoders
# Zero-bit fields whose value, on encode, sets the queued message's destination.
METADATA_ENCODERS = ltcodecs.metadata_encoders

__all__ = ["FIELD_CODEC_CLASSES", "METADATA_DECODERS", "METADATA_ENCODERS", "MultipleFieldCodec",
           "ltcodecs"]
