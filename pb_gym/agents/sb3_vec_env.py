"""stable-baselines3 adapter for the native vector environment.

SB3 does not accept a Gymnasium ``VectorEnv``; :class:`PuntoBancoSB3VecEnv` is a
``stable_baselines3.common.vec_env.VecEnv`` that drives :class:`pb_gym.envs.PuntoBancoVectorEnv` (in
``SAME_STEP`` autoreset mode) directly, so that ``PPO("MlpPolicy", PuntoBancoSB3VecEnv(64))`` trains
on N tables stepped by one engine call per step (no DummyVecEnv of N single envs)::

    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor
    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    env = VecMonitor(PuntoBancoSB3VecEnv(num_envs=16, max_hands=50))
    PPO("MlpPolicy", env, n_steps=64).learn(10_000)   # the default flat, scaled observation

With ``observation="dict"`` use ``"MultiInputPolicy"``; the defaults (discrete actions, 100-hand
episodes) are the registered env's, so PPO, A2C and DQN all take them.

SB3 conventions: ``reset()`` returns the observations only (reset infos in ``reset_infos``);
``step_wait()`` returns ``(obs, rewards, dones, infos)`` with ``infos`` a list of one dict per table;
where an episode ended the table has already been reset, its dict holds ``terminal_observation`` (the
last observation of the finished episode) and ``TimeLimit.truncated`` (ended by the hand limit or the
end of the shoe, not by ruin or the win target). ``seed(s)`` seeds table ``i`` with ``s + i`` at the
next ``reset()``. ``env_method("action_masks")`` returns one mask per table for sb3-contrib's
MaskablePPO. Wrap it in ``VecMonitor`` for episode statistics (``evaluate_policy`` warns otherwise).

This module imports stable-baselines3 (and so torch); the core package :mod:`pb_gym` never imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from pb_gym.envs.vector import PuntoBancoVectorEnv


class NativeVecEnv(VecEnv):
    """What a stable-baselines3 ``VecEnv`` over one of pb-gym's native vector envs (``self.venv``, all
    its tables stepped by one call) does the same whatever the env: the actions handed on at
    ``step_wait``, attributes and methods called once and split by table where they are per table,
    the action masks. Subclasses make ``venv`` and implement ``reset`` and ``step_wait``."""

    venv: Any
    _actions: np.ndarray | None

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def _step_venv(self) -> tuple:
        """The native env's step of the actions given to :meth:`step_async`."""
        if self._actions is None:
            raise RuntimeError("step_wait() called before step_async()")
        result = self.venv.step(self._actions)
        self._actions = None
        return result

    def close(self) -> None:
        self.venv.close()

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        return list(self._get_indices(indices))

    def _per_table(self, value: Any, indices: VecEnvIndices) -> list[Any]:
        """``value`` for each index: a per-table array (``(N, ...)``) split by table, anything else
        shared."""
        idx = self._indices(indices)
        if isinstance(value, np.ndarray) and value.shape[:1] == (self.num_envs,):
            return [value[i] for i in idx]
        return [value for _ in idx]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attribute of each table: a per-table array attribute of the vector env (e.g. ``bankroll``)
        is split by table; any other attribute (``config``, ``bet_choices``, methods) is shared."""
        return self._per_table(getattr(self.venv, attr_name), indices)

    def env_method(
        self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs
    ) -> list[Any]:
        """Call a method of the vector env once; a per-table array result (``action_masks``: ``(N, m)``)
        is split by table, any other result is returned for each index."""
        if method_name == "render":
            frames = self.venv.render()
            return [None if frames is None else frames[i] for i in self._indices(indices)]
        return self._per_table(getattr(self.venv, method_name)(*method_args, **method_kwargs), indices)

    def action_masks(self) -> np.ndarray:
        """Valid actions of every table, ``(N, m)`` bool (for MaskablePPO)."""
        return self.venv.action_masks()

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._indices(indices)]


class PuntoBancoSB3VecEnv(NativeVecEnv):
    """A stable-baselines3 ``VecEnv`` over the native Punto Banco vector environment.

    Args:
        num_envs: number of tables (ignored when ``venv`` is given).
        venv: an existing :class:`PuntoBancoVectorEnv` built with ``autoreset_mode=SAME_STEP``; by
            default one is built from ``num_envs`` and ``kwargs``.
        **kwargs: environment keyword arguments (see :mod:`pb_gym.envs.punto_banco`).
    """

    def __init__(self, num_envs: int = 1, venv: PuntoBancoVectorEnv | None = None, **kwargs: Any):
        if venv is None:
            venv = PuntoBancoVectorEnv(num_envs, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
        elif kwargs:
            raise ValueError("pass either venv= or environment keyword arguments, not both")
        if not isinstance(venv, PuntoBancoVectorEnv):
            raise ValueError(f"venv={venv!r} is not allowed; allowed: a PuntoBancoVectorEnv")
        if venv.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"venv.autoreset_mode={venv.autoreset_mode} is not allowed; allowed: "
                "AutoresetMode.SAME_STEP (SB3 resets finished environments in the same step)"
            )
        self.venv = venv
        self.render_mode = venv.render_mode
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None
        self._dict_obs = isinstance(self.observation_space, gym.spaces.Dict)

    # ---- core API -------------------------------------------------------------------------------
    def reset(self) -> VecEnvObs:
        seeds = self._seeds
        if all(s is None for s in seeds):
            obs, _ = self.venv.reset()
        else:
            obs, _ = self.venv.reset(seed=list(seeds))
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_wait(self) -> VecEnvStepReturn:
        obs, reward, terminated, truncated, info = self._step_venv()
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        per_table = {k: v for k, v in info.items() if not k.startswith("_") and not k.startswith("final")}
        if per_table:  # hand_info / info_ev: batched arrays -> one dict per table
            shown = info.get(f"_{next(iter(per_table))}", np.ones(self.num_envs, bool))
            for i in np.flatnonzero(shown):
                infos[i] = {k: v[i] for k, v in per_table.items()}
        if dones.any():
            final_obs = info["final_obs"]
            final_info = info.get("final_info", {})
            for i in np.flatnonzero(dones):
                entry = {k: v[i] for k, v in final_info.items() if not k.startswith("_")}
                entry["terminal_observation"] = final_obs[i]
                entry["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                infos[i] = entry
        return obs, reward.astype(np.float32), dones, infos

    # ---- attributes and methods -----------------------------------------------------------------
    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the vector env. The tables share their settings, so only all of them
        (``indices=None``) can be set at once."""
        if len(self._indices(indices)) != self.num_envs:
            raise ValueError(
                "the tables of the native vector env share their settings: set_attr "
                "applies to all tables (indices=None)"
            )
        setattr(self.venv, attr_name, value)

    def get_images(self) -> Sequence[np.ndarray | None]:
        if self.render_mode != "rgb_array":
            return [None for _ in range(self.num_envs)]
        frames = self.venv.render()
        return list(frames) if frames is not None else [None] * self.num_envs
