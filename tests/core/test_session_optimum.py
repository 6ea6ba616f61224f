"""The optimal session bettor (pb_gym.session_optimum) against independent computations: a forward walk
of the state distribution, Dubins & Savage's bold-play formula, the gambler's-ruin closed form, and a
brute-force recursion over exact fractions; the figures of the canonical, tie and Session-v0 instances;
every validation error."""

import functools
import json
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from pb_gym import catalog, exact
from pb_gym import rules as R
from pb_gym import session_optimum as so
from pb_gym.rules import Rules
from pb_gym.session_optimum import (
    NO_BET,
    PolicyTable,
    Session,
    bold_play,
    evaluate,
    policy_values,
    solve,
    state_distribution,
    timid_play,
)

MAIN = ("banker", "player", "tie")


@functools.lru_cache(maxsize=4)
def exact_outcomes(decks: int = 8) -> dict[str, dict[Fraction, Fraction]]:
    """Each main bet's {net return per unit: probability}, exact, straight from the hand-class counts and
    the catalog's columns (not through the module under test)."""
    counts = exact.hand_class_counts(R.full_shoe(decks))
    total = int(counts.sum())
    out = {}
    for name, column in zip(MAIN, catalog.pay_matrix(list(MAIN), Rules(decks=decks)).T, strict=True):
        dist: dict[Fraction, Fraction] = {}
        for pays, count in zip(column, counts, strict=True):
            key = Fraction(float(pays)).limit_denominator(100)
            dist[key] = dist.get(key, Fraction(0)) + Fraction(int(count), total)
        out[name] = dist
    return out


def win_probability() -> float:
    """The player bet's chance per decisive hand, q = P(player) / (P(player) + P(banker))."""
    player = exact_outcomes()["player"]
    return float(player[Fraction(1)] / (player[Fraction(1)] + player[Fraction(-1)]))


def ticks(session: Session, amount) -> int:
    return int(Fraction(amount) * session.ticks_per_unit)


# --------------------------------------------------------------------------------------------------
# The exact odds it rests on
# --------------------------------------------------------------------------------------------------
def test_the_outcome_distributions_are_the_published_ones():
    session = Session(bankroll=10, goal=20, hands=1)
    banker, player, tie = so.bet_outcomes(session)
    assert session.ticks_per_unit == 20  # the banker's 19:20
    assert banker.pays == (-1, 0, Fraction(19, 20)) and player.pays == (-1, 0, 1) and tie.pays == (-1, 8)
    assert banker.total == player.total == tie.total == math.perm(416, 6)
    p_banker, p_player, p_tie = banker.probabilities[2], player.probabilities[2], tie.probabilities[1]
    assert (round(p_banker, 6), round(p_player, 6), round(p_tie, 6)) == (0.458597, 0.446247, 0.095156)
    edges = [
        -float(sum(Fraction(p) * r for p, r in zip(o.counts, o.pays, strict=True)) / o.total)
        for o in (banker, player, tie)
    ]
    assert [round(100 * e, 4) for e in edges] == [1.0579, 1.2351, 14.3596]
    for outcomes in (banker, player, tie):
        assert sum(outcomes.counts) == outcomes.total


@pytest.mark.parametrize(
    ("bets", "lattice"),
    [
        (("player",), 1),
        (("tie",), 1),
        (MAIN, 20),
        (("player", "player_total_1"), 2),
        (("banker", "player_total_1"), 20),
    ],
)
def test_the_lattice_is_the_lcm_of_the_payout_denominators(bets, lattice):
    assert Session(bankroll=10, goal=20, hands=1, bets=bets).ticks_per_unit == lattice


