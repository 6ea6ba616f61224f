"""Exact odds of every bet for any shoe composition, vectorized over many compositions.

Method. Count every deal as six cards (the usual combination convention: cards a hand does not use are
still "dealt" and ignored), so every ordered 6-card sequence of values is equally likely given the
composition. The probability of a sequence depends only on its *multiset* of values ``m``:
``prod_v (c_v)_(m_v) / (N)_6`` with ``(x)_k`` the falling factorial. So, for each outcome class ``o``,

    count_o(c) = sum over the 5,005 multisets m of W[m, o] * prod_v (c_v)_(m_v)

where ``W[m, o]`` is how many orderings of ``m`` end in outcome ``o`` when dealt by the rules
(:data:`pb_gym.rules.BANKER_TABLEAU` and friends). ``W`` is built once by dealing all 10^6 value
sequences through the rule tables; evaluating a composition is then a walk over the multiset tree with
one multiplication per node plus a 6-wide multiply-add per leaf, compiled with numba and run on several
threads over compositions (:mod:`pb_gym.threads`). With integer arithmetic the counts are exact (they fit
in int64 for up to 8 decks); the fast path uses float64.

Pair bets depend on ranks, not values, and have a closed form: ``P(pair) = sum_r n_r (n_r - 1) /
(N (N - 1))`` for the first two cards of either hand (by exchangeability).
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from pb_gym import rules as R
from pb_gym.threads import run_rows
from pb_gym.rules import Rules

MIN_CARDS = 6
"""A composition must hold at least six cards: a hand may need all of them."""
MAX_EXACT_CARDS = 416
"""Integer counts are exact in int64 for at most 8 decks' worth of cards ((416)_6 < 2**63)."""


def _value_sequences() -> np.ndarray:
    """All 10^6 ordered sequences of six card values, shape (6, 10**6)."""
    return np.indices((10,) * 6, dtype=np.int8).reshape(6, -1)


def deal_value_sequences(values: np.ndarray) -> dict[str, np.ndarray]:
    """Play out hands from value sequences in deal order (P, B, P, B, then third cards), vectorized.

    ``values`` is ``(6, n)``: card values of the next six cards of the shoe. Returns the final totals,
    card counts and outcome class of each hand, using the rule tables of :mod:`pb_gym.rules`.
    """
    v = values.astype(np.intp)
    pt = (v[0] + v[2]) % 10
    bt = (v[1] + v[3]) % 10
    natural = (pt >= R.NATURAL_MIN) | (bt >= R.NATURAL_MIN)
    player_draws = ~natural & R.PLAYER_DRAWS[pt]
    column = np.where(player_draws, v[4], R.NO_THIRD_CARD)
    banker_draws = ~natural & R.BANKER_TABLEAU[bt, column]
    banker_third = np.where(player_draws, v[5], v[4])  # the banker takes the next card in the shoe
    pt_final = (pt + np.where(player_draws, v[4], 0)) % 10
    bt_final = (bt + np.where(banker_draws, banker_third, 0)) % 10
    pn = 2 + player_draws
    bn = 2 + banker_draws
    return {
        "player_total": pt_final,
        "banker_total": bt_final,
        "player_ncards": pn,
        "banker_ncards": bn,
        "outcome": R.OUTCOME_TABLE[pt_final, bt_final, pn - 2, bn - 2],
    }


@functools.lru_cache(maxsize=1)
def multiset_weights() -> np.ndarray:
    """``W[m, o]``: orderings of value multiset ``m`` (nondecreasing-sequence order) ending in ``o``."""
    seq = _value_sequences()
    outcome = deal_value_sequences(seq)["outcome"]
    ordered = np.sort(seq, axis=0).astype(np.int64)
    code = np.zeros(ordered.shape[1], dtype=np.int64)
    for row in ordered:
        code = code * 10 + row
    # index of each nondecreasing sequence in lexicographic order = the kernel's walk order
    multisets = np.unique(code)
    index = np.searchsorted(multisets, code)
    weights = np.bincount(index * R.N_OUTCOMES + outcome, minlength=len(multisets) * R.N_OUTCOMES)
    return weights.reshape(len(multisets), R.N_OUTCOMES).astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _outcome_counts_kernel(start, stop, c, weights, out):
    """out[b, o] = sum_m W[m, o] prod_v (c[b, v])_(m_v), walking nondecreasing 6-sequences."""
    n_out = weights.shape[1]
    for b in range(start, stop):
        acc = np.zeros(n_out, dtype=out.dtype)
        j = 0
        for v1 in range(10):
            p1 = c[b, v1]
            for v2 in range(v1, 10):
                k2 = 1 if v2 == v1 else 0
                p2 = p1 * (c[b, v2] - k2)
                for v3 in range(v2, 10):
                    k3 = k2 + 1 if v3 == v2 else 0
                    p3 = p2 * (c[b, v3] - k3)
                    for v4 in range(v3, 10):
                        k4 = k3 + 1 if v4 == v3 else 0
                        p4 = p3 * (c[b, v4] - k4)
                        for v5 in range(v4, 10):
                            k5 = k4 + 1 if v5 == v4 else 0
                            p5 = p4 * (c[b, v5] - k5)
                            for v6 in range(v5, 10):
                                k6 = k5 + 1 if v6 == v5 else 0
                                p6 = p5 * (c[b, v6] - k6)
                                for o in range(n_out):
                                    acc[o] += weights[j, o] * p6
                                j += 1
        for o in range(n_out):
            out[b, o] = acc[o]


