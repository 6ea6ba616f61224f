"""The betting systems' exact chains (pb_gym/experiments/evaluate/exact_chain.py) against closed forms, a hand
enumeration and the simulator."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.agents import staking
from pb_gym.experiments.evaluate import exact_chain, run_study, shoe_effect
from pb_gym.experiments.evaluate.settings import StudyConfig
from pb_gym.experiments.ruin import model as ruin_model


def study(systems, **overrides) -> StudyConfig:
    data = {
        "name": "exact",
        "rules": {"decks": 8},
        "table": {"unit": 1, "minimum": 1, "maximum": 1000},
        "bankroll": 5,
        "sessions": 1,
        "hands": 1,
        "seed": 1,
        "systems": systems,
    }
    data.update(overrides)
    return StudyConfig.model_validate(data)


def full_shoe_odds():
    p = exact.odds(R.full_shoe(8))["probabilities"]
    return p["banker"], p["player"], p["tie"]


def test_flat_player_is_the_gamblers_ruin_closed_form():
    config = study([{"type": "flat", "bet": "player"}], win_goal=5, hands=3000)
    result = exact_chain.exact_system(config.systems[0], config)
    banker, player, _ = full_shoe_odds()
    closed = ruin_model.closed_form(player, banker, np.array([5]), 10)
    assert result["p_hand_limit"] < 1e-12
    assert result["p_target"] == pytest.approx(float(closed["p_win"][0]), abs=1e-11)
    assert result["expected_hands"] == pytest.approx(float(closed["hands"][0]), abs=1e-8)
    assert result["probability_error"] < 1e-12


def test_flat_banker_matches_the_ruin_chain_on_the_twentieths_lattice():
    config = study([{"type": "flat", "bet": "banker"}], win_goal=5, hands=4000)
    result = exact_chain.exact_system(config.systems[0], config)
    chain = ruin_model.markov_chain(ruin_model.step_distribution("banker", config.rules.to_rules()), 10)
    at = list(chain["starts"]).index(5)
    assert result["p_hand_limit"] < 1e-12
    assert result["p_target"] == pytest.approx(float(chain["p_win"][at]), abs=1e-10)
    assert result["expected_hands"] == pytest.approx(float(chain["hands"][at]), abs=1e-7)
    # every final bankroll is on the 0.05-unit lattice of the banker's 19:20
    values = np.array(result["final_bankroll"]["values"])
    assert np.allclose(values * 20, np.round(values * 20), atol=1e-6)


@pytest.mark.parametrize("on_cap", ["cap", "reset"])
def test_martingale_with_a_table_maximum_is_the_hand_enumeration(on_cap):
    # banker, base 1, table 1..2, bankroll 10, three hands: the third stake after two losses is 4,
    # cut to 2 (cap) or a new series at 1 (reset); enumerated by hand over the 27 outcome paths
    config = study(
        [{"type": "martingale", "bet": "banker", "on_cap": on_cap}],
        table={"unit": 1, "minimum": 1, "maximum": 2},
        bankroll=10,
        hands=3,
    )
    result = exact_chain.exact_system(config.systems[0], config)
    banker, player, tie = full_shoe_odds()
    finals: dict[float, float] = {}
    for path in itertools.product("BPT", repeat=3):
        bankroll, wanted, p = 10.0, 1.0, 1.0
        for winner in path:
            p *= {"B": banker, "P": player, "T": tie}[winner]
            if wanted > 2:
                stake = 2.0 if on_cap == "cap" else 1.0
                wanted = wanted if on_cap == "cap" else 1.0
            else:
                stake = wanted
            if winner == "B":
                bankroll += 0.95 * stake
                wanted = 1.0
            elif winner == "P":
                bankroll -= stake
                wanted *= 2
        finals[round(bankroll, 9)] = finals.get(round(bankroll, 9), 0.0) + p
    values = sorted(finals)
    assert result["final_bankroll"]["values"] == pytest.approx(values, abs=1e-9)
    assert result["final_bankroll"]["probabilities"] == pytest.approx([finals[v] for v in values], abs=1e-15)
    assert result["p_hand_limit"] == pytest.approx(1.0, abs=1e-15)
    assert result["expected_hands"] == pytest.approx(3.0, abs=1e-12)


SMALL_SYSTEMS = [
    {"type": "flat", "bet": "banker"},
    {"type": "martingale", "bet": "banker"},
    {"type": "martingale", "bet": "banker", "on_cap": "reset", "name": "m reset"},
    {"type": "martingale", "bet": "banker", "recovering": True, "name": "m recovering"},
    {"type": "grand_martingale", "bet": "player"},
    {"type": "grand_martingale", "bet": "banker", "on_cap": "reset", "recovering": True, "name": "gm reset"},
    {"type": "reverse_martingale", "bet": "banker"},
    {"type": "paroli", "bet": "banker"},
    {"type": "dalembert", "bet": "banker"},
    {"type": "fibonacci", "bet": "banker"},
    {"type": "one_three_two_six", "bet": "banker"},
    {"type": "oscars_grind", "bet": "player"},
    {"type": "labouchere", "bet": "banker"},
    {"type": "follow_winner"},
    {"type": "chop"},
    {"type": "random"},
    {"type": "random", "bets": ["banker", "player", "tie"], "p_bet": 0.5, "name": "random half"},
]


def test_every_finite_system_sums_to_one_and_the_others_say_why():
    config = study(
        SMALL_SYSTEMS + [{"type": "kelly"}],
        table={"unit": 10, "minimum": 10, "maximum": 40},
        bankroll=100,
        win_goal=50,
        stop_loss=60,
        hands=40,
    )
    results = {
        system["name"] if "name" in system else system["type"]: result
        for system, result in zip(
            SMALL_SYSTEMS + [{"type": "kelly"}],
            exact_chain.exact_study(config),
            strict=True,
        )
    }
    for name in ("kelly",):
        assert set(results[name]) == {"reason"} and results[name]["reason"]
    # on banker, Oscar's Grind's series-finishing stakes (1 - profit) / 0.95 refine the lattice
    config_banker = study(
        [{"type": "oscars_grind", "bet": "banker"}],
        table={"unit": 10, "minimum": 10, "maximum": 40},
        bankroll=100,
        win_goal=50,
        stop_loss=60,
        hands=40,
    )
    reason = exact_chain.exact_study(config_banker)[0]["reason"]
    assert "not whole multiples of the base" in reason
    for system in SMALL_SYSTEMS:
        result = results[system.get("name", system["type"])]
        assert result["probability_error"] < 1e-12
        total = result["p_target"] + result["p_ruin"] + result["p_stop_loss"] + result["p_hand_limit"]
        assert total == pytest.approx(1.0, abs=1e-12)
        assert sum(result["final_bankroll"]["probabilities"]) == pytest.approx(1.0, abs=1e-12)
        assert 0.0 <= result["expected_hands"] <= 40.0


def test_the_simulator_agrees_with_the_chain_at_999_confidence():
    # real shoes are not independent hands, but over 40 hands of a fresh 8-deck shoe the shoe effect
    # is far below the simulation's error: |simulated - exact| < 3.29 binomial SE (99.9%) for every
    # end of every system (a failure has a 0.1% chance per comparison if the two models agree)
    sessions = 4000
    config = study(
        SMALL_SYSTEMS,
        table={"unit": 10, "minimum": 10, "maximum": 40},
        bankroll=100,
        win_goal=50,
        stop_loss=60,
        hands=40,
        sessions=sessions,
        seed=11,
        exact=True,
    )
    report = run_study(config, final_bankrolls=False)
    for entry in report["systems"]:
        for name, row in entry["exact"]["versus_simulated"].items():
            q = row["exact"]
            se = math.sqrt(max(q * (1 - q), 1e-12) / sessions)
            assert abs(row["difference"]) < 3.29 * se + 1e-12, (entry["name"], name, row)


def test_the_teaching_figure_is_written_from_the_exact_figures(tmp_path):
    from pb_gym.experiments.evaluate import report as evaluate_report

    config = study(
        [{"type": "flat", "bet": "banker"}, {"type": "martingale", "bet": "banker"}, {"type": "random"}],
        table={"unit": 10, "minimum": 10, "maximum": 40},
        bankroll=100,
        win_goal=50,
        stop_loss=60,
        hands=20,
        sessions=50,
        exact=True,
    )
    report = run_study(config, final_bankrolls=False)
    written = evaluate_report.write_outputs(report, tmp_path)
    figure = tmp_path / evaluate_report.EXACT_OUTPUT_NAMES[0]
    assert figure in written
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert figure.stat().st_size > 20_000  # a drawn scatter, not the small "not drawn" placeholder
    # a study whose systems have no finite chain draws no such figure
    for entry in report["systems"]:
        entry["exact"] = {"reason": "not finite"}
    with pytest.raises(ValueError, match="no system of this study has a finite exact chain"):
        exact_chain.plot_goal_against_final(report, tmp_path / "none.png")
    assert figure.name not in [p.name for p in evaluate_report.write_outputs(report, tmp_path / "again")]


def _enumerate(rule, bankroll: float, goal: float, hands: int) -> dict[float, float]:
    """Every path of ``hands`` banker/player/tie results at the full shoe's odds, played by ``rule``
    (``rule(wanted, result) -> next wanted``) with the stake rules written out here: the wanted stake
    cut to the bankroll (all-in), a banker win paying 0.95, a tie pushing, ruin below 1 unit and the
    goal at ``goal`` ending the session. Returns the final bankroll's distribution."""
    odds = dict(zip("BPT", full_shoe_odds(), strict=True))
    finals: dict[float, float] = {}

    def play(b: float, wanted: float, p: float, left: int) -> None:
        if left == 0 or b < 1.0 or b >= goal:  # the hand limit, ruin or the goal
            finals[round(b, 12)] = finals.get(round(b, 12), 0.0) + p
            return
        stake = min(wanted, b)
        for result, q in odds.items():
            won = {"B": 0.95 * stake, "P": -stake, "T": 0.0}[result]
            play(b + won, rule(wanted, result), p * q, left - 1)

    play(bankroll, 1.0, 1.0, hands)
    return finals


