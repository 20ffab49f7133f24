"""Journey: README "Authenticated acoustic packets": make the fleet key file with the documented
`acomms_security_key add` line (HOME pointed at a temporary directory; its key is marked new in
the default state directory, so the first start needs nothing else), put the README's codec YAML
next to it and check it with `acomms_codec_check`: accepted with mode 600, 8 bytes per packet of
overhead; refused with a one-line reason once the key file is readable by others."""

from __future__ import annotations

import re
import stat

import yaml
from journey_ros_tools import doc_block
from journey_support import shell


def _key_file(home):
    block = doc_block("acomms_security_key add ~/.acomms/fleet.keys")
    add = next(line for line in block.splitlines() if line.startswith("acomms_security_key add"))
    result = shell(add, timeout_s=30, env={"HOME": str(home), "ROS_HOME": str(home / ".ros")})
    assert result.returncode == 0 and result.stderr == "", result
    state = home / ".ros" / "acomms_security"
    assert [p.name.endswith(".new") for p in state.iterdir()] == [True], result.stdout
    path = home / ".acomms" / "fleet.keys"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    keys = yaml.safe_load(path.read_text())["keys"]
    assert len(keys) == 1 and keys[0]["id"] == 1, keys
    assert re.fullmatch(r"[0-9a-f]{32}", str(keys[0]["key"])), keys   # 16 random bytes
    return path


def _payload_bits(home, codec_file) -> dict[int, int]:
    result = shell(f"acomms_codec_check {codec_file} --json", timeout_s=60,
                   env={"HOME": str(home)})
    assert result.returncode == 0, result.stderr
    report = yaml.safe_load(result.stdout)
    codec, = report["message_codecs"]
    return {r["rate"]: r["payload_bits"] for r in codec["rates"]}


def test_key_file_block_and_secured_codec_config(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    key_file = _key_file(home)
    codec_yaml = doc_block("# 2. in the codec YAML")
    assert "key_file: ~/.acomms/fleet.keys" in codec_yaml
    secured = tmp_path / "commands.yaml"
    secured.write_text(codec_yaml)
    plain = tmp_path / "plain.yaml"
    plain.write_text("\n".join(line for line in codec_yaml.splitlines()
                               if "security:" not in line))
    secured_bits, plain_bits = _payload_bits(home, secured), _payload_bits(home, plain)
    assert set(secured_bits) == set(plain_bits) and secured_bits
    # "8 bytes per packet": 1-byte key id + 3-byte counter + 4-byte tag, at every rate
    assert {rate: plain_bits[rate] - bits for rate, bits in secured_bits.items()
            if bits > 0} == {rate: 64 for rate, bits in secured_bits.items() if bits > 0}

    key_file.chmod(0o644)     # "refused unless mode 600 and yours"
    result = shell(f"acomms_codec_check {secured}", timeout_s=60, env={"HOME": str(home)})
    assert result.returncode == 1 and result.stdout == "", result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "chmod 600" in lines[0] and str(key_file) in lines[0], lines
