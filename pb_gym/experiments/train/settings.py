"""The config of ``pb-gym train`` (:mod:`pb_gym.experiments.train`): its sections, the checks across
them (the algorithm's hyperparameters, policy and action mode, the held-out study) and the held-out
study as config data."""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, create_model, field_validator, model_validator

from pb_gym.agents import learned as learned_agents
from pb_gym.envs import config as env_config
from pb_gym.experiments.benchmark.discovery import DiscoveryConfig
from pb_gym.experiments.common.yaml_config import (
    ConfigError,
    RulesConfig,
    Strict,
    validate,
)
from pb_gym.experiments.evaluate.settings import AnySystem, StudyConfig

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
class _EnvSection(Strict):
    """Base of :data:`EnvConfig`: the values are checked by :class:`pb_gym.envs.config.EnvConfig`."""

    if TYPE_CHECKING:  # the fields are made at run time (create_model): to a type checker, any name

        def __getattr__(self, name: str) -> Any: ...

    @model_validator(mode="after")
    def _env_accepts_it(self) -> _EnvSection:
        self.config()  # every value and what depends on several (the bankroll on table_min, ...)
        return self

    def kwargs(self) -> dict[str, Any]:
        """The environment's keyword arguments (the rules as a dict of their fields)."""
        out = self.model_dump()
        for key in ("side_bets", "stake_levels"):
            if out[key] is not None:
                out[key] = tuple(out[key])
        out["rules"]["side_bets"] = tuple(out["rules"]["side_bets"])
        return out

    def config(self) -> env_config.EnvConfig:
        """The validated :class:`pb_gym.envs.config.EnvConfig`."""
        return env_config.EnvConfig(**self.kwargs())


def _env_fields() -> dict[str, Any]:
    """Every keyword of :class:`pb_gym.envs.config.EnvConfig` but the rule keywords (the ``rules:``
    section holds them), with its default and docstring; the types pydantic checks first."""
    hints = {
        "rules": RulesConfig,
        "side_bets": list[str | dict] | None,
        "stake_levels": list[float] | None,
        "win_target": float | None,
        "max_hands": int | None,
        "history": int,
        **{name: Literal[choices] for name, choices in env_config._CHOICES.items()},
    }
    docs = env_config.field_docs()
    out: dict[str, Any] = {}
    for name, parameter in env_config.parameters().items():
        if name in env_config.RULE_SHORTCUTS:
            continue
        default = RulesConfig() if name == "rules" else parameter.default
        kind = hints.get(name) or type(default)
        out[name] = (kind, Field(default, description=docs[name]))
    return out


EnvConfig = create_model("EnvConfig", __base__=_EnvSection, __module__=__name__, **_env_fields())
EnvConfig.__doc__ = """The ``env:`` section: the keyword arguments of the environment, derived from
:class:`pb_gym.envs.config.EnvConfig` (names, defaults, docstrings; the rules in the ``rules:``
sub-section), so the trained env is the env as documented. Money amounts in money."""


class NormalizeConfig(Strict):
    """The ``normalize:`` section (VecNormalize; the statistics are saved with the model)."""

    observations: bool = Field(True, description="normalize the observations by their running mean and SD")
    rewards: bool = Field(False, description="scale the rewards by the SD of the running discounted return")
    clip_obs: float = Field(10.0, gt=0, description="clip the normalized observations to +-this")


