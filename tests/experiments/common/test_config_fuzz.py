"""Fuzzing every shipped config (configs/{systems,train,experiments}/*.yaml; configs/rlzoo holds RL
Zoo's files, not pb-gym's): seeded mutations of keys, values and text, each validated as its command
would. Every mutation either loads or is refused with a ConfigError (the command's one line and exit
status 2), never another exception. 60 mutations by default, 400 in the slow variant."""

from __future__ import annotations

import copy
import importlib
import random
from pathlib import Path

import pytest
import yaml

from pb_gym.experiments.common.yaml_config import ConfigError, load

from repo_paths import ROOT  # noqa: E402

HOSTILE = [
    -1,
    0,
    1,
    -1e308,
    1e308,
    10**30,
    2**63,
    -(2**63),
    1.5,
    "x",
    "",
    "nl\n",
    None,
    [],
    {},
    [1],
    {"a": 1},
    True,
    False,
    "1:30",
    "0x1F",
    "10",
    "../../etc",
    "\u00e9t\u00e9",
    float("nan"),
]
DEEP: object = 1
for _ in range(40):
    DEEP = [DEEP]
HOSTILE.append(DEEP)
TEXT_MUTATIONS = ["truncate", "alias", "tab", "duplicate", "binary"]


MODELS = {
    "train": "train.TrainConfig",
    "systems": "evaluate.StudyConfig",
    "counting": "counting.CountingConfig",
    "atlas": "atlas.AtlasConfig",
    "roads": "roads.RoadsConfig",
    "leaks": "leaks.LeaksConfig",
    "optimum": "optimum.OptimumConfig",
    "procedures": "procedures.ProceduresConfig",
    "ruin": "ruin.RuinConfig",
}
"""The config model each command validates its YAML with: by folder (train, systems), else by the
experiment config's name up to its first hyphen."""


def _model(path: Path):
    key = path.parent.name if path.parent.name in MODELS else path.stem.split("-")[0]
    if key not in MODELS:
        raise AssertionError(f"{path}: which study reads this config? (add it here)")
    module, name = MODELS[key].split(".")
    return getattr(importlib.import_module(f"pb_gym.experiments.{module}"), name)


CONFIGS = sorted(
    p for folder in ("systems", "train", "experiments") for p in (ROOT / "configs" / folder).glob("*.yaml")
)


def _leaves(data, path=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, (*path, i))
    yield path


def _mutated(rng: random.Random, text: str) -> str:
    if rng.random() < 0.2:
        kind = rng.choice(TEXT_MUTATIONS)
        if kind == "truncate":
            return text[: rng.randrange(len(text))]
        if kind == "alias":
            return text + "\nrecursive: &r [*r]\n"
        if kind == "tab":
            return "\t" + text
        if kind == "duplicate":
            first = text.split("\n")
            line = next((ln for ln in first if ln and not ln.startswith((" ", "#"))), "x: 1")
            return text + "\n" + line + "\n"
        return text + "\n\x00\xff"
    data = yaml.safe_load(text)
    data = copy.deepcopy(data) if isinstance(data, dict) else {}
    paths = [p for p in _leaves(data) if p]
    choice = rng.random()
    if not paths or choice < 0.1:
        data[rng.choice(["unknown_key", "seed", "sessions", "name", "systems"])] = rng.choice(HOSTILE)
    else:
        path = rng.choice(paths)
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        if choice < 0.25 and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = rng.choice(HOSTILE)
    return yaml.safe_dump(data, allow_unicode=True)


def _fuzz(tmp_path, count: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    outcomes = {"loaded": 0, "refused": 0}
    for i in range(count):
        source = CONFIGS[i % len(CONFIGS)]
        text = _mutated(rng, source.read_text())
        path = tmp_path / f"m{i}.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        try:
            load(path, _model(source))
        except ConfigError as error:
            assert str(error).strip(), (source.name, text)
            outcomes["refused"] += 1
        except Exception as error:  # noqa: BLE001 (what the test is for)
            pytest.fail(f"{source.name} mutated as\n{text}\nraised {type(error).__name__}: {error}")
        else:
            outcomes["loaded"] += 1
    return outcomes


def test_every_shipped_config_loads_as_its_command_reads_it():
    assert len(CONFIGS) >= 30
    for path in CONFIGS:
        load(path, _model(path))


@pytest.mark.parametrize(
    ("count", "seed", "refused"), [(60, 21, 20), pytest.param(400, 2021, 150, marks=pytest.mark.slow)]
)
def test_mutated_configs_load_or_are_config_errors(tmp_path, count, seed, refused):
    outcomes = _fuzz(tmp_path, count, seed=seed)
    assert outcomes["refused"] >= refused  # most hostile values are refused, naming the key
