"""YAML config loading and validation shared by every study (evaluate, train, experiments).

pydantic does the validation (unknown keys, wrong types, impossible values) and this module turns its
errors into one message per problem that names the key path and what is allowed, e.g.

    configs/x.yaml: systems.2.base: Input should be greater than 0 (got -1)
    configs/x.yaml: table.maxx: unknown key; allowed keys here: unit, minimum, maximum
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pb_gym import rules as R

Model = TypeVar("Model", bound=BaseModel)


class ConfigError(ValueError):
    """A config that cannot be used; the message names the file, the key and what is allowed."""


class Strict(BaseModel):
    """Base of every config section: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


SideBet = Literal["player_pair", "banker_pair", "dragon7", "panda8"]


class RulesConfig(Strict):
    """The ``rules:`` section: the fields of :class:`pb_gym.rules.Rules`."""

    decks: int = Field(8, ge=1, le=8)
    banker_variant: Literal["standard", "no-commission", "ez"] = "standard"
    commission: float = Field(0.05, ge=0.0, lt=1.0)
    tie_pays: Literal[8, 9] = 8
    side_bets: tuple[SideBet, ...] = R.SIDE_BETS  # type: ignore[assignment]
    pair_pays: float = Field(11.0, gt=0)
    dragon7_pays: float = Field(40.0, gt=0)
    panda8_pays: float = Field(25.0, gt=0)
    burn: bool = True
    cut_card: int | float = 14
    hand_after_cut: bool = False

    @model_validator(mode="after")
    def _rules_accept_it(self) -> "RulesConfig":
        self.to_rules()  # the cut card's range depends on the decks: let Rules say it
        return self

    def to_rules(self) -> R.Rules:
        """The validated :class:`pb_gym.rules.Rules`."""
        return R.Rules(**self.model_dump())


class TableConfig(Strict):
    """The ``table:`` section: betting unit and table limits, in money."""

    unit: float = Field(1.0, gt=0)
    minimum: float = Field(1.0, gt=0)
    maximum: float = Field(1000.0, gt=0)

    @model_validator(mode="after")
    def _limits_are_ordered(self) -> "TableConfig":
        if self.maximum < self.minimum:
            raise ValueError(f"maximum ({self.maximum:g}) must be >= minimum ({self.minimum:g})")
        return self


def _format_error(error: dict, model: type[BaseModel]) -> str:
    loc = ".".join(str(part) for part in error["loc"]) or "(top level)"
    if error["type"] == "extra_forbidden":
        parent = _model_at(model, error["loc"][:-1])
        allowed = ", ".join(parent.model_fields) if parent is not None else "see the docs"
        return f"{loc}: unknown key; allowed keys here: {allowed}"
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if error["type"] == "missing":
        return f"{loc}: required key is missing"
    return f"{loc}: {message} (got {error.get('input')!r})"


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The config section classes inside an annotation (through list, tuple, Union, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _tag_of(model: type[BaseModel]) -> tuple:
    field = model.model_fields.get("type")
    return typing.get_args(field.annotation) if field is not None else ()


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The config section class at a key path (to list its allowed keys in an error)."""
    candidates = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        inner = [m for c in candidates if part in c.model_fields
                 for m in _models_in(c.model_fields[part].annotation)]
        # a tagged union (e.g. the systems list) puts the member's ``type`` in the path
        candidates = inner or [c for c in candidates if part in _tag_of(c)]
    return candidates[0] if len(candidates) == 1 else None


def validate(data: object, model: type[Model], source: str = "config") -> Model:
    """Validate parsed YAML ``data`` against ``model``; raise :class:`ConfigError` listing every problem."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys (got "
                          f"{type(data).__name__}); allowed keys: {', '.join(model.model_fields)}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = [_format_error(e, model) for e in error.errors()]
        raise ConfigError("\n".join(f"{source}: {p}" for p in problems)) from None


def load(path: str | Path, model: type[Model]) -> Model:
    """Read a YAML file and validate it against ``model``."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    return validate(data, model, str(path))
