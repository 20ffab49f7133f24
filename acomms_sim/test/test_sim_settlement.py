"""The balance rule of Tick/Tock rounds (ROS-free): a step settles when a quiet round sent as
many deliveries between processes as the round before had received; counts that never balance
settle after a bounded wait, counted."""

from acomms_sim.clock.stepping import Settlement, TockRound


def _rule() -> Settlement:
    """The defaults docs/guide/scaling.md states: 3 rounds in which nothing moved, 0.05 wall s."""
    return Settlement()


def test_no_traffic_settles_in_one_round_once_a_wave_was_seen():
    rule = _rule()
    assert not rule.settled(True, 0, 0, 0.0)  # the first round has no wave before it
    assert rule.settled(True, 0, 0, 0.001)
    assert rule.settled(True, 0, 0, 0.002)  # the next step: the previous step's wave counts
    assert rule.steps == 2 and rule.unbalanced == 0


def test_a_message_in_flight_holds_the_step_until_received_before_the_round():
    rule = _rule()
    assert not rule.settled(True, 0, 0, 0.0)
    assert rule.settled(True, 0, 0, 0.0)
    # A process sends 2 deliveries; this round's snapshots saw one landed
    assert not rule.settled(False, 2, 1, 0.0)
    # quiet and balanced now, but the previous wave had received only 1: one more round
    assert not rule.settled(True, 2, 2, 0.0)
    assert rule.settled(True, 2, 2, 0.0)


def test_a_late_landing_balances_only_with_the_wave_before():
    """What was sent before a Tick may land after a process's Tock: counts that balance in one
    non-atomic wave are not enough, the wave before must have received it all."""
    rule = _rule()
    rule.settled(True, 5, 5, 0.0)
    assert rule.settled(True, 5, 5, 0.0)
    assert not rule.settled(True, 6, 5, 0.0)  # quiet (sent just before the Tick) yet in flight
    assert not rule.settled(True, 6, 6, 0.0)  # landed: the wave before had not received it
    assert rule.settled(True, 6, 6, 0.0)


def test_work_keeps_the_step_open_even_when_counts_balance():
    rule = _rule()
    rule.settled(True, 0, 0, 0.0)
    assert not rule.settled(False, 0, 0, 0.0)  # a service call between processes, say
    assert rule.settled(True, 0, 0, 0.0)


def test_a_lost_delivery_settles_after_the_bounded_wait_and_is_counted():
    rule = _rule()
    rule.settled(True, 0, 0, 0.0)
    assert rule.settled(True, 0, 0, 0.0)
    assert not rule.settled(False, 3, 2, 1.0)  # one of 3 never arrives
    assert not rule.settled(True, 3, 2, 1.00)  # stalled 1
    assert not rule.settled(True, 3, 2, 1.01)  # 2
    assert not rule.settled(True, 3, 2, 1.02)  # 3 rounds, but not 0.05 wall s yet
    assert rule.settled(True, 3, 2, 1.06)
    assert rule.unbalanced == 1 and rule.offset == 1
    # from then on the difference is accepted: a step without traffic settles in one round
    assert rule.settled(True, 3, 2, 2.0)
    assert not rule.settled(False, 4, 3, 2.0)
    assert rule.settled(True, 4, 3, 2.0)
    assert rule.unbalanced == 1


def test_counts_that_keep_moving_are_not_stalled():
    rule = _rule()
    rule.settled(True, 0, 0, 0.0)
    rule.settled(True, 0, 0, 0.0)
    for received in range(1, 6):  # a slow trickle: never a stall, never settled unbalanced
        assert not rule.settled(True, 10, received, received * 1.0)
    assert rule.unbalanced == 0


def test_the_first_steps_imbalance_is_start_up_traffic_not_counted():
    rule = _rule()
    assert not rule.settled(True, 0, 4, 0.0)  # received what was sent before counting began
    assert not rule.settled(True, 0, 4, 0.0)
    assert not rule.settled(True, 0, 4, 0.0)
    assert rule.settled(True, 0, 4, 0.1)
    assert rule.unbalanced == 0 and rule.offset == -4
    assert rule.settled(True, 0, 4, 0.2)


def test_tock_round_totals_keep_each_participants_latest_counts():
    tock_round = TockRound(3, frozenset({"a", "b"}))
    assert tock_round.answer("a", 3, None, 0, sent=4, received=1)
    assert tock_round.answer("a", 3, None, 0, sent=3, received=2)  # repeated: counts only grow
    assert not tock_round.answer("c", 3, None, 0, sent=9, received=9)  # not registered
    assert tock_round.answer("b", 3, 10, 0, sent=1, received=4)
    assert tock_round.totals() == (5, 6)


def test_a_process_without_others_counts_nothing_and_wraps_nothing():
    """A one-process run (`CrossingCounts(enabled=False)`) leaves every publish as it is: no
    matched-subscription query per publication; a partitioned one wraps them."""
    from types import SimpleNamespace

    from acomms_sim.clock.crossing import CrossingCounts

    def node():
        publisher = SimpleNamespace(topic_name="/v1/packet", publish=lambda msg: None,
                                    get_subscription_count=lambda: 2)
        return SimpleNamespace(publishers=[publisher], subscriptions=[]), publisher

    lone, publisher = node()
    original = publisher.publish
    off = CrossingCounts(enabled=False)
    off.watch([lone], subscriptions=True)
    assert publisher.publish is original
    publisher.publish("m")
    assert (off.sent, off.received, off.work) == (0, 0, 0)
    split, publisher = node()
    on = CrossingCounts()
    on.watch([split])
    assert publisher.publish is not original
    publisher.publish("m")
    assert on.sent == 2
