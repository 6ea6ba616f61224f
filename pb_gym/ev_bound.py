"""A proven upper bound on the exact EV of a bet, far cheaper to evaluate than the EV itself.

Why. A card counter such as the Kelly bettor (:class:`agents.systems.Kelly`) needs the exact EV of
its bets before every hand, but bets only when one is positive, and off the top of a shoe that is
rare (about one hand in ten thousand for the banker bet). A bound that proves ``EV <= 0`` lets it
skip the exact calculation (:func:`pb_gym.exact.expectations`) for nearly every hand and keep it
only where the bound cannot decide; the decisions are the same as with the exact EV everywhere.

The bound. Count every deal as six cards, as :mod:`pb_gym.exact` does. Write ``N`` for the cards
left, ``c_v`` for the cards of value ``v``, ``u_v = c_v / N`` and ``eps = 1 / N``. An ordered
six-card deal ``s`` has probability ``prod_i (c_{s_i} - k_i) / (N)_6`` where ``k_i`` counts the
earlier cards of the same value, i.e. ``kappa(N) * prod_i (u_{s_i} - k_i eps)`` with
``kappa(N) = N^6 / (N)_6 > 0``. So the EV of a bet with net payoff ``x_o`` per outcome class is

    EV = kappa(N) * G(delta, eps),   G = sum_m sum_o W[m, o] x_o prod_v prod_{k < m_v} (u_v - k eps)

a polynomial of degree 6 in ``delta = u - u0`` (the deviation from a full shoe's proportions, the
same for any number of decks: 16/52 for value 0, 4/52 for the others; ``delta_0 = -sum delta_v``
since proportions sum to 1, so nine variables remain) and ``eps``. Its coefficients are computed
once, from the same multiset weights ``W`` as the exact EV (:func:`taylor_coefficients`). Split G by
the degree ``a`` of each term in ``delta`` and its power ``l`` of ``eps``:

* some groups are evaluated exactly: in three stages, each run only where the one before did not
  prove ``EV < 0``: first ``a <= 1``; then also ``a = 2`` and ``(a, l) = (3, 0)``; then also the rest
  of ``a = 3`` and ``(4, 0)``;
* every other group ``(a, l)`` is bounded twice (the bounds of one degree ``a`` summed over ``l``,
  and the smaller of the two sums kept): by the multinomial
  theorem, ``|sum_{|b| = a} C_{b,l} delta^b| <= M[a, l] * ||delta||_1^a`` with
  ``M[a, l] = max_b |C_{b,l}| / multinomial(a; b)``, because
  ``||delta||_1^a = sum_{|b| = a} multinomial(a; b) |delta|^b``; and by Cauchy-Schwarz on the
  group's symmetric tensor ``T``, ``|T(delta, ..., delta)| <= ||T||_F * ||delta||_2^a`` with
  ``||T||_F^2 = sum_b C_{b,l}^2 / multinomial(a; b)``; a quadratic group of the first stage is the
  form ``delta' Q delta <= lambda_max(Q) * ||delta||_2^2`` (signed: often far below ``|.|``). The
  2-norm bounds are the tighter ones when the deviation is spread over many values, as it is in a
  dealt shoe.

Everything but ``delta`` and its norms depends on the composition only through ``N``: ``kappa``,
the powers of ``eps``, and each coefficient and group bound summed over those powers. They are
tabled once per count of cards (up to 8 decks: :data:`TABLED_CARDS`), so that the first stage costs
some fifty operations a composition; the second and third stages, some hundreds each, are reached
by about one composition in eight. Those evaluate their cubic and quartic groups as forms over the
45 pairs ``delta_i delta_j`` (:func:`_pair_layout`): dense products that the compiler vectorizes,
where forming each of the 660 monomials cost twice as much.

Hence ``EV <= kappa(N) * (exact part + sum of the group bounds)`` at every stage, for every
composition, with no approximation but floating-point rounding. That is a few units in the last
place of the largest term (the coefficients reach about 2e4 for the 40:1 Dragon 7, but multiply high
powers of ``delta`` and ``eps``); the tests find the bound above the exact EV to 1e-12 on every
composition they try, and a hand counts as proven only below -:data:`MARGIN` (1e-9). The bound
equals the EV for a full shoe and loosens as the composition drifts from it: for the banker bet it
proves ``EV < 0`` for about 97% of the hands of 8-deck shoes dealt to a 14-card cut (every hand with
more than 100 cards left, 98.5% of those with 50-100, 60% below 50; the first stage alone 88%), and
the exact EV is computed for the rest.
``tests/core/test_ev_bound.py`` checks it against the exact EV on random, extreme and adversarially
chosen compositions.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import types

import numba
import numpy as np

from pb_gym import exact, table_cache
from pb_gym import rules as R
from pb_gym.kernel_arrays import borrowed, stack_float64
from pb_gym.parallel import run_rows

DEGREE = 6
"""Cards in a deal counted by the exact method; the degree of G."""
N_DELTA = 9
"""Free proportion deviations (values 1..9; value 0 is minus their sum)."""
FULL_SHOE_PROPORTIONS = np.array([16.0] + [4.0] * 9) / 52.0
"""Proportion of each value 0..9 in a full shoe of any number of decks."""
MARGIN = 1e-9
"""A bound below ``-MARGIN`` proves EV < 0 despite rounding (bounds and EVs err below 1e-12)."""


def _monomials() -> np.ndarray:
    """Exponents ``(M, 10)`` of every monomial of degree <= 6 in (delta_1..delta_9, eps)."""
    out: list[tuple[int, ...]] = []

    def extend(prefix: tuple[int, ...], left: int) -> None:
        if len(prefix) == N_DELTA:
            out.extend(prefix + (k,) for k in range(left + 1))
            return
        for k in range(left + 1):
            extend(prefix + (k,), left - k)

    extend((), DEGREE)
    return np.array(sorted(out, key=lambda e: (sum(e), e)), dtype=np.int64)


@functools.lru_cache(maxsize=1)
def taylor_coefficients() -> tuple[np.ndarray, np.ndarray]:
    """``(exponents, coefficients)``: ``G_o(delta, eps) = sum_j coefficients[j, o] * prod (delta,
    eps) ** exponents[j]`` for each outcome class ``o``; ``P(o) = kappa(N) * G_o`` exactly.

    Built by walking the same multiset tree as :func:`pb_gym.multiset_walk._outcome_counts_kernel`, with a
    polynomial in place of a number at each node (compiled; half a second, once per installation and
    source version: :mod:`pb_gym.table_cache`).
    """
    exponents = _monomials()
    table = table_cache.cached("taylor", ("coefficients",), lambda: {"coefficients": _walk(exponents)})
    return exponents, table["coefficients"]


def _walk(exponents: np.ndarray) -> np.ndarray:
    """The coefficients of :func:`taylor_coefficients` over the monomials ``exponents``, computed."""
    n_mon = len(exponents)
    index = {tuple(e): j for j, e in enumerate(exponents.tolist())}
    # shift[var, j]: the monomial j times that variable (degree < 6 wherever it is used)
    shift = np.zeros((N_DELTA + 1, n_mon), dtype=np.int64)
    for j, e in enumerate(exponents.tolist()):
        if sum(e) < DEGREE:
            for var in range(N_DELTA + 1):
                e[var] += 1
                shift[var, j] = index[tuple(e)]
                e[var] -= 1
    sizes = np.searchsorted(exponents.sum(axis=1), np.arange(DEGREE + 1), side="right")
    acc = np.zeros((n_mon, R.N_OUTCOMES))
    _taylor_walk(
        exact.multiset_weights().astype(np.float64), shift, FULL_SHOE_PROPORTIONS, sizes.astype(np.int64), acc
    )
    return acc


@numba.njit(cache=True)
def _times(src, dst, size, value, repeat, shift, u0):
    """``dst = src * (u_value - repeat * eps)`` over the first ``size`` monomials of ``src`` (its
    support), with ``u_v = u0_v + delta_v`` and ``delta_0 = -(delta_1 + ... + delta_9)``."""
    n_delta = shift.shape[0] - 1
    dst[:] = 0.0
    for j in range(size):
        c = src[j]
        if c == 0.0:
            continue
        dst[j] += u0[value] * c
        if repeat:
            dst[shift[n_delta, j]] -= repeat * c
        if value:
            dst[shift[value - 1, j]] += c
        else:
            for var in range(n_delta):
                dst[shift[var, j]] -= c


@numba.njit(cache=True)
def _taylor_walk(weights, shift, u0, sizes, acc):
    """The multiset walk of :func:`pb_gym.multiset_walk._outcome_counts_kernel` with a polynomial at each
    node: ``acc[:, o] += weights[m, o] * prod_v prod_{k < m_v} (u_v - k eps)`` over multisets ``m``."""
    n_mon = acc.shape[0]
    polys = np.zeros((7, n_mon))
    polys[0, 0] = 1.0
    j = 0
    for v1 in range(10):
        _times(polys[0], polys[1], sizes[0], v1, 0, shift, u0)
        for v2 in range(v1, 10):
            k2 = 1 if v2 == v1 else 0
            _times(polys[1], polys[2], sizes[1], v2, k2, shift, u0)
            for v3 in range(v2, 10):
                k3 = k2 + 1 if v3 == v2 else 0
                _times(polys[2], polys[3], sizes[2], v3, k3, shift, u0)
                for v4 in range(v3, 10):
                    k4 = k3 + 1 if v4 == v3 else 0
                    _times(polys[3], polys[4], sizes[3], v4, k4, shift, u0)
                    for v5 in range(v4, 10):
                        k5 = k4 + 1 if v5 == v4 else 0
                        _times(polys[4], polys[5], sizes[4], v5, k5, shift, u0)
                        for v6 in range(v5, 10):
                            k6 = k5 + 1 if v6 == v5 else 0
                            _times(polys[5], polys[6], sizes[5], v6, k6, shift, u0)
                            leaf = polys[6]
                            for o in range(acc.shape[1]):
                                w = weights[j, o]
                                if w != 0.0:
                                    for m in range(n_mon):
                                        acc[m, o] += w * leaf[m]
                            j += 1


BOUND_TABLES = (
    "constant",
    "linear",
    "coarse",
    "remainder",
    "remainder3",
    "euclid",
    "pair_coef",
    "triple_coef",
    "cubic_by_pair",
    "quartic_by_pairs",
    "table1",
    "table2",
    "table3",
)
"""The arrays of an :class:`EVBound` (:func:`_bound_tables`), as its disk cache holds them."""


def _bound_tables(payoffs: np.ndarray) -> dict[str, np.ndarray]:
    """The :data:`BOUND_TABLES` of the bound of a bet with these net payoffs per outcome class."""
    bound = types.SimpleNamespace()
    exponents, coefficients = taylor_coefficients()
    coef = coefficients @ payoffs
    degree = exponents[:, :N_DELTA].sum(axis=1)
    power = exponents[:, N_DELTA]
    n_pow = DEGREE + 1
    bound.constant = np.zeros(n_pow)
    bound.linear = np.zeros((N_DELTA, n_pow))
    pairs: dict[tuple[int, ...], np.ndarray] = {}
    triples: dict[tuple[int, ...], np.ndarray] = {}
    quartics: list[tuple[tuple[int, ...], float]] = []
    bound.coarse = np.zeros((DEGREE + 1, n_pow))  # M[a, l] for every a >= 2 (the first stage)
    bound.remainder = np.zeros((DEGREE + 1, n_pow))  # M[a, l] of the terms the 2nd stage bounds
    bound.remainder3 = np.zeros((DEGREE + 1, n_pow))  # ... and those the third stage bounds
    # the same groups bounded through ||delta||_2 instead (each stage takes the smaller bound):
    # squared Frobenius norms of their symmetric tensors, and the quadratic forms themselves
    frobenius = np.zeros((3, DEGREE + 1, n_pow))  # (stage, a, l)
    quadratic = np.zeros((n_pow, N_DELTA, N_DELTA))
    for e, c, a, l in zip(exponents, coef, degree, power, strict=True):
        variables = tuple(np.repeat(np.arange(N_DELTA), e[:N_DELTA]).tolist())  # d1^2 d4 -> 0,0,3
        if a == 0:
            bound.constant[l] += c
            continue
        if a == 1:
            bound.linear[variables[0], l] += c
            continue
        spread = abs(c) / _multinomial(e[:N_DELTA])  # the symmetric tensor's entry
        bound.coarse[a, l] = max(bound.coarse[a, l], spread)
        frobenius[0, a, l] += abs(c) * spread  # multinomial(a; b) entries equal to c / multinomial
        if a == 2:
            pairs.setdefault(variables, np.zeros(n_pow))[l] += c
            i, j = variables
            quadratic[l, i, j] += c / 2.0
            quadratic[l, j, i] += c / 2.0
        elif a == 3 and l == 0:
            triples.setdefault(variables, np.zeros(n_pow))[0] += c
        else:
            bound.remainder[a, l] = max(bound.remainder[a, l], spread)
            frobenius[1, a, l] += abs(c) * spread
            if a == 3:
                triples.setdefault(variables, np.zeros(n_pow))[l] += c
            elif a == 4 and l == 0:
                quartics.append((variables, c))
            else:
                bound.remainder3[a, l] = max(bound.remainder3[a, l], spread)
                frobenius[2, a, l] += abs(c) * spread
    # |T(delta, ..., delta)| <= ||T||_F ||delta||_2^a (Cauchy-Schwarz), and for the quadratic
    # group of the first stage the signed delta' Q delta <= lambda_max(Q) ||delta||_2^2
    bound.euclid = np.sqrt(frobenius)
    # (raised by 1e-12 of the matrix's norm: eigvalsh's rounding is far below that)
    bound.euclid[0, 2] = [np.linalg.eigvalsh(q).max() + 1e-12 * np.linalg.norm(q) for q in quadratic]
    # the exactly evaluated groups as dense rows over every monomial of their degree, in the order
    # in which the kernel forms the monomials (nested loops over i <= j <= k <= m): contiguous dot
    # products, without index arrays to gather through
    bound.pair_coef = _dense(pairs, 2, n_pow - 2)  # (l, monomial): eps^l delta_i delta_j
    bound.triple_coef = _dense(triples, 3, n_pow - 3)
    quartic_coef = _dense({t: np.array([c]) for t, c in quartics}, 4, 1)[0]
    # the cubic terms without eps and the quartic ones as forms over the pairs (_pair_layout)
    cubic = np.zeros(N_DELTA * N_PAIRS)
    cubic[TRIPLE_SLOT] = bound.triple_coef[0]
    bound.cubic_by_pair = cubic.reshape(N_DELTA, N_PAIRS)
    quartic = np.zeros(N_PAIRS * N_PAIRS)
    quartic[QUARTIC_SLOT] = quartic_coef
    bound.quartic_by_pairs = quartic.reshape(N_PAIRS, N_PAIRS)
    bound.terms = (
        bound.constant,
        bound.linear,
        bound.coarse,
        bound.remainder,
        bound.remainder3,
        bound.euclid,
    )
    bound.tables = tuple(
        np.zeros((TABLED_CARDS + 1, width)) for width in (STAGE1_WIDTH, STAGE2_WIDTH, STAGE3_WIDTH)
    )
    _fill_tables(
        exact.MIN_CARDS, *bound.terms, bound.pair_coef, bound.triple_coef, TRIPLE_SLOT, *bound.tables
    )
    tables = {key: getattr(bound, key) for key in BOUND_TABLES[:-3]}
    tables.update(zip(BOUND_TABLES[-3:], bound.tables, strict=True))
    return tables


class EVBound:
    """The upper bound on the exact EV of one bet (net payoff per outcome class), for any composition.

    Args:
        payoffs: net win per unit staked in each outcome class (:data:`pb_gym.rules.OUTCOMES`), e.g.
            a column of :meth:`pb_gym.rules.Rules.paytable`.
    """

    def __init__(self, payoffs: np.ndarray) -> None:
        payoffs = np.asarray(payoffs, dtype=np.float64)
        if payoffs.shape != (R.N_OUTCOMES,):
            raise ValueError(
                f"payoffs must have one entry per outcome class ({R.N_OUTCOMES}); got shape {payoffs.shape}"
            )
        # (built once per bet and kept on disk: some 50 ms a process, in every process that prices)
        name = "ev_bound-" + hashlib.sha256(payoffs.tobytes()).hexdigest()[:16]
        tables = table_cache.cached(name, BOUND_TABLES, lambda: _bound_tables(payoffs))
        (
            self.constant,
            self.linear,
            self.coarse,
            self.remainder,
            self.remainder3,
            self.euclid,
            self.pair_coef,
            self.triple_coef,
            self.cubic_by_pair,
            self.quartic_by_pairs,
        ) = (tables[key] for key in BOUND_TABLES[:-3])
        self.terms = (self.constant, self.linear, self.coarse, self.remainder, self.remainder3, self.euclid)
        self.tables = tuple(tables[key] for key in BOUND_TABLES[-3:])

    def upper(self, composition: np.ndarray, refine: bool = True) -> np.ndarray:
        """An upper bound on the exact EV per unit staked for each composition (counts by rank,
        ``(..., 13)``); proven in the module docstring.

        The first stage evaluates the constant and linear terms exactly and bounds all the others;
        where that does not prove EV < -:data:`MARGIN`, and ``refine``, the second stage also
        evaluates the quadratic terms and the cubic terms without ``eps`` exactly, and where that
        does not either, the third the other cubic terms and the quartic terms without ``eps`` (each
        stage is an upper bound; the smallest is returned).
        """
        comp = exact.validate_composition(composition, copy=False)
        return self._upper_rows(np.ascontiguousarray(comp.reshape(-1, R.N_RANKS)), refine).reshape(
            comp.shape[:-1]
        )

    def _upper_rows(self, ranks: np.ndarray, refine: bool = True) -> np.ndarray:
        """:meth:`upper` of checked compositions ``(n, 13)`` int64."""
        out = np.empty(len(ranks))
        self._run(ranks, 0, self.tables, refine, out)
        beyond = np.flatnonzero(np.isnan(out))  # more cards than the tables hold
        if beyond.size:
            counts = ranks[beyond].sum(axis=1)
            for cards in np.unique(counts):
                # the same kernel over a table of this count alone: the same bits as a tabled row
                rows = tuple(np.empty((1, table.shape[1])) for table in self.tables)
                _per_cards(
                    int(cards),
                    *self.terms,
                    self.pair_coef,
                    self.triple_coef,
                    TRIPLE_SLOT,
                    *(row[0] for row in rows),
                )
                part = beyond[counts == cards]
                part_out = np.empty(len(part))
                self._run(np.ascontiguousarray(ranks[part]), int(cards), rows, refine, part_out)
                out[part] = part_out
        return out

    def _run(
        self, ranks: np.ndarray, first: int, tables: tuple[np.ndarray, ...], refine: bool, out: np.ndarray
    ) -> None:
        """:func:`_upper_kernel` over ``ranks`` into ``out``, on the threads when they are many."""
        run_rows(
            _upper_kernel,
            len(ranks),
            UPPER_MIN_ROWS,
            ranks,
            FULL_SHOE_PROPORTIONS,
            first,
            *tables,
            self.cubic_by_pair,
            self.quartic_by_pairs,
            refine,
            -MARGIN,
            out,
        )


TABLED_CARDS = 8 * 52
"""Card counts up to which the bound's sums over the powers of ``eps = 1 / N`` are kept in tables
(:func:`_fill_tables`): every shoe the rules allow (1 to 8 decks). A larger composition has them
computed for its count alone (:func:`_per_cards`, :meth:`EVBound._upper_rows`), with the same
results."""
N_PAIRS = N_DELTA * (N_DELTA + 1) // 2
"""Monomials ``delta_i delta_j`` (``i <= j``), in lexicographic order: the second and third stages'
cubic and quartic forms are written over them (:func:`_pair_layout`)."""
STAGE1_WIDTH = 3 + N_DELTA + 2 * (DEGREE - 1)
"""Entries of one count's first-stage row: eps, kappa, the constant, the linear coefficients, and
the 1-norm and 2-norm bounds of each degree 2..6."""
STAGE2_WIDTH = N_PAIRS + 2 * (DEGREE - 2)
"""The quadratic coefficients (one per pair) and the bounds of each degree 3..6."""
STAGE3_WIDTH = N_DELTA * N_PAIRS + 2 * (DEGREE - 3)
"""The cubic coefficients with ``eps`` as a ``(value k, pair)`` matrix (:func:`_pair_layout`) and
the bounds of each degree 4..6."""
if not np.array_equal(R.RANK_VALUES, [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0]):
    raise ImportError("pb_gym.ev_bound reads the count of value v in rank column v - 1 (A..9)")


def _pair_layout() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the cubic and quartic monomials sit in the pair forms, so that the kernel evaluates
    them as dense products over the pairs ``P_p = delta_i delta_j`` (vectorized, with no monomial
    formed): ``(triple_slot, quartic_slot, pair_start)``. The cubic monomial ``delta_i delta_j
    delta_k`` (``i <= j <= k``, lexicographic as :func:`_dense`) is ``P_(i,j) delta_k``: slot
    ``k * N_PAIRS + (i, j)`` of a ``(N_DELTA, N_PAIRS)`` matrix; the quartic ``delta_i delta_j
    delta_k delta_l`` is ``P_(i,j) P_(k,l)``: slot ``(i, j) * N_PAIRS + (k, l)`` of a ``(N_PAIRS,
    N_PAIRS)`` matrix, whose row ``(i, j)`` is zero before the pair ``(j, j)`` (``pair_start``).
    Each monomial has one slot, so the forms equal the sums over the monomials."""
    pairs = list(itertools.combinations_with_replacement(range(N_DELTA), 2))
    index = {pair: p for p, pair in enumerate(pairs)}
    triples = itertools.combinations_with_replacement(range(N_DELTA), 3)
    quartics = itertools.combinations_with_replacement(range(N_DELTA), 4)
    triple_slot = np.array([k * N_PAIRS + index[i, j] for i, j, k in triples])
    quartic_slot = np.array([index[i, j] * N_PAIRS + index[k, l] for i, j, k, l in quartics])
    pair_start = np.array([index[j, j] for _, j in pairs])
    return triple_slot, quartic_slot, pair_start


