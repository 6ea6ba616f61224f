"""The stable-baselines3 adapter over the native vector environment (short training runs)."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3 import DQN, PPO  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv, VecMonitor  # noqa: E402

from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv  # noqa: E402
from pb_gym.envs import PuntoBancoEnv, PuntoBancoVectorEnv  # noqa: E402

RAW = dict(observation="dict", obs_scale="raw", action_mode="multidiscrete")
"""The Dict in raw units and [bet, size] actions (the defaults: flat scaled Box, discrete actions)."""


def test_core_package_never_imports_torch():
    code = (
        "import sys, gymnasium, pb_gym, pb_gym.envs.throughput; "
        "gymnasium.make_vec('pb_gym/PuntoBanco-v0', num_envs=2).reset(seed=0); "
        "print('torch' in sys.modules, 'stable_baselines3' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_terminal_observation_and_truncation_flags():
    env = PuntoBancoSB3VecEnv(3, max_hands=3, hand_info=True, **RAW)
    assert isinstance(env, VecEnv) and env.num_envs == 3
    env.seed(5)
    obs = env.reset()
    singles = [PuntoBancoEnv(max_hands=3, **RAW) for _ in range(3)]
    for i, single in enumerate(singles):  # seed(s) seeds table i with s + i
        expected, _ = single.reset(seed=5 + i)
        for key in obs:
            np.testing.assert_array_equal(obs[key][i], expected[key])
    actions = np.array([[1, 0], [2, 1], [0, 0]])
    for _ in range(3):
        obs, rewards, dones, infos = env.step(actions)
        expected = [s.step(a) for s, a in zip(singles, actions, strict=True)]
        np.testing.assert_allclose(rewards, [e[1] for e in expected])
        assert rewards.dtype == np.float32 and len(infos) == 3
    assert dones.all()
    for i, info in enumerate(infos):
        assert info["TimeLimit.truncated"] is True
        terminal = info["terminal_observation"]
        for key, value in expected[i][0].items():  # the last observation of the finished episode
            np.testing.assert_array_equal(terminal[key], value)
        assert terminal["hands"][0] == 3
        assert info["winner"] == expected[i][4]["winner"]
    assert (obs["hands"][:, 0] == 0).all()  # already reset: first observation of the next episode
    assert (obs["bankroll"][:, 0] == 100).all()


def test_ruin_is_not_truncation():
    env = PuntoBancoSB3VecEnv(
        2,
        bankroll=10,
        unit=10,
        table_min=10,
        stake_levels=(1,),
        max_hands=None,
        observation="flat",
        obs_scale="raw",
        action_mode="multidiscrete",
    )
    env.reset()
    for _ in range(1000):
        obs, rewards, dones, infos = env.step(np.array([[3, 0], [3, 0]]))  # tie bets: ruin
        if dones.any():
            break
    i = int(np.flatnonzero(dones)[0])
    assert infos[i]["TimeLimit.truncated"] is False
    assert infos[i]["terminal_observation"].shape == env.observation_space.shape
    assert infos[i]["terminal_observation"][0] == 0  # bankroll field first: ruined
    assert obs[i][0] == 1  # reset: 1 unit again


def test_attributes_and_methods():
    env = PuntoBancoSB3VecEnv(4, stake_levels=(1, 2), **RAW)
    env.reset()
    assert env.get_attr("bet_choices")[0][0] == "no_bet"
    assert [float(b) for b in env.get_attr("bankroll", indices=[1, 3])] == [100.0, 100.0]
    masks = env.env_method("action_masks")
    assert len(masks) == 4 and masks[0].shape == (8 + 2,)
    assert env.has_attr("action_masks")
    assert env.env_is_wrapped(object) == [False] * 4
    env.set_attr("render_mode", None)
    with pytest.raises(ValueError, match="share their settings"):
        env.set_attr("render_mode", None, indices=[0])
    with pytest.raises(ValueError, match="autoreset_mode"):
        PuntoBancoSB3VecEnv(venv=PuntoBancoVectorEnv(2))


def test_ppo_trains_on_native_vector_env_and_evaluates():
    env = VecMonitor(PuntoBancoSB3VecEnv(8, max_hands=20))  # the defaults: flat scaled Box, discrete
    model = PPO("MlpPolicy", env, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=1024)
    assert model.num_timesteps >= 1024
    mean, std = evaluate_policy(model, env, n_eval_episodes=8)
    assert np.isfinite(mean) and np.isfinite(std)


def test_dqn_with_the_defaults():
    env = VecMonitor(PuntoBancoSB3VecEnv(4, max_hands=20))
    model = DQN("MlpPolicy", env, learning_starts=100, buffer_size=2000, train_freq=4, seed=0, device="cpu")
    model.learn(total_timesteps=1000)
    episode_rewards, lengths = evaluate_policy(model, env, n_eval_episodes=4, return_episode_rewards=True)
    assert len(episode_rewards) == 4 and all(n == 20 for n in lengths)


def test_maskable_ppo_respects_masks():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = VecMonitor(
        PuntoBancoSB3VecEnv(
            4,
            bankroll=50,
            unit=10,
            table_min=20,
            stake_levels=(1, 2, 4),
            allow_no_bet=False,
            max_hands=10,
            **RAW,
        )
    )
    model = sb3_contrib.MaskablePPO(
        "MultiInputPolicy", env, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu"
    )
    model.learn(total_timesteps=512)
    obs = env.reset()
    for _ in range(30):
        masks = np.stack(env.env_method("action_masks"))
        actions, _ = model.predict(obs, action_masks=masks)
        for a, m in zip(actions, masks, strict=True):
            assert m[a[0]] and m[len(m) - 3 + a[1]]  # only allowed bet choices and stake levels
        obs, _, _, _ = env.step(actions)


def test_bench_rl_measures_each_setup_and_the_same_spaces_ceiling():
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    from pb_gym.experiments.train import ppo_speed as bench_rl

    ceiling, env = bench_rl.SameSpacesEnv(), gym.make("pb_gym/PuntoBanco-v0")
    assert ceiling.observation_space == env.observation_space
    assert ceiling.action_space == env.action_space
    check_env(ceiling, skip_render_check=True)
    rollout = bench_rl.N_ENVS * bench_rl.HYPERPARAMETERS["n_steps"]
    figures = bench_rl._condition(rollout, rounds=1)
    rates = figures["ppo_steps_per_s"]
    assert set(rates) == set(bench_rl.SETUPS) and min(rates.values()) > 0
    for setup, ratio in figures["vs_cartpole"].items():  # one round: the median is that round's ratio
        assert ratio == pytest.approx(rates[setup] / rates["cartpole"])
    assert figures["vs_ceiling"]["adapter"] == pytest.approx(rates["adapter"] / rates["ceiling"])
    with pytest.raises(
        ValueError, match=f"chunk=1000 is not allowed; allowed: a positive multiple of {rollout}"
    ):
        bench_rl._condition(1000, rounds=1)


def test_bench_rl_prints_idle_and_busy_side_by_side(capsys):
    from pb_gym.experiments.train import ppo_speed as bench_rl

    def condition(scale: float) -> dict:
        rates = {
            "cartpole": 1000.0 * scale,
            "make_vec_env": 900.0 * scale,
            "adapter": 1010.0 * scale,
            "ceiling": 1030.0 * scale,
        }
        return {
            "ppo_steps_per_s": rates,
            "vs_cartpole": {"make_vec_env": 0.9, "adapter": 1.01, "ceiling": 1.03},
            "vs_ceiling": {"make_vec_env": 0.87, "adapter": 0.98},
        }

    figures = {
        "chunk_timesteps": 4096,
        "rounds": 11,
        "n_envs": 8,
        "hyperparameters": bench_rl.HYPERPARAMETERS,
        **condition(1.0),
        "busy": {"busy_processes": 2, **condition(0.3)},
    }
    bench_rl.print_figures(figures)
    lines = capsys.readouterr().out.splitlines()
    assert "11 rounds of 4,096 timesteps" in lines[1]
    assert lines[2].split() == ["idle", "busy"]
    row = next(i for i, line in enumerate(lines) if line.startswith("PuntoBanco-v0, PuntoBancoSB3VecEnv"))
    assert lines[row].split()[-2:] == ["1,010", "303"]
    assert lines[row + 1].split()[-2:] == ["1.01x", "1.01x"]
    assert lines[row + 2].split()[-2:] == ["0.98x", "0.98x"]
