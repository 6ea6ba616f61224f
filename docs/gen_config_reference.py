"""Write docs/reference/config.md, the configuration reference, from the schemas themselves.

Every study's YAML config is a pydantic model (``pb_gym.experiments``): its keys, types, defaults and
allowed ranges are read from the models' JSON schemas, their meanings from the ``Field`` descriptions;
the betting systems' keys from the models that ``pb_gym.experiments.evaluate.settings`` derives from
their constructors, their meanings from the ``Args:`` sections of the systems' docstrings; the
``rules:`` section's allowed values from the checks of ``pb_gym.rules.Rules`` and its meanings from
the ``Args:`` of its docstring; the environment's keyword arguments from
``pb_gym.envs.config.EnvConfig``. So the page cannot drift from the code: ``tests/project/test_docs.py`` fails
when the committed page differs from what this script writes.

    python docs/gen_config_reference.py          # rewrite the page
    python docs/gen_config_reference.py --check  # exit 1 if the committed page is out of date
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "config.md"


def _type(schema: dict) -> str:
    """A JSON-schema type in words: ``integer``, ``number or null``, ``list of string``."""
    if "anyOf" in schema:
        return " or ".join(dict.fromkeys(_type(s) for s in schema["anyOf"]))
    if "$ref" in schema:
        return "mapping (below)"
    if "oneOf" in schema:
        return "system entry ([betting systems](#betting-systems))"
    if "const" in schema:
        return f"`{schema['const']}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        items = schema.get("items") or (schema.get("prefixItems") or [{}])[0]
        return f"list of {_type(items)}" if items else "list"
    if kind == "object":
        return "mapping"
    return {
        "string": "string",
        "integer": "integer",
        "number": "number",
        "boolean": "true/false",
        "null": "null",
    }.get(kind, kind)


def _range(schema: dict) -> str:
    """The allowed range a schema states (``> 0``, ``1 to 65536``, ``at least 1 item``)."""
    parts = []
    for sub in [schema, *schema.get("anyOf", [])]:
        low = (
            ("> " + _num(sub["exclusiveMinimum"]))
            if "exclusiveMinimum" in sub
            else ((">= " + _num(sub["minimum"])) if "minimum" in sub else "")
        )
        high = (
            ("< " + _num(sub["exclusiveMaximum"]))
            if "exclusiveMaximum" in sub
            else (("<= " + _num(sub["maximum"])) if "maximum" in sub else "")
        )
        bound = ", ".join(p for p in (low, high) if p)
        if bound:
            parts.append(bound)
        if "minItems" in sub:
            parts.append(f"at least {sub['minItems']} item(s)")
        if "maxItems" in sub:
            parts.append(f"at most {sub['maxItems']} item(s)")
        if "minLength" in sub:
            parts.append(f"at least {sub['minLength']} character(s)")
        if "maxLength" in sub:
            parts.append(f"at most {sub['maxLength']} characters")
        if "pattern" in sub:
            parts.append(f"matches `{sub['pattern']}`")
        items = sub.get("items")
        if isinstance(items, dict) and _range(items):
            parts.append("each " + _range(items))
    return "; ".join(dict.fromkeys(parts))


def args_doc(*objects: object) -> dict[str, str]:
    """The ``Args:`` entries of the objects' Google-style docstrings, ``{name: text}`` (a later
    object's entry replaces an earlier one's): where a key has no ``Field`` description, its meaning is
    the constructor's own words."""
    out: dict[str, str] = {}
    for obj in objects:
        doc = inspect.cleandoc(getattr(obj, "__doc__", None) or "")
        name = None
        inside = False
        for line in doc.splitlines():
            if line.strip() == "Args:":
                inside, name = True, None
                continue
            if not inside:
                continue
            entry = re.match(r"^    (\w+)(?: \([^)]*\))?: (.*)$", line)
            if entry:
                name = entry.group(1)
                out[name] = entry.group(2).strip()
            elif name and line.startswith("        "):
                out[name] += " " + line.strip()
            elif line.strip() and not line.startswith(" "):
                inside, name = False, None  # the next section of the docstring
    return out