TRIPLE_SLOT, QUARTIC_SLOT, PAIR_START = _pair_layout()


@numba.njit(cache=True, nogil=True)
def _per_cards(
    cards,
    constant,
    linear,
    coarse,
    remainder,
    remainder3,
    euclid,
    pair_coef,
    triple_coef,
    triple_slot,
    row1,
    row2,
    row3,
):
    """The bound's terms that depend on the composition only through its ``cards`` (``eps = 1 /
    cards``), each summed over the powers of ``eps`` once: ``row1`` (:data:`STAGE1_WIDTH`), ``row2``
    and ``row3``. Summing a group's bounds over ``l`` before taking the smaller of the 1-norm and the
    2-norm one (``min(sum, sum)`` for ``sum min``) loosens the bound only where the two cross, and
    makes the per-composition work of the first stage some fifty operations."""
    n_pow = constant.shape[0]
    n_delta = linear.shape[0]
    eps = 1.0 / cards
    eps_pow = np.empty(n_pow)
    eps_pow[0] = 1.0
    for l in range(1, n_pow):
        eps_pow[l] = eps_pow[l - 1] * eps
    falling = 1.0
    for k in range(n_pow - 1):
        falling *= 1.0 - k * eps
    row1[0] = eps
    row1[1] = 1.0 / falling  # kappa = N^6 / (N)_6
    row1[2] = 0.0
    for l in range(n_pow):
        row1[2] += constant[l] * eps_pow[l]
    for i in range(n_delta):
        row1[3 + i] = 0.0
        for l in range(n_pow):
            row1[3 + i] += linear[i, l] * eps_pow[l]
    top = n_pow - 1  # the highest degree
    for stage, row, first, at in (
        (0, row1, 2, 3 + n_delta),
        (1, row2, 3, pair_coef.shape[1]),
        (2, row3, 4, row3.shape[0] - 2 * (n_pow - 4)),
    ):
        bounds = coarse if stage == 0 else remainder if stage == 1 else remainder3
        for a in range(first, n_pow):
            one = 0.0
            two = 0.0
            for l in range(n_pow - a):
                one += bounds[a, l] * eps_pow[l]
                two += euclid[stage, a, l] * eps_pow[l]
            row[at + a - first] = one
            row[at + top - first + 1 + a - first] = two
    for m in range(pair_coef.shape[1]):
        row2[m] = 0.0
        for l in range(pair_coef.shape[0]):
            row2[m] += pair_coef[l, m] * eps_pow[l]
    row3[: row3.shape[0] - 2 * (n_pow - 4)] = 0.0  # (the slots no monomial has)
    for m in range(triple_coef.shape[1]):
        term = 0.0
        for l in range(1, triple_coef.shape[0]):  # (the cubic terms without eps: the second stage)
            term += triple_coef[l, m] * eps_pow[l]
        row3[triple_slot[m]] = term


