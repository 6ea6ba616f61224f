"""Exact odds of every bet given known cards at dealing positions: exposed cards and edge sorting.

Positions are numbered 1-6 in dealing order: 1 player, 2 banker, 3 player, 4 banker, then 5 and 6 the
next two cards out of the shoe, whoever receives them (the usual six-card convention of
:mod:`pb_gym.exact`: a card a hand does not use is still "dealt" and ignored). A position may be known
exactly (one rank) or only to belong to a set of ranks, as an edge sorter knows that the next card is
"high" or "low".

Method. Given the composition ``c`` (counts by rank), the probability of a sequence of six cards is the
product of falling counts ``prod (c_x - k) / (N)_6`` whatever the order in which they are taken
(exchangeability). Positions 1-4 (which settle the pair bets) are enumerated by rank; positions 5 and 6
by rank when they are constrained and by value otherwise, taken after the ranked positions so that each
falling count is of a known group of cards. Every sequence the constraints allow is dealt once through
the rule tables (:func:`pb_gym.exact.deal_value_sequences`) into its hand class
(:func:`pb_gym.rules.hand_class`); the hand-class law is the normalized sum of the sequence
probabilities, and the EV of any catalog bet is its product with the bet's column
(:func:`pb_gym.catalog.pay_matrix`). With no constraint this is the law of :mod:`pb_gym.exact`.

For the main bets the value of a card is all that matters, and an edge sorter's question ("which split
of the ranks into two classes gives the best edge?") asks the same table many times:
:func:`value_prefix_table` aggregates, for one composition, the EV contributions of banker, player and
tie over the last two cards for each of the 10^4 value prefixes of the first four, so that every split
of the values is priced from that table in microseconds (:func:`sorted_cards_edge`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.rules import Rules

POSITIONS = (1, 2, 3, 4, 5, 6)
"""Dealing positions: player, banker, player, banker, then the next two cards out of the shoe."""
RANK_LETTERS = "A23456789TJQK"
"""One letter per rank index (``T`` is the ten), the spelling of :func:`parse_known`."""
MAIN_BET_NAMES = R.MAIN_BETS
"""The bets an exposed-card bettor chooses among in the published analyses: banker, player, tie."""

Known = Mapping[int, Iterable[int]]
"""Known cards: position (1-6) -> the rank indices (0-12, A..K) the card at that position may be."""


def parse_known(text: str) -> dict[int, tuple[int, ...]]:
    """Parse ``POS=RANKS[,POS=RANKS...]``, e.g. ``1=9,4=T`` or ``1=6789`` (a set of ranks).

    Ranks are the letters of :data:`RANK_LETTERS` (``A``, ``2``-``9``, ``T``, ``J``, ``Q``, ``K``; ``10``
    is accepted for the ten). Returns position -> sorted rank indices. Raises ``ValueError`` naming the
    bad part and the allowed values.
    """
    allowed = "POS=RANKS with POS one of 1-6 and RANKS letters from A,2-9,T,J,Q,K (e.g. 1=9 or 1=6789)"
    parts = [part.strip() for part in str(text).split(",") if part.strip()]
    if not parts:
        raise ValueError(f"--known: nothing given; allowed: {allowed}")
    known: dict[int, tuple[int, ...]] = {}
    for part in parts:
        position_text, sep, ranks_text = part.partition("=")
        position_text, ranks_text = position_text.strip(), ranks_text.strip().upper().replace("10", "T")
        if not sep or position_text not in {str(p) for p in POSITIONS}:
            raise ValueError(f"--known: bad position in {part!r}; allowed: {allowed}")
        position = int(position_text)
        if position in known:
            raise ValueError(f"--known: position {position} given twice; allowed: {allowed}")
        if not ranks_text or any(letter not in RANK_LETTERS for letter in ranks_text):
            raise ValueError(f"--known: bad ranks in {part!r}; allowed: {allowed}")
        known[position] = tuple(sorted({RANK_LETTERS.index(letter) for letter in ranks_text}))
    return known


def _normalized(known: Known | None) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Known cards as a sorted, hashable tuple; checks positions and ranks."""
    out = []
    for position, ranks in (known or {}).items():
        if int(position) not in POSITIONS:
            raise ValueError(f"known: position {position!r} is not allowed; allowed: 1-6")
        ranks = tuple(sorted({int(r) for r in ranks}))
        if not ranks or ranks[0] < 0 or ranks[-1] >= R.N_RANKS:
            raise ValueError(
                f"known: position {position} needs one or more rank indices in 0-12 (A..K); got {ranks!r}"
            )
        out.append((int(position), ranks))
    return tuple(sorted(out))


