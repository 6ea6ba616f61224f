"""``pb-gym score``: a policy scored on a benchmark task by :func:`pb_gym.benchmark.score`.

The policy is a model folder written by ``pb-gym train`` (or its ``model.zip``), a ``model.zip`` saved
by stable-baselines3 itself (``model.save``, no ``env.json`` beside it) from a model trained on the
``--task``'s own env (``gymnasium.make(task)``), or ``module:callable`` naming any importable callable
from observations ``(N, obs_dim)`` to actions ``(N,)`` (a module of the current folder works too:
``my_agent:act``)::

    pb-gym score out/train/discover-fast --task pb_gym/Discover-v0
    pb-gym score ppo_discover.zip --task pb_gym/Discover-v0
    pb-gym score my_agent:act --task Discover-v0 --tables 64 --hands 400 --json

A policy's own failure (an exception, a call of ``exit()``) is reported as one line naming it.

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

from pb_gym import benchmark
from pb_gym.envs import config, observation, spaces
from pb_gym.envs.tasks import SessionTask, Task, get_session_task, get_task, is_session_task

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


def check_same_table(env_kwargs: dict, task: str | Task) -> tuple[config.EnvConfig, config.EnvConfig]:
    """The configs of a model's env (``env_kwargs``) and of ``task``, once it is checked that a model
    of the one can be scored on the other (the same table and features).

    Raises:
        ValueError: the tables differ (each differing setting named) or the observations do.
    """
    spec = get_task(task)
    cfg, task_cfg = config.make_config(**env_kwargs), config.make_config(**spec.kwargs)
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
        from pb_gym.experiments.benchmark import discovery  # (its Policy plays a model's own observations)

        self.task = get_task(task)
        self.cfg, self.task_cfg = check_same_table(env_kwargs, self.task)
        self.policy = discovery.Policy(model, algorithm, self.cfg, obs_transform, normalizer)
        factors = self.task_cfg.obs_factors
        self._unscale = None if factors is None else 1.0 / factors.astype(np.float64)
        if self.cfg.obs_factors is not None:  # the model's own features are scaled too
            self._unscale = (self._unscale if self._unscale is not None else 1.0) * self.cfg.obs_factors
        self._hands = self.task_cfg.obs_offsets["hands"][0]
        self._bankroll = self.task_cfg.obs_offsets["bankroll"][0]

    def reset(self) -> None:
        """Forget a recurrent policy's state (the scorer calls it before the first hand)."""
        self.policy.reset()

    def model_obs(self, obs: np.ndarray) -> Any:
        """The model's own observation of the task's ``obs`` (before its transform)."""
        flat = np.asarray(obs, dtype=np.float64)
        if self._unscale is not None:
            flat = flat * self._unscale
        return observation.split_obs(self.cfg, flat.astype(np.float32))

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        flat = np.asarray(obs, dtype=np.float64)
        bankroll = flat[:, self._bankroll] * self.task_cfg.bankroll_units  # (MaskablePPO's masks)
        starts = flat[:, self._hands] == 0  # no hand yet in this episode (RecurrentPPO's state)
        return self.policy.act(self.model_obs(obs), bankroll, starts, probabilities=False)[0]


class PlainModelPolicy(ModelPolicy):
    """A plain stable-baselines3 model (saved by ``model.save()``, no ``env.json``) as a policy of a
    task: a model trained on the task's own env (``gymnasium.make(task)``), whose observations are
    the task's flat ones as they are."""

    def __init__(self, model, algorithm: str, task: str | Task) -> None:
        spec = get_task(task)
        super().__init__(model, algorithm, dict(spec.kwargs), "none", None, spec)

    def model_obs(self, obs: np.ndarray) -> Any:
        return np.asarray(obs, dtype=np.float32)


def _plain_zip(path: Path) -> Path | None:
    """The zip of a plain SB3 model at ``path`` (a zip, or a folder holding ``model.zip``) with no
    ``env.json`` beside it; None for anything else (a ``pb-gym train`` model, checked as such)."""
    import zipfile

    from pb_gym.agents import learned

    zip_path = path / learned.MODEL_FILE if path.is_dir() else path
    if (
        zip_path.is_file()
        and not (zip_path.parent / learned.ENV_FILE).exists()
        and zipfile.is_zipfile(zip_path)
    ):
        return zip_path
    return None


