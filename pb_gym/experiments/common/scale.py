"""Scale-out: split a study into independent chunks, run them on a backend, merge exactly.

A study (sessions of ``pb-gym evaluate``, shoes of the counting experiment, sessions of the ruin
experiment) is cut into chunks of consecutive items. Chunk ``i`` is seeded with
``numpy.random.SeedSequence(seed).spawn(n)[i]`` (whose spawn key ``(i,)`` does not depend on ``n``), so
a chunk deals the same hands wherever it runs. Each study's chunk task returns *mergeable* statistics
(sums, sums of squares, counts, histograms, per-item arrays), and the merge adds them up in chunk order;
the merged result is therefore identical, to the last bit, whether the chunks ran serially, in local
processes, or on a Dask cluster.

Backends:

* ``serial``: one chunk after the other, in this process (the default).
* ``threads``: ``workers`` Python threads of this process (default: the cores), each running one chunk
  at a time, the kernels' threads shared out among them (:func:`pb_gym.parallel.limit`): what one
  chunk does in Python (a betting system's proposal, the accounting between kernels) runs while the
  other chunks' kernels run, with no process to start. Not for tasks that use a process-wide random
  state (a learned policy seeds torch's): their draws would interleave. A chunk failing twice lets
  the chunks running finish (kept for a rerun) and starts no other; Ctrl-C stops the running ones at
  their next :func:`stop_requested` check (a task that never checks finishes its chunk first).
* ``processes``: a local process pool (``concurrent.futures``, spawn context: numba's threads and
  ``fork`` do not mix), ``workers`` processes (default: the cores).
* ``dask``: an existing Dask distributed scheduler (``scheduler="tcp://host:8786"``), or a local
  cluster of ``workers`` processes on the loopback interface when no address is given. Needs the
  ``dask`` extra.

A chunk that raises is run once more; a chunk that fails twice stops the run with a
:class:`ChunkError` naming the chunk and its seed, and nothing is merged or written. A lost worker
counts as a failure of the chunks it was running: with ``processes`` the broken pool is replaced by a
new one and the unfinished chunks run again; with Dask the scheduler reruns a dead worker's tasks on
the others (a chunk whose workers keep dying ends as ``KilledWorker``, one failed attempt). An
unreachable ``scheduler`` is a :class:`SchedulerError` after :data:`CONNECT_TIMEOUT_S`, a malformed one
a ValueError at once. Progress is reported as each chunk finishes.

Resume: with a :class:`pb_gym.experiments.common.chunk_store.ChunkStore`, each chunk is saved as it finishes
and a
later run with the same config computes only the missing chunks (the merge is bit-identical).
"""

from __future__ import annotations

import collections
import concurrent.futures as futures
import dataclasses
import multiprocessing
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from pb_gym import interrupts, parallel
from pb_gym import progress as progress_display

if TYPE_CHECKING:
    from pb_gym.experiments.common.chunk_store import ChunkStore

BACKENDS: tuple[str, ...] = ("serial", "threads", "processes", "dask")
Result = TypeVar("Result")


@dataclasses.dataclass(frozen=True)
class Chunk:
    """One independent piece of a study: items ``start .. start + size - 1`` with their own seed."""

    index: int
    count: int
    start: int
    size: int
    seed: np.random.SeedSequence

    def child_seeds(self, n: int) -> list[np.random.SeedSequence]:
        """``n`` independent seeds derived from the chunk's seed, the same at every call (unlike
        ``SeedSequence.spawn``, which moves on each time: a retried chunk must deal the same hands)."""
        return [
            np.random.SeedSequence(self.seed.entropy, spawn_key=(*self.seed.spawn_key, k)) for k in range(n)
        ]

    def describe(self) -> str:
        """``chunk 3/8 (items 300-399, seed entropy 42, spawn key (3,))``."""
        return (
            f"chunk {self.index + 1}/{self.count} (items {self.start}-{self.start + self.size - 1}, "
            f"seed entropy {self.seed.entropy}, spawn key {tuple(self.seed.spawn_key)})"
        )


