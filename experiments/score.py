"""``pb-gym score``: a policy scored on a benchmark task by :func:`pb_gym.benchmark.score`.

The policy is a model folder written by ``pb-gym train`` (or its ``model.zip``), or ``module:callable``
naming any importable callable from observations ``(N, obs_dim)`` to actions ``(N,)`` (a module of
the current folder works too: ``my_agent:act``)::

    pb-gym score out/train/discover-fast --task pb_gym/Discover-v0
    pb-gym score my_agent:act --task Discover-v0 --tables 64 --hands 400 --json

:func:`model_policy` is the adapter of a ``pb-gym train`` model to a task's observations: the task's
flat, scaled observation is turned back into the model's own (its Dict in raw units, its observation
transform and VecNormalize statistics), so a model scores on the task exactly as it plays in its
training env. The model's table must be the task's (rules, bets offered, stake levels, limits).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pb_gym import benchmark as B
from pb_gym.envs import table as T
from pb_gym.envs.tasks import Task, get_task

_SAME_TABLE = (
    "rules",
    "bankroll",
    "unit",
    "table_min",
    "table_max",
    "stake_levels",
    "stake_unit",
    "allow_no_bet",
    "action_mode",
    "visible_discards",
    "history",
    "extra_bets",
)
"""The settings a model and a task must share: the same hands, the same actions, the same features."""


def check_same_table(env_kwargs: dict, task: str | Task) -> tuple[T.EnvConfig, T.EnvConfig]:
    """The configs of a model's env (``env_kwargs``) and of ``task``, once it is checked that a model
    of the one can be scored on the other (the same table and features).

    Raises:
        ValueError: the tables differ (each differing setting named) or the observations do.
    """
    spec = get_task(task)
    cfg, task_cfg = T.make_config(**env_kwargs), T.make_config(**spec.kwargs)
    differ = [
        f"{name} (model {getattr(cfg, name)!r}, task {getattr(task_cfg, name)!r})"
        for name in _SAME_TABLE
        if getattr(cfg, name) != getattr(task_cfg, name)
    ]
    if differ:
        raise ValueError(f"the model was trained on another table than {spec.id}'s: " + "; ".join(differ))
    if cfg.obs_keys != task_cfg.obs_keys:
        raise ValueError(f"the model observes {cfg.obs_keys}, {spec.id} {task_cfg.obs_keys}")
    return cfg, task_cfg


class ModelPolicy:
    """A trained SB3 model as a policy of a task's observations (greedy actions).

    Args:
        model: the SB3 model.
        algorithm: its algorithm's name (``PPO``, ``A2C``, ``DQN``, ``MaskablePPO``, ``RecurrentPPO``).
        env_kwargs: the keyword arguments of the env it was trained on (``env.json``).
        obs_transform: its observation transform (:func:`pb_gym.agents.learned.transform_obs`).
        normalizer: its ``VecNormalize`` (observations), or None.
        task: the task whose observations it is given.

    Raises:
        ValueError: the model's table differs from the task's (each differing setting named).
    """

    def __init__(
        self, model, algorithm: str, env_kwargs: dict, obs_transform: str, normalizer, task: str | Task
    ) -> None:
        from pb_gym.agents import learned as L

        self.model, self.algorithm, self.normalizer = model, algorithm, normalizer
        self.transform = obs_transform
        self.task = get_task(task)
        self.cfg, self.task_cfg = check_same_table(env_kwargs, self.task)
        factors = self.task_cfg.obs_factors
        self._unscale = None if factors is None else 1.0 / factors.astype(np.float64)
        if self.cfg.obs_factors is not None:  # the model's own features are scaled too
            self._unscale = (self._unscale if self._unscale is not None else 1.0) * self.cfg.obs_factors
        self._transform_obs = L.transform_obs
        self._hands = self.task_cfg.obs_offsets["hands"][0]
        self._bankroll = self.task_cfg.obs_offsets["bankroll"][0]
        self.lstm_state = None

    def reset(self) -> None:
        """Forget a recurrent policy's state (the scorer calls it before the first hand)."""
        self.lstm_state = None

    def model_obs(self, obs: np.ndarray) -> Any:
        """The model's own observation of the task's ``obs`` (before its transform)."""
        flat = np.asarray(obs, dtype=np.float64)
        if self._unscale is not None:
            flat = flat * self._unscale
        return T.split_obs(self.cfg, flat.astype(np.float32))

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        prepared = self.model_obs(obs)
        if isinstance(prepared, dict):
            prepared = self._transform_obs(self.transform, prepared, self.cfg)
        if self.normalizer is not None:
            prepared = self.normalizer.normalize_obs(prepared)
        kwargs: dict[str, Any] = {"deterministic": True}
        if self.algorithm == "MaskablePPO":
            bankroll = np.asarray(obs, dtype=np.float64)[:, self._bankroll] * self.task_cfg.bankroll_units
            kwargs["action_masks"] = T.action_masks(self.cfg, bankroll)
        if self.algorithm == "RecurrentPPO":
            starts = np.asarray(obs)[:, self._hands] == 0  # no hand yet in this episode
            actions, self.lstm_state = self.model.predict(
                prepared, state=self.lstm_state, episode_start=starts, **kwargs
            )
            return actions
        actions, _ = self.model.predict(prepared, **kwargs)
        return actions


def model_policy(path: str | Path, task: str | Task) -> ModelPolicy:
    """The ``pb-gym train`` model at ``path`` (its folder or ``model.zip``) as a policy of ``task``."""
    from pb_gym.agents import learned as L

    zip_path, meta_path = L.model_files(path)
    meta = L.read_meta(meta_path)
    env_kwargs = L.env_kwargs_from_json(meta["env_kwargs"])
    transform = meta.get("obs_transform", "none")
    model = L.algorithm_class(meta["algorithm"]).load(zip_path, device="cpu")
    normalizer = None
    if meta.get("vecnormalize"):
        normalizer = L._load_normalizer(
            zip_path.parent / meta["vecnormalize"], env_kwargs, transform, T.make_config(**env_kwargs)
        )
    return ModelPolicy(model, meta["algorithm"], env_kwargs, transform, normalizer, task)


def load_policy(source: str, task: str | Task):
    """A policy from the command line: a model folder or ``model.zip``, else ``module:callable``."""
    path = Path(source)
    if path.exists():
        return model_policy(path, task)
    module_name, sep, attr = source.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(
            f"policy {source!r} is not allowed; allowed: a model folder (or model.zip) "
            "written by pb-gym train, or module:callable (an importable callable from "
            "observations (N, obs_dim) to actions (N,))"
        )
    here = os.getcwd()  # a module of the current folder, as `python -m` finds it (for this import only)
    sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"policy {source!r}: module {module_name!r} cannot be imported ({error})") from None
    finally:
        sys.path.remove(here)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"policy {source!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"policy {source!r} is not callable")
    return obj


def run(source: str, task: str, tables: int, hands: int, seed: int) -> dict:
    """Score the policy ``source`` (see :func:`load_policy`) on ``task``; the scorer's result."""
    policy = load_policy(source, task)
    reset = getattr(policy, "reset", None)
    result = B.score(
        policy, task, tables=tables, hands=hands, seed=seed, reset=reset if callable(reset) else None
    )
    result["policy"] = source
    return result


__all__ = ["ModelPolicy", "check_same_table", "load_policy", "model_policy", "run"]
