"""Train a stable-baselines3 agent from a YAML config, then evaluate it beside the betting systems.

``pb-gym train CONFIG [--out DIR] [--json] [--no-resume]``

One readable file, top to bottom (CleanRL style):

1. Config: the algorithm (PPO, A2C, DQN, MaskablePPO, RecurrentPPO), its hyperparameters (checked
   against the algorithm's constructor), the policy, the environment's keyword arguments (rules,
   table, action mode, ...), parallel tables, timesteps, seed, and the held-out evaluation.
2. Environment: the native vector env through :class:`agents.sb3_vec_env.PuntoBancoSB3VecEnv`, wrapped
   in ``VecMonitor`` (episode statistics), an optional observation transform and ``VecNormalize``
   (running mean / std of the observations; saved and reused at evaluation).
3. Training with SB3's progress bar (on a terminal) and a callback recording the learning curve: mean
   reward per hand (units) and the share of hands with a bet requested, every ``timesteps / curve_points``
   timesteps (CSV and PNG).
4. Saving: ``model.zip``, ``env.json`` (the environment settings the model needs), ``vecnormalize.pkl``
   and the resolved ``config.yaml`` under ``out`` (default ``out/train/<name>``).
5. Held-out evaluation with the SAME machinery as ``pb-gym evaluate``: a :class:`StudyConfig` whose
   systems are the learned policy (``type: sb3``), flat banker at the table minimum and the never-betting
   baseline (plus any ``evaluation.systems``), on seeds not used in training; the same report, plus the
   profit per hand dealt of each system with a 95% CI over sessions (and paired with the learned one).
6. Discovery (optional ``discovery:`` section; :mod:`experiments.discovery`): the exact scoring against
   the perfect-information bettor, the known optimum -- an exact learning curve during training, then
   exact and realized profit per hand, regret, the best linear count and a calibration plot.
7. Resume: each step is kept in ``OUT/.partial`` as it finishes (the trained model, the discovery
   scoring, each chunk of ``evaluation.chunk_sessions`` held-out sessions) with the config it belongs
   to (:mod:`experiments.chunk_store`); an interrupted run rerun with the same command does only what
   is missing, and writes what an uninterrupted run writes. Training itself keeps a checkpoint every
   few minutes (:mod:`experiments.train_checkpoint`) and continues from the last one, bit for bit.

Levers for the side-bet task, each a config key: ``env.reward: expected`` (the exact EV of the stakes
for the unseen cards as the training reward: unbiased, without the 40:1 outcome noise),
``init_abstain`` (the initial policy mostly abstains), ``learning_rate_schedule: linear``, and the
observation transform.
"""

from __future__ import annotations

import csv
import inspect
import math
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import Field, field_validator, model_validator

from pb_gym import exact, strict_json
from pb_gym import rules as R
from pb_gym.agents import learned as L
from pb_gym.envs import table as T
from pb_gym.experiments import chunk_store, outputs, plotting, stats
from pb_gym.experiments import train_checkpoint as CK
from pb_gym.experiments.config import (
    CUSTOM_BETS_HELP,
    ConfigError,
    CustomBets,
    RulesConfig,
    Strict,
    TableLimits,
    load,
    validate,
)
from pb_gym.experiments.discovery import DiscoveryConfig
from pb_gym.experiments.evaluate import run_study
from pb_gym.experiments.evaluate_config import AnySystem, StudyConfig
from pb_gym.experiments.evaluate_report import json_report, print_report, write_outputs
from pb_gym.experiments.scale import ChunkError

RESERVED = {"self", "policy", "env", "seed", "verbose", "device", "_init_setup_model", "tensorboard_log"}
"""Constructor arguments set by this script (not hyperparameters)."""
NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")
"""What a run's ``name`` may be: a folder name, never a path."""
ALGORITHM_MODES = {
    "PPO": ("multidiscrete", "discrete"),
    "A2C": ("multidiscrete", "discrete"),
    "DQN": ("discrete",),
    "MaskablePPO": ("multidiscrete", "discrete"),
    "RecurrentPPO": ("multidiscrete", "discrete"),
}


# ---------------------------------------------------------------------------------------- config
class EnvConfig(Strict):
    """The ``env:`` section: keyword arguments of the environment (money amounts in money)."""

    rules: RulesConfig = RulesConfig()
    table: TableLimits = TableLimits(unit=10, minimum=10, maximum=5000)
    bankroll: float = Field(1000.0, gt=0, description="starting bankroll, money")
    win_target: float | None = Field(None, gt=0, description="episode ends when the bankroll reaches it")
    max_hands: int | None = Field(100, ge=1, description="hands per episode (None: no limit)")
    one_shoe: bool = False
    visible_discards: bool = True
    history: int = Field(20, ge=1, le=1000)
    action_mode: Literal["multidiscrete", "discrete"] = "multidiscrete"
    stake_levels: list[float] | None = None
    stake_unit: Literal["units", "fraction"] = "units"
    allow_no_bet: bool = True
    reward: Literal[T.REWARDS] = Field(  # type: ignore[valid-type]
        "realized",
        description="training reward: the hand's net win; the exact EV of the stakes "
        "given the cards unseen (unbiased, no outcome noise); or the exact expected log growth of the "
        "bankroll given them (Kelly's objective); the evaluation is always realized",
    )
    custom_bets: CustomBets = Field(
        (),
        description=CUSTOM_BETS_HELP + "; offer one by naming it "
        "in rules.side_bets (the held-out evaluation offers it too)",
    )

    @model_validator(mode="after")
    def _env_accepts_it(self) -> EnvConfig:
        if self.bankroll < self.table.minimum:
            raise ValueError(f"bankroll {self.bankroll:g} is below table.minimum {self.table.minimum:g}")
        if self.win_target is not None and self.win_target <= self.bankroll:
            raise ValueError(f"win_target {self.win_target:g} must be above bankroll {self.bankroll:g}")
        T.make_config(**self.kwargs())  # stake levels etc.: let the environment say what is wrong
        return self

    def kwargs(self) -> dict[str, Any]:
        """The environment's keyword arguments."""
        rules = self.rules.model_dump()
        rules["side_bets"] = tuple(rules["side_bets"])
        out = dict(
            rules,
            bankroll=self.bankroll,
            unit=self.table.unit,
            table_min=self.table.minimum,
            table_max=self.table.maximum,
            win_target=self.win_target,
            max_hands=self.max_hands,
            one_shoe=self.one_shoe,
            visible_discards=self.visible_discards,
            history=self.history,
            action_mode=self.action_mode,
            stake_unit=self.stake_unit,
            allow_no_bet=self.allow_no_bet,
            reward=self.reward,
            # the Dict in raw units: the observation transforms work on its "shoe" field and
            # VecNormalize (normalize.observations) scales every feature
            observation="dict",
            obs_scale="raw",
        )
        if self.stake_levels is not None:
            out["stake_levels"] = tuple(self.stake_levels)
        if self.custom_bets:  # recorded in env.json: a replay rebuilds the same bet columns
            out["custom_bets"] = [dict(bet) for bet in self.custom_bets]
        return out