# --------------------------------------------------------------------------------------------------
# Values sum correctly: an independent forward walk
# --------------------------------------------------------------------------------------------------
def forward(session: Session, table: PolicyTable) -> dict[str, float]:
    """The end of the session under ``table``, walked forward over a dict of bankrolls (plain Python)."""
    outcomes = exact_outcomes(session.decks)
    lattice, goal, least = (
        session.ticks_per_unit,
        session.goal_ticks,
        session.table_min * session.ticks_per_unit,
    )
    mass = {session.bankroll_ticks: 1.0}
    for h in range(session.hands, 0, -1):
        after: dict[int, float] = {}
        for b, p in mass.items():
            k, stake = int(table.bet[h, b]), int(table.stake[h, b])
            if b >= goal or b < least or k == NO_BET:
                after[b] = after.get(b, 0.0) + p
                continue
            for pays, q in outcomes[session.bets[k]].items():
                to = min(goal, b + int(stake * lattice * pays))
                after[to] = after.get(to, 0.0) + p * float(q)
        mass = after
    ends = {"goal": 0.0, "ruin": 0.0, "unfinished": 0.0}
    for b, p in mass.items():
        ends["goal" if b >= goal else "ruin" if b < least else "unfinished"] += p
    return ends


SMALL = [
    dict(bankroll=3, goal=6, table_max=3, hands=6),
    dict(bankroll=5, goal=20, table_max=5, hands=10),
    dict(bankroll=7.5, goal=12, table_min=2, table_max=4, hands=8),
]


@pytest.mark.parametrize("kwargs", SMALL)
def test_every_ending_sums_to_one_and_the_goal_mass_is_the_value(kwargs):
    session = Session(**kwargs)
    solution = solve(session)
    policies = {
        "optimal": solution.policy,
        "bold player": bold_play(session, "player"),
        "bold banker": bold_play(session, "banker"),
        "bold tie": bold_play(session, "tie"),
        "timid": timid_play(session, "banker", session.table_min),
    }
    for name, table in policies.items():
        ends = forward(session, table)
        assert abs(sum(ends.values()) - 1) < 1e-12, name
        assert abs(ends["goal"] - evaluate(session, table)) < 1e-12, name
        distribution = state_distribution(session, table)
        assert abs(distribution.sum(axis=1) - 1).max() < 1e-12, name
        assert abs(distribution[0, -1] - ends["goal"]) < 1e-12, name
    assert abs(evaluate(session, solution.policy) - solution.p_goal) < 1e-12
    assert abs(policy_values(session, solution.policy) - solution.values).max() < 1e-12
    for table in policies.values():  # the optimum dominates every policy at every state
        assert (policy_values(session, table) <= solution.values + 1e-12).all()


# --------------------------------------------------------------------------------------------------
# Dubins & Savage: bold play's closed form; the canonical instance
# --------------------------------------------------------------------------------------------------
def bold_formula(x: Fraction, q: float) -> float:
    """Bold play's value at the fraction ``x`` of the goal for an even-money bet won with chance ``q``
    (Dubins & Savage: f(x) = q f(2x) for x < 1/2, q + (1 - q) f(2x - 1) above); dyadic ``x`` ends."""
    if x in (0, 1):
        return float(x)
    return q * bold_formula(2 * x, q) if x <= Fraction(1, 2) else q + (1 - q) * bold_formula(2 * x - 1, q)


@pytest.mark.parametrize(
    ("bankroll", "goal", "closed"),
    [
        (10, 20, lambda q: q),
        (5, 20, lambda q: q**2),
        (15, 20, lambda q: q + (1 - q) * q),
        (3, 8, lambda q: q * (q + (1 - q) * q)),  # 3/8 = .011: q f(3/4), f(3/4) = q + (1 - q) f(1/2)
        (13, 16, None),
        (1, 16, lambda q: q**4),
    ],
)
def test_bold_play_on_player_is_dubins_and_savage(bankroll, goal, closed):
    q = win_probability()
    session = Session(bankroll=bankroll, goal=goal, hands=200, bets=MAIN)
    table = bold_play(session, "player")
    unfinished = state_distribution(session, table)[0, ticks(session, 1) : -1].sum()
    assert unfinished < 1e-12  # (only ties keep a bold session going)
    value = evaluate(session, table)
    assert abs(value - bold_formula(Fraction(bankroll, goal), q)) < 1e-12
    if closed is not None:
        assert abs(value - closed(q)) < 1e-12


