"""Whether an optional extra is installed, without importing it: the one check behind
:func:`pb_gym.agents.learned.require_rl` (the ``rl`` extra) and
:func:`pb_gym.experiments.lab.require_lab` (the ``lab`` extra)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable


def missing_module(modules: Iterable[str]) -> str | None:
    """The first of ``modules`` that cannot be imported (found, not imported), or None if none."""
    for name in modules:
        try:  # (a module set to None in sys.modules is one that cannot be imported)
            missing = sys.modules[name] is None if name in sys.modules else not importlib.util.find_spec(name)
        except (ImportError, ValueError):
            missing = True
        if missing:
            return name
    return None
