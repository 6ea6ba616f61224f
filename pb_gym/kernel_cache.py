"""Where numba keeps pb-gym's compiled kernels: one folder per version and source tree, per user.

numba checks a cached kernel against its own source file only, but it compiles into a kernel the code
of every kernel it calls and the values of the module constants it reads, wherever they are defined:
after an edit (or a ``git pull``) of another file, a kernel cached beside its source would load and run
the old code of what it calls. So pb-gym gives numba a cache folder per state of its sources, with
numba's documented setting: :func:`configure` (called by :mod:`pb_gym` on import, before any of its
modules imports numba) sets ``NUMBA_CACHE_DIR`` to :func:`folder`,
``<user cache>/pb-gym/<version>-<stamp>``, where the user cache is ``$XDG_CACHE_HOME``, by default
``~/.cache``, and the stamp a hash of every Python file of the package (:func:`package_stamp`). An
installed release keeps one folder; in a clone, an edit anywhere in pb-gym starts a fresh folder, so no
kernel runs stale code, and :func:`prune` removes the oldest folders once a new one compiles.

What numba does inside the folder is numba's: a subfolder per source folder, named after its path, so a
second copy of the same sources (another clone, another virtual environment) compiles once more, into
the same folder. A ``NUMBA_CACHE_DIR`` the user has set is kept as it is: numba then caches there, and
an edit of pb-gym's sources no longer starts a fresh folder (empty it after an edit or an upgrade).
The variable holds for the whole process and its children: numba caches the kernels of other
packages there too, once pb-gym is imported.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import sys
import time

PACKAGE_ROOT = os.path.dirname(os.path.abspath(__file__))
"""The folder of the ``pb_gym`` package (its ``agents`` and ``experiments`` are inside it, as links
in a checkout)."""

STAMP_DIGITS = 16
"""The hexadecimal digits of :func:`package_stamp` in a folder's name."""
KEEP = 4
"""The stamp folders :func:`prune` keeps at least: the current one and the most recently filled others
(another clone or branch at another state keeps its kernels)."""
IN_USE_HOURS = 1.0
""":func:`prune` leaves the folders filled in the last hour or so (a test run, another process, may be
using one)."""
_FOLDER = re.compile(rf".+-[0-9a-f]{{{STAMP_DIGITS}}}")


@functools.lru_cache(maxsize=1)
def package_stamp() -> str:
    """SHA-256 over every ``.py`` file of the package (relative path and content), read once a process."""
    digest = hashlib.sha256()
    for folder, subfolders, files in os.walk(PACKAGE_ROOT, followlinks=True):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, PACKAGE_ROOT).encode())
                with open(path, "rb") as source:
                    digest.update(source.read())
    return digest.hexdigest()


def user_cache() -> str:
    """pb-gym's folder in the user's cache: ``$XDG_CACHE_HOME/pb-gym``, by default ``~/.cache/pb-gym``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pb-gym")


def folder(version: str) -> str:
    """The kernel cache of this version and state of the sources: ``<user cache>/pb-gym/VERSION-STAMP``."""
    return os.path.join(user_cache(), f"{version}-{package_stamp()[:STAMP_DIGITS]}")


def _ours(path: str) -> bool:
    """Whether ``path`` is one of the stamp folders of :func:`user_cache`."""
    path = os.path.abspath(path)
    return os.path.dirname(path) == os.path.abspath(user_cache()) and bool(
        _FOLDER.fullmatch(os.path.basename(path))
    )


def configure(version: str) -> str:
    """Point numba's cache at :func:`folder` unless the user has set ``NUMBA_CACHE_DIR`` to a folder
    of their own; returns the folder numba caches in. One of pb-gym's folders, inherited from the
    process that started this one, is replaced by this process's own (its sources may have changed
    since). Creates nothing: numba makes the folder when it first saves a kernel (and falls back to its
    own places where it cannot)."""
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if chosen and not _ours(chosen):
        return chosen
    chosen = os.environ["NUMBA_CACHE_DIR"] = folder(version)
    config = sys.modules.get("numba.core.config")
    if config is not None and (not config.CACHE_DIR or _ours(config.CACHE_DIR)):
        # numba, imported before pb-gym, read the variable already: its setting, as the variable gives it
        setattr(config, "CACHE_DIR", chosen)  # noqa: B010  (a module's attribute mypy does not know)
    return chosen


def prune(current: str | None = None, keep: int = KEEP, hours: float = IN_USE_HOURS) -> list[str]:
    """Remove the stamp folders of :func:`user_cache` but ``current`` (default: ``NUMBA_CACHE_DIR``),
    those modified in the last ``hours`` (another process may be using them) and the most recently
    modified others, ``keep`` in all; nothing when ``current`` is not one of them (a folder the user
    chose), and other entries there are left alone. Returns what was removed. A process still
    loading from a removed folder compiles what it misses, as numba does."""
    current = os.path.abspath(current or os.environ.get("NUMBA_CACHE_DIR") or user_cache())
    if not _ours(current):
        return []
    try:
        entries = [
            (entry.stat().st_mtime, entry.path)
            for entry in os.scandir(user_cache())
            if entry.is_dir() and _FOLDER.fullmatch(entry.name) and os.path.abspath(entry.path) != current
        ]
    except OSError:
        return []
    entries.sort(reverse=True)
    recent = time.time() - 3600 * hours
    removed = [path for mtime, path in entries[max(keep - 1, 0) :] if mtime < recent]
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed
