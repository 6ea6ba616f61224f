"""The lab's computations (``pb_gym.experiments.lab``, no browser): each lesson's exact figures against
the project's calculators and published values, its simulations against the engine's (the same
sessions, bit for bit) and against the exact values (within stated bounds), and its input errors."""

from __future__ import annotations

import math
import socket
import sys

import numpy as np
import pytest

from pb_gym import roads
from pb_gym import rules as R
from pb_gym import session_optimum as so
from pb_gym.experiments.lab import bold, common, gamblers_ruin, hand, progression, shoe
from pb_gym.experiments.ruin import model, simulation

Z_BOUND = 4.0
"""A simulated share lies within 4 standard errors of its exact value (two-sided, about 99.99% for a
single comparison; every comparison here is at a fixed seed, so the test is deterministic)."""


def _within(share: float, exact: float, n: int, bound: float = Z_BOUND) -> None:
    se = math.sqrt(exact * (1 - exact) / n)
    assert abs(share - exact) <= bound * se, (share, exact, n)


# ------------------------------------------------------------------------------- lesson 1: one hand
def test_the_odds_of_each_bet_are_the_published_ones():
    rows = {row["bet"]: row for row in hand.bet_odds(8, "dragon7")}
    # Wizard of Odds, 8 decks: P(banker) 0.458597, P(tie) 0.095156; edges 1.06%, 1.24%, 14.36%, 7.61%
    assert rows["banker"]["p_win"] == pytest.approx(0.458597, abs=1e-6)
    assert rows["tie"]["p_win"] == pytest.approx(0.095156, abs=1e-6)
    assert rows["banker"]["p_push"] == rows["player"]["p_push"] == rows["tie"]["p_win"]
    edges = {bet: round(100 * row["house_edge"], 2) for bet, row in rows.items()}
    assert edges == {"banker": 1.06, "player": 1.24, "tie": 14.36, "dragon7": 7.61}
    assert rows["dragon7"]["pays"] == 40.0


def test_the_tableau_told_is_the_engine_s_deal():
    """Over 3,000 dealt hands: the narration draws a third card exactly where the engine did, and ends
    on the engine's totals and winner."""
    dealt = hand.deal_hands(8, 3000, seed=5)
    for k in range(3000):
        steps = hand.narrate(dealt["player_cards"][k], dealt["banker_cards"][k])
        assert any(s.startswith("Player draws") for s in steps) == bool(dealt["player_cards"][k][2])
        assert any("says draw" in s for s in steps) == bool(dealt["banker_cards"][k][2])
        pt, bt = int(dealt["player_total"][k]), int(dealt["banker_total"][k])
        last = steps[-1]
        assert (
            (f"Banker {bt}, Player {pt}" in last)
            if pt != bt
            else last.startswith(f"{pt} against {bt}: a tie")
        )


def test_hands_are_one_table_of_the_engine_and_their_frequencies_converge():
    first = hand.deal_hands(8, 700, seed=3)
    more = hand.deal_hands(8, 10_000, seed=3)  # the same first 700, whatever was asked before
    for key in first:
        np.testing.assert_array_equal(first[key], more[key][:700])
    running = hand.running_frequencies(more, "dragon7")
    exact = {row["bet"]: row["p_win"] for row in hand.bet_odds(8, "dragon7")}
    for bet in ("banker", "player", "tie", "dragon7"):
        # hands of one shoe are not independent; 10,000 hands over ~125 shoes are close enough to it
        _within(running[bet][-1], exact[bet], 10_000, bound=5.0)


# ------------------------------------------------------------------------- lesson 2: gambler's ruin
def test_the_default_session_is_the_ruin_study_s_0_4322():
    result = gamblers_ruin.ruin_exact("player", 10, 20)
    assert round(result["p_target"], 4) == 0.4322
    assert result["closed_form"] == pytest.approx(result["p_target"], abs=1e-12)
    assert result["p_ruin"] == pytest.approx(1 - result["p_target"], abs=1e-15)
    chain = model.markov_chain(model.step_distribution("player", R.Rules()), 20)
    assert result["hands"] == chain["hands"][9]
    assert result["curve"]["p_target"] == chain["p_win"].tolist()


@pytest.mark.parametrize("bet", ["banker", "fair_coin"])
def test_a_stake_of_k_units_is_the_one_unit_walk_counted_in_stakes(bet):
    big = gamblers_ruin.ruin_exact(bet, 10, 20, stake=5)
    small = gamblers_ruin.ruin_exact(bet, 2, 4, stake=1)
    assert big["p_target"] == small["p_target"] and big["curve"]["start"] == [5, 10, 15]
    assert gamblers_ruin.ruin_exact("player", 10, 20, stake=10)["p_target"] == pytest.approx(
        0.44624660934 / (0.44624660934 + 0.45859742263), abs=1e-9
    )


