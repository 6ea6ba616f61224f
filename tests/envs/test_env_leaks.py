"""The env's ``leaks`` option: what each leak shows, its validation, and the exact EVs given it."""

import numpy as np
import pytest

from pb_gym import benchmark, engine, exact, known_cards
from pb_gym import rules as R
from pb_gym.envs import config as env_config
from pb_gym.envs import leaks
from pb_gym.envs.punto_banco import PuntoBancoEnv
from pb_gym.envs.vector import PuntoBancoVectorEnv

from repo_paths import ROOT  # noqa: E402

ALL = ("first_card_class", "burn_card", "bottom_card")


def test_no_leak_by_default_and_the_observation_is_unchanged():
    cfg = env_config.make_config()
    assert cfg.leaks == () and "leak" not in cfg.obs_keys and cfg.obs_size == 47
    leaky = env_config.make_config(leaks=["bottom_card", "first_card_class"])
    assert leaky.leaks == ("first_card_class", "bottom_card")  # canonical order
    assert leaky.obs_sizes["leak"] == 15 and leaky.obs_size == cfg.obs_size + 15
    assert env_config.EnvConfig.from_record(leaky.record()) == leaky


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (
            dict(leaks=["first_card"]),
            "leaks=\\['first_card'\\] is not allowed; allowed: a list drawn from "
            "first_card_class, burn_card, bottom_card",
        ),
        (dict(leaks=["burn_card", "burn_card"]), "each at most once"),
        (dict(leaks=7), "leaks=7 is not allowed"),
        (dict(leaks=["first_card_class"], side_bets=["egalite_0"]), "only with the seven spots"),
        (
            dict(leaks=["first_card_class"], reward="log_growth", stake_unit="fraction", stake_levels=[0.01]),
            "not log_growth",
        ),
    ],
)
def test_a_bad_leak_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        env_config.make_config(**kwargs)


def test_the_leak_features_show_the_shoe_and_nothing_for_a_shoe_not_yet_shuffled():
    env = PuntoBancoVectorEnv(64, leaks=ALL, obs_scale="raw", history=1, max_hands=None)
    cfg = env.config
    obs, _ = env.reset(seed=3)
    a, _ = cfg.obs_offsets["leak"]
    seen_over = 0
    for _ in range(120):
        shoe = env.tables.shoe
        over = engine.shoe_over(cfg.rules, shoe)
        seen_over += int(over.sum())
        first = shoe.shoe[np.arange(64), np.minimum(shoe.position, cfg.rules.n_cards - 1)]
        high = np.isin(first, [6, 7, 8, 9])
        leak = obs[:, a:]
        np.testing.assert_array_equal(leak[:, 0], np.where(over, 0, high))
        np.testing.assert_array_equal(leak[:, 1], np.where(over, 0, ~high))
        burned = np.where(over[:, None], 0, shoe.unseen - shoe.counts)
        np.testing.assert_array_equal(leak[:, 2:15], burned)
        bottom = np.where(over[:, None], 0, np.eye(13)[shoe.shoe[:, -1] - 1])
        np.testing.assert_array_equal(leak[:, 15:28], bottom)
        # the perfect bettor reads back what the kernel wrote
        back, direct = leaks.from_obs(cfg, obs), leaks.before_hand(cfg, shoe)
        for name in ("first_class", "burned", "bottom"):
            np.testing.assert_array_equal(getattr(back, name), getattr(direct, name))
        obs, *_ = env.step(np.zeros(64, dtype=np.int64))
    assert seen_over > 0  # some tables reached the cut card: the zeros were checked too
    assert (obs[:, a + 2 : a + 15].sum(axis=1) > 0).any()  # burned cards were shown


def test_the_first_card_class_evs_are_known_cards_given_the_class():
    rng = np.random.default_rng(4)
    comp = R.full_shoe(8) - rng.integers(0, 14, 13)
    probability, ev = known_cards.first_card_class_values(comp)
    high = known_cards.FIRST_CARD_HIGH_RANKS
    low = [r for r in range(13) if r not in high]
    np.testing.assert_allclose(ev[1], known_cards.expected_values(comp, {1: high}), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ev[0], known_cards.expected_values(comp, {1: low}), rtol=0, atol=1e-12)
    assert probability == pytest.approx(known_cards.known_probability(comp, {1: high}), abs=1e-15)
    mixed = probability * ev[1] + (1 - probability) * ev[0]
    np.testing.assert_allclose(mixed, exact.expected_values(comp), rtol=0, atol=1e-14)
    # the published figure: a fresh 8-deck shoe, the best main bet when positive is worth 6.765% a hand
    p, fresh = known_cards.first_card_class_values(R.full_shoe(8))
    edge = p * max(fresh[1, :3].max(), 0) + (1 - p) * max(fresh[0, :3].max(), 0)
    assert round(100 * edge, 3) == 6.765
    with pytest.raises(ValueError, match="whole values"):
        known_cards.first_card_class_values(comp, high_ranks=(9,))


def test_the_expected_reward_is_the_ev_given_the_leak():
    env = PuntoBancoEnv(leaks=("first_card_class",), side_bets=(), reward="expected", info_ev=True, history=1)
    obs, _ = env.reset(seed=8)
    cfg = env.config
    banker = cfg.action_index("banker")
    shoe = env.tables.shoe
    for _ in range(30):
        before = leaks.expected_values(
            cfg, engine.next_hand_composition(cfg.rules, shoe), leaks.before_hand(cfg, shoe)
        )
        obs, reward, *_, info = env.step(banker)
        assert reward == pytest.approx(before[0, 0], abs=1e-12)
        np.testing.assert_allclose(info["ev"], before[0], atol=1e-12)


def test_burn_and_bottom_leaks_price_the_shoe_less_the_cards_shown():
    task = dict(benchmark.get_task("DiscoverMainBets-v0").kwargs, leaks=("burn_card", "bottom_card"))
    deal = benchmark.Deal(task, 16, 9, ["x"])
    for _ in range(5):
        composition, ev, _ = deal.before()
        shoe = deal.env.tables.shoe
        truth = shoe.counts.astype(np.int64).copy()
        truth[np.arange(16), shoe.shoe[:, -1] - 1] -= 1
        over = engine.shoe_over(deal.cfg.rules, shoe)
        np.testing.assert_array_equal(composition[~over], truth[~over])
        np.testing.assert_allclose(ev[~over], exact.expected_values(truth[~over]), atol=1e-15)
        deal.step(np.zeros(16, dtype=np.int64))
    deal.totals()


def test_the_edge_sort_training_plumbing(tmp_path):
    """discover-edgesort-smoke.yaml (seconds of PPO; far too short to learn): the leak reaches the
    saved env, the model's observation and the leak-aware scoring, whose perfect bettor earns the edge
    sorter's edge (about +0.069 a hand on the first hands of fresh shoes) where a main-bets table
    without the leak offers almost nothing."""
    pytest.importorskip("stable_baselines3")
    import json

    from pb_gym.experiments import train

    config = ROOT / "configs" / "train" / "discover-edgesort-smoke.yaml"
    result = train.main(str(config), out=str(tmp_path), as_json=True)
    meta = json.loads((tmp_path / "env.json").read_text())
    assert meta["env_kwargs"]["leaks"] == ["first_card_class"]
    perfect = result["discovery"]["systems"]["perfect"]
    assert perfect["exact_profit_per_hand"]["ci95"][0] > 0.05
    assert perfect["bet_rate"]["estimate"] > 0.95
