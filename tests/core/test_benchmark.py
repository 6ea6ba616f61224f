"""The benchmark: its registered tasks and the scorer of any policy against the known optimum."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from pb_gym import benchmark, catalog
from pb_gym import rules as R
from pb_gym.envs import actions as env_actions
from pb_gym.envs import config, tasks

TASK_IDS = list(tasks.TASKS)


def test_every_task_is_registered_with_its_frozen_settings():
    assert TASK_IDS == [
        "pb_gym/Discover-v0",
        "pb_gym/DiscoverCatalog-v0",
        "pb_gym/DiscoverAll-v0",
        "pb_gym/Sizing-v0",
        "pb_gym/DiscoverHidden-v0",
        "pb_gym/DiscoverMainBets-v0",
        "pb_gym/DiscoverEdgeSort-v0",
    ]
    for task in tasks.TASKS.values():
        spec = gymnasium.spec(task.id)
        assert spec.kwargs == dict(task.kwargs) and spec.max_episode_steps is None
        kw = task.kwargs
        assert (kw["decks"], kw["cut_card"], kw["one_shoe"], kw["max_hands"], kw["allow_no_bet"]) == (
            8,
            14,
            True,
            None,
            True,
        )
    discover = tasks.get_task("Discover-v0").kwargs
    assert discover["side_bets"] == ("dragon7", "panda8") and discover["visible_discards"] is True
    assert discover["reward"] == "expected" and discover["stake_levels"] == (1.0,)
    sizing = tasks.get_task("Sizing-v0").kwargs
    assert sizing["reward"] == "log_growth" and sizing["stake_unit"] == "fraction"
    assert tasks.get_task("DiscoverHidden-v0").kwargs["visible_discards"] is False
    assert tasks.get_task("DiscoverMainBets-v0").bets == ("banker", "player", "tie")
    edge_sort = tasks.get_task("DiscoverEdgeSort-v0")
    assert edge_sort.bets == ("banker", "player", "tie")
    assert edge_sort.kwargs["leaks"] == ("first_card_class",)


def test_discover_all_offers_every_catalog_bet():
    # frozen in the task; a bet added to the catalog needs a new version of the task (the suited bets,
    # priced from the cards by suit, are not in this one: its perfect bettor knows the ranks)
    settled_by_rank = tuple(bet.name for bet in catalog.rank_bets())
    assert tasks.ALL_SIDE_BETS == tuple(n for n in settled_by_rank if n not in R.MAIN_BETS)
    assert len(tasks.get_task("DiscoverAll-v0").bets) == 58


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_action_meanings_are_the_envs_actions_and_the_env_checkers_pass(task_id):
    env = gymnasium.make(task_id)
    cfg = env.unwrapped.config
    meanings = tasks.action_meanings(task_id)
    assert env.action_space == gymnasium.spaces.Discrete(len(meanings))
    assert len(meanings) == cfg.n_actions
    levels = cfg.stake_levels
    for action, meaning in enumerate(meanings):
        stakes = np.zeros((1, cfg.n_columns))
        env_actions.decode_actions(cfg, np.array([action]), np.array([cfg.bankroll_units]), stakes)
        if action == 0:
            assert meaning == "no_bet" and not stakes.any()
            continue
        bet, _, level = meaning.partition("@")
        stake = float(level) if level else levels[0]
        assert tasks.action_index(task_id, bet, stake) == action
        expected = stake * (cfg.bankroll_units if cfg.stake_unit == "fraction" else 1.0)
        assert np.flatnonzero(stakes[0]).tolist() == [cfg.bets.column(bet)]
        assert stakes[0, cfg.bets.column(bet)] == pytest.approx(expected)
    check_env(env.unwrapped, skip_render_check=True)
    sb3 = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3.check_env(gymnasium.make(task_id), warn=True)


def test_action_index_names_the_bad_input():
    assert benchmark.action_index("Discover-v0", "no_bet") == 0
    assert benchmark.action_index("pb_gym/Discover-v0", "dragon7") == 4
    assert benchmark.action_index("Sizing-v0", "panda8", 0.016) == 25
    with pytest.raises(ValueError, match="bet='egalite_7' is not offered by pb_gym/Discover-v0"):
        benchmark.action_index("Discover-v0", "egalite_7")
    with pytest.raises(ValueError, match="stake=2 is not a stake level"):
        benchmark.action_index("Discover-v0", "banker", 2)
    with pytest.raises(ValueError, match="task='Discover-v9' is not allowed; allowed: pb_gym/Discover-v0"):
        benchmark.action_index("Discover-v9", "banker")


@pytest.mark.parametrize(
    "task_id,seed",
    [("Discover-v0", 11), ("Discover-v0", 2_000_003), ("DiscoverCatalog-v0", 7), ("DiscoverMainBets-v0", 3)]
    + [("DiscoverEdgeSort-v0", 5)],
)
def test_never_betting_scores_exactly_0_and_the_perfect_bettor_exactly_1(task_id, seed):
    never = benchmark.score(benchmark.never_bet, task_id, tables=8, hands=200, seed=seed)
    assert never["normalized_score"]["estimate"] == 0.0
    assert never["normalized_score"]["ci95"] == [0.0, 0.0]
    assert never["exact_profit_per_hand"]["estimate"] == 0.0 and never["bet_rate"]["estimate"] == 0.0
    perfect = benchmark.score(benchmark.perfect_policy(task_id), task_id, tables=8, hands=200, seed=seed)
    for key in ("hands", "shoes", "perfect_profit_per_hand", "perfect_realized_profit_per_hand"):
        assert perfect[key] == never[key]  # the same held-out hands, whatever the policy does
    if perfect["perfect_bet_rate"]["estimate"] > 0:
        assert perfect["normalized_score"]["estimate"] == 1.0
        assert perfect["normalized_score"]["ci95"] == [1.0, 1.0]
    assert perfect["regret_per_hand"]["estimate"] == 0.0
    assert perfect["exact_profit_per_hand"] == perfect["perfect_profit_per_hand"]
    assert perfect["bet_rate"] == perfect["perfect_bet_rate"]


def test_sizing_scores_log_growth_against_the_best_stake_and_kelly():
    best = benchmark.score(benchmark.perfect_policy("Sizing-v0"), "Sizing-v0", tables=8, hands=200, seed=5)
    assert best["headline"] == "normalized_log_growth"
    assert best["normalized_log_growth"]["estimate"] == 1.0
    assert best["below_minimum_rate"]["estimate"] == 0.0  # it picks only stakes the table takes
    growth = best["log_growth_per_hand"]["estimate"]
    kelly = best["kelly_log_growth_per_hand"]["estimate"]
    assert 0 < growth <= kelly  # continuous Kelly bounds every stake level
    # the profit reference is the one-unit perfect bettor on the starting bankroll: the same whatever
    # the policy (its bankroll no longer moves it), and Discover-v0's on the same hands
    never = benchmark.score(benchmark.never_bet, "Sizing-v0", tables=8, hands=200, seed=5)
    discover = benchmark.score(benchmark.never_bet, "Discover-v0", tables=8, hands=200, seed=5)
    for key in ("perfect_profit_per_hand", "perfect_realized_profit_per_hand", "perfect_bet_rate"):
        assert best[key] == never[key] == discover[key], key
    assert best["normalized_score"]["estimate"] > 1  # it stakes more than one unit where it bets
    flat = benchmark.perfect_policy("Discover-v0")  # the same observation; its action k bets tasks' bet k-1
    smallest = np.array(
        [0] + [benchmark.action_index("Sizing-v0", bet, 0.001) for bet in tasks.get_task("Discover-v0").bets]
    )
    unit = benchmark.score(lambda obs: smallest[flat(obs)], "Sizing-v0", tables=8, hands=200, seed=5)
    # 0.1% of the bankroll on every positive bet: one unit or more while the bankroll is at or above
    # its start, below the table minimum (no bet, counted) once it has lost
    below = unit["below_minimum_rate"]["estimate"]
    assert 0 < below < unit["perfect_bet_rate"]["estimate"]
    assert unit["bet_rate"]["estimate"] + below == pytest.approx(unit["perfect_bet_rate"]["estimate"])
    assert 0 < unit["normalized_log_growth"]["estimate"] < 1
    assert "bets below the table minimum" in benchmark.report(unit)


@pytest.mark.parametrize("task_id", ["DiscoverMainBets-v0", "DiscoverHidden-v0"])
def test_the_controls_are_read_by_their_regret_per_1000_hands(task_id):
    """A control's optimum is about 0 (MainBets) or out of the observation's reach (Hidden), so a
    share of it says nothing: its headline is the regret per 1,000 hands, never betting's beside it."""
    rng = np.random.default_rng(0)
    n = len(benchmark.action_meanings(task_id))
    result = benchmark.score(lambda obs: rng.integers(0, n, len(obs)), task_id, tables=8, hands=100, seed=3)
    assert result["headline"] == benchmark.headline(task_id) == "regret_per_1000_hands"
    regret, per_hand = result["regret_per_1000_hands"], result["regret_per_hand"]
    assert regret["estimate"] == pytest.approx(1000 * per_hand["estimate"])
    assert regret["ci95"] == pytest.approx([1000 * x for x in per_hand["ci95"]])
    floor = result["never_bet_regret_per_1000_hands"]["estimate"]
    assert floor == pytest.approx(1000 * result["perfect_profit_per_hand"]["estimate"])
    assert regret["estimate"] > floor >= 0  # random betting pays the house edge
    lines = benchmark.report(result).splitlines()
    assert lines[1].startswith("regret / 1,000 hands (paired):") and "never betting's" in lines[1]
    never = benchmark.score(benchmark.never_bet, task_id, tables=8, hands=100, seed=3)
    assert never["regret_per_1000_hands"] == never["never_bet_regret_per_1000_hands"]
    assert benchmark.headline("Discover-v0") == "normalized_score"
    assert benchmark.headline("Sizing-v0") == "normalized_log_growth"