class NormalizeConfig(Strict):
    """The ``normalize:`` section (VecNormalize; the statistics are saved with the model)."""

    observations: bool = True
    rewards: bool = False
    clip_obs: float = Field(10.0, gt=0)


class EvaluationConfig(Strict):
    """The ``evaluation:`` section: the held-out study run after training."""

    sessions: int = Field(2000, ge=1)
    hands: int | None = Field(
        None,
        ge=1,
        description="hands per session at most; default env.max_hands "
        "(with one_shoe, the most one shoe can deal)",
    )
    one_shoe: bool | None = Field(
        None,
        description="each held-out session is one shoe and ends with it, "
        "as a one_shoe training episode does; default env.one_shoe",
    )
    seed: int = Field(1_000_003, ge=0, description="held-out seed (must differ from the training seed)")
    bankroll: float | None = Field(None, gt=0, description="default: env.bankroll")
    win_goal: float | None = Field(None, gt=0, description="default: env.win_target - env.bankroll")
    stop_loss: float | None = Field(None, gt=0)
    deterministic: bool = True
    baselines: bool = True
    sample_paths: int = Field(5, ge=0, le=50)
    exact_conditional: bool = Field(
        False,
        description="compare each system's EV per unit wagered "
        "with the exact EV of the cards unseen before its bets",
    )
    systems: list[AnySystem] = Field(default_factory=list, description="more systems to compare")
    chunk_sessions: int | None = Field(
        None,
        ge=1,
        description="sessions per chunk, the unit a resumed "
        "evaluation keeps (default: pb-gym evaluate's); the chunks are "
        "seeded by their index, so this changes the hands dealt",
    )


HYPERPARAMETER_RANGES: dict[str, tuple[type, float, float]] = {
    "n_steps": (int, 1, 10**7),
    "batch_size": (int, 1, 10**7),
    "n_epochs": (int, 1, 10**4),
    "buffer_size": (int, 1, 10**8),
    "learning_starts": (int, 0, 10**12),
    "gradient_steps": (int, -1, 10**6),
    "target_update_interval": (int, 1, 10**12),
    "stats_window_size": (int, 1, 10**6),
    "sde_sample_freq": (int, -1, 10**9),
    "learning_rate": (float, 0, 1),
    "gamma": (float, 0, 1),
    "gae_lambda": (float, 0, 1),
    "ent_coef": (float, 0, 100),
    "vf_coef": (float, 0, 100),
    "max_grad_norm": (float, 0, 10**6),
    "clip_range": (float, 0, 100),
    "clip_range_vf": (float, 0, 100),
    "target_kl": (float, 0, 100),
    "rms_prop_eps": (float, 0, 1),
    "tau": (float, 0, 1),
    "exploration_fraction": (float, 0, 1),
    "exploration_initial_eps": (float, 0, 1),
    "exploration_final_eps": (float, 0, 1),
}
"""Ranges of the numeric SB3 hyperparameters (type, lowest, highest; ``learning_rate``,
``clip_range``, ``clip_range_vf`` and ``target_kl`` > 0): SB3 checks few of them, and a bad one fails
minutes later deep in its training loop (``n_epochs: -1`` ends in an ``UnboundLocalError``; a
learning rate or ``ent_coef`` of 1e300 in NaN logits). A parameter whose default is None
(``target_kl``, ``clip_range_vf``) may also be null. Every other one is checked against the type of its
default in the algorithm's signature (:func:`_check_hyperparameter_types`)."""
_EXCLUSIVE = frozenset({"learning_rate", "clip_range", "clip_range_vf", "target_kl", "rms_prop_eps"})
_KWARGS = frozenset({"policy_kwargs", "rollout_buffer_kwargs", "replay_buffer_kwargs"})
"""Hyperparameters that are mappings of keyword arguments (or null)."""
MAX_ANY_NUMBER = 1e12
"""The largest magnitude of a numeric hyperparameter with no range of its own."""


def _check_hyperparameter_ranges(params: dict) -> None:
    for name, (kind, low, high) in HYPERPARAMETER_RANGES.items():
        if name not in params:
            continue
        value = params[name]
        if value is None and name in ("clip_range_vf", "target_kl"):
            continue
        exclusive = name in _EXCLUSIVE
        ok = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and (kind is float or isinstance(value, int))
            and math.isfinite(value)
            and (low < value if exclusive else low <= value)
            and value <= high
        )
        if not ok:
            what = "an integer" if kind is int else "a number"
            bounds = (f"> {low:g}" if exclusive else f">= {low:g}") + f" and <= {high:g}"
            if name in ("clip_range_vf", "target_kl"):
                bounds += ", or null"
            raise ValueError(
                f"hyperparameters.{name}: {str(value)[:40]} is not allowed; allowed: {what} {bounds}"
            )


def _check_train_freq(value: object) -> None:
    """DQN's ``train_freq``: an integer >= 1 (steps), or ``[n, "step"|"episode"]``."""
    if isinstance(value, list) and len(value) == 2 and value[1] in ("step", "episode"):
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10**9:
        raise ValueError(
            f"hyperparameters.train_freq: {str(value)[:40]} is not allowed; allowed: an "
            "integer from 1 to 1e9 (steps), or [n, step] or [n, episode]"
        )


def _check_hyperparameter_types(cls: type, params: dict) -> None:
    """Each hyperparameter against the type of its default in ``cls.__init__``: a flag (default True
    or False) must be true or false (``"no"`` is refused, not read as truthy), an integer an integer,
    a number a finite number, a ``*_kwargs`` a mapping (or null), a class-valued one (default None,
    e.g. ``rollout_buffer_class``) null; then the ranges (:data:`HYPERPARAMETER_RANGES`)."""
    defaults = {n: p.default for n, p in inspect.signature(cls.__init__).parameters.items()}
    for name, value in params.items():
        default = defaults.get(name)
        where = f"hyperparameters.{name}: {str(value)[:40]} is not allowed; allowed: "
        if name == "train_freq":
            _check_train_freq(value)
        elif name in _KWARGS:
            if value is not None and (
                not isinstance(value, dict) or not all(isinstance(k, str) for k in value)
            ):
                raise ValueError(where + "a mapping of keyword arguments, or null")
        elif name in HYPERPARAMETER_RANGES:
            continue
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ValueError(where + "true or false")
        elif isinstance(default, (int, float)):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or isinstance(default, int)
                and not isinstance(value, int)
                or not math.isfinite(value)
                or abs(value) > MAX_ANY_NUMBER
            ):
                what = "an integer" if isinstance(default, int) else "a finite number"
                raise ValueError(where + f"{what} of magnitude <= {MAX_ANY_NUMBER:g}")
        elif default is None and name.endswith("_class"):
            if value is not None:
                raise ValueError(where + "null (a class cannot be named in a config)")
    _check_hyperparameter_ranges(params)


