"""The advantage player's figures (experiments/advantage.py): identities, Jacobson's published
desirability indexes, and the simulated double barrier against the exact gambler's ruin."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pb_gym.experiments import advantage as A
from pb_gym.experiments import ruin_model

JACOBSON = json.loads((Path(__file__).parent / "data" / "jacobson_side_bet_counts.json").read_text())


def test_figures_follow_their_definitions():
    f = A.figures(mean=0.1, sd=4.0, frequency=0.25, hands_per_hour=80)
    ev = 0.025
    variance = 0.25 * (16.0 + 0.01) - ev * ev
    assert f["win_per_100_dealt"] == pytest.approx(2.5, rel=1e-14)
    assert f["ev_per_hour"] == pytest.approx(80 * ev, rel=1e-14)
    assert f["sd_per_hour"] == pytest.approx(math.sqrt(80 * variance), rel=1e-14)
    assert f["di"] == pytest.approx(1000 * ev / math.sqrt(variance), rel=1e-14)
    assert f["n0"] == pytest.approx(variance / ev**2, rel=1e-14)
    assert f["score"] == pytest.approx(f["di"] ** 2, rel=1e-12)  # SCORE = DI^2 at 13.5% ruin
    # at the SCORE bet size, 10,000 units carry e^-2 risk of ruin
    k = f["score"] / (100 * ev)
    assert A.risk_of_ruin(10_000, k * ev, k * k * variance) == pytest.approx(math.exp(-2), rel=1e-12)


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="frequency=0 is not allowed"):
        A.figures(0.1, 1.0, 0)


@pytest.mark.parametrize("name", sorted(JACOBSON["counts"]))
def test_jacobsons_di_is_the_full_shoe_sd_over_the_hands_bet(name):
    c = JACOBSON["counts"][name]
    di = A.jacobson_di(c["bet_frequency"], c["units_per_100_hands"], c["house_edge"], c["pays"])
    assert round(di, 2) == c["desirability_index"]
    # the DI of the count's own bets (their SD at the count's average edge) is lower
    assert A.count_di(c["bet_frequency"], c["units_per_100_hands"], c["pays"]) < di - 0.3


def test_the_double_barrier_agrees_with_the_exact_gamblers_ruin():
    # +1 / -1 at 0.49 / 0.51: start 10, goal +10, a hand limit long enough to end nearly all sessions
    sessions = 20_000
    result = A.double_barrier(
        np.array([1.0, -1.0]), np.array([0.49, 0.51]), 10, 10, 5000, sessions=sessions, seed=5
    )
    exact = float(ruin_model.closed_form(0.49, 0.51, np.array([10]), 20)["p_win"][0])
    # bankroll below one unit is ruin: the walk's 0; goal at 20 units; 99.9% binomial bound
    se = math.sqrt(exact * (1 - exact) / sessions)
    assert abs(result["p_goal"] - exact) < 3.29 * se
    assert result["p_goal_ci95"][0] < result["p_goal"] < result["p_goal_ci95"][1]
    assert result["p_ruin"] + result["p_goal"] == pytest.approx(1.0, abs=1e-3)