@numba.njit(cache=True)
def _fill_tables(first, *args):
    """:func:`_per_cards` for every count from ``first`` to the tables' last row (``args``: its
    arguments after ``cards``; the tables in place of its rows)."""
    table1, table2, table3 = args[-3], args[-2], args[-1]
    for cards in range(first, table1.shape[0]):
        _per_cards(cards, *args[:-3], table1[cards], table2[cards], table3[cards])


# (reassociation lets the dense sums run as vector dot products instead of one long chain of
# additions; it changes the bound only by rounding, which MARGIN covers and the tests check)
@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _upper_kernel(  # noqa: C901 - a compiled kernel: its stages are one pass over a composition, and a call per stage costs speed
    start,
    stop,
    ranks,
    u0,
    first,
    table1,
    table2,
    table3,
    cubic_by_pair,
    quartic_by_pairs,
    refine,
    threshold,
    out,
):
    """The bound of the compositions ``start..stop-1`` (some fifty operations each in the first
    stage). ``table1..3``: :func:`_per_cards` of each count of cards from ``first`` on (up to
    :data:`TABLED_CARDS` from 0, or one count beyond them: :meth:`EVBound._upper_rows`); a
    composition of a count outside them gets NaN. ``cubic_by_pair`` and ``quartic_by_pairs``: the
    cubic terms without ``eps`` and the quartic ones as pair forms (:func:`_pair_layout`)."""
    # (borrowed: without reference counts, which threads sharing these arrays would contend on)
    ranks, u0, out = borrowed(ranks), borrowed(u0), borrowed(out)
    table1, table2, table3 = borrowed(table1), borrowed(table2), borrowed(table3)
    cubic_by_pair, quartic_by_pairs = borrowed(cubic_by_pair), borrowed(quartic_by_pairs)
    # (scratch in the stack frame: arrays the compiler knows no other overlaps, so the dense sums over
    # them vectorize without overlap checks; the bound may move by rounding alone, far below MARGIN)
    delta = stack_float64(N_DELTA)
    pairs = stack_float64(N_PAIRS)  # delta_i delta_j (i <= j), lexicographic
    by_pair = stack_float64(N_PAIRS)  # a cubic form's coefficient of each pair, summed over delta_k
    at1 = 3 + N_DELTA  # where each row's group bounds begin
    at2 = N_PAIRS
    at3 = N_DELTA * N_PAIRS
    top = DEGREE
    for b in range(start, stop):
        cards = 0
        for r in range(R.N_RANKS):  # (a constant: the loop unrolled)
            cards += ranks[b, r]
        at = cards - first
        if at < 0 or at >= table1.shape[0]:
            out[b] = np.nan
            continue
        row1, row2, row3 = table1[at], table2[at], table3[at]
        eps = row1[0]
        low = row1[2]
        norm = 0.0
        norm2 = 0.0
        for i in range(N_DELTA):  # value i + 1 is rank column i (A..9); tens and faces are value 0
            d = ranks[b, i] * eps - u0[i + 1]
            delta[i] = d
            low += d * row1[3 + i]
            norm += abs(d)
            norm2 += d * d
        norm2 = np.sqrt(norm2)
        # the groups of degree a = 2..6, each the smaller of its 1-norm and 2-norm bounds (running
        # powers of the norms: the stages after the first rarely run)
        power, power2 = norm * norm, norm2 * norm2
        high = 0.0
        for a in range(2, top + 1):
            high += min(row1[at1 + a - 2] * power, row1[at1 + top - 1 + a - 2] * power2)
            power, power2 = power * norm, power2 * norm2
        kappa = row1[1]
        bound = kappa * (low + high)
        if not (refine and bound >= threshold):
            out[b] = bound
            continue
        # second stage: the quadratic terms and the cubic ones without eps, sum_p P_p (B delta)_p
        m = 0
        for i in range(N_DELTA):
            for j in range(i, N_DELTA):
                pairs[m] = delta[i] * delta[j]
                m += 1
        quadratic = 0.0
        for p in range(N_PAIRS):
            quadratic += row2[p] * pairs[p]
        by_pair[:] = 0.0
        for k in range(N_DELTA):
            for p in range(N_PAIRS):
                by_pair[p] += delta[k] * cubic_by_pair[k, p]
        cubic = 0.0
        for p in range(N_PAIRS):
            cubic += by_pair[p] * pairs[p]
        power, power2 = norm**3, norm2**3
        high = 0.0
        for a in range(3, top + 1):
            high += min(row2[at2 + a - 3] * power, row2[at2 + top - 2 + a - 3] * power2)
            power, power2 = power * norm, power2 * norm2
        bound = min(bound, kappa * (low + quadratic + cubic + high))
        if bound >= threshold:  # third stage: the cubic terms with eps, the quartic without
            by_pair[:] = 0.0
            for k in range(N_DELTA):
                for p in range(N_PAIRS):
                    by_pair[p] += delta[k] * row3[k * N_PAIRS + p]
            for p in range(N_PAIRS):
                cubic += by_pair[p] * pairs[p]
            quartic = 0.0
            for p in range(N_PAIRS):  # P' A P, A's row p zero before PAIR_START[p]
                row = 0.0
                for q in range(PAIR_START[p], N_PAIRS):
                    row += quartic_by_pairs[p, q] * pairs[q]
                quartic += pairs[p] * row
            power, power2 = norm**4, norm2**4
            high = 0.0
            for a in range(4, top + 1):
                high += min(row3[at3 + a - 4] * power, row3[at3 + top - 3 + a - 4] * power2)
                power, power2 = power * norm, power2 * norm2
            bound = min(bound, kappa * (low + quadratic + cubic + quartic + high))
        out[b] = bound