def test_a_users_callable_is_scored_with_a_paired_regret():
    task = tasks.get_task("Discover-v0")
    cfg = config.make_config(**task.kwargs)
    start, stop = cfg.obs_offsets["shoe"]
    dragon7 = benchmark.action_index(task, "dragon7")

    def sevens_count(obs):
        """Bet Dragon 7 when few 8s and 9s are left (a crude count)."""
        unseen = obs[:, start:stop] * 32
        eights_nines = unseen[:, 7] + unseen[:, 8]
        return np.where(eights_nines < 0.04 * unseen.sum(axis=1), dragon7, 0)

    result = benchmark.score(sevens_count, task, tables=16, hands=300, seed=1)
    assert 0 < result["bet_rate"]["estimate"] < 1
    regret = result["regret_per_hand"]
    assert regret["estimate"] == pytest.approx(
        result["perfect_profit_per_hand"]["estimate"] - result["exact_profit_per_hand"]["estimate"]
    )
    assert regret["estimate"] > 0 and regret["ci95"][0] > 0  # far from the optimum, and it shows
    assert result["normalized_score"]["estimate"] < 1


@pytest.mark.parametrize(
    "bad,message",
    [
        (lambda o: np.zeros(3, dtype=int), r"actions of shape \(3,\); allowed: \(8,\)"),
        (lambda o: np.full(len(o), 6), "returned action 6; allowed: one integer action 0 .. 5"),
        (lambda o: np.full(len(o), 0.5), "non-integer actions"),
    ],
)
def test_a_bad_policy_is_named(bad, message):
    with pytest.raises(ValueError, match=message):
        benchmark.score(bad, "Discover-v0", tables=8, hands=2)


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="tables=1 is not allowed; allowed: an integer >= 2"):
        benchmark.score(benchmark.never_bet, "Discover-v0", tables=1)
    with pytest.raises(ValueError, match="hides the discards"):
        benchmark.perfect_policy("DiscoverHidden-v0")


def test_pb_gym_bench_reports_the_tasks_expected_reward_beside_the_realized():
    from pb_gym import bench
    from pb_gym.envs.throughput import task_single_env_throughput

    out = bench.task_reward_throughput("Discover-v0", n_envs=16, seconds=0.05)
    assert out["task"] == "pb_gym/Discover-v0" and out["task_n_envs"] == 16
    out.update(task_single_env_throughput(("Discover-v0",), seconds=0.05))  # the single env's
    for rate, ratio in (
        ("task_{}_random_steps_per_s", "task_expected_vs_realized_random"),
        ("task_{}_one_in_8_steps_per_s", "task_expected_vs_realized_one_in_8"),
        ("single_Discover-v0_{}_steps_per_s", "single_Discover-v0_expected_vs_realized"),
    ):
        expected, realized = out[rate.format("expected")], out[rate.format("realized")]
        assert expected > 0 and realized > 0
        assert out[ratio] == pytest.approx(expected / realized)
