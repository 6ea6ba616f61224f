"""The native vector environment: parity with single envs, autoreset modes, memory, seeding, speed."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.utils.passive_env_checker import data_shares_objects
from gymnasium.vector import AutoresetMode

from pb_gym import engine
from pb_gym.envs import PuntoBancoEnv, PuntoBancoVectorEnv
from pb_gym.envs.throughput import vector_env_throughput

# small bankrolls and a hand limit so that ruin, win target and truncation all happen
SETTINGS = dict(bankroll=60, unit=10, table_min=10, win_target=100, max_hands=25, hand_info=True)
RAW = dict(observation="dict", obs_scale="raw", action_mode="multidiscrete")
"""The Dict in raw units and [bet, size] actions, which several tests read (the defaults are the flat
scaled Box and discrete actions)."""


def random_actions(space, rng, n, mode):
    if mode == "multidiscrete":
        return np.stack([rng.integers(0, space.nvec) for _ in range(n)])
    if mode == "discrete":
        return rng.integers(0, space.n, size=n)
    return (rng.random((n, space.shape[0])) * 0.3).astype(np.float32)


_EXACT = dict(info_ev=True, bankroll=1000, win_target=None, max_hands=40)  # bets on most hands
EXACT_REWARDS = {  # exact rewards and EVs: the exact odds' product is row by row, not BLAS's, whose
    # rounding depends on the batch (before, about one reward in ten differed in the last bits)
    "expected": dict(_EXACT, reward="expected", side_bets=("dragon7", "panda8")),
    "expected_catalog": dict(_EXACT, reward="expected", side_bets=("egalite_7", "three_giving_eight")),
    "log_growth": dict(_EXACT, reward="log_growth", side_bets=("dragon7", "panda8")),
}


@pytest.mark.parametrize(
    "mode,exact",
    [
        ("multidiscrete", None),
        ("discrete", None),
        ("box", None),
        ("discrete", "expected"),
        ("discrete", "expected_catalog"),
        ("discrete", "log_growth"),
        ("box", "log_growth"),  # several stakes a hand: sums of several terms
    ],
)
def test_parity_with_single_envs_next_step(mode, exact):
    """Every table of the vector env is, bit for bit, the single env seeded as it: observations,
    rewards (realized or exact), ends and every info entry (the exact EVs included)."""
    n, seed = 5, 100
    settings = dict(SETTINGS, **EXACT_REWARDS.get(exact, {}))
    venv = PuntoBancoVectorEnv(n, action_mode=mode, observation="dict", **settings)
    envs = [PuntoBancoEnv(action_mode=mode, observation="dict", **settings) for _ in range(n)]
    vobs, _ = venv.reset(seed=seed)
    singles = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    for i in range(n):
        assert data_equivalence({k: v[i] for k, v in vobs.items()}, singles[i], exact=True)
    rng = np.random.default_rng(0)
    done = np.zeros(n, bool)
    episodes = rewarded = 0
    for _ in range(200):
        actions = random_actions(envs[0].action_space, rng, n, mode)
        vobs, vrew, vterm, vtrunc, vinfo = venv.step(actions)
        for i, env in enumerate(envs):
            if done[i]:  # NEXT_STEP: this step resets the table, the action is ignored
                obs, info = env.reset()
                rew, term, trunc = 0.0, False, False
                assert not vinfo["_winner"][i]
            else:
                obs, rew, term, trunc, info = env.step(actions[i])
                assert vinfo["_winner"][i]
                for key, value in info.items():
                    # the single env gives Python scalars (cheap), the vector env batched arrays
                    single = np.asarray(value, dtype=vinfo[key].dtype)
                    assert data_equivalence(
                        vinfo[key][i], single[()] if single.ndim == 0 else single, exact=True
                    ), key
            assert data_equivalence({k: v[i] for k, v in vobs.items()}, obs, exact=True)
            assert (vrew[i], vterm[i], vtrunc[i]) == (rew, term, trunc)
            rewarded += rew != 0.0
            done[i] = term or trunc
        episodes += done.sum()
    assert episodes > 20 and vterm.dtype == np.bool_ and vrew.dtype == np.float64
    if exact:
        assert rewarded > 150  # exact rewards of placed bets, not only zeros


def test_parity_same_step_final_obs():
    n, seed = 4, 7
    venv = PuntoBancoVectorEnv(n, autoreset_mode=AutoresetMode.SAME_STEP, **SETTINGS)  # flat, scaled
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    envs = [PuntoBancoEnv(**SETTINGS) for _ in range(n)]
    venv.reset(seed=seed)
    for i, env in enumerate(envs):
        env.reset(seed=seed + i)
    rng = np.random.default_rng(1)
    finals = 0
    for _ in range(150):
        actions = random_actions(envs[0].action_space, rng, n, "discrete")
        vobs, vrew, vterm, vtrunc, vinfo = venv.step(actions)
        for i, env in enumerate(envs):
            obs, rew, term, trunc, info = env.step(actions[i])
            assert (vrew[i], vterm[i], vtrunc[i]) == (rew, term, trunc)
            if term or trunc:
                finals += 1
                assert vinfo["_final_obs"][i] and vinfo["_final_info"][i]
                np.testing.assert_array_equal(vinfo["final_obs"][i], obs)
                assert vinfo["final_info"]["winner"][i] == info["winner"]
                obs, _ = env.reset()
            else:
                assert "final_obs" not in vinfo or not vinfo["_final_obs"][i]
            np.testing.assert_array_equal(vobs[i], obs)
    assert finals > 10


def test_make_vec_returns_native_env_and_passes_max_episode_steps():
    venv = gym.make_vec("pb_gym/PuntoBanco-v0", num_envs=8, max_episode_steps=3)
    assert isinstance(venv, PuntoBancoVectorEnv) and venv.max_hands == 3
    assert venv.config.max_hands is None  # the limit is make_vec's max_episode_steps
    assert venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    venv.reset(seed=0)
    for _ in range(2):
        _, _, _, trunc, _ = venv.step(np.zeros(8, np.int64))
        assert not trunc.any()
    _, _, _, trunc, _ = venv.step(np.zeros(8, np.int64))
    assert trunc.all()
    assert venv.observation_space.shape == (8, 47)
    assert venv.action_space == gym.spaces.MultiDiscrete(np.full(8, 36))
    # the registered limit by default; the env's own max_hands, if given, also applies
    assert gym.make_vec("pb_gym/PuntoBanco-v0", num_envs=2).max_hands == 100
    assert gym.make_vec("pb_gym/PuntoBanco-v0", num_envs=2, max_hands=40).max_hands == 40


def test_returned_data_is_never_reused():
    venv = PuntoBancoVectorEnv(
        6,
        info_ev=True,
        hand_info=True,
        max_hands=2,
        autoreset_mode=AutoresetMode.SAME_STEP,
        observation="dict",
    )
    prev = venv.reset(seed=0)
    prev_info = {}
    for _ in range(6):
        out = venv.step(venv.action_space.sample())
        assert not data_shares_objects(prev[0], out[0])
        assert not data_shares_objects(prev_info, out[4])
        for a, b in zip(prev[1:] if len(prev) == 5 else (), out[1:4], strict=False):
            assert not np.shares_memory(a, b)
        prev, prev_info = out, out[4]
    # internal state is not exposed either
    assert not np.shares_memory(out[0]["shoe"], venv.tables.shoe.unseen)
    assert not np.shares_memory(out[4]["stakes"], venv.tables.stakes)


def test_reward_accounting_batched():
    venv = PuntoBancoVectorEnv(64, hand_info=True, max_hands=None, bankroll=10_000)
    venv.reset(seed=3)
    bankroll = venv.bankroll
    for _ in range(50):
        obs, reward, term, trunc, info = venv.step(venv.action_space.sample())
        settled = engine.settle(venv.config.rules, venv.tables.result, info["stakes"])
        np.testing.assert_allclose(reward, settled, atol=1e-9)
        np.testing.assert_allclose(info["bankroll"], bankroll + settled, atol=1e-9)
        bankroll = info["bankroll"]


def test_seeding_and_reset_mask():
    venv = PuntoBancoVectorEnv(3, autoreset_mode=AutoresetMode.DISABLED, **RAW)
    a, _ = venv.reset(seed=11)
    for _ in range(5):
        venv.step(np.ones((3, 2), np.int64))
    b, _ = venv.reset(seed=11)
    assert data_equivalence(a, b, exact=True)
    c, _ = venv.reset(seed=[11, 12, 99])
    np.testing.assert_array_equal(c["shoe"][:2], a["shoe"][:2])
    assert not np.array_equal(c["shoe"][2], a["shoe"][2])
    for _ in range(5):
        venv.step(np.ones((3, 2), np.int64))
    mask = np.array([False, True, False])
    d, _ = venv.reset(options={"reset_mask": mask})
    assert d["hands"][1, 0] == 0 and d["hands"][0, 0] == 5 and d["hands"][2, 0] == 5
    with pytest.raises(ValueError, match=r"reset_mask'\] must be a bool array of shape \(3,\)"):
        venv.reset(options={"reset_mask": [1, 0, 1]})
    with pytest.raises(ValueError, match="seed must be an int, None or a list of 3 ints"):
        venv.reset(seed=[1, 2])


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_envs=0 is not allowed; allowed: an integer >= 1"):
        PuntoBancoVectorEnv(0)
    with pytest.raises(ValueError, match="autoreset_mode='sometimes' is not allowed; allowed: NextStep"):
        PuntoBancoVectorEnv(2, autoreset_mode="sometimes")
    with pytest.raises(ValueError, match="max_episode_steps=0 is not allowed"):
        PuntoBancoVectorEnv(2, max_episode_steps=0)
    with pytest.raises(ValueError, match="action_mode='x' is not allowed"):
        gym.make_vec("pb_gym/PuntoBanco-v0", num_envs=2, action_mode="x")
    venv = PuntoBancoVectorEnv(2, **RAW)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"multidiscrete actions must have shape \(2, 2\)"):
        venv.step(np.zeros((3, 2), np.int64))
    with pytest.raises(ValueError, match=r"action \[1, 5\] \(table 1\) is out of range"):
        venv.step(np.array([[0, 0], [1, 5]]))


def test_action_masks_and_render():
    venv = PuntoBancoVectorEnv(
        3, bankroll=100, unit=10, table_min=20, stake_levels=(1, 2, 5), render_mode="ansi", **RAW
    )
    venv.reset(seed=0)
    venv.tables.bankroll[:] = [10.0, 3.0, 1.0]
    masks = venv.action_masks()
    np.testing.assert_array_equal(
        masks[:, 8:], [[False, True, True], [False, True, False], [True, True, True]]
    )
    assert masks[2, :8].tolist() == [True] + [False] * 7
    venv.step(np.array([[1, 1], [2, 1], [0, 0]]))
    frames = venv.render()
    assert len(frames) == 3 and all("Banker:" in f for f in frames)


def test_throughput_function_runs():
    result = vector_env_throughput(n_envs=256, seconds=0.2, sync_n_envs=16, sync_seconds=0.2)
    assert set(result) >= {
        "vector_env_steps_per_s",
        "sync_vector_env_steps_per_s",
        "vector_vs_sync_ratio",
        "sync_vector_env_n_envs",
    }
    assert result["vector_vs_sync_ratio"] == pytest.approx(
        result["vector_env_steps_per_s"] / result["sync_vector_env_steps_per_s"]
    )
    # (how much faster the vector env is, is the benchmark's figure, not a test's: it varies with load)


def test_throughput_is_timed_after_a_warm_up_past_the_first_shoe(monkeypatch):
    """A kernel first reached some steps in (the first reshuffles) is compiled inside that step: the
    timed window starts only after WARMUP_STEPS steps and half the window, whichever is later."""
    from types import SimpleNamespace

    from pb_gym.envs import throughput as env_throughput

    clock = [0.0]  # (the steps move the clock: the same rate on any machine, under any load)
    monkeypatch.setattr(env_throughput, "time", SimpleNamespace(perf_counter=lambda: clock[0]))

    class Clocked:
        def __init__(self) -> None:
            self.steps = 0

        def reset(self, seed: int) -> None:
            self.steps = 0

        def step(self, action: object) -> None:
            self.steps += 1
            clock[0] += 0.75 if self.steps == 5 else 2**-10  # a compile at the fifth step

    env = Clocked()
    rate = env_throughput._steps_per_s(env, [0], n_envs=1, seconds=0.25)
    assert env.steps == env_throughput.WARMUP_STEPS + 256
    assert rate == 1024.0  # the 0.75 s step was not timed: a timed one would give under 1 / 0.75


def test_call_get_attr_set_attr_as_gymnasium_vector_envs():
    """call / get_attr / set_attr answer one entry per table, as Gymnasium's SyncVectorEnv does."""
    venv = PuntoBancoVectorEnv(3, bankroll=500)
    venv.reset(seed=0)
    assert venv.get_attr("bankroll") == (50.0, 50.0, 50.0)
    assert venv.get_attr("bet_choices") == (venv.config.bet_choices,) * 3
    masks = venv.call("action_masks")
    assert len(masks) == 3 and all(np.array_equal(m, venv.action_masks()[i]) for i, m in enumerate(masks))
    venv.set_attr("bankroll", [10.0, 20.0, 30.0])
    np.testing.assert_array_equal(venv.bankroll, [10.0, 20.0, 30.0])
    venv.set_attr("render_mode", "ansi")
    assert len(venv.render()) == 3
    with pytest.raises(ValueError, match=r"set_attr\('render_mode'\): the tables share one render_mode"):
        venv.set_attr("render_mode", ["ansi", None, "ansi"])
    with pytest.raises(ValueError, match=r"values must be one value or a list of 3"):
        venv.set_attr("bankroll", [1.0, 2.0])
    with pytest.raises(AttributeError, match=r"set_attr\('config'\): fixed when the env is built"):
        venv.set_attr("config", None)


