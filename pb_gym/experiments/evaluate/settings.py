"""The YAML schema of ``pb-gym evaluate``: a study's rules, table, sessions and the systems to compare.

Nothing here is declared twice. The ``rules:`` section is derived from :class:`pb_gym.rules.Rules`
(:data:`pb_gym.experiments.common.yaml_config.RulesConfig`), the bet names from :data:`pb_gym.rules.BETS`,
and each
system's entry from its constructor: the keyword parameters of the class and of its bases (names, type
hints with their :mod:`annotated_types` ranges, defaults) become the keys of a pydantic model, less the
parameters the class fixes itself (``not_configurable``). So a new system, or a new parameter of one,
is a change in ``pb_gym/agents/systems.py`` (or ``pb_gym/agents/learned.py``) alone, and an error names the
key and
what is allowed::

    study.yaml: systems.0.flat.stake: unknown key; allowed keys here: name, bet, base, on_cap, type
    study.yaml: systems.1.paroli.wins_to_reset: Input should be greater than or equal to 1 (got 0)
"""

from __future__ import annotations

import inspect
import json
import typing
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union

import numpy as np
from pydantic import Field, ValidationError, create_model, field_validator, model_validator

from pb_gym import session as session_
from pb_gym.agents import learned, patterns
from pb_gym.agents import systems as betting_systems
from pb_gym.experiments.common import scale
from pb_gym.experiments.common.yaml_config import (
    CUSTOM_BETS_HELP,
    ConfigError,
    CustomBets,
    RulesConfig,
    Strict,
    TableLimits,
)

SYSTEM_CLASSES: dict[str, type[betting_systems.BettingSystem]] = {
    **betting_systems.SYSTEMS,
    "sb3": learned.Sb3Policy,
    "never": learned.NeverBet,
    "perfect": learned.PerfectInformation,
    **patterns.PATTERN_SYSTEMS,
}
"""Every system a study may name, by its config ``type`` (the learned policies load torch only when a
model is loaded)."""


def _model_exists(model: str) -> str:
    """The ``model`` of an ``sb3`` entry names a model written by ``pb-gym train`` (checked on load, not
    when the study starts)."""
    path = Path(model)
    zip_path = path / learned.MODEL_FILE if path.is_dir() else path
    if not zip_path.is_file() and not zip_path.with_suffix(".zip").is_file():
        raise ValueError(
            f"no saved model at {str(model)!r} (a model.zip written by pb-gym train, or its folder)"
        )
    if not (zip_path.parent / learned.ENV_FILE).is_file():
        raise ValueError(
            f"{str(zip_path.parent / learned.ENV_FILE)!r} is missing (pb-gym train saves "
            "the environment settings of the model there)"
        )
    return model


def _pattern_rules(rules: Any) -> Any:
    """A road pattern's user rules (:func:`pb_gym.agents.patterns.check_rules`: errors name the rule)."""
    if rules is not None:
        patterns.check_rules(rules)
    return rules


def _pattern_stake(stake: Any) -> Any:
    """A road pattern's stake progression: its type and options, checked by that system's own schema."""
    if stake is None:
        return stake
    kind = stake.get("type") if isinstance(stake, dict) else None
    if kind in patterns.PROGRESSIONS:  # its own schema first: errors name the key and the range
        try:
            SYSTEM_CONFIGS[kind].model_validate(dict(stake))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"stake.{where}: {first['msg']}") from None
    patterns.make_progression(stake, 1.0, "cap")  # the type, and the keys the pattern sets itself
    return stake


FIELD_CHECKS: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("sb3", "model"): _model_exists,
    ("road_pattern", "rules"): _pattern_rules,
    ("road_pattern", "stake"): _pattern_stake,
}
"""Checks of a value that a type hint cannot state (a file on disk), by (system type, key)."""


def constructor_parameters(cls: type[betting_systems.BettingSystem]) -> dict[str, tuple[Any, Any]]:
    """The keyword parameters of ``cls`` as ``{name: (type hint, default)}``: its own and, through
    ``**kwargs``, its bases' (the base class's first), less ``cls.not_configurable``. A parameter
    without a default is required."""
    levels = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        init = vars(klass)["__init__"]
        hints = typing.get_type_hints(init, include_extras=True)
        parameters = list(inspect.signature(init).parameters.values())[1:]  # not self
        levels.append(
            {
                p.name: (hints.get(p.name, Any), ... if p.default is inspect.Parameter.empty else p.default)
                for p in parameters
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            }
        )
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):  # the base's keywords end here
            break
    fields: dict[str, tuple[Any, Any]] = {}
    for level in reversed(levels):  # the base class's keys first; a subclass may redefine one
        fields.update(level)
    return {name: spec for name, spec in fields.items() if name not in cls.not_configurable}