def _check_net_arch(net_arch: object) -> None:
    """``policy_kwargs.net_arch``: a list of layer sizes (ints >= 1), or a dict of such lists per
    network (``pi``/``vf``, ``qf``), as SB3 takes it; anything else fails deep inside torch."""
    if net_arch is None:
        return
    allowed = "a list of layer sizes (integers >= 1), e.g. [64, 64], or {pi: [...], vf: [...]} (qf for DQN)"
    lists = net_arch.values() if isinstance(net_arch, dict) else [net_arch]
    for layers in lists:
        if not isinstance(layers, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 65536 for n in layers
        ):
            raise ValueError(
                f"hyperparameters.policy_kwargs.net_arch: {str(net_arch)[:80]} is not "
                f"allowed; allowed: {allowed}"
            )


class TrainConfig(Strict):
    """``configs/train/*.yaml``."""

    name: str = Field("train", description="the run's folder name: out/train/NAME")
    algorithm: Literal["PPO", "A2C", "DQN", "MaskablePPO", "RecurrentPPO"]
    policy: str = "MultiInputPolicy"
    hyperparameters: dict[str, Any] = Field(default_factory=dict)
    env: EnvConfig = EnvConfig()
    obs_transform: Literal[L.OBS_TRANSFORMS] = "none"  # type: ignore[valid-type]
    normalize: NormalizeConfig = NormalizeConfig()
    n_envs: int = Field(64, ge=1, le=65536, description="parallel tables")
    total_timesteps: int = Field(ge=1)
    seed: int = Field(0, ge=0)
    curve_points: int = Field(100, ge=2, le=10_000)
    threads: int = Field(1, ge=1, description="torch threads (at most the machine's cores)")
    learning_rate_schedule: Literal["constant", "linear"] = Field(
        "constant", description="linear: hyperparameters.learning_rate decays linearly to 0"
    )
    init_abstain: float | None = Field(
        None,
        ge=-100,
        le=100,
        description="added to the no-bet logit of the initial policy (actor-critic "
        "algorithms): the agent starts by mostly abstaining instead of betting at random",
    )
    evaluation: EvaluationConfig = EvaluationConfig()
    discovery: DiscoveryConfig | None = Field(
        None,
        description="score the agent against the perfect-information bettor (exact EVs): "
        "experiments/discovery.py",
    )

    @field_validator("threads")
    @classmethod
    def _at_most_the_cores(cls, threads: int) -> int:
        from pb_gym import threads as pb_threads

        if threads > pb_threads.cores():  # (thousands crash inside torch or libgomp)
            raise ValueError(
                f"{threads} is not allowed; allowed: an integer from 1 to "
                f"{pb_threads.cores()} (this machine's cores)"
            )
        return threads

    @field_validator("name")
    @classmethod
    def _a_name_not_a_path(cls, name: str) -> str:
        # the default output folder is out/train/NAME: a path here would write anywhere
        if not NAME.fullmatch(name):
            raise ValueError(
                f"{name[:80]!r} is not allowed; allowed: a plain name of 1-64 letters, "
                "digits, '.', '_' or '-' that does not start with '.' (no '/', no '..'): "
                "the run is saved in out/train/NAME (use --out DIR for another folder)"
            )
        return name

    @model_validator(mode="after")
    def _consistent(self) -> TrainConfig:
        cls = L.algorithm_class(self.algorithm)
        allowed = [p for p in inspect.signature(cls.__init__).parameters if p not in RESERVED]
        unknown = sorted(set(self.hyperparameters) - set(allowed))
        if unknown:
            reserved = sorted(set(unknown) & RESERVED)
            extra = (
                (
                    f" ({', '.join(reserved)}: set by the config's own keys: policy, seed; env is "
                    "built from env)"
                )
                if reserved
                else ""
            )
            raise ValueError(
                f"hyperparameters: unknown for {self.algorithm}: {', '.join(unknown)}"
                f"{extra}; allowed: {', '.join(allowed)}"
            )
        _check_hyperparameter_types(cls, self.hyperparameters)
        _check_net_arch((self.hyperparameters.get("policy_kwargs") or {}).get("net_arch"))
        policies = [p for p in cls.policy_aliases if not p.startswith("Cnn")]
        if self.policy not in policies:
            raise ValueError(
                f"policy {self.policy!r} is not allowed for {self.algorithm}; allowed: {', '.join(policies)}"
            )
        if not self.policy.startswith("MultiInput"):
            raise ValueError(
                f"policy {self.policy!r}: the observation is a Dict; use "
                f"{'MultiInputLstmPolicy' if 'Lstm' in self.policy else 'MultiInputPolicy'}"
            )
        modes = ALGORITHM_MODES[self.algorithm]
        if self.env.action_mode not in modes:
            raise ValueError(
                f"env.action_mode {self.env.action_mode!r} is not allowed for "
                f"{self.algorithm}; allowed: {', '.join(modes)}"
            )
        if self.evaluation.seed == self.seed:
            raise ValueError(
                f"evaluation.seed ({self.evaluation.seed}) must differ from the training "
                "seed: the evaluation is on held-out hands"
            )
        if self.evaluation.hands is None and self.env.max_hands is None and not _held_out_one_shoe(self):
            raise ValueError(
                "evaluation.hands is required when env.max_hands is None (unless the "
                "held-out sessions are single shoes: env.one_shoe or evaluation.one_shoe)"
            )
        if self.init_abstain is not None and (self.algorithm == "DQN" or not self.env.allow_no_bet):
            raise ValueError(
                "init_abstain needs an actor-critic algorithm (PPO, A2C, MaskablePPO, "
                "RecurrentPPO) and env.allow_no_bet: true"
            )
        if self.discovery is not None:  # any bet the table offers: a catalog side bet, a user bet
            offered = T.make_config(**self.env.kwargs()).bets.offered
            for bet in self.discovery.bets:
                if bet not in offered:
                    raise ValueError(
                        f"discovery.bets: {bet!r} is not offered by env.rules; offered: {', '.join(offered)}"
                    )
        _check_evaluation(self)
        return self


def _check_evaluation(config: TrainConfig) -> None:
    """Validate the held-out study now (not after training), naming ``evaluation.systems.<i>``."""
    data = _study_data(config, model=None)
    offset = len(data["systems"]) - len(config.evaluation.systems)
    try:
        validate(data, StudyConfig, "evaluation")
    except ConfigError as error:
        lines = []
        for line in str(error).splitlines():
            line = re.sub(r"^evaluation: (\(top level\): )?", "", line)
            line = re.sub(
                r"systems\.(\d+)",
                lambda m: (
                    f"evaluation.systems.{int(m.group(1)) - offset}"
                    if int(m.group(1)) >= offset
                    else f"evaluation (built-in system {data['systems'][int(m.group(1))]['name']!r})"
                ),
                line,
            )
            lines.append(line if line.startswith("evaluation") else f"evaluation: {line}")
        raise ValueError("; ".join(lines)) from None


