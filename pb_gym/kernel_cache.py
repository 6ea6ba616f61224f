"""numba's on-disk cache of pb-gym's kernels, kept valid for the whole package.

numba checks a cached kernel against its own source file only, but it compiles into a kernel the code
of every kernel it calls and the values of the module constants it reads, wherever they are defined.
After an edit (or a ``git pull``) of another file, such a kernel would load from the cache and run
the old code of what it calls. :func:`install` makes numba stamp each cached kernel of pb-gym with the
content of every Python file of the package as well as its own (:func:`package_stamp`), so that any
change to pb-gym's sources makes all of its cached kernels stale and they compile afresh; other
packages' kernels are cached as numba does.

:mod:`pb_gym` calls :func:`install` on import, before any of its kernels is defined, without importing
numba itself: the hook runs once ``numba.core.caching`` is imported (or at once, if it is already).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from typing import Any

PACKAGE_ROOT = os.path.dirname(os.path.abspath(__file__))
"""The folder of the ``pb_gym`` package (its ``agents`` and ``experiments`` are inside it, as links
in a checkout)."""


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


@functools.lru_cache(maxsize=1)
def _roots() -> tuple[str, ...]:
    """The package's folders as real paths (``agents`` and ``experiments`` are links in a checkout)."""
    return tuple(
        {os.path.realpath(os.path.join(PACKAGE_ROOT, name)) for name in ("", "agents", "experiments")}
    )


def _ours(py_file: str) -> bool:
    real = os.path.realpath(py_file)
    return any(real.startswith(root + os.sep) for root in _roots())


def _locators(caching: types.ModuleType) -> list[type]:
    """numba's locators for a source file, restricted to pb-gym's files, with the package's stamp."""

    class PackageStamp:
        def get_source_stamp(self) -> Any:
            return (super().get_source_stamp(), package_stamp())  # type: ignore[misc]

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            return super().from_function(py_func, py_file) if _ours(py_file) else None  # type: ignore[misc]

    return [
        type(f"PbGym{base.__name__}", (PackageStamp, base), {})
        for base in (
            caching.UserProvidedCacheLocator,
            caching.InTreeCacheLocator,
            caching.UserWideCacheLocator,
        )
    ]


def _register(caching: types.ModuleType) -> None:
    impl = caching.CacheImpl
    if not any(getattr(cls, "__name__", "").startswith("PbGym") for cls in impl._locator_classes):
        impl._locator_classes = _locators(caching) + list(impl._locator_classes)


class _AfterCaching(importlib.abc.MetaPathFinder):
    """Registers pb-gym's locators right after ``numba.core.caching`` is imported."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "numba.core.caching":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            run(module)
            try:
                _register(module)
            except Exception:  # numba's cache layout is not an API: then numba caches as it does
                pass

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Make numba stamp pb-gym's cached kernels with :func:`package_stamp` (see the module docstring).
    Idempotent; where numba's cache internals are not as expected, numba's own caching is left as is."""
    try:
        caching = sys.modules.get("numba.core.caching")
        if caching is not None:
            _register(caching)
        elif not any(isinstance(finder, _AfterCaching) for finder in sys.meta_path):
            sys.meta_path.insert(0, _AfterCaching())
    except Exception:  # numba's cache layout is not an API: caching as numba does is the fallback
        return
