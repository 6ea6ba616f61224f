"""stable-baselines3 pieces for the session tasks: a ``VecEnv`` over the native session vector env and
a thermometer code of the observation.

:class:`SessionSB3VecEnv` drives :class:`pb_gym.envs.session_vector.SessionVectorEnv` (``SAME_STEP``
autoreset) as a stable-baselines3 ``VecEnv``: N sessions stepped by one engine call per step, so that
PPO or DQN over 256 tables costs one policy call per 256 hands::

    from stable_baselines3 import PPO
    from pb_gym.agents.session_sb3 import SessionSB3VecEnv

    env = SessionSB3VecEnv("pb_gym/Session-v0", num_envs=256, features="thermometer", seed=0)
    PPO("MlpPolicy", env, gamma=1.0).learn(100_000)

The thermometer (``features="thermometer"``, :func:`thermometer`; :class:`SessionThermometer` is the
same as a Gymnasium wrapper, what RL Zoo's ``env_wrapper`` takes) keeps the two observed numbers and
adds, for every whole unit ``k`` from 1 to the goal, whether the bankroll is at least ``k``, and for every
``h`` from 1 to the hand limit, whether at least ``h`` hands are left. It is a function of the
observation alone (it knows nothing of the task's solution): a step in the bankroll or the hands left is
one input for the network instead of a kink that two ReLU layers have to build.

Infos: where a session ended, ``terminal_observation`` (featured like the observations),
``TimeLimit.truncated`` (always False: the hand limit is part of the task, observed) and
``is_success``. ``action_masks()`` gives every table's legal actions (sb3-contrib's MaskablePPO).

This module imports stable-baselines3 (and so torch); the core package :mod:`pb_gym` never imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from pb_gym.agents.sb3_vec_env import NativeVecEnv
from pb_gym.envs.config import bad
from pb_gym.envs.session_settings import SessionSettings
from pb_gym.envs.session_vector import SessionVectorEnv

FEATURES: tuple[str, ...] = ("raw", "thermometer")
"""The observation codes: the env's own two numbers, or those and their thermometer code."""


def _levels(settings: SessionSettings) -> tuple[np.ndarray, np.ndarray]:
    units = np.arange(1, int(np.ceil(float(settings.goal))) + 1, dtype=np.float64)
    hands = np.arange(1, settings.hands + 1, dtype=np.float64)
    return units, hands


def thermometer(obs: np.ndarray, settings: SessionSettings) -> np.ndarray:
    """The observations ``(..., 2)`` of a session env with their thermometer code appended: ``(..., 2 +
    ceil(goal) + hands)`` float32 (the module docstring)."""
    obs = np.asarray(obs, dtype=np.float32)
    units, hands = _levels(settings)
    bankroll = obs[..., :1].astype(np.float64) * float(settings.goal)
    left = obs[..., 1:2].astype(np.float64) * settings.hands
    # the bankroll lattice is 1/ticks_per_unit apart: a margin far below it absorbs float32 rounding
    margin = 0.25 / settings.ticks_per_unit
    return np.concatenate(
        [obs, (bankroll + margin >= units).astype(np.float32), (left + 0.25 >= hands).astype(np.float32)],
        axis=-1,
    )


def featured_space(settings: SessionSettings, features: str) -> gym.spaces.Box:
    """The observation space of ``features`` (:data:`FEATURES`)."""
    if features not in FEATURES:
        raise bad("features", features, ", ".join(FEATURES))
    units, hands = _levels(settings)
    size = 2 if features == "raw" else 2 + len(units) + len(hands)
    return gym.spaces.Box(0.0, 1.0, (size,), dtype=np.float32)


def featured(obs: np.ndarray, settings: SessionSettings, features: str) -> np.ndarray:
    """``obs`` in the code ``features`` (:data:`FEATURES`)."""
    if features not in FEATURES:
        raise bad("features", features, ", ".join(FEATURES))
    return np.asarray(obs, dtype=np.float32) if features == "raw" else thermometer(obs, settings)


class SessionThermometer(gym.ObservationWrapper):
    """A :class:`~pb_gym.envs.session_env.SessionEnv` seen through :func:`thermometer` (RL Zoo's
    ``env_wrapper: pb_gym.agents.session_sb3.SessionThermometer``)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        settings = getattr(env.unwrapped, "settings", None)
        if not isinstance(settings, SessionSettings):
            raise ValueError(
                f"env={env.unwrapped!r} is not allowed; allowed: a session env (pb_gym/Session-v0, "
                "pb_gym/SessionDouble-v0, pb_gym/SessionBold-v0 or a pb_gym.envs.session_env.SessionEnv)"
            )
        self.settings: SessionSettings = settings
        self.observation_space = featured_space(self.settings, "thermometer")

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return thermometer(observation, self.settings)


class SessionSB3VecEnv(NativeVecEnv):
    """A stable-baselines3 ``VecEnv`` of ``num_envs`` sessions of ``task`` (the module docstring).

    Args:
        task: a session task id (``pb_gym/Session-v0``) of :data:`pb_gym.envs.tasks.SESSION_TASKS`.
        num_envs: the tables.
        features: the observation code, one of :data:`FEATURES`.
        seed: table ``i`` is seeded ``seed + i`` at the first reset (None: fresh entropy).
    """

    def __init__(
        self, task: str, num_envs: int = 1, *, features: str = "raw", seed: int | None = None
    ) -> None:
        from pb_gym.envs.tasks import get_session_task

        kwargs = dict(get_session_task(task).kwargs)
        self.venv = SessionVectorEnv(num_envs, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
        self.settings = self.venv.settings
        self.features = features
        space = featured_space(self.settings, features)
        super().__init__(num_envs, space, self.venv.single_action_space)
        self._first_seed = seed
        self._actions: np.ndarray | None = None

    def _code(self, obs: np.ndarray) -> np.ndarray:
        return featured(obs, self.settings, self.features)

    def reset(self) -> VecEnvObs:
        seeds = self._seeds
        if any(s is not None for s in seeds):
            obs, _ = self.venv.reset(seed=list(seeds))
        elif self._first_seed is not None:
            obs, _ = self.venv.reset(seed=self._first_seed)
        else:
            obs, _ = self.venv.reset()
        self._first_seed = None
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._code(obs)

    def step_async(self, actions: np.ndarray) -> None:
        acts = np.asarray(actions)
        if acts.shape == (self.num_envs, 1):  # (a policy's output that keeps the action axis)
            acts = acts[:, 0]
        self._actions = acts  # checked by the session vector env: an integer array of shape (N,)

    def step_wait(self) -> VecEnvStepReturn:
        obs, reward, terminated, truncated, info = self._step_venv()
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            infos[i] = {
                "terminal_observation": self._code(info["final_obs"][i]),
                "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                "is_success": bool(info["final_info"]["is_success"][i]),
            }
        return self._code(obs), reward.astype(np.float32), dones, infos

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"the tables of {type(self).__name__} share their settings; set nothing")

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


__all__ = ["FEATURES", "SessionSB3VecEnv", "SessionThermometer", "featured", "featured_space", "thermometer"]