@functools.lru_cache(maxsize=256)
def _enumeration(known: tuple[tuple[int, tuple[int, ...]], ...]) -> dict[str, np.ndarray]:
    """Every sequence the known cards allow: its hand class and, per factor of its probability, the
    group of cards drawn from (a rank 0-12 or a value 13-22 of the extended counts) and how many of that
    group were drawn before it."""
    allowed = dict(known)
    ranked = [p for p in POSITIONS if p <= 4 or p in allowed]  # enumerated by rank, taken first
    valued = [p for p in POSITIONS if p not in ranked]  # 5 and 6 when unknown: by value
    axes = [np.array(allowed.get(p, range(R.N_RANKS)), dtype=np.int64) for p in ranked]
    axes += [np.arange(10, dtype=np.int64) for _ in valued]
    grids = np.meshgrid(*axes, indexing="ij")
    symbols = np.stack([g.ravel() for g in grids])  # (6, n): ranks for `ranked`, values for `valued`
    n_ranked = len(ranked)
    values = np.empty_like(symbols)
    values[:n_ranked] = R.RANK_VALUES[symbols[:n_ranked]]
    values[n_ranked:] = symbols[n_ranked:]
    groups = symbols.copy()
    groups[n_ranked:] += R.N_RANKS  # value groups follow the 13 ranks in the extended counts
    drawn_before = np.zeros_like(symbols)
    for i in range(6):
        for j in range(i):
            if i < n_ranked:  # a rank: earlier cards of the same rank
                drawn_before[i] += symbols[j] == symbols[i]
            else:  # a value: earlier cards of the same value, ranked or valued
                drawn_before[i] += values[j] == values[i]
    order = ranked + valued  # symbols row k holds position order[k]
    by_position = {p: k for k, p in enumerate(order)}
    dealt = np.stack([values[by_position[p]] for p in POSITIONS])
    hand = exact.deal_value_sequences(dealt)
    player_pair = symbols[by_position[1]] == symbols[by_position[3]]
    banker_pair = symbols[by_position[2]] == symbols[by_position[4]]
    classes = R.hand_class(
        hand["player_total"],
        hand["banker_total"],
        hand["player_ncards"],
        hand["banker_ncards"],
        player_pair,
        banker_pair,
    )
    return {"groups": groups, "drawn_before": drawn_before, "classes": classes}


def _extended_counts(composition: np.ndarray) -> np.ndarray:
    """Counts by rank (13) then by value (10): the groups an enumerated card is drawn from."""
    return np.concatenate([composition, exact.value_counts(composition)], axis=-1)


def _validated(composition: np.ndarray | Sequence) -> np.ndarray:
    return exact.validate_composition(np.asarray(composition))


def known_probability(composition: np.ndarray | Sequence, known: Known) -> np.ndarray:
    """Probability that the known cards are as given (every position's card in its set), ``(...)``."""
    comp = _validated(composition)
    flat = comp.reshape(-1, R.N_RANKS).astype(np.float64)
    table = _enumeration(_normalized(known))
    out = np.array([_sequence_probabilities(row, table).sum() for row in flat])
    return out.reshape(comp.shape[:-1])


def _sequence_probabilities(counts: np.ndarray, table: dict[str, np.ndarray]) -> np.ndarray:
    extended = _extended_counts(counts)
    total = counts.sum()
    p = np.ones(table["groups"].shape[1])
    for i in range(6):
        p *= np.maximum(extended[table["groups"][i]] - table["drawn_before"][i], 0.0) / (total - i)
    return p


