"""YAML config loading and validation shared by every study (evaluate, train, experiments).

pydantic does the validation (unknown keys, wrong types, impossible values) and this module turns its
errors into one message per problem that names the key path and what is allowed, e.g.

    configs/x.yaml: systems.2.base: Input should be greater than 0 (got -1)
    configs/x.yaml: table.maxx: unknown key; allowed keys here: unit, minimum, maximum
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import stat
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from pb_gym import catalog
from pb_gym import rules as R

Model = TypeVar("Model", bound=BaseModel)


class ConfigError(ValueError):
    """A config that cannot be used; the message names the file, the key and what is allowed."""


MAX_CONFIG_BYTES = 1 << 20
"""A config file is at most this big (1 MiB; the shipped ones are under 2 KiB)."""
MAX_DEPTH = 32
"""Deepest nesting of lists and mappings a config may have (the schemas use at most 4)."""
MAX_VALUES = 100_000
"""Most values a config may hold once its YAML aliases are expanded (a guard against alias bombs)."""
MAX_PROBLEMS = 20
"""Problems listed in one error; the rest are counted."""


def _mentions(annotation: object, kinds: tuple) -> bool:
    """Whether an annotation accepts one of ``kinds`` anywhere (through list, Union, Literal, Any)."""
    if annotation is Any or annotation in kinds:
        return True
    if typing.get_origin(annotation) is Literal:
        return any(isinstance(arg, kinds) for arg in typing.get_args(annotation))
    return any(_mentions(arg, kinds) for arg in typing.get_args(annotation))


def _only_bool(annotation: object) -> bool:
    """The annotation is ``bool`` or ``bool | None``."""
    return annotation is bool or (
        typing.get_origin(annotation) in (typing.Union, types.UnionType)
        and {a for a in typing.get_args(annotation) if a is not type(None)} == {bool}
    )


class Strict(BaseModel):
    """Base of every config section: unknown keys are errors, values are immutable, true/false is
    not a number (pydantic would read ``sessions: true`` as 1), a quoted string is not a number either
    (pydantic would read ``win_goal: '10'`` as 10), and a switch is true or false (pydantic would read
    ``one_shoe: 1`` or ``one_shoe: "yes"`` as true). A default is checked like a value the user wrote
    (pydantic would take it unchecked): a default that a user's other value makes wrong (ruin's
    default starting bankrolls against a smaller target) is refused, not crashed on after the run."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        for key, value in data.items():
            field = cls.model_fields.get(key) if isinstance(key, str) else None
            if (
                field is not None
                and _only_bool(field.annotation)
                and not (isinstance(value, bool) or value is None)
            ):
                raise PydanticCustomError(
                    "bool_not_number", "Input should be true or false", {"key": key, "value": value}
                )
            if (
                field is None
                or _mentions(field.annotation, (bool,))
                or any(isinstance(m, type) and issubclass(m, BaseModel) for m in _all_args(field.annotation))
            ):
                continue  # sections check their own fields
            items = value if isinstance(value, (list, tuple)) else [value]
            if any(isinstance(item, bool) for item in items):
                raise PydanticCustomError(
                    "bool_not_number", "true/false is not allowed here", {"key": key, "value": value}
                )
            if _only_numbers(field.annotation) and any(_numeric_text(item) for item in items):
                raise PydanticCustomError(
                    "str_not_number",
                    "a quoted string is not a number here; write the number without quotes",
                    {"key": key, "value": value},
                )
        return data


def _numeric_text(value: object) -> bool:
    """``value`` is a string that reads as a number (``'10'``, ``' 1.5'``): what a quoted number is."""
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def _only_numbers(annotation: object) -> bool:
    """The annotation takes numbers and no text (pydantic would read ``win_goal: '10'`` as 10)."""
    return _mentions(annotation, (int, float)) and not _mentions(annotation, (str, bytes))


def _all_args(annotation: object) -> list:
    """Every type inside an annotation (itself, and through list, Union, Annotated...)."""
    return [annotation] + [a for arg in typing.get_args(annotation) for a in _all_args(arg)]