RULES = {
    "martingale": lambda w, r: {"B": 1.0, "P": 2.0 * w, "T": w}[r],
    "dalembert": lambda w, r: {"B": max(w - 1.0, 1.0), "P": w + 1.0, "T": w}[r],
}


@pytest.mark.parametrize("kind", sorted(RULES))
def test_all_in_stakes_match_a_brute_force_enumeration(kind):
    # bankroll 5 units and up to 7 hands: a run of losses stakes the whole bankroll (all-in), whose
    # banker win (x 1.95) leaves the 0.05-unit lattice; the chain's final distribution equals an
    # enumeration of the 3^7 paths, value by value, to 1e-12
    config = study([{"type": kind, "bet": "banker"}], bankroll=5, win_goal=5, hands=7)
    result = exact_chain.exact_system(config.systems[0], config)
    finals = _enumerate(RULES[kind], 5.0, 10.0, 7)
    values = sorted(finals)
    assert any(abs(v * 20 - round(v * 20)) > 1e-6 for v in values)  # an all-in win off the lattice
    assert result["final_bankroll"]["values"] == pytest.approx(values, abs=1e-9)
    assert result["final_bankroll"]["probabilities"] == pytest.approx([finals[v] for v in values], abs=1e-12)
    assert sum(result["final_bankroll"]["probabilities"]) == pytest.approx(1.0, abs=1e-12)
    assert result["pruned_mass"] == 0.0
    assert result["probability_error"] < 1e-12