def _sb3_algorithm(zip_path: Path) -> str:
    """The algorithm that saved the SB3 model ``zip_path``, read from its ``data`` (JSON: nothing of
    the model is unpickled to tell): the module of its policy, and for PPO and A2C (one policy
    module) PPO's ``clip_range``."""
    import json
    import zipfile

    from pb_gym.agents import learned

    try:
        with zipfile.ZipFile(zip_path) as archive:
            data = json.loads(archive.read("data"))
        module = data["policy_class"]["__module__"]
    except Exception:  # noqa: BLE001 (a zip that is not an SB3 model: any of many errors)
        raise ValueError(
            f"{zip_path}: not a stable-baselines3 model, and no {learned.ENV_FILE} beside it; allowed: a "
            "model folder written by pb-gym train, or a model saved by SB3's model.save()"
        ) from None
    names = [name for name, policies in learned.POLICY_MODULES.items() if policies == module]
    if not names:
        raise ValueError(
            f"{zip_path}: its policy comes from {module!r}; "
            f"allowed: a model of {', '.join(learned.ALGORITHMS)}"
        )
    if len(names) > 1:  # PPO and A2C share their policies
        return "PPO" if "clip_range" in data else "A2C"
    return names[0]


def _plain_model(zip_path: Path, observation_space: Any, action_space: Any) -> tuple[Any, str, list[str]]:
    """The plain SB3 model at ``zip_path``, its algorithm, and how its spaces differ from these (one
    entry per differing space, both named)."""
    from pb_gym.agents import learned, saved_model

    algorithm = _sb3_algorithm(zip_path)
    try:
        model = learned.algorithm_class(algorithm).load(zip_path, device="cpu")
    except learned.MissingExtra:
        raise
    except Exception as error:  # noqa: BLE001 (a damaged or foreign zip: any of many errors)
        raise ValueError(f"{zip_path}: the {algorithm} model cannot be loaded ({_one_line(error)})") from None
    differ = [
        f"{name}: model {saved_model._space_form(got)}, task {saved_model._space_form(want)}"
        for name, got, want in (
            ("observation space", model.observation_space, observation_space),
            ("action space", model.action_space, action_space),
        )
        if saved_model._space_form(got) != saved_model._space_form(want)
    ]
    return model, algorithm, differ


def plain_model_policy(zip_path: str | Path, task: str | Task) -> PlainModelPolicy:
    """A plain SB3 model (``model.save()``, no ``env.json``) as a policy of ``task``: it must have
    been trained on the task's env (its observation and action spaces are checked).

    Raises:
        ValueError: not an SB3 model, or one of other spaces than the task's (named).
    """
    from pb_gym.agents import learned

    zip_path = Path(zip_path)
    spec = get_task(task)
    cfg = config.make_config(**spec.kwargs)
    model, algorithm, differ = _plain_model(zip_path, spaces.observation_space(cfg), spaces.action_space(cfg))
    if differ:
        raise ValueError(
            f"{zip_path}: a model with no {learned.ENV_FILE} beside it is scored as trained on --task's own "
            f"env, and {spec.id}'s differs ({'; '.join(differ)}); allowed: --task the task it was "
            f"trained on, or the folder pb-gym train wrote (with its {learned.ENV_FILE})"
        )
    return PlainModelPolicy(model, algorithm, spec)


def session_model_policy(zip_path: str | Path, task: str | SessionTask) -> Any:
    """A plain SB3 model trained on a session task's env (``gymnasium.make(task)``) as its policy: its
    deterministic action for each observation (its spaces are checked against the env's).

    Raises:
        ValueError: not an SB3 model, or one of other spaces than the task's (named).
    """
    import gymnasium

    zip_path = Path(zip_path)
    spec = get_session_task(task)
    env = gymnasium.make(spec.id)
    model, _, differ = _plain_model(zip_path, env.observation_space, env.action_space)
    if differ:
        raise ValueError(f"{zip_path}: not a model of {spec.id}'s env ({'; '.join(differ)})")

    def policy(obs: np.ndarray) -> np.ndarray:
        return model.predict(obs, deterministic=True)[0]

    return policy


