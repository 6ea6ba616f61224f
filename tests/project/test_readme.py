"""Every code block of README.md and of the docs pages (docs/**/*.md), run at small sizes, so that the
README and the docs cannot drift from the code.

Each fenced block is preceded by a marker (an HTML comment, invisible on a rendered page)
on the last non-blank line before its opening fence, which says how the block is tested:

    <!-- test: python [ID] -->        run as a fresh script (``python -c``) in an empty folder, after the
                                      size substitutions ``SIZES[ID]`` below (each must still match)
    <!-- test: commands -->           shell lines, each checked and run (see ``check_command``):
                                      ``pb-gym ...`` parsed by pb-gym's own parser, then run in-process
                                      at a small size (the configs it names are copied, shrunk by
                                      ``shrink``, into a scratch folder that mirrors the repository);
                                      ``make T`` dry-run (``make -n T``); ``pip install ...`` against the
                                      extras of pyproject.toml; ``python -m M`` importable
    <!-- test: commands-parse -->     the same checks without running pb-gym (for lines that need a
                                      cluster, a GPU or minutes); other programs must be installed
    <!-- test: config KIND -->        a YAML study config (KIND: evaluate, train, counting, atlas, ruin):
                                      validated by the study's own loader, then run shrunk; a model
                                      of a ``type: sb3`` entry is first trained by the README's own
                                      ``pb-gym train`` line that writes it
    <!-- test: tableau -->            the banker's tableau, cell by cell against ``pb_gym.rules``
    <!-- test: skip (reason) -->      not run; the reason is required

A block without a marker, an unknown kind, an ID without an entry in ``SIZES`` (or an entry of
``SIZES`` no block uses) fails the test, so that a new block is tested from the start.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from unittest import mock

import pytest
import yaml

from pb_gym import rules as R
from pb_gym.experiments import cli

from repo_paths import ROOT, run_python  # noqa: E402

README = ROOT / "README.md"
# the pages whose blocks are tested: the README and every docs page (the generated configuration
# reference has no code blocks; it is checked by tests/project/test_docs.py)
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
VENV_BIN = Path(sys.executable).parent

# Size substitutions for `python ID` blocks: (text in the README block, what the test runs instead).
# Each text must occur in its block; when a README edit removes it, update the entry here.
SIZES: dict[str, list[tuple[str, str]]] = {
    "sb3-ppo": [
        ("num_envs=64", "num_envs=4"),
        ("learn(100_000)", "learn(512)"),
        ("n_eval_episodes=50", "n_eval_episodes=2"),
    ],
    "eco-sb3": [
        ("n_envs=8", "n_envs=2"),
        ("learn(200_000)", "learn(256)"),
        ("learn(20_000)", "learn(100)"),
        ("num_envs=16", "num_envs=2"),
        ("learn(50_000)", "learn(256)"),
    ],
}

# pb-gym subcommands that `commands` blocks parse but do not run, and why
PARSE_ONLY = {
    "bench": "its timings take 20 s even with --quick; tests/experiments/cli/test_cli.py runs bench --quick"
}
# programs that README blocks call, from an extra that `make test` may not install
EXTRA_PROGRAMS = {"jupyter": "notebook", "dask": "dask"}
SIMULATE_HANDS = 20_000  # `pb-gym simulate --hands N` runs min(N, this)
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

BLOCK = re.compile(
    r"(?:^[ \t]*<!--[ \t]*test:[ \t]*(?P<spec>.*?)[ \t]*-->[ \t]*\n(?:[ \t]*\n)*)?"  # the marker, blank lines
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*).*\n"  # the opening fence
    r"(?P<body>(?:.*\n)*?)[ \t]*(?P=fence)",  # the lines up to the closing fence
    re.MULTILINE,
)
KINDS = {
    "python": {"python"},
    "commands": {"bash", "sh", "shell"},
    "commands-parse": {"bash", "sh", "shell"},
    "config": {"yaml"},
    "tableau": {""},
    "skip": None,
}
CONFIG_KINDS = ("evaluate", "train", "counting", "ruin")


@dataclasses.dataclass
class Block:
    """One fenced code block of the README and its test marker."""

    line: int  # line number of the opening fence (1-based)
    lang: str
    text: str
    kind: str | None  # None: no marker
    arg: str | None  # ID of a python block, KIND of a config block, reason of a skip
    page: str = "README.md"  # the file, relative to the repository

    @property
    def label(self) -> str:
        return f"{self.page}:{self.line} ({self.lang or 'text'}, {self.kind or 'no marker'}" + (
            f" {self.arg})" if self.arg and self.kind != "skip" else ")"
        )

    @property
    def slug(self) -> str:
        """A name of the block unique over all pages (test ids, scratch file names)."""
        return re.sub(r"[^\w]+", "-", self.page.removesuffix(".md")) + f"-line{self.line}"


def read_blocks(path: Path = README) -> list[Block]:
    """The fenced blocks of ``path`` with the marker on the last non-blank line before each."""
    text = path.read_text()
    page = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    blocks = []
    for match in BLOCK.finditer(text):
        spec = match["spec"] or ""
        skip = re.fullmatch(r"skip\s*\((.+)\)", spec)
        kind, _, arg = ("skip", "", skip[1]) if skip else spec.partition(" ")
        body = "\n".join(line[len(match["indent"]) :] for line in match["body"].splitlines())
        line = text.count("\n", 0, match.start("indent")) + 1
        blocks.append(Block(line, match["lang"].lower(), body, kind or None, arg.strip() or None, page))
    return blocks


BLOCKS = [block for page in PAGES for block in read_blocks(page)]


def blocks_of(kind: str) -> list[pytest.param]:
    return [
        pytest.param(b, id=b.slug + (f"-{b.arg}" if b.arg and kind != "skip" else ""))
        for b in BLOCKS
        if b.kind == kind
    ]


# ------------------------------------------------------------------------------------- the markers
def test_every_block_has_a_valid_marker():
    problems = []
    for block in BLOCKS:
        if block.kind is None:
            problems.append(
                f"{block.label}: no <!-- test: ... --> marker on the line before it "
                f"(see tests/project/test_readme.py for the kinds)"
            )
        elif block.kind not in KINDS:
            problems.append(f"{block.label}: unknown kind {block.kind!r}; allowed: {', '.join(KINDS)}")
        elif KINDS[block.kind] is not None and block.lang not in KINDS[block.kind]:
            problems.append(
                f"{block.label}: a {block.kind!r} marker on a {block.lang or 'plain'} "
                f"block; allowed: {', '.join(sorted(KINDS[block.kind])) or 'plain'}"
            )
        elif block.kind == "python" and block.arg is not None and block.arg not in SIZES:
            problems.append(f"{block.label}: ID {block.arg!r} has no entry in SIZES")
        elif block.kind == "config" and block.arg not in CONFIG_KINDS:
            problems.append(f"{block.label}: config kind {block.arg!r}; allowed: {', '.join(CONFIG_KINDS)}")
    used = [b.arg for b in BLOCKS if b.kind == "python" and b.arg]
    problems += [f"SIZES[{name!r}] is used by no README block" for name in SIZES if name not in used]
    problems += [
        f"ID {name!r} is used by {used.count(name)} blocks" for name in set(used) if used.count(name) > 1
    ]
    assert not problems, "\n".join(problems)


def test_marker_parser_reads_kinds_ids_and_skip_reasons(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "text\n<!-- test: python demo -->\n\n```python\nx = 1\n```\n"
        "```bash\nmake demo\n```\n"
        "<!-- test: skip (needs a cluster) -->\n```bash\ndask scheduler\n```\n"
        "- item\n  <!-- test: commands -->\n  ```bash\n  pb-gym odds\n  ```\n"
    )
    blocks = read_blocks(page)
    assert [(b.line, b.lang, b.kind, b.arg, b.text) for b in blocks] == [
        (4, "python", "python", "demo", "x = 1"),
        (7, "bash", None, None, "make demo"),
        (11, "bash", "skip", "needs a cluster", "dask scheduler"),
        (16, "bash", "commands", None, "pb-gym odds"),
    ]


# ---------------------------------------------------------------------------------- python blocks
def substituted(block: Block) -> str:
    """The block's code with the small sizes of ``SIZES[block.arg]``."""
    code = block.text
    for old, new in SIZES.get(block.arg or "", []):
        assert old in code, (
            f"{block.label} no longer contains {old!r}: "
            f"update SIZES[{block.arg!r}] in tests/project/test_readme.py"
        )
        code = code.replace(old, new)
    return code


