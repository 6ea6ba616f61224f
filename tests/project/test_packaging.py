"""What a user installs: one version everywhere, the typing marker, the console script's target."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import pb_gym
from pb_gym.experiments import cli

from repo_paths import ROOT  # noqa: E402


def test_the_version_has_one_source(capsys):
    assert re.fullmatch(r"\d+\.\d+\.\d+", pb_gym.__version__)
    # the installed metadata was built from pb_gym.__version__ (reinstall after changing it)
    assert importlib.metadata.version("pb-gym") == pb_gym.__version__
    try:
        cli.main(["--version"])
    except SystemExit as done:
        assert done.code == 0
    assert capsys.readouterr().out == f"pb-gym {pb_gym.__version__}\n"
    # the changelog has a section for the current version
    assert f"## [{pb_gym.__version__}]" in (ROOT / "CHANGELOG.md").read_text()


def pip(*args: str) -> None:
    """``pip ARGS`` by this interpreter, offline: the packages named, none of their dependencies."""
    options = ["--disable-pip-version-check", "-q", "--no-deps", "--no-index"]
    subprocess.run(
        [sys.executable, "-m", "pip", *args, *options], check=True, capture_output=True, timeout=300
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the sources (the checkout's build/ and egg-info stay untouched)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "pb_gym_cli.py"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "pb_gym", source / "pb_gym", ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc")
    )
    pip("wheel", "--no-build-isolation", str(source), "-w", str(tmp_path / "dist"))
    (built,) = (tmp_path / "dist").glob("*.whl")
    return built


def test_the_wheel_ships_one_namespace_py_typed_the_version_and_the_console_script(wheel):
    assert wheel.name == f"pb_gym-{pb_gym.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"pb_gym-{pb_gym.__version__}.dist-info"
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        metadata = archive.read(f"{info}/METADATA").decode()
    # only pb_gym at the top (the agents and the studies are its subpackages), and the console
    # script's entry point, which takes Ctrl-C before the package is imported
    assert {name.split("/")[0] for name in names} == {"pb_gym", "pb_gym_cli.py", info}
    assert "pb_gym/py.typed" in names
    assert {
        "pb_gym/experiments/cli/__init__.py",
        "pb_gym/agents/sb3_vec_env.py",
        "pb_gym/agents/systems.py",
    } <= names
    assert "pb-gym = pb_gym_cli:console" in entry_points.splitlines()
    assert f"\nVersion: {pb_gym.__version__}\n" in metadata


def test_the_installed_wheel_ignores_a_users_own_agents_and_experiments_folders(wheel, tmp_path):
    """A fresh venv (its dependencies seen through a path entry to this venv's site-packages, without
    the checkout's editable finder), run from a folder that holds its own ``agents/`` and
    ``experiments/`` packages: the SB3 adapter trains and ``pb-gym`` runs."""
    import site
    import sysconfig

    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True, timeout=120)
    paths = [fresh / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    purelib = Path(subprocess.run(paths, check=True, capture_output=True, text=True).stdout.strip())
    # the dependencies: this venv's site-packages as a plain path entry (its .pth files, among them the
    # editable finder of the checkout, are not run from there)
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    assert site.getsitepackages()  # (this interpreter has site-packages to lend)
    pip("--python", str(fresh / "bin" / "python"), "install", str(wheel))
    user = tmp_path / "project"
    for folder in ("agents", "experiments"):
        (user / folder).mkdir(parents=True)
        (user / folder / "__init__.py").write_text("raise ImportError('the user's own package')\n")
        (user / folder / "sb3_vec_env.py").write_text("")
    code = textwrap.dedent("""\
        import torch
        torch.set_num_threads(1)
        import pb_gym
        from stable_baselines3 import PPO
        from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv
        assert pb_gym.__file__.startswith(PURELIB), pb_gym.__file__
        PPO("MlpPolicy", PuntoBancoSB3VecEnv(num_envs=4, max_hands=10), n_steps=16, batch_size=32,
            n_epochs=1).learn(64)
        print("trained")
        """).replace("PURELIB", repr(str(purelib)))
    done = subprocess.run(
        [str(fresh / "bin" / "python"), "-c", code], cwd=user, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and done.stdout.strip() == "trained", done.stderr
    odds = subprocess.run(
        [str(fresh / "bin" / "pb-gym"), "odds", "--decks", "8"],
        cwd=user,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert odds.returncode == 0, odds.stderr
    assert "1.0579" in odds.stdout and "1.2351" in odds.stdout