@pytest.mark.parametrize("bet", gamblers_ruin.BETS)
def test_the_sessions_are_the_ruin_study_s_own_and_their_paths_end_where_they_do(bet):
    ran = gamblers_ruin.ruin_sessions(bet, 10, 20, 1, 400, seed=7)
    starts, targets = np.full(400, 10), np.full(400, 20)
    if bet == "fair_coin":
        study = simulation.simulate_coin(starts, targets, 7, gamblers_ruin.MAX_HANDS)
    else:
        study = simulation.simulate_engine(R.Rules(), [bet], starts, targets, 7, gamblers_ruin.MAX_HANDS)[bet]
    for key in ("success", "hands", "finished"):
        np.testing.assert_array_equal(ran[key], study[key])
    assert len(ran["paths"]) == gamblers_ruin.PATHS
    for k, path in enumerate(ran["paths"]):
        assert path[0] == 10 and len(path) == ran["hands"][k] + 1
        assert (path[-1] >= 20) == ran["success"][k] and (path[-1] < 1) == (not ran["success"][k])
    assert ran["running"][-1] == ran["success"].mean()
    _within(ran["running"][-1], gamblers_ruin.ruin_exact(bet, 10, 20)["p_target"], 400)


def test_the_demo_seed_lands_near_the_exact_value():
    """The page's default: 1,000 sessions of player, 10 -> 20, from the demo seed."""
    ran = gamblers_ruin.ruin_sessions("player", 10, 20, 1, 1000, common.DEFAULT_SEED)
    assert ran["finished"].all()
    _within(ran["running"][-1], 0.43216825644920, 1000, bound=1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bet": "roulette"}, "bet='roulette' is not allowed; allowed: player, banker, fair_coin"),
        ({"stake": 3}, "stake=3 is not allowed; allowed: 1, 2, 5, 10"),
        ({"start": 20}, "start=20 is not allowed; allowed: an integer from 1 to 19"),
        ({"target": 61}, "target=61 is not allowed; allowed: an integer from 2 to 60"),
        ({"start": 7, "stake": 2}, r"start=7 is not allowed; allowed: a multiple of the stake \(2\)"),
    ],
)
def test_a_bad_session_names_its_field_and_the_allowed_values(kwargs, message):
    session = {"bet": "player", "start": 10, "target": 20, "stake": 1} | kwargs
    with pytest.raises(ValueError, match=message):
        gamblers_ruin.ruin_exact(**session)


# ------------------------------------------------------------------- lesson 3: Martingale illusion
def test_a_progression_wins_more_sessions_and_still_loses_money():
    from pb_gym.experiments.evaluate import exact_chain

    flat = progression.progression_exact("flat", 100, 10, 64, 200)
    doubling = progression.progression_exact("martingale", 100, 10, 64, 200)
    assert doubling["p_goal"] > 0.85 > 0.45 > flat["p_goal"]
    assert doubling["mean_loss_when_lost"] > 5 * flat["mean_loss_when_lost"]
    assert flat["expected_result"] < 0 and doubling["expected_result"] < 0
    assert sum(doubling["result"]["probabilities"]) == pytest.approx(1.0, abs=1e-12)
    config = progression.study("martingale", 100, 10, 64, 200)
    assert exact_chain.exact_system(config.systems[0], config)["p_target"] == doubling["p_goal"]


def test_the_dealt_progression_sessions_agree_with_the_exact_chain():
    exact = progression.progression_exact("martingale", 100, 10, 64, 200)
    dealt = progression.progression_sessions("martingale", 100, 10, 64, 200, 1000, seed=2)
    assert dealt["reached"].size == 1000 and dealt["running"][-1] == dealt["reached"].mean()
    _within(dealt["reached"].mean(), exact["p_goal"], 1000)


def test_a_bad_progression_is_refused():
    with pytest.raises(ValueError, match="system='kelly' is not allowed; allowed: flat, martingale"):
        progression.progression_exact("kelly", 100, 10, 64, 200)
    with pytest.raises(ValueError, match="table_max=100 is not allowed; allowed: 8, 16, 32"):
        progression.progression_exact("flat", 100, 10, 100, 200)