def test_the_canonical_instance_plays_bold_on_player():
    """10 -> 20 units, maximum 10, 100 hands: one all-in player bet is optimal. A banker win from 10
    reaches only 19.5 (the commission), and the half unit still missing costs more than the banker's
    better odds gain: the optimum is exactly bold play on player, q = P(player | decisive)."""
    session = Session(bankroll=10, goal=20, table_max=10, hands=100)
    solution = solve(session)
    q = win_probability()
    assert abs(solution.p_goal - q) < 1e-12 and round(solution.p_goal, 12) == 0.493175170055
    assert solution.action(10, 100) == ("player", 10)
    player = evaluate(session, bold_play(session, "player"))
    banker = evaluate(session, bold_play(session, "banker"))
    assert solution.p_goal >= player - 1e-15 and abs(solution.p_goal - player) < 1e-12
    assert round(banker, 6) == 0.482671  # bold on banker stakes 10 from 10 (the cap) and needs 19.5 -> 20
    # banker 10 first, then the optimum: P(banker win) V(19.5) + P(tie) V(10). From 19.5 the missing half
    # unit is won with 0.9540 (banker 1 at a time), short of the 0.9731 that would match the player bet
    v = solution.values[99]
    p = so.bet_outcomes(session)[0].probabilities  # (loss, push, win)
    banker_first = p[2] * v[ticks(session, 19.5)] + p[1] * v[ticks(session, 10)]
    assert round(solution.value(19.5, 99), 4) == 0.9540 and solution.action(19.5, 99) == ("banker", 1)
    assert round(banker_first, 6) == 0.484448 and banker_first < solution.p_goal


# --------------------------------------------------------------------------------------------------
# Timid play against the gambler's ruin
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("bankroll", "goal"), [(10, 20), (3, 7), (19, 20)])
def test_timid_play_is_the_gamblers_ruin(bankroll, goal):
    session = Session(bankroll=bankroll, goal=goal, hands=4000, bets=("player",))
    table = timid_play(session, "player", 1)
    unfinished = state_distribution(session, table)[0, 1:-1].sum()
    assert unfinished < 1e-12
    player = exact_outcomes()["player"]
    ratio = float(player[Fraction(-1)] / player[Fraction(1)])
    closed = (1 - ratio**bankroll) / (1 - ratio**goal)
    assert abs(evaluate(session, table) - closed) < 1e-12
    if (bankroll, goal) == (10, 20):
        assert round(closed, 4) == 0.4322


# --------------------------------------------------------------------------------------------------
# The tie bet enters the optimum where it should
# --------------------------------------------------------------------------------------------------
def test_the_tie_bet_is_used_where_it_pays_to_the_goal():
    """5 -> 20 units, maximum 5, 10 hands: the start bets player 5, and with 4 or fewer hands left at
    bankroll 5 the optimum stakes 2 on the tie (8:1 wins 16, to 21); at 3 units, 3 on the tie."""
    session = Session(bankroll=5, goal=20, table_max=5, hands=10)
    solution = solve(session)
    without = solve(Session(bankroll=5, goal=20, table_max=5, hands=10, bets=("banker", "player")))
    assert abs(solution.p_goal - 0.22926784433737) < 1e-12
    assert abs(without.p_goal - 0.22087390159416) < 1e-12
    assert solution.p_goal > without.p_goal + 0.008
    assert solution.action(5, 10) == ("player", 5)
    reached = state_distribution(session, solution.policy)
    for hands_left in (4, 3, 2, 1):
        assert solution.action(5, hands_left) == ("tie", 2)
        assert reached[hands_left, ticks(session, 5)] > 0
    assert solution.action(3, 3) == ("tie", 3) and reached[3, ticks(session, 3)] > 0
    summary = solution.to_json()
    assert summary["policy"]["4"][0] == {"from": 5, "to": 5, "bet": "tie", "stake": 2}
    assert summary["expected_hands"]["tie"] > 0.16


