"""Constants the docs state as numbers (issue 27: a sentence that states a number is asserted by a
test): each test reads the number from the docs sentence (`doc_numbers`, so the sentence and the
test cannot drift apart) and compares it with the value the code uses (a ParameterSpec default, a
module constant, a model's output, pytest.ini). Measured figures (speeds, start-up) are not
here: they are in docs/guide/scaling.md's Measured table, checked by test_doc_measured.py."""

from __future__ import annotations

import configparser
import dataclasses
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "journeys"))
from journey_support import doc_number, doc_numbers  # noqa: E402


def _default(specs, name: str):
    from acomms_core.ros.parameter_spec import spec_table
    return spec_table(specs)[name].default


def test_pytest_ceiling_per_test_is_the_documented_one():
    config = configparser.ConfigParser()
    config.read(ROOT / "pytest.ini")
    ceiling = float(config["pytest"]["timeout"])
    assert doc_number(r"Every test has a (\d+) s ceiling\s+\(`pytest.ini`\)") == ceiling
    assert doc_number(r"(\d+) s ceiling from `pytest.ini`") == ceiling


def test_step_timeout_default():
    from acomms_bringup.run.cli import parser
    from acomms_sim.clock.stepping import DEFAULT_STEP_TIMEOUT_S
    documented = doc_number(r"`--step-timeout` \((\d+) s\) wall seconds")
    assert documented == DEFAULT_STEP_TIMEOUT_S
    assert parser().parse_args(["scenario.yaml"]).step_timeout == documented


def test_message_queue_defaults_in_the_node_table():
    from acomms_core.codecs.config import MAX_QUEUE_MAXSIZE
    from acomms_core.nodes.message_queue_node import PARAMETERS
    dest, priority, rate, max_bytes = doc_numbers(
        r"`default_dest` \((\d+)\), `default_priority` \((\d+)\), `unknown_dests_are_reachable` "
        r"\(true\), `update_rate` \((\d+) Hz\), `src` \(-1\), `max_packet_bytes` \((\d+), largest "
        r"Micromodem packet\)")
    assert _default(PARAMETERS, "default_dest") == dest
    assert _default(PARAMETERS, "default_priority") == priority
    assert _default(PARAMETERS, "update_rate") == rate
    assert _default(PARAMETERS, "max_packet_bytes") == max_bytes
    assert _default(PARAMETERS, "dynamic_queue_timeout_seconds") == doc_number(
        r"`dynamic_queue_timeout_seconds` \(wall clock, (\d+) s;")
    assert MAX_QUEUE_MAXSIZE == doc_number(r"`queue_maxsize` ≤ (\d+)\.")


def test_largest_packet_is_the_largest_micromodem_packet():
    from acomms_core.modems.registry import DEFAULT_MODEM_PROFILE, modem_profile
    assert DEFAULT_MODEM_PROFILE == "micromodem2"
    largest = max(rate.max_miniframe_bytes + rate.max_dataframe_bytes
                  for rate in modem_profile(DEFAULT_MODEM_PROFILE).rates.values())
    assert largest == doc_number(r"`max_packet_bytes` \((\d+), largest Micromodem packet\)")


def test_fragment_wire_sizes_and_reserved_ids():
    from acomms_core.fragmentation.settings import COMMON_PARAMETERS
    from acomms_core.fragmentation.wire import CONTINUATION_HEADER_BITS, START_HEADER_BITS
    start, continuation = doc_numbers(r"session start (\d+) B, continuation (\d+) B, ack >= 6 B")
    assert (START_HEADER_BITS / 8, CONTINUATION_HEADER_BITS / 8) == (start, continuation)
    ids = doc_numbers(r"`fragment_start_id` (\d+),\s+`fragment_continuation_id` (\d+), "
                      r"`fragment_ack_id` (\d+)\)")
    assert tuple(_default(COMMON_PARAMETERS, name) for name in (
        "fragment_start_id", "fragment_continuation_id", "fragment_ack_id")) == ids


