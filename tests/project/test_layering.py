"""The layers hold: experiments -> agents -> pb_gym, and the core never loads torch.

The rules are import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``); this file runs
them, so a broken layer fails the suite with import-linter's report (which names the importing line).
import-linter reads every import statement, those inside functions and under ``TYPE_CHECKING`` too;
what it cannot see (``importlib.import_module``, ``__import__``) is kept out of the core by a scan of
its source below.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from repo_paths import ROOT, run_python  # noqa: E402

LINT_IMPORTS = (
    "import sys; from importlinter.cli import lint_imports_command; "
    "sys.argv[0] = 'lint-imports'; sys.exit(lint_imports_command())"
)
"""import-linter's ``lint-imports`` command, run by this interpreter (wherever its scripts are)."""
CONTRACTS = {
    contract["id"]: contract
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
}


def _lint_imports(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--no-cache", "--no-logo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_import_contracts_are_kept():
    done = _lint_imports()
    assert done.returncode == 0, f"import-linter contracts broken:\n{done.stdout}{done.stderr}"
    # every contract ran (a contract dropped from pyproject.toml would not be noticed otherwise): the
    # layers (studies, agents, the core's own), the benchmark scorer's, the studies' one-way imports and
    # the core's dependencies
    assert "Contracts: 4 kept, 0 broken." in done.stdout, done.stdout


def test_the_layers_contract_sees_imports_inside_functions(tmp_path):
    """A lazy import of an upper layer from a function (what the old pb_gym/cli.py did) breaks the
    contract: shown on a two-package copy of the same contract type."""
    (tmp_path / "lower").mkdir()
    (tmp_path / "upper").mkdir()
    (tmp_path / "upper" / "__init__.py").write_text("")
    (tmp_path / "lower" / "__init__.py").write_text("")
    (tmp_path / "lower" / "shell.py").write_text(
        textwrap.dedent("""\
        def main():
            import upper  # lazy, as a CLI dispatching to the studies would
            return upper
        """)
    )
    (tmp_path / ".importlinter").write_text(
        textwrap.dedent("""\
        [importlinter]
        root_packages =
            lower
            upper

        [importlinter:contract:layers]
        name = upper -> lower
        type = layers
        layers =
            upper
            lower
        """)
    )
    done = _lint_imports(cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "lower.shell -> upper (l.2)" in done.stdout, done.stdout


def test_the_core_has_no_dynamic_imports():
    """import-linter cannot follow ``importlib.import_module(name)`` or ``__import__(name)``: the core
    has none, so the contracts above cover every import it makes."""
    found = []
    for path in sorted((ROOT / "pb_gym").rglob("*.py")):
        if {"agents", "experiments"} & set(path.relative_to(ROOT / "pb_gym").parts):
            continue  # (above the core)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in ("import_module", "__import__"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_the_core_and_its_environments_run_without_torch():
    """Importing pb_gym, making and stepping the single and the vector env, dealing, the exact odds and
    the simulation: torch (and the learning libraries) never load."""
    code = textwrap.dedent("""\
        import sys
        import gymnasium
        import numpy as np
        import pb_gym
        from pb_gym import engine, exact, rules, simulate

        env = gymnasium.make("pb_gym/PuntoBanco-v0")
        env.reset(seed=0)
        for _ in range(5):
            env.step(env.action_space.sample())
        vec = gymnasium.make_vec("pb_gym/PuntoBanco-v0", num_envs=4, vectorization_mode="vector_entry_point")
        vec.reset(seed=0)
        vec.step(vec.action_space.sample())
        state = engine.init(pb_gym.Rules(), 8, seed=0)
        engine.deal(pb_gym.Rules(), state)
        exact.odds(rules.full_shoe(8), pb_gym.Rules())
        simulate.simulate(pb_gym.Rules(), 100, 0, 10)
        loaded = {m.split(".")[0] for m in sys.modules}
        print(sorted(loaded & {"torch", "stable_baselines3", "sb3_contrib"}
                     | {m for m in sys.modules if m.startswith(("pb_gym.agents", "pb_gym.experiments"))}))
        """)
    done = run_python("-c", code, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_readme_draws_the_layers_of_the_contracts():
    """The drawing of the layers (docs/contributing.md) is the contract's list, top to bottom."""
    text = (ROOT / "docs" / "contributing.md").read_text()
    block = text[text.index("```text\nexperiments ") :]
    block = block[len("```text\n") : block.index("\n```")]
    drawn = [re.split(r"\s{2,}", line)[0] for line in block.splitlines()]
    assert drawn == CONTRACTS["layers"]["layers"]


def test_the_core_dependencies_contract_lists_the_whole_core():
    """The forbidden-imports contract names the core's modules one by one (the namespace also holds the
    agents and the studies): a new core module not listed there would escape it."""
    package = ROOT / "pb_gym"
    found = {
        f"pb_gym.{p.stem if p.is_file() else p.name}"
        for p in package.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    }
    assert set(CONTRACTS["core-dependencies"]["source_modules"]) == found - {
        "pb_gym.agents",
        "pb_gym.experiments",
    }


def test_nothing_imports_the_folders_as_top_level_packages():
    """Installed, only ``pb_gym`` is at the top: ``import agents`` or ``from experiments import`` works
    from a checkout by accident and fails for every user."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        # (the parts inside the clone: a clone kept under a folder named build is still read)
        if {".venv", "build", ".git"} & set(path.relative_to(ROOT).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno}"
                for name in names
                if name.split(".")[0] in {"agents", "experiments"}
            ]
    assert found == []


def test_the_repository_holds_no_symbolic_link():
    """The folders are the packages: nothing is reached through a link (a link hides the layout from
    the tools that read the tree, and a copy or an archive may not keep it)."""
    links = [
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*")
        if path.is_symlink() and not {".venv", ".git", "build"} & set(path.relative_to(ROOT).parts)
    ]
    assert links == []


MOVED = {
    "config": ("common.yaml_config", "load"),
    "stats": ("common.stats", "ratio_ci"),
    "scale": ("common.scale", "run"),
    "plotting": ("common.plotting", "drawn_or_noted"),
    "evaluate_config": ("evaluate.settings", "StudyConfig"),
    "exact_systems": ("evaluate.exact_chain", "attach"),
    "exact_shoe_effect": ("evaluate.shoe_effect", "CONFIG"),
    "advantage": ("counting.advantage", "jacobson_di"),
    "count_conventions": ("atlas.conventions", "ruin_study"),
    "score": ("benchmark.score", "run"),
    "regret_table": ("benchmark.regret_table", "main"),
    "observation_choice": ("train.observation_choice", "main"),
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_study_module_keeps_its_old_name_for_one_release(old):
    """The studies' modules that the docs named before they moved into packages: the old name gives
    the same objects, with a DeprecationWarning that names the new one."""
    import importlib

    new, name = MOVED[old]
    sys.modules.pop(f"pb_gym.experiments.{old}", None)
    with pytest.warns(
        DeprecationWarning, match=rf"pb_gym\.experiments\.{old} is now pb_gym\.experiments\.{new}"
    ):
        module = importlib.import_module(f"pb_gym.experiments.{old}")
    assert getattr(module, name) is getattr(importlib.import_module(f"pb_gym.experiments.{new}"), name)


ENV_MODULES = ("actions", "config", "observation", "spaces", "stepping", "tables")
"""The modules of ``pb_gym.envs`` that the deprecated ``pb_gym.envs.table`` re-exports."""


def test_the_old_env_namespace_keeps_its_names_for_one_release():
    """``from pb_gym.envs import table as T`` still gives every name it gave, each the object of the
    module that holds it, with a DeprecationWarning that names those modules."""
    import importlib

    sys.modules.pop("pb_gym.envs.table", None)
    with pytest.warns(
        DeprecationWarning, match=r"pb_gym\.envs\.table is deprecated: import from pb_gym\.envs\."
    ):
        table = importlib.import_module("pb_gym.envs.table")
    modules = [importlib.import_module(f"pb_gym.envs.{name}") for name in ENV_MODULES]
    for name in table.__all__:
        holders = [m.__name__ for m in modules if getattr(m, name, None) is getattr(table, name)]
        assert holders, f"pb_gym.envs.table.{name} is in none of the env modules"
    assert {"EnvConfig", "make_config", "new_tables", "step", "StepState", "observe", "action_masks"} <= set(
        table.__all__
    )


def _imports_of_the_old_env_namespace(source: str, where: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.Import):
            hit = any(a.name == "pb_gym.envs.table" for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            hit = node.module == "pb_gym.envs.table" or (
                node.module == "pb_gym.envs" and any(a.name == "table" for a in node.names)
            )
        else:  # pb_gym.envs.table.name, reached through an import of pb_gym
            hit = isinstance(node, ast.Attribute) and ast.unparse(node) == "pb_gym.envs.table"
        if hit:
            found.append(f"{where}:{node.lineno}")
    return found


def test_nothing_in_the_project_imports_the_old_env_namespace():
    """The project imports each env name from the module that holds it: ``pb_gym.envs.table`` is kept
    for users only, and goes in the next release."""
    import json

    found = []
    for folder in ("pb_gym", "tests", "examples", "docs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "pb_gym" / "envs" / "table.py":
                continue
            found += _imports_of_the_old_env_namespace(path.read_text(), str(path.relative_to(ROOT)))
        for path in sorted((ROOT / folder).rglob("*.ipynb")):
            cells = json.loads(path.read_text())["cells"]
            for i, cell in enumerate(cells):
                if cell["cell_type"] == "code":
                    code = "".join(
                        line for line in cell["source"] if not line.lstrip().startswith(("%", "!"))
                    )
                    found += _imports_of_the_old_env_namespace(code, f"{path.relative_to(ROOT)}[cell {i}]")
    assert found == []


MAX_FILE_LINES = 700
"""The longest a module of the package may be (``docs/contributing.md``, "Names and sizes")."""


def test_no_module_of_the_package_is_longer_than_the_limit():
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / "pb_gym").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert long == {}, f"split these modules (at most {MAX_FILE_LINES} lines each): {long}"


def test_the_studies_tests_mirror_the_studies_packages():
    """``tests/experiments/`` holds one folder per package of ``pb_gym/experiments/`` that has tests,
    and no test file outside them, so a study's tests are found where the study is."""
    packages = {path.parent.name for path in (ROOT / "pb_gym" / "experiments").glob("*/__init__.py")}
    tests = ROOT / "tests" / "experiments"
    folders = {path.parent.relative_to(tests).as_posix() for path in tests.rglob("test_*.py")}
    assert folders <= packages, f"not a study package of pb_gym/experiments: {sorted(folders - packages)}"
