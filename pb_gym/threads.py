"""Deprecated name of :mod:`pb_gym.parallel` (this name goes in the next release): the names users
called are kept here for one release."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator

from pb_gym.parallel import (
    NO_PROBLEM,
    checked_rows,
    cores,
    environment_problem,
    get_num_threads,
    limit,
    max_threads,
    run_rows,
    set_num_threads,
)

__all__ = [
    "get_num_threads",
    "set_num_threads",
    "sharing",
    "parallel_for",
    "run_rows",
    "claim_rows",
    "NO_PROBLEM",
    "cores",
    "max_threads",
    "environment_problem",
]

warnings.warn(
    "pb_gym.threads is deprecated: use pb_gym.parallel (get_num_threads, set_num_threads, run_rows)",
    DeprecationWarning,
    stacklevel=2,
)


def parallel_for(n_rows: int, run: Callable[[int, int], None], min_rows: int) -> None:
    """``run(start, stop)`` over ``[0, n_rows)`` in chunks: :func:`pb_gym.parallel.run_rows`."""
    run_rows(run, n_rows, min_rows)


def claim_rows(
    rows: Callable[..., tuple[int, int]], claiming: object, n_rows: int, min_rows: int, *args: object
) -> tuple[int, int]:
    """``rows`` over ``[0, n_rows)`` in chunks (``claiming`` is not used any more):
    :func:`pb_gym.parallel.checked_rows`."""
    return checked_rows(rows, n_rows, min_rows, *args)


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """The kernels this Python thread calls inside the block run on its own thread:
    :func:`pb_gym.parallel.limit` ``(1)``."""
    with limit(1):
        yield