# ---------------------------------------------------------------------- lesson 4: how to bet if you must
def test_bold_play_is_optimal_without_a_limit_and_the_optimum_beats_it_under_one():
    free = bold.bold_exact(10, 20, 50, 0, "player")
    assert free["p_goal"]["bold"] == pytest.approx(free["p_goal"]["optimal"], abs=1e-12)
    assert free["p_goal"]["timid"] < 0.2 < 0.49 < free["p_goal"]["optimal"]
    assert free["start"] == {"bet": "player", "stake": 10}
    capped = bold.bold_exact(10, 20, 100, 2, "player")
    assert capped["p_goal"]["optimal"] > capped["p_goal"]["bold"] + 0.005 > capped["p_goal"]["timid"] + 0.2
    table = bold.session(10, 20, 100, 2)
    assert capped["p_goal"]["optimal"] == so.solve(table).p_goal
    assert capped["p_goal"]["timid"] == so.evaluate(table, so.timid_play(table, "player", 1))
    assert len(capped["stake"]) == 100 and len(capped["stake"][0]) == 20
    assert capped["curve"]["optimal"][9] == capped["p_goal"]["optimal"]


def test_the_three_policies_dealt_agree_with_their_exact_values():
    exact = bold.bold_exact(10, 20, 100, 2, "player")
    dealt = bold.bold_sessions(10, 20, 100, 2, "player", 1000, seed=4)
    for name in bold.POLICIES:
        _within(dealt[name]["reached"].mean(), exact["p_goal"][name], 1000)


# ---------------------------------------------------------------------- lessons 5 and 6: one shoe
def test_a_shoe_is_dealt_to_its_cut_card_with_the_unseen_cards_before_each_hand():
    dealt = shoe.deal_shoe(8, seed=9)
    assert 60 <= len(dealt["winner"]) <= 90
    cards = dealt["composition"].sum(axis=1)
    assert np.all(np.diff(cards) <= -4) and cards[0] <= 416
    odds = shoe.next_hand_odds(dealt["composition"])
    np.testing.assert_allclose(odds["banker"] + odds["player"] + odds["tie"], 1.0, atol=1e-12)
    full = shoe.next_hand_odds(R.full_shoe(8))
    assert float(full["banker"]) == pytest.approx(0.458597422632763, abs=1e-12)
    ev = shoe.side_bet_ev(dealt, "dragon7")
    assert ev.shape == (len(dealt["winner"]),) and ev[0] == pytest.approx(-0.0761, abs=0.01)


def test_the_roads_read_are_pb_gym_s_roads():
    dealt = shoe.deal_shoe(8, seed=9)
    reading = shoe.road_reading(dealt, 30)
    letters = [R.OUTCOME_LETTERS[w] for w in dealt["winner"][:30]]
    assert reading["roads"] == roads.read_roads(letters, dealt["banker_pair"][:30], dealt["player_pair"][:30])
    assert reading["streak"][1] == len(reading["roads"].big_road[-1])
    assert shoe.road_reading(dealt, 0)["streak"] is None


def test_a_side_bet_turns_positive_late_in_some_shoes():
    summary = shoe.counting_summary(8, seed=1, bet="dragon7", shoes=60)
    assert summary["full_shoe_ev"] == pytest.approx(-0.07611334472, abs=1e-9)
    assert 0 < summary["positive_hands"] < summary["hands"] / 4
    assert summary["shoes_with_positive"] > 10 and summary["mean_positive_ev"] > 0
    share = summary["by_depth"]["share_positive"]
    assert share[0] == 0.0 and share[-1] > share[len(share) // 2]  # where the only edge lives: late


# ---------------------------------------------------------------------------------- pb-gym lab
def test_pb_gym_lab_without_the_extra_is_one_line_naming_it_and_status_2(monkeypatch, capsys):
    from pb_gym.experiments import cli

    monkeypatch.setitem(sys.modules, "dash", None)  # (what a missing package reads as)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["lab", "--no-browser"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("pb-gym lab: error: pb-gym lab needs the lab extra")
    assert "pip install -e '.[lab]'" in err


@pytest.mark.parametrize("port", ["80", "70000", "http"])
def test_a_bad_port_is_refused_naming_it(port, capsys):
    from pb_gym.experiments import cli

    with pytest.raises(SystemExit) as exit_:
        cli.main(["lab", "--no-browser", "--port", port])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert (
        f"argument --port: {port!r} is not allowed; allowed: an integer from 1024 to 65535 (0: any free port)"
        in err
    )


def test_a_port_in_use_is_one_line_and_status_2(capsys):
    from pb_gym.experiments import cli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exit_:
            cli.main(["lab", "--no-browser", "--port", str(port)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"pb-gym lab: error: --port {port}: cannot listen on 127.0.0.1:{port}")
    assert "allowed: a free port from 1024 to 65535 (0: any free port)" in err


def test_the_lab_listens_on_127_0_0_1_only():
    from pb_gym.experiments.lab import server

    listening = server.listen(0)
    try:
        assert listening.getsockname()[0] == "127.0.0.1"
    finally:
        listening.close()
