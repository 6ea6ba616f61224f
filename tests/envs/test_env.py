"""The single-table Gymnasium environment pb_gym/PuntoBanco-v0."""

import dataclasses
import json
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import pb_gym
from pb_gym import catalog, engine, exact
from pb_gym.envs import PuntoBancoEnv, PuntoBancoVectorEnv
from pb_gym.envs.config import EnvConfig
from pb_gym.rules import BETS, Rules

MODES = ("multidiscrete", "discrete", "box")
RAW = dict(observation="dict", obs_scale="raw", action_mode="multidiscrete")
"""The interface most tests below read: the Dict in raw units and [bet, size] actions (the defaults
are the flat, scaled Box and discrete actions; test_default_observation_is_the_scaled_raw_one ties
the two together)."""


def raw_env(**kwargs) -> PuntoBancoEnv:
    return PuntoBancoEnv(**{**RAW, **kwargs})


def play(env, steps, seed=0, action_seed=1):
    """Random actions; returns the list of (obs, reward, terminated, truncated, info)."""
    env.action_space.seed(action_seed)
    out = [env.reset(seed=seed)]
    for _ in range(steps):
        out.append(env.step(env.action_space.sample()))
        if out[-1][2] or out[-1][3]:
            break
    return out


def test_registered_on_import():
    assert pb_gym.envs.ENV_ID in gym.registry
    env = gym.make("pb_gym/PuntoBanco-v0", decks=6, tie_pays=9)
    assert isinstance(env.unwrapped, PuntoBancoEnv)
    assert env.unwrapped.rules == Rules(decks=6, tie_pays=9)
    venv = gym.make_vec("pb_gym/PuntoBanco-v0", num_envs=3)
    assert isinstance(venv, PuntoBancoVectorEnv) and venv.num_envs == 3


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("observation", ["flat", "dict"])
@pytest.mark.parametrize("scale", ["scaled", "raw"])
def test_gymnasium_checker_is_silent(mode, observation, scale):
    """Gymnasium's checker says nothing but its note on an infinite bound: the bankroll has none
    (``inf``, Gymnasium's convention for an unbounded Box, which ``DtypeObservation`` casts without
    the overflow that float32's maximum gave)."""
    inf_note = "A Box observation space maximum value is infinity. This is probably too high."
    for render_mode in (None, "human", "ansi", "rgb_array"):
        env = gym.make(
            "pb_gym/PuntoBanco-v0",
            action_mode=mode,
            observation=observation,
            obs_scale=scale,
            render_mode=render_mode,
        ).unwrapped
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env)
        assert [str(w.message) for w in caught if inf_note not in str(w.message)] == []
        assert np.isinf(
            env.observation_space["bankroll"].high if observation == "dict" else env.observation_space.high[0]
        )


INF_NOTE = "A Box observation space maximum value is infinity. This is probably too high."


@pytest.mark.parametrize("env_id", sorted(i for i in gym.registry if i.startswith("pb_gym/")))
def test_every_registered_id_bounds_its_observation_where_its_episode_is_bounded(env_id):
    """Gymnasium's checker on the unwrapped env of every registered id: the benchmark's tasks (one shoe
    an episode, or a session's bankroll and hands left) have finite bounds everywhere, so no note on an
    infinite bound; PuntoBanco-v0
    (``max_hands=None``, episodes across shoes: only ``TimeLimit``, outside the env, ends them) has
    exactly two infinite bounds, the bankroll and the episode hands, and the note."""
    env = gym.make(env_id).unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    notes = [str(w.message) for w in caught if INF_NOTE in str(w.message)]
    high = env.observation_space.high
    unbounded = np.flatnonzero(np.isinf(high))
    if env_id in pb_gym.envs.tasks.SESSION_TASKS:  # (bankroll and hands left, each scaled to [0, 1])
        assert np.array_equal(high, np.ones(2, dtype=np.float32)) and notes == []
    elif env_id == pb_gym.envs.ENV_ID:
        offsets = env.config.obs_offsets
        assert unbounded.tolist() == [offsets["bankroll"][0], offsets["hands"][0]] and notes
    else:
        assert unbounded.size == 0 and notes == []
        assert env.config.one_shoe and env.config.max_hands is None
        assert high[env.config.obs_offsets["hands"][0]] == np.float32(104 / 100)  # a shoe's 416 cards / 4


