"""Issue 12, done-when: seeded fuzzing of every field codec of the all-codecs config publishes
only what a reference decode of valid input gives (core_decode_fuzz explains the oracle).

The suite runs ACOMMS_FUZZ_PACKETS packets (default 2,000, a few seconds);
`bench/decode_fuzz.py --packets 100000` runs the large count with the same code.
"""

from __future__ import annotations

import os

import pytest
from core_decode_fuzz import DecodeFuzzer, FuzzFailure

import acomms_core.codecs.codec_fields as codec_fields
import acomms_core.codecs.field_values as field_values

PACKETS = int(os.environ.get("ACOMMS_FUZZ_PACKETS", "2000"))


def test_fuzz_publishes_only_reference_decodes_of_valid_input():
    fuzzer = DecodeFuzzer(seed=12)
    stats = fuzzer.run(PACKETS)
    assert stats.packets >= PACKETS
    # Not vacuous: every message codec (so every field codec) published noise-born messages
    # that passed the oracle, and noise was refused too.
    assert all(count > 0 for count in stats.from_noise.values()), stats.from_noise
    assert stats.published > PACKETS // 4 and stats.refused > PACKETS // 4, stats


def test_fuzz_oracle_catches_a_decoder_without_bounds_checks(monkeypatch):
    """The same fuzzing against codecs built without the bounds and ROS type checks fails."""
    monkeypatch.setattr(codec_fields, "codec_checker", lambda codec: lambda value: None)
    monkeypatch.setattr(field_values, "ros_value_checker",
                        lambda slot_type, is_time=False: lambda value: None)
    fuzzer = DecodeFuzzer(seed=12)
    with pytest.raises(FuzzFailure):
        fuzzer.run(PACKETS)
