"""SB3 PPO training speed on this environment against PPO on ``CartPole-v1`` (``pb-gym bench --rl``).

The same PPO (``MlpPolicy``, the same network and hyperparameters, 8 environments, torch's default
threads) learns on four set-ups:

* ``cartpole``: ``make_vec_env("CartPole-v1", n_envs=8)``, the reference a user knows;
* ``make_vec_env``: ``make_vec_env("pb_gym/PuntoBanco-v0", n_envs=8)``, eight single envs in SB3's
  ``DummyVecEnv``, as a user who did not read this README would start;
* ``adapter``: :class:`agents.sb3_vec_env.PuntoBancoSB3VecEnv` with 8 tables, one engine call a step;
* ``ceiling``: :class:`SameSpacesEnv` through ``make_vec_env``: an env that does nothing (a constant
  observation, 100-step episodes) with this env's observation and action spaces. PPO's own work grows
  with the policy's input and output sizes (47 observations and 36 actions here, 4 and 2 on
  CartPole), so this is the fastest PPO any environment with these spaces can train, and the set-ups'
  shares of it are the environment's own cost.

How: every model is built and warmed up first (its first rollout and update), then ``rounds`` rounds
each give every set-up ``chunk`` more timesteps of ``model.learn``, in a shuffled order. Figures: the
best steps/s of each set-up, and the median over rounds of each set-up's steps/s over CartPole's in the
same round (a ratio within a round cancels the machine's slow drifts; the median drops the rounds a
neighbour's burst hit); with ``load`` the same beside one busy process per core.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np

from pb_gym import bench

HYPERPARAMETERS: dict[str, Any] = dict(
    n_steps=128, batch_size=256, n_epochs=4, learning_rate=3e-4, policy_kwargs={"net_arch": [64, 64]}
)
N_ENVS = 8
SETUPS = ("cartpole", "make_vec_env", "adapter", "ceiling")


class SameSpacesEnv(gym.Env):
    """An env that does nothing, with the observation and action spaces of ``pb_gym/PuntoBanco-v0``
    (as registered): each step returns a constant observation, reward 0 and an empty info, and
    truncates after 100 steps as the registered env does (so SB3 bootstraps the same number of
    truncated episodes)."""

    def __init__(self) -> None:
        import pb_gym  # noqa: F401  (registers the env)

        registered = gym.make("pb_gym/PuntoBanco-v0")  # (as make_vec_env builds it)
        self.observation_space = registered.observation_space
        self.action_space = registered.action_space
        self._obs: np.ndarray = np.zeros(self.observation_space.shape or (), dtype=np.float32)
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t = 0
        return self._obs.copy(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._t += 1
        return self._obs.copy(), 0.0, False, self._t >= 100, {}


def _make(setup: str):
    from stable_baselines3.common.env_util import make_vec_env

    import pb_gym  # noqa: F401  (registers the env)
    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    if setup == "cartpole":
        return make_vec_env("CartPole-v1", n_envs=N_ENVS, seed=0)
    if setup == "make_vec_env":
        return make_vec_env("pb_gym/PuntoBanco-v0", n_envs=N_ENVS, seed=0)
    if setup == "ceiling":
        return make_vec_env(SameSpacesEnv, n_envs=N_ENVS, seed=0)
    if setup == "adapter":
        return PuntoBancoSB3VecEnv(num_envs=N_ENVS)
    raise ValueError(f"setup={setup!r}; allowed: {', '.join(SETUPS)}")


def _model(setup: str):
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", _make(setup), seed=0, device="cpu", **HYPERPARAMETERS)
    model.learn(N_ENVS * HYPERPARAMETERS["n_steps"])  # warm-up: the first rollout and update
    return model


def _learn_rate(model, timesteps: int) -> float:
    """Timesteps per second of ``model.learn(timesteps)``, continuing the model's training."""
    start = time.perf_counter()
    model.learn(timesteps, reset_num_timesteps=False)
    return timesteps / (time.perf_counter() - start)


def _condition(chunk: int, rounds: int, seed: int = 0) -> dict:
    rollout = N_ENVS * HYPERPARAMETERS["n_steps"]
    if chunk <= 0 or chunk % rollout:  # learn() runs whole rollouts: a rate needs the steps it ran
        raise ValueError(
            f"chunk={chunk} is not allowed; allowed: a positive multiple of {rollout} "
            "(one rollout of every env)"
        )
    models = {setup: _model(setup) for setup in SETUPS}
    rates: dict[str, list[float]] = {setup: [] for setup in SETUPS}
    order = list(SETUPS)
    shuffle = random.Random(seed).shuffle
    for _ in range(rounds):
        shuffle(order)  # no set-up always runs first (or right after another one)
        for setup in order:
            rates[setup].append(_learn_rate(models[setup], chunk))
    for model in models.values():
        model.get_env().close()

    def median_ratio(setup: str, base: str) -> float:
        return statistics.median(a / b for a, b in zip(rates[setup], rates[base], strict=True))

    return {
        "ppo_steps_per_s": {setup: max(r) for setup, r in rates.items()},
        "rounds_steps_per_s": rates,
        "vs_cartpole": {s: median_ratio(s, "cartpole") for s in SETUPS if s != "cartpole"},
        "vs_ceiling": {s: median_ratio(s, "ceiling") for s in ("make_vec_env", "adapter")},
    }


def run(quick: bool = False, load: bool = False) -> dict:
    """PPO steps per second on each set-up, idle and (``load``) beside one busy process per core."""
    chunk = N_ENVS * HYPERPARAMETERS["n_steps"] * 4
    rounds = 3 if quick else 11
    figures = {
        "chunk_timesteps": chunk,
        "rounds": rounds,
        "n_envs": N_ENVS,
        "hyperparameters": HYPERPARAMETERS,
        **_condition(chunk, rounds),
    }
    return bench.with_busy(figures, lambda: _condition(chunk, rounds), load)


def print_figures(figures: dict) -> None:
    """The figures of :func:`run`, idle and busy side by side."""
    conditions = [("idle", figures)] + ([("busy", figures["busy"])] if "busy" in figures else [])
    print(
        f"\nSB3 PPO (MlpPolicy {figures['hyperparameters']['policy_kwargs']['net_arch']}, "
        f"{figures['n_envs']} envs; {figures['rounds']} rounds of {figures['chunk_timesteps']:,} "
        "timesteps per set-up, in turn; best steps/s of learn(), median ratio within a round)"
    )
    print(f"{'':<56}" + "".join(f"{name:>14}" for name, _ in conditions))
    labels = {
        "cartpole": "CartPole-v1, make_vec_env",
        "make_vec_env": "PuntoBanco-v0, make_vec_env (8 single envs)",
        "adapter": "PuntoBanco-v0, PuntoBancoSB3VecEnv (8 tables)",
        "ceiling": "do-nothing env with PuntoBanco-v0's spaces",
    }
    for setup, label in labels.items():
        print(f"{label:<56}" + "".join(f"{f['ppo_steps_per_s'][setup]:>14,.0f}" for _, f in conditions))
        if setup != "cartpole":
            print(
                f"{'  / CartPole':<56}" + "".join(f"{f['vs_cartpole'][setup]:>13.2f}x" for _, f in conditions)
            )
        if setup in ("make_vec_env", "adapter"):
            print(
                f"{'  / the do-nothing env (the env cost left)':<56}"
                + "".join(f"{f['vs_ceiling'][setup]:>13.2f}x" for _, f in conditions)
            )
