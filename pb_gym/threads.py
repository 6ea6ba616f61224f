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
one by one. Between calls a pool thread spins for a short while without the GIL (a compiled loop
reading the call counter, at most :data:`SPIN_SECONDS`, halved after each spin that waited in vain:
OpenMP's blocktime, adaptive) and then sleeps on a condition; the caller waits for the chunks still
running the same way. A thread the OS puts aside only delays the chunk it holds (the others take the
rest), nothing here survives a ``fork`` (a forked child builds its own pool on first use), and any
number of Python threads may call in at once (the pool serves one call at a time; a call that finds
it taken runs on its caller's thread, the same rows with the same results).

Small batches never pay for threads: below ``min_rows`` rows (chosen per kernel, where the work of one
call is worth the ~20-50 microseconds of waking a thread) the kernel runs on the caller's thread.

The thread count is ``PB_GYM_NUM_THREADS`` if set, else ``NUMBA_NUM_THREADS`` if set, else the cores this
process may run on; :func:`set_num_threads` changes it at run time.
"""

from __future__ import annotations

import itertools
import os
import platform
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pb_gym.thread_count import (
    ENVIRONMENT,
    THREADS_PER_CORE,
    cores,
    environment_problem,
    guard_numba_import,
    max_threads,
)

__all__ = [
    "get_num_threads",
    "set_num_threads",
    "parallel_for",
    "run_rows",
    "cores",
    "max_threads",
    "environment_problem",
    "guard_numba_import",
]

CHUNKS_PER_THREAD = 4
"""Chunks per thread of a parallel call: more chunks than threads, so that a thread the OS has put
aside (a loaded machine) holds up only its own chunk while the others share out the rest."""


def _default_threads() -> int:
    problem = environment_problem()
    if problem is not None:
        raise ValueError(problem)
    for name in ENVIRONMENT:
        if os.environ.get(name):
            return int(os.environ[name])
    return cores()


_threads: int | None = None  # read from the environment on first use (a bad value is an error then)
_pool: _Pool | None = None
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


# the compiled spin loops (numba reads NUMBA_NUM_THREADS when it is imported and refuses a bad value
# with its own error: the command line reports the problem first, from environment_problem)
if environment_problem() is None:
    import numba
    from llvmlite import ir  # type: ignore[import-untyped]
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    def _load_acquire_typer(typingctx: Any, array: Any, index: Any) -> Any:
        """``array[index]`` read from memory every time (an atomic load: a spin loop sees another
        thread's write instead of a value the compiler kept in a register)."""
        sig = types.int64(array, index)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            array_type = signature.args[0]
            view = context.make_array(array_type)(context, builder, args[0])
            pointer = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]])
            return builder.load_atomic(pointer, ordering="acquire", align=8)

        return sig, codegen

    def _pause_typer(typingctx: Any) -> Any:
        """The CPU's spin-wait hint (x86 ``pause``; nothing elsewhere)."""
        sig = types.void()

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            if platform.machine().lower() in ("x86_64", "amd64", "i686", "x86"):
                fnty = ir.FunctionType(ir.VoidType(), [])
                builder.call(cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse2.pause"), [])
            return context.get_dummy_value()

        return sig, codegen

    _load_acquire: Any = intrinsic(_load_acquire_typer)
    _pause: Any = intrinsic(_pause_typer)

    @numba.njit(nogil=True, cache=True)
    def _spin_while(flags: np.ndarray, index: int, value: int, spins: int) -> bool:
        """Spin (without the GIL) while ``flags[index] == value``, at most ``spins`` times: True if it
        changed."""
        for _ in range(spins):
            if _load_acquire(flags, index) != value:
                return True
            _pause()
        return False

    @numba.njit(nogil=True, cache=True)
    def _spin_until_done(flags: np.ndarray, first: int, count: int, value: int, spins: int) -> bool:
        """Spin (without the GIL) until ``flags[first:first + count]`` all equal ``value``, at most
        ``spins`` times: True if they do."""
        i = first
        for _ in range(spins):
            while i < first + count and _load_acquire(flags, i) == value:
                i += 1
            if i == first + count:
                return True
            _pause()
        return False


SPIN_SECONDS = 100e-6
"""The longest a pool thread spins for the next call (and the caller for the chunks still running)
before it sleeps: about twice what waking a sleeping thread costs, as OpenMP's blocktime. A call
that follows within it (a training loop, a benchmark) finds its threads awake; an idle pool sleeps
and costs nothing. The spin adapts (:class:`_Spin`): it halves each time it ends without the event
(calls far apart, or a loaded machine that keeps the other thread off its core) and doubles back
each time the event comes during it, so a pool that cannot gain from spinning hardly spins."""


class _Spin:
    """An adaptive spin budget: :data:`SPIN_SECONDS` at most, halved after each spin that waited in
    vain, doubled after each that saw its event."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.spins = most

    def wait_while(self, flags: np.ndarray, index: int, value: int) -> bool:
        seen = _spin_while(flags, index, value, self.spins)
        self._adapt(seen)
        return seen

    def wait_done(self, flags: np.ndarray, first: int, count: int, value: int) -> bool:
        done = _spin_until_done(flags, first, count, value, self.spins)
        self._adapt(done)
        return done

    def _adapt(self, success: bool) -> None:
        self.spins = min(self.most, self.spins * 2) if success else max(self.spins // 2, 1)


class _Pool:
    """The pool threads of one process and the one call they serve at a time (module docstring)."""

    def __init__(self) -> None:
        self.flags = np.zeros(2 + _MAX_CHUNKS, dtype=np.int64)  # [call number, -, done per chunk]
        self.cond = threading.Condition()
        self.call_lock = threading.Lock()  # one parallel call at a time; others run on their thread
        self.job: tuple = ()
        self.sleeping = 0
        self.caller_waiting = False
        self.threads: list[threading.Thread] = []
        most = _calibrate_spins()
        self.worker_spin = _Spin(most)  # (shared by the pool threads: one budget is enough)
        self.caller_spin = _Spin(most)

    def grow(self, workers: int) -> None:
        while len(self.threads) < workers:
            thread = threading.Thread(target=self._work, name=f"pb-gym-{len(self.threads)}", daemon=True)
            self.threads.append(thread)
            thread.start()

    def _work(self) -> None:
        flags, cond = self.flags, self.cond
        seen = 0
        while True:
            if not self.worker_spin.wait_while(flags, 0, seen):
                with cond:
                    self.sleeping += 1
                    while flags[0] == seen:
                        cond.wait()
                    self.sleeping -= 1
            seen = int(flags[0])
            self._run_chunks(*self.job)

    def _run_chunks(
        self, call: int, run: Callable[[int, int], None], claim: Any, bounds: list, errors: list
    ) -> None:
        flags = self.flags
        n_chunks = len(bounds) - 1
        while (i := next(claim)) < n_chunks:
            try:
                run(bounds[i], bounds[i + 1])
            except BaseException as exc:  # raised by the caller once every chunk has finished
                errors.append(exc)
            flags[2 + i] = call
            if self.caller_waiting:
                with self.cond:
                    self.cond.notify_all()

    def call(self, run: Callable[[int, int], None], bounds: list) -> None:
        flags, cond = self.flags, self.cond
        n_chunks = len(bounds) - 1
        errors: list[BaseException] = []
        call = int(flags[0]) + 1
        self.job = (call, run, itertools.count(), bounds, errors)
        flags[0] = call  # after the job: a thread that sees the number finds its job
        if self.sleeping:
            with cond:
                cond.notify_all()
        self._run_chunks(*self.job)
        if not self.caller_spin.wait_done(flags, 2, n_chunks, call):
            with cond:
                self.caller_waiting = True
                while not (flags[2 : 2 + n_chunks] == call).all():
                    cond.wait()
                self.caller_waiting = False
        if errors:
            raise errors[0]


_MAX_CHUNKS = CHUNKS_PER_THREAD * THREADS_PER_CORE * 1024


def _calibrate_spins() -> int:
    """Spins of :func:`_spin_while` in :data:`SPIN_SECONDS` on this machine."""
    probe = np.zeros(1, dtype=np.int64)
    _spin_while(probe, 0, 0, 1)  # (compiled, or loaded from the cache)
    spins = 2000
    start = time.perf_counter()
    _spin_while(probe, 0, 0, spins)
    elapsed = max(time.perf_counter() - start, 1e-7)
    return max(1, int(spins * SPIN_SECONDS / elapsed))


def _get_pool(workers: int) -> _Pool:
    global _pool, _pool_pid
    with _pool_lock:
        # a forked child inherits the pool object but not its threads: it builds its own
        if _pool is None or _pool_pid != os.getpid():
            _pool = _Pool()
            _pool_pid = os.getpid()
        _pool.grow(workers)
        return _pool


def parallel_for(n_rows: int, run: Callable[[int, int], None], min_rows: int) -> None:
    """Call ``run(start, stop)`` over ``[0, n_rows)`` split into chunks, on up to
    :func:`get_num_threads` threads; ``run`` must release the GIL (a ``nogil`` kernel) and write
    disjoint rows for disjoint ranges. Below ``min_rows`` rows, or with one thread, it is one call on
    the caller's thread; so is a call made while another Python thread's call holds the pool.
    Exceptions of any chunk are raised here after every chunk has finished."""
    threads = min(get_num_threads(), n_rows // max(min_rows // 2, 1))
    if n_rows < min_rows or threads <= 1:
        run(0, n_rows)
        return
    n_chunks = min(threads * CHUNKS_PER_THREAD, n_rows, _MAX_CHUNKS)
    bounds = [n_rows * i // n_chunks for i in range(n_chunks + 1)]
    pool = _get_pool(threads - 1)
    if not pool.call_lock.acquire(blocking=False):
        run(0, n_rows)
        return
    try:
        pool.call(run, bounds)
    finally:
        pool.call_lock.release()


def run_rows(kernel: Callable[..., object], n_rows: int, min_rows: int, *args: object) -> None:
    """``kernel(start, stop, *args)`` over the rows ``[0, n_rows)`` with :func:`parallel_for`: the form of
    every row kernel of pb-gym (a ``nogil`` numba function whose first two arguments are its range)."""

    def rows(start: int, stop: int) -> None:
        kernel(start, stop, *args)

    parallel_for(n_rows, rows, min_rows)