def test_the_bankroll_bound_is_the_most_the_episode_can_win():
    from pb_gym.envs.spaces import bankroll_high, episode_hands_high

    # 100 units, the tie's 8:1 the largest payout, 3 hands at 50% of the bankroll (the table maximum
    # 500 units): 100 -> 100 + 8 x 50 = 500 -> 500 + 8 x 250 = 2500 -> 2500 + 8 x 500 = 6500
    cfg = EnvConfig(side_bets=(), max_hands=3, stake_unit="fraction", stake_levels=(0.5,))
    assert bankroll_high(cfg) == 6500.0 and episode_hands_high(cfg) == 3
    # a constant stake: 25 units a hand for 100 hands; a win target ends the episode first
    assert bankroll_high(EnvConfig(side_bets=())) == 100 + 100 * 8 * 25
    assert bankroll_high(EnvConfig(side_bets=(), win_target=2000)) == 200 + 8 * 25
    # box: every spot at once, together at most the bankroll: 1 -> 9 -> 81 (each spot <= 500 units)
    assert bankroll_high(EnvConfig(side_bets=(), action_mode="box", bankroll=10, max_hands=2)) == 81.0
    # no hand limit, no target, episodes across shoes: nothing bounds it
    assert bankroll_high(EnvConfig(max_hands=None)) == np.inf
    assert episode_hands_high(EnvConfig(max_hands=None, one_shoe=True)) == 104
    # and a policy that always stakes the most on the tie stays inside the space
    env = PuntoBancoEnv(side_bets=(), max_hands=40, stake_unit="fraction", stake_levels=(0.5,))
    obs, _ = env.reset(seed=3)
    tie = env.config.action_index("tie", 0)
    for _ in range(40):
        obs, _, terminated, truncated, _ = env.step(tie)
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            break


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.filterwarnings("ignore:We recommend you to use a symmetric")  # box is [0, 1] by design
def test_sb3_checker(mode):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(PuntoBancoEnv(action_mode=mode))
    sb3_checker.check_env(
        PuntoBancoEnv(action_mode=mode, observation="dict", obs_scale="raw", visible_discards=False)
    )


def test_spaces():
    env = PuntoBancoEnv()  # the defaults: discrete actions, one flat scaled Box
    assert env.action_space == gym.spaces.Discrete(1 + 7 * 5)
    assert env.bet_choices == ("no_bet",) + BETS
    assert env.observation_space.shape == (47,) and env.observation_space.dtype == np.float32
    assert env.config.obs_offsets == {
        "bankroll": (0, 1),
        "bead_plate": (1, 21),
        "cards_left": (21, 22),
        "hands": (22, 24),
        "last_hand": (24, 34),
        "shoe": (34, 47),
    }
    # every feature but the bankroll lies in [0, 1]; the bankroll (x starting bankroll) up to the most
    # 100 hands can win: 25 units a hand at Dragon 7's 40:1 from 100 units
    assert (env.observation_space.low == 0).all() and (env.observation_space.high[1:] == 1).all()
    assert env.observation_space.high[0] == np.float32((100 + 100 * 40 * 25) / 100)
    env = raw_env()
    assert env.action_space == gym.spaces.MultiDiscrete([8, 5])
    assert list(env.observation_space.spaces) == [
        "bankroll",
        "bead_plate",
        "cards_left",
        "hands",
        "last_hand",
        "shoe",
    ]
    assert all(s.dtype == np.float32 for s in env.observation_space.spaces.values())
    np.testing.assert_array_equal(env.observation_space["hands"].high, [100, 104])  # 416 cards / 4
    np.testing.assert_array_equal(env.observation_space["shoe"].high, np.full(13, 32))
    env = raw_env(
        side_bets=("dragon7",), stake_levels=[1, 3], allow_no_bet=False, action_mode="discrete", history=7
    )
    assert env.bet_choices == ("banker", "player", "tie", "dragon7")
    assert env.action_space == gym.spaces.Discrete(4 * 2)
    assert env.observation_space["bead_plate"].shape == (7,)
    env = PuntoBancoEnv(side_bets=(), action_mode="box")
    assert env.action_space == gym.spaces.Box(0, 1, (3,), np.float32)
    assert PuntoBancoEnv(action_mode="discrete").action_space == gym.spaces.Discrete(1 + 7 * 5)
    flat = PuntoBancoEnv(visible_discards=False)
    assert flat.observation_space.shape == (1 + 20 + 1 + 2 + 10,)
    with pytest.raises(TypeError, match="unexpected keyword argument 'flatten_obs'"):
        PuntoBancoEnv(flatten_obs=False)  # the older name of observation= is gone (env.json maps it)


