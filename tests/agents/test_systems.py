"""Betting systems: stake sequences on hand-written outcome sequences (pushes, caps included)."""

import numpy as np
import pytest

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.agents import systems
from pb_gym.rules import Rules

RULES = Rules()
PAYS = {"banker": 0.95, "player": 1.0, "tie": 8.0}


def stakes_for(system, results, max_units=1000.0, bankroll_units=1e9):
    """Play one table through results 'W', 'L', 'P' (push); return the stakes proposed before each
    hand, the stake proposed after the last one, and where the table maximum bound."""
    system.reset(1)
    proposed, capped = [], []
    minus_one = np.array([-1], dtype=np.int8)
    for result in results + " ":
        view = systems.TableView(np.array([bankroll_units]), max_units, RULES, None, minus_one, minus_one)
        proposal = system.propose(view)
        units = proposal.units
        proposed.append(round(float(units[0]), 4))
        capped.append(bool(proposal.capped[0]))
        if result == " ":
            break
        code = {"W": systems.WIN, "L": systems.LOSS, "P": systems.PUSH}[result]
        pays = PAYS[R.BETS[proposal.column[0]]]
        net = units * {systems.WIN: pays, systems.LOSS: -1.0, systems.PUSH: 0.0}[code]
        system.update(
            view,
            systems.HandOutcome(
                np.array([True]), np.array([code], dtype=np.int8), units, net, proposal.capped
            ),
        )
    return proposed[:-1], proposed[-1], capped[:-1]


@pytest.mark.parametrize(
    "system, results, expected, after",
    [
        (systems.Flat(), "WLPLW", [1, 1, 1, 1, 1], 1),
        (systems.Martingale(), "LLLWLPW", [1, 2, 4, 8, 1, 2, 2], 1),
        (systems.Martingale(bet="player"), "LPLLW", [1, 2, 2, 4, 8], 1),
        (systems.Martingale(recovering=True), "LLW", [1, 2.1053, 4.3213], 1),
        (systems.GrandMartingale(), "LLPW", [1, 3, 7, 7], 1),
        (systems.Paroli(wins_to_reset=3), "WWWWL", [1, 2, 4, 1, 2], 1),
        (systems.Paroli(wins_to_reset=2), "WPWW", [1, 2, 2, 1], 2),
        (systems.ReverseMartingale(), "WWWL", [1, 2, 4, 8], 1),
        (systems.DAlembert(), "LLWWWL", [1, 2, 3, 2, 1, 1], 2),
        (systems.DAlembert(base=2), "LPW", [2, 4, 4], 2),
        (systems.Fibonacci(), "LLLLWLWW", [1, 1, 2, 3, 5, 2, 3, 1], 1),
        (systems.Labouchere(bet="player"), "LWWW", [5, 6, 6, 3], 5),
        (systems.Labouchere(bet="player", line=[2]), "LPLW", [2, 4, 4, 6], 2),
        (systems.OneThreeTwoSix(), "WWWWWL", [1, 3, 2, 6, 1, 3], 1),
        (systems.OneThreeTwoSix(), "WWPL", [1, 3, 2, 2], 1),
        (systems.OscarsGrind(bet="player"), "LLWWW", [1, 1, 1, 2, 1], 1),
        (systems.OscarsGrind(bet="player"), "LLLWW", [1, 1, 1, 1, 2], 1),  # raise capped at what finishes +1
        (systems.OscarsGrind(), "WW", [1, 1], 1),  # banker: +0.95 is short of +1, never below one unit
    ],
)
def test_stake_sequences(system, results, expected, after):
    proposed, next_stake, _ = stakes_for(system, results)
    assert proposed == pytest.approx(expected, abs=1e-4)
    assert next_stake == pytest.approx(after, abs=1e-4)


def test_banker_martingale_win_after_losses_does_not_recover_them():
    """Plain doubling on banker: after k losses a win nets +0.95, +0.90, +0.80, +0.60, +0.20."""
    for k, expected in enumerate([0.95, 0.90, 0.80, 0.60, 0.20]):
        stakes, _, _ = stakes_for(systems.Martingale(), "L" * k + "W")
        assert sum(-s for s in stakes[:-1]) + 0.95 * stakes[-1] == pytest.approx(expected)
    stakes, _, _ = stakes_for(systems.Martingale(recovering=True), "LLLLW")
    assert sum(-s for s in stakes[:-1]) + 0.95 * stakes[-1] == pytest.approx(1.0, abs=1e-3)


