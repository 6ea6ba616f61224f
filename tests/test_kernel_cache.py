"""pb-gym's cached kernels are stamped with the content of the whole package (pb_gym.kernel_cache), so
that an edit anywhere in it, not only in a kernel's own file, makes them compile afresh."""

import subprocess
import sys

import numba
import pytest

import pb_gym  # noqa: F401  (installs the stamp)
from pb_gym import kernel_cache
from pb_gym.agents import staking
from pb_gym.envs import observation


@pytest.mark.parametrize("kernel", [observation.obs_rows, staking.propose_rows])
def test_the_package_kernels_carry_the_package_stamp(kernel):
    locator = kernel._cache._impl._locator
    assert type(locator).__name__.startswith("PbGym")
    own, package = locator.get_source_stamp()
    assert package == kernel_cache.package_stamp() and own is not None


def test_other_kernels_are_cached_as_numba_does():
    @numba.njit(cache=True)
    def plus_one(x):
        return x + 1

    assert not type(plus_one._cache._impl._locator).__name__.startswith("PbGym")


def test_the_stamp_changes_with_any_source_file(tmp_path, monkeypatch):
    (tmp_path / "engine.py").write_text("X = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "rules.py").write_text("BURN = 10\n")
    (tmp_path / "notes.txt").write_text("not a source")
    monkeypatch.setattr(kernel_cache, "PACKAGE_ROOT", str(tmp_path))
    stamps = []
    for edit in (None, ("notes.txt", "still not a source"), ("sub/rules.py", "BURN = 9\n")):
        if edit is not None:
            (tmp_path / edit[0]).write_text(edit[1])
        kernel_cache.package_stamp.cache_clear()
        stamps.append(kernel_cache.package_stamp())
    kernel_cache.package_stamp.cache_clear()
    assert stamps[0] == stamps[1] != stamps[2]


WARM_PROCESS = """
import gymnasium
import numpy as np
from numba.core import event
from pb_gym import rules as R, session
from pb_gym.envs import ENV_ID
from pb_gym.experiments import evaluate, scale

CONFIG = {
    "name": "warm", "bankroll": 100, "sessions": 20, "hands": 5, "seed": 1,
    "table": {"unit": 1, "minimum": 1, "maximum": 50},
    "systems": [{"type": "martingale"}, {"type": "labouchere"}, {"type": "kelly"}],
}

with event.install_recorder("numba:compile") as compiled:
    rules = R.Rules()
    limits = session.Limits(bankroll=100.0, table_min=1.0, table_max=100.0)
    table = session.Session(rules, limits, 8, 2, seed=3)
    requested = np.zeros((2, 8, table.n_bets))
    requested[:, :, R.BANKER] = 1.0
    table.play(requested)
    for env in (gymnasium.make(ENV_ID), gymnasium.make_vec(ENV_ID, num_envs=4)):
        env.reset(seed=1)
        env.step(env.action_space.sample())
    chunk = scale.plan(20, 20, 1, range(1))[0]
    evaluate.run_chunk(CONFIG, chunk)  # progressions, Kelly: the hand's pass and its arguments
print(sorted({str(e.data["dispatcher"].py_func.__qualname__) for _, e in compiled.buffer}))
"""


def test_a_warm_process_plays_and_steps_without_compiling():
    """A new process with the cache warm plays a session's hand, steps the single and the vector env
    and plays an evaluate chunk with the kernels from the cache alone: a
    structref built from Python (:class:`pb_gym.session.kernels.PlayState`) would compile its
    constructor again in every process, about 0.5 s."""
    runs = [
        subprocess.run([sys.executable, "-c", WARM_PROCESS], capture_output=True, text=True, check=True)
        for _ in range(2)  # (the first warms the cache, if this checkout's tests have not yet)
    ]
    assert runs[1].stdout.strip() == "[]", runs[1].stdout + runs[1].stderr