class SystemSection(Strict):
    """Base of every system's config model (:func:`system_config_model`)."""

    if TYPE_CHECKING:  # the fields are made at run time (create_model): to a type checker, any name

        def __getattr__(self, name: str) -> Any: ...


def system_config_model(key: str, cls: type[betting_systems.BettingSystem]) -> type[SystemSection]:
    """The config model of one system type, derived from its constructor (see the module docstring)."""
    fields: dict[str, Any] = dict(constructor_parameters(cls))
    fields["type"] = (Literal[key], ...)  # the tag of the systems list
    validators = {
        f"_check_{name}": field_validator(name)(check)
        for (kind, name), check in FIELD_CHECKS.items()
        if kind == key
    }
    model = create_model(
        f"{cls.__name__}Config",
        __base__=SystemSection,
        __module__=__name__,
        __validators__=validators,
        **fields,
    )
    # the docstring's first paragraph: its first line alone may stop mid-sentence
    summary = " ".join(inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].split())
    model.__doc__ = f"``type: {key}``: {summary}"
    return model


SYSTEM_CONFIGS: dict[str, type[SystemSection]] = {
    key: system_config_model(key, cls) for key, cls in SYSTEM_CLASSES.items()
}
"""The config model of every system type."""

if TYPE_CHECKING:  # a union built at run time: to a type checker, any system's config
    AnySystem: TypeAlias = SystemSection
else:
    AnySystem = Annotated[
        Union[tuple(SYSTEM_CONFIGS.values())],  # noqa: UP007 (a Union built at run time)
        Field(discriminator="type"),
    ]


def _warn_longer_sessions(model: str, index: int, hands: int, one_shoe: bool) -> None:
    """Warn when a study's sessions are longer than the model's training episodes: the policy's hand
    counter (and its bankroll) then take values it never saw in training."""
    meta = json.loads(learned.model_files(model)[1].read_text())
    cfg = learned.training_config(model)
    if (
        cfg.max_hands is not None
        and hands > cfg.max_hands
        and not (cfg.one_shoe and one_shoe)
        and learned.sees_hand_counters(meta.get("obs_transform", "none"))
    ):
        warnings.warn(
            f"systems.{index} (model {model}): the study's sessions ({hands} hands) are longer "
            f"than the model's training episodes ({cfg.max_hands} hands): its hand counter "
            "there takes values it never saw",
            stacklevel=2,
        )


class StudyConfig(Strict):
    """A study: rules, table, sessions and the systems to compare."""

    name: str = Field("study", description="the study's name, in the report and the progress line")
    rules: RulesConfig = Field(RulesConfig(), description="the rules of the game dealt")
    table: TableLimits = Field(TableLimits(), description="the betting unit and the table limits")
    bankroll: float = Field(1000.0, gt=0, description="starting bankroll, in money")
    sessions: int = Field(
        10_000, ge=1, description="sessions played by every system, on the same dealt hands"
    )
    hands: int = Field(
        1_000,
        ge=1,
        description="hands per session at most (with one_shoe, at most "
        "the hands one shoe can deal: a larger value is lowered to that bound)",
    )
    one_shoe: bool = Field(
        False,
        description="each session is one shoe, from its shuffle to the cut "
        "card (the environment's one_shoe): it ends when the shoe does",
    )
    stop_loss: float | None = Field(None, gt=0, description="stop when down by this much money")
    win_goal: float | None = Field(None, gt=0, description="stop when up by this much money")
    seed: int = Field(
        0,
        ge=0,
        description="seed of the deal and of the systems' draws (chunk i: SeedSequence(seed).spawn(n)[i])",
    )
    sample_paths: int = Field(
        5, ge=0, le=50, description="sessions whose whole bankroll path is kept per system (paths.json)"
    )
    chunk_sessions: int = Field(
        5000, ge=1, description="sessions per chunk (the scale-out unit; changes the dealt hands)"
    )
    exact_conditional: bool = Field(
        False,
        description="also compute, for every system, the exact EV "
        "of each bet from the cards unseen before it (slower)",
    )
    exact: bool = Field(
        False,
        description="also compute, for every system whose session is a finite "
        "chain, its exact outcome under independent hands at the full shoe's odds "
        "(pb_gym.experiments.evaluate.exact_chain)",
    )
    systems: list[AnySystem] = Field(
        min_length=1, description="the systems compared, each {type: ..., its keys}"
    )
    custom_bets: CustomBets = Field(
        (), description=CUSTOM_BETS_HELP + "; offer one by naming it in rules.side_bets"
    )

    def table_bets(self):
        """The table's bet columns (:class:`pb_gym.catalog.TableBets`): the seven spots, then the
        catalog and custom bets named in ``rules.side_bets``."""
        return self.rules.table_bets(self.custom_bets)

    @model_validator(mode="after")
    def _consistent(self) -> StudyConfig:
        rules = self.rules.to_rules()
        offered = self.table_bets().offered  # ValueError naming an unknown side bet
        names = set()
        for i, system in enumerate(self.systems):
            bets = [getattr(system, "bet", "banker")] + list(getattr(system, "bets", []))
            for bet in bets:
                if bet not in offered:
                    raise ValueError(
                        f"systems.{i}: bet {bet!r} is not offered by these rules; "
                        f"offered: {', '.join(offered)} (offer a catalog or custom bet "
                        "by naming it in rules.side_bets)"
                    )
            if system.type != "kelly" and system.base * self.table.unit < self.table.minimum - 1e-9:
                raise ValueError(
                    f"systems.{i}.base: {system.base:g} unit(s) of {self.table.unit:g} is "
                    f"below the table minimum {self.table.minimum:g}"
                )
            if system.type == "sb3":  # refuse a model trained for other rules now, not mid-run
                learned.require_rl(f"systems.{i} (type: sb3)")  # one line now, not a failed chunk later
                problem = learned.training_mismatch(
                    learned.training_config(system.model),
                    rules,
                    self.table.minimum / self.table.unit,
                    self.table.maximum / self.table.unit,
                )
                if problem:
                    raise ValueError(f"systems.{i} (model {system.model}): {problem}")
                _warn_longer_sessions(system.model, i, self.hands, self.one_shoe)
            name = system.name or default_name(system)
            if name in names:
                raise ValueError(f"systems.{i}: two systems are named {name!r}; give one a `name`")
            names.add(name)
        if self.sessions * self.hands > scale.MAX_HANDS_DEALT:
            raise ValueError(
                f"sessions x hands = {self.sessions:,} x {self.hands:,} hands is larger than pb-gym "
                f"runs (at most {scale.MAX_HANDS_DEALT:,} hands dealt in a study); lower `sessions` "
                "or `hands`"
            )
        scale.check_size(self.sessions, self.chunk_sessions, "sessions")  # (RunTooLarge: a ValueError)
        if self.bankroll < self.table.minimum:
            raise ValueError(f"bankroll {self.bankroll:g} is below the table minimum {self.table.minimum:g}")
        if self.one_shoe:  # hands no shoe deals would be a loop of empty hands (documented on `hands`)
            object.__setattr__(self, "hands", min(self.hands, rules.most_hands_per_shoe))  # frozen
        return self


