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
import gc
import os
import pickle
import select
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
    """A figure drawn by a forked copy of this process while this one goes on (the core a plot
    would leave idle), waited for by :meth:`join`.

    matplotlib draws on one thread and holds the GIL, so a figure can run beside other work only in
    another process. The copy is forked when the object is made, and at once imports matplotlib and
    runs ``prepare()``: whatever of the figure does not depend on the data (its axes, their ticks).
    Made before a long computation, the copy does that beside it, on its own interpreter, instead of
    after it. :meth:`draw` sends the data (pickled, with their length, through a pipe that the copy
    empties as it comes) and the copy runs ``finish(prepared, data)``, which writes the figure's
    file, and leaves at once (``os._exit``: nothing of this process's is flushed or cleaned up
    twice). The copy runs matplotlib alone: the threads of this process (pb-gym's pool) are not in
    it. Where the copy could not draw the figure (no fork, or it failed: degenerate data),
    :meth:`join` draws it here, ``finish(prepare(), data)``, so that the error, if any, is raised
    here with its message. The file is the same either way. A figure not wanted after all is
    stopped by :meth:`cancel` (a no-op once joined).

    ``beside``: more figures of the same data, each ``figure(data)``. Once the data came, the copy
    forks a copy of itself for each, which shares its matplotlib (imported once, not again here)
    and draws on the other core while the copy runs ``finish``; the copy leaves once they have, and
    a copy of its own that fails fails the copy. Drawn here, they come after ``finish``, in order.
    """

    def __init__(
        self,
        finish: Callable[[Any, Any], object],
        prepare: Callable[[], Any] = lambda: None,
        beside: Sequence[Callable[[Any], object]] = (),
    ) -> None:
        self.finish, self.prepare, self.beside = finish, prepare, tuple(beside)
        self.data: Any = None
        self.pid: int | None = None
        self.pipe: int | None = None  # the end this process writes the data to
        if not FORK:
            return
        maker = os.getpid()
        pending = sys.modules.get("matplotlib.pyplot") or sys.modules.get("matplotlib")
        if pending is not None and getattr(getattr(pending, "__spec__", None), "_initializing", False):
            # another thread is importing matplotlib: whole before the fork (a copy made mid-import
            # would wait forever on that import's lock, which nothing in the copy would let go)
            pyplot()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        try:
            read_end, write_end = os.pipe()
        except OSError:  # no descriptor to be had: in turn
            return
        with warnings.catch_warnings():
            # (Python 3.12 warns of a fork beside other threads: the copy touches nothing of theirs)
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                pid = os.fork()
            except OSError:  # no process to be had (a limit on processes, or on memory): in turn
                os.close(read_end)
                os.close(write_end)
                return
        if pid == 0:  # the copy
            code = 1
            try:
                os.close(write_end)
                code = _draw_in_the_copy(read_end, maker, finish, prepare, self.beside)
            finally:
                os._exit(code)
        os.close(read_end)
        self.pid, self.pipe = pid, write_end

    def draw(self, data: Any = None) -> None:
        """Send the figure its data (the copy draws it; :meth:`join` waits for it)."""
        self.data = data
        if self.pipe is not None:
            pipe, self.pipe = self.pipe, None
            try:
                payload = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
                # its length first: the copy knows when it has it all, whoever else holds the pipe
                with open(pipe, "wb") as stream:
                    stream.write(len(payload).to_bytes(8, "little") + payload)
            except (OSError, pickle.PicklingError, TypeError, AttributeError):  # the copy is gone, or
                # the data cannot travel (an object pickle does not take): drawn here by join
                self.cancel()

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
        self.finish(self.prepare(), self.data)
        for figure in self.beside:
            figure(self.data)

    def cancel(self) -> None:
        """Stop the copy, if it runs (the figure is not wanted any more)."""
        if self.pipe is not None:
            os.close(self.pipe)
            self.pipe = None
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = None


def _draw_in_the_copy(
    pipe: int,
    maker: int,
    finish: Callable[[Any, Any], object],
    prepare: Callable[[], Any],
    beside: tuple[Callable[[Any], object], ...],
) -> int:
    """The copy's part of :class:`Aside` (``maker``: the process that forked it); its exit status (0:
    the figures are written)."""
    # a copy that draws its figures and leaves: the collector would only walk this process's objects
    # (and the maker's it shares, copying their pages); from the start, matplotlib's import and the
    # prepared figure 0.1 s of CPU less
    gc.disable()
    received: list[bytes] = []
    receiver = threading.Thread(
        target=_receive, args=(pipe, maker, received), name="figure data", daemon=True
    )
    receiver.start()  # (at once: the sender never waits on ``prepare``)
    pyplot()
    prepared = prepare()
    receiver.join()
    if not received:  # (the data never came: the figure was cancelled, or this process's maker died)
        return 1
    data = pickle.loads(received[0])
    helpers = [_beside(figure, data) for figure in beside]
    try:
        finish(prepared, data)
    finally:  # (never leave before them: a figure drawn here again must not meet one being written)
        drawn = [pid is None or os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 for pid in helpers]
    for figure, pid in zip(beside, helpers, strict=True):
        if pid is None:  # (no process to be had: in turn)
            figure(data)
    return 0 if all(drawn) else 1


PR_SET_PDEATHSIG = 1
"""Linux's ``prctl`` option that has a process signalled when the one that forked it dies."""


def _beside(figure: Callable[[Any], object], data: Any) -> int | None:
    """Fork a copy of the copy that draws ``figure(data)``; its pid (None: no fork, draw in turn). It
    dies with the copy (a copy stopped by :meth:`Aside.cancel` takes it along)."""
    copy = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        return None
    if pid:
        return pid
    code = 1
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == copy:  # (the copy could have died before the prctl)
            figure(data)
            code = 0
    finally:
        os._exit(code)


PARENT_CHECK_S = 1.0
"""How often a copy waiting for its data checks that the process that made it is still there."""


def _receive(pipe: int, maker: int, received: list[bytes]) -> None:
    """Read the length-prefixed data from ``pipe`` into ``received``; nothing if the pipe closes
    first or ``maker``, the process that forked this one, is gone (a copy is never left waiting)."""
    data = bytearray()
    with open(pipe, "rb", buffering=0) as stream:
        while len(data) < 8 or len(data) < 8 + int.from_bytes(data[:8], "little"):
            if not select.select([stream], [], [], PARENT_CHECK_S)[0]:
                if os.getppid() != maker:
                    return
                continue
            block = stream.read(1 << 20)
            if not block:
                return
            data += block
    received.append(bytes(data[8:]))


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
    "save",
    "placeholder",
    "drawn_or_noted",
]