def hand_class_probabilities(composition: np.ndarray | Sequence, known: Known | None = None) -> np.ndarray:
    """The law of the hand class (:func:`pb_gym.rules.hand_class`) given the known cards, ``(..., 1600)``.

    ``composition`` is counts by rank (any leading axes: each row is priced on its own). Raises
    ``ValueError`` when the known cards are impossible for a composition (probability zero).
    """
    comp = _validated(composition)
    table = _enumeration(_normalized(known))
    flat = comp.reshape(-1, R.N_RANKS).astype(np.float64)
    out = np.empty((flat.shape[0], R.N_HAND_CLASSES))
    for row in range(flat.shape[0]):
        p = _sequence_probabilities(flat[row], table)
        mass = p.sum()
        if mass <= 0:
            raise ValueError("known: these cards cannot be dealt from the composition (probability 0)")
        out[row] = np.bincount(table["classes"], weights=p, minlength=R.N_HAND_CLASSES) / mass
    return out.reshape(comp.shape[:-1] + (R.N_HAND_CLASSES,))


def expected_values(
    composition: np.ndarray | Sequence,
    known: Known | None = None,
    bets: Iterable[str] | str | None = None,
    rules: Rules | None = None,
) -> np.ndarray:
    """Exact EV per unit of each bet given the known cards, ``(..., k)``.

    ``bets`` are catalog names (default: the seven spots of :data:`pb_gym.rules.BETS`), paid as
    ``rules`` says (default :class:`Rules`).
    """
    from pb_gym import catalog

    columns = catalog.pay_matrix(R.BETS if bets is None else bets, rules)
    return hand_class_probabilities(composition, known) @ columns


# --------------------------------------------------------------------------------------------------
# The main bets by value: the published known-card and edge-sorting figures
# --------------------------------------------------------------------------------------------------
def value_prefix_table(composition: np.ndarray | Sequence, rules: Rules | None = None) -> np.ndarray:
    """``T[v1, v2, v3, v4, b]``: the sum over the last two cards of P(sequence) x the net win of main bet
    ``b`` (banker, player, tie), for the values v1..v4 of cards 1-4; shape ``(10, 10, 10, 10, 3)``.

    Summing ``T`` over the prefixes in an event and dividing by the event's probability (the same sum
    of :func:`value_prefix_probabilities`) gives the EV of each main bet given that event.
    """
    comp = _validated(composition)
    if comp.ndim != 1:
        raise ValueError("value_prefix_table takes one composition (13 counts by rank)")
    rules = rules or Rules()
    seq = np.indices((10,) * 6, dtype=np.int64).reshape(6, -1)
    p = _value_sequence_probabilities(exact.value_counts(comp).astype(np.float64), seq)
    outcome = exact.deal_value_sequences(seq)["outcome"]
    pay = rules.paytable()[:, [R.BETS.index(b) for b in MAIN_BET_NAMES]]
    contribution = p[:, None] * pay[outcome]
    return contribution.reshape((10,) * 4 + (100, 3)).sum(axis=4)


def _value_sequence_probabilities(values: np.ndarray, seq: np.ndarray) -> np.ndarray:
    total = values.sum()
    p = np.ones(seq.shape[1])
    for i in range(seq.shape[0]):
        before = np.zeros(seq.shape[1])
        for j in range(i):
            before += seq[j] == seq[i]
        p *= np.maximum(values[seq[i]] - before, 0.0) / (total - i)
    return p


def value_prefix_probabilities(composition: np.ndarray | Sequence) -> np.ndarray:
    """``P[v1, v2, v3, v4]``: the probability of the values of cards 1-4, shape ``(10, 10, 10, 10)``."""
    comp = _validated(composition)
    seq = np.indices((10,) * 4, dtype=np.int64).reshape(4, -1)
    return _value_sequence_probabilities(exact.value_counts(comp).astype(np.float64), seq).reshape((10,) * 4)


def best_bet_edge(ev_sums: np.ndarray) -> float:
    """The edge per hand of betting the best main bet when it is positive: ``sum max(0, max_b S_b)``
    over the rows of ``ev_sums`` (each an event's probability x its conditional EVs)."""
    return float(np.maximum(ev_sums.max(axis=-1), 0.0).sum())