def _one_line(error: BaseException, limit: int = 200) -> str:
    """An exception as one short line for a message: its type and text, line breaks and control
    characters escaped (a policy's own error may hold anything)."""
    from pb_gym.progress import printable

    if isinstance(error, SystemExit):
        return f"it called exit({error.code!r})"
    text = " ".join(str(error).split())
    text = printable(text if len(text) <= limit else text[:limit] + "...")
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def model_policy(path: str | Path, task: str | Task) -> ModelPolicy:
    """The ``pb-gym train`` model at ``path`` (its folder or ``model.zip``) as a policy of ``task``."""
    from pb_gym.agents import learned

    zip_path, meta_path = learned.model_files(path)
    meta = learned.read_meta(meta_path)
    env_kwargs = learned.env_kwargs_from_json(meta["env_kwargs"])
    transform = meta.get("obs_transform", "none")
    model = learned.algorithm_class(meta["algorithm"]).load(zip_path, device="cpu")
    normalizer = None
    if meta.get("vecnormalize"):
        normalizer = learned._load_normalizer(
            zip_path.parent / meta["vecnormalize"], env_kwargs, transform, config.make_config(**env_kwargs)
        )
    return ModelPolicy(model, meta["algorithm"], env_kwargs, transform, normalizer, task)


def load_policy(source: str, task: str | Task):
    """A policy from the command line: a model folder or ``model.zip``, else ``module:callable``."""
    path = Path(source)
    if path.exists():
        plain = _plain_zip(path)
        if is_session_task(task):
            if plain is None:
                raise ValueError(
                    f"policy {source!r}: a pb-gym train model plays the Discover tasks' env; allowed for "
                    f"{get_session_task(task).id}: a model.zip saved by SB3 from its env, or module:callable"
                )
            return session_model_policy(plain, task)
        return model_policy(path, task) if plain is None else plain_model_policy(plain, task)
    module_name, sep, attr = source.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(
            f"policy {source!r} is not allowed; allowed: a model folder (or model.zip) "
            "written by pb-gym train, a model.zip saved by SB3, or module:callable (an "
            "importable callable from observations (N, obs_dim) to actions (N,))"
        )
    if module_name.startswith("."):  # (importlib needs a package to resolve it against)
        raise ValueError(
            f"policy {source!r}: a relative module name ({module_name!r}) is not allowed; allowed: "
            f"an absolute one, e.g. {module_name.lstrip('.') or 'my_agent'}:{attr} from its folder"
        )
    here = os.getcwd()  # a module of the current folder, as `python -m` finds it (for this import only)
    sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"policy {source!r}: module {module_name!r} cannot be imported ({error})") from None
    except (KeyboardInterrupt, MemoryError):
        raise
    except BaseException as error:  # its own code failed (or exited) while it was imported
        raise ValueError(
            f"policy {source!r}: module {module_name!r} failed while it was imported ({_one_line(error)})"
        ) from None
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


def run(
    source: str,
    task: str,
    tables: int,
    hands: int,
    seed: int,
    *,
    sessions: int | None = None,
    exact: bool = False,
) -> dict:
    """Score the policy ``source`` (see :func:`load_policy`) on ``task``; the scorer's result. A session
    task is played for ``sessions`` sessions (``tables`` and ``hands`` are the Discover tasks'), and
    with ``exact`` the policy is also valued exactly, asked once per state (right for a deterministic
    policy of the observation)."""
    policy = load_policy(source, task)
    if is_session_task(task):
        result = benchmark.score(
            _guarded(policy, source, "called with observations (N, 2) float32"),
            task,
            seed=seed,
            sessions=sessions,
            exact=exact,
        )
    else:
        reset = getattr(policy, "reset", None)
        result = benchmark.score(
            _guarded(policy, source, "called with observations (N, obs_dim) float32"),
            task,
            tables=tables,
            hands=hands,
            seed=seed,
            reset=_guarded(reset, source, "reset") if callable(reset) else None,
        )
    result["policy"] = source
    return result


def _guarded(call: Any, source: str, doing: str) -> Any:
    """``call`` with its failures (any exception, a ``SystemExit``) made one :class:`ValueError`
    naming the policy: the user's code may raise anything, or call ``exit()``, which would otherwise
    end the command silently with its status."""

    def guarded(*args: Any) -> Any:
        try:
            return call(*args)
        except (KeyboardInterrupt, MemoryError):
            raise
        except BaseException as error:
            raise ValueError(
                f"policy {source!r} failed when {doing} ({_one_line(error)}); allowed: a callable "
                "from observations (N, obs_dim) float32 to actions (N,)"
            ) from None

    return guarded


__all__ = [
    "session_model_policy",
    "ModelPolicy",
    "PlainModelPolicy",
    "check_same_table",
    "load_policy",
    "model_policy",
    "plain_model_policy",
    "run",
]