class _RulesSection(Strict):
    """Base of :data:`RulesConfig`: the values are checked by :class:`pb_gym.rules.Rules` itself."""

    @model_validator(mode="after")
    def _rules_accept_it(self) -> _RulesSection:
        self.to_rules()  # ranges, and what depends on several fields (the cut card on the decks)
        return self

    def to_rules(self) -> R.Rules:
        """The validated :class:`pb_gym.rules.Rules`. ``side_bets`` may also name catalog bets or the
        user's own (``custom_bets:``): those are the table's extra columns (:meth:`table_bets`), not
        rules, and are left out here."""
        data = self.model_dump()
        data["side_bets"] = tuple(b for b in data["side_bets"] if b in R.SIDE_BETS)
        return R.Rules(**data)

    def table_bets(self, custom: tuple[dict, ...] = ()) -> catalog.TableBets:
        """The table's bet columns (:class:`pb_gym.catalog.TableBets`): the seven spots, then the
        catalog or user bets named in ``side_bets`` (user bets defined in ``custom``)."""
        _, extra = catalog.split_side_bets(tuple(self.model_dump()["side_bets"]), custom)
        return catalog.TableBets(self.to_rules(), extra)


CUSTOM_BETS_HELP = (
    "the user's own bets: {name, source, title, rows: [{when: {...}, pays}]} each, as "
    "pb_gym.catalog.bet_from_dict reads them"
)


def check_custom_bets(custom: object) -> tuple[dict, ...]:
    """The ``custom_bets:`` of a config (the atlas, evaluate): a list of bet definitions, each valid
    (:func:`pb_gym.catalog.bet_from_dict`: its error names the bet and the row) and named apart from
    the catalog and from each other. Use as a pydantic validator body (ValueError on a bad one)."""
    if not isinstance(custom, (list, tuple)):
        raise ValueError("allowed: a list of bet definitions, each {name, source, title, rows}")
    names: list[str] = []
    for definition in custom:
        bet = catalog.bet_from_dict(definition)  # ValueError naming the bet and the row
        if bet.name in catalog.bet_names() or bet.name in names:
            raise ValueError(
                f"bet {bet.name!r}: the name is taken (by the catalog or an earlier "
                "custom bet); choose another"
            )
        names.append(bet.name)
    return tuple(custom)


CustomBets = Annotated[tuple[dict, ...], BeforeValidator(check_custom_bets)]
"""The type of a ``custom_bets:`` key (evaluate, train's env): checked by :func:`check_custom_bets`."""


def _rules_fields() -> dict[str, Any]:
    """Every init field of :class:`pb_gym.rules.Rules` with its type hint and default."""
    hints = typing.get_type_hints(R.Rules, include_extras=True)
    return {f.name: (hints[f.name], f.default) for f in dataclasses.fields(R.Rules) if f.init}


RulesConfig = create_model("RulesConfig", __base__=_RulesSection, __module__=__name__, **_rules_fields())
RulesConfig.__doc__ = """The ``rules:`` section: the fields of :class:`pb_gym.rules.Rules`, derived from the
dataclass (names, types, defaults), so that a new rule is a change in ``pb_gym/rules.py`` alone. The
types are checked here (``decks: eight`` names the key); the values by ``Rules`` itself, whose error
names the field and what is allowed (``rules: Rules.decks=10 is not allowed; allowed: an integer from
1 to 8``)."""


class TableLimits(Strict):
    """The ``table:`` section: betting unit and table limits, in money."""

    unit: float = Field(
        1.0, gt=0, description="one betting unit, in money (the systems' stakes are in units)"
    )
    minimum: float = Field(1.0, gt=0, description="the table minimum stake, in money")
    maximum: float = Field(1000.0, gt=0, description="the table maximum stake, in money (at least minimum)")

    @model_validator(mode="after")
    def _limits_are_ordered(self) -> TableLimits:
        if self.maximum < self.minimum:
            raise ValueError(f"maximum ({self.maximum:g}) must be >= minimum ({self.minimum:g})")
        return self