RL = re.compile(r"stable_baselines3|sb3_contrib|agents\.sb3_vec_env|\btype: sb3\b|pb-gym train|rl_zoo3")
"""What needs the rl extra: its libraries, a learned agent in a config, training."""


def needs_rl(text: str) -> bool:
    return RL.search(text) is not None


def skip_without_rl(text: str) -> None:
    if needs_rl(text) and importlib.util.find_spec("stable_baselines3") is None:
        pytest.skip("the rl extra is not installed")


@pytest.mark.parametrize("block", blocks_of("python"))
def test_python_block_runs(block, tmp_path):
    skip_without_rl(block.text)
    # (one torch / OpenMP thread, as the README says to its readers: see run_python)
    result = run_python("-c", substituted(block), cwd=tmp_path, env={"MPLBACKEND": "Agg"})
    assert result.returncode == 0, f"{block.label} failed:\n{result.stderr[-3000:]}"


# ------------------------------------------------------------------------- shrinking study configs
SMALL: dict[str, dict] = {
    "evaluate": {"sessions": 40, "hands": 60, "chunk_sessions": 20, "sample_paths": 2},
    "train": {
        "total_timesteps": 512,
        "n_envs": 8,
        "curve_points": 4,
        "hyperparameters": {"n_steps": 32, "batch_size": 64, "learning_starts": 64, "buffer_size": 4096},
        "evaluation": {"sessions": 20, "hands": 20, "sample_paths": 2},
        # the exact scoring against the perfect-information bettor
        "discovery": {
            "tables": 8,
            "hands": 20,
            "curve_points": 2,
            "curve_tables": 4,
            "curve_hands": 10,
            "count_training_shoes": 10,
        },
    },
    # advantage: the double barrier of every count and bettor
    "counting": {
        "shoes": 20,
        "chunk_shoes": 10,
        "training_shoes": 10,
        "advantage": {"sessions": 100, "session_shoes": 50},
    },
    "ruin": {"sessions": 20, "chunk_sessions": 20, "martingale": {"sessions": 20, "hands": 100}},
}
SMALL["atlas"] = {**SMALL["counting"], "integer_max_tag": 2}
"""The sizes of a shrunk study config: each key at most its value (a chunk size set to it, so that a
run still spans chunks), each section's keys within it; of the hyperparameters, only those given
(another algorithm takes none of the others)."""
OFF_UNLESS_GIVEN = {"discovery", "martingale"}
"""Sections that turn a part of the study on: shrunk where given, never added."""