# ------------------------------------------------------------------------------------- environment
def make_env(config: TrainConfig):
    """The training VecEnv: native vector env -> VecMonitor -> obs transform -> VecNormalize."""
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    kwargs = config.env.kwargs()
    env = VecMonitor(PuntoBancoSB3VecEnv(num_envs=config.n_envs, **kwargs))
    env = L.obs_transform_wrapper(env, config.obs_transform, T.make_config(**kwargs))
    norm = config.normalize
    if norm.observations or norm.rewards:
        env = VecNormalize(
            env,
            norm_obs=norm.observations,
            norm_reward=norm.rewards,
            clip_obs=norm.clip_obs,
            gamma=config.hyperparameters.get("gamma", 0.99),
        )
    env.seed(config.seed)
    return env


def hyperparameters(config: TrainConfig) -> dict[str, Any]:
    """The hyperparameters as SB3 wants them (lists -> tuples for train_freq, activation names)."""
    params = dict(config.hyperparameters)
    if isinstance(params.get("train_freq"), list):
        params["train_freq"] = tuple(params["train_freq"])
    policy_kwargs = dict(params.get("policy_kwargs") or {})
    if isinstance(policy_kwargs.get("activation_fn"), str):
        import torch.nn

        name = policy_kwargs["activation_fn"]
        if not hasattr(torch.nn, name):
            raise ConfigError(
                f"hyperparameters.policy_kwargs.activation_fn: {name!r} is not a "
                "torch.nn activation (e.g. ReLU, Tanh)"
            )
        policy_kwargs["activation_fn"] = getattr(torch.nn, name)
    if policy_kwargs:
        params["policy_kwargs"] = policy_kwargs
    if config.learning_rate_schedule == "linear":
        cls = L.algorithm_class(config.algorithm)
        start = float(
            params.get("learning_rate", inspect.signature(cls.__init__).parameters["learning_rate"].default)
        )
        params["learning_rate"] = LinearSchedule(start)
    return params


class LinearSchedule:
    """``learning_rate x progress_remaining`` (1 at the start of training, 0 at the end); a class, not a
    lambda, so that the saved model records what it was."""

    def __init__(self, start: float) -> None:
        self.start = start

    def __call__(self, progress_remaining: float) -> float:
        return self.start * progress_remaining

    def __repr__(self) -> str:
        return f"LinearSchedule({self.start:g})"


def start_abstaining(model, bias: float) -> None:
    """Add ``bias`` to the no-bet logit of the policy's action head (the first output: action 0 of
    the discrete mode, bet choice 0 of the multidiscrete mode), so that the initial policy mostly
    abstains rather than betting at random."""
    import torch

    with torch.no_grad():
        model.policy.action_net.bias[0] += float(bias)


# ------------------------------------------------------------------------------- learning curve
def next_mark(mark: int, timesteps: int, every: int) -> int:
    """The first of ``mark``, ``mark + every``, ... past ``timesteps``: a callback's next row after
    the one it just wrote (one step of n envs may pass several marks; it writes one row for them)."""
    while mark <= timesteps:
        mark += every
    return mark


CURVE_STATE = (
    "rows",
    "reward_sum",
    "hands",
    "bets",
    "episodes",
    "episode_return",
    "episode_hands",
    "next_at",
)
"""What the learning curve's callback carries from one rollout to the next (kept in checkpoints)."""


def make_curve_callback(every: int, cfg: T.EnvConfig):
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecNormalize

    class LearningCurve(BaseCallback):
        """Mean reward per hand (raw units) and share of hands with a bet requested, per window."""

        def __init__(self) -> None:
            super().__init__()
            self.rows: list[dict[str, float]] = []
            self.resumed = False
            self._reset_window()

        def _reset_window(self) -> None:
            self.reward_sum = 0.0
            self.hands = 0
            self.bets = 0
            self.episodes = 0
            self.episode_return = 0.0
            self.episode_hands = 0

        def _on_training_start(self) -> None:
            if not self.resumed:  # (continuing from a checkpoint: pb_gym.experiments.train_checkpoint)
                self.next_at = every
            env = self.training_env
            self.normalizer = env if isinstance(env, VecNormalize) else None

        def checkpoint_state(self) -> dict:
            return {key: getattr(self, key) for key in CURVE_STATE}

        def resume_from(self, state: dict) -> None:
            self.__dict__.update(state)
            self.resumed = True

        def _on_step(self) -> bool:
            rewards = (
                self.normalizer.get_original_reward()
                if self.normalizer is not None
                else self.locals["rewards"]
            )
            rewards = np.asarray(rewards, dtype=np.float64)
            self.reward_sum += float(rewards.sum())
            self.hands += rewards.size
            actions = np.asarray(self.locals.get("actions")).reshape(rewards.size, -1)
            if cfg.allow_no_bet:
                self.bets += int((actions[:, 0] != 0).sum())
            else:
                self.bets += rewards.size
            for info in self.locals.get("infos", []):
                episode = info.get("episode")
                if episode is not None:
                    self.episodes += 1
                    self.episode_return += float(episode["r"])
                    self.episode_hands += int(episode["l"])
            if self.num_timesteps >= self.next_at:
                self._flush()
                self.next_at = next_mark(self.next_at, self.num_timesteps, every)
            return True

        def _flush(self) -> None:
            if self.hands == 0:
                return
            self.rows.append(
                {
                    "timesteps": self.num_timesteps,
                    "reward_per_hand": self.reward_sum / self.hands,
                    "bet_rate": self.bets / self.hands,
                    "episodes": self.episodes,
                    "episode_return": self.episode_return / self.episodes if self.episodes else math.nan,
                    "episode_hands": self.episode_hands / self.episodes if self.episodes else math.nan,
                }
            )
            self._reset_window()

        def _on_training_end(self) -> None:
            self._flush()

    return LearningCurve()


def write_curve(rows: list[dict], out: Path, title: str, cfg: T.EnvConfig) -> list[Path]:
    """``learning_curve.csv`` and ``learning_curve.png`` (with the flat-banker and abstain levels)."""
    csv_path, png_path = out / "learning_curve.csv", out / "learning_curve.png"
    with open(csv_path, "w", newline="") as handle:
        writer = csv.DictWriter(
            handle,
            fieldnames=[
                "timesteps",
                "reward_per_hand",
                "bet_rate",
                "episodes",
                "episode_return",
                "episode_hands",
            ],
        )
        writer.writeheader()
        writer.writerows(rows)
    plt = plotting.pyplot()
    banker = float(exact.expected_values(R.full_shoe(cfg.rules.decks), cfg.rules)[R.BETS.index("banker")])
    x = [r["timesteps"] for r in rows]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    ax.plot(x, [r["reward_per_hand"] for r in rows], label="learned (training rollouts)")
    ax.axhline(0.0, color="k", lw=0.6, ls=":", label="never bet")
    ax.axhline(
        banker * cfg.min_units,
        color="C3",
        lw=0.8,
        ls="--",
        label=f"flat banker at the minimum ({banker * cfg.min_units:+.4f})",
    )
    ax.set_ylabel("mean reward per hand (units)")
    ax.legend(fontsize=7)
    ax.set_title(title)
    ax2.plot(x, [r["bet_rate"] for r in rows], color="C2")
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_ylabel("share of hands bet")
    ax2.set_xlabel("timesteps (hands, all tables)")
    plotting.save(fig, png_path)
    return [csv_path, png_path]


