"""The ``reward="expected"`` env option, and learned agents that discover the real edges.

* The expected reward is exactly stake x the exact EV of the cards unseen before the hand, the bankroll
  still follows the realized net win, and the expected reward is an unbiased estimate of the realized
  one for a policy that decides from what it has seen (a statistical test with a stated confidence,
  and a check that the same test detects a biased estimator of realistic size).
* The smoke discovery run (``configs/train/discover-smoke.yaml``) bets the side bets far more often when
  their exact EV is positive than when it is negative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pb_gym import engine, exact
from pb_gym import rules as R
from pb_gym.envs import config, observation
from pb_gym.envs.vector import PuntoBancoVectorEnv

from repo_paths import ROOT  # noqa: E402

CONFIGS = ROOT / "configs" / "train"
Z999 = 3.2905267314919255  # two-sided 99.9% normal quantile


def test_reward_option_is_validated():
    with pytest.raises(
        ValueError,
        match=r"reward='noisy' is not allowed; allowed: realized, expected, "
        r"log_growth",
    ):
        config.make_config(reward="noisy")
    assert config.make_config().reward == "realized"


@pytest.mark.parametrize(
    "mode, actions",
    [
        ("discrete", lambda rng, n: rng.integers(0, 16, n)),
        ("box", lambda rng, n: 0.1 * rng.random((n, 5)) * (rng.random((n, 5)) < 0.4)),
    ],
)
def test_expected_reward_is_stake_times_exact_ev_and_the_bankroll_follows_the_realized_win(mode, actions):
    kwargs = dict(
        decks=1,
        cut_card=14,
        side_bets=("dragon7", "panda8"),
        bankroll=1000,
        unit=1,
        table_min=1,
        table_max=50,
        max_hands=None,
        action_mode=mode,
        stake_levels=(1, 2, 5),
    )
    realized = PuntoBancoVectorEnv(32, info_ev=True, hand_info=True, **kwargs)
    expected = PuntoBancoVectorEnv(32, reward="expected", info_ev=True, hand_info=True, **kwargs)
    realized.reset(seed=3)
    expected.reset(seed=3)
    rng = np.random.default_rng(0)
    shuffled = 0
    for _ in range(60):
        a = actions(rng, 32)
        bankroll_before = realized.tables.bankroll.copy()
        _, r_real, _, _, info_r = realized.step(a)
        _, r_exp, _, _, info_e = expected.step(a)
        np.testing.assert_array_equal(info_r["stakes"], info_e["stakes"])
        np.testing.assert_allclose(r_exp, (info_e["stakes"] * info_e["ev"]).sum(axis=1), atol=1e-12)
        np.testing.assert_allclose(r_real, realized.tables.bankroll - bankroll_before, atol=1e-9)
        np.testing.assert_array_equal(realized.tables.bankroll, expected.tables.bankroll)
        shuffled += int(info_e["shuffled"].sum())
    assert shuffled > 10  # reshuffle hands are covered (the EV of the new shoe, burn card turned)


def _twin_rewards(decks: int, tables: int, steps: int, seed: int):
    """Realized and expected rewards of the same hands for a policy that decides from the cards seen:
    a counter's linear EV estimate (effects of removal) picks Dragon 7 (1 unit) or Panda 8 (2 units)."""
    from pb_gym.agents import obs_transforms

    kwargs = dict(
        decks=decks,
        side_bets=("dragon7", "panda8"),
        cut_card=14,
        bankroll=1e7,
        unit=1,
        table_min=1,
        table_max=1e6,
        max_hands=None,
        action_mode="discrete",
        stake_levels=(1, 2, 5),
    )
    realized = PuntoBancoVectorEnv(tables, **kwargs)
    expected = PuntoBancoVectorEnv(tables, reward="expected", **kwargs)
    realized.reset(seed=seed)
    expected.reset(seed=seed)
    rules = realized.config.rules
    ev_full, eor = obs_transforms._linear_ev_model(rules)
    full = R.full_shoe(decks).astype(np.float64)
    full_shoe_ev = exact.expected_values(R.full_shoe(decks), rules)
    real, exp, naive = [], [], []
    for _ in range(steps):
        seen = engine.next_hand_composition(rules, realized.tables.shoe).astype(np.float64)
        estimate = ev_full + ((full - seen) @ eor) * full.sum() / seen.sum(axis=1, keepdims=True)
        dragon, panda = estimate[:, 0], estimate[:, 1]
        # discrete actions: 0 no bet, 1 + bet * 3 + level; bets: banker, player, tie, dragon7, panda8
        act = np.where((dragon > 0) & (dragon >= panda), 1 + 3 * 3 + 0, np.where(panda > 0, 1 + 4 * 3 + 1, 0))
        real.append(realized.step(act)[1])
        exp.append(expected.step(act)[1])
        naive.append(realized.tables.stakes @ full_shoe_ev)  # a biased "expected" reward
    return np.concatenate(real), np.concatenate(exp), np.concatenate(naive)