def test_default_observation_is_the_scaled_raw_one():
    """Every entry of the default observation is the raw one divided by the documented bound."""
    kwargs = dict(decks=6, history=9, max_hands=60, bankroll=500, unit=5)
    scaled, raw = PuntoBancoEnv(**kwargs), PuntoBancoEnv(**kwargs, obs_scale="raw")
    bound = np.concatenate(
        [[100.0], np.full(9, 3.0), [312.0], [60.0, 78.0], [1, 1, 1, 9, 9, 3, 3, 1, 1, 1], np.full(13, 24.0)]
    )
    steps = 0
    for (s, *_), (r, *_) in zip(play(scaled, 200, seed=4), play(raw, 200, seed=4), strict=True):
        np.testing.assert_allclose(s, (r / bound).astype(np.float32), rtol=1e-6)
        assert scaled.observation_space.contains(s) and raw.observation_space.contains(r)
        steps += 1
    assert steps == 61  # reset + 60 hands
    assert 0 < s[0] and s[11] == 1.0  # the bankroll is a share of the starting one; 60 of 60 hands
    # the Dict carries the same numbers as views of the flat observation
    d = PuntoBancoEnv(**kwargs, observation="dict")
    obs, _ = d.reset(seed=4)
    first, _ = scaled.reset(seed=4)
    np.testing.assert_array_equal(gym.spaces.flatten(d.observation_space, obs), first)


def test_visible_and_hidden_discards():
    seen = raw_env(visible_discards=True)
    hidden = raw_env(visible_discards=False)
    obs_s, _ = seen.reset(seed=5)
    obs_h, _ = hidden.reset(seed=5)
    assert "shoe" not in obs_h and "shoe" not in hidden.observation_space.spaces
    # after the burn, the unseen counts are the full shoe minus the turned card
    burn_card = seen.tables.shoe.shoe[0, 0]
    expected = np.full(13, 32.0)
    expected[burn_card - 1] -= 1
    np.testing.assert_array_equal(obs_s["shoe"], expected)
    for _ in range(30):
        obs_s, *_, info = seen.step(np.array([0, 0]))
        obs_h, *_ = hidden.step(np.array([0, 0]))
        np.testing.assert_array_equal(obs_s["shoe"], seen.tables.shoe.unseen[0])
        for key in obs_h:
            np.testing.assert_array_equal(obs_s[key], obs_h[key])  # same hands, same other fields
    # the unseen counts exceed the cards left by exactly the face-down burned cards
    burned = int(pb_gym.rules.BURN_COUNTS[burn_card - 1])
    assert obs_s["shoe"].sum() - obs_s["cards_left"][0] == burned


@pytest.mark.parametrize("scale", ["scaled", "raw"])
def test_flat_observation_matches_gymnasium_flatten(scale):
    env = PuntoBancoEnv(observation="dict", obs_scale=scale)
    flat_env = PuntoBancoEnv(observation="flat", obs_scale=scale)
    for (obs, *_), (flat, *_) in zip(play(env, 40, seed=3)[1:], play(flat_env, 40, seed=3)[1:], strict=True):
        np.testing.assert_array_equal(gym.spaces.flatten(env.observation_space, obs), flat)


@pytest.mark.parametrize("mode", MODES)
def test_reward_accounting_against_engine_settle(mode):
    env = raw_env(action_mode=mode, bankroll=2000, max_hands=None, hand_info=True)
    obs, _ = env.reset(seed=11)
    env.action_space.seed(2)
    bankroll = float(obs["bankroll"][0])
    n_bets = 0
    for _ in range(300):
        action = env.action_space.sample()
        if mode == "box":
            action *= 0.01  # modest stakes on several spots at once
        obs, reward, terminated, truncated, info = env.step(action)
        result = env.tables.result
        settled = engine.settle(env.rules, result, info["stakes"][None])[0]
        assert reward == pytest.approx(settled, abs=1e-9)
        assert info["bankroll"] == pytest.approx(bankroll + settled, abs=1e-9)
        assert obs["bankroll"][0] == pytest.approx(np.float32(info["bankroll"]))
        np.testing.assert_array_equal(info["player_cards"], result.player_cards[0])
        assert info["winner"] == result.winner[0]
        assert (info["player_total"], info["banker_total"]) == (
            result.player_total[0],
            result.banker_total[0],
        )
        np.testing.assert_array_equal(obs["last_hand"][3:5], [info["player_total"], info["banker_total"]])
        assert info["stakes"].sum() <= bankroll + 1e-9
        n_bets += info["stakes"].any()
        bankroll = info["bankroll"]
        if terminated:
            break
    assert n_bets > 50