# ---------------------------------------------------------------------------------------- evaluation
def _study_data(config: TrainConfig, model: Path | None) -> dict:
    """The held-out study as config data (``model=None``: a placeholder for the learned policy)."""
    env, ev = config.env, config.evaluation
    base = env.table.minimum / env.table.unit
    bankroll = ev.bankroll if ev.bankroll is not None else env.bankroll
    win_goal = ev.win_goal
    if win_goal is None and env.win_target is not None:
        win_goal = env.win_target - env.bankroll
    learned = {"name": f"{config.algorithm} (learned)", "base": base}
    learned.update(
        {"type": "never"}
        if model is None
        else {"type": "sb3", "model": str(model), "deterministic": ev.deterministic}
    )
    systems: list[dict] = [learned]
    if ev.baselines:
        systems += [
            {"type": "flat", "bet": "banker", "name": "flat banker", "base": base},
            {"type": "never", "name": "never bet", "base": base},
        ]
    systems += [s.model_dump() for s in ev.systems]
    data = {
        "name": f"{config.name} (held-out, seed {ev.seed})",
        "rules": env.rules.model_dump(),
        "table": env.table.model_dump(),
        "bankroll": bankroll,
        "sessions": ev.sessions,
        "hands": ev.hands or env.max_hands or env.rules.to_rules().most_hands_per_shoe,
        "one_shoe": _held_out_one_shoe(config),
        "win_goal": win_goal,
        "stop_loss": ev.stop_loss,
        "seed": ev.seed,
        "sample_paths": ev.sample_paths,
        "exact_conditional": ev.exact_conditional,
        "systems": systems,
    }
    if ev.chunk_sessions is not None:
        data["chunk_sessions"] = ev.chunk_sessions
    if env.custom_bets:
        data["custom_bets"] = [dict(bet) for bet in env.custom_bets]
    return data


def _held_out_one_shoe(config: TrainConfig) -> bool:
    """Whether the held-out sessions are single shoes: ``evaluation.one_shoe``, by default the env's."""
    one_shoe = config.evaluation.one_shoe
    return config.env.one_shoe if one_shoe is None else one_shoe


def episode_note(config: TrainConfig) -> str | None:
    """A note when the held-out sessions are longer than the training episodes can be: with
    ``env.one_shoe`` an episode is one shoe, but a session of ``evaluation.hands`` hands that no shoe
    holds, with ``evaluation.one_shoe: false``, runs across shoes, where the policy's episode counters
    take values it never trained on."""
    if (
        not config.env.one_shoe
        or _held_out_one_shoe(config)
        or not L.sees_hand_counters(config.obs_transform)
    ):
        return None
    hands = config.evaluation.hands or config.env.max_hands
    most = config.env.rules.to_rules().most_hands_per_shoe
    if hands is None or hands <= most:
        return None
    return (
        f"NOTE: the policy was trained on one-shoe episodes (env.one_shoe), but the held-out "
        f"sessions (evaluation.one_shoe: false) play up to {hands} hands, across shoes (a shoe "
        f"deals at most {most}): there its episode counters take values it never saw, and it may "
        "bet differently than in its own episodes."
    )


def evaluation_study(config: TrainConfig, model_path: Path) -> StudyConfig:
    """The held-out study: the learned policy next to flat banker and never betting (and any
    ``evaluation.systems``), with the training environment's rules, table and bankroll."""
    return validate(_study_data(config, model_path), StudyConfig, f"{config.name}: evaluation")


def profit_per_hand(report: dict) -> list[dict]:
    """Profit per hand dealt (money) of every system with a 95% CI over sessions, and the paired
    difference from the first system (the learned policy; same hands, so the CI is paired). Sessions
    may differ in length (``one_shoe``: each ends with its shoe), so the figure is the ratio of sums,
    total profit over total hands dealt, with its ratio-estimator interval over sessions
    (:func:`experiments.stats.ratio_ci`). Also the bankroll's log growth per hand dealt (what Kelly
    maximizes; a final bankroll below half the table minimum counts as that, as the env's
    ``reward="log_growth"`` does)."""
    start = report["bankroll"]
    finals = report["final_bankrolls"]
    hands = np.asarray(report["session_hands"], dtype=np.float64)  # dealt in each session
    dealt = float(hands.sum())
    floor = T.LOG_GROWTH_FLOOR * report["table"]["minimum"]  # a ruined session, as the env counts it
    names = [s["name"] for s in report["systems"]]
    first = np.asarray(finals[names[0]]) - start
    rows = []
    for s in report["systems"]:
        final = np.asarray(finals[s["name"]])
        net = final - start
        profit = stats.ratio_ci(net, hands)
        diff = stats.ratio_ci(first - net, hands)
        growth = stats.ratio_ci(np.log(np.maximum(final, floor) / start), hands)
        rows.append(
            {
                "name": s["name"],
                "profit_per_hand": profit["estimate"],
                "ci95": profit["ci95"],
                "wagered_per_hand": s["wagered"] / dealt,
                "bet_share": s["hands"] / dealt,
                "learned_minus_this": diff["estimate"],
                "learned_minus_this_ci95": diff["ci95"],
                "log_growth_per_hand": growth["estimate"],
                "log_growth_ci95": growth["ci95"],
            }
        )
    return rows


def print_profit(rows: list[dict], unit: float) -> None:
    print(
        f"\nprofit per hand dealt (money; unit {unit:g}), 95% CI over sessions; last column: the "
        f"learned policy minus this system (paired)"
    )
    print(
        f"{'system':<22} {'share bet':>9} {'wagered/hand':>12} {'profit/hand':>12} {'95% CI':>22} "
        f"{'learned - this':>15} {'95% CI':>22} {'log growth/hand':>16}"
    )
    for r in rows:
        lo, hi = r["ci95"]
        dlo, dhi = r["learned_minus_this_ci95"]
        print(
            f"{r['name'][:22]:<22} {r['bet_share']:>9.2%} {r['wagered_per_hand']:>12.4f} "
            f"{r['profit_per_hand']:>+12.5f} {f'[{lo:+.5f}, {hi:+.5f}]':>22} "
            f"{r['learned_minus_this']:>+15.5f} {f'[{dlo:+.5f}, {dhi:+.5f}]':>22} "
            f"{r['log_growth_per_hand']:>+16.3e}"
        )