def test_log_growth_reward_is_the_exact_expected_log_growth_and_the_realized_one_agrees():
    """reward="log_growth": sum_h P(h) log(1 + stakes . pay[h] / bankroll) over the hand classes, from
    the cards unseen before the hand. Checked against the formula written out here, and at 99.9%
    against the realized log growth of 4,096 tables x 30 hands betting 20% of the bankroll (where it
    sits well below EV / bankroll: Kelly's variance term)."""
    n = 4096
    kwargs = dict(
        side_bets=("dragon7", "panda8"),
        bankroll=1000,
        unit=10,
        table_min=10,
        table_max=100_000,
        max_hands=None,
        action_mode="discrete",
        stake_unit="fraction",
        stake_levels=(0.2,),
    )
    venv = PuntoBancoVectorEnv(n, reward="log_growth", **kwargs)
    twin = PuntoBancoVectorEnv(n, reward="expected", **kwargs)  # same seeds: the same hands
    venv.reset(seed=11)
    twin.reset(seed=11)
    rng = np.random.default_rng(2)
    realized, rewards, first_order = [], [], []
    for step in range(30):
        actions = rng.integers(1, 3, n)  # 20% of the bankroll on banker or player
        before = venv.bankroll.copy()
        _, reward, terminated, truncated, _ = venv.step(actions)
        _, expected, *_ = twin.step(actions)
        assert not (terminated | truncated).any()
        if step == 0:  # the formula, written out from the exact odds and the session's payoffs
            comp = observation.composition_before_hand(venv.tables)
            net = venv.tables.session.seats.stakes[0] @ venv.tables.session.payoffs.T
            formula = (exact.hand_class_probabilities(comp) * np.log1p(net / before[:, None])).sum(1)
            np.testing.assert_allclose(reward, formula, rtol=1e-12, atol=1e-15)
        realized.append(np.log(venv.bankroll / before))
        rewards.append(reward)
        first_order.append(expected / before)
    difference = np.concatenate(realized) - np.concatenate(rewards)
    half = Z999 * difference.std() / math.sqrt(difference.size)
    assert abs(difference.mean()) < half
    # a fifth of the bankroll on a near-even bet: growth ~ EV/B - f^2 var / 2, about 0.02 below EV/B
    gap = np.mean(first_order) - np.mean(rewards)
    assert 0.017 < gap < 0.021


def test_log_growth_reward_stays_finite_when_an_all_in_bet_can_lose_everything():
    """One unit from a bankroll of one unit: a lost hand leaves nothing (log 0), counted as leaving
    half the table minimum (LOG_GROWTH_FLOOR), so the reward is finite and exactly the formula's."""
    venv = PuntoBancoVectorEnv(
        64,
        bankroll=10,
        unit=10,
        table_min=10,
        action_mode="discrete",
        stake_levels=(1,),
        reward="log_growth",
        max_hands=None,
    )
    venv.reset(seed=3)
    _, reward, terminated, *_ = venv.step(np.full(64, 1))  # all of the bankroll on banker
    comp = observation.composition_before_hand(venv.tables)
    p = exact.hand_class_probabilities(comp)
    net = venv.tables.session.seats.stakes[0] @ venv.tables.session.payoffs.T
    lost_everything = (p * (1.0 + net <= 0.0)).sum(1)
    assert (lost_everything > 0.4).all()  # without the floor: log(0), a reward of -inf
    formula = (p * np.log(np.maximum(1.0 + net, config.LOG_GROWTH_FLOOR))).sum(1)
    np.testing.assert_allclose(reward, formula, rtol=1e-12)
    assert np.isfinite(reward).all() and terminated.any()  # the tables that lost are ruined


@pytest.mark.parametrize(
    "decks, tables, steps, seed", [(1, 256, 1000, 5), pytest.param(8, 512, 4000, 11, marks=pytest.mark.slow)]
)
def test_expected_reward_is_unbiased_for_a_policy_that_counts(decks, tables, steps, seed):
    real, exp, naive = _twin_rewards(decks, tables, steps, seed)
    diff = real - exp
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    assert (real != 0).mean() > 0.1  # the policy bets
    # realized - expected has mean 0 (martingale differences: hands are uncorrelated given the past)
    assert abs(diff.mean()) < Z999 * se, (diff.mean(), se)
    # the test has power: an estimator that ignores the cards seen (the full-shoe EV) is biased by
    # more than twice the 99.9% margin, so the same check would reject it
    assert (exp - naive).mean() > 2 * Z999 * se, ((exp - naive).mean(), se)