def default_name(system: SystemSection) -> str:
    """A display name: the type, and the bet when it is not banker."""
    if system.type == "road_pattern":
        return f"road_pattern ({system.pattern})"
    bet = getattr(system, "bet", "banker")
    suffix = "" if bet == "banker" or system.type in ("follow_winner", "chop") else f" ({bet})"
    return f"{system.type}{suffix}"


def make_system(config: SystemSection) -> betting_systems.BettingSystem:
    """The betting system a config entry describes (its keys are its constructor's keywords)."""
    params = config.model_dump(exclude={"type"})
    params["name"] = config.name or default_name(config)
    return SYSTEM_CLASSES[config.type](**params)


__all__ = [
    "StudyConfig",
    "ConfigError",
    "SYSTEM_CLASSES",
    "SYSTEM_CONFIGS",
    "constructor_parameters",
    "system_config_model",
    "default_name",
    "make_system",
]

TOLERANCE = 1e-9
"""Slack, in money, of the comparisons of stakes and bankrolls with the table limits and the goals
(:class:`pb_gym.session.Limits`): progressions compute stakes like 10 x 0.95^-k."""


def study_limits(config: StudyConfig) -> session_.Limits:
    """The table limits and session ends of a study, in money, with evaluate's tolerance of 1e-9 (a
    stake is placed from ``minimum - 1e-9``; ruin below it; the goal from ``target - 1e-9``)."""
    table = config.table
    return session_.Limits(
        bankroll=config.bankroll,
        table_min=table.minimum,
        table_max=table.maximum,
        win_target=config.bankroll + config.win_goal if config.win_goal else None,
        stop_loss_floor=config.bankroll - config.stop_loss if config.stop_loss else None,
        one_shoe=config.one_shoe,
        tolerance=TOLERANCE,
    )


def slots(systems: list[betting_systems.BettingSystem], n_columns: int) -> tuple[list[int], np.ndarray]:
    """The table session's stake slots: one for each table column some seat may bet
    (:meth:`pb_gym.agents.systems.BettingSystem.bet_columns`; settlement reads every slot of every seat, and
    most studies bet one or two columns), in column order, and the map from column to slot (-1: none)."""
    columns = sorted({column for system in systems for column in system.bet_columns()}) or [0]
    slot_of = np.full(n_columns, -1, dtype=np.int64)
    slot_of[columns] = np.arange(len(columns))
    return columns, slot_of