def test_source_levels_per_tx_level_and_band():
    from acomms_core.modems.modem_rates import DEFAULT_TX_LEVEL, source_level_db
    levels = doc_numbers(r"uModem2 levels: (\d+)/(\d+)/(\d+)/(\d+) dB \(25 kHz\), "
                         r"(\d+)/(\d+)/(\d+)/(\d+) dB \(10 kHz\) for `pwramp.txlevel` 0–3")
    computed = tuple(source_level_db(level, band) for band in (25000.0, 10000.0)
                     for level in range(4))
    assert computed == levels
    # tools.md: the default tx level's levels
    tx_level, at_10, at_25 = doc_numbers(r"default tx level (\d) \((\d+) dB at 10 kHz, (\d+) dB "
                                         r"at 25 kHz\)")
    assert tx_level == DEFAULT_TX_LEVEL
    assert (source_level_db(DEFAULT_TX_LEVEL, 10000.0),
            source_level_db(DEFAULT_TX_LEVEL, 25000.0)) == (at_10, at_25)


def test_fdp_packet_durations():
    from acomms_core.modems.modem_rates import RATES
    numbers = doc_numbers(r"FDP miniframe ([\d.]+)/([\d.]+)/([\d.]+) s, dataframe "
                          r"([\d.]+)/([\d.]+)/([\d.]+) s \(rates 1/3/5\)")
    assert tuple(RATES[r].miniframe_duration_s for r in (1, 3, 5)) == numbers[:3]
    assert tuple(RATES[r].dataframe_duration_s for r in (1, 3, 5)) == numbers[3:]


def test_rate_0_fer_one_half_at_the_documented_snr():
    from acomms_sim.physics.packet_performance import frame_error_rate
    snr = -doc_number(r"FER 0.5 at −([\d.]+) dB SNR")
    assert frame_error_rate(0, snr - 0.05) > 0.5 > frame_error_rate(0, snr + 0.05)


def test_touching_packet_boundary():
    from acomms_sim.physics.channel import BOUNDARY_EPSILON_S
    micro_s = doc_number(r"packet boundaries within (\d+) µs count\s+as touching "
                         r"\(`BOUNDARY_EPSILON_S`\)")
    assert BOUNDARY_EPSILON_S == pytest.approx(micro_s * 1e-6)


def test_detection_window():
    from acomms_sim.physics.channel import DETECTION_WINDOW_S
    for pattern in (r"detection window, its first (\d+) ms\)", r"the SINR over its first (\d+) ms"):
        assert DETECTION_WINDOW_S == pytest.approx(doc_number(pattern) / 1000.0)


def test_default_field_codec_lengths():
    from acomms_core.codecs.ros_types import DEFAULT_ARRAY_MAX_LENGTH, DEFAULT_STRING_MAX_LENGTH
    assert DEFAULT_STRING_MAX_LENGTH == doc_number(r"`string` without a bound → `string`, "
                                                   r"max_length (\d+), 7-bit ASCII")
    assert DEFAULT_ARRAY_MAX_LENGTH == doc_number(r"`variable_len_array` with max_length (\d+) "
                                                  r"\(extra elements are truncated\)")


def test_authenticated_packet_overhead():
    from acomms_core.security.aead import COUNTER_BYTES, KEY_ID_BYTES, forgery_probability
    from acomms_core.security.secured_codec import SecuritySettings
    key_id, counter, tag, total, exponent = doc_numbers(
        r"Overhead: (\d+)-byte key id \+\s+(\d+)-byte counter \+ tag \((\d+) bytes by default: "
        r"\*\*(\d+) bytes per packet\*\*; forgery chance 2\^-(\d+) per try")
    (default_tag,) = [field.default for field in dataclasses.fields(SecuritySettings)
                      if field.name == "tag_bytes"]
    assert (KEY_ID_BYTES, COUNTER_BYTES, default_tag) == (key_id, counter, tag)
    assert KEY_ID_BYTES + COUNTER_BYTES + default_tag == total
    assert forgery_probability(default_tag) == 2.0 ** -exponent


