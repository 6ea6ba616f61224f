"""Exact odds of every bet for any shoe composition, vectorized over many compositions.

Method. Count every deal as six cards (the usual combination convention: cards a hand does not use are
still "dealt" and ignored), so every ordered 6-card sequence of values is equally likely given the
composition. The probability of a sequence depends only on its *multiset* of values ``m``:
``prod_v (c_v)_(m_v) / (N)_6`` with ``(x)_k`` the falling factorial. So, for each outcome class ``o``,

    count_o(c) = sum over the 5,005 multisets m of W[m, o] * prod_v (c_v)_(m_v)

where ``W[m, o]`` is how many orderings of ``m`` end in outcome ``o`` when dealt by the rules
(:data:`pb_gym.rules.BANKER_TABLEAU` and friends). ``W`` is built once by dealing all 10^6 value
sequences through the rule tables; evaluating a composition is then a walk over the multiset tree with
one multiplication per node plus a 6-wide multiply-add per leaf, compiled with numba
(:mod:`pb_gym.multiset_walk`) and run on several threads over compositions (:mod:`pb_gym.parallel`).
With integer arithmetic the counts are exact (they fit in int64 for up to 8 decks); the fast path uses
float64.

Pair bets depend on ranks, not values, and have a closed form: ``P(pair) = sum_r n_r (n_r - 1) /
(N (N - 1))`` for the first two cards of either hand (by exchangeability).
"""

from __future__ import annotations

import functools
import math
import sys

import numba
import numpy as np

from pb_gym import progress, table_cache
from pb_gym import rules as R
from pb_gym.multiset_walk import (
    _KEYS,
    _PATTERNS,
    _SIDE_PATTERNS,
    _blocks,
    _class_counts_kernel,
    _class_probabilities_kernel,
    _expectation_kernel,
    _outcome_counts_kernel,
    _padded,
    expected_values_one,
    hand_classes_one,
)
from pb_gym.multiset_walk import BLOCK as BLOCK
from pb_gym.multiset_walk import STACK_WIDTH as STACK_WIDTH
from pb_gym.multiset_walk import block_width as block_width
from pb_gym.parallel import run_rows
from pb_gym.rules import Rules

MIN_CARDS = 6
"""A composition must hold at least six cards: a hand may need all of them."""
MAX_RANK_COUNT = 10**9
"""The most cards of one rank a composition may hold (a billion: far beyond any shoe). Larger counts
would overflow int64 in the sums and products of the calculators (13 counts of 2**62 once gave a banker
EV of -5979.4), so they are refused."""
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
def _sequence_table() -> dict:
    """All 10^6 value sequences dealt once, kept compact (7 MB): each one's multiset index in the walk
    order, outcome class, value class and pair pattern. Both weight tables below are built from it.
    Built once per installation and source version (:mod:`pb_gym.table_cache`), loaded after that."""
    table = table_cache.cached("sequences", ("index", "n_multisets", "outcome", "key"), _deal_sequences)
    return {**table, "n_multisets": int(table["n_multisets"])}


def _deal_sequences() -> dict[str, np.ndarray]:
    """:func:`_sequence_table` built: every value sequence dealt through the rules."""
    seq = _value_sequences()
    hand = deal_value_sequences(seq)
    ordered = np.sort(seq, axis=0).astype(np.int64)
    code = np.zeros(ordered.shape[1], dtype=np.int64)
    for row in ordered:
        code = code * 10 + row
    # index of each nondecreasing sequence in lexicographic order = the kernel's walk order
    multisets = np.unique(code)
    index = np.searchsorted(multisets, code)
    cell = R.value_class(
        hand["player_total"], hand["banker_total"], hand["player_ncards"], hand["banker_ncards"]
    )

    def side(first: int, second: int) -> np.ndarray:
        """Pair pattern of one side's first two cards: 0 different values, 1 same nonzero, 2 both 0."""
        same = seq[first] == seq[second]
        return np.where(~same, 0, np.where(seq[first] == 0, 2, 1))

    key = cell * _PATTERNS + side(0, 2) * _SIDE_PATTERNS + side(1, 3)
    return {
        "index": index.astype(np.int32),
        "n_multisets": np.array(len(multisets)),
        "outcome": hand["outcome"].astype(np.int8),
        "key": key.astype(np.int16),
    }