def test_human_render_mode_prints_every_table(capsys):
    venv = PuntoBancoVectorEnv(2, render_mode="human")
    venv.reset(seed=1)
    venv.step(np.array([1, 0]))
    out = capsys.readouterr().out
    assert out.count("table 0\n") == 2 and out.count("table 1\n") == 2 and "Banker:" in out
    assert venv.render() is None and "table 1" in capsys.readouterr().out


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_infos_are_numpy_values_with_dtypes(mode):
    """Every info value is a numpy array with a dtype (TorchRL's info reader refuses Python floats)."""
    venv = PuntoBancoVectorEnv(4, autoreset_mode=mode, hand_info=True, info_ev=True, max_hands=3)
    venv.reset(seed=2)
    seen = set()
    for _ in range(7):
        info = venv.step(np.zeros(4, dtype=np.int64))[4]
        for key, value in info.items():
            values = value.values() if isinstance(value, dict) else [value]
            for v in values:
                assert isinstance(v, np.ndarray) and v.shape[0] == 4, key
            seen.add(key)
    assert {"winner", "bankroll", "stakes", "ev", "_winner"} <= seen
    assert mode == "NextStep" or {"final_obs", "final_info"} <= seen


def test_single_and_vector_infos_hold_the_same_keys_one_row_per_table():
    """One info builder: the single env's info and the vector env's batched info have the keys of
    HAND_INFO_KEYS in that order (then ev), the vector env's with the engine's dtypes, and table 0 of
    the vector env reset with seed s is the single env reset with seed s."""
    from pb_gym.envs.observation import HAND_INFO_KEYS

    env = PuntoBancoEnv(info_ev=True)
    venv = PuntoBancoVectorEnv(2, hand_info=True, info_ev=True)
    env.reset(seed=5)
    venv.reset(seed=5)
    one = env.step(1)[4]
    many = venv.step(np.array([1, 1]))[4]
    assert tuple(one) == (*HAND_INFO_KEYS, "ev")
    assert tuple(k for k in many if not k.startswith("_")) == (*HAND_INFO_KEYS, "ev")
    assert many["winner"].dtype == np.uint8 and many["natural"].dtype == np.bool_
    assert many["stakes"].dtype == many["bankroll"].dtype == np.float64
    assert type(one["winner"]) is int and type(one["natural"]) is bool and type(one["bankroll"]) is float
    for key in (*HAND_INFO_KEYS, "ev"):
        np.testing.assert_array_equal(np.asarray(one[key]), many[key][0], err_msg=key)
