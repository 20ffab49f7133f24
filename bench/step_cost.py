"""Step cost vs idle nodes: does a deterministic step cost what is due, or what exists?

One process, the deterministic clock's own parts (`EventsStepper`, `LocalClocks`): one busy node
with a 1 s ROS-time timer, and K idle nodes each with a timer due only after the run (what most
nodes of a large simulation are at most steps). Steps one simulated second at a time, as
`SteppedRun` does, and prints per K (column `N`) the wall µs per step in two ways:
- `us/step`: what acomms_run does on the EventsExecutor (lazy clocks: only the due node's clock
  is set at a step; `CachedTimerDeadlines`: only the due timers' deadlines are read again),
- `us/step_all`: every node's clock set and every timer's deadline read at every step (before
  issue 30 item 3),
plus the clocks set and deadlines read per step (the first way) and whether the busy timer ran
once per step both ways (`ran_ok`). On a 2-core machine shared with others, run it twice.

    source env.sh && python bench/step_cost.py                 # K = 0 50 200 400, 300 steps
    python bench/step_cost.py 0 100 --steps 500
"""

from __future__ import annotations

import argparse
import sys
import time

S = 1_000_000_000


def measure(idle: int, steps: int, due_only: bool) -> dict:
    """One private rclpy Context with 1 + idle nodes, stepped `steps` simulated seconds."""
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from acomms_core.ros.testing import private_context, tear_down
    from acomms_sim.clock.events_stepper import EventsStepper, make_events_executor
    from acomms_sim.clock.executor_stepper import TimerDeadlines
    from acomms_sim.clock.local_clocks import LocalClocks
    from acomms_sim.clock.stepping import next_step_ns

    context = private_context()
    executor = make_events_executor(context)
    stepper = EventsStepper(executor, context, step_timeout_s=30.0)
    if not due_only:
        stepper._deadlines_class = TimerDeadlines  # every timer read at every step
    ran, nodes = [], []
    for index in range(1 + idle):
        node = Node(f"step_cost_{index}", context=context, start_parameter_services=False,
                    parameter_overrides=[Parameter("use_sim_time", value=True)])
        period = 1.0 if index == 0 else 10.0 * steps
        node.create_timer(period, (lambda: ran.append(1)) if index == 0 else (lambda: None))
        executor.add_node(node)
        nodes.append(node)
    clocks = LocalClocks(nodes, lazy=due_only)
    clocks.adopt()
    clocks.set_ns(0)
    stepper.use_clocks(clocks)
    stepper.drain(0.0, now_ns=0)
    now_ns, reads, sets = 0, getattr(stepper._timers, "reads", 0), clocks.sets
    started = time.perf_counter()
    for _ in range(steps):
        now_ns = next_step_ns(now_ns, stepper.next_deadline_ns(), steps * S)
        clocks.set_ns(now_ns, stepper.due_nodes(now_ns) if due_only else None)
        stepper.drain(now_ns / S, now_ns=now_ns)
    wall = time.perf_counter() - started
    row = {"us_per_step": 1e6 * wall / steps, "ran": len(ran),
           "sets_per_step": (clocks.sets - sets) / steps,
           "reads_per_step": (getattr(stepper._timers, "reads", 0) - reads) / steps}
    clocks.release()
    stepper.close()
    tear_down(context, executor, nodes)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("idle", nargs="*", type=int, default=[0, 50, 200, 400])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    header = ("N", "us/step", "us/step_all", "sets/step", "reads/step", "ran_ok")
    print("  ".join(f"{h:>13}" for h in header), flush=True)
    for idle in args.idle:
        due = measure(idle, args.steps, due_only=True)
        every = measure(idle, args.steps, due_only=False)
        ok = "yes" if due["ran"] == every["ran"] == args.steps else "NO"
        values = (idle, round(due["us_per_step"]), round(every["us_per_step"]),
                  round(due["sets_per_step"], 1), round(due["reads_per_step"], 1), ok)
        print("  ".join(f"{v!s:>13}" for v in values), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