def test_labouchere_is_the_hand_enumeration_of_its_line():
    # line 1, 2 on banker, bankroll 100 units, five hands (no limit binds): stake the first plus the
    # last number, a win crosses both off (a new line 1, 2 when none is left), a loss appends the
    # stake; every path of the 3^5 enumerated with those rules written out here
    config = study([{"type": "labouchere", "bet": "banker", "line": [1, 2]}], bankroll=100, hands=5)
    result = exact_chain.exact_system(config.systems[0], config)
    odds = dict(zip("BPT", full_shoe_odds(), strict=True))
    finals: dict[float, float] = {}
    for path in itertools.product("BPT", repeat=5):
        bankroll, line, p = 100.0, [1.0, 2.0], 1.0
        for winner in path:
            p *= odds[winner]
            stake = line[0] + line[-1] if len(line) > 1 else line[0]
            if winner == "B":
                bankroll += 0.95 * stake
                line = line[1:-1] or [1.0, 2.0]
            elif winner == "P":
                bankroll -= stake
                line = line + [stake]
        finals[round(bankroll, 9)] = finals.get(round(bankroll, 9), 0.0) + p
    values = sorted(finals)
    assert result["final_bankroll"]["values"] == pytest.approx(values, abs=1e-9)
    assert result["final_bankroll"]["probabilities"] == pytest.approx([finals[v] for v in values], abs=1e-15)
    assert result["probability_error"] < 1e-12