def shrink(kind: str, data: dict, small: dict | None = None) -> dict:
    """A copy of a study config with small sizes: the same keys and systems, seconds to run."""
    data = dict(data)
    for key, value in (SMALL[kind] if small is None else small).items():
        if isinstance(value, dict):
            if key in OFF_UNLESS_GIVEN and data.get(key) is None:
                continue
            given = dict(data.get(key) or {})
            data[key] = shrink(
                kind, given, {k: v for k, v in value.items() if k in given or key != "hyperparameters"}
            )
        elif key.startswith("chunk_") or data.get(key) is None or data[key] > value:
            data[key] = value
    return data


MODELS = {
    "evaluate": "StudyConfig",
    "train": "TrainConfig",
    "counting": "CountingConfig",
    "atlas": "AtlasConfig",
    "ruin": "RuinConfig",
}


def config_model(kind: str):
    """The pydantic model of a study's config (``pb_gym.experiments.KIND``'s)."""
    if kind == "train":
        pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")
    return getattr(importlib.import_module(f"pb_gym.experiments.{kind}"), MODELS[kind])


STAGED = "readme-configs/"  # the scratch folder's own configs (from README blocks), not the repo's


def study_kind(argv: list[str]) -> str | None:
    """The config kind of a ``pb-gym`` command line (None: it runs no study)."""
    if argv[0] == "experiment" and len(argv) > 1:
        return argv[1]
    return argv[0] if argv[0] in ("evaluate", "train") else None