def _short(value: object, limit: int = 60) -> str:
    """A value for an error message: never the whole of a large input (an alias bomb's expansion
    would be hundreds of megabytes)."""
    if isinstance(value, dict):
        return f"a mapping of {len(value)} key(s)"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"... ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _format_error(error: Mapping[str, Any], model: type[BaseModel]) -> str:
    if error["type"] in ("bool_not_number", "str_not_number"):  # raised by a section for one key
        error = {**error, "loc": tuple(error["loc"]) + (error["ctx"]["key"],), "input": error["ctx"]["value"]}
    loc = ".".join(str(part) for part in error["loc"]) or "(top level)"
    if error["type"] == "extra_forbidden":
        parent = _model_at(model, error["loc"][:-1])
        allowed = ", ".join(parent.model_fields) if parent is not None else "see the docs"
        return f"{loc}: unknown key; allowed keys here: {allowed}"
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if error["type"] == "missing":
        return f"{loc}: required key is missing"
    if not error["loc"]:  # a check of the whole config: its message names the keys
        return message
    if isinstance(error.get("input"), dict):  # a check of a whole section
        return f"{loc}: {message}"
    return f"{loc}: {message} (got {_short(error.get('input'))})"


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
        inner = [
            m
            for c in candidates
            if part in c.model_fields
            for m in _models_in(c.model_fields[part].annotation)
        ]
        # a tagged union (e.g. the systems list) puts the member's ``type`` in the path
        candidates = inner or [c for c in candidates if part in _tag_of(c)]
    return candidates[0] if len(candidates) == 1 else None


