"""The Kelly bettor's stake on one bet at every table, in one compiled pass over the tables.

Why. A Kelly bettor on one bet (the main job's is on the banker) prices every table before every hand:
the EV bound of :mod:`pb_gym.ev_bound` first, the exact EV (:func:`pb_gym.exact.expectations`) where
the bound cannot rule the bet out, the probabilities of its payoffs where the exact EV does not
either, and the Kelly fraction (:func:`pb_gym.kelly.kelly_bisection`) where the bet is positive.
Done as numpy calls, each step over the rows the step before left, the glue between the kernels
(checks, gathers, the layout of the exact walk's blocks) costs a large share of what the kernels
cost, and every call lets go of the GIL that the other chunks' threads then take. :func:`kelly_rows`
does the same steps for a range of tables in one call.

The results are the same bits as :meth:`agents.systems.Kelly.stake_fractions`' numpy steps. Each
row's exact EV and payoff probabilities come from :func:`pb_gym.multiset_walk._expectation_kernel` (its
lanes are independent: a row's result does not depend on the rows beside it in a block, nor on the
block's width) divided by the same falling product; the fraction from the same bisection; the
growth summed as numpy sums. The bound only chooses which rows are priced exactly: a row it rules
out has an exact EV below the same margin, so it would have been ruled out there too.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pb_gym import multiset_walk
from pb_gym import rules as R
from pb_gym.ev_bound import _upper_kernel
from pb_gym.kelly import kelly_bisection, numpy_sum

RANK_VALUE = np.array(R.RANK_VALUES, dtype=np.int64)
"""The baccarat value of each rank A..K (:data:`pb_gym.rules.RANK_VALUES`), for the compiled code."""
KELLY_MIN_ROWS = 2048
"""Batches of at least this many tables are priced on several threads (as the EV bound's)."""


@numba.njit(cache=True, nogil=True)
def _falling6(cards):
    """``cards (cards - 1) ... (cards - 5)`` as :func:`pb_gym.exact._falling6` forms it."""
    n = float(cards)
    return n * (n - 1.0) * (n - 2.0) * (n - 3.0) * (n - 4.0) * (n - 5.0)


@numba.njit(cache=True, nogil=True)
def _walk(ranks, rows, count, weights):
    """``(count, k)``: the exact expectations of ``weights`` ``(n_multisets, k)`` at the tables
    ``rows[:count]`` (:func:`pb_gym.exact.multiset_expectations`' steps, row by row the same bits)."""
    width = multiset_walk.block_width(count)
    n_blocks = -(-count // width)
    blocks = np.empty((n_blocks, 10, width))
    for b in range(n_blocks):
        for i in range(width):
            at = b * width + i
            row = rows[at] if at < count else rows[0]  # (the last block's unused lanes: the first row)
            for v in range(10):
                blocks[b, v, i] = 0.0
            for r in range(ranks.shape[1]):
                blocks[b, RANK_VALUE[r], i] += ranks[row, r]
    walked = np.empty((n_blocks, weights.shape[1], width))
    multiset_walk._expectation_kernel(0, n_blocks, blocks, weights, walked)
    out = np.empty((count, weights.shape[1]))
    for at in range(count):
        cards = 0
        for r in range(ranks.shape[1]):
            cards += ranks[rows[at], r]
        falling = _falling6(cards)
        for o in range(weights.shape[1]):
            out[at, o] = walked[at // width, o, at % width] / falling
    return out


@numba.njit(cache=True, nogil=True)
def kelly_rows(
    start,
    stop,
    ranks,
    u0,
    table1,
    table2,
    table3,
    cubic_by_pair,
    quartic_by_pairs,
    margin,
    ev_weights,
    level_weights,
    values,
    high,
    iterations,
    column,
    out_column,
    out_fraction,
):
    """The Kelly stake on one bet at the tables ``start..stop-1``: ``out_column[t]`` is ``column``
    where the bet grows the bankroll (``out_fraction[t]`` its Kelly fraction), else left as it is
    (the caller fills :data:`agents.systems.NO_BET` and 0). ``ranks``: the compositions ``(n, 13)``;
    ``u0`` .. ``quartic_by_pairs``: the bet's :class:`pb_gym.ev_bound.EVBound` (its tables from
    count 0); ``ev_weights`` ``(n_multisets, 1)``: the multiset weights folded with the bet's net
    payoffs; ``level_weights``: with its indicator of each payoff in ``values``; ``high``,
    ``iterations``: :func:`pb_gym.kelly.kelly_growth`'s. Returns ``(-1, 0)`` (every row is usable:
    the compositions were checked)."""
    n = stop - start
    bound = np.empty(ranks.shape[0])
    _upper_kernel(
        start,
        stop,
        ranks,
        u0,
        0,
        table1,
        table2,
        table3,
        cubic_by_pair,
        quartic_by_pairs,
        True,
        -margin,
        bound,
    )
    rows = np.empty(n, dtype=np.int64)
    count = 0
    for t in range(start, stop):
        if not bound[t] < -margin:  # (NaN, beyond the tables: priced exactly)
            rows[count] = t
            count += 1
    if count == 0:
        return -1, 0
    ev = _walk(ranks, rows, count, ev_weights)
    kept = 0
    for at in range(count):
        if not ev[at, 0] < -margin:
            rows[kept] = rows[at]
            kept += 1
    if kept == 0:
        return -1, 0
    p = _walk(ranks, rows, kept, level_weights)
    positive = np.empty(kept, dtype=np.int64)
    m = 0
    for at in range(kept):
        edge = 0.0
        for k in range(values.shape[0]):
            edge += p[at, k] * values[k]
        if edge > 0:
            positive[m] = at
            m += 1
    if m == 0:
        return -1, 0
    q = np.empty((m, values.shape[0]))
    for i in range(m):
        q[i] = p[positive[i]]
    f = kelly_bisection(q, values, high, iterations)
    terms = np.empty(values.shape[0])
    for i in range(m):
        for k in range(values.shape[0]):
            terms[k] = q[i, k] * math.log1p(f[i] * values[k])
        if numpy_sum(terms) > 0.0:
            t = rows[positive[i]]
            out_column[t] = column
            out_fraction[t] = f[i]
    return -1, 0