# ------------------------------------------------------------------------- running pb-gym commands
class Workdir:
    """A scratch folder laid out like the repository (shrunk configs at the same relative paths), in
    which the README's commands run exactly as written; runs are cached, so that a model trained by
    one block is there for the next."""

    def __init__(self, path: Path):
        self.path = path
        self.done: dict[tuple[str, ...], str] = {}
        self.plotted = False

    def plot_once(self):
        """``evaluate``'s plots, drawn for the first run only (they take most of a small run's time;
        tests/experiments/evaluate/test_evaluate.py checks them); later runs write everything else."""
        from pb_gym.experiments.evaluate import report as evaluate

        real = evaluate.plot

        def plot(report: dict, out: Path, *rest) -> list[Path]:
            if self.plotted:
                for aside in rest:  # a figure drawn aside (the fans' copy), sent the report already
                    if aside is not None:
                        aside.cancel()
                return []
            self.plotted = True
            return real(report, out, *rest)

        return mock.patch.object(evaluate, "plot", plot)

    def stage_config(self, argv: list[str]) -> None:
        """Copy the repository config that ``argv`` names into the scratch folder, shrunk (a config
        already there, written by a test from a README block, is used as it is)."""
        kind = study_kind(argv)
        if kind is None:
            return
        config = argv[2] if argv[0] == "experiment" else argv[1]
        if config.startswith(STAGED):
            return
        source = ROOT / config
        assert source.is_file(), f"{config}: no such config in the repository"
        target = self.path / config
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(shrink(kind, yaml.safe_load(source.read_text()))))

    def run(self, argv: list[str]) -> str:
        """``pb-gym ARGV`` in-process in the scratch folder, at small sizes; returns its stdout."""
        key = tuple(argv)
        if key in self.done:
            return self.done[key]
        skip_without_rl(" ".join(["pb-gym", *argv]))
        argv = list(argv)
        if argv[0] == "simulate" and "--hands" in argv:
            at = argv.index("--hands") + 1
            argv[at] = str(min(int(argv[at]), SIMULATE_HANDS))
        self.stage_config(argv)
        stdout, stderr = io.StringIO(), io.StringIO()
        try:
            with (
                contextlib.chdir(self.path),
                contextlib.redirect_stdout(stdout),
                contextlib.redirect_stderr(stderr),
                self.plot_once(),
            ):
                status = cli.main(argv)
        except SystemExit as exit_:
            status = exit_.code
        assert status in (0, None), (
            f"pb-gym {' '.join(key)} exited with {status}:\n{stderr.getvalue()[-3000:]}"
        )
        self.done[key] = stdout.getvalue()
        return self.done[key]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Workdir:
    return Workdir(tmp_path_factory.mktemp("readme"))


def command_lines(text: str) -> list[str]:
    """The shell lines of a block: comments dropped, ``\\`` continuations joined."""
    lines = [shlex.split(line, comments=True) for line in re.sub(r"\\[ \t]*\n", " ", text).splitlines()]
    return [shlex.join(words) for words in lines if words]


