"""Throughput of the environments: the single env against Gymnasium's ``Blackjack-v1``, the native vector
environment against Gymnasium's ``SyncVectorEnv`` of single envs."""

from __future__ import annotations

import time

import numpy as np
from gymnasium import spaces
from gymnasium.vector import SyncVectorEnv

from pb_gym.envs.punto_banco import PuntoBancoEnv
from pb_gym.envs.vector import PuntoBancoVectorEnv

WARMUP_STEPS = 256
"""Steps before a throughput is timed: past the end of every table's first shoe (:func:`_steps_per_s`)."""


def _steps_per_s(env, actions: list, n_envs: int, seconds: float, warmup: int = WARMUP_STEPS) -> float:
    """Steps per second over ``seconds``, after a warm-up of at least ``warmup`` steps and half as long.

    A kernel that a step reaches only later (the first tables reshuffled between hands, at step 4
    or so; the first step that reshuffles many tables at once, some 170 steps in) is compiled on
    first use, or loaded from numba's cache, inside whatever step first needs it: 0.7 s in a fresh
    checkout. After a three-step warm-up that landed inside the 0.2 s window of ``--quick``: 11,700
    steps/s for a vector env of 4,096 tables that runs 5.5 M."""
    env.reset(seed=0)
    k, start = 0, time.perf_counter()
    while k < warmup or time.perf_counter() - start < seconds / 2:
        env.step(actions[k % len(actions)])
        k += 1
    steps, start = 0, time.perf_counter()
    while True:
        env.step(actions[(k + steps) % len(actions)])
        steps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps * n_envs / elapsed


def _single_steps_per_s(env, actions: list, seconds: float) -> float:
    """Steps per second of one env over ``seconds`` (at least 100 steps), ``actions`` cycled, a reset
    where an episode ends."""
    env.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while True:
        for _ in range(100):
            _, _, terminated, truncated, _ = env.step(actions[steps % len(actions)])
            steps += 1
            if terminated or truncated:
                env.reset()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps / elapsed


def single_env_throughput(seconds: float = 2.0, **env_kwargs) -> dict:
    """Steps per second of one table made by ``gymnasium.make`` (with Gymnasium's default wrappers),
    beside Gymnasium's ``Blackjack-v1`` made the same way, in the same run.

    Both take a fixed action (this env: a one-unit banker bet; Blackjack: stick) and reset when an
    episode ends. Returns ``single_env_steps_per_s``, ``blackjack_steps_per_s`` and
    ``single_env_vs_blackjack``."""
    import gymnasium

    import pb_gym.envs  # noqa: F401  (registers the env)

    env = gymnasium.make("pb_gym/PuntoBanco-v0", **env_kwargs)
    unwrapped = env.unwrapped
    assert isinstance(unwrapped, PuntoBancoEnv)
    action = _min_banker_bet(unwrapped.config)
    _single_steps_per_s(env, [action], seconds)  # warm-up: compile or load the kernels
    single = _single_steps_per_s(env, [action], seconds)
    blackjack = _single_steps_per_s(gymnasium.make("Blackjack-v1"), [0], seconds)
    return {
        "single_env_steps_per_s": single,
        "blackjack_steps_per_s": blackjack,
        "single_env_vs_blackjack": single / blackjack,
    }


SINGLE_TASKS: tuple[str, ...] = ("pb_gym/Discover-v0", "pb_gym/DiscoverAll-v0")
"""The tasks :func:`task_single_env_throughput` times: the fewest and the most bets offered. RL Zoo,
TorchRL's ``GymEnv``, RLlib and SB3's ``make_vec_env`` step single envs, one table each."""


def task_single_env_throughput(tasks: tuple[str, ...] = SINGLE_TASKS, seconds: float = 2.0) -> dict:
    """Steps per second of one table of each benchmark task made by ``gymnasium.make`` under a random
    policy (4,096 pre-drawn actions, cycled; a reset when the shoe ends), its training reward
    ``"expected"`` beside the same env with ``reward="realized"``, in the same run: the exact EV of a
    random bet's unseen cards is the price of nearly every step.

    Returns, for each task's name (``Discover-v0``), ``single_{name}_{reward}_steps_per_s`` and
    ``single_{name}_expected_vs_realized``."""
    import gymnasium

    from pb_gym.envs.tasks import action_meanings, get_task

    out: dict = {}
    for task in tasks:
        spec = get_task(task)
        actions = np.random.default_rng(0).integers(0, len(action_meanings(spec)), 4096).tolist()
        for reward in ("realized", "expected"):
            env = gymnasium.make(spec.id, reward=reward)
            _single_steps_per_s(env, actions, seconds / 4)  # warm-up (past the first shoe's end)
            out[f"single_{spec.name}_{reward}_steps_per_s"] = _single_steps_per_s(env, actions, seconds)
            env.close()
        out[f"single_{spec.name}_expected_vs_realized"] = (
            out[f"single_{spec.name}_expected_steps_per_s"] / out[f"single_{spec.name}_realized_steps_per_s"]
        )
    return out


