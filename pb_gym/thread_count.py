"""The thread count's environment variables, checked without importing numba.

:mod:`pb_gym.threads` takes its thread count from ``PB_GYM_NUM_THREADS``, else ``NUMBA_NUM_THREADS``;
numba itself reads ``NUMBA_NUM_THREADS`` when it is imported and refuses 0 with an error that names
no variable. This module (standard library only, so that importing :mod:`pb_gym` stays cheap) says
what is wrong with either variable, and :func:`guard_numba_import` makes ``import numba`` say so
while ``NUMBA_NUM_THREADS`` is bad.
"""

from __future__ import annotations

import importlib.abc
import os
import sys

THREADS_PER_CORE = 4
"""The most threads per core a process may ask for (:func:`max_threads`): more only oversubscribes,
and thousands fail inside the thread libraries (``libgomp: Thread creation failed``, a crash in torch)."""
ENVIRONMENT = ("PB_GYM_NUM_THREADS", "NUMBA_NUM_THREADS")
"""The environment variables that set the number of threads (the first one set wins)."""


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def max_threads() -> int:
    """The most threads :func:`pb_gym.threads.set_num_threads` and the environment variables take."""
    return THREADS_PER_CORE * cores()


def environment_problem(names: tuple[str, ...] = ENVIRONMENT) -> str | None:
    """What is wrong with ``PB_GYM_NUM_THREADS`` / ``NUMBA_NUM_THREADS`` (or only the variables
    ``names``): a sentence naming the variable and the allowed values, or None."""
    for name in names:
        text = os.environ.get(name)
        if text is None or (name == "PB_GYM_NUM_THREADS" and not text):
            continue
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= max_threads():
            return (
                f"{name}={text!r} is not allowed; allowed: an integer from 1 to {max_threads()} "
                f"({THREADS_PER_CORE} per core of this machine's {cores()})"
            )
    return None


class _RefuseNumba(importlib.abc.MetaPathFinder):
    """Makes ``import numba`` raise the ValueError of a bad ``NUMBA_NUM_THREADS`` (see
    :func:`guard_numba_import`); it steps aside once the variable is fixed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "numba" or name.startswith("numba."):
            problem = environment_problem(("NUMBA_NUM_THREADS",))
            if problem is not None:
                raise ValueError(problem)
        return None


def guard_numba_import() -> None:
    """While ``NUMBA_NUM_THREADS`` is not an integer in 1..:func:`max_threads`, make ``import numba``
    (which reads it and refuses a bad value with an error that does not name it) raise a ValueError
    naming the variable and the allowed values instead. :mod:`pb_gym` calls this when it is
    imported, before any of its modules imports numba; the command line reports the same problem
    first, as a usage error."""
    if "numba" in sys.modules or environment_problem(("NUMBA_NUM_THREADS",)) is None:
        return
    if not any(isinstance(finder, _RefuseNumba) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RefuseNumba())
