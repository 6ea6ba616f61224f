"""What a user installs: one version everywhere, the typing marker, the console script's target."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pb_gym
from experiments import cli

ROOT = Path(__file__).resolve().parents[1]


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


def test_the_wheel_ships_py_typed_the_version_and_the_console_script(tmp_path):
    """Build the wheel from a copy of the sources (the checkout's build/ and egg-info stay untouched)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("pb_gym", "agents", "experiments"):
        shutil.copytree(ROOT / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "-q", "--no-deps",
                    "--no-build-isolation", "--no-index", str(source), "-w", str(tmp_path / "dist")],
                   check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name == f"pb_gym-{pb_gym.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"pb_gym-{pb_gym.__version__}.dist-info"
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        metadata = archive.read(f"{info}/METADATA").decode()
    assert "pb_gym/py.typed" in names
    assert "pb_gym/cli.py" not in names and "experiments/cli.py" in names
    assert "pb-gym = experiments.cli:main" in entry_points.splitlines()
    assert f"\nVersion: {pb_gym.__version__}\n" in metadata