def parse_pb_gym(argv: list[str], where: str) -> None:
    """pb-gym's own parser accepts ``argv``, and the configs it names exist in the repository."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            args = cli.build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"{where}: pb-gym {shlex.join(argv)}: {stderr.getvalue().strip()}")
    config = getattr(args, "config", None)
    if config is not None:
        assert (ROOT / config).is_file(), f"{where}: {config}: no such file in the repository"


def check_pip(words: list[str], where: str) -> None:
    """``pip install`` of this project: from the clone (``-e .[extras]``) or a git URL, never by name
    from an index (pb-gym is not on one), and only extras that pyproject.toml defines."""
    targets = [w for w in words[2:] if not w.startswith("-")]
    options = words[2:]
    assert words[1] == "install", f"{where}: only `pip install` is expected in the README"
    assert targets, f"{where}: pip install of nothing"
    for i, word in enumerate(options):
        if word in ("-c", "--constraint", "-r", "--requirement"):
            assert (ROOT / options[i + 1]).is_file(), f"{where}: {options[i + 1]}: no such file"
            targets.remove(options[i + 1])
    for target in targets:
        match = re.fullmatch(r"(?P<name>[\w.\-/]+)(\[(?P<extras>[\w,\-]*)\])?(\s*@\s*(?P<url>\S+))?", target)
        assert match, f"{where}: cannot read the requirement {target!r}"
        name, url = match["name"], match["url"]
        if name in (".", "./") or name.startswith("git+"):
            pass  # the clone, or the repository itself
        elif name.replace("_", "-") == "pb-gym":
            assert url and url.startswith("git+"), (
                f"{where}: {target!r}: pb-gym is not on a package index; install it from the clone "
                "(pip install -e '.[...]') or from its git URL"
            )
        else:
            continue  # another package (for example jupyter); pip will say if it does not exist
        for extra in filter(None, (match["extras"] or "").split(",")):
            assert extra in EXTRAS, (
                f"{where}: extra {extra!r} is not in pyproject.toml; allowed: {', '.join(EXTRAS)}"
            )


def check_command(line: str, where: str, workdir: Workdir, run: bool) -> None:
    """One shell line of a README block (see the module docstring)."""
    words = shlex.split(line)
    program = words[0]
    if program == "pb-gym":
        parse_pb_gym(words[1:], where)
        if run and words[1] not in PARSE_ONLY:
            workdir.run(words[1:])
    elif program == "make":
        for target in words[1:]:
            result = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
            assert result.returncode == 0, f"{where}: make {target}: {result.stderr.strip()}"
    elif program in ("pip", "pip3") or words[:3] == ["python", "-m", "pip"]:
        check_pip(words[2:] if program == "python" else words, where)
    elif program == "python" and len(words) > 2 and words[1] == "-m":
        module = words[2]
        skip_without_rl(module)
        assert importlib.util.find_spec(module.split(".")[0]) is not None, (
            f"{where}: python -m {module}: {module} is not installed (which extra should bring it?)"
        )
    elif program in ("git", "cd", "export", "source", ".", "for", "done"):
        pass  # shell set-up, nothing of the project's to check
    else:
        found = shutil.which(program, path=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
        if not found and program in EXTRA_PROGRAMS:
            pytest.skip(f"{program}: the {EXTRA_PROGRAMS[program]!r} extra is not installed")
        assert found, f"{where}: {program}: not installed"


@pytest.mark.parametrize("block", blocks_of("commands") + blocks_of("commands-parse"))
def test_command_block(block, workdir):
    lines = command_lines(block.text)
    assert lines, f"{block.label}: no command"
    for line in lines:
        check_command(line, block.label, workdir, run=block.kind == "commands")


# ------------------------------------------------------------------ the quick start after make demo
def extras_closure(extras: set[str]) -> set[str]:
    """``extras`` and those they bring (``zoo`` brings ``rl``: ``pb-gym[rl]`` in pyproject.toml)."""
    found, pending = set(), list(extras)
    while pending:
        extra = pending.pop()
        if extra in found or extra not in EXTRAS:
            continue
        found.add(extra)
        for requirement in EXTRAS[extra]:
            match = re.fullmatch(r"pb-gym\[([\w,\-]+)\]", requirement.replace(" ", ""))
            pending += match[1].split(",") if match else []
    return found


def make_extras(target: str) -> set[str]:
    """The extras ``make TARGET`` installs: the ``-e ".[...]"`` of the recipes it runs from scratch (its
    prerequisites' too: ``make -n -B``), hints it prints aside."""
    dry_run = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return {
        extra
        for line in dry_run.stdout.splitlines()
        if not line.startswith("echo ")  # a hint printed, not run
        for match in re.finditer(r"-e\s+[\"']?\.\[([\w,\-]+)\]", line)
        for extra in match[1].split(",")
    }


STUDY_COMMANDS = {"evaluate", "train", "experiment"}  # pb-gym subcommands that need the studies extra


def quick_start_problems(steps: list[tuple[str, str, str]]) -> list[str]:
    """What fails for a reader who runs ``steps`` in order: ``(where, kind, text)``, ``kind`` "line" (a
    shell line) or "python" (a Python block). Only ``make demo`` of the make lines is run (the set-up
    the README asks first); a program of .venv needs it activated (or called by its path), and a
    command the extras it needs, installed by then (``make demo``'s or a ``pip install -e`` line's)."""
    problems, extras, activated = [], set(), False
    for where, kind, text in steps:
        installed = extras_closure(extras)
        if kind == "python":
            if not activated:
                problems.append(f"{where}: a Python block before .venv is activated")
            if needs_rl(text) and "rl" not in installed:
                problems.append(f"{where}: a Python block that needs the rl extra, not installed by then")
            continue
        words = shlex.split(text)
        if words[:2] == ["make", "demo"]:
            extras |= make_extras("demo")
        elif words[0] in (".", "source") and words[1:2] == [".venv/bin/activate"]:
            activated = True
        elif words[:2] == ["pip", "install"]:
            for word in words[2:]:
                match = re.fullmatch(r"\.\[([\w,\-]+)\]", word)
                extras |= set(match[1].split(",")) if match else set()
        elif words[0] in ("pb-gym", "python"):
            if not activated:
                problems.append(f"{where}: {words[0]} is not on the PATH yet: activate .venv before it")
            for extra in extras_needed(words) - installed:
                problems.append(f"{where}: `{text}` needs the {extra} extra, not installed by then")
    return problems


def extras_needed(words: list[str]) -> set[str]:
    """The extras a ``pb-gym`` line needs: ``studies`` for a study, ``rl`` for training or a config
    (of the repository) with a learned agent."""
    if words[0] != "pb-gym" or len(words) < 2:
        return set()
    configs = [ROOT / word for word in words[2:] if word.endswith(".yaml") and (ROOT / word).is_file()]
    rl = words[1] == "train" or any(needs_rl(path.read_text()) for path in configs)
    return {name for name, needed in (("studies", words[1] in STUDY_COMMANDS), ("rl", rl)) if needed}


def test_the_quick_start_runs_after_make_demo_in_the_order_written():
    """``make demo`` (the README's first command), the lines after it in its block, then the Quick start
    section's blocks in order: each runs (see :func:`quick_start_problems`)."""
    readme = [block for block in BLOCKS if block.page == "README.md"]
    lines = README.read_text().splitlines()
    start = lines.index("## Quick start") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## ")) + 1
    setup = next(b for b in readme if b.kind == "commands" and "make demo" in command_lines(b.text)[0])
    steps = [(setup.label, "line", line) for line in command_lines(setup.text)]
    for block in readme:
        if start <= block.line <= end and block.kind in ("python", "commands", "commands-parse"):
            if block.kind == "python":
                steps.append((block.label, "python", block.text))
            else:
                steps += [(block.label, "line", line) for line in command_lines(block.text)]
    assert any(kind == "line" and text.startswith("pb-gym train") for _, kind, text in steps)
    assert quick_start_problems(steps) == []


# ---------------------------------------------------------------------------------- config blocks
def train_commands() -> dict[str, list[str]]:
    """The README's `pb-gym train` lines, by the folder each writes (its --out, or out/train/NAME)."""
    found = {}
    for block in BLOCKS:
        if block.lang not in ("bash", "sh", "shell") or block.kind == "skip":
            continue
        for line in command_lines(block.text):
            words = shlex.split(line)
            if words[:2] != ["pb-gym", "train"] or len(words) < 3:
                continue
            if "--out" in words:
                folder = words[words.index("--out") + 1]
            else:
                folder = f"out/train/{yaml.safe_load((ROOT / words[2]).read_text())['name']}"
            found.setdefault(folder.rstrip("/"), words[1:])
    return found


@pytest.mark.parametrize("block", blocks_of("config"))
def test_config_block_validates_and_runs(block, workdir):
    from pb_gym.experiments.common.yaml_config import validate

    data = yaml.safe_load(block.text)
    assert isinstance(data, dict), f"{block.label}: not a YAML mapping"
    # a learned model named by the config is made the way the README says: its `pb-gym train` line
    for system in data.get("systems") or []:
        if isinstance(system, dict) and system.get("type") == "sb3":
            folder = str(Path(system["model"]).with_suffix("")).removesuffix("/model")
            trains = train_commands()
            assert folder in trains, (
                f"{block.label}: model {system['model']!r} is written by no "
                f"`pb-gym train` line of the README; they write: "
                f"{', '.join(trains) or 'nothing'}"
            )
            workdir.run(trains[folder])
    model = config_model(block.arg)
    with contextlib.chdir(workdir.path):  # relative model paths resolve as they would for the reader
        validate(data, model, block.label)
    config = workdir.path / STAGED / f"{block.slug}.yaml"
    config.parent.mkdir(exist_ok=True)
    config.write_text(yaml.safe_dump(shrink(block.arg, data)))
    subcommand = ["experiment", block.arg] if block.arg in ("counting", "atlas", "ruin") else [block.arg]
    out = f"readme-out/{block.slug}"
    workdir.run([*subcommand, str(config.relative_to(workdir.path)), "--out", out])
    assert any((workdir.path / out).iterdir()), f"{block.label}: the run wrote nothing"


def test_shrink_keeps_configs_valid():
    """The shrunk repository configs still validate (so a failure above is the README's, not ours)."""
    from pb_gym.experiments.common.yaml_config import validate

    for kind, folder in (
        ("evaluate", "systems"),
        ("counting", "experiments"),
        ("atlas", "experiments"),
        ("ruin", "experiments"),
    ):
        for path in sorted((ROOT / "configs" / folder).glob("*.yaml")):
            data = yaml.safe_load(path.read_text())
            if kind == "evaluate" or path.stem.startswith(kind):
                small = shrink(kind, data)
                validate(small, config_model(kind), str(path))
                if kind == "evaluate":
                    assert small["sessions"] <= 40 and small["hands"] <= 60


# -------------------------------------------------------------------------------------- the rest
@pytest.mark.parametrize("block", blocks_of("tableau"))
def test_tableau_block_is_the_rules_table(block):
    rows = [line.split() for line in block.text.splitlines() if line.strip()]
    header, body = rows[0], rows[1:]
    assert header == [str(d) for d in range(10)] + ["none"], f"{block.label}: header {header}"
    seen = set()
    for row in body:
        assert row[0] == "banker", f"{block.label}: {row}"
        lo, _, hi = row[1].partition("-")
        cells = row[2:]
        assert len(cells) == 11, f"{block.label}: {row}"
        for total in range(int(lo), int(hi or lo) + 1):
            seen.add(total)
            for column, cell in enumerate(cells):
                third = None if column == 10 else column
                assert (cell == "D") == bool(R.banker_draws(total, third)), (total, third, cell)
    assert seen == set(range(8)), f"{block.label}: banker totals {sorted(seen)}, not 0-7"


@pytest.mark.parametrize("block", blocks_of("skip"))
def test_skipped_blocks_say_why(block):
    assert len(block.arg) >= 10, f"{block.label}: a skip needs a reason in words, got {block.arg!r}"


# ------------------------------------------------------------------------- the exact-odds figures
ODDS_HEADER = (
    "| decks | P(banker) | P(player) | P(tie) | banker 5% | player | tie 8:1 | tie 9:1 | no-commission "
    "| EZ banker | Dragon 7 40:1 | Panda 8 25:1 | pair 11:1 |"
)


def test_odds_table_is_the_calculators_and_the_published_figures():
    """Every cell of the README's odds table from the exact calculator, and the published cells equal
    to tests/data/published_figures.json (the figures whose sources it names)."""
    import numpy as np

    from pb_gym import exact

    from published_figures import MAIN_FIGURES, VARIANT_FIGURES

    pages = [page for page in PAGES if ODDS_HEADER in page.read_text()]
    assert len(pages) == 1, f"the odds table's header is on {len(pages)} pages; update ODDS_HEADER"
    text = pages[0].read_text()
    rows = {}
    for line in text[text.index(ODDS_HEADER) :].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().rstrip("%") for c in line.strip("|").split("|")]
        rows[int(cells[0])] = [float(c) for c in cells[1:]]
    assert sorted(rows) == [1, 2, 4, 6, 8]
    variants = [
        ({}, "banker"),
        ({}, "player"),
        ({}, "tie"),
        ({"tie_pays": 9}, "tie"),
        ({"banker_variant": "no-commission"}, "banker"),
        ({"banker_variant": "ez"}, "banker"),
        ({}, "dragon7"),
        ({}, "panda8"),
        ({}, "player_pair"),
    ]
    published = {(bet, str(rules)): (e8, e6) for bet, rules, e8, e6 in VARIANT_FIGURES}
    for decks, row in rows.items():
        shoe = R.full_shoe(decks)
        probabilities = exact.odds(shoe)["probabilities"]
        computed = [round(probabilities[w], 6) for w in ("banker", "player", "tie")]
        for kwargs, bet in variants:
            ev = exact.expected_values(shoe, R.Rules(decks=decks, **kwargs))[R.BETS.index(bet)]
            computed.append(round(-100 * float(ev), 4))
        np.testing.assert_array_equal(row, computed, err_msg=f"README odds table, {decks} decks")
        assert tuple(row[:7]) == MAIN_FIGURES[decks], decks
        for k, (kwargs, bet) in enumerate(variants[4:], start=7):
            if decks in (6, 8):
                e8, e6 = published[(bet, str(kwargs))]
                assert row[k] == (e8 if decks == 8 else e6), (decks, bet, kwargs)