# ----------------------------------------------------------------------------- the smoke discovery run
@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """discover-smoke.yaml: PPO on the expected reward, 200k hands, then scored (about a minute)."""
    pytest.importorskip("stable_baselines3")
    from pb_gym.experiments import train

    out = tmp_path_factory.mktemp("discover-smoke")
    return out, train.main(str(CONFIGS / "discover-smoke.yaml"), out=str(out), as_json=True)


def test_smoke_discovery_bets_the_side_bets_where_their_ev_is_positive(smoke_run):
    out, result = smoke_run
    found = result["discovery"]
    positive, negative = found["p_bet_when_positive"], found["p_bet_when_negative"]
    # enough hands on each side for the rates to be measured (10,000+ positive spots on 100,000 hands)
    assert positive["hands"] > 5_000 and negative["hands"] > 50_000
    # the criterion, on the policy's own betting probability (and on its greedy actions)
    assert positive["policy"] >= 5 * negative["policy"], (positive, negative)
    assert positive["greedy"] >= 5 * negative["greedy"], (positive, negative)
    # it earns: the exact conditional profit per hand dealt is positive, with its 95% CI over shoes
    assert found["systems"]["learned"]["exact_profit_per_hand"]["ci95"][0] > 0
    # the perfect-information bettor is the ceiling on the same hands (its exact profit is the most
    # any one-unit policy can expect)
    assert found["regret_exact"]["estimate"] > 0
    for name in (
        "discovery/discovery.json",
        "discovery/discovery.txt",
        "discovery/calibration.png",
        "discovery/learning_curve_exact.csv",
        "discovery/learning_curve_exact.png",
        "evaluation/profit_per_hand.json",
    ):
        assert (out / name).is_file(), name
    curve = found["curve"]
    assert curve[0]["timesteps"] == 0 and curve[0]["learned_exact"] < curve[-1]["learned_exact"]


# --------------------------------------------------------------- catalog bets in the discovery scoring
class _ObservedPerfect:
    """A scripted policy: one unit on the best of ``bets`` whenever its exact EV for the unseen cards
    in its observation (the Dict's ``shoe``) is positive -- the perfect-information bettor, but for the
    hands after the cut card (dealt from a new shoe its observation does not show yet)."""

    def __init__(self, cfg: config.EnvConfig, bets: list[str]) -> None:
        self.cfg, self.columns = cfg, [cfg.bets.column(b) for b in bets]
        self.actions = np.array([cfg.bet_choices.index(b) for b in bets])  # one stake level

    def reset(self) -> None:
        pass

    def act(self, obs, bankroll, episode_start, probabilities=True):
        ev = self.cfg.bets.expected_values(obs["shoe"].astype(np.int64))[:, self.columns]
        best = ev.argmax(axis=1)
        return np.where(ev[np.arange(len(best)), best] > 0, self.actions[best], 0), None


def test_discovery_scores_catalog_bets_in_the_tables_columns():
    """A catalog bet (3 Giving 8, priced by the hand-class walk) scored beside a spot of the rules
    (Dragon 7): the perfect bettor earns (the atlas's edge), a policy that bets the same way from its
    observation earns nearly all of it, bets almost never at a negative EV, and the atlas's count
    earns most of it. Misaligned columns would make the scripted policy's exact profit collapse."""
    from pb_gym.experiments.benchmark import discovery

    kwargs = dict(
        decks=8,
        side_bets=("three_giving_eight", "dragon7"),
        cut_card=14,
        observation="dict",
        obs_scale="raw",
        visible_discards=True,
        action_mode="discrete",
        stake_levels=(1,),
        max_hands=200,
        bankroll=10000,
        unit=10,
        table_min=10,
        table_max=5000,
    )
    cfg = config.make_config(**kwargs)
    bets = ["three_giving_eight", "dragon7"]
    count = discovery.linear_count(cfg.rules, bets, 200, 11)
    result = discovery.score(_ObservedPerfect(cfg, bets), kwargs, bets, 64, 300, 5, count=count)
    systems = result["systems"]
    assert systems["perfect"]["exact_profit_per_hand"]["ci95"][0] > 0.03  # 3 Giving 8: ~+0.047
    assert result["share_of_perfect_exact"]["estimate"] > 0.95
    assert result["p_bet_when_negative"]["greedy"] < 0.01
    assert result["p_bet_when_positive"]["greedy"] > 0.9
    assert 0.9 < result["count_share_of_perfect_exact"]["estimate"] <= 1.0