def _min_banker_bet(cfg) -> object:
    """The action that stakes the table minimum on banker, in the config's action mode."""
    choice = cfg.bet_choices.index("banker")
    if cfg.action_mode == "multidiscrete":
        return np.array([choice, 0])
    if cfg.action_mode == "discrete":
        return int(cfg.allow_no_bet) + (choice - int(cfg.allow_no_bet)) * len(cfg.stake_levels)
    action = np.zeros(len(cfg.rules.offered_bets), dtype=np.float32)
    action[cfg.rules.offered_bets.index("banker")] = cfg.min_units / min(cfg.bankroll_units, cfg.max_units)
    return action


def native_vector_steps_per_s(
    n_envs: int, seconds: float, rng: np.random.Generator, **env_kwargs
) -> tuple[float, list[np.ndarray]]:
    """Steps per second of the native vector env playing random actions (16 pre-drawn batches from
    ``rng``, cycled), and those actions."""
    venv = PuntoBancoVectorEnv(n_envs, **env_kwargs)
    actions = [_random_actions(venv, rng) for _ in range(16)]
    rate = _steps_per_s(venv, actions, n_envs, seconds)
    venv.close()
    return rate, actions


def vector_env_throughput(
    n_envs: int = 4096,
    seconds: float = 2.0,
    sync_n_envs: int | None = 256,
    sync_seconds: float | None = None,
    **env_kwargs,
) -> dict:
    """Steps (hands) per second of the native vector env and of ``SyncVectorEnv`` over single envs.

    Both play a random bet each step (a pre-drawn random action per table and step, cycled over 16
    batches) with visible discards and the other settings at their defaults (``env_kwargs`` override
    them). The SyncVectorEnv runs ``sync_n_envs`` sub-environments (per-step cost is linear in the
    number of sub-environments, so its steps/s do not depend on it; None = ``n_envs``) for
    ``sync_seconds`` (default ``seconds``).

    Returns ``vector_env_steps_per_s``, ``sync_vector_env_steps_per_s``, ``vector_vs_sync_ratio``,
    ``vector_env_n_envs`` and ``sync_vector_env_n_envs``.
    """
    env_kwargs = {"visible_discards": True, **env_kwargs}
    vector, actions = native_vector_steps_per_s(n_envs, seconds, np.random.default_rng(0), **env_kwargs)
    n_sync = n_envs if sync_n_envs is None else min(int(sync_n_envs), n_envs)
    kwargs = {"hand_info": False, **env_kwargs}  # the vector env's default infos, for a fair race
    sync = SyncVectorEnv([lambda: PuntoBancoEnv(**kwargs) for _ in range(n_sync)])
    sync_actions = [a[:n_sync] for a in actions]
    sync_rate = _steps_per_s(sync, sync_actions, n_sync, seconds if sync_seconds is None else sync_seconds)
    sync.close()
    return {
        "vector_env_steps_per_s": vector,
        "sync_vector_env_steps_per_s": sync_rate,
        "vector_vs_sync_ratio": vector / sync_rate,
        "vector_env_n_envs": n_envs,
        "sync_vector_env_n_envs": n_sync,
    }


def expected_reward_throughput(n_envs: int = 256, seconds: float = 2.0, **env_kwargs) -> dict:
    """Steps per second of the native vector env with ``reward="expected"`` beside the same env with
    ``reward="realized"``, in the same run (``n_envs`` tables: the size of an SB3 training run).

    Worst case for the expected reward: Dragon 7 and Panda 8 offered and a random action every step,
    so a bet is placed at nearly every table every hand and the exact EV of nearly every table's
    unseen cards is computed each step (a trained agent that bets on 1 hand in 8 needs an eighth of
    that). Returns ``expected_reward_steps_per_s``, ``realized_reward_steps_per_s`` and
    ``expected_vs_realized``."""
    kwargs = {"visible_discards": True, "side_bets": ("dragon7", "panda8"), **env_kwargs}
    rng = np.random.default_rng(0)
    rates = {}
    for reward in ("realized", "expected"):
        rates[reward], _ = native_vector_steps_per_s(n_envs, seconds, rng, reward=reward, **kwargs)
    return {
        "expected_reward_steps_per_s": rates["expected"],
        "realized_reward_steps_per_s": rates["realized"],
        "expected_vs_realized": rates["expected"] / rates["realized"],
    }


def _random_actions(venv: PuntoBancoVectorEnv, rng: np.random.Generator) -> np.ndarray:
    space = venv.action_space  # batched: an int Box (multidiscrete), MultiDiscrete (discrete), a Box
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, dtype=np.int64)
    assert isinstance(space, spaces.Box)
    if np.issubdtype(space.dtype, np.integer):
        return rng.integers(space.low, space.high, endpoint=True, dtype=np.int64)
    return rng.random(space.shape, dtype=np.float32)
