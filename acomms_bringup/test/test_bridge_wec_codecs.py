"""Every MBARI WEC record type and the service envelopes through config/wec_buoy_codecs.yaml:
each configured field comes back within its stated resolution; PBRecord fits 180 bytes."""

import math
import pathlib

import pytest
from bitstring import ConstBitStream
from rclpy.serialization import serialize_message

from acomms_core.codecs.config import load_codec_config

pytest.importorskip("buoy_interfaces.msg", reason="scripts/buoy_interfaces.sh not run")

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config" / "wec_buoy_codecs.yaml"
CODECS = {m.id: m for m in load_codec_config(str(CONFIG)).message_codecs}
INT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
              "uint16": (0, 65535), "int32": (-2**31, 2**31 - 1)}


def _leaf_value(params, k):
    """A value inside the field's range that is not on its grid; and the allowed error."""
    codec = params["codec"]
    if codec in ("float", "linspace"):
        lo, hi = float(params["min_value"]), float(params["max_value"])
        value = lo + (hi - lo) * ((0.3141 + 0.0377 * k) % 1.0)
        if codec == "float":
            return value, 0.5 * 10.0 ** -params["precision"]
        return value, (hi - lo) / (2 ** params["num_bits"] - 1)   # one step
    lo, hi = INT_RANGES.get(codec) or (params["min_value"], params["max_value"])
    return int(lo + (hi - lo) * 0.6180) + k, 0


def _fill(msg, fields, expected, path=""):
    """Set every configured field (recursively); record (path, value, tolerance)."""
    for k, (name, params) in enumerate(fields.items()):
        if params["codec"] == "msg":
            _fill(getattr(msg, name), params.get("fields") or {}, expected, f"{path}{name}.")
        elif params["codec"] == "time":
            getattr(msg, name).sec, getattr(msg, name).nanosec = 1_763_900_123, 456_789_000
            expected.append((f"{path}{name}", 1_763_900_123.456789, 0.01))   # one step
        else:
            value, tolerance = _leaf_value(params, k)
            setattr(msg, name, type(getattr(msg, name))(value))
            expected.append((f"{path}{name}", getattr(msg, name), tolerance))


def _get(msg, path):
    for part in path.split("."):
        msg = getattr(msg, part)
    if hasattr(msg, "nanosec"):
        return msg.sec + msg.nanosec * 1e-9
    return msg


@pytest.mark.parametrize("codec_id", [50, 51, 52, 53, 54, 55])
def test_record_fields_survive_at_stated_resolution(codec_id):
    entry = CODECS[codec_id]
    msg, expected = entry.msg_class(), []
    _fill(msg, entry.params["fields"], expected)
    bits, _ = entry.codec.encode(msg)
    back = entry.codec.decode(ConstBitStream(bits))
    assert len(expected) >= 8
    for path, value, tolerance in expected:
        assert _get(back, path) == pytest.approx(value, abs=tolerance * 1.001 + 1e-6), path


def test_powerbuoy_record_fits_180_bytes_against_1_2_kb_of_cdr():
    entry = CODECS[50]
    msg = entry.msg_class()
    _fill(msg, entry.params["fields"], [])
    size = math.ceil(len(entry.codec.encode(msg)[0]) / 8)
    assert entry.codec.max_length_bits <= 180 * 8
    assert size <= 180 and len(serialize_message(msg)) > 1000


def test_service_envelopes_carry_cdr_requests():
    from buoy_interfaces.srv import PumpCommand

    from acomms_interfaces.msg import RemoteServiceRequest, RemoteServiceResponse

    payload = list(serialize_message(PumpCommand.Request(duration_mins=5.0)))
    for codec_id, msg in ((56, RemoteServiceRequest(correlation_id=65535, service_id=0,
                                                    request=payload)),
                          (57, RemoteServiceResponse(correlation_id=7, service_id=6, status=3,
                                                     response=payload))):
        codec = CODECS[codec_id].codec
        back = codec.decode(ConstBitStream(codec.encode(msg)[0]))
        assert back == msg
