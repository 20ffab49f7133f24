"""Journey: the simulator guide's receiver check, `python bench/per_vs_range.py --scenarios-only`
(shortened with `--packets 40`): packets queued back to back all arrive `received` and none is
marked collided, and a 10 kHz receiver never decodes a packet on a 12.4 kHz carrier (issue 29)."""

from __future__ import annotations

import re

from journey_support import documented, shell

COMMAND = documented("python bench/per_vs_range.py --scenarios-only")


def test_back_to_back_and_two_carrier_scenarios():
    text = shell(f"{COMMAND} --packets 40", timeout_s=90, check=True).stdout
    back = re.search(r"back to back .*: (\d+) layouts, (\d+)/(\d+) received, (\d+) busy, "
                     r"(\d+) marked collided, (\d+) layouts losing a packet", text)
    assert back, text
    layouts, received, sent, busy, collided, losing = (int(g) for g in back.groups())
    assert layouts > 0 and received == sent == 3 * layouts
    assert (busy, collided, losing) == (0, 0, 0)
    carriers = re.findall(r"two carriers .*rate (\d), 40 packets\): 12400 Hz packets decoded "
                          r"(\d+) \(sent alone\); 10 kHz PER ([\d.]+) alone, ([\d.]+) with it",
                          text)
    assert [rate for rate, *_ in carriers] == ["1", "5"], text
    for _rate, decoded, alone, with_other in carriers:
        assert int(decoded) == 0
        assert float(alone) <= float(with_other)  # the other carrier is interference
