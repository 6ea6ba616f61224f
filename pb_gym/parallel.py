"""How pb-gym's compiled kernels use several cores: a large batch split into a few coarse chunks, run
at once on a standard thread pool (:class:`concurrent.futures.ThreadPoolExecutor`).

Every kernel is compiled with ``nogil=True`` and runs serially over a ``[start, stop)`` range of rows;
:func:`run_rows` runs it over at most :func:`get_num_threads` contiguous chunks, the caller's thread
taking them too, and each row's arithmetic is the same whichever thread runs it. Not numba's own
threading layers: GNU OpenMP aborts forked children (``SubprocVecEnv``, Gymnasium's ``AsyncVectorEnv``)
and its threads spin on a busy machine, and ``workqueue`` is not safe from several Python threads.

The thread count is ``PB_GYM_NUM_THREADS`` if set, else ``NUMBA_NUM_THREADS`` if set, else the cores
this process may run on; :func:`set_num_threads` changes it, :func:`limit` lowers it for the kernels
one Python thread calls (a study's chunks running side by side).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

THREADS_PER_CORE = 4
"""The most threads per core a process may ask for (:func:`max_threads`): more only oversubscribes."""
ENVIRONMENT = ("PB_GYM_NUM_THREADS", "NUMBA_NUM_THREADS")
"""The environment variables that set the number of threads (the first one set wins)."""
NO_PROBLEM = (-1, 0)
"""What a kernel that checks its rows returns when all are usable: ``(table, problem)`` of the first
unusable table otherwise (:data:`pb_gym.shoe_state.TABLE_PROBLEMS`)."""


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def max_threads() -> int:
    """The most threads :func:`set_num_threads` and the environment variables take."""
    return THREADS_PER_CORE * cores()


def environment_problem(names: tuple[str, ...] = ENVIRONMENT) -> str | None:
    """What is wrong with ``PB_GYM_NUM_THREADS`` / ``NUMBA_NUM_THREADS`` (or only ``names``): one
    sentence naming the variable and the allowed values, or None. (numba itself refuses a
    ``NUMBA_NUM_THREADS`` below 1 when it is imported, without naming it: the command line checks
    this first.)"""
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


_threads: int | None = None  # read from the environment on first use (a bad value is an error then)
_local = threading.local()  # .limit: this Python thread's cap (limit)
_pool: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None  # (pid, pool): a fork makes its own
_pool_lock = threading.Lock()


def get_num_threads() -> int:
    """Threads a large batch is split over (the caller's included)."""
    global _threads
    if _threads is None:
        problem = environment_problem()
        if problem is not None:
            raise ValueError(problem)
        _threads = next((int(os.environ[name]) for name in ENVIRONMENT if os.environ.get(name)), cores())
    return _threads


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (>= 1; the caller's thread counts as one) from now on."""
    global _threads
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= max_threads():
        raise ValueError(f"threads={n!r} is not allowed; allowed: an integer from 1 to {max_threads()}")
    _threads = n


@contextlib.contextmanager
def limit(n: int) -> Iterator[None]:
    """Inside this block the kernels this Python thread calls use at most ``n`` threads (1: its own)."""
    before = getattr(_local, "limit", None)
    _local.limit = n
    try:
        yield
    finally:
        _local.limit = before


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), concurrent.futures.ThreadPoolExecutor(max_threads(), "pb-gym"))
        return _pool[1]


def run_rows(kernel: Callable[..., Any], n_rows: int, min_rows: int, *args: object) -> list:
    """``kernel(start, stop, *args)`` over the rows ``[0, n_rows)``; its results, one per chunk in row
    order. ``kernel`` must release the GIL and write disjoint rows for disjoint ranges. Below
    ``min_rows`` rows, or with one thread, it is one call on the caller's thread; otherwise the rows
    are cut into contiguous chunks of at least ``min_rows // 2`` rows, one per thread, which the caller
    and the pool's threads take in turn (a pool thread that starts late finds them taken). An
    exception (a chunk's, or Ctrl-C) is raised once no thread runs a chunk any more."""
    if n_rows < min_rows:  # (first: a single env's reset pays for nothing more)
        return [kernel(0, n_rows, *args)]
    cap = getattr(_local, "limit", None)
    threads = min(get_num_threads(), cap or n_rows, n_rows // max(min_rows // 2, 1))
    if threads <= 1:
        return [kernel(0, n_rows, *args)]
    bounds = [n_rows * i // threads for i in range(threads + 1)]
    results: list = [None] * threads
    chunks = iter(range(threads))  # shared: each chunk goes to the first thread that takes it

    def take() -> None:
        for i in chunks:
            results[i] = kernel(bounds[i], bounds[i + 1], *args)

    helpers = [_executor().submit(take) for _ in range(threads - 1)]
    raised: BaseException | None = None
    try:
        take()
    except BaseException as error:  # (the helpers' chunks write the caller's arrays: waited for)
        raised = error
    for _ in chunks:  # (after an error, nobody starts another)
        pass
    for helper in helpers:
        while True:
            try:  # (a helper not started yet never will: cancelled; else waited for)
                raised = raised or (None if helper.cancel() else helper.exception())
                break
            except BaseException as error:  # a Ctrl-C while waiting: raised once they have finished
                raised = raised or error
    if raised is not None:
        raise raised
    return results


def checked_rows(
    kernel: Callable[..., tuple[int, int]], n_rows: int, min_rows: int, *args: object
) -> tuple[int, int]:
    """:func:`run_rows` of a kernel that returns ``(table, problem)`` (:data:`NO_PROBLEM` if none): the
    problem of the lowest table any chunk found."""
    if n_rows < min_rows:  # (first: a single env's step pays for nothing more)
        return kernel(0, n_rows, *args)
    return next((found for found in run_rows(kernel, n_rows, min_rows, *args) if found[0] >= 0), NO_PROBLEM)
