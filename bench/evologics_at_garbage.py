"""Hostile EvoLogics AT stream: `AtStreamReader("modem")` fed N malformed lines (issue 31).

ROS-free groundwork for the driver's bench: a seeded mix of hostile lines (bad and oversized
`<len>` fields, data longer than its length, truncated USBLLONG, non-ASCII junk, overlong lines,
bad data-mode headers, extended notifications (`RECVSTART`, `RECVEND`, `SENDSTART`,
`SENDEND`) with bad fields, random bytes) interleaved with valid `RECVIM` / `DELIVEREDIM`, fed in
random-sized chunks. Printed: lines/s (wall clock), the refusals by reason, the largest buffer
seen, and whether every valid item interleaved was still parsed. Run:

    source env.sh && python bench/evologics_at_garbage.py [--lines 100000]
"""

from __future__ import annotations

import argparse
import random
import time

from acomms_driver.evologics import at_protocol as at
from acomms_driver.evologics.at_stream import AtStreamReader

VALID = (at.format_notification("RECVIM", [4, 2, 1, "ack", 1000, -40, 150, 800, "0.0"],
                                b"\n\r\x00!") + at.format_notification("DELIVEREDIM", [2]))


def hostile_line(rng: random.Random) -> bytes:
    kind = rng.randrange(10)
    if kind == 0:
        return b"RECVIM,x,2,1,ack,1,1,1,1,0,zz\r\n"
    if kind == 1:
        return b"RECVIM,2,2,1,ack,1,1,1,1,0,zzzz\r\n"
    if kind == 2:
        return b"USBLLONG,1,2,3\r\n"
    if kind == 3:
        return bytes(rng.randrange(128, 256) for _ in range(20)) + b"\r\n"
    if kind == 4:
        return b"A" * rng.randrange(2100, 5000) + b"\r\n"
    if kind == 5:
        return b"+++AT:zz:OK\r\n"
    if kind == 6:
        return b"RECV,99999,2,1,1,1,1,1,0,x\r\n"
    if kind == 7:  # extended notifications (AT@ZX1) with bad fields
        return rng.choice((b"RECVSTART,zz\r\n", b"RECVEND,1,2\r\n", b"SENDSTART,x,im,1,0\r\n",
                           b"SENDEND,2,im,1\r\n"))
    if kind == 8:
        return b"RECVSTART" + bytes(rng.randrange(128, 256) for _ in range(4)) + b"\r\n"
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60))) + b"\n"


def hostile_options(description: str) -> tuple[argparse.Namespace, random.Random]:
    """The command line of the hostile AT benches (this one and evologics_driver_garbage.py):
    --lines, --seed; and the generator seeded with it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--lines", type=int, default=100000)
    parser.add_argument("--seed", type=int, default=31)
    options = parser.parse_args()
    return options, random.Random(options.seed)


def rate_line(lines: int, size: int, elapsed_s: float) -> str:
    return (f"hostile lines: {lines}, bytes: {size}, {elapsed_s:.2f} s, "
            f"{lines / elapsed_s:,.0f} lines/s")


def main() -> None:
    options, rng = hostile_options(__doc__.split("\n")[0])
    reader = AtStreamReader("modem")
    stream = bytearray()
    valid_sent = 0
    for i in range(options.lines):
        stream += hostile_line(rng)
        if i % 100 == 0:
            stream += VALID
            valid_sent += 2
    parsed, largest, position = [], 0, 0
    start = time.perf_counter()
    while position < len(stream):
        size = rng.randrange(1, 4096)
        parsed += reader.feed(bytes(stream[position:position + size]))
        largest = max(largest, reader.buffered_bytes)
        position += size
    elapsed = time.perf_counter() - start
    good = sum(isinstance(item, (at.InstantMessage, at.DeliveryReport)) for item in parsed)
    refused = {k: v for k, v in sorted(reader.counters.items()) if k.startswith("refused_")}
    print(rate_line(options.lines, len(stream), elapsed))
    print(f"refused: {refused} (total {sum(refused.values())})")
    print(f"largest buffer: {largest} bytes; valid items parsed: {good} of {valid_sent} "
          f"(the rest: replies made of junk lines, {len(parsed) - good})")


if __name__ == "__main__":
    main()
