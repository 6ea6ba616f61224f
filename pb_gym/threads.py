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
one by one. Between calls a pool thread spins for a while without the GIL (a compiled loop reading
the call counter, at most :data:`SPIN_SECONDS`, adapted to how long its waits last: OpenMP's
blocktime, adaptive) and then sleeps on a condition; the caller waits for the chunks still running
the same way. A thread the OS puts aside only delays the chunk it holds (the others take the rest),
nothing here survives a ``fork`` (a forked child builds its own pool on first use), and any number
of Python threads may call in at once (the pool serves one call at a time; a call that finds it
taken runs on its caller's thread, the same rows with the same results).

The kernels called at every step (the engine's deal, a vector env's step, a session's hand, the EV
bound) use :func:`claim_rows` instead: the kernel itself claims its chunks and marks them done, so a
thread enters compiled code once per call, and the caller's kernel wakes the pool (from compiled
code, after it let go of the GIL) and waits for the others' chunks, while a pool thread waits inside
the kernel for the next call. Measured, the Python handoffs of :func:`parallel_for` cost more than
they gained below some ten thousand tables: a thread that wants the GIL while the other holds it
sleeps until it is let go (tens of microseconds on this machine), and that happened at every chunk.
Each thread also claims its own segment's chunks first, so a table's rows stay in one core's cache
call after call.

Small batches never pay for threads: below ``min_rows`` rows (chosen per kernel, where the work of one
call is worth the ~20-50 microseconds of waking a thread) the kernel runs on the caller's thread.

The thread count is ``PB_GYM_NUM_THREADS`` if set, else ``NUMBA_NUM_THREADS`` if set, else the cores this
process may run on; :func:`set_num_threads` changes it at run time.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import platform
import threading
import time
from collections.abc import Callable, Iterator
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
    "sharing",
    "parallel_for",
    "run_rows",
    "claim_rows",
    "NO_PROBLEM",
    "job_start",
    "job_claim",
    "job_rows",
    "job_done",
    "job_end",
    "cores",
    "max_threads",
    "environment_problem",
    "guard_numba_import",
]

CHUNKS_PER_THREAD = 4
"""Chunks per thread of a parallel call: more chunks than threads, so that a thread the OS has put
aside (a loaded machine) holds up only its own chunk while the others share out the rest."""
CLAIM_CHUNK_ROWS = 2048
"""The most rows of a :func:`claim_rows` chunk (more chunks per thread for a larger batch): a thread
the OS puts aside then holds up only a small chunk while the others take over the rest."""
CLAIM_CHUNKS_PER_THREAD = 2
"""Chunks per thread of a :func:`claim_rows` call. Each thread claims its own segment's chunks
first, so a table's rows stay in one core's cache from call to call; a chunk another thread takes
over moves them. Measured at 4,096 tables on 2 cores: 2 chunks 34.3M hands/s, 4 33.3M, 8 31.0M."""


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


_sharers = 0  # Python threads inside sharing() now
_sharers_lock = threading.Lock()


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """Inside this block the calling Python thread shares the cores with the other threads inside one:
    each of the ``k`` threads inside gets ``get_num_threads() // k`` threads (at least its own) for
    the kernels it calls, and the pool's threads serve none of them while ``k`` reaches the thread
    count. For Python threads that each run independent work side by side (the chunks of a study on
    the ``threads`` backend, :mod:`pb_gym.experiments.scale`): a kernel on its caller's thread alone
    neither waits for a pool thread nor has one spin on a core another chunk needs. The results are
    the same (every kernel gives the same rows whatever its threads)."""
    global _sharers
    with _sharers_lock:
        _sharers += 1
    try:
        yield
    finally:
        with _sharers_lock:
            _sharers -= 1