CHUNK_OVERHEAD = 2048
"""Bytes a planned chunk costs before its result (its seed, its place in the lists)."""


def require_memory(
    study: str,
    items: int,
    chunk_items: int,
    *,
    item: str,
    items_key: str,
    chunk_key: str,
    working_per_item: float,
    kept_per_item: float = 0.0,
    kept_per_chunk: float = 0.0,
    parallel: int = 1,
) -> None:
    """Refuse, before planning anything, a study this machine cannot hold
    (:class:`pb_gym.memory.TooLarge`, naming the key to change).

    A chunk of ``chunk_items`` items needs ``working_per_item`` bytes per item while it runs
    (``parallel`` chunks at once); each finished chunk is kept until the merge (``kept_per_chunk``,
    plus what it keeps per item: ``kept_per_item``, e.g. the final bankroll of every session). The
    working memory is bounded by the chunk size whatever the number of items; what is kept grows with
    it, and the message says which part is too large."""
    from pb_gym import memory

    chunks = -(-items // chunk_items)
    working = max(parallel, 1) * min(chunk_items, items) * working_per_item
    kept_items = items * kept_per_item
    kept_chunks = chunks * (kept_per_chunk + CHUNK_OVERHEAD)
    largest = max(working, kept_items, kept_chunks)
    if largest == working:
        advice = (
            f"lower `{chunk_key}` (a running chunk needs about "
            f"{memory.describe(working_per_item)} per {item}"
            + (f", {parallel} chunks at once" if parallel > 1 else "")
            + ")"
        )
    elif largest == kept_items:
        advice = (
            f"lower `{items_key}` (the study keeps about {memory.describe(kept_per_item)} for "
            f"every {item} until its report)"
        )
    else:
        advice = (
            f"raise `{chunk_key}` or lower `{items_key}` ({chunks:,} chunks; each finished "
            f"chunk is kept until the merge, about "
            f"{memory.describe(kept_per_chunk + CHUNK_OVERHEAD)} each)"
        )
    memory.require(
        working + kept_items + kept_chunks,
        f"{study} ({items:,} {item}s in chunks of {chunk_items:,})",
        advice,
    )


MAX_CHUNKS = 1_000_000
"""Most chunks a run is cut into (each finished one is a file kept in ``OUT/.partial``)."""
MAX_ITEMS = 10**10
"""Most items (sessions, shoes) a run holds."""
MAX_HANDS_DEALT = 10**12
"""Most hands a study may deal in all (sessions x hands): about two weeks of one core's dealing at
pb-gym's speed, far beyond any study it ships; a larger one is a typing slip, refused before it
runs."""


class RunTooLarge(ValueError):
    """A run larger than pb-gym runs (:data:`MAX_CHUNKS`, :data:`MAX_ITEMS`, :data:`MAX_HANDS_DEALT`),
    refused before anything is computed; the command line reports it with exit status 2."""


def check_size(n_items: int, chunk_size: int, items: str = "items (sessions or shoes)") -> None:
    """Raise :class:`RunTooLarge` for a run of more than :data:`MAX_ITEMS` items or more than
    :data:`MAX_CHUNKS` chunks of ``chunk_size``."""
    count = -(-n_items // max(chunk_size, 1))
    if n_items > MAX_ITEMS or count > MAX_CHUNKS:
        raise RunTooLarge(
            f"a run of {n_items:,} {items} in chunks of {chunk_size:,} ({count:,} chunks) is larger "
            f"than pb-gym runs: at most {MAX_ITEMS:,} {items} and {MAX_CHUNKS:,} chunks (each "
            f"finished chunk is a file kept in OUT/.partial); lower the {items}, or raise the "
            "chunk size"
        )


class ChunkError(RuntimeError):
    """A chunk failed twice; the run stopped and nothing was merged."""


def plan(
    n_items: int, chunk_size: int, seed: int | np.random.SeedSequence, indices: range | None = None
) -> list[Chunk]:
    """Cut ``n_items`` into chunks of ``chunk_size`` consecutive items (the last may be smaller);
    :class:`RunTooLarge` for a plan larger than :func:`check_size` allows.

    ``indices``: only these chunks of the plan (the same chunks, seeds included), so that a study of
    millions of chunks is planned a slice at a time."""
    if n_items < 1 or chunk_size < 1:
        raise ValueError(f"n_items={n_items} and chunk_size={chunk_size} must both be >= 1")
    check_size(n_items, chunk_size)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    count = -(-n_items // chunk_size)
    # chunk i's seed is root.spawn(count)[i], made directly (spawn would make every earlier one)
    return [
        Chunk(
            i,
            count,
            i * chunk_size,
            min(chunk_size, n_items - i * chunk_size),
            np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, i), pool_size=root.pool_size),
        )
        for i in (range(count) if indices is None else indices)
    ]


def _check_backend(backend: str, scheduler: str | None, workers: int | None) -> None:
    """ValueError for a backend, scheduler address or worker count :func:`run` cannot use."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not allowed; allowed: {', '.join(BACKENDS)}")
    if scheduler is not None and backend != "dask":
        raise ValueError("--scheduler is only for the dask backend")
    if scheduler is not None:
        check_scheduler_address(scheduler)
    if workers is not None and workers < 1:
        raise ValueError(f"workers={workers} is not allowed; allowed: an integer >= 1")


def _kept_results(store: ChunkStore | None, chunks: Sequence[Chunk]) -> dict[int, Any]:
    """The results of ``chunks`` that ``store`` already holds (said on stderr when there are some)."""
    results: dict[int, Any] = {}
    if store is None:
        return results
    for chunk in chunks:
        found, result = store.load(chunk)
        if found:
            results[chunk.index] = result
    if results:
        print(
            f"resuming: {len(results)} of {len(chunks)} chunks already finished in "
            f"{store.directory}; computing the other {len(chunks) - len(results)}",
            file=sys.stderr,
            flush=True,
        )
    return results


def run(
    task: Callable[[Chunk], Result],
    chunks: Sequence[Chunk],
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Callable[[Chunk], None] | None = None,
    store: ChunkStore | None = None,
    keep: Callable[[Chunk, Result], None] | None = None,
) -> list[Result]:
    """Run ``task`` on every chunk with the backend; return the results in chunk order.

    ``task`` must be a module-level function (it is pickled for processes and Dask). ``progress`` is
    called with each chunk as it finishes. With a ``store``
    (:class:`pb_gym.experiments.common.chunk_store.ChunkStore`)
    the chunks it already holds are loaded instead of computed, and every chunk is saved as soon as it
    finishes, so that an interruption (Ctrl-C, a killed process, a chunk failing twice) loses only the
    chunks that were running. ``keep`` is called here with each chunk and its result as it finishes
    (before ``progress``): for a caller that keeps its results under names of its own (the regret
    table's runs, :meth:`~pb_gym.experiments.common.chunk_store.ChunkStore.save_step`).
    """
    _check_backend(backend, scheduler, workers)
    progress = progress or (lambda chunk: None)
    results: dict[int, Any] = _kept_results(store, chunks)

    def finished(chunk: Chunk, result: Any) -> None:
        results[chunk.index] = result
        if store is not None:
            store.save(chunk, result)
        if keep is not None:
            keep(chunk, result)
        progress(chunk)

    todo = [chunk for chunk in chunks if chunk.index not in results]
    try:
        if not todo:
            pass
        elif backend == "serial":
            _run_serial(task, todo, finished)
        elif backend == "threads":
            _run_threads(task, todo, workers or parallel.cores(), finished)
        elif backend == "processes":
            _run_processes(task, todo, workers or os.cpu_count() or 1, finished)
        else:
            _run_dask(task, todo, scheduler, workers, finished)
    except ChunkError as error:
        if store is not None and results:
            raise ChunkError(
                f"{error}. {len(results)} finished chunk(s) are kept in "
                f"{store.directory}: rerun the same command to compute only the others"
            ) from error.__cause__
        raise
    except KeyboardInterrupt as interrupted:  # (its text ends the command's one line on stderr)
        # the files on disk, not the results in memory: the signal may have come during a save
        kept = len(store.finished()) if store is not None else 0
        if store is not None and kept:
            interrupted.args = (
                f"{kept} finished chunk(s) are kept in {store.directory}; "
                "rerun the same command to compute only the others",
            )
        raise
    return [results[chunk.index] for chunk in chunks]


class SchedulerError(RuntimeError):
    """The Dask scheduler given with ``--scheduler`` cannot be reached."""


CONNECT_TIMEOUT_S = 10.0
"""How long to wait for a Dask scheduler to answer before giving up (seconds)."""
_ADDRESS = re.compile(r"(?:(tcp|tls|ws|wss|ucx)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")


def check_scheduler_address(address: str) -> None:
    """Raise ValueError unless ``address`` looks like a Dask scheduler address (``tcp://host:port``)."""
    match = _ADDRESS.fullmatch(address) if isinstance(address, str) else None
    if match is None or not 1 <= int(match.group(3)) <= 65535:
        raise ValueError(
            f"--scheduler {address!r} is not a scheduler address; allowed: "
            "PROTOCOL://HOST:PORT with PROTOCOL tcp, tls, ws, wss or ucx and PORT 1-65535, "
            "e.g. tcp://10.0.0.5:8786"
        )


def _failure(chunk: Chunk, error: BaseException) -> ChunkError:
    return ChunkError(
        f"{chunk.describe()} failed twice; the run is stopped and no report was written. "
        f"Last error: {type(error).__name__}: {error}"
    )


class ChunkStopped(Exception):
    """Raised by :func:`stop_requested`'s caller: the run this chunk belongs to is stopping."""


def _twice(task: Callable[[Chunk], Any], chunk: Chunk) -> Any:
    """``task(chunk)`` in this process, run once more if it raises; a :class:`ChunkError` if it raises
    again (a chunk told to stop, :class:`ChunkStopped`, is not retried)."""
    try:
        return task(chunk)
    except ChunkStopped:
        raise
    except Exception:  # noqa: BLE001 - one retry, whatever went wrong
        try:
            return task(chunk)
        except ChunkStopped:
            raise
        except Exception as error:  # noqa: BLE001
            raise _failure(chunk, error) from error


def _run_serial(task, chunks, finished):
    for chunk in chunks:
        finished(chunk, _twice(task, chunk))


WAIT_S = 0.25
"""How long the main thread waits for a chunk before it checks for a signal whose exception was
dropped (:func:`pb_gym.interrupts.check`): a Ctrl-C ends the run within this much."""

_worker = threading.local()  # a threads-backend worker's stop event


def stop_requested() -> bool:
    """Whether the run of the chunk this thread is running is stopping (Ctrl-C): a long task on the
    ``threads`` backend checks it now and then and raises :class:`ChunkStopped`. Always False on the
    other backends (Ctrl-C interrupts the task itself)."""
    stop = getattr(_worker, "stop", None)
    return stop is not None and stop.is_set()


def _run_threads(
    task: Callable[[Chunk], Any],
    chunks: Sequence[Chunk],
    workers: int,
    finished: Callable[[Chunk, Any], None],
) -> None:
    """At most ``workers`` chunks at once, each on its own Python thread and retried there once
    (:func:`_twice`, as serially); the results are handed to ``finished`` on this thread as they
    come. A chunk failing twice starts no other chunk, but the running ones finish and are kept (a
    rerun resumes from them) before the run stops; Ctrl-C stops them at their next
    :func:`stop_requested` check."""
    stop = threading.Event()
    side_by_side = min(workers, len(chunks))
    # each chunk's kernels on its share of the threads (with as many chunks as cores: its own thread
    # alone, neither waiting for another thread nor taking a core another chunk needs)
    share = max(1, parallel.get_num_threads() // side_by_side)

    def attempt(chunk: Chunk) -> Any:
        _worker.stop = stop
        try:
            with parallel.limit(share):
                return _twice(task, chunk)
        finally:
            _worker.stop = None

    pool = futures.ThreadPoolExecutor(max_workers=side_by_side, thread_name_prefix="chunk")
    pending = collections.deque(chunks)  # (started from here, one as each running one ends: a pool
    # thread that ends a chunk takes no other by itself, so a failure starts none)
    running: dict[futures.Future, Chunk] = {}
    failure: BaseException | None = None
    wait = True
    try:
        while pending or running:
            while pending and len(running) < workers and failure is None:
                chunk = pending.popleft()
                running[pool.submit(attempt, chunk)] = chunk
            if not running:
                break
            done, _ = futures.wait(running, timeout=WAIT_S, return_when=futures.FIRST_COMPLETED)
            interrupts.check()
            for future in sorted(done, key=lambda f: running[f].index):
                chunk = running.pop(future)
                error = future.exception()
                if error is None:
                    finished(chunk, future.result())
                    continue
                if not isinstance(error, ChunkError):
                    raise error  # (Ctrl-C inside a task)
                failure = failure or error
                pending.clear()  # (not started: never will)
                if running:
                    print(
                        f"{error}; waiting for the {len(running)} chunk(s) still running, "
                        "to keep them for a rerun",
                        file=sys.stderr,
                        flush=True,
                    )
        if failure is not None:
            raise failure
    except KeyboardInterrupt:
        # the chunks still running stop at their next check, not waited for: a chunk compiling a
        # kernel (a first run) would hold the interruption as long; they write no file, and their
        # work is dropped
        wait = False
        raise
    finally:
        stop.set()  # (the run over: the chunks still running stop at their next check)
        pool.shutdown(wait=wait, cancel_futures=True)


PR_SET_PDEATHSIG = 1
"""Linux's prctl option: the signal a process gets when its parent dies."""


def die_with_parent(parent: int) -> None:
    """A pool worker's initializer: the worker is killed when the process that made the pool dies
    (even by ``kill -9``, which runs no clean-up), instead of computing on for nobody and holding its
    memory; with the workers gone, multiprocessing's resource tracker exits too. Linux: prctl
    ``PR_SET_PDEATHSIG``; elsewhere a thread that watches the parent's id."""
    import signal

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
    except (OSError, AttributeError):
        import threading
        import time

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def _new_pool(workers: int) -> futures.ProcessPoolExecutor:
    return futures.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )


def _run_processes(task, chunks, workers, finished):
    """At most ``workers`` chunks in flight, so that a lost worker implicates only the chunks then
    running. A worker that dies (killed, out of memory, a crash in compiled code) breaks the whole
    pool: the pool is recreated and the unfinished chunks run again. Only a chunk that was running
    alone when the pool broke is charged a failed attempt: when several were running, the culprit is
    unknown, so they are rerun one at a time (``suspects``) until each has finished or died alone. A
    chunk charged twice stops the run (a bystander is never blamed)."""
    workers = min(workers, len(chunks))
    queue = collections.deque(chunks)
    failures: dict[int, int] = collections.defaultdict(int)
    pool = _new_pool(workers)
    running: dict[futures.Future, Chunk] = {}
    suspects: set[int] = set()  # lost beside others: each reruns alone before anything else runs
    try:
        while queue or running:
            broken = False
            limit = 1 if suspects else workers
            while queue and len(running) < limit:
                try:
                    future = pool.submit(task, queue[0])
                except BrokenProcessPool:  # it broke since the last wait; its futures will say so
                    broken = True
                    break
                running[future] = queue.popleft()
            lost: list[Chunk] = []
            if running:
                done, _ = futures.wait(running, timeout=WAIT_S, return_when=futures.FIRST_COMPLETED)
                interrupts.check()
                for future in done:
                    chunk = running.pop(future)
                    error = future.exception()
                    if error is None:
                        suspects.discard(chunk.index)
                        finished(chunk, future.result())
                    elif isinstance(error, BrokenProcessPool):
                        lost.append(chunk)
                    else:
                        failures[chunk.index] += 1
                        if failures[chunk.index] == 2:
                            raise _failure(chunk, error) from error
                        queue.appendleft(chunk)
            if not (lost or broken):
                continue
            # The pool is broken: every other running chunk fails the same way (or has just finished).
            for future in futures.as_completed(list(running)):
                chunk = running.pop(future)
                if future.exception() is None:
                    suspects.discard(chunk.index)
                    finished(chunk, future.result())
                else:
                    lost.append(chunk)
            pool.shutdown(wait=True, cancel_futures=True)
            alone = len(lost) == 1
            for chunk in sorted(lost, key=lambda c: c.index):
                if not alone:  # the culprit is unknown: rerun each alone before blaming it
                    suspects.add(chunk.index)
                    continue
                suspects.discard(chunk.index)
                failures[chunk.index] += 1
                if failures[chunk.index] == 2:
                    raise ChunkError(
                        f"{chunk.describe()} failed twice: a worker process died while it ran (killed, "
                        "out of memory, or a crash in compiled code), twice; the run is stopped and no "
                        "report was written"
                    )
            print(
                f"a worker process died ({len(lost)} chunk(s) were running); restarting the pool "
                "and running the unfinished chunks again",
                file=sys.stderr,
                flush=True,
            )
            queue.extendleft(sorted(lost, key=lambda c: c.index, reverse=True))
            pool = _new_pool(workers)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _run_dask(task, chunks, scheduler, workers, finished):
    """A worker lost mid-chunk is handled by Dask itself (the scheduler reruns its tasks elsewhere);
    a chunk whose workers keep dying ends as ``KilledWorker``, which counts as one failed attempt."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as error:
        raise RuntimeError(
            "the dask backend needs the dask extra: pip install -e '.[dask]' in the clone"
        ) from error
    cluster = None
    if scheduler is None:  # a local cluster on the loopback interface only
        cluster = LocalCluster(
            n_workers=workers or os.cpu_count() or 1,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as error:
            raise SchedulerError(
                f"--scheduler {scheduler}: no Dask scheduler answered within "
                f"{CONNECT_TIMEOUT_S:g} s ({type(error).__name__}: {error}); is it "
                "running, and reachable from here?"
            ) from None
    try:
        submitted = {client.submit(task, chunk, pure=False): (chunk, 1) for chunk in chunks}
        queue = as_completed(list(submitted))
        for future in queue:
            chunk, attempt = submitted.pop(future)
            if future.status == "finished":
                finished(chunk, future.result())
                continue
            try:
                failure = future.exception()
            except BaseException as raised:  # noqa: BLE001 - a cancelled or lost future
                failure = raised
            if attempt == 1:
                retry = client.submit(task, chunk, pure=False)
                submitted[retry] = (chunk, 2)
                queue.add(retry)
            else:
                for other in submitted:
                    other.cancel()
                raise _failure(chunk, failure) from failure
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def progress_printer(label: str, enabled: bool, chunks: int | None = None) -> progress_display.Progress:
    """A ``progress`` callback for :func:`run`: a bar on a terminal, else a line at least every few
    seconds (chunks done, elapsed, time left; see :class:`pb_gym.progress.Progress`); silent when not
    ``enabled``. It stops when its last chunk is done, or at ``close()`` (use it in a ``with``)."""
    return progress_display.Progress(label, total=None, unit="chunk", chunks=chunks, enabled=enabled)
