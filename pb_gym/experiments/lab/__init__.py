"""``pb-gym lab``: a classroom lab of gambler's ruin, the Martingale illusion and bold play, in the
browser, with the exact answer beside every simulation.

The package has two layers. The lessons' computations are plain functions of their settings and a
seed, with no web framework (what the tests and the notebook ``examples/ruin.ipynb`` call):

* :mod:`pb_gym.experiments.lab.hand`: lesson 1, one hand (exact odds, hands dealt, the tableau told);
* :mod:`pb_gym.experiments.lab.gamblers_ruin`: lesson 2, gambler's ruin (the ruin study's chain and
  simulation);
* :mod:`pb_gym.experiments.lab.progression`: lesson 3, the Martingale illusion (``pb-gym evaluate``'s
  exact chain and session loop);
* :mod:`pb_gym.experiments.lab.bold`: lesson 4, bold, timid and optimal play
  (:mod:`pb_gym.session_optimum`);
* :mod:`pb_gym.experiments.lab.shoe`: lessons 5 and 6, one shoe dealt hand by hand (the roads, the
  exact odds and side-bet EV of the cards left);
* :mod:`pb_gym.experiments.lab.common`: the rules, the seed and the input checks they share.

The web page is a thin layer over them, built on Dash (the ``lab`` extra):
:mod:`pb_gym.experiments.lab.app` (the layout and the callbacks), :mod:`pb_gym.experiments.lab.figures`
(the Plotly figures) and :mod:`pb_gym.experiments.lab.server` (``pb-gym lab``: the local server). Only
those import Dash and Plotly.
"""

from __future__ import annotations

from pb_gym.agents import extras

LAB_MODULES = ("dash", "plotly", "flask")
"""The modules of the ``lab`` extra."""
LAB_INSTALL = "pip install -e '.[lab]' -c constraints.txt"
"""How to install the ``lab`` extra in the clone."""


class MissingExtra(ImportError):
    """The ``lab`` extra is not installed; the message says, in one line, how to install it."""


def require_lab(what: str = "pb-gym lab") -> None:
    """Raise :class:`MissingExtra` naming ``what`` unless the modules of the ``lab`` extra can be
    imported (found, not imported)."""
    name = extras.missing_module(LAB_MODULES)
    if name is not None:
        raise MissingExtra(
            f"{what} needs the lab extra (Dash, Plotly), not installed here (no module named "
            f"{name!r}); install it in the clone: {LAB_INSTALL}"
        )


__all__ = ["LAB_MODULES", "LAB_INSTALL", "MissingExtra", "require_lab"]