@functools.lru_cache(maxsize=4)
def first_value_weights(high_values: tuple[int, ...]) -> np.ndarray:
    """``W[m, o]`` of :func:`multiset_weights` counting only the orderings whose first card (the
    player's first) has a value in ``high_values``: for :func:`multiset_expectations`."""
    table = _sequence_table()
    n = table["n_multisets"]
    first = np.isin(_value_sequences()[0], high_values)
    cells = table["index"][first].astype(np.int64) * R.N_OUTCOMES + table["outcome"][first]
    return np.bincount(cells, minlength=n * R.N_OUTCOMES).reshape(n, R.N_OUTCOMES).astype(np.float64)


@functools.lru_cache(maxsize=1)
def multiset_weights() -> np.ndarray:
    """``W[m, o]``: orderings of value multiset ``m`` (nondecreasing-sequence order) ending in ``o``."""
    table = _sequence_table()
    n = table["n_multisets"]
    cells = table["index"].astype(np.int64) * R.N_OUTCOMES + table["outcome"]
    weights = np.bincount(cells, minlength=n * R.N_OUTCOMES)
    return weights.reshape(n, R.N_OUTCOMES).astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _row_products_kernel(start, stop, rows, columns, out):
    """``out[i] = rows[i] @ columns`` for the rows ``start..stop-1``, each entry summed over the rows of
    ``columns`` in order, so that a row's result is the same bits whatever the batch around it."""
    k = columns.shape[1]
    acc = np.empty(k)
    for i in range(start, stop):
        acc[:] = 0.0
        for h in range(columns.shape[0]):
            p = rows[i, h]
            if p != 0.0:  # most hand classes are impossible for a given composition's next hand
                for j in range(k):
                    acc[j] += p * columns[h, j]
        for j in range(k):
            out[i, j] = acc[j]


