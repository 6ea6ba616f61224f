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
* ``processes``: a local process pool (``concurrent.futures``, spawn context: numba's threads and
  ``fork`` do not mix), ``workers`` processes (default: the cores).
* ``dask``: an existing Dask distributed scheduler (``scheduler="tcp://host:8786"``), or a local
  cluster of ``workers`` processes on the loopback interface when no address is given. Needs the
  ``dask`` extra.

A chunk that raises is run once more; a chunk that fails twice stops the run with a
:class:`ChunkError` naming the chunk and its seed, and nothing is merged or written. Progress is
reported as each chunk finishes.
"""

from __future__ import annotations

import concurrent.futures as futures
import dataclasses
import multiprocessing
import os
import sys
from typing import Any, Callable, Literal, Sequence, TypeVar

import numpy as np

Backend = Literal["serial", "processes", "dask"]
BACKENDS: tuple[str, ...] = ("serial", "processes", "dask")
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
        return [np.random.SeedSequence(self.seed.entropy, spawn_key=(*self.seed.spawn_key, k))
                for k in range(n)]

    def describe(self) -> str:
        """``chunk 3/8 (items 300-399, seed entropy 42, spawn key (3,))``."""
        return (f"chunk {self.index + 1}/{self.count} (items {self.start}-{self.start + self.size - 1}, "
                f"seed entropy {self.seed.entropy}, spawn key {tuple(self.seed.spawn_key)})")


class ChunkError(RuntimeError):
    """A chunk failed twice; the run stopped and nothing was merged."""


def plan(n_items: int, chunk_size: int, seed: int | np.random.SeedSequence) -> list[Chunk]:
    """Cut ``n_items`` into chunks of ``chunk_size`` consecutive items (the last may be smaller)."""
    if n_items < 1 or chunk_size < 1:
        raise ValueError(f"n_items={n_items} and chunk_size={chunk_size} must both be >= 1")
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    starts = list(range(0, n_items, chunk_size))
    seeds = root.spawn(len(starts))
    return [Chunk(i, len(starts), start, min(chunk_size, n_items - start), seeds[i])
            for i, start in enumerate(starts)]


def run(task: Callable[[Chunk], Result], chunks: Sequence[Chunk], backend: str = "serial",
        scheduler: str | None = None, workers: int | None = None,
        progress: Callable[[Chunk], None] | None = None) -> list[Result]:
    """Run ``task`` on every chunk with the backend; return the results in chunk order.

    ``task`` must be a module-level function (it is pickled for processes and Dask). ``progress`` is
    called with each chunk as it finishes.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not allowed; allowed: {', '.join(BACKENDS)}")
    if scheduler is not None and backend != "dask":
        raise ValueError("--scheduler is only for the dask backend")
    if workers is not None and workers < 1:
        raise ValueError(f"workers={workers} is not allowed; allowed: an integer >= 1")
    progress = progress or (lambda chunk: None)
    if backend == "serial":
        return _run_serial(task, chunks, progress)
    if backend == "processes":
        return _run_processes(task, chunks, workers or os.cpu_count() or 1, progress)
    return _run_dask(task, chunks, scheduler, workers, progress)


def _failure(chunk: Chunk, error: BaseException) -> ChunkError:
    return ChunkError(f"{chunk.describe()} failed twice; the run is stopped and nothing was written. "
                      f"Last error: {type(error).__name__}: {error}")


def _run_serial(task, chunks, progress):
    results = []
    for chunk in chunks:
        try:
            result = task(chunk)
        except Exception:  # noqa: BLE001 - one retry, whatever went wrong
            try:
                result = task(chunk)
            except Exception as error:  # noqa: BLE001
                raise _failure(chunk, error) from error
        results.append(result)
        progress(chunk)
    return results


def _run_processes(task, chunks, workers, progress):
    results: dict[int, Any] = {}
    context = multiprocessing.get_context("spawn")
    with futures.ProcessPoolExecutor(max_workers=min(workers, len(chunks)),
                                     mp_context=context) as pool:
        pending = {pool.submit(task, chunk): (chunk, 1) for chunk in chunks}
        try:
            while pending:
                done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
                for future in done:
                    chunk, attempt = pending.pop(future)
                    error = future.exception()
                    if error is None:
                        results[chunk.index] = future.result()
                        progress(chunk)
                    elif attempt == 1:
                        pending[pool.submit(task, chunk)] = (chunk, 2)
                    else:
                        raise _failure(chunk, error) from error
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return [results[chunk.index] for chunk in chunks]


def _run_dask(task, chunks, scheduler, workers, progress):
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as error:
        raise RuntimeError("the dask backend needs the dask extra: pip install 'pb-gym[dask]'") from error
    cluster = None
    if scheduler is None:  # a local cluster on the loopback interface only
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        results: dict[int, Any] = {}
        submitted = {client.submit(task, chunk, pure=False): (chunk, 1) for chunk in chunks}
        queue = as_completed(list(submitted))
        for future in queue:
            chunk, attempt = submitted.pop(future)
            if future.status == "finished":
                results[chunk.index] = future.result()
                progress(chunk)
                continue
            error = future.exception()
            if attempt == 1:
                retry = client.submit(task, chunk, pure=False)
                submitted[retry] = (chunk, 2)
                queue.add(retry)
            else:
                for other in submitted:
                    other.cancel()
                raise _failure(chunk, error) from error
        return [results[chunk.index] for chunk in chunks]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def progress_printer(label: str, enabled: bool) -> Callable[[Chunk], None] | None:
    """A progress callback that prints one line per finished chunk to stderr (None when disabled)."""
    if not enabled:
        return None
    finished = []

    def report(chunk: Chunk) -> None:
        finished.append(chunk.index)
        print(f"{label}: {len(finished)}/{chunk.count} chunks done (last: {chunk.describe()})",
              file=sys.stderr, flush=True)

    return report