def test_udp_link_overhead_and_stream_header():
    from acomms_driver.udp.stream import HEADER_BYTES
    from acomms_driver.udp.udp_link_driver import PARAMETERS
    assert HEADER_BYTES == doc_number(r"\((\d+)-byte header: sequence id, packet id, packet count")
    assert _default(PARAMETERS, "overhead_bytes") == doc_number(r"incl\. (\d+) bytes IP/UDP")


def test_lifecycle_notice_and_listed_service_times():
    from acomms_core.ros.ros_support import LISTED_IS_THERE_S, UNCONFIGURED_NOTICE_S
    assert UNCONFIGURED_NOTICE_S == doc_number(r"logs once, (\d+) s after start, `unconfigured:")
    assert LISTED_IS_THERE_S == doc_number(r"lifecycle services \"not ready\" for (\d+) s\s+"
                                           r"although the node lists them")


def test_powerbuoy_record_size_against_cdr():
    pytest.importorskip("buoy_interfaces.msg", reason="scripts/buoy_interfaces.sh not run")
    from rclpy.serialization import serialize_message

    from acomms_core.codecs.config import load_codec_config
    config = ROOT / "acomms_bringup" / "config" / "wec_buoy_codecs.yaml"
    entry = next(entry for entry in load_codec_config(str(config)).message_codecs
                 if entry.ros_type.endswith("PBRecord"))
    encoded, cdr_kb = doc_numbers(r"\(PBRecord (\d+) B vs ~([\d.]+) KB CDR\)")
    assert -(-entry.codec.max_length_bits // 8) == encoded
    assert round(len(serialize_message(entry.msg_class())) / 1000, 1) == cdr_kb


def _fragmentation_ratio(extra: str, tmp_path) -> float:
    """Mean ratio (packets used / ideal) the fragmentation bench prints for the 10 KB message on
    the 300 s cycle with one ack slot, 10 seeds (the bench's defaults otherwise)."""
    from journey_support import shell
    result = shell(f"python bench/fragmentation_efficiency.py --layouts ack-slot --cycles 300 "
                   f"--sizes 10000 --png {tmp_path}/fragmentation.png {extra}", timeout_s=150)
    (row,) = [line.split() for line in result.stdout.splitlines()
              if line.split()[:3] == ["ack-slot", "300", "10000"]]
    assert row[7] == "100%", result.stdout
    return float(row[5])


def test_fragmentation_bench_figures(tmp_path):
    """files.md: the bench's ratio at most X at every point (checked here at the point where the
    old fixed ack timeout did worst), and up to Y there with `--ack-timeout-s 120`."""
    at_most, fixed_timeout = doc_numbers(
        r"per cycle: at most ([\d.]+) at every point; with\s+`--ack-timeout-s 120` \(the fixed "
        r"default before\) up to ([\d.]+) \(300 s cycle, one ack slot a cycle\)")
    assert _fragmentation_ratio("--ack-timeout-s 120", tmp_path) == pytest.approx(fixed_timeout,
                                                                                   abs=0.005)
    assert _fragmentation_ratio("", tmp_path) <= at_most


def test_test_workers_default():
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    workers = re.search(r'workers="\$\{ACOMMS_TEST_WORKERS:-(\d+)\}"', script)
    documented = doc_number(r"They run on (\d+) pytest-xdist workers")
    assert workers and int(workers.group(1)) == documented


def test_lifecycle_retry_backoff_is_the_documented_one():
    """bring-up-a-vehicle.md: every unanswered lifecycle call is retried after pauses that start
    at the first number, double, and stop growing at the second (the manager's RetrySchedule)."""
    import itertools

    from acomms_bringup.description.bringup_policy import Attempts, RetrySchedule

    first, most = doc_numbers(r"retried with backoff \(([\d.]+) s doubling to ([\d.]+) s\)")
    pauses = list(itertools.islice(RetrySchedule().pauses(), 8))
    assert pauses[0] == first and max(pauses) == most
    assert all(b == min(most, 2 * a) for a, b in itertools.pairwise(pauses))
    assert Attempts.__init__.__defaults__[0] == RetrySchedule()  # what the manager uses
