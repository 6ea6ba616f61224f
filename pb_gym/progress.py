"""Progress of a long job on stderr: a tqdm bar on a terminal, plain lines elsewhere.

A job whose stderr is a file or a pipe (``make demo > log 2>&1``, a batch system, CI) gets a line at
least every :data:`INTERVAL_S` seconds, printed by a background thread so that it comes even while one
long chunk runs::

    classic: 1/2 chunks, 5,000,000/10,000,000 hands, 21 s elapsed, about 21 s left

On a terminal the same figures show as a tqdm bar. Both are driven by one object: :meth:`Progress.update`
counts work items (hands), and calling the object with a finished chunk (the ``progress`` callback of
:func:`pb_gym.experiments.common.scale.run`) counts the chunk, and the items of that chunk not yet counted (a
chunk
that ran in another process or machine reports its work only when it finishes).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

from pb_gym import interrupts

INTERVAL_S = 5.0
"""Seconds between two progress lines when stderr is not a terminal."""


def printable(text: str) -> str:
    """``text`` for a terminal line: each character that is not printable (a control character such
    as ESC or BEL, a line break, a format character such as U+202E that reverses the text after it)
    written as its Python escape (``\\x1b``, ``\\u202e``), as an error message's ``repr`` shows it.
    A user's name (a study, a system) then cannot clear the screen, ring, move the cursor or reorder
    the line; printable text, accented letters included, is left as it is."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


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
        self.label = printable(label)
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
        """``n`` more items done (of the chunk of index ``chunk``, when chunks run side by side). On the
        main thread, a signal whose exception was dropped is raised again here
        (:func:`pb_gym.interrupts.check`)."""
        interrupts.check()
        if not self.enabled:
            return
        with self._lock:
            self._in_chunk[chunk] = self._in_chunk.get(chunk, 0) + n
            self._advance(n)

    def __call__(self, chunk: Any) -> None:
        """A chunk (:class:`pb_gym.experiments.common.scale.Chunk`) finished: count it, and its items not
        counted."""
        interrupts.check()
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


COMPILING = "pb-gym: compiling kernels not in the cache yet ({time}); later runs load them from {folder}"
"""The line printed when numba starts compiling a kernel of pb-gym that is not in its cache
(:func:`note_compiling` fills in the time it takes and the cache folder)."""
COMPILE_TIME = "the first run of this version: 10 s to 2 minutes by command, longer on a busy machine"
"""What a first run's compile takes on an idle machine (docs/getting-started.md gives the figures of each
command, with their load)."""
QUIET = "PB_GYM_COMPILE_NOTE"
"""The environment variable that, set to ``0``, leaves the line out (the test suite sets it, so that
its checks of stderr hold whether the cache is warm or not)."""

_arm_lock = threading.Lock()
_note_lock = threading.Lock()
_compile_armed = False
_compile_noted = False


def note_compiling(module: Any = None, stream: TextIO | None = None) -> None:
    """Make the first compile of a cached pb-gym kernel in this process say so, in one line on stderr.

    The first run of a version (or, in a clone, of an edit) compiles pb-gym's numba kernels, with no
    output otherwise; later runs load them from numba's on-disk cache (:mod:`pb_gym.kernel_cache`). The
    entry points of the kernels (the engine, the exact calculator, the table session, the env) call
    this before their kernels run: it listens, with numba's event API, for numba starting to compile a
    kernel of pb-gym that numba caches (numba compiles only what its cache misses), and then writes
    the line once per process, wherever stderr goes (a terminal, a notebook's cell, a log), unless
    :data:`QUIET` is ``0``; the old cache folders are pruned then (:func:`pb_gym.kernel_cache.prune`).
    After the first call, a call costs a flag's test.

    Args:
        module: the module whose kernels are about to run (any compile of a pb-gym kernel counts).
        stream: where to write (default: stderr when the line is written).
    """
    global _compile_armed
    if _compile_armed:
        return
    with _arm_lock:
        if _compile_armed:
            return
        from numba.core import event

        class _FirstCompile(event.Listener):
            def on_start(self, started: Any) -> None:
                _compiling(started.data.get("dispatcher"), stream)

            def on_end(self, ended: Any) -> None:
                pass

        event.register("numba:compile", _FirstCompile())
        _compile_armed = True


def _compiling(dispatcher: Any, stream: TextIO | None) -> None:
    """numba starts compiling ``dispatcher``: the first time in this process it is a cached kernel of
    pb-gym, prune the old cache folders and write the line (:func:`note_compiling`)."""
    global _compile_noted
    if _compile_noted or not _cached_kernel_of_pb_gym(dispatcher):
        return
    with _note_lock:
        if _compile_noted:
            return
        _compile_noted = True
    from pb_gym import kernel_cache

    kernel_cache.prune()
    if os.environ.get(QUIET, "").strip() == "0":
        return
    from numba.core import config

    folder = getattr(config, "CACHE_DIR", "") or "numba's cache beside the sources"
    home = os.path.expanduser("~")
    if folder.startswith(home + os.sep):
        folder = "~" + folder[len(home) :]
    try:
        print(COMPILING.format(time=COMPILE_TIME, folder=folder), file=stream or sys.stderr, flush=True)
    except (OSError, ValueError):  # a closed stderr: the work goes on without the line
        pass


def _cached_kernel_of_pb_gym(dispatcher: Any) -> bool:
    """Whether ``dispatcher`` is a kernel of pb-gym that numba caches on disk (one that does not, such
    as a closure, compiles in every process: no first run to speak of)."""
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
    if module != "pb_gym" and not module.startswith("pb_gym."):
        return False
    return getattr(getattr(dispatcher, "_cache", None), "cache_path", None) is not None
