"""Decode fuzzing at scale: >= 100,000 packets across every field codec of the all-codecs config.

The same fuzzer as acomms_core/test/test_core_decode_fuzz.py (core_decode_fuzz.DecodeFuzzer):
valid packets must decode to the reference decode of each message; noise and mutated packets may
only publish messages that survive the rclpy wire unchanged and equal the reference decode of
their own strict (on_out_of_range: refuse) encoding. Exits 1 on the first violation. Run:

    source env.sh && python bench/decode_fuzz.py [--packets 100000] [--seed 12]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "acomms_core",
                                "test"))

from core_decode_fuzz import DecodeFuzzer, FuzzFailure  # noqa: E402

PROGRESS_EVERY = 10_000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--packets", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()
    fuzzer = DecodeFuzzer(seed=args.seed)
    start = time.process_time()
    try:
        for done in range(0, args.packets, PROGRESS_EVERY):
            stats = fuzzer.run(min(PROGRESS_EVERY, args.packets - done))
            print(f"{stats.packets} packets, {stats.published} published, all equal to the "
                  f"reference decode ({time.process_time() - start:.0f} s CPU)", flush=True)
    except FuzzFailure as exc:
        print(f"FAIL after {fuzzer.stats.packets} packets: {exc}")
        return 1
    cpu_s = time.process_time() - start
    print(f"seed {args.seed}: {stats.packets} packets, {stats.published} messages published "
          f"(all equal to the reference decode), {stats.refused} refused/skipped; "
          f"{cpu_s:.1f} s CPU ({1e3 * cpu_s / max(stats.packets, 1):.2f} ms/packet)")
    print("published per codec id (of which from noise or mutated packets): " + ", ".join(
        f"{k}: {v} ({stats.from_noise[k]})" for k, v in sorted(stats.per_codec.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