def known_value_edge(table: np.ndarray, position: int) -> float:
    """The edge per hand of knowing the value of the card at ``position`` (1-6) and betting the best
    main bet (banker, player, tie) when its EV is positive, from a :func:`value_prefix_table`.

    Positions 5 and 6 are not in the table's prefix; use :func:`known_card_edge` for them.
    """
    if position not in (1, 2, 3, 4):
        raise ValueError(f"known_value_edge: position {position!r}; allowed: 1-4 (5-6: known_card_edge)")
    axes = tuple(a for a in range(4) if a != position - 1)
    return best_bet_edge(table.sum(axis=axes))


def known_card_edge(composition: np.ndarray | Sequence, position: int, rules: Rules | None = None) -> dict:
    """Knowing the rank of the card at ``position`` (1-6): the edge per hand of betting the best main
    bet when positive, the chance of a positive bet and, per rank, P(rank) and the conditional EVs."""
    comp = _validated(composition)
    if comp.ndim != 1:
        raise ValueError("known_card_edge takes one composition (13 counts by rank)")
    n = comp.sum()
    edge = 0.0
    bet_frequency = 0.0
    by_rank = {}
    for rank in range(R.N_RANKS):
        if comp[rank] == 0:
            continue
        probability = comp[rank] / n  # exchangeability: any position's card is a uniform draw
        ev = expected_values(comp, {position: [rank]}, MAIN_BET_NAMES, rules)
        best = float(ev.max())
        by_rank[R.RANKS[rank]] = {
            "probability": float(probability),
            "ev": dict(zip(MAIN_BET_NAMES, map(float, ev), strict=True)),
        }
        if best > 0:
            edge += probability * best
            bet_frequency += probability
    return {"position": position, "edge": edge, "bet_frequency": bet_frequency, "by_rank": by_rank}


def sorted_cards_edge(table: np.ndarray, high_values: Iterable[int], positions: Sequence[int]) -> float:
    """Edge per hand when the cards at ``positions`` (a subset of 1-4) are each known to be "high"
    (value in ``high_values``) or "low", betting the best main bet when positive."""
    high = np.zeros(10, dtype=bool)
    high[list(high_values)] = True
    if not set(positions) <= {1, 2, 3, 4}:
        raise ValueError(f"sorted_cards_edge: positions {positions!r}; allowed: a subset of 1-4")
    summed = sorted_classes(table, high, positions)
    return best_bet_edge(summed.reshape(-1, summed.shape[-1]))


def sorted_classes(table: np.ndarray, high: np.ndarray, positions: Sequence[int]) -> np.ndarray:
    """``table`` (over the values of the first four cards, then any axes of its own) summed over the
    positions not in ``positions`` (a subset of 1-4), and each sorted position's 10 values grouped
    into its 2 classes, low then high (``high``: ``(10,)`` bool, the high values)."""
    summed = table.sum(axis=tuple(a for a in range(4) if a + 1 not in positions))
    for axis in range(len(positions)):
        summed = np.stack(
            [
                np.compress(~high, summed, axis=axis).sum(axis=axis),
                np.compress(high, summed, axis=axis).sum(axis=axis),
            ],
            axis=axis,
        )
    return summed


def value_splits() -> list[tuple[int, ...]]:
    """Every split of the ten values into two non-empty classes, each once (511): the class holding
    value 9 is given (the other class is its complement)."""
    rest = range(9)
    return [
        tuple(sorted(set(chosen) | {9})) for k in range(0, 9) for chosen in itertools.combinations(rest, k)
    ]


def best_split(table: np.ndarray, positions: Sequence[int] = (1, 2, 3, 4)) -> tuple[tuple[int, ...], float]:
    """The split of the values (a class and its complement) with the best :func:`sorted_cards_edge`."""
    best = max(value_splits(), key=lambda split: sorted_cards_edge(table, split, positions))
    return best, sorted_cards_edge(table, best, positions)


# --------------------------------------------------------------------------------------------------
# The first card's class, vectorized: the exact EVs an edge-sorting environment prices
# --------------------------------------------------------------------------------------------------
FIRST_CARD_HIGH_RANKS = (5, 6, 7, 8)
"""The edge sorter's "high" ranks (indices of 6, 7, 8, 9): the sorted class of ``first_card_class``."""