# --------------------------------------------------------------------------------------------------
# Session-v0 and the 50 -> 100 instance
# --------------------------------------------------------------------------------------------------
def test_session_v0_bold_play_reaches_39_percent_of_the_optimum():
    """Session-v0's instance, 20 -> 60 units, maximum 5, 30 hands: the optimum opens with 5 on the tie
    (8:1 takes 20 to 60 at once), then mostly player bets, and ties again as the hands run out."""
    session = Session(bankroll=20, goal=60, table_max=5, hands=30)
    solution = solve(session)
    bold = evaluate(session, bold_play(session, "player"))
    assert abs(solution.p_goal - 0.282916417064592) < 1e-12
    assert abs(bold - 0.111587908386914) < 1e-12
    assert round(bold / solution.p_goal, 2) == 0.39
    assert abs(forward(session, bold_play(session, "player"))["goal"] - bold) < 1e-12
    assert solution.action(20, 30) == ("tie", 5)  # 20 + 8 x 5 = 60: one tie wins the session
    assert solution.action(15, 29) == ("player", 5)
    used = solution.to_json()["expected_hands"]
    assert used["tie"] > 3 and used["player"] > 6 and used["banker"] < 0.01


def test_the_50_to_100_instance():
    session = Session(bankroll=50, goal=100, table_max=10, hands=20)
    solution = solve(session)
    bold = evaluate(session, bold_play(session, "player"))
    assert abs(solution.p_goal - 0.443445351949888) < 1e-12
    assert abs(bold - 0.228380922555073) < 1e-12
    assert round(bold / solution.p_goal, 3) == 0.515
    assert solution.action(50, 20) == ("player", 10)


