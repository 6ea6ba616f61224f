"""The advantage player's figures (pb_gym/experiments/counting/advantage.py): identities, Jacobson's published
desirability indexes, and the simulated double barrier against the exact gambler's ruin."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pytest

from pb_gym import rules as R
from pb_gym.experiments.counting import advantage
from pb_gym.experiments.ruin import model as ruin_model

from repo_paths import DATA  # noqa: E402

JACOBSON = json.loads((DATA / "jacobson_side_bet_counts.json").read_text())


def test_figures_follow_their_definitions():
    f = advantage.figures(mean=0.1, sd=4.0, frequency=0.25, hands_per_hour=80)
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
    assert advantage.risk_of_ruin(10_000, k * ev, k * k * variance) == pytest.approx(math.exp(-2), rel=1e-12)


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="frequency=0 is not allowed"):
        advantage.figures(0.1, 1.0, 0)


@pytest.mark.parametrize("name", sorted(JACOBSON["counts"]))
def test_jacobsons_di_is_the_full_shoe_sd_over_the_hands_bet(name):
    c = JACOBSON["counts"][name]
    di = advantage.jacobson_di(c["bet_frequency"], c["units_per_100_hands"], c["house_edge"], c["pays"])
    assert round(di, 2) == c["desirability_index"]
    # the DI of the count's own bets (their SD at the count's average edge) is lower
    assert advantage.count_di(c["bet_frequency"], c["units_per_100_hands"], c["pays"]) < di - 0.3


def test_the_double_barrier_agrees_with_the_exact_gamblers_ruin():
    # +1 / -1 at 0.49 / 0.51: start 10, goal +10, a hand limit long enough to end nearly all sessions
    sessions = 20_000
    result = advantage.double_barrier(
        np.array([1.0, -1.0]), np.array([0.49, 0.51]), 10, 10, 5000, sessions=sessions, seed=5
    )
    exact = float(ruin_model.closed_form(0.49, 0.51, np.array([10]), 20)["p_win"][0])
    # bankroll below one unit is ruin: the walk's 0; goal at 20 units; 99.9% binomial bound
    se = math.sqrt(exact * (1 - exact) / sessions)
    assert abs(result["p_goal"] - exact) < 3.29 * se
    assert result["p_goal_ci95"][0] < result["p_goal"] < result["p_goal_ci95"][1]
    assert result["p_ruin"] + result["p_goal"] == pytest.approx(1.0, abs=1e-3)


def test_the_diffusion_barrier_is_the_single_barrier_law_when_the_goal_is_out_of_reach():
    # drift 0.05, variance 4, 400 steps, ruin 10 below the start (bankroll 11, a stake of 1): the goal
    # at +1000 is 24 SDs beyond the horizon, so the chance of ruin is the inverse Gaussian law's
    # P(min <= -a by T) = Phi((-a - mu T) / (s sqrt T)) + exp(-2 mu a / s^2) Phi((-a + mu T) / (s sqrt T))
    mu, var, a, steps = 0.05, 4.0, 10.0, 400
    s = math.sqrt(var * steps)
    phi = NormalDist().cdf
    law = phi((-a - mu * steps) / s) + math.exp(-2 * mu * a / var) * phi((-a + mu * steps) / s)
    result = advantage.diffusion_barrier(mu, var, a + 1, 1000, steps)
    assert result["p_ruin"] == pytest.approx(law, rel=1e-9)
    assert result["p_goal"] < 1e-9  # about 1e-130: the series leaves only its rounding


def test_the_diffusion_barrier_without_a_time_limit_is_the_two_sided_ruin_formula():
    mu, var, a, b = 0.0778, 6.515**2, 499.0, 1000.0
    theta = 2 * mu / var
    ever = (1 - math.exp(-theta * b)) / (math.exp(theta * a) - math.exp(-theta * b))
    result = advantage.diffusion_barrier(mu, var, a + 1, b, 1e9)
    assert result["p_ruin"] == pytest.approx(ever, rel=1e-9)
    assert result["p_goal"] == pytest.approx(1 - ever, rel=1e-9)
    # no drift, equal distances: either side is as likely, at any horizon
    even = advantage.diffusion_barrier(0.0, 1.0, 21, 20, 300)
    assert even["p_ruin"] == pytest.approx(even["p_goal"], rel=1e-9) and 0 < even["p_ruin"] < 0.5


def test_the_exact_walk_is_the_gamblers_ruin_and_the_simulated_barrier():
    # +1 / -1 at 0.49 / 0.51 from 10, goal +10, long enough for every session to end: the closed form
    walk = advantage.walk_barrier(1.0, 0.49, 10, 10, 5000)
    exact = float(ruin_model.closed_form(0.49, 0.51, np.array([10]), 20)["p_win"][0])
    assert walk["p_goal"] == pytest.approx(exact, rel=1e-9)
    assert walk["p_ruin"] == pytest.approx(1 - exact, rel=1e-9)
    # a 40:1 bet at +8% against the simulated barrier of the same walk: 99.9% binomial bounds
    win, p = advantage.two_outcome_bet(0.08, 6.5)
    assert p * win - (1 - p) == pytest.approx(0.08, rel=1e-12)
    assert math.sqrt(p * (1 - p)) * (win + 1) == pytest.approx(6.5, rel=1e-12)
    walk = advantage.walk_barrier(win, p, 60, 120, 800)
    sessions = 20_000
    simulated = advantage.double_barrier(
        np.array([win, -1.0]), np.array([p, 1 - p]), 60, 120, 800, sessions, seed=3
    )
    for key in ("p_ruin", "p_goal"):
        se = math.sqrt(walk[key] * (1 - walk[key]) / sessions)
        assert abs(simulated[key] - walk[key]) < 3.29 * se, key
    # the walk's p_behind counts the ruined; the simulated one only those behind at the limit
    behind = walk["p_behind"] - walk["p_ruin"]
    assert abs(simulated["p_behind"] - behind) < 3.29 * math.sqrt(behind * (1 - behind) / sessions)


def test_hows_figures_under_the_three_models_of_the_barrier():
    """The double barrier of How's count (its study's per-bet figures: +0.0778 a bet, SD 6.515, 6.84
    bets a shoe; 500 units, goal +1,000, 500 shoes) under the normal model and for independent bets:
    both above his 3.5%; the normal model above the walk (the 40:1 tail lowers the risk of ruin)."""
    risk = advantage.RiskConfig(**HOW["risk"])
    models = advantage.barrier_models(0.0778, 6.515, 6.84, risk)
    assert models["bets"] == 3420
    assert round(models["normal"]["p_ruin"], 3) == 0.066
    assert round(models["walk"]["p_ruin"], 3) == 0.054 and round(models["walk"]["win"]) == 39
    # a 40:1 bet of the same mean (its SD 6.56, not 6.515)
    forty = advantage.walk_barrier(40.0, 1.0778 / 41, 500, 1000, 3420)
    assert round(forty["p_ruin"], 3) == 0.056


HOW = json.loads((DATA / "how_dragon7_count.json").read_text())


def test_the_count_spec_is_the_players_count():
    count = advantage.CountSpec(
        tags=(1, 0, 0, -1, -1, -1, -1, 2, 2, 0), trigger=0, bet="dragon7", start=-32, true=False
    )
    unseen = R.full_shoe(8).astype(np.int64)
    unseen[R.RANKS.index("A")] -= 3  # three aces, a 4 and an 8 seen: -32 + 3 - 1 + 2
    unseen[R.RANKS.index("4")] -= 1
    unseen[R.RANKS.index("8")] -= 1
    assert count.value(unseen[None], 8)[0] == -28
    true = advantage.CountSpec(tags=count.tags, trigger=0, bet="dragon7")
    assert true.value(unseen[None], 8)[0] == pytest.approx(4 / (411 / 52), rel=1e-15)
    assert advantage.HOW_DRAGON7["count"] == count  # How's count, as the reference notes give it


def test_shoe_extremes_are_the_running_sums_lowest_and_highest_points():
    rng = np.random.default_rng(3)
    shoe = rng.integers(0, 5, size=200)
    values = rng.choice([-1.0, 0.0, 40.0], size=(200, 2), p=[0.6, 0.35, 0.05])
    low, high = advantage.shoe_extremes(shoe, values, 6)
    for s in range(6):
        path = np.concatenate([np.zeros((1, 2)), np.cumsum(values[shoe == s], axis=0)])
        np.testing.assert_array_equal(low[s], path.min(axis=0))
        np.testing.assert_array_equal(high[s], path.max(axis=0))
    assert not low[5].any() and not high[5].any()  # a shoe without hands never moves


def test_the_shoe_barrier_of_one_hand_shoes_is_the_gamblers_ruin():
    # shoes of one +1 / -1 hand, 49 of 100 winning: a session is the walk of the exact gambler's ruin
    net = np.array([1.0] * 49 + [-1.0] * 51)
    low, high = np.minimum(net, 0.0), np.maximum(net, 0.0)
    sessions = 20_000
    result = advantage.shoe_barrier(net, low, high, 10, 10, 5000, sessions=sessions, seed=5)
    exact = float(ruin_model.closed_form(0.49, 0.51, np.array([10]), 20)["p_win"][0])
    se = math.sqrt(exact * (1 - exact) / sessions)
    assert abs(result["p_goal"] - exact) < 3.29 * se  # 99.9% binomial bound
    assert result["p_ruin"] + result["p_goal"] == pytest.approx(1.0, abs=1e-3)
    assert result["p_behind"] >= result["p_ruin"]  # a ruined session ends behind


def _barrier_by_arrays(net, low, high, bankroll, goal, shoes, sessions, seed, stake):
    """The shoe barrier written as whole arrays (every shoe of every session, then the first ruin and
    the first goal found by argmax): the reference the compiled session loop must equal bit for bit."""
    rng = np.random.default_rng(seed)
    ruined = reached = behind = 0
    total_win = total_square = played = 0.0
    for start in range(0, sessions, 1_000):
        m = min(1_000, sessions - start)
        idx = rng.integers(0, net.size, size=(m, shoes))
        x = net[idx]
        before = bankroll + np.cumsum(x, axis=1) - x
        ruin_at, goal_at = before + low[idx] < stake, before + high[idx] >= bankroll + goal
        first_ruin = np.where(ruin_at.any(axis=1), ruin_at.argmax(axis=1), shoes)
        first_goal = np.where(goal_at.any(axis=1), goal_at.argmax(axis=1), shoes)
        is_ruin = (first_ruin < shoes) & (first_ruin <= first_goal)
        is_goal = (first_goal < shoes) & ~is_ruin
        end = np.minimum(np.minimum(first_ruin, first_goal), shoes - 1)
        rows = np.arange(m)
        final = np.where(
            is_ruin,
            before[rows, end] + low[idx[rows, end]],
            np.where(is_goal, before[rows, end] + high[idx[rows, end]], before[rows, -1] + x[rows, -1]),
        )
        win = final - bankroll
        ruined, reached = ruined + int(is_ruin.sum()), reached + int(is_goal.sum())
        behind += int((~is_goal & (win < 0)).sum())
        total_win, total_square = total_win + float(win.sum()), total_square + float((win * win).sum())
        played += float(np.where(is_ruin | is_goal, end + 1, shoes).sum())
    return ruined, reached, behind, total_win, total_square, played


@pytest.mark.parametrize("shoes", [1, 60])
def test_the_shoe_barrier_is_the_array_form_bit_for_bit_and_shares_its_draws(shoes):
    rng = np.random.default_rng(11)
    net = rng.normal(0.5, 25.0, shoes)
    low = np.minimum(net, 0.0) - rng.exponential(15.0, shoes)
    high = np.maximum(net, 0.0) + rng.exponential(15.0, shoes)
    variants = [(net, low, high), (net - 3.0, low - 3.0, high), (net * 2.0, low * 2.0, high * 2.0)]
    # a goal and a ruin both within reach of a session of 8 shoes; 2,345 sessions: a block and a part
    bankroll, goal, limit, sessions, seed, stake = 60.0, 90.0, 8, 2_345, 3, 2.0
    ends = []
    results = advantage.shoe_barriers(variants, bankroll, goal, limit, sessions, seed, stake)
    for variant, result in zip(variants, results, strict=True):
        assert result == advantage.shoe_barrier(*variant, bankroll, goal, limit, sessions, seed, stake)
        ruined, reached, behind, total_win, _, played = _barrier_by_arrays(
            *variant, bankroll, goal, limit, sessions, seed, stake
        )
        assert (result["p_ruin"], result["p_goal"], result["p_behind"]) == (
            ruined / sessions,
            reached / sessions,
            behind / sessions,
        )
        assert result["mean_win"] == total_win / sessions and result["mean_shoes"] == played / sessions
        ends.append((ruined, reached, sessions - ruined - reached))
    if shoes > 1:  # sessions end at ruin, at the goal and at the limit (one shoe: each the same way)
        assert min(map(min, ends)) > 0
    for bad in ({"shoes": 0}, {"shoes": 2.5}, {"sessions": 0}, {"sessions": True}):
        name, value = next(iter(bad.items()))
        with pytest.raises(ValueError, match=f"{name}={value!r} is not allowed; allowed: an integer >= 1"):
            advantage.shoe_barrier(
                net, low, high, bankroll, goal, **{"shoes": limit, "sessions": sessions, **bad}
            )
    with pytest.raises(ValueError, match="the same number of shoes"):
        advantage.shoe_barriers(
            [(net, low, high), (np.append(net, 1.0), np.append(low, 0.0), np.append(high, 1.0))],
            60.0,
            90.0,
            8,
        )


def test_the_bettor_report_follows_the_figures():
    hands = np.full(4, 80.0)
    bets = np.array([8.0, 6.0, 0.0, 10.0])
    ev = 0.07 * bets
    payoff = np.array([32.0, -6.0, 0.0, 30.0])  # 1 win at 40:1 in 8, none in 6, 1 in 10 (+ losses)
    payoff_sq = np.array([1607.0, 6.0, 0.0, 1609.0])
    low, high = np.array([-7.0, -6.0, 0.0, -9.0]), np.array([33.0, 0.0, 0.0, 31.0])
    risk = advantage.RiskConfig(sessions=200)
    r = advantage.bettor_report(hands, bets, ev, payoff, payoff_sq, low, high, risk)
    mean = 0.07
    sd = math.sqrt(3222.0 / 24 - (56.0 / 24) ** 2)
    f = advantage.figures(mean, sd, 24 / 320, risk.hands_per_hour)
    for key in ("di", "n0", "score", "win_per_100_dealt", "sd_per_100_dealt", "ev_per_hour"):
        assert r[key] == pytest.approx(f[key], rel=1e-12), key
    assert r["bets_per_shoe"] == 6.0 and r["win_per_shoe"] == pytest.approx(0.42, rel=1e-12)
    variance = (f["sd_per_100_dealt"] / 10) ** 2
    assert r["risk_of_ruin_formula"] == pytest.approx(advantage.risk_of_ruin(500, mean * 24 / 320, variance))
    assert r["double_barrier"]["bankroll"] == 500 and r["double_barrier"]["shoes_resampled"] == 4
    assert r["barrier_models"] == advantage.barrier_models(mean, sd, 6.0, risk)
    assert r["barrier_models"]["bets"] == 3000  # 6 bets a shoe, 500 shoes
    assert "| ruin %, same barrier: normal model |" in advantage.advantage_table(
        [("x", r)], risk.model_dump()
    )
    assert advantage.bettor_report(hands, np.zeros(4), ev, payoff, payoff_sq, low, high, risk) == {
        "note": "never bets"
    }


def test_hows_dragon7_count_reproduced():
    """Stephen How's Dragon 7 count, replayed on 10,000 shoes of his conditions with the exact EV of
    every hand bet, against his published figures.

    His bet frequency (6.8 a shoe) is reproduced betting when the count is above 0 (>= +1) with one
    more hand after the cut card; as the notes state it (>= 0) the count bets 8.2 hands a shoe. With
    that convention his win per shoe (+0.52), his +250 units a session and his 24% of sessions behind
    after 500 shoes are reproduced within the tolerances below (about 2.5 times our 95% half-widths
    at 10,000 shoes); his 3.5% risk of ruin is not: ours is 5-7% (the normal model of the same drift
    and variance gives more, independent 40:1 bets about the same: see the test of the three models),
    and the test records that the published figure lies below our 95% CI.
    """
    rules = R.Rules(decks=8, cut_card=16, burn=True, hand_after_cut=True)
    spec = HOW["count"]
    count = advantage.CountSpec(
        tags=tuple(spec["tags"]), trigger=1.0, bet=spec["bet"], start=float(spec["start"]), true=False
    )
    d = advantage.replay_count(rules, count, 10_000, seed=2026)
    risk = advantage.RiskConfig(**HOW["risk"], sessions=4_000, seed=1)
    r = advantage.bettor_report(
        d["hands"], d["bets"], d["ev"], d["payoff"], d["payoff_sq"], d["low"], d["high"], risk
    )
    barrier = r["double_barrier"]
    assert abs(r["bets_per_shoe"] - HOW["bets_per_shoe"]) < 0.25
    assert abs(r["win_per_shoe"] - HOW["win_per_shoe"]) < 0.05
    assert abs(barrier["mean_win"] - HOW["mean_win"]) < 40
    assert abs(barrier["p_behind"] - HOW["p_behind"]) < 0.04
    assert barrier["p_ruin_ci95"][0] > HOW["p_ruin"]  # not reproduced: ours is higher
    assert 0.04 < barrier["p_ruin"] < 0.08
