"""The plotting set-up every study shares: matplotlib without a display, one way to save a figure.

Studies run on servers, in CI and on cluster workers, where there is no display: matplotlib's ``Agg``
backend (PNG files, no window) is chosen before :mod:`matplotlib.pyplot` is first imported. matplotlib
is imported lazily, by :func:`pyplot`, so that importing a study (for its config or its numbers) does
not load it. Every figure is written the same way (:func:`save`): laid out tightly, at :data:`DPI`,
then closed so that a long run does not keep figures in memory. A PNG written this way holds no date,
so the same figure gives the same bytes (the studies' figures are checked bit for bit).

Usage::

    from pb_gym.experiments import plotting

    plt = plotting.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, y)
    plotting.save(fig, out / "curve.png")
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DPI = 110
"""Resolution of every study's PNG figures (dots per inch)."""


def pyplot() -> Any:
    """:mod:`matplotlib.pyplot`, with the display-free ``Agg`` backend selected first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def preload() -> None:
    """Import :mod:`matplotlib.pyplot` on a background thread, now: a study that will draw figures
    calls this before its long computation, so that the import (some 0.3-0.5 s) overlaps it instead
    of following it. A failure here is left to the :func:`pyplot` call that draws, which raises it."""

    def load() -> None:
        try:
            pyplot()
        except Exception:  # noqa: BLE001, S110 - raised again, with its message, where a figure is drawn
            pass

    threading.Thread(target=load, name="import matplotlib", daemon=True).start()


def save(fig: Any, path: str | Path, dpi: int = DPI, tight: bool = True) -> Path:
    """Lay ``fig`` out (``tight_layout``, unless ``tight=False``), write it to ``path``, close it.
    Returns ``path`` as a :class:`~pathlib.Path`."""
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return Path(path)


COPY_TIMEOUT_S = 300.0
"""How long :meth:`Aside.join` waits for the copy before it stops it and draws the figure itself."""
FORK = sys.platform.startswith("linux")
"""Whether :class:`Aside` draws in a forked copy of the process (Linux; elsewhere a fork is not
safe with the system's libraries, or absent, and the figure is drawn in turn)."""


class Aside:
    """A figure drawn by a forked copy of this process while this one goes on (the two cores a plot
    would leave idle), waited for by :meth:`join`.

    matplotlib draws on one thread and holds the GIL, so a figure can run beside another only in
    another process; a forked copy starts at once, with the data and matplotlib already loaded. It
    draws ``draw()`` (which writes the figure's file) and leaves at once (``os._exit``: nothing of
    this process's is flushed or cleaned up twice). The copy runs matplotlib alone: the threads of
    this process (pb-gym's pool, asleep) are not in it. Where the copy could not draw the figure (no
    fork, or it failed: degenerate data), :meth:`join` draws it here, so that the error, if any, is
    raised here with its message. The file is the same either way.
    """

    def __init__(self, draw: Callable[[], object]) -> None:
        self.draw = draw
        self.pid: int | None = None
        if not FORK:
            return
        # matplotlib whole before the fork: a copy made while another thread imports it (preload)
        # would wait forever on that import's lock, which nothing in the copy would ever let go
        pyplot()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        with warnings.catch_warnings():
            # (Python 3.12 warns of a fork beside other threads: the copy touches nothing of theirs)
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                pid = os.fork()
            except OSError:  # no process to be had (a limit on processes, or on memory): in turn
                return
        if pid == 0:  # the copy
            code = 1
            try:
                draw()
                code = 0
            finally:
                os._exit(code)
        self.pid = pid

    def join(self, timeout: float = COPY_TIMEOUT_S) -> None:
        """Wait for the figure; draw it here if the copy did not, or had not after ``timeout``
        seconds (a copy stuck on a lock some thread of this process held at the fork is stopped)."""
        if self.pid is not None:
            deadline = time.monotonic() + timeout
            pause = 0.001
            try:
                while (status := os.waitpid(self.pid, os.WNOHANG)) == (0, 0):
                    if time.monotonic() > deadline:
                        self.cancel()
                        break
                    time.sleep(pause)
                    pause = min(2 * pause, 0.01)
            except BaseException:  # Ctrl-C: the copy must not write on into a folder being removed
                self.cancel()
                raise
            if self.pid is not None:  # (finished, not stopped)
                self.pid = None
                if os.waitstatus_to_exitcode(status[1]) == 0:
                    return
        self.draw()

    def cancel(self) -> None:
        """Stop the copy, if it runs (the figure is not wanted any more)."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = None


def placeholder(path: str | Path, title: str, reason: str) -> Path:
    """Write a small figure at ``path`` saying that ``title`` could not be drawn and why (a report
    never loses a finished run over one figure: matplotlib fails on some degenerate data, e.g. a
    single session's error bars or axes near 1e308)."""
    plt = pyplot()
    plt.close("all")  # (the figure that failed)
    fig = plt.figure(figsize=(6, 1.6))
    fig.text(0.5, 0.5, f"{title}: not drawn\n{reason[:120]}", ha="center", va="center", wrap=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return Path(path)


def drawn_or_noted(draw: Callable[[], list[Path]], out: Path, names: Sequence[str]) -> list[Path]:
    """``draw()`` (writes figures named ``names`` under ``out``, returns their paths); if it fails on
    the data, the figures it had not written yet are :func:`placeholder` figures and a NOTE on stderr
    names them and the reason; the run's other outputs are kept."""
    try:
        return draw()
    except (ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError) as error:
        reason = f"{type(error).__name__}: {error}".splitlines()[0]
        missing = [n for n in names if not (out / n).is_file()]
        print(
            f"NOTE: {', '.join(missing)} could not be drawn from this run's data ({reason}); "
            "placeholders written, the report and its tables are complete",
            file=sys.stderr,
            flush=True,
        )
        for name in missing:
            placeholder(out / name, name, reason)
        return [out / n for n in names]


__all__ = [
    "DPI",
    "FORK",
    "COPY_TIMEOUT_S",
    "Aside",
    "pyplot",
    "preload",
    "save",
    "placeholder",
    "drawn_or_noted",
]