def row_products(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``rows @ columns`` (``(n, m) @ (m, k)``), computed row by row in a fixed order: the EV of a
    composition is then the same bits alone, in a single env, or among the thousands of a vector env
    (BLAS's product is not: its blocking, and so its rounding, depends on the batch's shape)."""
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    columns = np.ascontiguousarray(columns, dtype=np.float64)
    out = np.empty((rows.shape[0], columns.shape[1]))
    run_rows(_row_products_kernel, rows.shape[0], 64, rows, columns, out)
    return out


@numba.njit(cache=True, nogil=True)
def _counts_usable(flat, most, least):
    """Whether every count of ``flat`` ``(n, 13)`` (C-contiguous) is in ``0..most`` and every row
    holds at least ``least`` cards: the checks of :func:`validate_composition` in two passes free of
    branches, which compile to vector code (a loop that stopped at the first bad count did not: 85
    us for a Kelly bettor's 5,000 compositions, against 58 now)."""
    values = flat.reshape(-1)
    signs = 0  # negative once a count is negative or above most
    for i in range(values.shape[0]):
        count = values[i]
        signs |= count | (most - count)
    if signs < 0:
        return False
    short = False
    for i in range(flat.shape[0]):
        total = 0
        for r in range(flat.shape[1]):
            total += flat[i, r]
        short |= total < least
    return not short


def validate_composition(composition: np.ndarray | list, copy: bool = True) -> np.ndarray:
    """Check a composition (counts by rank A..K, last axis of length 13) and return it as int64.

    ``copy=False``: an int64 array that passes is returned itself, not copied (for a caller that only
    reads it, at once: the EV bound of a Kelly bettor's 5,000 tables saves a 0.5 MB copy a hand)."""
    array = np.asarray(composition)
    if array.ndim == 0 or array.shape[-1] != R.N_RANKS:
        raise ValueError(
            f"composition must have 13 counts by rank ({', '.join(R.RANKS)}) on its last "
            f"axis; got shape {array.shape}"
        )
    # a Kelly bettor checks thousands of counts before every hand: one compiled pass where they are
    # int64 and usable (the engine's), and the checks below, with their messages, otherwise
    if (
        array.dtype == np.int64
        and array.size
        and array.flags.c_contiguous
        and _counts_usable(array.reshape(-1, R.N_RANKS), MAX_RANK_COUNT, MIN_CARDS)
    ):
        return array.copy() if copy else array
    if array.dtype.kind not in "iuf" or (array.dtype.kind == "f" and not np.all(array == np.round(array))):
        raise ValueError("composition counts must be whole numbers of cards")
    if array.size and (
        np.any(array > MAX_RANK_COUNT) if array.dtype.kind != "f" or np.all(np.isfinite(array)) else True
    ):
        raise ValueError(
            f"composition counts must be at most {MAX_RANK_COUNT:,} cards of a rank (larger "
            "counts overflow the exact calculators' 64-bit integers)"
        )
    array = array.astype(np.int64)
    if np.any(array < 0):
        raise ValueError("composition counts must be >= 0")
    if np.any(array.sum(axis=-1) < MIN_CARDS):
        raise ValueError(
            f"a composition must hold at least {MIN_CARDS} cards (a hand may use six); "
            f"got {int(array.sum(axis=-1).min())}"
        )
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
    progress.note_compiling(sys.modules[__name__])  # the first run compiles the walk
    comp = validate_composition(composition)
    if np.any(comp.sum(axis=-1) > MAX_EXACT_CARDS):
        raise ValueError(
            f"integer counts are exact for at most {MAX_EXACT_CARDS} cards; use "
            "outcome_probabilities for larger compositions"
        )
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
    columns = np.asarray(columns, dtype=np.float64)
    if columns.ndim != 2 or columns.shape[0] != R.N_OUTCOMES:
        raise ValueError(f"columns must have shape ({R.N_OUTCOMES}, k); got {columns.shape}")
    return multiset_expectations(composition, folded_weights(columns))


def folded_weights(columns: np.ndarray) -> np.ndarray:
    """The multiset weights folded with ``columns`` ``(6, k)``, as :func:`expectations` folds them:
    the weights of :func:`multiset_expectations` for those expectations."""
    return _float_weights() @ np.asarray(columns, dtype=np.float64)


def multiset_expectations(composition: np.ndarray | list, weights: np.ndarray) -> np.ndarray:
    """``sum_m weights[m, :] P(m)`` over the value multisets ``m`` of six cards (the rows of
    :func:`multiset_weights`, in its order), ``P(m)`` the chance of one ordering of ``m``: with the
    orderings of each multiset counted by some event (:func:`multiset_weights` counts them by
    outcome), the probability of that event. ``(..., k)`` for ``weights`` ``(n_multisets, k)``."""
    progress.note_compiling(sys.modules[__name__])  # the first run compiles the walk
    comp = validate_composition(composition)
    columns = np.asarray(weights, dtype=np.float64)
    flat = value_counts(comp).reshape(-1, 10).astype(np.float64)
    n = flat.shape[0]
    width = block_width(n)
    blocks = _blocks(_padded(flat, width), width)
    n_blocks = blocks.shape[0]
    out = np.empty((n_blocks, columns.shape[1], width))
    run_rows(_expectation_kernel, n_blocks, 2, blocks, columns, out)
    # a fresh C-contiguous array whatever the block width, so that products taken of it (the EVs: a
    # matrix product) take the same path, and give the same bits, for a batch of any size
    result = np.ascontiguousarray(out.transpose(0, 2, 1).reshape(n_blocks * width, columns.shape[1])[:n])
    result /= _falling6(comp.reshape(-1, R.N_RANKS).sum(axis=1))[:, None]
    return result.reshape(comp.shape[:-1] + (columns.shape[1],))


@functools.lru_cache(maxsize=1)
def _float_weights() -> np.ndarray:
    return multiset_weights().astype(np.float64)


def pair_probability(composition: np.ndarray | list) -> np.ndarray:
    """Probability that the first two cards of a hand have the same rank (player or banker pair):
    ``S2 / (N)_2`` (:func:`_ordered_pairs`)."""
    comp = validate_composition(composition).astype(np.float64)
    return _ordered_pairs(comp) / _falling(comp.sum(axis=-1), 2)


def pair_expected_value(pair: np.ndarray, pays: float) -> np.ndarray:
    """EV per unit staked of a pair bet paying ``pays``:1, from :func:`pair_probability`."""
    return pair * (pays + 1.0) - 1.0


@functools.lru_cache(maxsize=64)
def _paytable(rules: Rules) -> np.ndarray:
    table = rules.paytable()
    table.setflags(write=False)
    return table


ONE_COMPOSITION_MOST = 4096
"""The most cards of a rank (a thousand decks' worth) that the one-composition path prices (a single
env's step: :func:`expected_values` and the hand-class walk of one composition, one compiled call
each): up to it every sum it forms of the counts (the pair sums) is an exact integer, so that the
order of the sums (numpy's pairwise sums in the batched path, one by one in the compiled call)
cannot change a bit."""
_PAIR_COLUMNS = [R.BETS.index("player_pair"), R.BETS.index("banker_pair")]


def _one_composition(composition: np.ndarray | list) -> np.ndarray | None:
    """``composition`` as one valid int64 composition (13,) for the one-composition path, or None
    (not one, not int64, over :data:`ONE_COMPOSITION_MOST` or not valid: the batched path prices it,
    or names what is wrong)."""
    array = np.asarray(composition)
    if array.size != R.N_RANKS or array.dtype != np.int64 or not array.flags.c_contiguous:
        return None
    flat = array.reshape(1, R.N_RANKS)
    return flat[0] if _counts_usable(flat, ONE_COMPOSITION_MOST, MIN_CARDS) else None


def expected_values(composition: np.ndarray | list, rules: Rules | None = None) -> np.ndarray:
    """Exact EV per unit staked of each bet (:data:`pb_gym.rules.BETS` order) for the next hand.

    Shape ``(..., 7)``; negative is the house edge. Uses the payouts of ``rules`` (default
    :class:`Rules`); side bets are evaluated whether or not the table offers them.
    """
    rules = rules or Rules()
    one = _one_composition(composition)
    if one is not None:  # (out owns its memory, as below)
        out = np.empty(np.shape(composition)[:-1] + (len(R.BETS),))
        row = out.reshape(len(R.BETS))
        row[_PAIR_COLUMNS] = expected_values_one(
            one, _float_weights(), _paytable(rules), float(rules.pair_pays), row
        )
        return out
    probabilities = outcome_probabilities(composition)
    ev = row_products(probabilities.reshape(-1, R.N_OUTCOMES), rules.paytable())
    if probabilities.ndim != 2:  # (n, 7) stays the array that owns its memory (the env's info holds it)
        ev = ev.reshape(probabilities.shape[:-1] + (len(R.BETS),))
    pair = pair_probability(composition)
    for bet in ("player_pair", "banker_pair"):
        ev[..., R.BETS.index(bet)] = pair_expected_value(pair, rules.pair_pays)
    return ev


def best_positive(ev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The perfect-information bettor's choice, row by row of exact EVs ``(n, k)``: the column of the
    largest EV (``best``) and whether it is > 0 (``positive``: it bets only then, else sits out)."""
    best = ev.argmax(axis=1)
    return best, ev[np.arange(len(best)), best] > 0


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
    probabilities.update({f"outcome_{name}": float(p) for name, p in zip(R.OUTCOMES, prob, strict=True)})
    probabilities["pair"] = float(pair_probability(comp))
    ev = expected_values(comp, rules)
    return {
        "cards": int(comp.sum()),
        "probabilities": probabilities,
        "ev": {bet: float(x) for bet, x in zip(R.BETS, ev, strict=True)},
    }


def deals_of_six(cards: int) -> int:
    """``N (N-1) ... (N-5)``: the number of ordered 6-card deals from ``cards`` cards."""
    return math.perm(int(cards), 6)


# --------------------------------------------------------------------------------------------------
# Hand classes: the joint law of (totals, card counts, pair flags), for every bet of the catalog
# --------------------------------------------------------------------------------------------------
# A bet of the catalog (:mod:`pb_gym.catalog`) is a column over the 1,600 hand classes of
# :func:`pb_gym.rules.hand_class`. Its EV is ``P @ column`` with ``P`` the probability of each class, so
# the cost of pricing k bets is one walk over the multisets (as above) plus one small product: the walk
# is shared by every bet and grows with the number of grid cells it fills, not with the bets.
#
# The walk runs over card *values*, the pair flags over *ranks*. For values 1-9 a value is one rank, so
# two first cards of equal nonzero value are a pair. Four ranks (10, J, Q, K) share the value 0: given a
# value sequence, the ranks of its zero-valued cards are an ordered draw without replacement from the
# zero-valued cards of the shoe (exchangeability), so two of them share a rank with probability
# ``q1 = sum_r z_r (z_r - 1) / (Z (Z - 1))`` and two given pairs of them both share a rank with
# probability ``q2 = sum_{r,s} z_r (z_r - 1) (z_s - 2[r=s]) (z_s - 1 - 2[r=s]) / (Z)_4``. So each
# ordering of a multiset is filed under its value class and a *pair pattern* (each side's first two
# cards: different values / the same nonzero value / both zero-valued) and the pair flags follow from
# q1 and q2 in closed form, exactly, for integers as for floats.
N_VALUE_CLASSES = R.N_VALUE_CLASSES
"""Value classes (player total, banker total, player cards, banker cards): ``hand class // 4``."""
CLASS_CHUNK = 2048
"""Compositions per chunk of :func:`hand_class_expectations`: bounds its memory (26 MB a chunk)."""


value_class = R.value_class
"""The value class of finished hands (:func:`pb_gym.rules.value_class`)."""


@functools.lru_cache(maxsize=1)
def hand_class_weights() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sparse table the hand-class walk reads, built once: for multiset ``j`` (walk order), the
    entries ``indptr[j]:indptr[j + 1]`` of ``keys`` (``value_class * 9 + pair pattern``) and
    ``orderings`` (how many orderings of the multiset are dealt into that key). About 166,000 entries."""
    table = _sequence_table()
    n_multisets = table["n_multisets"]
    key = table["index"].astype(np.int64) * _KEYS + table["key"]
    unique, orderings = np.unique(key, return_counts=True)
    rows = unique // _KEYS
    indptr = np.searchsorted(rows, np.arange(n_multisets + 1)).astype(np.int64)
    return indptr, (unique % _KEYS).astype(np.int64), orderings.astype(np.int64)


@functools.lru_cache(maxsize=1)
def _float_class_weights() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`hand_class_weights` for the float walk, its indices unsigned: an index the compiler
    knows is not negative needs no wraparound check, and the walk's inner loop is those indices."""
    indptr, keys, orderings = hand_class_weights()
    return indptr.astype(np.uint32), keys.astype(np.uint32), orderings.astype(np.float64)


def _ordered_pairs(counts: np.ndarray) -> np.ndarray:
    """``S2 = sum_r n_r (n_r - 1)`` over the last axis (counts by rank): the ordered ways to deal two
    cards of equal rank. Integer in, integer out (exact)."""
    return (counts * (counts - 1)).sum(axis=-1)


def _pair_sums(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``S2`` (:func:`_ordered_pairs`) and ``S4 = sum_{r,s} n_r (n_r - 1) (n_s - 2[r=s]) (n_s - 1 -
    2[r=s])`` over the last axis (counts by rank): the ordered ways to deal one pair, and two pairs, of
    equal ranks. Integer in, integer out (exact)."""
    two = counts * (counts - 1)
    four = two * (counts - 2) * (counts - 3)
    s2 = _ordered_pairs(counts)
    return s2, s2 * s2 - (two * two).sum(axis=-1) + four.sum(axis=-1)


def _falling(n: np.ndarray, k: int) -> np.ndarray:
    out = np.ones_like(n)
    for i in range(k):
        out = out * (n - i)
    return out


def pair_probabilities(composition: np.ndarray | list) -> np.ndarray:
    """Probabilities of the pair flags of the next hand, ``(..., 4)``: player pair, banker pair, both,
    either (the first two cards of a hand of the same rank), in closed form by exchangeability:
    ``P(pair) = S2 / (N)_2`` and ``P(both) = S4 / (N)_4`` with the sums of :func:`_pair_sums`."""
    comp = validate_composition(composition).astype(np.float64)
    n = comp.sum(axis=-1)
    s2, s4 = _pair_sums(comp)
    single = s2 / _falling(n, 2)
    both = s4 / _falling(n, 4)
    return np.stack([single, single, both, 2 * single - both], axis=-1)


def _zero_pair_probabilities(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    zero_ranks = ranks[:, R.RANK_VALUES == 0].astype(np.float64)
    z = zero_ranks.sum(axis=1)
    s2, s4 = _pair_sums(zero_ranks)
    with np.errstate(divide="ignore", invalid="ignore"):
        q1 = np.where(z >= 2, s2 / np.maximum(_falling(z, 2), 1), 0.0)
        q2 = np.where(z >= 4, s4 / np.maximum(_falling(z, 4), 1), 0.0)
    return q1, q2


def hand_class_probabilities(composition: np.ndarray | list) -> np.ndarray:
    """Probability of each hand class (:func:`pb_gym.rules.hand_class`) of the next hand, ``(..., 1600)``.

    Exact (in float64) for any composition, pair flags included (jointly with the totals), vectorized
    and parallel over any leading axes of ``composition`` (counts by rank), in chunks of
    :data:`CLASS_CHUNK` compositions so memory stays bounded. For many compositions and a few bets
    prefer :func:`hand_class_expectations`, which never holds the 1,600 columns of all of them.
    """
    progress.note_compiling(sys.modules[__name__])  # the first run compiles the walk
    comp = validate_composition(composition)
    flat = comp.reshape(-1, R.N_RANKS)
    out = np.empty((flat.shape[0], R.N_HAND_CLASSES))
    for start in range(0, flat.shape[0], CLASS_CHUNK):
        out[start : start + CLASS_CHUNK] = _hand_class_chunk(flat[start : start + CLASS_CHUNK])
    return out.reshape(comp.shape[:-1] + (R.N_HAND_CLASSES,))


def hand_class_expectations(composition: np.ndarray | list, columns: np.ndarray) -> np.ndarray:
    """Expectations of functions of the hand class, ``sum_h P(h) * columns[h, :]``, shape ``(..., k)``.

    ``columns`` is ``(1600, k)``, e.g. :func:`pb_gym.catalog.pay_matrix` (then the result is the EV
    per unit of each bet). One walk per composition serves every column.
    """
    comp = validate_composition(composition)
    columns = np.asarray(columns, dtype=np.float64)
    if columns.ndim != 2 or columns.shape[0] != R.N_HAND_CLASSES:
        raise ValueError(f"columns must have shape ({R.N_HAND_CLASSES}, k); got {columns.shape}")
    flat = comp.reshape(-1, R.N_RANKS)
    out = np.empty((flat.shape[0], columns.shape[1]))
    for start in range(0, flat.shape[0], CLASS_CHUNK):
        out[start : start + CLASS_CHUNK] = row_products(
            _hand_class_chunk(flat[start : start + CLASS_CHUNK]), columns
        )
    return out.reshape(comp.shape[:-1] + (columns.shape[1],))


def _hand_class_chunk(ranks: np.ndarray) -> np.ndarray:
    n = ranks.shape[0]
    if n == 1 and _counts_usable(ranks, ONE_COMPOSITION_MOST, MIN_CARDS):
        one = np.empty((1, R.N_HAND_CLASSES))
        hand_classes_one(ranks[0], *_float_class_weights(), one)
        return one
    width = block_width(n)
    ranks = _padded(ranks, width)
    n_blocks = len(ranks) // width
    blocks = _blocks(value_counts(ranks).astype(np.float64), width)
    scale = (1.0 / _falling6(ranks.sum(axis=1))).reshape(n_blocks, width)
    q1, q2 = (q.reshape(n_blocks, width) for q in _zero_pair_probabilities(ranks))
    out = np.empty((n, R.N_HAND_CLASSES))
    run_rows(_class_probabilities_kernel, n_blocks, 1, blocks, scale, q1, q2, *_float_class_weights(), out)
    return out


def value_class_probabilities(composition: np.ndarray | list) -> np.ndarray:
    """Probability of each value class (:func:`value_class`: totals and card counts, pair flags summed
    out) of the next hand, ``(..., 400)``."""
    probabilities = hand_class_probabilities(composition)
    return probabilities.reshape(probabilities.shape[:-1] + (N_VALUE_CLASSES, 4)).sum(axis=-1)


def hand_class_counts(composition: np.ndarray | list) -> np.ndarray:
    """Exact integer counts of ordered 6-card deals ending in each hand class, ``(1600,)`` int64, for
    one composition of at most 416 cards (the published combination counts are of this kind).

    The counts sum to ``N (N-1) ... (N-5)``. The pair flags are split exactly: a count filed under two
    zero-valued first cards holds the factor ``(Z)_2`` (or ``(Z)_4``), divided out before multiplying
    by the ways ``S2`` (``S4``) of dealing rank pairs among them."""
    comp = validate_composition(composition)
    if comp.ndim != 1:
        raise ValueError("hand_class_counts takes one composition (13 counts by rank)")
    if comp.sum() > MAX_EXACT_CARDS:
        raise ValueError(
            f"integer counts are exact for at most {MAX_EXACT_CARDS} cards; use "
            "hand_class_probabilities for larger compositions"
        )
    flat_sums = np.zeros((1, _KEYS), dtype=np.int64)
    _class_counts_kernel(0, 1, value_counts(comp)[None, :], *hand_class_weights(), flat_sums)
    sums = flat_sums.reshape(N_VALUE_CLASSES, _SIDE_PATTERNS, _SIDE_PATTERNS)
    zero_ranks = comp[R.RANK_VALUES == 0]
    z = int(zero_ranks.sum())
    s2, s4 = (int(x) for x in _pair_sums(zero_ranks))
    d2, d4 = math.perm(z, 2), math.perm(z, 4)

    def share(count: np.ndarray, ways: int, deals: int) -> np.ndarray:
        """count * ways / deals, exact: every count filed there is a multiple of ``deals``."""
        if deals == 0:
            return np.zeros_like(count)
        if np.any(count % deals):
            raise AssertionError("a zero-valued pair count is not a multiple of (Z)_k")
        return count // deals * ways

    out = np.zeros((N_VALUE_CLASSES, 2, 2), dtype=np.int64)
    for sp in range(_SIDE_PATTERNS):
        for sb in range(_SIDE_PATTERNS):
            count = sums[:, sp, sb]
            if sp == 2 and sb == 2:
                both = share(count, s4, d4)
                one = share(count, s2, d2)
                out[:, 1, 1] += both
                out[:, 1, 0] += one - both
                out[:, 0, 1] += one - both
                out[:, 0, 0] += count - 2 * one + both
                continue
            # at most one side is zero-valued here, so the sides are independent given the values
            if sp == 2:
                paired = share(count, s2, d2)
                out[:, 1, int(sb == 1)] += paired
                out[:, 0, int(sb == 1)] += count - paired
            elif sb == 2:
                paired = share(count, s2, d2)
                out[:, int(sp == 1), 1] += paired
                out[:, int(sp == 1), 0] += count - paired
            else:
                out[:, int(sp == 1), int(sb == 1)] += count
    return out.reshape(R.N_HAND_CLASSES)


def value_class_counts(composition: np.ndarray | list) -> np.ndarray:
    """Exact integer counts of ordered 6-card deals ending in each value class, ``(400,)`` int64."""
    return hand_class_counts(composition).reshape(N_VALUE_CLASSES, 4).sum(axis=1)
