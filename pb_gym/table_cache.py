"""pb-gym's derived tables kept on disk beside its cached kernels, so that a process loads them.

Why. The exact calculators derive their tables from the rules once per process: the 10^6 value
sequences dealt through the drawing tableau (:func:`pb_gym.exact.multiset_weights` and the hand-class
weights read them) and the EV bound's Taylor coefficients take about a second of CPU in every process
that prices a bet exactly (a Kelly seat, an env with ``reward="expected"``, each test worker). Loaded,
they take a few milliseconds, and they are the same bits.

Where. Beside numba's cache of the kernels: ``$NUMBA_CACHE_DIR/pb_gym`` when that variable is set, else
the package's own ``__pycache__`` when it is writable, else the user's cache folder
(``$XDG_CACHE_HOME/pb_gym``, by default ``~/.cache/pb_gym``); where none is writable each process
builds its tables, as before. A file is named by its table and a stamp of every source file of the
package (:func:`pb_gym.kernel_cache.package_stamp`) and of the numpy and numba versions, so an edit of
the rules (or a ``git pull``, or an upgrade) makes it stale: it is built again, and the stale files of
that table are removed. A file that cannot be read (cut short, not a table) is built again too.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pb_gym import kernel_cache

Tables = dict[str, np.ndarray]
"""A named set of arrays: what a builder returns and :func:`cached` gives back."""


def stamp() -> str:
    """What a cached table depends on besides its name: the package's sources, numpy and numba."""
    import numba

    text = f"{kernel_cache.package_stamp()} numpy {np.__version__} numba {numba.__version__}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def folder() -> Path | None:
    """The folder of the cached tables (module docstring), created if need be; None if none is writable."""
    numba_cache = os.environ.get("NUMBA_CACHE_DIR")
    if numba_cache:
        candidates = [Path(numba_cache) / "pb_gym"]
    else:
        user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pb_gym"
        candidates = [Path(kernel_cache.PACKAGE_ROOT) / "__pycache__", user]
    return next((path for path in candidates if _writable(path)), None)


def _load(path: Path) -> Tables | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None


def _save(where: Path, name: str, path: Path, tables: Tables) -> None:
    """Write ``tables`` to ``path`` whole (a temporary file renamed into place, so a reader never sees
    half a file) and remove the stale files of ``name``; a failure (a full disk) only leaves the table
    uncached, and its temporary file removed (as does a Ctrl-C, which then goes on up)."""
    try:
        handle, temporary = tempfile.mkstemp(dir=where, prefix=f".{name}-", suffix=".npz")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            save: Any = np.savez  # (its stub types ``**arrays`` as its own keyword options)
            save(out, allow_pickle=False, **tables)
        os.chmod(temporary, 0o644)  # (mkstemp makes it the owner's alone: readable as a kernel cache is)
        os.replace(temporary, path)
    except BaseException as error:  # a full disk, or Ctrl-C halfway: no half-written file stays
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if not isinstance(error, OSError):
            raise
        return
    for stale in where.glob(f"table-{name}-*.npz"):
        if stale != path:
            try:
                stale.unlink()
            except OSError:
                pass


def cached(name: str, keys: tuple[str, ...], build: Callable[[], Tables]) -> Tables:
    """The arrays ``build()`` returns (named ``keys``), loaded from the cache when it holds them for
    this stamp, else built and stored there. ``name`` names the table (its file:
    ``table-<name>-<stamp>.npz``); a file without exactly ``keys`` is built again."""
    where = folder()
    if where is None:
        return build()
    path = where / f"table-{name}-{stamp()}.npz"
    tables = _load(path)
    if tables is None or sorted(tables) != sorted(keys):
        tables = build()
        _save(where, name, path, tables)
    return tables