# ------------------------------------------------------------------- the checks can fail (drift)
def test_checks_refuse_what_a_newcomer_could_not_run():
    """The failures that once reached the README: an install by name from an index, a synopsis line
    that is not a command, an extra that does not exist, a size substitution that no longer matches,
    and evaluation bettors on bets the rules do not offer."""
    from pb_gym.experiments.common.yaml_config import ConfigError, validate

    with pytest.raises(AssertionError, match="not on a package index"):
        check_pip(shlex.split("pip install 'pb-gym[studies,dask]'"), "here")
    with pytest.raises(AssertionError, match="extra 'nosuch' is not in pyproject.toml"):
        check_pip(shlex.split("pip install -e '.[studies,nosuch]'"), "here")
    check_pip(shlex.split("pip install -e '.[studies,dask]' -c constraints.txt"), "here")
    check_pip(shlex.split("pip install 'pb-gym[studies] @ git+https://example.org/pb-gym.git'"), "here")
    with pytest.raises(pytest.fail.Exception, match="unrecognized arguments"):
        parse_pb_gym(shlex.split("experiment ruin configs/experiments/ruin.yaml [--json]"), "here")
    with pytest.raises(AssertionError, match="no such file"):
        parse_pb_gym(["evaluate", "configs/systems/nosuch.yaml"], "here")
    with pytest.raises(AssertionError, match="no longer contains 'num_envs=64'"):
        substituted(Block(1, "python", "model.learn(5)", "python", "sb3-ppo"))
    train = "pb-gym train configs/train/ppo-smoke.yaml"
    steps = [("here", "line", line) for line in ("make demo", "pb-gym odds", ". .venv/bin/activate", train)]
    assert quick_start_problems(steps) == [
        "here: pb-gym is not on the PATH yet: activate .venv before it",
        f"here: `{train}` needs the rl extra, not installed by then",
    ]
    rl = "pip install -e '.[zoo]' -c constraints.txt"  # (zoo brings rl)
    steps = [("here", "line", line) for line in ("make demo", ". .venv/bin/activate", rl, train)]
    assert quick_start_problems(steps) == []
    data = yaml.safe_load((ROOT / "configs" / "train" / "ppo-smoke.yaml").read_text())
    data["evaluation"]["systems"] = [{"type": "perfect", "bets": ["dragon7", "panda8"]}]
    pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")
    with pytest.raises(ConfigError, match="dragon7"):
        validate(data, config_model("train"), "here")