# ------------------------------------------------------------------------------------------ training
def _curve_callbacks(config: TrainConfig, cfg: T.EnvConfig) -> tuple:
    """The learning curve's callback and, for a ``discovery:`` config with curve points, the exact
    curve's (else None), both fresh."""
    curve = make_curve_callback(max(1, config.total_timesteps // config.curve_points), cfg)
    exact = None
    if config.discovery is not None and config.discovery.curve_points > 0:
        exact = make_exact_curve_callback(config, None)
    return curve, exact


def train(
    config: TrainConfig,
    out: Path,
    progress: bool = False,
    store: chunk_store.ChunkStore | None = None,
    checkpoint_minutes: float = 0.0,
) -> dict:
    """Train; save the model, its settings and the learning curve in ``out``; return what was written
    (``written``, in order), the timings and curves, and the trained ``model`` object with its
    ``normalizer`` (for the discovery scoring).

    With a ``store``, a checkpoint of the training is kept in it every ``checkpoint_minutes`` (0:
    never), and training continues from the last one kept there, if any
    (:mod:`experiments.train_checkpoint`: the same result, bit for bit, as training without a stop)."""
    import os

    # torch's compiler caches go to pb-gym's documented cache, not $TMPDIR/torchinductor_<user>
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(cache, "pb-gym", "torchinductor"))
    import torch

    torch.set_num_threads(config.threads)
    cfg = T.make_config(**config.env.kwargs())
    env = make_env(config)
    cls = L.algorithm_class(config.algorithm)
    curve, exact_curve = _curve_callbacks(config, cfg)
    callbacks = [c for c in (curve, exact_curve) if c is not None]
    checkpoint = CK.latest(store) if store is not None else None
    seconds_before = 0.0
    if checkpoint is not None:
        try:
            model = CK.load(checkpoint, cls, env, callbacks)
        except Exception as error:  # e.g. written by another version of SB3 or torch: start again
            print(
                f"resuming: the training checkpoint in {checkpoint['path']} could not be loaded "
                f"({type(error).__name__}: {error}); training from the start",
                file=sys.stderr,
                flush=True,
            )
            checkpoint = None
            env.close()
            env = make_env(config)  # (the failed load may have changed the env or the callbacks)
            curve, exact_curve = _curve_callbacks(config, cfg)
            callbacks = [c for c in (curve, exact_curve) if c is not None]
        else:
            seconds_before = float(checkpoint["seconds"])
            print(
                f"resuming: {config.algorithm} continues from its checkpoint at "
                f"{model.num_timesteps:,} of {config.total_timesteps:,} timesteps (kept in "
                f"{checkpoint['path']})",
                file=sys.stderr,
                flush=True,
            )
    if checkpoint is None:
        try:
            model = cls(
                config.policy, env, seed=config.seed, verbose=0, device="cpu", **hyperparameters(config)
            )
        except (TypeError, ValueError, AssertionError, RuntimeError) as error:
            raise ConfigError(
                f"{config.name}: hyperparameters: {config.algorithm} rejects them: {error}"
            ) from None
        if config.init_abstain is not None:
            start_abstaining(model, config.init_abstain)
    from stable_baselines3.common.callbacks import CallbackList
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import VecNormalize

    # SB3's default logger makes an empty $TMPDIR/SB3-<time>/ folder per run: nothing outside --out
    model.set_logger(Logger(folder=None, output_formats=[]))
    env = model.get_env()
    normalizer = env if isinstance(env, VecNormalize) else None
    if exact_curve is not None:
        exact_curve.normalizer = normalizer
    learning = list(callbacks)
    if store is not None and checkpoint_minutes > 0:
        learning.append(CK.make_callback(store, checkpoint_minutes, callbacks, seconds_before))
    started = time.perf_counter()
    model.learn(
        config.total_timesteps - (model.num_timesteps if checkpoint is not None else 0),
        callback=CallbackList(learning),
        progress_bar=progress,
        reset_num_timesteps=checkpoint is None,
    )
    seconds = seconds_before + time.perf_counter() - started
    scoring_seconds = exact_curve.seconds if exact_curve is not None else 0.0
    out.mkdir(parents=True, exist_ok=True)
    model_path = L.save_policy(
        model,
        out,
        config.env.kwargs(),
        config.algorithm,
        config.obs_transform,
        normalizer,
        extra={"name": config.name, "timesteps": int(model.num_timesteps)},
    )
    (out / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    written = [model_path, out / L.ENV_FILE, out / "config.yaml"]
    if normalizer is not None:
        written.append(out / L.NORMALIZE_FILE)
    written += write_curve(curve.rows, out, f"{config.name}: {config.algorithm}", cfg)
    env.close()  # the normalizer's statistics stay usable: normalize_obs does not step the env
    return {
        "model": model_path,
        "seconds": seconds - scoring_seconds,
        "curve_scoring_seconds": scoring_seconds,
        "timesteps": int(model.num_timesteps),
        "curve": curve.rows,
        "exact_curve": exact_curve.rows if exact_curve else [],
        "written": written,
        "model_object": model,
        "normalizer": normalizer,
    }


# ------------------------------------------------------------------------- discovery (issue 10)
def make_policy(config: TrainConfig, model, normalizer):
    """The model being trained (or trained) as an :class:`experiments.discovery.Policy`."""
    from pb_gym.experiments import discovery as D

    return D.Policy(
        model, config.algorithm, T.make_config(**config.env.kwargs()), config.obs_transform, normalizer
    )


def make_exact_curve_callback(config: TrainConfig, normalizer):
    """Every ``timesteps / discovery.curve_points`` timesteps, score the current greedy policy on the
    same held-out hands (``discovery.curve_*``): exact conditional profit per hand dealt."""
    from stable_baselines3.common.callbacks import BaseCallback

    from pb_gym.experiments import discovery as D

    spec = config.discovery
    every = max(1, config.total_timesteps // spec.curve_points)

    class ExactCurve(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[dict] = []
            self.seconds = 0.0
            self.next_at = every
            self.resumed = False
            self.normalizer = normalizer  # (the training env's VecNormalize, set once it exists)
            # training seconds (wall time, this curve's scoring left out) before this process's part
            self.trained_before, self.since, self.scored_here = 0.0, time.perf_counter(), 0.0

        def trained(self) -> float:
            return self.trained_before + time.perf_counter() - self.since - self.scored_here

        def checkpoint_state(self) -> dict:
            return {
                "rows": self.rows,
                "seconds": self.seconds,
                "next_at": self.next_at,
                "trained_before": self.trained(),
            }

        def resume_from(self, state: dict) -> None:
            self.__dict__.update(state)
            self.resumed = True

        def _score(self) -> None:
            started = time.perf_counter()
            trained = self.trained()
            result = D.score(
                make_policy(config, self.model, self.normalizer),
                config.env.kwargs(),
                spec.bets,
                spec.curve_tables,
                spec.curve_hands,
                spec.curve_seed,
            )
            self.rows.append(D.curve_row(self.num_timesteps, result, trained))
            self.seconds += time.perf_counter() - started
            self.scored_here += time.perf_counter() - started

        def _on_training_start(self) -> None:
            self.since, self.scored_here = time.perf_counter(), 0.0
            if not self.resumed:
                self._score()  # the initial policy

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_at:
                self._score()
                self.next_at = next_mark(self.next_at, self.num_timesteps, every)
            return True

        def _on_training_end(self) -> None:
            if not self.rows or self.rows[-1]["timesteps"] != self.num_timesteps:
                self._score()

    return ExactCurve()


def run_discovery(
    config: TrainConfig,
    model,
    normalizer,
    folder: Path,
    curve_rows: list[dict],
    training_seconds: float | None = None,
) -> tuple[dict, list[Path]]:
    """Score the trained policy against the perfect-information bettor and the best linear count on
    the held-out ``discovery`` deal; write ``folder`` (JSON, text, calibration and exact learning
    curve plots)."""
    from pb_gym.experiments import discovery as D

    spec = config.discovery
    started = time.perf_counter()
    rules = config.env.rules.to_rules()
    count = D.linear_count(
        rules, spec.bets, spec.count_training_shoes, spec.count_training_seed, config.env.custom_bets
    )
    result = D.score(
        make_policy(config, model, normalizer),
        config.env.kwargs(),
        spec.bets,
        spec.tables,
        spec.hands,
        spec.seed,
        count=count,
    )
    result["seconds"] = time.perf_counter() - started
    result["training_seconds"] = training_seconds  # wall time of the training, its curve scoring left out
    result["curve"] = curve_rows
    folder.mkdir(parents=True, exist_ok=True)
    title = f"{config.name}: {config.algorithm}, reward {config.env.reward}"
    files = [folder / "discovery.json", folder / "discovery.txt"]
    files[0].write_text(strict_json.dumps(result, indent=2))
    files[1].write_text(D.report(result) + "\n")
    files.append(D.plot_calibration(result, folder / "calibration.png", title))
    if curve_rows:
        files += D.write_curve(curve_rows, folder, title)
    return result, files


# ------------------------------------------------------------------------------- resumable steps
TRAIN_STEP, DISCOVERY_STEP = "train", "discovery"
"""The steps of a run kept in ``OUT/.partial`` (:mod:`experiments.chunk_store`) as they finish: the
trained model's files in ``.partial/train/``, the discovery scoring's in ``.partial/discovery/``; the
held-out evaluation's finished chunks beside them. While training, its last checkpoint is kept there
too (:mod:`experiments.train_checkpoint`)."""
CHECKPOINT_MINUTES = 5.0
"""Minutes of training between two checkpoints (``--checkpoint-minutes``): the most an interrupted
training loses."""


def _kept_files(store: chunk_store.ChunkStore, step: str, names: object) -> str | None:
    """None if the files ``names`` (relative to the step's folder) recorded with a finished step are
    all there, unchanged (the SHA-256 recorded with the step, whose record is sealed: see
    :mod:`experiments.chunk_store`), each a plain name inside the folder; else what is wrong with the
    first that is not."""
    if not isinstance(names, list):
        return "its record has no list of files"
    for entry in names:
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(e, str) for e in entry)):
            return f"its file entry {str(entry)[:60]!r} is not a [name, SHA-256] pair"
        name, digest = entry
        try:
            path = store.inside(name, under=step)
        except chunk_store.Refused as error:
            return str(error)
        if not path.is_file():
            return f"{name} is missing"
        chunk_store.check_private(path, "the kept file")
        if L.file_sha256(path) != digest:
            return f"{name} changed since it was kept"
    return None


def _record(folder: Path, written: list[Path]) -> list[list[str]]:
    return [[Path(p).relative_to(folder).as_posix(), L.file_sha256(p)] for p in written]


def _kept_step(store: chunk_store.ChunkStore, name: str) -> dict | None:
    """The recorded result of a finished step whose files are intact, else None (after saying why, on
    stderr, when files it recorded are missing or changed: the step is done again)."""
    found, record = store.load_step(name)
    if not found:
        return None
    problem = (
        _kept_files(store, name, record.get("files"))
        if isinstance(record, dict)
        else "its record is not a step's"
    )
    if problem is not None:
        print(
            f"resuming: the kept {name} step in {store.directory} is not whole ({problem}); doing it again",
            file=sys.stderr,
            flush=True,
        )
        return None
    return record


def _fresh_folder(store: chunk_store.ChunkStore, name: str) -> Path:
    """An empty ``.partial/NAME`` for a step about to run (whatever an interrupted attempt left there
    is removed)."""
    folder = store.folder(name)
    shutil.rmtree(folder)
    folder.mkdir()
    return folder


def trained_step(
    config: TrainConfig,
    store: chunk_store.ChunkStore,
    progress: bool,
    quiet: bool,
    checkpoint_minutes: float = CHECKPOINT_MINUTES,
) -> dict:
    """The training step: kept from an interrupted run of the same config, or run now (continuing
    from the last training checkpoint kept, if any) and kept in ``.partial/train`` (the model, its
    settings, the learning curve) before anything else runs."""
    record = _kept_step(store, TRAIN_STEP)
    folder = store.directory / TRAIN_STEP
    if record is not None:
        print(
            f"resuming: {config.algorithm} was trained for {record['timesteps']:,} timesteps by an "
            f"interrupted run of this config (kept in {folder}); not training again",
            file=sys.stderr,
            flush=True,
        )
        return {**record, "model": folder / L.MODEL_FILE}
    if store.finished() or set(store.finished_steps()) - {CK.STEP}:
        store.discard()  # made with a kept model that is no longer whole
    try:
        trained = train(
            config,
            _fresh_folder(store, TRAIN_STEP),
            progress=progress,
            store=store,
            checkpoint_minutes=checkpoint_minutes,
        )
    except KeyboardInterrupt:
        kept = CK.latest(store)
        if kept is None:
            store.discard()  # nothing was recorded: what the interrupted step wrote is no work to keep
            print(
                f"interrupted while training, before its first checkpoint (one every "
                f"{checkpoint_minutes:g} minutes): no training was kept; the same command trains "
                f"again from the start ({config.total_timesteps:,} timesteps)",
                file=sys.stderr,
                flush=True,
            )
        else:
            print(
                f"interrupted while training: its checkpoint at {kept['timesteps']:,} of "
                f"{config.total_timesteps:,} timesteps is kept in {store.directory}; rerun the same "
                "command to continue from there (the same result as a run without a stop)",
                file=sys.stderr,
                flush=True,
            )
        raise
    record = {
        key: trained[key] for key in ("seconds", "curve_scoring_seconds", "timesteps", "curve", "exact_curve")
    }
    record["files"] = _record(folder, trained["written"])
    store.save_step(TRAIN_STEP, record)
    CK.discard(store)  # the finished model replaces the checkpoints
    if not quiet:
        print(
            f"{config.name}: trained {config.algorithm} for {trained['timesteps']:,} timesteps "
            f"on {config.n_envs} tables in {trained['seconds']:.1f} s "
            f"({trained['timesteps'] / trained['seconds']:,.0f} steps/s)"
        )
    return {
        **record,
        "model": trained["model"],
        "model_object": trained["model_object"],
        "normalizer": trained["normalizer"],
    }


def discovery_step(config: TrainConfig, store: chunk_store.ChunkStore, trained: dict) -> dict:
    """The discovery scoring (``discovery:`` configs): kept from an interrupted run, or run now on the
    trained model (in memory, or loaded from ``.partial/train``: the same weights and statistics,
    bit for bit) and kept in ``.partial/discovery``."""
    record = _kept_step(store, DISCOVERY_STEP)
    if record is not None:
        return record
    model, normalizer = trained.get("model_object"), trained.get("normalizer")
    if model is None:  # resumed after training: the kept model, checked against its recorded SHA-256
        kept = L.Sb3Policy(model=str(trained["model"]))
        model, normalizer = kept.model, kept.normalizer
    folder = _fresh_folder(store, DISCOVERY_STEP)
    try:
        result, files = run_discovery(
            config, model, normalizer, folder, trained["exact_curve"], trained.get("seconds")
        )
    except KeyboardInterrupt:
        print(
            f"interrupted while scoring the trained model (discovery): the trained model is kept in "
            f"{store.directory}; rerun the same command to score and evaluate it without training "
            "again",
            file=sys.stderr,
            flush=True,
        )
        raise
    record = {"result": result, "files": _record(folder, files)}
    store.save_step(DISCOVERY_STEP, record)
    return record


def _copy_kept(store: chunk_store.ChunkStore, step: str, files: list[list[str]], into: Path) -> list[Path]:
    """Copy a kept step's files into the staging folder ``into``, in the order they were written."""
    copied = []
    for name, _ in files:  # (checked by _kept_files, or written by this run)
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(store.inside(name, under=step), target)
        copied.append(target)
    return copied


# ---------------------------------------------------------------------------------------------- main
OUTPUT_NAMES = (
    "model.zip",
    "env.json",
    "vecnormalize.pkl",
    "config.yaml",
    "learning_curve.csv",
    "learning_curve.png",
    "evaluation",
    "discovery",
    "SHA256SUMS",
)
"""What a training run writes in its folder (a reused folder may hold only these)."""


def main(
    config_path: str,
    out: str | None = None,
    as_json: bool = False,
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    resume: bool | None = None,
    checkpoint_minutes: float = CHECKPOINT_MINUTES,
) -> dict:
    """``pb-gym train``: load and validate the config, train, save, evaluate on held-out seeds (the
    evaluation runs on ``backend``, as ``pb-gym evaluate``; training is always local).

    Resumable, as ``pb-gym evaluate``: each finished step is kept in ``OUT/.partial`` (the trained model,
    the discovery scoring, every finished chunk of the held-out evaluation) with the run's config and
    seeds, and a rerun of the same config into the same folder does only what is missing (``resume``:
    None resumes a matching unfinished run, False discards it; True the same as None). The outputs are
    the same, file for file, resumed or not, except the timings of the evaluation report. A run of
    another config refuses to mix with the kept work (:class:`experiments.chunk_store.ResumeError`).
    Training itself keeps a checkpoint every ``checkpoint_minutes`` (0: never) and continues from the
    last one: the same trained model, bit for bit (:mod:`experiments.train_checkpoint`).
    """
    if (
        isinstance(checkpoint_minutes, bool)
        or not isinstance(checkpoint_minutes, (int, float))
        or not (0 <= checkpoint_minutes < math.inf)
    ):
        raise ConfigError(
            f"checkpoint_minutes={checkpoint_minutes!r} is not allowed; allowed: a number "
            ">= 0 (0: no checkpoints)"
        )
    config = load(config_path, TrainConfig)
    note = episode_note(config)
    if note is not None:
        print(note, file=sys.stderr, flush=True)
    folder = Path(out) if out is not None else Path("out/train") / config.name
    # checked before training; the finished steps are kept in FOLDER/.partial, and the outputs are
    # written into a staging folder beside it, moved into place whole at the end (pb_gym.experiments.outputs)
    destination = outputs.prepare(folder, OUTPUT_NAMES)
    store = outputs.chunk_store(
        destination, {"study": "train", "config": config.model_dump(mode="json")}, resume
    )
    progress = not as_json and sys.stderr.isatty()
    trained = trained_step(config, store, progress, quiet=as_json, checkpoint_minutes=checkpoint_minutes)
    discovery = discovery_step(config, store, trained) if config.discovery is not None else None
    study = evaluation_study(config, trained["model"])
    kept = (
        "the trained model and its discovery scoring are" if discovery is not None else "the trained model is"
    )
    try:
        report = run_study(
            study, progress=not as_json, backend=backend, scheduler=scheduler, workers=workers, store=store
        )
    except KeyboardInterrupt:
        print(
            f"interrupted: {kept} kept in {store.directory}, with the held-out evaluation's "
            "finished chunks; rerun the same command to finish it without training again",
            file=sys.stderr,
            flush=True,
        )
        raise
    except ChunkError as error:
        raise ChunkError(
            f"{error}. {kept[0].upper()}{kept[1:]} kept in {store.directory}: rerun "
            "the same command to evaluate it without training again"
        ) from error.__cause__
    profit = profit_per_hand(report)
    with destination.staging() as staged:
        files = _copy_kept(store, TRAIN_STEP, trained["files"], staged)
        if discovery is not None:
            files += _copy_kept(store, DISCOVERY_STEP, discovery["files"], staged / "discovery")
        files += write_outputs(report, staged / "evaluation")
        (staged / "evaluation" / "profit_per_hand.json").write_text(strict_json.dumps(profit, indent=2))
        files.append(staged / "evaluation" / "profit_per_hand.json")
        files.append(L.write_manifest(staged, files))
    written = [str(destination.final_path(p, staged)) for p in files]
    model_path = destination.final / L.MODEL_FILE
    if not as_json:
        print()
        print_report(report)
        print_profit(profit, config.env.table.unit)
        if discovery is not None:
            from pb_gym.experiments import discovery as D

            print()
            print(D.report(discovery["result"]))
        print(outputs.wrote_line(written))
    last = trained["curve"][-1] if trained["curve"] else {}
    result = {
        "name": config.name,
        "algorithm": config.algorithm,
        "timesteps": trained["timesteps"],
        "train_seconds": trained["seconds"],
        "out": str(folder),
        "model": str(model_path),
        "final_curve_point": last,
        "evaluation": json_report(report),
        "profit_per_hand": profit,
        "written": written,
    }
    if discovery is not None:
        result["discovery"] = discovery["result"]
        result["curve_scoring_seconds"] = trained["curve_scoring_seconds"]
    return result


__all__ = ["TrainConfig", "main", "train", "evaluation_study", "profit_per_hand", "ConfigError"]
