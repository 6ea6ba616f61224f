"""A proven upper bound on the exact EV of a bet, about a hundred times cheaper than the EV itself.

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

* the terms with ``a <= 2``, and those with ``a = 3, l = 0``, are evaluated exactly;
* every other group ``(a, l)`` is bounded by the multinomial theorem:
  ``|sum_{|b| = a} C_{b,l} delta^b| <= M[a, l] * ||delta||_1^a`` with
  ``M[a, l] = max_b |C_{b,l}| / multinomial(a; b)``, because
  ``||delta||_1^a = sum_{|b| = a} multinomial(a; b) |delta|^b``.

Hence ``EV <= kappa(N) * (exact low-order part + sum M[a, l] ||delta||_1^a eps^l)``, for every
composition, with no approximation but floating-point rounding (coefficients below 100 in size,
errors below 1e-12), which :data:`MARGIN` covers. The bound is tight for a full shoe and loosens as
the composition drifts from it: it proves ``EV < 0`` for about 90% of the hands of a shoe dealt to
a 14-card cut for the banker bet (every hand with more than 200 cards left), and the exact EV is
computed for the rest. ``tests/test_ev_bound.py`` checks it against the exact EV on random,
extreme and adversarially chosen compositions.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from pb_gym import exact
from pb_gym import rules as R

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

    Built by walking the same multiset tree as :func:`pb_gym.exact._outcome_counts_kernel`, with a
    polynomial in place of a number at each node (about a second, once per process).
    """
    exponents = _monomials()
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
    eps = N_DELTA

    def times(poly: np.ndarray, value: int, repeat: int) -> np.ndarray:
        """``poly * (u_value - repeat * eps)``, with ``u_v = u0_v + delta_v``."""
        out = FULL_SHOE_PROPORTIONS[value] * poly
        nz = np.flatnonzero(poly)
        if repeat:
            out[shift[eps, nz]] -= repeat * poly[nz]
        if value:
            out[shift[value - 1, nz]] += poly[nz]
        else:
            for var in range(N_DELTA):
                out[shift[var, nz]] -= poly[nz]
        return out

    weights = exact.multiset_weights().astype(np.float64)
    acc = np.zeros((n_mon, R.N_OUTCOMES))
    one = np.zeros(n_mon)
    one[0] = 1.0
    j = 0
    # the kernel's walk: nondecreasing value sequences in lexicographic order = rows of `weights`
    for v1 in range(10):
        p1 = times(one, v1, 0)
        for v2 in range(v1, 10):
            k2 = 1 if v2 == v1 else 0
            p2 = times(p1, v2, k2)
            for v3 in range(v2, 10):
                k3 = k2 + 1 if v3 == v2 else 0
                p3 = times(p2, v3, k3)
                for v4 in range(v3, 10):
                    k4 = k3 + 1 if v4 == v3 else 0
                    p4 = times(p3, v4, k4)
                    for v5 in range(v4, 10):
                        k5 = k4 + 1 if v5 == v4 else 0
                        p5 = times(p4, v5, k5)
                        leaves = [times(p5, v6, k5 + 1 if v6 == v5 else 0) for v6 in range(v5, 10)]
                        acc += np.array(leaves).T @ weights[j:j + len(leaves)]
                        j += len(leaves)
    return exponents, acc