def system_docs(cls: type) -> dict[str, str]:
    """The ``Args:`` entries of a system's classes, the base's first (a subclass may redefine one)."""
    objects: list[object] = []
    for klass in reversed(cls.__mro__):
        objects += [klass, vars(klass).get("__init__")]
    return args_doc(*(o for o in objects if o is not None))


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _default(field: str, schema: dict, required: set[str]) -> str:
    if field in required:
        return "required"
    if "default" not in schema:
        return ""
    value = schema["default"]
    if isinstance(value, dict):
        return "(below)"
    text = json.dumps(value)
    return f"`{text}`" if len(text) <= 60 else f"`{text[:57]}...`"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def model_table(
    schema: dict,
    defs: dict,
    title: str,
    prefix: str,
    extra: dict[str, str] | None = None,
    skip: tuple[str, ...] = (),
) -> list[str]:
    """The table of one model's keys, then a section for each nested model (``prefix.key``)."""
    lines = [f"### `{title}`" if title else "", ""]
    if schema.get("description"):
        lines += [_cell(schema["description"].replace("``", "`")), ""]
    lines += ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    nested = []
    required = set(schema.get("required", []))
    for field, sub in schema.get("properties", {}).items():
        if field in skip:
            continue
        ref = sub.get("$ref") or next((s["$ref"] for s in sub.get("anyOf", []) if "$ref" in s), None)
        ref = ref or sub.get("items", {}).get("$ref")  # a list of mappings: the table of one item
        if ref:
            nested.append((field, defs[ref.split("/")[-1]]))
        meaning = sub.get("description", "") or (extra or {}).get(field, "")
        lines.append(
            f"| `{field}` | {_cell(_type(sub))} | {_cell(_default(field, sub, required))} | "
            f"{_cell(_range(sub))} | {_cell(meaning.replace('``', '`'))} |"
        )
    lines.append("")
    for field, sub in nested:
        name = f"{prefix}{field}"
        if sub.get("title") == "RulesConfig":
            lines += [
                f"### `{name}`",
                "",
                "The fields of `pb_gym.rules.Rules` (see [the rules section](#rules)).",
                "",
            ]
            continue
        lines += model_table(sub, defs, name, name + ".")
    return lines


def rules_section() -> list[str]:
    """The ``rules:`` keys: ``Rules``'s fields, with the allowed values its own checks state."""
    from pb_gym.experiments.common.yaml_config import RulesConfig
    from pb_gym.rules import Rules

    source = inspect.getsource(Rules)
    allowed: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "_check"
            and len(node.args) == 4
            and isinstance(node.args[1], ast.Constant)
        ):
            text = node.args[3]
            if isinstance(text, ast.Constant):  # computed texts: the schema's enum says the same
                allowed.setdefault(node.args[1].value, str(text.value))
    schema = RulesConfig.model_json_schema()
    meanings = args_doc(Rules)
    lines = [
        "## Rules",
        "",
        "The `rules:` section of every study (and `env.rules` of train), the fields of "
        "`pb_gym.rules.Rules`: the values are checked by `Rules` itself.",
        "",
        "| key | type | default | allowed | meaning |",
        "|---|---|---|---|---|",
    ]
    for field, sub in schema["properties"].items():
        meaning = meanings.get(field, "").replace("``", "`")
        lines.append(
            f"| `{field}` | {_cell(_type(sub))} | {_cell(_default(field, sub, set()))} | "
            f"{_cell(allowed.get(field, _range(sub)))} | {_cell(meaning)} |"
        )
    return lines + [""]


def env_section() -> list[str]:
    """The environment's keyword arguments: the init parameters of ``EnvConfig`` (defaults and
    docstrings) and the allowed choices."""
    from pb_gym.envs import config as env_config

    lines = [
        "## Environment arguments",
        "",
        'The keyword arguments of `gym.make("pb_gym/PuntoBanco-v0", ...)`, `gym.make_vec`, '
        "`PuntoBancoEnv` and `PuntoBancoVectorEnv`: the fields of `pb_gym.envs.config.EnvConfig` "
        "(the vector env's `hand_info` defaults to false). The rule keywords are the [rules](#rules) "
        "fields; give them or `rules=`, not both. More: [the environment page](../env.md#arguments).",
        "",
        "| argument | default | allowed | meaning |",
        "|---|---|---|---|",
    ]
    docs = env_config.field_docs()
    for name, parameter in env_config.parameters().items():
        allowed = (
            ", ".join(f"`{c}`" for c in env_config._CHOICES[name])
            if name in env_config._CHOICES
            else ("true/false" if name in env_config._BOOLS else "")
        )
        if name == "stake_levels":
            allowed = "increasing numbers > 0; default " + "; ".join(
                f"{unit}: {levels}" for unit, levels in env_config.DEFAULT_STAKE_LEVELS.items()
            )
        lines.append(
            f"| `{name}` | `{json.dumps(parameter.default)}` | {_cell(allowed)} | {_cell(docs[name])} |"
        )
    return lines + [""]


