"""Progress of a long job on stderr: a tqdm bar on a terminal, plain lines elsewhere.

A job whose stderr is a file or a pipe (``make demo > log 2>&1``, a batch system, CI) gets a line at
least every :data:`INTERVAL_S` seconds, printed by a background thread so that it comes even while one
long chunk runs::

    classic: 1/2 chunks, 5,000,000/10,000,000 hands, 21 s elapsed, about 21 s left

On a terminal the same figures show as a tqdm bar. Both are driven by one object: :meth:`Progress.update`
counts work items (hands), and calling the object with a finished chunk (the ``progress`` callback of
:func:`experiments.scale.run`) counts the chunk, and the items of that chunk not yet counted (a chunk
that ran in another process or machine reports its work only when it finishes).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

INTERVAL_S = 5.0
"""Seconds between two progress lines when stderr is not a terminal."""


class Progress:
    """Progress of a job of ``total`` items (``unit``), done in ``chunks`` chunks.

    Args:
        label: what runs (the study's name), printed first.
        total: items in the whole job (e.g. sessions x hands), or None when only chunks are counted.
        unit: the name of an item, e.g. ``"hand"``.
        chunks: the number of chunks, or None (taken from the first finished chunk's ``count``).
        per_item: items per item of a chunk (e.g. the hands of each session of a chunk).
        enabled: False makes every method a no-op.
        stream: where to write (default: stderr).
        bar: a tqdm bar (True) or lines (False); default: a bar when ``stream`` is a terminal.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        unit: str = "hand",
        chunks: int | None = None,
        per_item: int = 1,
        enabled: bool = True,
        stream: TextIO | None = None,
        bar: bool | None = None,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.chunks = chunks
        self.per_item = per_item
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.chunks_done = 0
        self._in_chunk: dict[int | None, int] = {}  # items counted by update(), by unfinished chunk
        self._lock = threading.Lock()  # (chunks running on threads count side by side)
        self._started = time.perf_counter()
        self._bar: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._printed = False
        if not enabled:
            return
        if bar if bar is not None else _is_terminal(self.stream):
            from tqdm import tqdm

            # counting chunks only: the bar counts chunks
            self._bar = tqdm(
                total=total if total is not None else chunks,
                desc=label,
                unit=unit if total is not None else "chunk",
                unit_scale=total is not None,
                file=self.stream,
                postfix=self._chunk_text(),
            )
        else:
            self._thread = threading.Thread(target=self._print_lines, daemon=True, name=f"progress: {label}")
            self._thread.start()

    # -- counting -------------------------------------------------------------------------------
    def update(self, n: int, chunk: int | None = None) -> None:
        """``n`` more items done (of the chunk of index ``chunk``, when chunks run side by side)."""
        if not self.enabled:
            return
        with self._lock:
            self._in_chunk[chunk] = self._in_chunk.get(chunk, 0) + n
            self._advance(n)

    def __call__(self, chunk: Any) -> None:
        """A chunk (:class:`experiments.scale.Chunk`) finished: count it, and its items not counted."""
        if not self.enabled:
            return
        with self._lock:
            self.chunks = self.chunks or chunk.count
            self.chunks_done += 1
            counted = self._in_chunk.pop(chunk.index, 0) + self._in_chunk.pop(None, 0)
            missing = chunk.size * self.per_item - counted
            if missing > 0 and self.total is not None:
                self._advance(missing)
            elif self._bar is not None:
                self._bar.update(1 if self.total is None else 0)
                self._bar.set_postfix_str(self._chunk_text())
            finished = self.chunks_done >= self.chunks
        if finished:
            self.close()

    def _advance(self, n: int) -> None:
        self.done += n
        if self.total is not None:
            self.done = min(self.done, self.total)
        if self._bar is not None:
            self._bar.set_postfix_str(self._chunk_text(), refresh=False)
            self._bar.update(n)

    # -- output ---------------------------------------------------------------------------------
    def line(self) -> str:
        """``label: 1/2 chunks, 5,000/10,000 hands, 21 s elapsed, about 21 s left``."""
        elapsed = time.perf_counter() - self._started
        parts = []
        if self.chunks:
            parts.append(f"{self.chunks_done}/{self.chunks} chunks")
        if self.total is not None:
            parts.append(f"{self.done:,}/{self.total:,} {self.unit}s")
            share = self.done / self.total if self.total else 1.0
        else:
            share = self.chunks_done / self.chunks if self.chunks else 0.0
        parts.append(f"{elapsed:.0f} s elapsed")
        if share >= 1.0:
            parts.append("done")
        elif share > 0:
            parts.append(f"about {elapsed * (1 - share) / share:.0f} s left")
        else:
            parts.append("time left not known yet")
        return f"{self.label}: {', '.join(parts)}"

    def _chunk_text(self) -> str:
        return f"chunk {min(self.chunks_done + 1, self.chunks)}/{self.chunks}" if self.chunks else ""

    def _print_lines(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self._write()

    def _write(self) -> None:
        print(self.line(), file=self.stream, flush=True)
        self._printed = True

    def close(self) -> None:
        """Stop the bar or the lines; a job that printed lines ends with a last one."""
        if not self.enabled:
            return
        self.enabled = False
        if self._bar is not None:
            self._bar.close()
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self._printed:
                self._write()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


COMPILING = (
    "pb-gym: compiling kernels, once per machine (tens of seconds; later runs load them from numba's cache)"
)
"""The line printed while numba compiles kernels that are not in its cache yet."""

_compile_checked: set[str] = set()
_compile_noted = False


def note_compiling(module: Any, stream: TextIO | None = None) -> bool:
    """Say once per process, on a terminal's stderr, that the kernels of ``module`` are being compiled.

    The first run on a machine compiles pb-gym's numba kernels (tens of seconds, with no output
    otherwise); later runs load them from numba's on-disk cache. The check reads the cache index of each
    cached kernel of ``module`` (a small file) once per module and process, so later calls cost a set
    lookup. Only a terminal gets the line: a log or a test's captured stderr stays as it was.

    Args:
        module: a module whose ``numba.njit(cache=True)`` kernels are about to run.
        stream: where to write (default: stderr).

    Returns:
        True when the line was printed by this call.
    """
    global _compile_noted
    name = getattr(module, "__name__", "")
    if _compile_noted or name in _compile_checked:
        return False
    _compile_checked.add(name)
    stream = sys.stderr if stream is None else stream
    if not _is_terminal(stream) or not _uncached_kernels(module):
        return False
    _compile_noted = True
    print(COMPILING, file=stream, flush=True)
    return True


def _uncached_kernels(module: Any) -> list[str]:
    """Names of the cached kernels of ``module`` that numba's cache holds no compiled version of."""
    missing = []
    for name, value in vars(module).items():
        cache = getattr(value, "_cache", None)
        index = getattr(cache, "_cache_file", None)
        if index is None or getattr(value, "signatures", None):  # not cached, or compiled already
            continue
        try:
            if not index._load_index():  # {} when absent or stale (another source, numba version)
                missing.append(name)
        except Exception:  # numba's cache layout is not an API: say nothing rather than fail
            continue
    return missing