UPPER_MIN_ROWS = 2048
"""Batches of at least this many compositions are bounded on several threads (:mod:`pb_gym.parallel`)."""


def _dense(groups: dict[tuple[int, ...], np.ndarray], degree: int, powers: int) -> np.ndarray:
    """``(powers, monomials)``: the coefficient of ``eps^l delta_i delta_j ...`` (``i <= j <= ...``)
    for each monomial of ``degree`` in lexicographic order, zero where ``groups`` has none."""
    monomials = list(itertools.combinations_with_replacement(range(N_DELTA), degree))
    out = np.zeros((powers, len(monomials)))
    for m, variables in enumerate(monomials):
        if variables in groups:
            out[:, m] = groups[variables][:powers]
    return out


def _multinomial(exponents: np.ndarray) -> float:
    return math.factorial(int(sum(exponents))) / math.prod(math.factorial(int(k)) for k in exponents)


@functools.lru_cache(maxsize=32)
def _bound(payoffs: tuple[float, ...]) -> EVBound:
    return EVBound(np.array(payoffs))


def bet_bound(payoffs: np.ndarray) -> EVBound:
    """The (cached) :class:`EVBound` of a bet with these net payoffs per outcome class."""
    return _bound(tuple(float(x) for x in np.asarray(payoffs, dtype=np.float64)))


def proven_negative(composition: np.ndarray, payoffs: np.ndarray) -> np.ndarray:
    """Where the bound proves that every bet (a column of ``payoffs``, ``(6, k)``) has EV < 0.

    A False entry proves nothing: the exact EV decides there.
    """
    payoffs = np.asarray(payoffs, dtype=np.float64)
    comp = exact.validate_composition(composition, copy=False)
    ranks = np.ascontiguousarray(comp.reshape(-1, R.N_RANKS))
    proven = np.ones(len(ranks), dtype=bool)
    for column in payoffs.T:
        proven &= bet_bound(column)._upper_rows(ranks) < -MARGIN
    return proven.reshape(comp.shape[:-1])
