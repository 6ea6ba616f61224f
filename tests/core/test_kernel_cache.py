"""numba's cache of pb-gym's kernels (pb_gym.kernel_cache): a folder per version and state of the sources
in the user's cache, set with numba's documented NUMBA_CACHE_DIR, so that an edit anywhere in the
package, not only in a kernel's own file, makes the kernels compile afresh, and importing pb_gym
patches nothing of numba's."""

import json
import os
import subprocess
import sys
from pathlib import Path

from pb_gym import kernel_cache

from repo_paths import ROOT  # noqa: E402

IMPORT = """
import json, os, sys
finders = list(sys.meta_path)
import pb_gym
from pb_gym import kernel_cache
before_numba = "numba" in sys.modules
from numba.core import caching, config
print(json.dumps({
    "folder": os.environ["NUMBA_CACHE_DIR"],
    "numba_sees": config.CACHE_DIR,
    "stamp": kernel_cache.package_stamp(),
    "numba_at_import": before_numba,
    "new_finders": [repr(f) for f in sys.meta_path if f not in finders],
    "locators": [c.__name__ for c in caching.CacheImpl._locator_classes],
}))
"""


def _import_pb_gym(tmp_path: Path, code: str = IMPORT, **env: str) -> dict:
    """``code`` in a new process with ``XDG_CACHE_HOME`` in ``tmp_path`` and no NUMBA_CACHE_DIR but
    ``env``'s; returns what it printed (JSON)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    environ.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), **env)
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout)


def test_import_points_numba_at_a_folder_per_version_and_sources_and_patches_nothing(tmp_path):
    import pb_gym

    seen = _import_pb_gym(tmp_path)
    expected = tmp_path / "cache" / "pb-gym" / f"{pb_gym.__version__}-{seen['stamp'][:16]}"
    assert seen["folder"] == seen["numba_sees"] == str(expected)
    assert not seen["numba_at_import"] and seen["new_finders"] == []
    assert seen["locators"][:3] == ["UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator"]


def test_a_cache_folder_the_user_chose_is_kept_and_pb_gyms_own_is_this_processs(tmp_path):
    chosen = str(tmp_path / "mine")
    seen = _import_pb_gym(tmp_path, NUMBA_CACHE_DIR=chosen)
    assert seen["folder"] == seen["numba_sees"] == chosen
    # a folder of pb-gym's inherited from a parent process run on other sources: this process's own
    inherited = str(tmp_path / "cache" / "pb-gym" / f"0.0.1-{'0' * 16}")
    own = _import_pb_gym(tmp_path)["folder"]
    assert own != inherited and _import_pb_gym(tmp_path, NUMBA_CACHE_DIR=inherited)["folder"] == own


def test_numba_imported_before_pb_gym_caches_in_pb_gyms_folder(tmp_path):
    seen = _import_pb_gym(tmp_path, code="import numba\n" + IMPORT)
    assert seen["numba_sees"] == seen["folder"] and seen["folder"].startswith(str(tmp_path / "cache"))


def test_the_folder_follows_the_sources_not_where_they_are(tmp_path, monkeypatch):
    """Two copies of the same sources share the stamp and the folder; an edit of a file that is not a
    source keeps them, an edit of any source file (in a subfolder too) gives new ones."""
    copies = []
    for name in ("clone", "other-clone"):
        root = tmp_path / name / "pb_gym"
        (root / "sub").mkdir(parents=True)
        (root / "engine.py").write_text("X = 1\n")
        (root / "sub" / "rules.py").write_text("BURN = 10\n")
        (root / "notes.txt").write_text("not a source")
        copies.append(root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    edits = [None, None, ("notes.txt", "still not a source"), ("sub/rules.py", "BURN = 9\n")]
    stamps, folders = [], []
    for root, edit in zip([copies[0], *[copies[1]] * 3], edits, strict=True):
        if edit is not None:
            (root / edit[0]).write_text(edit[1])
        monkeypatch.setattr(kernel_cache, "PACKAGE_ROOT", str(root))
        kernel_cache.package_stamp.cache_clear()
        stamps.append(kernel_cache.package_stamp())
        folders.append(kernel_cache.folder("1.2.3"))
    kernel_cache.package_stamp.cache_clear()
    assert stamps[0] == stamps[1] == stamps[2] != stamps[3]
    assert folders[0] == folders[1] == folders[2] != folders[3]
    assert all(f.startswith(str(tmp_path / "cache" / "pb-gym" / "1.2.3-")) for f in folders)


def test_prune_keeps_the_current_and_the_newest_folders_and_nothing_else_is_touched(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    root = tmp_path / "pb-gym"
    names = [f"0.{n}.0-{n:016x}" for n in range(6)]  # modified in this order, the last the newest
    for age, name in enumerate(names):
        (root / name / "pb_gym_0123").mkdir(parents=True)
        os.utime(root / name, (1_000_000 + age, 1_000_000 + age))
    (root / "torchinductor").mkdir()  # pb-gym train's torch cache
    (root / "resume.key").write_text("key")
    current = str(root / names[0])  # the oldest, in use by this process
    assert kernel_cache.prune(current, keep=3) == [str(root / n) for n in names[1:4][::-1]]
    left = sorted(p.name for p in root.iterdir())
    assert left == sorted([names[0], names[4], names[5], "torchinductor", "resume.key"])
    assert kernel_cache.prune(str(tmp_path / "elsewhere"), keep=1) == []  # a folder the user chose
    os.utime(root / names[4])  # filled just now: maybe in use by another process
    assert kernel_cache.prune(current, keep=1) == [str(root / names[5])]


WARM_PROCESS = """
import gymnasium
import numpy as np
from numba.core import event
from pb_gym import rules as R, session
from pb_gym.envs import ENV_ID
from pb_gym.experiments import evaluate
from pb_gym.experiments.common import scale

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
    # the kernels of pb_gym.agents (pb_gym/agents/) are cached like the others
    assert any(Path(os.environ["NUMBA_CACHE_DIR"]).glob("agents_*/staking.*.nbi"))