def _non_finite(data: object, path: str = "") -> tuple[str, float] | None:
    """The key path and value of the first NaN or infinite number in parsed YAML, or None."""
    if isinstance(data, float) and not math.isfinite(data):
        return path or "(top level)", data
    items = (
        data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, (list, tuple)) else ()
    )
    for key, value in items:
        found = _non_finite(value, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def validate(data: object, model: type[Model], source: str = "config") -> Model:
    """Validate parsed YAML ``data`` against ``model``; raise :class:`ConfigError` listing every problem."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the top level must be a mapping of keys (got "
            f"{type(data).__name__}); allowed keys: {', '.join(model.model_fields)}"
        )
    found = _non_finite(data)
    if found is not None:
        raise ConfigError(
            f"{source}: {found[0]}: {found[1]} is not allowed; numbers must be finite (no .inf or .nan)"
        )
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = [_format_error(e, model) for e in error.errors()[:MAX_PROBLEMS]]
        if error.error_count() > MAX_PROBLEMS:
            problems.append(f"... and {error.error_count() - MAX_PROBLEMS} more problem(s)")
        raise ConfigError("\n".join(f"{source}: {p}" for p in problems)) from None


class _YamlLimit(yaml.YAMLError):
    """A YAML document this loader refuses (too deep, too large once expanded, a duplicate key)."""


def _check_shape(text: str) -> None:
    """Walk the YAML events (PyYAML's parser is not recursive) and refuse, before anything is built,
    nesting deeper than :data:`MAX_DEPTH` and more than :data:`MAX_VALUES` values once aliases are
    expanded: a few hundred bytes of nested aliases expand to billions of values."""
    open_nodes: list[list] = []  # [values, height, anchor] of each open list or mapping
    anchored: dict[str, tuple[int, int]] = {}  # anchor -> (values, height) of its node
    total = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            open_nodes.append([1, 1, event.anchor])
            if len(open_nodes) > MAX_DEPTH:
                raise _YamlLimit(
                    f"line {event.start_mark.line + 1}: nested deeper than "
                    f"{MAX_DEPTH} levels; a config is a few levels of keys and lists"
                )
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            values, height, anchor = open_nodes.pop()
        elif isinstance(event, yaml.ScalarEvent):
            values, height, anchor = 1, 0, event.anchor
        elif isinstance(event, yaml.AliasEvent):
            if any(node[2] == event.anchor for node in open_nodes):
                raise _YamlLimit(
                    f"line {event.start_mark.line + 1}: the alias *{event.anchor} is "
                    f"inside the list or mapping &{event.anchor} names (a recursive "
                    "alias: it would never end)"
                )
            values, height = anchored.get(event.anchor, (1, 0))
            anchor = None
            if len(open_nodes) + height > MAX_DEPTH:
                raise _YamlLimit(
                    f"line {event.start_mark.line + 1}: the alias *{event.anchor} "
                    f"nests deeper than {MAX_DEPTH} levels"
                )
        else:
            continue
        if anchor is not None:
            anchored[anchor] = (values, height)
        if open_nodes:
            parent = open_nodes[-1]
            parent[0] += values
            parent[1] = max(parent[1], height + 1)
            if parent[0] > MAX_VALUES:
                raise _YamlLimit(
                    f"line {event.start_mark.line + 1}: more than {MAX_VALUES:,} values "
                    "once its aliases (*name) are expanded; a config is far smaller"
                )
        total += values
        if total > MAX_VALUES:
            raise _YamlLimit(
                f"more than {MAX_VALUES:,} values once its aliases (*name) are "
                "expanded; a config is far smaller"
            )


_DECIMAL_INT = re.compile(r"[-+]?(0|[1-9][0-9_]*)")


def _plain_number(node: yaml.ScalarNode) -> None:
    """Refuse the YAML 1.1 numbers a config never means: ``1:30`` (base 60: 90), ``0x1F``, ``0o17``,
    ``0b11``, ``017`` (octal) and ``1:30.5``; decimal integers and floats pass."""
    if (
        node.tag == "tag:yaml.org,2002:int"
        and not _DECIMAL_INT.fullmatch(str(node.value))
        or (node.tag == "tag:yaml.org,2002:float" and ":" in str(node.value))
    ):
        raise _YamlLimit(
            f"line {node.start_mark.line + 1}: {_short(node.value)} is read by YAML as a "
            "base-60, hex, octal or binary number; write it in decimal, or quote it for "
            "a string"
        )


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, but a key given twice in one mapping is an error (YAML says keys are
    unique; PyYAML would silently keep the last value)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first_line: dict[object, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(value_node, yaml.ScalarNode):
                try:
                    _plain_number(value_node)
                except _YamlLimit as error:
                    raise _YamlLimit(f"{error} (key {_short(key)})") from None
            try:
                line = first_line.setdefault(key, key_node.start_mark.line)
            except TypeError:  # an unhashable key: PyYAML's own error follows
                continue
            if line != key_node.start_mark.line:
                raise _YamlLimit(
                    f"line {key_node.start_mark.line + 1}: duplicate key "
                    f"{_short(key)} (first given on line {line + 1}); each key may "
                    "appear once in a mapping"
                )
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        _plain_number(node)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        _plain_number(node)
        return super().construct_yaml_float(node)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> object:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError, TypeError) as error:  # not YAMLErrors: a 5000-digit
            value = node.value if isinstance(node, yaml.ScalarNode) else node.tag  # int, 2001-02-30
            raise _YamlLimit(
                f"line {node.start_mark.line + 1}: {_short(value)} cannot be read: {str(error).split(';')[0]}"
            ) from None


_Loader.add_implicit_resolver(  # YAML 1.2's floats: PyYAML (YAML 1.1) reads 1e308 or 3e-4 as text
    "tag:yaml.org,2002:float",
    re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+\Z"),
    list("-+0123456789."),
)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)


def parse_yaml(text: str, source: str = "config") -> object:
    """Parse a YAML config: :func:`yaml.safe_load` with limits (nesting depth, values once aliases are
    expanded) and duplicate keys refused; a refusal is a :class:`ConfigError` naming ``source``."""
    try:
        _check_shape(text)
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)
    except _YamlLimit as error:
        raise ConfigError(f"{source}: {error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: {_yaml_problem(error, text)}") from None
    except RecursionError:  # unreachable with MAX_DEPTH below Python's limit; kept as a guard
        raise ConfigError(f"{source}: nested too deeply") from None


def _yaml_problem(error: yaml.YAMLError, source_text: str) -> str:
    """PyYAML's error on one line, placed by line and column (PyYAML's own text takes several lines,
    quotes the source line, and names the text ``"<unicode string>"`` instead of the file)."""
    if isinstance(error, yaml.reader.ReaderError):  # a character YAML refuses (a control character)
        at = max(0, min(error.position, len(source_text)))
        line, column = source_text.count("\n", 0, at) + 1, at - source_text.rfind("\n", 0, at)
        code = ord(error.character) if isinstance(error.character, str) else int(error.character)
        escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        return (
            f"line {line}, column {column}: not valid YAML: the character U+{code:04X} is not "
            f'allowed in YAML text; write it escaped in a double-quoted string ("{escape}")'
        )
    if not isinstance(error, yaml.MarkedYAMLError):
        return "not valid YAML: " + " ".join(str(error).replace('in "<unicode string>", ', "").split())
    problem, mark = error.problem, error.problem_mark or error.context_mark
    if problem is None:
        problem, mark = error.context, error.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    tag = re.fullmatch(r"could not determine a constructor for the tag (.+)", problem or "")
    if tag is not None:
        return (
            f"{where}the tag {tag.group(1)} is not allowed; a config holds plain values "
            "(numbers, text, true/false, lists, mappings) without !tags"
        )
    text = f"not valid YAML: {problem}"
    if error.context and error.problem is not None:  # where the enclosing construct began
        start = error.context_mark
        text += f" ({error.context}" + (
            f" that begins on line {start.line + 1}, column {start.column + 1})" if start is not None else ")"
        )
    return where + " ".join(text.split())


PIPE_SECONDS = 10.0
"""How long a config that is a named pipe may take to be written (nothing written: an error)."""


def _read_pipe(path: Path) -> bytes:
    """A named pipe's text, read until its writer closes it, within :data:`PIPE_SECONDS`."""
    import select
    import time

    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    chunks: list[bytes] = []
    deadline = time.monotonic() + PIPE_SECONDS
    try:
        while sum(map(len, chunks)) <= MAX_CONFIG_BYTES:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([handle], [], [], left)[0]:
                raise ConfigError(
                    f"{path}: a named pipe that nothing wrote a config to within {PIPE_SECONDS:g} s"
                )
            data = os.read(handle, 65536)
            if not data:
                if chunks:
                    break
                time.sleep(0.05)  # no writer yet (EOF on an open with no writer): wait for one
                continue
            chunks.append(data)
    finally:
        os.close(handle)
    return b"".join(chunks)


def read_config_text(path: str | Path) -> str:
    """The text of a config file, or a :class:`ConfigError` saying why it cannot be one (missing, a
    directory, unreadable, too large, binary, not UTF-8)."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a config file")
    if not path.exists():
        raise ConfigError(f"{path}: no such config file")
    try:
        if stat.S_ISFIFO(path.stat().st_mode):  # (e.g. <(...)): read what is written, not forever
            raw = _read_pipe(path)
        elif not path.is_file():
            raise ConfigError(f"{path}: not a regular file (a device or socket), not a config file")
        else:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror or error}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB; a config is a short YAML text file"
        )
    if b"\0" in raw:
        raise ConfigError(f"{path}: a binary file, not a YAML config (it contains NUL bytes)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{raw[error.start]:02x} at offset "
            f"{error.start}); a config is a YAML text file"
        ) from None


def load(path: str | Path, model: type[Model]) -> Model:
    """Read a YAML file and validate it against ``model`` (see :func:`read_config_text`,
    :func:`parse_yaml` and :func:`validate` for what is refused)."""
    return validate(parse_yaml(read_config_text(path), str(path)), model, str(path))