# --------------------------------------------------------------------------------------------------
# A brute-force oracle
# --------------------------------------------------------------------------------------------------
def oracle(session: Session, exact_arithmetic: bool):
    """V(b, h) by plain recursion over every action (no bet; each bet at each legal stake), memoised."""
    outcomes = {
        name: [
            (int(pays * session.ticks_per_unit), q if exact_arithmetic else float(q))
            for pays, q in dist.items()
        ]
        for name, dist in exact_outcomes(session.decks).items()
        if name in session.bets
    }
    lattice, goal = session.ticks_per_unit, session.goal_ticks
    top = session.table_max or goal

    @functools.cache
    def value(b: int, h: int):
        if b >= goal:
            return 1
        if h == 0:
            return 0
        best = value(b, h - 1)
        for stake in range(session.table_min, min(top, b // lattice) + 1):
            for moves in outcomes.values():
                best = max(best, sum(q * value(min(goal, b + stake * shift), h - 1) for shift, q in moves))
        return best

    return value


def test_the_optimum_equals_a_brute_force_recursion_over_exact_fractions():
    session = Session(bankroll=3, goal=6, table_max=3, hands=6)
    solution = solve(session)
    value = oracle(session, exact_arithmetic=True)
    for h in range(session.hands + 1):
        for b in range(session.goal_ticks + 1):
            assert abs(float(value(b, h)) - solution.values[h, b]) < 1e-12, (b, h)
    assert abs(float(value(session.bankroll_ticks, session.hands)) - 0.49317480394056) < 1e-12


@pytest.mark.parametrize(
    "kwargs",
    [dict(bankroll=5, goal=20, table_max=5, hands=10), dict(bankroll=4.5, goal=9, table_min=2, hands=7)],
)
def test_the_optimum_equals_a_brute_force_recursion_in_floats(kwargs):
    session = Session(**kwargs)
    solution = solve(session)
    value = oracle(session, exact_arithmetic=False)
    for h in range(session.hands + 1):
        for b in range(session.goal_ticks + 1):
            assert abs(value(b, h) - solution.values[h, b]) < 1e-12, (b, h)


# --------------------------------------------------------------------------------------------------
# Ties, chunks, policies as functions, the JSON summary
# --------------------------------------------------------------------------------------------------
def test_the_tie_break_sits_out_only_where_the_goal_is_out_of_reach():
    session = Session(bankroll=20, goal=60, table_max=5, hands=30)
    solution = solve(session)
    sitting = (solution.bet[1:, :-1] == NO_BET) & (np.arange(session.goal_ticks) >= session.ticks_per_unit)
    assert (solution.values[1:, :-1][sitting] == 0).all()
    assert solution.action(19, 1) is None and solution.value(19, 1) == 0  # a tie reaches 59 only
    assert solution.action(20, 1) == ("tie", 5)
    # with hands to spare every bet ranks before sitting out: the start is a bet, not a wait
    assert solve(Session(bankroll=10, goal=20, hands=300)).action(10, 300) == ("player", 10)


def test_stakes_taken_in_chunks_give_the_same_solution(monkeypatch):
    session = Session(bankroll=20, goal=60, table_max=5, hands=12)
    whole = solve(session)
    monkeypatch.setattr(so, "CHUNK_CELLS", 1)  # one stake at a time, two passes
    chunked = solve(session)
    assert (whole.bet == chunked.bet).all() and (whole.stake == chunked.stake).all()
    assert (whole.values == chunked.values).all()


def test_a_policy_function_is_valued_like_its_table():
    session = Session(bankroll=7, goal=16, table_max=6, hands=12)

    def bold(bankroll: Fraction, hands_left: int):
        return ("player", min(math.ceil(16 - bankroll), math.floor(bankroll), 6))

    assert abs(evaluate(session, bold) - evaluate(session, bold_play(session, "player"))) < 1e-15
    banker = bold_play(session, "banker")
    assert banker.stake[1, ticks(session, 6)] == 6  # ceil(10 / 0.95) = 11, capped by the bankroll
    assert banker.stake[1, ticks(session, 15)] == 2  # ceil(1 / 0.95) = 2: a win of 1.9 reaches 16
    assert banker.stake[1, ticks(session, 15.05)] == 1  # 0.95 reaches 16


def test_the_json_summary():
    session = Session(bankroll=10, goal=20, table_max=10, hands=100)
    solution = solve(session)
    summary = json.loads(json.dumps(solution.to_json(), allow_nan=False))
    assert summary["p_goal"] == solution.p_goal and summary["ticks_per_unit"] == 20
    assert summary["start"] == {"bet": "player", "stake": 10}
    assert summary["session"] == {
        "hands": 100,
        "table_min": 1,
        "table_max": 10,
        "decks": 8,
        "bankroll": 10,
        "goal": 20,
        "bets": list(MAIN),
    }
    assert summary["policy"]["100"] == [{"from": 10, "to": 10, "bet": "player", "stake": 10}]
    assert set(summary["policy"]) == {str(h) for h in range(1, 101)}
    every = solution.to_json(states="all")["policy"]["1"]
    assert every[0]["from"] == 1 and every[-1]["to"] == 19.95
    assert all(
        Fraction(str(a["to"])) + Fraction(1, 20) == Fraction(str(b["from"]))
        for a, b in zip(every[:-1], every[1:], strict=True)
    )


def test_decks_and_rules_change_the_odds():
    six = Session(bankroll=3, goal=6, hands=4, decks=6)
    assert so.bet_outcomes(six)[0].total == math.perm(312, 6)
    nine = Session(bankroll=3, goal=6, hands=4, rules=Rules(tie_pays=9))
    assert so.bet_outcomes(nine)[2].pays == (-1, 9)
    assert solve(nine).p_goal >= solve(Session(bankroll=3, goal=6, hands=4)).p_goal


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------
BASE = dict(bankroll=10, goal=20, hands=5)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(goal=10), r"goal must be above the bankroll \(10\) \(got 10\)"),
        (dict(goal=5), r"goal must be above the bankroll"),
        (dict(bankroll=0.5), r"bankroll must be >= table_min \(1\) \(got 0.5\)"),
        (
            dict(bankroll=10.01),
            r"bankroll must be on the lattice of 1/20 unit \(the payouts of banker, player, tie\)",
        ),
        (dict(bankroll=10.5, bets=("player",)), r"bankroll must be on the lattice of 1/1 unit"),
        (dict(goal=20.125), r"goal must be on the lattice"),
        (dict(bankroll="10"), r"bankroll must be a number of units"),
        (dict(goal=float("nan")), r"goal must be a number of units"),
        (dict(bankroll=True), r"bankroll must be a number of units"),
        (dict(bankroll=2, table_min=3, table_max=5), r"bankroll must be >= table_min \(3\)"),
        (dict(hands=0), r"hands must be an integer >= 1 \(got 0\)"),
        (dict(hands=2.0), r"hands must be an integer"),
        (dict(table_min=0), r"table_min must be a whole number of units >= 1"),
        (dict(table_max=0), r"table_max must be None \(no maximum\) or whole units >= table_min \(got 0\)"),
        (dict(table_max=2.5), r"table_max must be None"),
        (dict(bets=("x",)), r"bets: unknown bet 'x'; the catalog's bets are: banker, player, tie, "),
        (dict(bets=()), r"bets must be a non-empty list"),
        (dict(bets=("player", "player")), r"bets must name each bet once"),
        (dict(decks=9), r"decks must be an integer from 1 to 8 \(got 9\)"),
        (dict(rules=Rules(decks=6)), r"rules.decks must equal decks \(8\) \(got 6\)"),
        (dict(rules="standard"), r"rules must be a pb_gym.Rules or None"),
        (dict(rules=Rules(commission=0.0333)), r"bets: 'banker' pays 0.9667 per unit, not a rational"),
        (dict(goal=10**6, hands=1000), r"hands must be fewer or goal smaller"),
    ],
)
def test_every_field_is_validated(changes, message):
    with pytest.raises(ValueError, match=message):
        Session(**{**BASE, **changes})