def _stakes(env, action):
    bankroll = env.tables.bankroll.copy()
    env.reset(seed=0)  # an episode that ended (ruin) refuses the step
    env.tables.bankroll[:] = bankroll
    env.step(action)
    return dict(zip(BETS, env.tables.stakes[0], strict=False))  # the seven spots (extras after them)


def test_stake_levels_and_capping():
    env = raw_env(bankroll=100, unit=10, table_min=20, table_max=60, stake_levels=(1, 4, 8, 50))
    env.reset(seed=0)
    env.tables.bankroll[:] = 7.0  # units
    assert _stakes(env, np.array([0, 3]))["banker"] == 0  # no bet
    env.tables.bankroll[:] = 7.0
    assert _stakes(env, np.array([1, 1]))["banker"] == 4  # level in units
    env.tables.bankroll[:] = 7.0
    assert _stakes(env, np.array([3, 2]))["tie"] == 6  # table max (60 / 10)
    env.tables.bankroll[:] = 5.0
    assert _stakes(env, np.array([2, 3]))["player"] == 5  # capped by the bankroll
    env.tables.bankroll[:] = 7.0
    assert sum(_stakes(env, np.array([1, 0])).values()) == 0  # 1 unit < table min (2 units): no bet
    forced = raw_env(bankroll=100, unit=10, table_min=20, stake_levels=(1, 4), allow_no_bet=False)
    forced.reset(seed=0)
    assert _stakes(forced, np.array([0, 0]))["banker"] == 2  # forced: raised to the table minimum
    frac = raw_env(
        bankroll=1000,
        unit=10,
        table_min=10,
        stake_unit="fraction",
        stake_levels=(0.005, 0.1, 1.0),
        max_hands=None,
    )
    frac.reset(seed=0)
    frac.tables.bankroll[:] = 50.0
    assert _stakes(frac, np.array([1, 1]))["banker"] == pytest.approx(5.0)
    frac.tables.bankroll[:] = 50.0
    assert sum(_stakes(frac, np.array([1, 0])).values()) == 0  # 0.25 units < 1 unit minimum


def test_box_stakes():
    env = raw_env(
        action_mode="box",
        bankroll=100,
        unit=1,
        table_min=5,
        table_max=60,
        side_bets=("player_pair",),
        max_hands=None,
    )
    env.reset(seed=0)
    env.tables.bankroll[:] = 100.0
    s = _stakes(env, np.array([0.5, 0.0, 0.02, np.nan], np.float32))
    assert s["banker"] == pytest.approx(30.0) and s["player"] == 0 and s["tie"] == 0  # 1.2 < 5
    assert s["player_pair"] == 0
    env.tables.bankroll[:] = 100.0
    s = _stakes(env, np.array([1.0, 1.0, 0.5, 0.0], np.float32))  # 60 + 60 + 30 > 100: scaled
    assert sum(s.values()) == pytest.approx(100.0)
    assert s["banker"] == pytest.approx(40.0) and s["tie"] == pytest.approx(20.0)
    forced = raw_env(action_mode="box", unit=1, table_min=5, allow_no_bet=False, side_bets=())
    forced.reset(seed=0)
    s = _stakes(forced, np.array([0.0, 0.001, 0.0], np.float32))
    assert s["player"] == 5 and s["banker"] == 0


def test_ruin_terminates():
    env = raw_env(bankroll=50, unit=10, table_min=10, stake_levels=(1,), max_hands=None)
    env.reset(seed=4)
    for _hand in range(10_000):
        obs, reward, terminated, truncated, info = env.step(np.array([3, 0]))  # the tie: loses fast
        assert terminated == (info["bankroll"] < 1.0)
        assert not truncated
        if terminated:
            break
    assert terminated and obs["bankroll"][0] < 1.0


def test_win_target_terminates():
    env = raw_env(bankroll=100, unit=10, table_min=10, win_target=130, stake_levels=(1,), max_hands=None)
    env.reset(seed=9)
    for _hand in range(10_000):
        obs, reward, terminated, truncated, info = env.step(np.array([2, 0]))
        assert terminated == (info["bankroll"] >= 13.0 or info["bankroll"] < 1.0)
        if terminated:
            break
    assert terminated