BLOCK = 16
"""Compositions evaluated together by the float kernel: its inner loops run over a block, so the
compiler vectorizes them (SIMD); about twice the scalar kernel's speed."""


@numba.njit(cache=True, nogil=True)
def _expectation_kernel(start, stop, blocks, weights, out):
    """Float twin of the kernel above over blocks of compositions: ``blocks`` is (n_blocks, 10, BLOCK)
    value counts, ``out`` (n_blocks, k, BLOCK) receives sum_m weights[m, :] prod_v (c_v)_(m_v)."""
    n_out = weights.shape[1]
    for blk in range(start, stop):
        c = blocks[blk]
        acc = np.zeros((n_out, BLOCK))
        p1 = np.empty(BLOCK)
        p2 = np.empty(BLOCK)
        p3 = np.empty(BLOCK)
        p4 = np.empty(BLOCK)
        p5 = np.empty(BLOCK)
        p6 = np.empty(BLOCK)
        j = 0
        for v1 in range(10):
            for i in range(BLOCK):
                p1[i] = c[v1, i]
            for v2 in range(v1, 10):
                k2 = 1.0 if v2 == v1 else 0.0
                for i in range(BLOCK):
                    p2[i] = p1[i] * (c[v2, i] - k2)
                for v3 in range(v2, 10):
                    k3 = k2 + 1.0 if v3 == v2 else 0.0
                    for i in range(BLOCK):
                        p3[i] = p2[i] * (c[v3, i] - k3)
                    for v4 in range(v3, 10):
                        k4 = k3 + 1.0 if v4 == v3 else 0.0
                        for i in range(BLOCK):
                            p4[i] = p3[i] * (c[v4, i] - k4)
                        for v5 in range(v4, 10):
                            k5 = k4 + 1.0 if v5 == v4 else 0.0
                            for i in range(BLOCK):
                                p5[i] = p4[i] * (c[v5, i] - k5)
                            for v6 in range(v5, 10):
                                k6 = k5 + 1.0 if v6 == v5 else 0.0
                                for i in range(BLOCK):
                                    p6[i] = p5[i] * (c[v6, i] - k6)
                                for o in range(n_out):
                                    w = weights[j, o]
                                    if w != 0.0:
                                        for i in range(BLOCK):
                                            acc[o, i] += w * p6[i]
                                j += 1
        for o in range(n_out):
            for i in range(BLOCK):
                out[blk, o, i] = acc[o, i]


def validate_composition(composition: np.ndarray | list) -> np.ndarray:
    """Check a composition (counts by rank A..K, last axis of length 13) and return it as int64."""
    array = np.asarray(composition)
    if array.ndim == 0 or array.shape[-1] != R.N_RANKS:
        raise ValueError(f"composition must have 13 counts by rank ({', '.join(R.RANKS)}) on its last "
                         f"axis; got shape {array.shape}")
    if array.dtype.kind not in "iuf" or (array.dtype.kind == "f" and
                                         not np.all(array == np.round(array))):
        raise ValueError("composition counts must be whole numbers of cards")
    array = array.astype(np.int64)
    if np.any(array < 0):
        raise ValueError("composition counts must be >= 0")
    if np.any(array.sum(axis=-1) < MIN_CARDS):
        raise ValueError(f"a composition must hold at least {MIN_CARDS} cards (a hand may use six); "
                         f"got {int(array.sum(axis=-1).min())}")
    return array


def value_counts(composition: np.ndarray) -> np.ndarray:
    """Counts by baccarat value 0..9 from counts by rank (10, J, Q, K all count 0)."""
    composition = np.asarray(composition)
    out = np.zeros(composition.shape[:-1] + (10,), dtype=composition.dtype)
    for rank, value in enumerate(R.RANK_VALUES):
        out[..., value] += composition[..., rank]
    return out


def outcome_counts(composition: np.ndarray | list) -> np.ndarray:
    """Exact integer counts of 6-card deals ending in each outcome class, ``(..., 6)`` int64.

    The counts sum to ``N (N-1) ... (N-5)`` for a composition of ``N`` cards. Exact for compositions
    of at most 416 cards (8 decks).
    """
    comp = validate_composition(composition)
    if np.any(comp.sum(axis=-1) > MAX_EXACT_CARDS):
        raise ValueError(f"integer counts are exact for at most {MAX_EXACT_CARDS} cards; use "
                         "outcome_probabilities for larger compositions")
    flat = value_counts(comp).reshape(-1, 10)
    out = np.zeros((flat.shape[0], R.N_OUTCOMES), dtype=np.int64)
    run_rows(_outcome_counts_kernel, flat.shape[0], 4, flat, multiset_weights(), out)
    return out.reshape(comp.shape[:-1] + (R.N_OUTCOMES,))