def test_labouchere_against_independent_hands_simulated_at_999_confidence():
    # table maximum 10 units (a stake is cut to it and the line appends the 10 staked), stop-loss 20
    # units, goal +10, 200 hands: no all-in, the line's sum at most 40 base units. 10,000 sessions of
    # independent hands at the full shoe's odds played by the rules written out here: P(goal) within
    # 3.29 binomial SE (99.9%) of the exact figure (_labouchere_rules, from 10 units to 11 or 8)
    config = study(
        [{"type": "labouchere", "bet": "banker"}],
        table={"unit": 10, "minimum": 10, "maximum": 100},
        bankroll=1000,
        win_goal=100,
        stop_loss=200,
        hands=200,
    )
    result = exact_chain.exact_system(config.systems[0], config)
    assert result["probability_error"] < 1e-12
    banker, player, _ = full_shoe_odds()
    rng, sessions, goals = np.random.default_rng(3), 10_000, 0
    results = np.array([R.BANKER, R.PLAYER, R.TIE])
    for _ in range(sessions):
        winners = results[np.searchsorted([banker, banker + player], rng.random(200), side="right")]
        goals += _labouchere_rules(winners, "banker", 100.0, 110.0, 80.0, "cap")[0] >= 110 - 1e-9
    q = result["p_target"]
    assert abs(goals / sessions - q) < 3.29 * math.sqrt(q * (1 - q) / sessions)


def test_labouchere_too_many_lines_says_why():
    # a goal and a stop-loss of 50 units: the line stays bounded, but not few enough
    config = study(
        [{"type": "labouchere", "bet": "banker"}],
        table={"unit": 10, "minimum": 10, "maximum": 500},
        bankroll=1000,
        win_goal=500,
        stop_loss=500,
        hands=100,
    )
    reason = exact_chain.exact_system(config.systems[0], config)["reason"]
    assert "(bankroll, line) states" in reason and "sum at most 110 base units" in reason


LINE = [1.0, 2.0, 3.0, 4.0]


