"""The Kelly fraction of a bet and the expected log growth at it: plain math over the probabilities
of the bet's net payoffs, written once for the Kelly bettor (:class:`pb_gym.agents.systems.Kelly` and
its compiled pass :mod:`pb_gym.agents.kelly_rows`) and the benchmark's stake-sizing scores
(:mod:`pb_gym.benchmark`: the Kelly bettor's log growth on ``Sizing-v0``).

The fraction maximizes the concave ``sum_k p_k log(1 + f x_k)`` over ``f``: a bisection on its
derivative (:func:`kelly_bisection`), compiled, over the few rows whose bet may be positive, where
numpy's per-call cost dominated; its sums are numpy's to the bit (:func:`numpy_sum`).
"""

from __future__ import annotations

import numba
import numpy as np

KELLY_ITERATIONS = 60
"""Bisections of the Kelly fraction (:func:`kelly_growth`): 2^-60 of the range, below a double's
rounding of the fraction."""


@numba.njit(cache=True, nogil=True)
def numpy_sum(a):
    """``numpy.sum`` of a 1-d array, bit for bit: numpy's pairwise summation (eight running sums
    from eight terms on, halves beyond 128)."""
    n = a.shape[0]
    if n < 8:
        total = 0.0
        for i in range(n):
            total += a[i]
        return total
    if n > 128:
        half = (n // 2) - (n // 2) % 8
        return numpy_sum(a[:half]) + numpy_sum(a[half:])
    r = a[:8].copy()
    i = 8
    while i < n - n % 8:
        for j in range(8):
            r[j] += a[i + j]
        i += 8
    total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        total += a[i]
        i += 1
    return total


@numba.njit(cache=True, nogil=True)
def kelly_bisection(q, x, high, iterations):
    """The Kelly fraction of each row of ``q`` (``(n, k)``, the probability of each net payoff ``x``):
    the root in ``[0, high]`` of ``sum_k q_k x_k / (1 + f x_k)``, by ``iterations`` bisections (the
    sum decreases in ``f``). The same arithmetic, in the same order, as the numpy expression
    ``(q * x / (1 + f * x)).sum(axis=1)`` row by row (:func:`numpy_sum`), so the same bits, at a
    fraction of the cost of numpy's calls on a few rows."""
    out = np.empty(q.shape[0])
    terms = np.empty(x.shape[0])
    for i in range(q.shape[0]):
        lo = 0.0
        hi = high
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            for k in range(x.shape[0]):
                terms[k] = q[i, k] * x[k] / (1.0 + mid * x[k])
            if numpy_sum(terms) > 0:
                lo = mid
            else:
                hi = mid
        out[i] = lo
    return out


def kelly_high(values: np.ndarray) -> float:
    """The largest fraction tried: never the whole bankroll (log(0) where a loss is possible at all)."""
    return (1.0 / max(1.0, -values.min()) if values.min() < 0 else 1.0) - 1e-9


def kelly_growth(
    probabilities: np.ndarray, values: np.ndarray, iterations: int = KELLY_ITERATIONS
) -> tuple[np.ndarray, np.ndarray]:
    """The Kelly fraction and the expected log growth at it, for bets with net payoffs ``values``.

    ``probabilities`` is ``(n, k)``: the probability of each payoff in ``values`` (``k``); the rest of
    the mass is a push (net 0). Maximizes ``sum_k p_k log(1 + f x_k)`` over ``f`` in [0, 1) by
    bisection on the derivative (concave in ``f``; the largest loss is the stake). Returns zeros where
    the EV is <= 0.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    x = np.asarray(values, dtype=np.float64)
    f = np.zeros(len(p))
    growth = np.zeros(len(p))
    positive = np.flatnonzero(p @ x > 0)  # off the top of the shoe: rare, so solve only these
    if positive.size:
        q = p[positive]
        lo = kelly_bisection(np.ascontiguousarray(q), x, kelly_high(x), iterations)
        f[positive] = lo
        growth[positive] = (q * np.log1p(lo[:, None] * x)).sum(axis=1)
    return f, growth
