"""The plotting set-up every study shares: matplotlib without a display, one way to save a figure.

Studies run on servers, in CI and on cluster workers, where there is no display: matplotlib's ``Agg``
backend (PNG files, no window) is chosen before :mod:`matplotlib.pyplot` is first imported. matplotlib
is imported lazily, by :func:`pyplot`, so that importing a study (for its config or its numbers) does
not load it. Every figure is written the same way (:func:`save`): laid out tightly, at :data:`DPI`,
then closed so that a long run does not keep figures in memory. A PNG written this way holds no date,
so the same figure gives the same bytes (the studies' figures are checked bit for bit).

Usage::

    from pb_gym.experiments.common import plotting

    plt = plotting.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, y)
    plotting.save(fig, out / "curve.png")
"""

from __future__ import annotations

import sys
import threading
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


def preload() -> None:
    """Import :mod:`matplotlib.pyplot` on a background thread, now: a study that draws its figures
    after a long computation calls this before it, so that the import (some 0.3-0.5 s) overlaps the
    computation instead of following it. A failure here is left to the :func:`pyplot` call that
    draws, which raises it with its message."""

    def load() -> None:
        try:
            pyplot()
        except Exception:  # noqa: BLE001, S110 - raised again, with its message, where a figure is drawn
            pass

    threading.Thread(target=load, name="import matplotlib", daemon=True).start()


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


DRAWING_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    ArithmeticError,
    np.linalg.LinAlgError,
    RuntimeError,
)
"""What matplotlib raises on data it cannot draw (:func:`drawn_or_noted` notes them)."""


def drawn_or_noted(draw: Callable[[], list[Path]], out: Path, names: Sequence[str]) -> list[Path]:
    """``draw()`` (writes figures named ``names`` under ``out``, returns their paths); if it fails on
    the data, the figures it had not written yet are :func:`placeholder` figures and a NOTE on stderr
    names them and the reason; the run's other outputs are kept."""
    try:
        return draw()
    except DRAWING_ERRORS as error:
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


__all__ = ["DPI", "DRAWING_ERRORS", "pyplot", "preload", "save", "placeholder", "drawn_or_noted"]
