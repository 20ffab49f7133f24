"""Authenticated packets: overhead bytes per packet and encode/decode time per packet.

For each mode (authenticate, encrypt) and tag length, on a small packet (32-byte miniframe only)
and a Micromodem rate-1 FDP packet (32-byte miniframe + 192-byte dataframe), filled with 1-byte
messages: the bytes security adds, the forgery probability per attempt, the time of the security
step alone (seal; open = verify + replay check, in memory and with the replay state persisted to
a file as packet_dispatch_node does) and of the whole packet (pack + seal, open + decode) next to
the same messages in a plaintext `ros` packet. Run:

    source env.sh && python bench/packet_security.py [--packets N]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "acomms_core", "test"))

from security_support import KEY_1, rx, secured_entry, write_key_file  # noqa: E402
from std_msgs.msg import UInt8  # noqa: E402

from acomms_core.codecs import parse_codec_config  # noqa: E402
from acomms_core.security import ReplayGuard, forgery_probability  # noqa: E402
from acomms_core.security.aead import VERSION  # noqa: E402
from acomms_core.security.state import forget_sender_counters  # noqa: E402

SIZES = ((32, 0), (32, 192))


def _us_per_call(function, count: int) -> float:
    """Median microseconds of one call (robust to a busy machine)."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def _fill(packet, mini: int, data: int) -> list:
    codec = packet.packet_codec
    bits = packet.codecs_by_id()[6].encode(UInt8(data=7))[0]
    count = codec.payload_capacity_bits(mini, data) // codec.message_cost_bits(len(bits))
    return [(6, bits)] * count


def measure(key_file: str, state: str, mode: str, tag_bytes: int, size, count: int) -> dict:
    entry = secured_entry(key_file, mode=mode, tag_bytes=tag_bytes)
    plain_entry = {k: v for k, v in entry.items() if k != "security"}
    sender = parse_codec_config([entry], "cfg.yaml").packet_codecs[0]
    sender.packet_codec.bind_sender(1, state, allow_fresh=True)   # a new key per run
    receiver = parse_codec_config([entry], "cfg.yaml").packet_codecs[0]
    plain = parse_codec_config([plain_entry], "cfg.yaml").packet_codecs[0]
    secured, codecs, source = receiver.packet_codec, receiver.codecs_by_id(), rx(1)
    messages = _fill(sender, *size)
    packets: list = []
    row = {"overhead": sender.packet_codec.overhead_bytes, "messages": len(messages),
           "pack": _us_per_call(lambda: packets.append(sender.packet_codec.pack(messages, *size)),
                                count)}
    body = bytes(sender.packet_codec.inner.pack(messages, sum(size), 0)[0])
    key = sender.packet_codec.keyring.send_key
    row["seal"] = _us_per_call(lambda: sender.packet_codec.sealer.seal(key, 1, 0, 5, body), count)
    queue = iter(packets)
    row["open"] = _us_per_call(lambda: secured.open(*next(queue), 1), count)
    secured.bind_replay_guard(ReplayGuard(os.path.join(state, f"rx_{mode}{tag_bytes}.json")))
    more = [sender.packet_codec.pack(messages, *size) for _ in range(count)]
    queue = iter(more)
    row["open_persist"] = _us_per_call(lambda: secured.open(*next(queue), 1), count)
    secured.bind_replay_guard(ReplayGuard())
    queue = iter(packets)
    row["decode"] = _us_per_call(lambda: secured.decode(*next(queue), codecs, source), count)
    plain_packet = plain.packet_codec.pack(messages, *size)
    row["plain_pack"] = _us_per_call(lambda: plain.packet_codec.pack(messages, *size), count)
    row["plain_decode"] = _us_per_call(
        lambda: plain.packet_codec.decode(*plain_packet, plain.codecs_by_id(), source), count)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=500, help="packets per measurement")
    args = parser.parse_args(argv)
    columns = ("seal", "open", "open_persist", "pack", "plain_pack", "decode", "plain_decode")
    with tempfile.TemporaryDirectory() as tmp:
        key_file = write_key_file(pathlib.Path(tmp) / "fleet.keys", [(1, KEY_1, None)])
        print(f"format version {VERSION} (src, dest, codec headers, key id and counter "
              "authenticated); median microseconds per packet; open = verify tag + replay check")
        print(f"{'mode':<13}{'tag':>4}{'+bytes':>7}{'P(forge)':>10}{'packet':>8}{'msgs':>5}"
              + "".join(f"{c:>13}" for c in columns))
        for mode in ("authenticate", "encrypt"):
            for tag_bytes in (4, 8, 16):
                for size in SIZES:
                    forget_sender_counters()
                    row = measure(key_file, tmp, mode, tag_bytes, size, args.packets)
                    print(f"{mode:<13}{tag_bytes:>4}{row['overhead']:>7}"
                          f"{forgery_probability(tag_bytes):>10.1e}"
                          f"{f'{size[0]}+{size[1]}':>8}{row['messages']:>5}"
                          + "".join(f"{row[c]:>13.1f}" for c in columns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