def test_hand_limit_and_one_shoe_truncate():
    env = raw_env(max_hands=7)
    steps = play(env, 100)
    assert len(steps) == 8 and steps[-1][3] and steps[-1][0]["hands"][0] == 7
    env = raw_env(one_shoe=True, max_hands=None, decks=1, cut_card=16)
    obs, _ = env.reset(seed=1)
    hands = 0
    while True:
        obs, r, terminated, truncated, info = env.step(np.array([0, 0]))
        hands += 1
        assert not info["shuffled"]
        if truncated:
            break
    shoe = env.tables.shoe
    assert shoe.position[0] >= shoe.cut_position and obs["hands"][1] == hands
    # the episode ended: a step is an error (Gymnasium's convention), not a silent hand or zero reward
    with pytest.raises(
        ResetNeeded, match=r"after the episode ended \(terminated or truncated\): call env.reset"
    ):
        env.step(np.array([0, 0]))
    env.reset()  # a new episode, a new shoe
    assert env.step(np.array([0, 0]))[0]["hands"].tolist() == [1, 1]


def test_bead_plate_and_last_hand():
    env = raw_env(history=5, max_hands=None)
    winners = []
    obs, _ = env.reset(seed=2)
    assert not obs["bead_plate"].any() and not obs["last_hand"].any()
    for _ in range(8):
        obs, _, _, _, info = env.step(np.array([0, 0]))
        winners.append(int(info["winner"]))
        np.testing.assert_array_equal(obs["last_hand"][:3], np.eye(3)[info["winner"]])
    np.testing.assert_array_equal(obs["bead_plate"], np.array(winners[::-1][:5]) + 1)


def test_seeding_is_reproducible():
    a = play(raw_env(), 50, seed=42)
    b = play(raw_env(), 50, seed=42)
    c = play(raw_env(), 50, seed=43)
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            assert gym.utils.env_checker.data_equivalence(u, v)
    assert not all(np.array_equal(x[0]["shoe"], y[0]["shoe"]) for x, y in zip(a, c, strict=True))
    # reset() without a seed continues the table's stream: a new shoe, not the same one again
    env = raw_env()
    first, _ = env.reset(seed=42)
    first_shoe = env.tables.shoe.shoe[0].copy()
    env.step(np.array([0, 0]))
    env.reset()
    assert not np.array_equal(env.tables.shoe.shoe[0], first_shoe)
    env2 = raw_env()
    env2.reset(seed=42)
    assert np.array_equal(env2.reset(seed=42)[0]["shoe"], first["shoe"])


def test_info_ev_is_the_exact_ev_before_the_hand():
    env = raw_env(info_ev=True, max_hands=None, decks=1, cut_card=20)
    obs, _ = env.reset(seed=8)
    checked = 0
    for _ in range(60):
        prev = obs["shoe"].astype(np.int64)
        obs, _, _, _, info = env.step(np.array([0, 0]))
        if not info["shuffled"]:
            np.testing.assert_allclose(info["ev"], exact.expected_values(prev, env.rules))
            checked += 1
        else:  # a new shoe: the composition after the burn card, before this hand
            comp = obs["shoe"].astype(np.int64)
            for c in np.concatenate([info["player_cards"], info["banker_cards"]]):
                if c:
                    comp[c - 1] += 1
            np.testing.assert_allclose(info["ev"], exact.expected_values(comp, env.rules))
    assert checked > 40


def test_action_masks():
    env = raw_env(bankroll=100, unit=10, table_min=20, table_max=50, stake_levels=(1, 2, 5, 10))
    env.reset(seed=0)
    np.testing.assert_array_equal(env.action_masks(), [True] * 8 + [False, True, True, False])
    env.tables.bankroll[:] = 3.0
    np.testing.assert_array_equal(env.action_masks()[8:], [False, True, False, False])
    env.tables.bankroll[:] = 1.0  # ruined: only "no bet"
    np.testing.assert_array_equal(env.action_masks()[:8], [True] + [False] * 7)
    d = raw_env(action_mode="discrete", allow_no_bet=False, side_bets=(), stake_levels=(1, 200))
    d.reset(seed=0)
    np.testing.assert_array_equal(d.action_masks(), [True, False] * 3)
    with pytest.raises(ValueError, match="action masks exist for"):
        raw_env(action_mode="box").action_masks()