def _falling6(n: np.ndarray) -> np.ndarray:
    n = n.astype(np.float64)
    return n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5)


def outcome_probabilities(composition: np.ndarray | list) -> np.ndarray:
    """Probability of each outcome class (:data:`pb_gym.rules.OUTCOMES`) of the next hand, ``(..., 6)``.

    Vectorized and parallel over any leading axes of ``composition`` (counts by rank).
    """
    return expectations(composition, np.eye(R.N_OUTCOMES))


def expectations(composition: np.ndarray | list, columns: np.ndarray) -> np.ndarray:
    """Expectations of functions of the outcome class: ``sum_o P(o) * columns[o, :]``, ``(..., k)``.

    ``columns`` is ``(6, k)``: e.g. ``rules.paytable()[:, [0]]`` gives the banker EV alone. Folding the
    columns into the multiset weights first costs one multiply-add per multiset and column, so asking
    for fewer columns is proportionally faster (a Kelly bettor needs two, not six).
    """
    comp = validate_composition(composition)
    columns = np.asarray(columns, dtype=np.float64)
    if columns.ndim != 2 or columns.shape[0] != R.N_OUTCOMES:
        raise ValueError(f"columns must have shape ({R.N_OUTCOMES}, k); got {columns.shape}")
    flat = value_counts(comp).reshape(-1, 10).astype(np.float64)
    n = flat.shape[0]
    n_blocks = -(-n // BLOCK)
    if n_blocks * BLOCK != n:  # pad the last block with copies of a valid composition
        flat = np.concatenate([flat, np.repeat(flat[:1], n_blocks * BLOCK - n, axis=0)])
    blocks = np.ascontiguousarray(flat.reshape(n_blocks, BLOCK, 10).transpose(0, 2, 1))
    out = np.empty((n_blocks, columns.shape[1], BLOCK))
    run_rows(_expectation_kernel, n_blocks, 2, blocks, _float_weights() @ columns, out)
    result = out.transpose(0, 2, 1).reshape(n_blocks * BLOCK, columns.shape[1])[:n]
    result /= _falling6(comp.reshape(-1, R.N_RANKS).sum(axis=1))[:, None]
    return result.reshape(comp.shape[:-1] + (columns.shape[1],))


@functools.lru_cache(maxsize=1)
def _float_weights() -> np.ndarray:
    return multiset_weights().astype(np.float64)


def pair_probability(composition: np.ndarray | list) -> np.ndarray:
    """Probability that the first two cards of a hand have the same rank (player or banker pair)."""
    comp = validate_composition(composition).astype(np.float64)
    n = comp.sum(axis=-1)
    return (comp * (comp - 1)).sum(axis=-1) / (n * (n - 1))


def expected_values(composition: np.ndarray | list, rules: Rules | None = None) -> np.ndarray:
    """Exact EV per unit staked of each bet (:data:`pb_gym.rules.BETS` order) for the next hand.

    Shape ``(..., 7)``; negative is the house edge. Uses the payouts of ``rules`` (default
    :class:`Rules`); side bets are evaluated whether or not the table offers them.
    """
    rules = rules or Rules()
    probabilities = outcome_probabilities(composition)
    ev = probabilities @ rules.paytable()
    pair = pair_probability(composition)
    for bet in ("player_pair", "banker_pair"):
        ev[..., R.BETS.index(bet)] = pair * (rules.pair_pays + 1.0) - 1.0
    return ev


def odds(composition: np.ndarray | list, rules: Rules | None = None) -> dict:
    """Probabilities and EV of every bet for one composition, as a JSON-ready dict.

    ``{"cards": N, "probabilities": {"banker", "player", "tie", and each outcome class}, "ev": {bet: x}}``
    """
    comp = validate_composition(composition)
    if comp.ndim != 1:
        raise ValueError("odds() takes one composition; use outcome_probabilities for many")
    rules = rules or Rules()
    prob = outcome_probabilities(comp)
    by_winner = np.bincount(R.OUTCOME_WINNER, weights=prob, minlength=3)
    probabilities = {name: float(by_winner[i]) for i, name in enumerate(R.WINNERS)}
    probabilities.update({f"outcome_{name}": float(p) for name, p in zip(R.OUTCOMES, prob)})
    probabilities["pair"] = float(pair_probability(comp))
    ev = expected_values(comp, rules)
    return {"cards": int(comp.sum()), "probabilities": probabilities,
            "ev": {bet: float(x) for bet, x in zip(R.BETS, ev)}}


def deals_of_six(cards: int) -> int:
    """``N (N-1) ... (N-5)``: the number of ordered 6-card deals from ``cards`` cards."""
    return math.perm(int(cards), 6)
