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

from pathlib import Path
from typing import Any

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


__all__ = ["DPI", "pyplot", "save"]