class EvaluationConfig(Strict):
    """The ``evaluation:`` section: the held-out study run after training."""

    sessions: int = Field(2000, ge=1, description="held-out sessions of every system")
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
    stop_loss: float | None = Field(
        None, gt=0, description="stop when down by this much money (default: none)"
    )
    deterministic: bool = Field(True, description="the agent plays its most likely action (false: samples)")
    baselines: bool = Field(True, description="play flat banker and never betting beside the agent")
    sample_paths: int = Field(
        5, ge=0, le=50, description="sessions whose whole bankroll path is kept per system (paths.json)"
    )
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
    init = typing.cast(Any, cls).__init__  # (the algorithm class's own constructor, or its base's)
    defaults = {n: p.default for n, p in inspect.signature(init).parameters.items()}
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
    algorithm: Literal["PPO", "A2C", "DQN", "MaskablePPO", "RecurrentPPO"] = Field(
        description="the stable-baselines3 (or sb3-contrib) algorithm"
    )
    policy: str = Field("MultiInputPolicy", description="the SB3 policy class, by name")
    hyperparameters: dict[str, Any] = Field(
        default_factory=dict, description="keyword arguments of the algorithm (checked against its signature)"
    )
    env: EnvConfig = Field(EnvConfig(), description="the environment trained on (its keyword arguments)")
    obs_transform: Literal[learned_agents.OBS_TRANSFORMS] = Field(  # type: ignore[valid-type]
        "none", description="what the policy sees of the observation (pb_gym.agents.learned.OBS_TRANSFORMS)"
    )
    normalize: NormalizeConfig = Field(NormalizeConfig(), description="VecNormalize's settings")
    n_envs: int = Field(64, ge=1, le=65536, description="parallel tables")
    total_timesteps: int = Field(
        ge=1, le=10**10, description="environment steps of training (at most 10 billion)"
    )
    seed: int = Field(0, ge=0, description="training seed (the tables' deal and the algorithm's)")
    curve_points: int = Field(100, ge=2, le=10_000, description="points of the learning curve")
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
    evaluation: EvaluationConfig = Field(
        EvaluationConfig(), description="the held-out study beside the systems, run after training"
    )
    discovery: DiscoveryConfig | None = Field(
        None,
        description="score the agent against the perfect-information bettor (exact EVs): "
        "pb_gym/experiments/benchmark/discovery.py",
    )

    @field_validator("threads")
    @classmethod
    def _at_most_the_cores(cls, threads: int) -> int:
        from pb_gym import parallel

        if threads > parallel.cores():  # (thousands crash inside torch or libgomp)
            raise ValueError(
                f"{threads} is not allowed; allowed: an integer from 1 to "
                f"{parallel.cores()} (this machine's cores)"
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
        cls = learned_agents.algorithm_class(self.algorithm)
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
        _check_policy_observation(self)
        _check_shuffle(self)
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
        if self.evaluation.hands is None and self.env.max_hands is None and not held_out_one_shoe(self):
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
            offered = self.env.config().bets.offered
            for bet in self.discovery.bets:
                if bet not in offered:
                    raise ValueError(
                        f"discovery.bets: {bet!r} is not offered by env.rules; offered: {', '.join(offered)}"
                    )
        _check_evaluation(self)
        return self


def _check_policy_observation(config: TrainConfig) -> None:
    """A Dict observation takes a MultiInput policy, the flat Box an Mlp one; the observation
    transforms read the Dict's fields."""
    observation, policy = config.env.observation, config.policy
    lstm = "Lstm" in policy
    if observation == "dict" and not policy.startswith("MultiInput"):
        raise ValueError(
            f"policy {policy!r}: env.observation is dict; use "
            f"{'MultiInputLstmPolicy' if lstm else 'MultiInputPolicy'} (or env.observation: flat)"
        )
    if observation == "flat" and policy.startswith("MultiInput"):
        raise ValueError(
            f"policy {policy!r}: env.observation is flat (one Box); use "
            f"{'MlpLstmPolicy' if lstm else 'MlpPolicy'} (or env.observation: dict)"
        )
    if config.obs_transform != "none" and observation != "dict":
        raise ValueError(
            f"obs_transform {config.obs_transform!r} reads the Dict observation's fields: "
            "set env.observation: dict"
        )
    if config.obs_transform == "roads":  # the roads are drawn from the bead plate: it must hold the shoe
        rules = config.env.config().rules
        longest = (rules.n_cards - rules.cut_card) // 4 + 2  # (and the hand the cut card comes in)
        if config.env.history < longest:
            raise ValueError(
                f"env.history: {config.env.history} is not allowed with obs_transform 'roads' (the roads "
                f"are drawn from the bead plate, which must hold a whole shoe); allowed: at least "
                f"{longest} (a shoe of {rules.n_cards} cards cut {rules.cut_card} from the end deals at most "
                f"{longest} hands)"
            )


def _check_shuffle(config: TrainConfig) -> None:
    """A continuous shuffler is the env's only: the held-out evaluation
    (pb_gym/experiments/evaluate/__init__.py) and
    the discovery scoring deal hand-shuffled shoes, so training under one would be judged on others."""
    if config.env.shuffle != "hand":
        raise ValueError(
            f"env.shuffle={config.env.shuffle!r} is not allowed; allowed: 'hand' (pb-gym train's "
            "evaluation and discovery scoring deal hand-shuffled shoes; train under a continuous "
            "shuffler with the env itself: gymnasium.make('pb_gym/PuntoBanco-v0', shuffle='csm', ...))"
        )


def _check_evaluation(config: TrainConfig) -> None:
    """Validate the held-out study now (not after training), naming ``evaluation.systems.<i>``."""
    data = study_data(config, model=None)
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


# ---------------------------------------------------------------------------------------- evaluation
def study_data(config: TrainConfig, model: Path | None) -> dict:
    """The held-out study as config data (``model=None``: a placeholder for the learned policy)."""
    env, ev, cfg = config.env, config.evaluation, config.env.config()
    base = cfg.min_units
    rules, custom = study_bets(cfg)
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
        "rules": rules,
        "table": {"unit": cfg.unit, "minimum": cfg.table_min, "maximum": cfg.table_max},
        "bankroll": bankroll,
        "sessions": ev.sessions,
        "hands": ev.hands or env.max_hands or cfg.rules.most_hands_per_shoe,
        "one_shoe": held_out_one_shoe(config),
        "win_goal": win_goal,
        "stop_loss": ev.stop_loss,
        "seed": ev.seed,
        "sample_paths": ev.sample_paths,
        "exact_conditional": ev.exact_conditional,
        "systems": systems,
    }
    if ev.chunk_sessions is not None:
        data["chunk_sessions"] = ev.chunk_sessions
    if custom:
        data["custom_bets"] = custom
    return data


def study_bets(cfg: env_config.EnvConfig) -> tuple[dict, list[dict]]:
    """The env's rules and bets as a study's ``rules:`` (every side bet offered named in
    ``side_bets``) and ``custom_bets:`` (the user's bets' definitions)."""
    rules = dataclasses.asdict(cfg.rules)
    rules["side_bets"] = [b if isinstance(b, str) else b.name for b in cfg.side_bets]
    return rules, [b.as_dict() for b in cfg.side_bets if not isinstance(b, str)]


def held_out_one_shoe(config: TrainConfig) -> bool:
    """Whether the held-out sessions are single shoes: ``evaluation.one_shoe``, by default the env's."""
    one_shoe = config.evaluation.one_shoe
    return config.env.one_shoe if one_shoe is None else one_shoe