def test_render():
    env = raw_env(render_mode="ansi")
    env.reset(seed=3)
    assert "no hand dealt yet" in env.render()
    _, _, _, _, info = env.step(np.array([1, 0]))
    text = env.render()
    assert "Player:" in text and "Banker:" in text and "Bead plate (1 hand)" in text and "Big Road" in text
    assert f"= {info['player_total']}" in text and "banker 1" in text
    img_env = raw_env(render_mode="rgb_array")
    img_env.reset(seed=3)
    before = img_env.render()
    img_env.step(np.array([1, 0]))
    after = img_env.render()
    assert after.dtype == np.uint8 and after.ndim == 3 and after.shape[2] == 3
    assert not np.array_equal(before, after)
    assert PuntoBancoEnv().render() is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (
            {"action_mode": "continuous"},
            "action_mode='continuous' is not allowed; allowed: discrete, multidiscrete, box",
        ),
        ({"observation": "image"}, "observation='image' is not allowed; allowed: flat, dict"),
        ({"obs_scale": "normalized"}, "obs_scale='normalized' is not allowed; allowed: scaled, raw"),
        ({"decks": 9}, r"Rules.decks=9 is not allowed"),
        ({"tie_pays": 7}, r"Rules.tie_pays=7"),
        (
            {"side_bets": ("lucky7",)},
            r"side_bets: unknown bet 'lucky7'; allowed: player_pair, banker_pair, "
            r"dragon7, panda8, dragon_bonus_player, .*, lucky6,",
        ),
        ({"rules": Rules(), "decks": 6}, "pass either rules=Rules"),
        ({"bankroll": 5, "table_min": 10}, r"bankroll=5 is not allowed; allowed: a number >= table_min"),
        ({"table_max": 5}, r"table_max=5 is not allowed"),
        ({"unit": 0}, r"unit=0 is not allowed; allowed: a positive number"),
        ({"win_target": 900}, r"win_target=900 is not allowed; allowed: None or a number > bankroll"),
        ({"max_hands": 0}, r"max_hands=0 is not allowed"),
        ({"history": 2.5}, r"history=2.5 is not allowed"),
        ({"stake_levels": (2, 1)}, r"stake_levels=\(2, 1\) is not allowed; allowed: increasing"),
        ({"stake_unit": "fraction", "stake_levels": (0.5, 2)}, r"fractions of the bankroll in \(0, 1\]"),
        ({"stake_unit": "percent"}, "stake_unit='percent' is not allowed; allowed: units, fraction"),
        ({"visible_discards": "yes"}, "visible_discards='yes' is not allowed; allowed: True or False"),
        ({"render_mode": "console"}, "render_mode='console' is not allowed; allowed: None, human, ansi"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PuntoBancoEnv(**kwargs)
    if "render_mode" not in kwargs:  # gymnasium.make wraps unknown render modes itself
        with pytest.raises(ValueError, match=match):
            gym.make("pb_gym/PuntoBanco-v0", **kwargs)


def test_bad_actions():
    env = raw_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action \[8, 0\] \(table 0\) is out of range; allowed"):
        env.step(np.array([8, 0]))
    with pytest.raises(ValueError, match=r"multidiscrete actions must have shape \(1, 2\)"):
        env.step(np.array([1, 0, 0]))
    d = raw_env(action_mode="discrete")
    d.reset(seed=0)
    with pytest.raises(ValueError, match=r"action 36 \(table 0\) is out of range; allowed: 0..35"):
        d.step(36)
    b = raw_env(action_mode="box")
    b.reset(seed=0)
    with pytest.raises(ValueError, match=r"box actions must have shape \(1, 7\)"):
        b.step(np.zeros(3, np.float32))


def test_copies_pickles_and_replaced_state_step_as_the_original():
    """The single env keeps its compiled step's arguments (stepping.StepState): a copy, a pickle and a
    replaced shoe state must still step their own arrays."""
    import copy
    import pickle

    env = PuntoBancoEnv()
    env.reset(seed=3)
    env.step(1)
    twin = copy.deepcopy(env)
    third = pickle.loads(pickle.dumps(env))

    def run(e):
        out = []
        for a in range(40):
            step = e.step(a % env.action_space.n)
            out.append(step[:2])
            if step[2] or step[3]:
                e.reset()
        return out

    steps = [run(e) for e in (env, twin, third)]
    for other in steps[1:]:
        for (obs_a, r_a), (obs_b, r_b) in zip(steps[0], other, strict=True):
            np.testing.assert_array_equal(obs_a, obs_b)
            assert r_a == r_b
    assert twin.session.seats.bankroll is not env.session.seats.bankroll
    # a replaced shoe state: the next step deals from it, not from the old arrays
    fresh = PuntoBancoEnv()
    fresh.reset(seed=11)
    env.tables.shoe = fresh.session.shoe.copy()
    info = env.step(1)[4]
    assert info["player_cards"].tolist() == fresh.step(1)[4]["player_cards"].tolist()


def test_info_arrays_are_read_only_and_deep_copies_share_only_them():
    """The info's arrays are read-only (the env never changes them after a step), so a deep copy (SB3's
    DummyVecEnv makes one at every step) is a new dict that shares them; anything else that can change
    (a wrapper's list, a writeable array, a read-only view of writeable memory) is deep-copied."""
    import copy
    import pickle

    env = PuntoBancoEnv(info_ev=True, max_hands=None)
    env.reset(seed=3)
    info = env.step(1)[4]
    for key in ("player_cards", "banker_cards", "stakes", "ev"):
        assert not info[key].flags.writeable, key
        with pytest.raises(ValueError, match="read-only"):
            info[key][0] = 1
    writeable = np.zeros(3)
    read_only_view = writeable[:2]
    read_only_view.flags.writeable = False
    info.update(episode={"r": 1.0, "l": [1]}, terminal_observation=np.ones(2), view=read_only_view)
    twin = copy.deepcopy(info)
    assert type(twin) is type(info) and twin is not info and twin.keys() == info.keys()
    for key in ("player_cards", "banker_cards", "stakes", "ev"):
        assert twin[key] is info[key]
    for key in ("episode", "terminal_observation", "view"):
        assert twin[key] is not info[key]
    assert twin["episode"]["l"] is not info["episode"]["l"] and twin["episode"] == info["episode"]
    writeable[0] = 5.0
    assert twin["view"][0] == 0.0 and info["view"][0] == 5.0
    twin["winner"] = 99  # an independent dict: Monitor and DummyVecEnv add keys to it
    twin.pop("stakes")
    assert info["winner"] != 99 and "stakes" in info
    pickled = pickle.loads(pickle.dumps(info))
    assert type(pickled) is type(info) and pickled.keys() == info.keys()
    for key, value in info.items():
        np.testing.assert_equal(pickled[key], value)


def test_signatures_are_the_config_fields():
    """Both envs' signatures list the configuration's keywords, made from EnvConfig's (help(), IDEs
    and inspect.signature show them): the same names, order and defaults, keyword-only; the vector
    env's one difference is hand_info=False (minimal infos for a batch)."""
    import inspect

    config = inspect.signature(EnvConfig).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in config.values())
    expected = [(name, p.default) for name, p in config.items()]
    single = inspect.signature(PuntoBancoEnv).parameters
    assert list(single)[:2] == ["render_mode", "config"]
    assert [(n, p.default) for n, p in single.items()][2:] == expected
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(single.values())[1:])
    vector = inspect.signature(PuntoBancoVectorEnv).parameters
    assert list(vector)[:5] == ["num_envs", "autoreset_mode", "max_episode_steps", "render_mode", "config"]
    assert [(n, p.default) for n, p in vector.items()][5:] == [
        (n, False if n == "hand_info" else d) for n, d in expected
    ]
    assert len(expected) == 33 and "flatten_obs" not in config and "extra_bets" not in config


