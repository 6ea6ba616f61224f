"""The engine's own small thread pool: how pb-gym runs its compiled kernels on several cores.

Why not numba's ``parallel=True``? Measured on this project's 2-core machine (README, "Speed"), numba's
threading layers each fail one of the things users need:

* ``omp`` (GNU OpenMP, the layer numba picks when it is installed) is fast on an idle machine but its
  threads spin at every barrier: with one busy process per core the engine fell from 37M to 0.5M
  hands/s, a single env with one table ran at 60 steps/s, and SB3 (whose torch threads use their own
  OpenMP runtime) trained 7x slower. GNU OpenMP is also not fork-safe: ``SubprocVecEnv`` and
  Gymnasium's ``AsyncVectorEnv`` with ``fork`` abort.
* ``workqueue`` is fork-safe but not thread-safe, and half as fast on an idle machine.
* ``tbb`` needs a shared library that pip's ``tbb`` wheel installs outside the loader's search path.

So every kernel is compiled once, serially, with ``nogil=True`` and takes a ``[start, stop)`` range of
rows; :func:`parallel_for` splits a batch into chunks that a few Python threads (and the caller) claim
one by one. The threads sleep on a lock between calls (no spinning), a thread the OS puts aside only
delays the chunk it holds (the others take the rest), nothing here survives a ``fork`` (a forked child
builds its own pool on first use), and any number of Python threads may call in at once.

Small batches never pay for threads: below ``min_rows`` rows (chosen per kernel, where the work of one
call is worth the ~20-50 microseconds of waking a thread) the kernel runs on the caller's thread.

The thread count is ``PB_GYM_NUM_THREADS`` if set, else ``NUMBA_NUM_THREADS`` if set, else the cores this
process may run on; :func:`set_num_threads` changes it at run time.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = [
    "get_num_threads",
    "set_num_threads",
    "parallel_for",
    "run_rows",
    "cores",
    "max_threads",
    "environment_problem",
]

CHUNKS_PER_THREAD = 4
"""Chunks per thread of a parallel call: more chunks than threads, so that a thread the OS has put
aside (a loaded machine) holds up only its own chunk while the others share out the rest."""


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
    """The most threads :func:`set_num_threads` and the environment variables take."""
    return THREADS_PER_CORE * cores()


def environment_problem() -> str | None:
    """What is wrong with ``PB_GYM_NUM_THREADS`` / ``NUMBA_NUM_THREADS`` (a sentence naming the
    variable and the allowed values), or None."""
    for name in ENVIRONMENT:
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


def _default_threads() -> int:
    problem = environment_problem()
    if problem is not None:
        raise ValueError(problem)
    for name in ENVIRONMENT:
        if os.environ.get(name):
            return int(os.environ[name])
    return cores()


_threads: int | None = None  # read from the environment on first use (a bad value is an error then)
_pool: ThreadPoolExecutor | None = None
_pool_pid = -1
_pool_lock = threading.Lock()


def get_num_threads() -> int:
    """Threads that :func:`parallel_for` uses (the caller's included)."""
    global _threads
    if _threads is None:
        _threads = _default_threads()
    return _threads


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (>= 1; the caller's thread counts as one) from now on."""
    global _threads
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= max_threads():
        raise ValueError(f"threads={n!r} is not allowed; allowed: an integer from 1 to {max_threads()}")
    _threads = n


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _pool_lock:
        # a forked child inherits the pool object but not its threads: it builds its own
        if _pool is None or _pool_pid != os.getpid() or _pool._max_workers < workers:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pb-gym")
            _pool_pid = os.getpid()
        return _pool


def parallel_for(n_rows: int, run: Callable[[int, int], None], min_rows: int) -> None:
    """Call ``run(start, stop)`` over ``[0, n_rows)`` split into chunks, on up to
    :func:`get_num_threads` threads; ``run`` must release the GIL (a ``nogil`` kernel) and write
    disjoint rows for disjoint ranges. Below ``min_rows`` rows, or with one thread, it is one call on
    the caller's thread. Exceptions of any chunk are raised here after every chunk has finished."""
    threads = min(get_num_threads(), n_rows // max(min_rows // 2, 1))
    if n_rows < min_rows or threads <= 1:
        run(0, n_rows)
        return
    n_chunks = min(threads * CHUNKS_PER_THREAD, n_rows)
    bounds = [n_rows * i // n_chunks for i in range(n_chunks + 1)]
    claim = itertools.count()  # next() of a count is atomic under the GIL: each chunk runs once

    def worker() -> None:
        while (i := next(claim)) < n_chunks:
            run(bounds[i], bounds[i + 1])

    futures = [_get_pool(threads - 1).submit(worker) for _ in range(threads - 1)]
    error: BaseException | None = None
    try:
        worker()
    except BaseException as exc:  # still wait for the other threads: they write into the same arrays
        error = exc
    for future in futures:
        failure = future.exception()
        if error is None and failure is not None:
            error = failure
    if error is not None:
        raise error


def run_rows(kernel: Callable[..., object], n_rows: int, min_rows: int, *args: object) -> None:
    """``kernel(start, stop, *args)`` over the rows ``[0, n_rows)`` with :func:`parallel_for`: the form of
    every row kernel of pb-gym (a ``nogil`` numba function whose first two arguments are its range)."""

    def rows(start: int, stop: int) -> None:
        kernel(start, stop, *args)

    parallel_for(n_rows, rows, min_rows)