def test_martingale_at_the_table_maximum_cap_or_reset():
    proposed, after, capped = stakes_for(systems.Martingale(on_cap="cap"), "LLLLW", max_units=5)
    assert proposed == [1, 2, 4, 5, 5] and capped == [False, False, False, True, True] and after == 1
    proposed, after, capped = stakes_for(systems.Martingale(on_cap="reset"), "LLLLL", max_units=5)
    assert proposed == [1, 2, 4, 1, 2] and capped == [False, False, False, True, False]
    assert after == 4
    proposed, _, _ = stakes_for(systems.Labouchere(bet="player", on_cap="reset"), "LL", max_units=6)
    assert proposed == [5, 6]
    proposed, after, capped = stakes_for(systems.Labouchere(bet="player", on_cap="reset"), "LLL", max_units=6)
    # the line 1,2,3,4,5,6 asks 7 > 6: a new line 1,2,3,4 starts (stake 5); its loss makes it ask 6
    assert proposed == [5, 6, 5] and capped == [False, False, True] and after == 6


def test_labouchere_line_grows_past_its_buffer():
    system = systems.Labouchere(bet="player", line=[1])
    proposed, after, _ = stakes_for(system, "L" * 100)
    assert after == pytest.approx(1 + proposed[-1])  # first (1) + last (the stake just lost)
    state = system.programs.state
    assert state.tail[0, 0] - state.counter[0, 0] == 101
    assert state.lines.shape[2] == 128  # the 64 numbers of the first buffer, doubled once


def test_systems_are_vectorized_over_tables():
    system = systems.Martingale()
    system.reset(3)
    minus_one = np.full(3, -1, dtype=np.int8)
    view = systems.TableView(np.full(3, 1e9), 1000.0, RULES, None, minus_one, minus_one)
    units = system.propose(view).units
    result = np.array([systems.WIN, systems.LOSS, systems.PUSH], dtype=np.int8)
    system.update(
        view,
        systems.HandOutcome(
            np.array([True, True, False]),
            result,
            units,
            units * np.array([0.95, -1.0, 0.0]),
            np.zeros(3, bool),
        ),
    )
    assert list(system.propose(view).units) == [1, 2, 1]


def test_pattern_bettors_follow_and_chop():
    for cls, expected in ((systems.FollowTheWinner, [0, 0, 1, 0]), (systems.Chop, [0, 1, 0, 0])):
        system = cls()
        system.reset(4)
        last = np.array([-1, R.BANKER, R.PLAYER, -1], dtype=np.int8)
        view = systems.TableView(np.full(4, 100.0), 1000.0, RULES, None, last, last)
        spot, units, _ = system.propose(view)
        expected_spots = [systems.BANKER_SPOT if e == 0 else systems.PLAYER_SPOT for e in expected]
        if cls is systems.Chop:  # chop bets against the last decision; banker before the first
            expected_spots = [
                systems.BANKER_SPOT,
                systems.PLAYER_SPOT,
                systems.BANKER_SPOT,
                systems.BANKER_SPOT,
            ]
        assert list(spot) == expected_spots and list(units) == [1, 1, 1, 1]


def test_random_bettor_draws_its_bets():
    system = systems.RandomBettor(bets=["banker", "tie"], p_bet=0.5)
    system.reset(20000, np.random.default_rng(1))
    minus_one = np.full(20000, -1, dtype=np.int8)
    spot = system.propose(
        systems.TableView(np.full(20000, 100.0), 1000.0, RULES, None, minus_one, minus_one)
    ).column
    share = np.bincount(spot + 1, minlength=9) / 20000  # -1 (no bet) -> 0
    # 4-sigma bounds for p=0.5 and p=0.25 over 20,000 draws
    assert abs(share[0] - 0.5) < 4 * np.sqrt(0.25 / 20000)
    assert abs(share[1 + systems.BANKER_SPOT] - 0.25) < 4 * np.sqrt(0.1875 / 20000)
    assert abs(share[1 + R.BETS.index("tie")] - 0.25) < 4 * np.sqrt(0.1875 / 20000)


def test_random_bettor_drawing_hands_ahead_gives_the_bets_of_a_draw_a_hand():
    """A bettor betting every hand draws S.DRAW_AHEAD hands of bets at once: over 70 hands (two
    refills and a part) its bets are those of one draw a hand from the same seed, and a reset starts
    from the new stream, not from bets drawn before it."""
    columns = np.array([systems.BANKER_SPOT, systems.PLAYER_SPOT, R.BETS.index("tie")])
    system = systems.RandomBettor(bets=["banker", "player", "tie"])
    for seed in (3, 4):
        system.reset(501, np.random.default_rng(seed))
        reference = np.random.default_rng(seed)
        for _ in range(70):
            np.testing.assert_array_equal(system.draw(), columns[reference.integers(0, 3, 501)])


def test_kelly_growth_matches_the_closed_form_with_pushes():
    p = np.array([[0.5, 0.3], [0.4, 0.5], [0.46, 0.45]])
    f, growth = systems.kelly_growth(p, np.array([0.95, -1.0]))
    closed = np.maximum(0, (0.95 * p[:, 0] - p[:, 1]) / (0.95 * p.sum(axis=1)))
    np.testing.assert_allclose(f, closed, atol=1e-12)
    assert growth[0] > 0 and growth[1] == 0 and f[2] == closed[2]