def _labouchere_rules(
    winners, bet: str, bankroll: float, goal: float | None, floor: float | None, on_cap: str
):
    """One session of Labouchere (line 1, 2, 3, 4, base 1 unit, table 1..10 units) on ``bet``
    (banker: a banker win pays 0.95, a tie pushes; tie: a tie pays 8, anything else loses) over the
    results ``winners`` (rules.BANKER / PLAYER / TIE), with the rules written out here: stake the
    first plus the last number (the only one when one is left); above the table maximum the stake is
    cut to 10 (``cap``) or a new line starts (``reset``), and to the bankroll (all-in); a win crosses
    both numbers off (a new line when none is left), a loss appends the stake, a push changes nothing;
    the session ends at the ``goal``, at the stop-loss ``floor`` or (``floor`` None) at ruin, below one
    unit. Returns the final bankroll, the most numbers a line held, the stakes above the table maximum
    and the all-in ones."""
    line, longest, capped, all_in = list(LINE), len(LINE), 0, 0
    for winner in winners:
        wanted = line[0] + line[-1] if len(line) > 1 else line[0]
        over = wanted > 10.0  # cut to the table maximum, or (reset) a new line
        if over and on_cap == "reset":
            line, wanted = list(LINE), LINE[0] + LINE[-1]
        stake = min(wanted, 10.0, bankroll)
        capped += over
        all_in += bankroll < min(wanted, 10.0)
        if bet == "banker":
            won = {R.BANKER: 0.95 * stake, R.PLAYER: -stake, R.TIE: 0.0}[int(winner)]
        else:
            won = 8.0 * stake if winner == R.TIE else -stake
        bankroll += won
        if won > 0:
            line = line[1:-1] or list(LINE)
        elif won < 0:
            line.append(stake)
            longest = max(longest, len(line))
        if goal is not None and bankroll >= goal - 1e-9:
            break
        if bankroll <= floor + 1e-9 if floor is not None else bankroll < 1.0 - 1e-9:
            break
    return bankroll, longest, capped, all_in


@pytest.mark.parametrize(
    ("bet", "on_cap", "bankroll", "win_goal", "stop_loss", "hands", "sessions"),
    [
        ("banker", "cap", 1000, 100, 200, 200, 4000),
        ("banker", "reset", 1000, 100, 200, 200, 4000),
        ("banker", "cap", 300, 300, None, 400, 2000),
        ("banker", "reset", 300, 300, None, 400, 2000),
        ("tie", "cap", 100_000, None, None, 300, 200),
    ],
)
def test_the_evaluators_labouchere_on_real_shoes_is_its_rules_on_the_same_hands(
    bet, on_cap, bankroll, win_goal, stop_loss, hands, sessions
):
    # the evaluator's Labouchere (the compiled staking programs, stacked as a study stacks them) on
    # real shoes, every hand's result recorded and replayed by the rules written out above: every
    # session's final bankroll agrees to 1e-9. The first two are the exact Labouchere config at seed
    # 5, whose P(goal) misses the exact one by 4.2 SE: the evaluator played the rules, the miss is in
    # the hands dealt. From 30 units without a stop-loss the table maximum cuts stakes (the line
    # appends the 10 staked) and near ruin stakes go all-in. On the tie (losing 9 hands in 10) the
    # lines outgrow the kernel's first buffer of 64 numbers: it shifts a line back to its start and
    # doubles the buffer
    config = study(
        [{"type": "labouchere", "bet": bet, "on_cap": on_cap}],
        table={"unit": 10, "minimum": 10, "maximum": 100},
        bankroll=bankroll,
        win_goal=win_goal,
        stop_loss=stop_loss,
        hands=hands,
        sessions=sessions,
        seed=5,
    )
    play, winners = shoe_effect.evaluator_winners(config)
    start = bankroll / 10.0
    goal = start + win_goal / 10.0 if win_goal else None
    floor = start - stop_loss / 10.0 if stop_loss else None
    replayed = [_labouchere_rules(winners[:, t], bet, start, goal, floor, on_cap) for t in range(sessions)]
    final, longest, capped, all_in = (np.array(column) for column in zip(*replayed, strict=True))
    np.testing.assert_allclose(play.seats.bankroll[0] / 10.0, final, rtol=0, atol=1e-9)
    if bet == "tie":
        assert longest.max() > 2 * staking.LINE_WIDTH
    elif stop_loss is None:
        assert capped.sum() > 100 and all_in.sum() > 100
    elif on_cap == "cap":
        assert int((final >= 110.0 - 1e-9).sum()) == 2409  # P(goal) 0.60225 against the exact 0.63422