def test_amounts_on_the_lattice_are_taken_in_any_exact_form():
    for amount in (10.5, Decimal("10.5"), Fraction(21, 2), np.float64(10.5)):
        assert Session(bankroll=amount, goal=20, hands=1).bankroll_ticks == 210
    assert Session(bankroll=10, goal=20, hands=1, bets=["tie", "player"]).bets == ("player", "tie")


@pytest.mark.parametrize(
    ("bankroll", "action", "message"),
    [
        (3, ("player", 4), r"at bankroll 3 with 5 hand\(s\) left, the stake is above the bankroll"),
        (
            10,
            ("player", 7),
            r"at bankroll 10 with 5 hand\(s\) left, the stake is above the table maximum \(6\)",
        ),
        (10, ("player", 1), r"the stake is below the table minimum \(2\)"),
        (10, ("player", 2.5), r"the stake must be a whole number of units \(got 2.5\)"),
        (10, ("dragon7", 2), r"bet 'dragon7' is not offered \(banker, player, tie\)"),
        (10, "player", r"an action must be \(bet, stake\) or None"),
    ],
)
def test_illegal_policy_actions_are_refused(bankroll, action, message):
    session = Session(bankroll=10, goal=20, hands=5, table_min=2, table_max=6)
    with pytest.raises(ValueError, match=message):
        evaluate(session, lambda b, hands_left: action if (b, hands_left) == (bankroll, 5) else None)
    assert evaluate(session, lambda b, hands_left: ("player", 2.0) if b >= 2 else None) > 0  # (a whole float)


def test_illegal_policy_tables_are_refused():
    session = Session(bankroll=10, goal=20, hands=5, table_max=6)
    good = bold_play(session, "player")
    assert evaluate(session, PolicyTable(bet=good.bet, stake=good.stake.astype(float).astype(np.int32))) > 0
    with pytest.raises(ValueError, match=r"policy.stake must be integers, shape \(6, 401\)"):
        evaluate(session, PolicyTable(bet=good.bet, stake=good.stake[:, :-1]))
    bet = good.bet.copy()
    bet[3, 200] = 3
    with pytest.raises(ValueError, match=r"at bankroll 10 with 3 hand\(s\) left, the bet must be -1 or 0..2"):
        evaluate(session, PolicyTable(bet=bet, stake=good.stake))
    for policy, message in ((bold_play, "bet must be one of the session's bets"), (timid_play, "bet must")):
        with pytest.raises(ValueError, match=message):
            policy(session, "dragon7")
    with pytest.raises(ValueError, match=r"stake must be whole units from table_min to table_max \(6\)"):
        timid_play(session, "player", 7)
    solution = solve(session)
    with pytest.raises(ValueError, match=r"hands_left must be an integer, 0 to 5 \(got 6\)"):
        solution.action(10, 6)
    with pytest.raises(ValueError, match=r"bankroll must be >= 0, on the lattice of 1/20 unit"):
        solution.value(10.01, 2)
    with pytest.raises(ValueError, match=r"states must be 'reachable' or 'all'"):
        solution.to_json(states="some")
