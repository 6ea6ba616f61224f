"""SB3 PPO training speed on this environment against PPO on ``CartPole-v1`` (``pb-gym bench --rl``).

The same PPO (``MlpPolicy``, the same network and hyperparameters, 8 environments, torch's default
threads) learns for the same number of timesteps on three set-ups, one after the other in one run:

* ``cartpole``: ``make_vec_env("CartPole-v1", n_envs=8)``, the reference a user knows;
* ``make_vec_env``: ``make_vec_env("pb_gym/PuntoBanco-v0", n_envs=8)``, eight single envs in SB3's
  ``DummyVecEnv``, as a user who did not read this README would start;
* ``adapter``: :class:`agents.sb3_vec_env.PuntoBancoSB3VecEnv` with 8 tables, one engine call a step.

Figures: steps per second of ``model.learn`` (collection and gradient steps together; the best of
three runs of each set-up, taken in turn) and the ratio of each set-up to CartPole; with ``load`` the
same beside one busy process per core. If the environment were the bottleneck, its ratio would fall
below 1.
"""

from __future__ import annotations

import time

from pb_gym import bench

HYPERPARAMETERS = dict(n_steps=128, batch_size=256, n_epochs=4, learning_rate=3e-4,
                       policy_kwargs={"net_arch": [64, 64]})
N_ENVS = 8


def _make(setup: str):
    from stable_baselines3.common.env_util import make_vec_env

    import pb_gym  # noqa: F401  (registers the env)
    from agents.sb3_vec_env import PuntoBancoSB3VecEnv

    if setup == "cartpole":
        return make_vec_env("CartPole-v1", n_envs=N_ENVS, seed=0)
    if setup == "make_vec_env":
        return make_vec_env("pb_gym/PuntoBanco-v0", n_envs=N_ENVS, seed=0)
    return PuntoBancoSB3VecEnv(num_envs=N_ENVS)


def ppo_steps_per_s(setup: str, timesteps: int) -> float:
    """Timesteps per second of ``PPO("MlpPolicy", ...).learn(timesteps)`` on one set-up."""
    from stable_baselines3 import PPO

    env = _make(setup)
    model = PPO("MlpPolicy", env, seed=0, device="cpu", **HYPERPARAMETERS)
    model.learn(N_ENVS * HYPERPARAMETERS["n_steps"])  # warm-up: the first rollout and update
    start = time.perf_counter()
    model.learn(timesteps, reset_num_timesteps=False)
    rate = timesteps / (time.perf_counter() - start)
    env.close()
    return rate


def _condition(timesteps: int, repeats: int) -> dict:
    # round-robin repeats, best of each: torch's first runs and a noisy machine otherwise decide
    rates: dict[str, float] = {}
    for _ in range(repeats):
        for setup in ("cartpole", "make_vec_env", "adapter"):
            rates[setup] = max(rates.get(setup, 0.0), ppo_steps_per_s(setup, timesteps))
    return {
        "ppo_steps_per_s": rates,
        "vs_cartpole": {k: v / rates["cartpole"] for k, v in rates.items() if k != "cartpole"},
    }


def run(quick: bool = False, load: bool = False) -> dict:
    """PPO steps per second on each set-up, idle and (``load``) beside one busy process per core."""
    timesteps = N_ENVS * HYPERPARAMETERS["n_steps"] * (2 if quick else 12)
    repeats = 1 if quick else 3
    figures = {"timesteps": timesteps, "n_envs": N_ENVS, "hyperparameters": HYPERPARAMETERS,
               "repeats": repeats, **_condition(timesteps, repeats)}
    if load:
        with bench.busy_cores() as count:
            figures["busy"] = {"busy_processes": count, **_condition(timesteps, repeats)}
    return figures


def print_figures(figures: dict) -> None:
    """The figures of :func:`run`, idle and busy side by side."""
    conditions = [("idle", figures)] + ([("busy", figures["busy"])] if "busy" in figures else [])
    print(f"\nSB3 PPO (MlpPolicy {figures['hyperparameters']['policy_kwargs']['net_arch']}, "
          f"{figures['n_envs']} envs, {figures['timesteps']:,} timesteps; steps/s of learn(), best of "
          f"{figures['repeats']})")
    print(f"{'':<52}" + "".join(f"{name:>16}" for name, _ in conditions))
    labels = {"cartpole": "CartPole-v1, make_vec_env",
              "make_vec_env": "PuntoBanco-v0, make_vec_env (8 single envs)",
              "adapter": "PuntoBanco-v0, PuntoBancoSB3VecEnv (8 tables)"}
    for setup, label in labels.items():
        print(f"{label:<52}" + "".join(f"{f['ppo_steps_per_s'][setup]:>16,.0f}"
                                       for _, f in conditions))
        if setup != "cartpole":
            print(f"{'  / CartPole':<52}" + "".join(f"{f['vs_cartpole'][setup]:>15.2f}x"
                                                   for _, f in conditions))