class EVBound:
    """The upper bound on the exact EV of one bet (net payoff per outcome class), for any composition.

    Args:
        payoffs: net win per unit staked in each outcome class (:data:`pb_gym.rules.OUTCOMES`), e.g.
            a column of :meth:`pb_gym.rules.Rules.paytable`.
    """

    def __init__(self, payoffs: np.ndarray) -> None:
        payoffs = np.asarray(payoffs, dtype=np.float64)
        if payoffs.shape != (R.N_OUTCOMES,):
            raise ValueError(f"payoffs must have one entry per outcome class ({R.N_OUTCOMES}); "
                             f"got shape {payoffs.shape}")
        exponents, coefficients = taylor_coefficients()
        coef = coefficients @ payoffs
        degree = exponents[:, :N_DELTA].sum(axis=1)
        power = exponents[:, N_DELTA]
        n_pow = DEGREE + 1
        self.constant = np.zeros(n_pow)
        self.linear = np.zeros((N_DELTA, n_pow))
        pairs: dict[tuple[int, ...], np.ndarray] = {}
        triples: list[tuple[tuple[int, ...], float]] = []
        self.coarse = np.zeros((DEGREE + 1, n_pow))  # M[a, l] for every a >= 2 (the first stage)
        self.remainder = np.zeros((DEGREE + 1, n_pow))  # M[a, l] of the terms not evaluated exactly
        for e, c, a, l in zip(exponents, coef, degree, power):
            variables = tuple(np.repeat(np.arange(N_DELTA), e[:N_DELTA]).tolist())  # d1^2 d4 -> 0,0,3
            if a == 0:
                self.constant[l] += c
                continue
            if a == 1:
                self.linear[variables[0], l] += c
                continue
            spread = abs(c) / _multinomial(e[:N_DELTA])  # the symmetric tensor's entry
            self.coarse[a, l] = max(self.coarse[a, l], spread)
            if a == 2:
                pairs.setdefault(variables, np.zeros(n_pow))[l] += c
            elif a == 3 and l == 0:
                triples.append((variables, c))
            else:
                self.remainder[a, l] = max(self.remainder[a, l], spread)
        self.pair_index = np.array(list(pairs), dtype=np.int64).reshape(-1, 2)
        self.pair_coef = np.array(list(pairs.values())).reshape(-1, n_pow)
        self.triple_index = np.array([t for t, _ in triples], dtype=np.int64).reshape(-1, 3)
        self.triple_coef = np.array([c for _, c in triples], dtype=np.float64)

    def upper(self, composition: np.ndarray, refine: bool = True) -> np.ndarray:
        """An upper bound on the exact EV per unit staked for each composition (counts by rank,
        ``(..., 13)``); proven in the module docstring.

        The first stage evaluates the constant and linear terms exactly and bounds all the others;
        where that does not prove EV < -:data:`MARGIN`, and ``refine``, the second stage also
        evaluates the quadratic and cubic terms exactly (both stages are upper bounds; the smaller is
        returned).
        """
        comp = exact.validate_composition(composition)
        counts = np.ascontiguousarray(exact.value_counts(comp).reshape(-1, 10), dtype=np.float64)
        out = np.empty(len(counts))
        _upper_kernel(counts, FULL_SHOE_PROPORTIONS, self.constant, self.linear, self.coarse,
                      self.pair_index, self.pair_coef, self.triple_index, self.triple_coef,
                      self.remainder, refine, -MARGIN, out)
        return out.reshape(comp.shape[:-1])


@numba.njit(cache=True)
def _upper_kernel(counts, u0, constant, linear, coarse, pair_index, pair_coef, triple_index,
                  triple_coef, remainder, refine, threshold, out):
    """Serial on purpose: a few hundred operations per composition, cheaper than any thread."""
    n_delta = u0.shape[0] - 1
    n_pow = constant.shape[0]
    delta = np.empty(n_delta)
    eps_pow = np.empty(n_pow)
    norm_pow = np.empty(n_pow)
    for b in range(counts.shape[0]):
        cards = 0.0
        for v in range(u0.shape[0]):
            cards += counts[b, v]
        norm = 0.0
        for i in range(n_delta):
            delta[i] = counts[b, i + 1] / cards - u0[i + 1]
            norm += abs(delta[i])
        eps_pow[0] = 1.0
        norm_pow[0] = 1.0
        for l in range(1, n_pow):
            eps_pow[l] = eps_pow[l - 1] / cards
            norm_pow[l] = norm_pow[l - 1] * norm
        kappa = 1.0
        for k in range(n_pow - 1):  # N^6 / (N)_6
            kappa *= cards / (cards - k)
        low = 0.0
        for l in range(n_pow):
            term = constant[l]
            for i in range(n_delta):
                term += delta[i] * linear[i, l]
            low += term * eps_pow[l]
        high = 0.0
        for a in range(2, n_pow):
            for l in range(n_pow - a):
                high += coarse[a, l] * norm_pow[a] * eps_pow[l]
        bound = kappa * (low + high)
        if refine and bound >= threshold:
            quadratic = 0.0
            for p in range(pair_index.shape[0]):
                term = 0.0
                for l in range(n_pow - 2):
                    term += pair_coef[p, l] * eps_pow[l]
                quadratic += term * delta[pair_index[p, 0]] * delta[pair_index[p, 1]]
            cubic = 0.0
            for p in range(triple_index.shape[0]):
                cubic += (triple_coef[p] * delta[triple_index[p, 0]] * delta[triple_index[p, 1]]
                          * delta[triple_index[p, 2]])
            high = 0.0
            for a in range(3, n_pow):
                for l in range(n_pow - a):
                    high += remainder[a, l] * norm_pow[a] * eps_pow[l]
            bound = min(bound, kappa * (low + quadratic + cubic + high))
        out[b] = bound


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
    comp = exact.validate_composition(composition)
    proven = np.ones(comp.shape[:-1], dtype=bool)
    for column in payoffs.T:
        proven &= bet_bound(column).upper(comp) < -MARGIN
    return proven