def first_card_class_values(
    composition: np.ndarray | Sequence,
    high_ranks: Sequence[int] = FIRST_CARD_HIGH_RANKS,
    rules: Rules | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact EV of each of the seven spots (:data:`pb_gym.rules.BETS`) given that the first card of
    the hand is in ``high_ranks`` and given that it is not, for many compositions at once.

    Returns ``(probability, ev)``: P(high) ``(...,)`` and the EVs ``(..., 2, 7)`` (index 0 low, 1
    high; NaN for a class that cannot occur). ``high_ranks`` must hold whole values (the four ten
    ranks together or none of them): the outcome classes by the walk of :mod:`pb_gym.exact` over the
    value multisets, each weighted by its orderings whose first card is high
    (:func:`pb_gym.exact.first_value_weights`; the low class is the full law minus it), the pair bets
    from the counts (the player pair needs card 3 of card 1's rank; the banker pair is card 1 removed).
    The same figures as :func:`expected_values` with ``{1: high_ranks}`` and its complement (tested),
    thousands of times faster.
    """
    rules = rules or Rules()
    comp = _validated(composition)
    ranks = sorted({int(r) for r in high_ranks})
    high_values = np.zeros(10, dtype=np.bool_)
    high_values[R.RANK_VALUES[ranks]] = True
    if sorted(int(r) for r in np.flatnonzero(high_values[R.RANK_VALUES])) != ranks:
        raise ValueError(
            f"high_ranks={tuple(high_ranks)!r}: allowed: whole values (all of 10, J, Q, K or none)"
        )
    flat = comp.reshape(-1, R.N_RANKS).astype(np.float64)
    weights = exact.first_value_weights(tuple(int(v) for v in np.flatnonzero(high_values)))
    both = exact.multiset_expectations(flat, np.concatenate([weights, exact.multiset_weights()], axis=1))
    joint, law = both[:, : R.N_OUTCOMES], both[:, R.N_OUTCOMES :]  # one walk: the high class, all
    n = flat.sum(axis=1)
    in_high = np.zeros(R.N_RANKS, dtype=bool)
    in_high[ranks] = True
    c = flat
    pairs_all = (c * (c - 1)).sum(axis=1)
    player_high = (c * (c - 1) * in_high).sum(axis=1) / (n * (n - 1))
    banker_high = (c * in_high * (pairs_all[:, None] - 2 * (c - 1))).sum(axis=1) / (n * (n - 1) * (n - 2))
    pair_all = pairs_all / (n * (n - 1))
    probability = (c * in_high).sum(axis=1) / n
    by_class = np.stack([law - joint, joint], axis=1)  # (n, 2, outcomes): P(class and outcome)
    chance = np.stack([1.0 - probability, probability], axis=1)
    pairs = np.stack(
        [
            np.stack([pair_all - player_high, player_high], 1),
            np.stack([pair_all - banker_high, banker_high], 1),
        ],
        axis=2,
    )  # (n, class, player/banker pair): P(class and pair)
    with np.errstate(invalid="ignore", divide="ignore"):
        ev = (by_class @ rules.paytable()) / chance[:, :, None]
        pair_p = pairs / chance[:, :, None]
    for k, bet in enumerate(("player_pair", "banker_pair")):
        ev[:, :, R.BETS.index(bet)] = exact.pair_expected_value(pair_p[:, :, k], rules.pair_pays)
    return probability.reshape(comp.shape[:-1]), ev.reshape(comp.shape[:-1] + (2, R.N_BETS))


__all__ = [
    "FIRST_CARD_HIGH_RANKS",
    "MAIN_BET_NAMES",
    "POSITIONS",
    "RANK_LETTERS",
    "best_bet_edge",
    "best_split",
    "expected_values",
    "first_card_class_values",
    "hand_class_probabilities",
    "known_card_edge",
    "known_probability",
    "known_value_edge",
    "parse_known",
    "sorted_cards_edge",
    "sorted_classes",
    "value_prefix_probabilities",
    "value_prefix_table",
    "value_splits",
]
