"""Confidence intervals the core reports itself (:mod:`pb_gym.benchmark`); the studies' statistics
(:mod:`pb_gym.experiments.common.stats`) take these from here, so there is one copy of each.

* :data:`Z95`: the two-sided 95% normal quantile.
* :func:`ratio_ci`: ``sum x / sum n`` over independent groups (shoes, sessions) with the delta-method
  (ratio-estimator) interval, from each group's sums.
"""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054
"""Two-sided 95% normal quantile, ``z_value(0.95)`` (the value every study's 95% intervals use)."""


def ratio_ci(x: np.ndarray, n: np.ndarray, z: float = Z95) -> dict:
    """``sum(x) / sum(n)`` with its interval over independent groups, from per-group sums ``x_g``, ``n_g``.

    Items within a group (the hands of one shoe, of one session) are correlated; groups are
    independent. With ``G`` groups and ``R = sum x / sum n``, the delta-method (ratio-estimator)
    standard error is ``sqrt(G / (G - 1) * sum_g (x_g - R n_g)^2) / sum_g n_g``. A paired comparison of
    two systems on the same hands passes their per-group differences as ``x``.

    Returns ``{"estimate", "ci95", "se", "n"}`` (``n``: ``sum n``, rounded); all None when
    ``sum n <= 0``; one group: ``se`` ``inf`` and the interval ``[-inf, inf]`` (no spread to measure).
    """
    n_groups, total = len(x), n.sum()
    if total <= 0:
        return {"estimate": None, "ci95": None, "se": None, "n": 0}
    estimate = x.sum() / total
    se = (
        math.sqrt(n_groups / (n_groups - 1) * np.sum((x - estimate * n) ** 2)) / total
        if n_groups > 1
        else math.inf
    )
    return {
        "estimate": float(estimate),
        "ci95": [float(estimate - z * se), float(estimate + z * se)],
        "se": float(se),
        "n": int(round(total)),
    }


__all__ = ["Z95", "ratio_ci"]