def test_an_env_takes_one_config_object_or_its_keywords():
    """The same EnvConfig builds either env; given with keywords as well it is refused (which would
    win is not obvious), as is anything but an EnvConfig."""
    config = EnvConfig(decks=6, bankroll=500.0, hand_info=False)
    single, vector = PuntoBancoEnv(config=config), PuntoBancoVectorEnv(2, config=config)
    assert single.config is config and vector.config is config
    assert PuntoBancoEnv(decks=6, bankroll=500.0, hand_info=False).config == config
    with pytest.raises(TypeError, match=r"give config or its keywords, not both \(got config and decks\)"):
        PuntoBancoEnv(config=config, decks=8)
    with pytest.raises(TypeError, match=r"config must be an EnvConfig \(got dict\)"):
        PuntoBancoVectorEnv(2, config={"decks": 6})


@pytest.mark.parametrize("cls", [PuntoBancoEnv, PuntoBancoVectorEnv, EnvConfig])
def test_an_unknown_keyword_is_a_type_error(cls):
    """As for any Python callable (TorchRL's GymEnv passes a keyword and falls back on TypeError)."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        cls(colour="red")
    with pytest.raises(TypeError, match="unexpected keyword argument 'custom_bets'"):
        cls(custom_bets=[])


def test_spec_round_trips_through_json_and_pickle_with_rules():
    """env.spec holds every argument, a Rules object included: EnvSpec.to_json writes the Rules as a
    dict of its fields (dataclasses.asdict), which the config takes back."""
    import pickle

    from gymnasium.envs.registration import EnvSpec

    rules = Rules(decks=6, tie_pays=9, side_bets=("dragon7",), cut_card=0.75)
    env = gym.make(
        "pb_gym/PuntoBanco-v0", rules=rules, side_bets=("dragon7", "big"), bankroll=500, stake_levels=(1, 3)
    )
    spec = env.spec
    back = EnvSpec.from_json(spec.to_json())
    assert back.kwargs["rules"] == {**dataclasses.asdict(rules), "side_bets": ["dragon7"]}
    for again in (gym.make(back), gym.make(pickle.loads(pickle.dumps(spec)))):
        assert again.unwrapped.config == env.unwrapped.config
        assert again.unwrapped.rules == rules and again.unwrapped.config.side_bets == ("dragon7", "big")
    assert gym.make(back).reset(seed=4)[0].tolist() == env.reset(seed=4)[0].tolist()
    # a dict of the rules' fields is the rules (as JSON gives them back)
    assert EnvConfig(rules=json.loads(json.dumps(dataclasses.asdict(rules)))).rules == rules
    with pytest.raises(
        ValueError,
        match=r"rules=\{'decks': 6, 'colour': 'red'\} is not allowed; allowed: a pb_gym.Rules or a dict",
    ):
        EnvConfig(rules={"decks": 6, "colour": "red"})


def test_spec_round_trips_a_user_bet_object_through_json():
    """A catalog.Bet given to gym.make comes back from EnvSpec.to_json (which writes it with
    dataclasses.asdict, its rows' conditions as field/values pairs) as the same bet, and settles alike."""
    from gymnasium.envs.registration import EnvSpec

    bet = catalog.bet_from_dict(
        {
            "name": "my_tie_on_7",
            "source": "a layout",
            "rows": [{"when": {"winner": "tie", "player_total": 7}, "pays": 45}],
        }
    )
    env = gym.make("pb_gym/PuntoBanco-v0", side_bets=[bet, "dragon7"])
    back = gym.make(EnvSpec.from_json(env.spec.to_json()))
    assert back.unwrapped.config == env.unwrapped.config
    assert back.unwrapped.config.side_bets == ("dragon7", bet)
    assert back.reset(seed=3)[0].tolist() == env.reset(seed=3)[0].tolist()


def test_action_index_and_describe_action():
    env = PuntoBancoEnv(side_bets=("dragon7",), stake_levels=(1, 5, 25))
    assert env.bet_choices == ("no_bet", "banker", "player", "tie", "dragon7")
    assert env.action_index("no_bet") == 0
    assert env.action_index("banker", 0) == 1 and env.action_index("player", 2) == 6
    assert env.action_index("dragon7", 2) == env.action_space.n - 1 == 12
    assert [env.describe_action(i) for i in (0, 1, 6, 12)] == [
        ("no_bet", 0.0),
        ("banker", 1.0),
        ("player", 25.0),
        ("dragon7", 25.0),
    ]
    assert all(env.action_index(*_name_level(env, i)) == i for i in range(env.action_space.n))
    env.reset(seed=1)
    env.step(env.action_index("tie", 1))
    assert dict(zip(BETS, env.tables.stakes[0], strict=False))["tie"] == 5
    forced = PuntoBancoEnv(allow_no_bet=False, stake_levels=(1, 2))
    assert forced.action_index("banker", 1) == 1 and forced.describe_action(0) == ("banker", 1.0)
    with pytest.raises(
        ValueError, match="bet='panda8' is not allowed; allowed: no_bet, banker, player, tie, dragon7"
    ):
        env.action_index("panda8")
    with pytest.raises(ValueError, match=r"stake_level=3 is not allowed; allowed: an integer in 0..2"):
        env.action_index("banker", 3)
    with pytest.raises(ValueError, match=r"index=13 is not allowed; allowed: an integer in 0..12"):
        env.describe_action(13)


def _name_level(env, index):
    bet, level = env.describe_action(index)
    return bet, (0 if bet == "no_bet" else env.config.stake_levels.index(level))


def test_episode_hands_feature_scale_is_documented():
    """Without max_hands of its own (gymnasium.make's TimeLimit ends episodes) the episode-hands
    feature is hands / 100 (HANDS_SCALE) and passes 1 after 100 hands: its bound is inf, not 1."""
    env = gym.make("pb_gym/PuntoBanco-v0", max_episode_steps=300, bankroll=100_000, table_max=100_000)
    a, _ = env.unwrapped.config.obs_offsets["hands"]
    assert env.observation_space.high[a] == np.inf
    env.reset(seed=0)
    for _ in range(250):
        obs = env.step(0)[0]
    assert obs[a] == pytest.approx(2.5)
    bounded = PuntoBancoEnv(max_hands=300)
    assert bounded.observation_space.high[a] == 1.0
