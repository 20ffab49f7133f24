"""Journey: the command-line tools of README "Tools": `acomms_codec_check` on every shipped codec
config (sizes, resolutions, rates; a bad config is one line and exit 1) and `acomms_link_budget`
(one range, and the `--ranges` table)."""

from __future__ import annotations

import json
import math
import re

import pytest
from journey_support import ROOT, documented, shell

CODEC_CONFIGS = ("acomms_bringup/config/demo_codecs.yaml",
                 "acomms_bringup/config/cola2_codecs.yaml",
                 "acomms_bringup/config/wec_buoy_codecs.yaml",
                 "acomms_core/config/example_codec_config.yaml")
RATES = (0, 1, 2, 3, 4, 5, 6)


def _codec_ids(path: str) -> list[int]:
    """Message codec ids of a codec config, read as text (no codec code involved)."""
    return [int(i) for i in re.findall(r"^\s*-?\s*\{?\s*id:\s*(\d+)", (ROOT / path).read_text(),
                                       re.M)]


@pytest.mark.parametrize("path", CODEC_CONFIGS)
def test_codec_check_prints_sizes_resolutions_and_rates(path):
    documented("acomms_codec_check CODECS.yaml [--json]")
    text = shell(f"acomms_codec_check {path}", timeout_s=60, check=True).stdout
    report = json.loads(shell(f"acomms_codec_check {path} --json", timeout_s=60,
                              check=True).stdout)
    codecs = report["message_codecs"]
    assert sorted(c["id"] for c in codecs) == sorted(_codec_ids(path))
    assert text.splitlines()[0].startswith(f"{path}: {len(codecs)} message codecs, OK"), text
    for codec in codecs:
        assert 0 < codec["min_bits"] <= codec["max_bits"] <= codec["max_cost_in_packet_bits"]
        assert (f"encoded size: {codec['min_bits']} bits min, {codec['max_bits']} bits max; "
                f"{codec['max_cost_in_packet_bits']} bits in a packet") in text
        for field in codec["fields"]:
            assert re.search(rf"{re.escape(field['field'])}\s+{re.escape(field['codec'])}\s+"
                             rf"{re.escape(field['resolution'])}", text), field
        assert {r["rate"] for r in codec["rates"]} <= set(RATES)
        for rate in codec["rates"]:
            assert rate["messages_per_packet"] == (
                rate["payload_bits"] // codec["max_cost_in_packet_bits"])
            if rate["messages_per_packet"]:
                assert (f"{rate['rate']} ({rate['messages_per_packet']} per "
                        f"{rate['payload_bits']}-bit packet)") in text


def test_codec_check_refuses_a_bad_config_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    source = (ROOT / "acomms_bringup/config/cola2_codecs.yaml").read_text()
    bad.write_text(source.replace("codec: int32", "codec: int33", 1))
    result = shell(f"acomms_codec_check {bad}", timeout_s=60)
    assert result.returncode == 1 and result.stdout == "", result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "int33" in lines[0], result.stderr


def _numbers(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", line)]


def _assumptions_then_numbers(stdout: str) -> list[str]:
    """README: the tool prints its assumptions first ('# ' lines); the lines after them."""
    lines = stdout.splitlines()
    header = [line for line in lines if line.startswith("# ")]
    assert lines[:len(header)] == header and len(header) == 4, stdout
    assert "centre frequency" in header[0] and "band" in header[0], header
    assert header[2].startswith("# transmission loss: ") and header[3].startswith("# noise: ")
    return lines[len(header):]


def test_link_budget_at_one_range():
    result = shell(documented("acomms_link_budget --source-level 185 --range 2000"),
                   timeout_s=60, check=True)
    documented("prints its assumptions")
    lines = _assumptions_then_numbers(result.stdout)
    assert lines[0].startswith("range 2000 m horizontal"), result.stdout
    sl, tl, rl, nl, snr = _numbers(lines[1].replace("1 uPa", ""))
    assert sl == 185.0 and abs(sl - tl - rl) < 0.11 and abs(rl - nl - snr) < 0.11, lines[1]
    # practical spreading (15 log r) plus some absorption at 10 kHz: a sanity bound, not the model
    assert 15 * math.log10(2000) < tl < 15 * math.log10(2000) + 10, tl
    pers = {int(m[0]): float(m[1]) for m in re.findall(r"rate (\d) \(.*\): ([\d.]+)",
                                                         result.stdout)}
    assert sorted(pers) == list(RATES) and all(0.0 <= p <= 1.0 for p in pers.values()), pers
    budget, = json.loads(shell("acomms_link_budget --source-level 185 --range 2000 --json",
                               timeout_s=60, check=True).stdout)
    assert abs(budget["snr_db"] - snr) < 0.051 and abs(budget["noise_db"] - nl) < 0.051
    assert {int(r): round(p, 3) for r, p in budget["packet_error_rate"].items()} == pers


def test_link_budget_table_over_ranges():
    command = documented("--ranges 500:8000:500")
    result = shell(f"acomms_link_budget --source-level 185 {command}", timeout_s=60, check=True)
    header, *rows = _assumptions_then_numbers(result.stdout.strip())
    assert header.split() == ["range_m", "TL_db", "NL_db", "SNR_db",
                              *[f"PER_r{r}" for r in RATES]], header
    table = [_numbers(row) for row in rows]
    assert [row[0] for row in table] == [500.0 * i for i in range(1, 17)]
    for near, far in zip(table, table[1:], strict=False):
        assert far[1] > near[1] and far[3] < near[3] and far[2] == near[2]   # TL up, SNR down
        assert all(f >= n for n, f in zip(near[4:], far[4:], strict=True))   # PER never falls
    assert all(abs(185.0 - row[1] - row[2] - row[3]) < 0.16 for row in table)


def test_link_budget_between_two_positions():
    documented("--from LAT,LON,DEPTH --to ...")
    result = shell("acomms_link_budget --source-level 185 --from 41.52,-70.67,20 "
                   "--to 41.53,-70.67,5", timeout_s=60, check=True)
    horizontal, slant = _numbers(_assumptions_then_numbers(result.stdout)[0])
    # 0.01 degree of latitude at 41.5 N: about 1.11 km (WGS84 meridian arc, not the tool's code)
    assert 1105 < horizontal < 1115 and abs(slant - math.hypot(horizontal, 15.0)) < 1.0, (
        result.stdout)


def test_emulator_help_shows_the_network_file_format():
    documented("File format in\n`micromodem_emulator --help`")
    text = shell("micromodem_emulator --help", timeout_s=30, check=True).stdout
    for key in ("--network", "channel:", "modems:", "tcp_port", "link:", "sound_speed_mps"):
        assert key in text, text


def test_workspace_shell_imports_the_interfaces():
    result = shell(documented(
        'python -c "import acomms_interfaces.msg as m; print(m.Packet())"'), timeout_s=60,
        check=True)
    assert result.stdout.startswith("acomms_interfaces.msg.Packet(src=0, dest=0"), result.stdout
