"""The one line a process prints when numba starts compiling pb-gym's kernels
(pb_gym.progress.note_compiling): wherever stderr goes, once per process, only for what numba's cache
misses."""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest

from pb_gym import kernel_cache, progress

from repo_paths import ROOT  # noqa: E402

PROBE = "import numba\n\n\n@numba.njit(cache={cache})\ndef plus_one(x):\n    return x + 1\n"
_names = itertools.count()


@pytest.fixture
def note(monkeypatch, tmp_path):
    """A fresh note (not yet written in this process), numba's cache in ``tmp_path``, no pruning."""
    monkeypatch.setattr(progress, "_compile_noted", False)
    monkeypatch.delenv(progress.QUIET, raising=False)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba"))
    pruned = []
    monkeypatch.setattr(kernel_cache, "prune", lambda: pruned.append(True))
    progress.note_compiling()
    return pruned


def _kernel(tmp_path: Path, package: str = "pb_gym", cache: bool = True):
    """A kernel in a new module of ``package`` (a file in ``tmp_path``), not compiled yet."""
    name = f"{package}._note_probe_{next(_names)}"
    path = tmp_path / f"{name.replace('.', '_')}.py"
    path.write_text(PROBE.format(cache=cache))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.plus_one


def test_the_first_compile_of_a_pb_gym_kernel_says_so_once_wherever_stderr_goes(note, tmp_path, capsys):
    _kernel(tmp_path)(1)  # stderr is no terminal here (captured): the line comes all the same
    _kernel(tmp_path)(1)  # once per process
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pb-gym: compiling kernels")
    assert str(tmp_path / "numba") in err  # where the kernels go
    assert note == [True]  # the old cache folders pruned, once


def test_nothing_is_said_for_a_cached_kernel_another_packages_or_one_numba_does_not_cache(
    note, tmp_path, capsys
):
    kernel = _kernel(tmp_path)
    kernel(1)
    capsys.readouterr()
    progress._compile_noted = False  # (the fixture's monkeypatch restores it)
    kernel(2)  # compiled in this process already
    _kernel(tmp_path, package="not_pb_gym")(1)  # another package's kernel
    _kernel(tmp_path, cache=False)(1)  # compiled in every process: no first run to speak of
    assert capsys.readouterr().err == "" and not progress._compile_noted


def test_the_line_can_be_left_out(note, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(progress.QUIET, "0")
    _kernel(tmp_path)(1)
    assert capsys.readouterr().err == ""


def test_a_new_process_with_an_empty_cache_says_it_and_a_warm_one_does_not(tmp_path):
    """The engine's first shuffle, in a script whose stderr is a pipe; then the same from the cache."""
    env = {k: v for k, v in os.environ.items() if k != progress.QUIET}
    # (a home outside the temp folder: the line writes a cache folder under the home as ~/...)
    env.update(NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT), HOME=str(tmp_path / "home"))
    code = "from pb_gym import engine, rules; engine.init(rules.Rules(), 1)"
    runs = [
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert runs[0].stderr.startswith("pb-gym: compiling kernels") and runs[0].stderr.count("\n") == 1
    assert str(tmp_path) in runs[0].stderr and runs[1].stderr == ""