def test_kelly_bets_only_when_the_shoe_makes_a_bet_positive():
    kelly = systems.Kelly(bets=["banker", "player", "tie", "panda8"], fraction=0.5)
    kelly.reset(2)
    tens_only = np.array([0] * 9 + [10, 10, 10, 10])  # every hand is a 0-0 tie: tie EV = +8
    composition = np.stack([R.full_shoe(8), tens_only])
    minus_one = np.full(2, -1, dtype=np.int8)
    view = systems.TableView(np.array([100.0, 100.0]), 30.0, RULES, composition, minus_one, minus_one)
    spot, units, capped = kelly.propose(view)
    assert spot[0] == systems.NO_BET  # nothing is positive off the top of an 8-deck shoe
    assert spot[1] == R.BETS.index("tie")
    assert (
        units[1] == 30.0 and capped[1] and not capped[0]
    )  # half Kelly of ~all the bankroll, cut to the maximum
    assert exact.expected_values(tens_only)[R.BETS.index("tie")] == pytest.approx(8.0)


@pytest.mark.parametrize(
    "decks, bets", [(8, ["banker"]), (1, ["banker", "player", "tie", "dragon7", "panda8", "player_pair"])]
)
def test_kelly_skipping_proven_negative_hands_changes_no_decision(decks, bets):
    """The bound of pb_gym.ev_bound only skips hands where no bet can be positive: on every composition
    of real shoes, the spot and the fraction are the same, bit for bit, as with the exact EV
    everywhere (the 1-deck shoes make bets positive often, so both branches are exercised)."""
    from pb_gym import engine

    rules = Rules(decks=decks)
    state = engine.init(rules, 300, seed=11)
    out = engine.HandResult.empty(300)
    comps = []
    for _ in range(90 if decks == 8 else 15):  # every depth of the shoe
        comps.append(engine.next_hand_composition(rules, state))
        engine.deal(rules, state, out)
    comps = np.concatenate(comps)
    fast_spot, fast_f = systems.Kelly(bets=bets).stake_fractions(comps, rules)
    exact_spot, exact_f = systems.Kelly(bets=bets, skip_proven=False).stake_fractions(comps, rules)
    np.testing.assert_array_equal(fast_spot, exact_spot)
    np.testing.assert_array_equal(fast_f, exact_f)
    assert (exact_spot != systems.NO_BET).sum() >= (20 if decks == 1 else 1)


@pytest.mark.parametrize(
    "rules, bet",
    [
        (Rules(decks=1), "banker"),
        (Rules(decks=1), "player"),
        (Rules(decks=2, tie_pays=9), "tie"),
        (Rules(decks=1, banker_variant="ez"), "banker"),
        (Rules(decks=4), "banker"),
    ],
)
def test_a_kelly_bettor_on_one_bet_prices_in_one_compiled_pass_with_the_same_bits(rules, bet):
    """A bettor on one bet prices every table in one compiled pass (agents.kelly_rows): on real shoes
    at every depth, the spot and the fraction are those of the numpy steps with the exact EV
    everywhere, bit for bit, on one thread and on several (batches of 2,048 tables and more)."""
    from pb_gym import engine, parallel

    state = engine.init(rules, 700, seed=5)
    out = engine.HandResult.empty(700)
    comps = []
    for _ in range(rules.decks * 11):  # every depth of the shoe
        comps.append(engine.next_hand_composition(rules, state))
        engine.deal(rules, state, out)
    comps = np.concatenate(comps)
    kelly = systems.Kelly(bets=[bet])
    assert kelly._pricing(rules)[3] is not None  # (the compiled pass)
    exact_spot, exact_f = systems.Kelly(bets=[bet], skip_proven=False).stake_fractions(comps, rules)
    assert (exact_spot != systems.NO_BET).sum() >= 5  # the bet is positive somewhere: decisions compared
    before = parallel.get_num_threads()
    try:
        for count in sorted({1, min(2, parallel.max_threads())}):
            parallel.set_num_threads(count)
            spot, f = kelly.stake_fractions(comps, rules)
            np.testing.assert_array_equal(spot, exact_spot)
            np.testing.assert_array_equal(f, exact_f)
    finally:
        parallel.set_num_threads(before)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bet": ""}, r"bet='' is not allowed; allowed: a bet name offered at the table"),
        ({"base": 0}, r"base=0 is not allowed; allowed: a stake > 0 units"),
        ({"on_cap": "double"}, r"on_cap='double' is not allowed; allowed: cap, reset"),
    ],
)
def test_bad_system_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        systems.Martingale(**kwargs)
    with pytest.raises(ValueError, match=r"line=\[\] is not allowed"):
        systems.Labouchere(line=[])
    with pytest.raises(ValueError, match=r"fraction=2 is not allowed"):
        systems.Kelly(fraction=2)
