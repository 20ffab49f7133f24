"""Scenarios with the issue-19 MAC kinds and Poisson traffic: loader, stack, traffic plan."""

import pathlib
import sys

from acomms_bringup.description.scenario import parse_scenario
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.run.traffic import plan_traffic

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


def bench_scenario(mac: str, load: float = 1.0):
    sys.path.insert(0, str(BENCH))
    try:
        import mac_comparison
    finally:
        sys.path.remove(str(BENCH))
    data = mac_comparison.scenario(mac, load, 600.0, seed=5)
    return parse_scenario(data, file="bench.yaml", base_dir=BENCH)


def mac_node(stack, vehicle: str):
    return next(n for n in stack.group(vehicle).nodes
                if n.executable not in ("message_queue_node", "packet_dispatch_node",
                                        "modem_sim_node"))


def test_each_new_kind_is_described_with_its_node_and_vehicle_parameters():
    expected = {"aloha": "tdma_slotted_aloha_node", "carrier_sense": "carrier_sense_node",
                "polled": "mac_node"}
    for mac, executable in expected.items():
        scenario = bench_scenario(mac)
        node = mac_node(describe_stack(scenario), "v3")
        assert node.executable == executable, mac
        if mac == "polled":  # the stack fills src from the vehicle; mac_kind names the kind
            assert node.parameters["src"] == 3 and node.parameters["mac_kind"] == "polled"
        # Shared aloha slots are meant to be shared: no overlap warning for them.
        assert not scenario.warnings, scenario.warnings


def test_poisson_traffic_is_seeded_with_the_given_mean_interval():
    scenario = bench_scenario("tdma", load=2.0)
    stack = describe_stack(scenario)

    def arrivals():
        plan = plan_traffic(scenario, stack)[0]
        times, t = [], 0.0
        while len(times) < 400:
            t = plan.next_due_s
            assert plan.due(t)
            times.append(t)
        return times

    first = arrivals()
    assert first == arrivals()  # the same scenario seed: the same arrival times
    gaps = [b - a for a, b in zip(first, first[1:], strict=False)]
    mean = sum(gaps) / len(gaps)
    assert abs(mean - 32.0) < 4.0  # 8 vehicles x 8 s slot / G=2; sigma of the mean ~1.6 s
    assert min(gaps) < 8.0 < max(gaps)  # exponential, not periodic