def page() -> str:
    from pb_gym.experiments.atlas import AtlasConfig
    from pb_gym.experiments.counting import CountingConfig
    from pb_gym.experiments.evaluate.settings import SYSTEM_CLASSES, SYSTEM_CONFIGS, StudyConfig
    from pb_gym.experiments.ruin import RuinConfig

    out = [
        "# Configuration reference",
        "",
        "<!-- generated by docs/gen_config_reference.py from the schemas: do not edit by hand -->",
        "",
        "Every key of every study config, with its type, default and allowed values, read from the "
        "pydantic models that validate the configs (an unknown key, a wrong type or a value out of "
        "range is an error naming the key path). Money amounts are in money, stakes in betting units.",
        "",
        "## evaluate",
        "",
        "`pb-gym evaluate CONFIG` ([guide](../guides/evaluate.md)).",
        "",
    ]
    schema = StudyConfig.model_json_schema()
    out += model_table(schema, schema.get("$defs", {}), "", "", skip=())
    out += [
        "## Betting systems",
        "",
        "The entries of `systems:` (evaluate, and `evaluation.systems` of "
        "train), one per `type`. Every system's keys come from its constructor in "
        "`pb_gym.agents.systems` (or `pb_gym.agents.learned`).",
        "",
    ]
    for key, model in SYSTEM_CONFIGS.items():
        sub = model.model_json_schema()
        extra = system_docs(SYSTEM_CLASSES[key])
        out += model_table(
            sub, sub.get("$defs", {}), f"type: {key}", f"systems.{key}.", extra=extra, skip=("type",)
        )
    try:
        from pb_gym.experiments.train import TrainConfig
    except ImportError:  # the rl extra: the page is written where it is installed
        raise SystemExit("the train section needs the rl extra (stable-baselines3) installed") from None
    out += ["## train", "", "`pb-gym train CONFIG` ([guide](../guides/train.md)).", ""]
    schema = TrainConfig.model_json_schema()
    defs = {
        k: v
        for k, v in schema.get("$defs", {}).items()
        if not k.endswith("Config")
        or k in ("EnvConfig", "EvaluationConfig", "NormalizeConfig", "DiscoveryConfig", "RulesConfig")
    }
    defs.update(schema.get("$defs", {}))
    out += model_table(schema, defs, "", "")
    for title, model in (
        ("experiment counting", CountingConfig),
        ("experiment atlas", AtlasConfig),
        ("experiment ruin", RuinConfig),
    ):
        out += [f"## {title}", "", f"`pb-gym {title} CONFIG` ([guide](../guides/experiments.md)).", ""]
        schema = model.model_json_schema()
        out += model_table(schema, schema.get("$defs", {}), "", "")
    from pb_gym.experiments.leaks import LeaksConfig
    from pb_gym.experiments.optimum import OptimumConfig
    from pb_gym.experiments.procedures import ProceduresConfig
    from pb_gym.experiments.benchmark.regret_table import BenchmarkConfig
    from pb_gym.experiments.roads import RoadsConfig

    for title, model, page_link in (
        ("experiment roads", RoadsConfig, "[guide](../guides/roads.md)"),
        ("experiment leaks", LeaksConfig, "[guide](../guides/known-cards.md)"),
        ("experiment optimum", OptimumConfig, "[results](../results/session-optimum.md)"),
        ("experiment procedures", ProceduresConfig, "[results](../results/procedures.md)"),
    ):
        out += [f"## {title}", "", f"`pb-gym {title} CONFIG` ({page_link}).", ""]
        schema = model.model_json_schema()
        out += model_table(schema, schema.get("$defs", {}), "", "")
    out += [
        "## experiment benchmark",
        "",
        "`pb-gym experiment benchmark CONFIG` (the regret table over "
        "training seeds: [the benchmark](../benchmark.md#the-regret-table-over-training-seeds)).",
        "",
    ]
    schema = BenchmarkConfig.model_json_schema()
    out += model_table(schema, schema.get("$defs", {}), "", "")
    out += rules_section()
    out += env_section()
    text = "\n".join(line for line in out)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    text = page()
    if "--check" in argv:
        if not PAGE.is_file() or PAGE.read_text() != text:
            print(
                f"{PAGE.relative_to(ROOT)} is out of date: run python docs/gen_config_reference.py",
                file=sys.stderr,
            )
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