def _share() -> int:
    """The threads a kernel called now may use: :func:`get_num_threads`, shared out among the Python
    threads inside :func:`sharing` (if any)."""
    threads = get_num_threads()
    return max(1, threads // _sharers) if _sharers > 1 else threads


# the header of a claiming kernel's job (job_layout): its home segments (one per thread), chunks, call
# number, whether the caller's kernel wakes the pool, and the threads inside its kernel now
# whether a chunk found an unusable row, and whether the caller sleeps until the chunks are done
JOB_SEGMENTS, JOB_CHUNKS, JOB_CALL, JOB_PUBLISH, JOB_ACTIVE, JOB_FOUND, JOB_ASLEEP = 0, 1, 2, 3, 4, 5, 6
JOB_HEADER = 7


_JOB_TEMPLATES: dict[tuple[int, int, int], tuple[np.ndarray, slice, slice, slice]] = {}


def job_layout(n_rows: int, segments: int, chunks_per_segment: int) -> tuple[np.ndarray, slice, slice, slice]:
    """A new job of ``n_rows`` rows in ``segments`` home segments (one per thread) of
    ``chunks_per_segment`` chunks each, and the slices of its done flags, tables and problems."""
    key = (n_rows, segments, chunks_per_segment)
    template = _JOB_TEMPLATES.get(key)
    if template is None:
        n_chunks = segments * chunks_per_segment
        bounds = JOB_HEADER + segments
        job = np.zeros(bounds + 1 + 4 * n_chunks, dtype=np.int64)
        job[JOB_SEGMENTS], job[JOB_CHUNKS] = segments, n_chunks
        job[bounds : bounds + n_chunks + 1] = np.arange(n_chunks + 1) * n_rows // n_chunks
        done = bounds + n_chunks + 1
        template = (
            job,
            slice(done, done + n_chunks),
            slice(done + n_chunks, done + 2 * n_chunks),
            slice(done + 2 * n_chunks, done + 3 * n_chunks),
        )
        if len(_JOB_TEMPLATES) > 256:  # (batch sizes are few; a program that varies them stays small)
            _JOB_TEMPLATES.clear()
        _JOB_TEMPLATES[key] = template
    return (template[0].copy(), *template[1:])


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

    def _fetch_add_typer(typingctx: Any, array: Any, index: Any, value: Any) -> Any:
        """``array[index] += value`` as one atomic step, returning the value before (two threads that
        claim chunks this way never claim the same one)."""
        sig = types.int64(array, index, value)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            array_type = signature.args[0]
            view = context.make_array(array_type)(context, builder, args[0])
            pointer = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]])
            return builder.atomic_rmw("add", pointer, args[2], ordering="acq_rel")

        return sig, codegen

    def _store_release_typer(typingctx: Any, array: Any, index: Any, value: Any) -> Any:
        """``array[index] = value`` made visible to other threads after every write before it."""
        sig = types.void(array, index, value)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            array_type = signature.args[0]
            view = context.make_array(array_type)(context, builder, args[0])
            pointer = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]])
            builder.store_atomic(args[2], pointer, ordering="release", align=8)
            return context.get_dummy_value()

        return sig, codegen

    _load_acquire: Any = intrinsic(_load_acquire_typer)
    _pause: Any = intrinsic(_pause_typer)
    _fetch_add: Any = intrinsic(_fetch_add_typer)
    _store_release: Any = intrinsic(_store_release_typer)

    # A job of a claiming kernel (claim_rows) is one int64 array: its header (JOB_*), then a claim
    # counter per home segment, the chunks' bounds (chunks + 1), a done flag, first unusable table
    # and its problem per chunk (job_layout).
    @numba.njit(inline="always")
    def _job_at(job: np.ndarray) -> tuple[int, int, int, int]:
        """Where a job's bounds, done flags, tables and problems start."""
        bounds = JOB_HEADER + job[JOB_SEGMENTS]
        done = bounds + job[JOB_CHUNKS] + 1
        return bounds, done, done + job[JOB_CHUNKS], done + 2 * job[JOB_CHUNKS]

    @numba.njit(inline="always")
    def job_start(job: np.ndarray, flags: np.ndarray, thread: int) -> None:
        """The first statement of a claiming kernel (:func:`claim_rows`): on the caller's thread
        (``thread == 0``) it wakes the pool for the job from compiled code, so that a pool thread
        never finds the GIL still held by the caller."""
        _fetch_add(job, JOB_ACTIVE, np.int64(1))
        if thread == 0 and job[JOB_PUBLISH]:
            _store_release(flags, 0, job[JOB_CALL])

    @numba.njit(inline="always")
    def job_claim(job: np.ndarray, thread: int) -> int:
        """The next unclaimed chunk of a job for ``thread``, or -1 when none is left: first those of
        its own segment (the same rows call after call, so that they stay in its core's cache), then
        those of the others."""
        segments = job[JOB_SEGMENTS]
        per_segment = job[JOB_CHUNKS] // segments
        for k in range(segments):
            segment = (thread + k) % segments
            i = _fetch_add(job, JOB_HEADER + segment, np.int64(1))
            if i < per_segment:
                return segment * per_segment + i
        return -1

    @numba.njit(inline="always")
    def job_rows(job: np.ndarray, chunk: int) -> tuple[int, int]:
        """The ``[start, stop)`` rows of a chunk of a job."""
        bounds = _job_at(job)[0]
        return job[bounds + chunk], job[bounds + chunk + 1]

    @numba.njit(inline="always")
    def job_done(job: np.ndarray, chunk: int, found: tuple[int, int]) -> None:
        """Mark a chunk of a job finished, with the ``(table, problem)`` its rows found."""
        _, done, tables, problems = _job_at(job)
        job[tables + chunk] = found[0]
        job[problems + chunk] = found[1]
        if found[0] >= 0:
            job[JOB_FOUND] = 1
        _store_release(job, done + chunk, np.int64(1))

    @numba.njit(inline="always")
    def job_end(job: np.ndarray, flags: np.ndarray, thread: int, spins: int) -> bool:
        """The last statement of a claiming kernel, once no chunk is left to claim: it waits here,
        without the GIL, up to ``spins`` spins, on the caller's thread (0) for the chunks the others
        still run (True once every chunk is done), on a pool thread for the next call (True if it
        came). (A pool thread that went back to Python as soon as its chunks were done would want
        the GIL just as the caller takes it back, and one of them would sleep until the other let
        go: tens of microseconds.)"""
        _fetch_add(job, JOB_ACTIVE, np.int64(-1))
        if thread == 0:
            done = _job_at(job)[1]
            i = done
            for _ in range(spins):
                while i < done + job[JOB_CHUNKS] and _load_acquire(job, i) == 1:
                    i += 1
                if i == done + job[JOB_CHUNKS]:
                    return True
                _pause()
            return False
        call = job[JOB_CALL]
        for _ in range(spins):
            if _load_acquire(flags, 0) != call:
                return True
            if _load_acquire(job, JOB_ASLEEP):  # the caller sleeps: back to Python to wake it
                return False
            _pause()
        return False

    @numba.njit(nogil=True, cache=True)
    def _job_abandon(job: np.ndarray, inside: bool = True) -> None:
        """No chunk of a job is claimed from now on (a thread's kernel raised, or the caller was
        interrupted); a thread whose kernel raised (``inside``) counts as gone: the caller waits
        for the other threads before it raises."""
        per_segment = job[JOB_CHUNKS] // job[JOB_SEGMENTS]
        for segment in range(job[JOB_SEGMENTS]):
            _fetch_add(job, JOB_HEADER + segment, per_segment + 1)
        if inside:
            _fetch_add(job, JOB_ACTIVE, np.int64(-1))

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
before it sleeps: about twice what waking a sleeping thread costs, as OpenMP's blocktime. A call that
follows within it finds its threads awake; an idle pool sleeps and costs nothing. The pool threads'
budget adapts (:class:`_Spin`) to how long their waits really last, so a pool whose calls come far
apart (a training loop's policy update between steps) hardly spins. (400 us, which spans the Python
between two steps of a vector env of 4,096 tables, measured no faster there: 7.9-8.5M steps/s
against 7.3-8.9M.)"""


class _Spin:
    """An adaptive spin budget, :data:`SPIN_SECONDS` at most, set by how long the waits really last
    (spin and sleep together): one that ended within :data:`SPIN_SECONDS` (a full spin would have
    caught it) grows the budget back to at least a sixteenth and doubles it; one that lasted more
    than :data:`LONG_WAIT` spin budgets halves it. (Adapting on the spin's own outcome instead
    fails both ways: a budget halved down to nothing can never grow again, since its spins are too
    short to see any event, and a burst of slow calls halves a budget the next calls need.)"""

    def __init__(self, most: int) -> None:
        self.most = most
        self.spins = most

    def wait_while(self, flags: np.ndarray, index: int, value: int) -> bool:
        return bool(_spin_while(flags, index, value, self.spins))

    def wait_done(self, flags: np.ndarray, first: int, count: int, value: int) -> bool:
        return bool(_spin_until_done(flags, first, count, value, self.spins))

    def waited(self, seconds: float) -> None:
        """Adapt to a wait that lasted ``seconds``, spin and sleep together."""
        if seconds <= SPIN_SECONDS:
            self.spins = min(self.most, max(self.spins * 2, self.most // 16))
        elif seconds > LONG_WAIT * SPIN_SECONDS:
            self.spins = max(self.spins // 2, 1)


MAX_SERIAL_CALLS = 64
"""After a :func:`claim_rows` call whose pool thread kept the caller waiting for more than half the
caller's own time (it was off its core: a loaded machine), the next calls run on the caller's thread
alone: 1, then 3, 7, ... up to this many after stragglers in a row (none after a call without one).
Measured beside one busy process per core, a vector env of 4,096 tables on two threads otherwise ran
at 0.7x its one-thread speed; with it, at 0.95-1.01x."""
LONG_WAIT = 4
"""A wait of more than this many :data:`SPIN_SECONDS` halves the spin budget (:class:`_Spin`)."""


class _Pool:
    """The pool threads of one process and the one call they serve at a time (module docstring)."""

    def __init__(self) -> None:
        self.flags = np.zeros(2 + _MAX_CHUNKS, dtype=np.int64)  # [call number, -, done per chunk]
        self.cond = threading.Condition()
        self.call_lock = threading.Lock()  # one parallel call at a time; others run on their thread
        self.job: tuple = ()  # ("rows", ...) of parallel_for or ("claims", ...) of claim_rows
        self.serial_calls = 0  # claim_rows' calls to run alone after the last straggler (call_job)
        self.serial_left = 0
        self.sleeping = 0
        self.caller_waiting = False
        # pool threads beyond the ones a call uses (a claiming kernel runs on at most one thread per
        # core, fewer than a parallel_for call may have started) wait apart: not woken at every call
        self.park = threading.Condition(threading.Lock())
        self.wanted = 0  # pool threads 1..wanted serve the calls now
        self.threads: list[threading.Thread] = []
        most = _calibrate_spins()
        self.worker_spin = _Spin(most)  # (shared by the pool threads: one budget is enough)
        self.caller_spin = _Spin(most)

    def grow(self, workers: int) -> None:
        while len(self.threads) < workers:
            n = len(self.threads)
            thread = threading.Thread(target=self._work, args=(n + 1,), name=f"pb-gym-{n}", daemon=True)
            self.threads.append(thread)
            thread.start()

    def _work(self, thread: int) -> None:
        flags, cond, spin = self.flags, self.cond, self.worker_spin
        seen = 0
        spun = False  # a claiming kernel spun for the next call without seeing it
        while True:
            waiting = time.perf_counter()
            if spun or not spin.wait_while(flags, 0, seen):
                with cond:
                    self.sleeping += 1
                    while flags[0] == seen:
                        cond.wait()
                    self.sleeping -= 1
            spin.waited(time.perf_counter() - waiting)
            while True:
                seen = int(flags[0])
                kind, *job = self.job
                if kind == "rows":  # a parallel_for call
                    spun = False
                    self._run_chunks(*job)
                    break
                # a claiming kernel's call (call_job): it spins for the next call once its chunks
                # are done, and the next call is run at once if it came
                waiting = time.perf_counter()
                if not self._run_job(thread, *job):
                    spun = not job[2][JOB_ASLEEP]  # (a kernel that left to wake the caller did not)
                    break
                spin.waited(time.perf_counter() - waiting)
            if self.caller_waiting:
                with cond:
                    cond.notify_all()

    def _run_job(self, thread: int, run: Callable[[int, int], object], errors: list, job: np.ndarray) -> bool:
        """Pool thread ``thread``'s part of a claiming kernel's call: True if the next call came
        during its spin. A thread beyond the job's segments waits apart until a call wants it."""
        if thread >= job[JOB_SEGMENTS]:
            with self.park:
                while self.wanted < thread:
                    self.park.wait()
            return False
        try:
            return bool(run(thread, self.worker_spin.spins))
        except BaseException as exc:  # raised by the caller
            _job_abandon(job)
            errors.append(exc)
            return False

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

    def want(self, workers: int) -> None:
        """The calls from now on use pool threads ``1..workers``: those parked beyond them wake."""
        if workers > self.wanted:
            with self.park:
                self.wanted = workers
                self.park.notify_all()
        else:
            self.wanted = workers

    def call(self, run: Callable[[int, int], None], bounds: list) -> None:
        flags, cond = self.flags, self.cond
        n_chunks = len(bounds) - 1
        errors: list[BaseException] = []
        call = int(flags[0]) + 1
        self.job = ("rows", call, run, itertools.count(), bounds, errors)
        flags[0] = call  # after the job: a thread that sees the number finds its job
        if self.sleeping:
            with cond:
                cond.notify_all()
        self._run_chunks(*self.job[1:])
        waiting = time.perf_counter()
        if not self.caller_spin.wait_done(flags, 2, n_chunks, call):
            with cond:
                self.caller_waiting = True
                while not (flags[2 : 2 + n_chunks] == call).all():
                    cond.wait()
                self.caller_waiting = False
        self.caller_spin.waited(time.perf_counter() - waiting)
        if errors:
            raise errors[0]

    def _leave(self, job: np.ndarray) -> None:
        """Abandon a job whose caller was interrupted: no chunk is claimed from now on, and this
        waits (under the pool's condition, uninterruptibly) until no thread runs one."""
        _job_abandon(job, inside=False)
        while job[JOB_ACTIVE] > 0:
            try:
                self.cond.wait(SPIN_SECONDS * LONG_WAIT)
            except BaseException:  # (a second Ctrl-C: the threads are still writing; wait on)
                continue

    def call_job(self, run: Callable[[int, int], object], job: np.ndarray, done: slice) -> None:
        """One call of a claiming kernel (:func:`claim_rows`): ``run(thread, spins)`` on the caller's
        thread (0) and on every pool thread (1, 2, ...) that wakes in time, until every chunk of
        ``job`` is done (its ``done`` flags)."""
        flags, cond = self.flags, self.cond
        errors: list[BaseException] = []
        job[JOB_CALL] = int(flags[0]) + 1
        self.job = ("claims", run, errors, job)
        if self.sleeping:  # published here, before the notification that wakes them
            flags[0] = job[JOB_CALL]
            with cond:
                cond.notify_all()
        else:  # published by the kernel, once the caller's thread has let go of the GIL
            job[JOB_PUBLISH] = 1
        # the caller's kernel waits for the other chunks at its end, a full spin every time: they are
        # running (a chunk's work at most), where an adaptive budget, once halved, never grew back
        # (each short spin failed and the sleep after it made the wait look long)
        started = time.perf_counter()
        try:
            all_done = bool(run(0, self.caller_spin.most))
        except Exception as exc:  # raised by the kernel: it left without job_end
            _job_abandon(job)
            errors.append(exc)
            all_done = False
        except BaseException:  # Ctrl-C, handled once the kernel had returned: the chunks being run
            with cond:  # still finish before the call raises (they write the caller's arrays)
                self._leave(job)
            raise
        ran = time.perf_counter() - started
        if not all_done:

            def finished() -> bool:  # every chunk done, or (after an error) no thread in the kernel
                return bool((job[done] == 1).all() or (errors and job[JOB_ACTIVE] <= 0))

            with cond:
                self.caller_waiting = True
                job[JOB_ASLEEP] = 1  # (a pool thread done with its chunks returns to wake it)
                try:
                    while not finished():
                        cond.wait(SPIN_SECONDS * LONG_WAIT if errors else None)
                except BaseException:  # Ctrl-C while asleep: the chunks being run still finish
                    self._leave(job)  # before the call raises (they write the caller's arrays)
                    raise
                finally:
                    self.caller_waiting = False
        # a pool thread that kept the caller waiting for more than half the caller's own time was off
        # its core (a loaded machine): the next calls run on the caller's thread alone, more of them
        # each time in a row (MAX_SERIAL_CALLS)
        straggler = not all_done and not errors and time.perf_counter() - started > 1.5 * ran
        self.serial_calls = min(2 * self.serial_calls + 1, MAX_SERIAL_CALLS) if straggler else 0
        self.serial_left = self.serial_calls
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
    pool = _pool
    if pool is not None and len(pool.threads) >= workers and _pool_pid == os.getpid():
        return pool  # (the common case, without the lock)
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
    if n_rows < min_rows:
        run(0, n_rows)
        return
    threads = min(_share(), n_rows // max(min_rows // 2, 1))
    if threads <= 1:
        run(0, n_rows)
        return
    n_chunks = min(threads * CHUNKS_PER_THREAD, n_rows, _MAX_CHUNKS)
    bounds = [n_rows * i // n_chunks for i in range(n_chunks + 1)]
    pool = _get_pool(threads - 1)
    if not pool.call_lock.acquire(blocking=False):
        run(0, n_rows)
        return
    try:
        pool.want(len(pool.threads))
        pool.call(run, bounds)
    finally:
        pool.call_lock.release()


NO_PROBLEM = (-1, 0)
"""What a row kernel that checks its rows returns when every row was fine: ``(table, problem)`` of
the first unusable table otherwise (:data:`pb_gym.shoe_state.TABLE_PROBLEMS`)."""


_cores_of = (-1, 1)  # (pid, cores) of _claim_cores


def _claim_cores() -> int:
    """The cores this process may run on (:func:`cores`, read once per process): a claiming kernel
    uses no more threads than that, since its threads spin while they wait (measured with 8 threads on
    2 cores: a vector env at 0.69x its one-thread speed, where more threads than cores are asked for)."""
    global _cores_of
    pid = os.getpid()
    if _cores_of[0] != pid:
        _cores_of = (pid, cores())
    return _cores_of[1]


def claim_rows(
    rows: Callable[..., tuple[int, int]],
    claiming: Callable[..., bool],
    n_rows: int,
    min_rows: int,
    *args: object,
) -> tuple[int, int]:
    """The faster form of :func:`run_rows` for a kernel called often on some thousands of rows (a deal,
    an env step). ``rows(start, stop, *args)`` returns ``(table, problem)`` (:data:`NO_PROBLEM` if
    none); ``claiming(job, flags, thread, spins, *args)`` is the same kernel over the chunks of a
    pool job, which it claims and marks done itself (:func:`job_start`, :func:`job_claim`,
    :func:`job_rows`, :func:`job_done`, :func:`job_end`). Each thread enters compiled code once per
    call, no thread waits for another to let go of the GIL, and each thread deals the same rows call
    after call unless another falls behind. Returns the problem of the lowest table any chunk
    found."""
    if n_rows < min_rows:  # (first: a single env's step pays for nothing more)
        return rows(0, n_rows, *args)
    threads = min(_share(), _claim_cores(), n_rows // max(min_rows // 2, 1))
    if threads <= 1:
        return rows(0, n_rows, *args)
    per_thread = max(CLAIM_CHUNKS_PER_THREAD, -(-n_rows // (threads * CLAIM_CHUNK_ROWS)))
    job, done, tables, problems = job_layout(n_rows, threads, min(per_thread, _MAX_CHUNKS // threads))
    pool = _get_pool(threads - 1)
    if pool.serial_left > 0:
        pool.serial_left -= 1
        return rows(0, n_rows, *args)
    if not pool.call_lock.acquire(blocking=False):
        return rows(0, n_rows, *args)
    try:
        flags = pool.flags
        pool.want(threads - 1)
        pool.call_job(lambda thread, spins: claiming(job, flags, thread, spins, *args), job, done)
    finally:
        pool.call_lock.release()
    if not job[JOB_FOUND]:
        return NO_PROBLEM
    found = job[tables]
    first = int(np.argmin(np.where(found >= 0, found, np.iinfo(np.int64).max)))
    return int(found[first]), int(job[problems][first])


def run_rows(kernel: Callable[..., object], n_rows: int, min_rows: int, *args: object) -> None:
    """``kernel(start, stop, *args)`` over the rows ``[0, n_rows)`` with :func:`parallel_for`: the form of
    every row kernel of pb-gym (a ``nogil`` numba function whose first two arguments are its range)."""

    def rows(start: int, stop: int) -> None:
        kernel(start, stop, *args)

    parallel_for(n_rows, rows, min_rows)
