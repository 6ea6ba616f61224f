"""The one line a first run prints while numba compiles the kernels (pb_gym.progress.note_compiling)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pb_gym import progress

ROOT = Path(__file__).resolve().parent.parent


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _module(index: dict, compiled: bool = False) -> types.ModuleType:
    """A module with one cached kernel whose cache index is ``index`` (empty: not compiled yet)."""
    cache_file = types.SimpleNamespace(_load_index=lambda: index)
    kernel = types.SimpleNamespace(
        _cache=types.SimpleNamespace(_cache_file=cache_file), signatures=["sig"] if compiled else []
    )
    module = types.ModuleType(f"fake_{id(cache_file)}")
    module.kernel = kernel
    return module


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(progress, "_compile_noted", False)
    monkeypatch.setattr(progress, "_compile_checked", set())


def test_a_kernel_missing_from_the_cache_is_announced_once_on_a_terminal():
    stream = _Terminal()
    assert progress.note_compiling(_module({}), stream)
    assert stream.getvalue() == progress.COMPILING + "\n"
    assert "once per machine" in progress.COMPILING
    assert not progress.note_compiling(_module({}), stream)  # once per process
    assert stream.getvalue().count("compiling") == 1


def test_nothing_is_printed_when_cached_compiled_or_not_a_terminal():
    stream = _Terminal()
    assert not progress.note_compiling(_module({("sig",): "entry"}), stream)  # in the cache
    assert not progress.note_compiling(_module({}, compiled=True), stream)  # compiled in-process
    log = io.StringIO()  # a log file, a pipe
    assert not progress.note_compiling(_module({}), log)
    assert stream.getvalue() == log.getvalue() == ""


def test_an_empty_numba_cache_reads_as_not_compiled(tmp_path):
    """With an empty cache folder the engine's kernels read as missing, without compiling anything."""
    code = (
        "import time; t = time.perf_counter(); from pb_gym import engine, progress; "
        "missing = progress._uncached_kernels(engine); "
        "print(len(missing), 'deal_rows' in missing, time.perf_counter() - t < 20)"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    count, deal, quick = done.stdout.split()
    assert int(count) >= 4 and deal == "True" and quick == "True"
