"""The vectorized shoe engine: N independent tables, one hand at each per call.

Design (after EnvPool / pgx): the whole state of every table is a handful of arrays in a
:class:`ShoeState`; :func:`deal` is a state transition that deals one hand at every table and returns a
:class:`HandResult` of per-table arrays; :func:`settle` turns stakes per bet spot into net wins. The hot
loop is compiled with numba (``parallel=True``, one iteration per table) because a hand is a short chain
of data-dependent branches (naturals, third cards, the tableau) that numpy can only express as many
full-array passes; compiled, it deals tens of millions of hands per second on two cores.

The state arrays are updated in place (as numpy's ``out=`` arguments are) and the same state object is
returned; use :meth:`ShoeState.copy` to branch a state.

Shoe conventions (see :class:`pb_gym.rules.Rules`): each shoe is shuffled with the table's own random
stream, the burn rule is applied, and when the cut card has come out the shoe is reshuffled before the
next hand (after one more hand if ``hand_after_cut``). Counts by rank are kept both of the cards really
left in the shoe (``counts``) and of the cards the players have not seen (``unseen``: the shoe plus the
face-down burned cards), which is what a card counter can know.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Sequence

import numba
import numpy as np

from pb_gym import rules as R
from pb_gym.rules import Rules

_U64 = np.uint64
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53


@numba.njit(inline="always")
def _next_u64(rng: np.ndarray, t: int) -> np.uint64:
    """splitmix64: one table's counter-based stream (explicit state, deterministic in parallel)."""
    z = rng[t] + _GOLDEN
    rng[t] = z
    z = (z ^ (z >> _U64(30))) * _MIX1
    z = (z ^ (z >> _U64(27))) * _MIX2
    return z ^ (z >> _U64(31))


@numba.njit(inline="always")
def _below(rng: np.ndarray, t: int, n: int) -> int:
    """A uniform integer in [0, n) (53-bit float method: bias below 1e-13 for a shoe's size)."""
    return int(float(_next_u64(rng, t) >> _U64(11)) * _TO_UNIT * n)


@numba.njit(cache=True)
def _new_shoe(t, shoe, position, counts, unseen, rng, full_counts, start, burn, burn_counts):
    """Shuffle the cards below ``start`` of table ``t`` (cards above are a stacked top), then burn."""
    n_cards = shoe.shape[1]
    if start == 0:
        k = 0
        for r in range(13):
            for _ in range(full_counts[r]):
                shoe[t, k] = r + 1
                k += 1
    # Fisher-Yates over positions start..n_cards-1
    for i in range(n_cards - 1, start, -1):
        j = start + _below(rng, t, i - start + 1)
        tmp = shoe[t, i]
        shoe[t, i] = shoe[t, j]
        shoe[t, j] = tmp
    for r in range(13):
        counts[t, r] = full_counts[r]
        unseen[t, r] = full_counts[r]
    pos = 0
    if burn:
        first = shoe[t, 0] - 1
        counts[t, first] -= 1
        unseen[t, first] -= 1  # turned face up: seen
        pos = 1
        for _ in range(burn_counts[first]):
            counts[t, shoe[t, pos] - 1] -= 1  # burned face down: gone, but not seen
            pos += 1
    position[t] = pos


def _deal_loop(active, shoe, position, counts, unseen, hands_in_shoe, shoes_started, cut_hands, rng,
                 cut_position, hand_after_cut, burn, full_counts, burn_counts, card_values,
                 player_draws, banker_tableau, outcome_table, outcome_winner,
                 player_cards, banker_cards, player_total, banker_total, player_ncards,
                 banker_ncards, outcome, winner, natural, player_pair, banker_pair, shuffled):
    n = shoe.shape[0]
    for t in numba.prange(n):
        if not active[t]:  # a table sitting this hand out: untouched state, an empty result row
            for k in range(3):
                player_cards[t, k] = 0
                banker_cards[t, k] = 0
            player_total[t] = 0
            banker_total[t] = 0
            player_ncards[t] = 0
            banker_ncards[t] = 0
            outcome[t] = 0
            winner[t] = 0
            natural[t] = False
            player_pair[t] = False
            banker_pair[t] = False
            shuffled[t] = False
            continue
        # Between hands: reshuffle once the cut card has come out (one more hand first if configured).
        reshuffle = False
        if position[t] >= cut_position:
            if hand_after_cut and cut_hands[t] == 0:
                cut_hands[t] = 1
            else:
                reshuffle = True
        if reshuffle:
            _new_shoe(t, shoe, position, counts, unseen, rng, full_counts, 0, burn, burn_counts)
            hands_in_shoe[t] = 0
            shoes_started[t] += 1
            cut_hands[t] = 0
        shuffled[t] = reshuffle
        pos = position[t]
        p1 = shoe[t, pos]
        b1 = shoe[t, pos + 1]
        p2 = shoe[t, pos + 2]
        b2 = shoe[t, pos + 3]
        pos += 4
        pt = (card_values[p1] + card_values[p2]) % 10
        bt = (card_values[b1] + card_values[b2]) % 10
        p3 = 0
        b3 = 0
        if pt < 8 and bt < 8:  # no natural: the drawing rules apply
            column = 10
            if player_draws[pt]:
                p3 = shoe[t, pos]
                pos += 1
                column = card_values[p3]
                pt = (pt + column) % 10
            if banker_tableau[bt, column]:
                b3 = shoe[t, pos]
                pos += 1
                bt = (bt + card_values[b3]) % 10
        position[t] = pos
        hands_in_shoe[t] += 1
        pn = 3 if p3 != 0 else 2
        bn = 3 if b3 != 0 else 2
        player_cards[t, 0] = p1
        player_cards[t, 1] = p2
        player_cards[t, 2] = p3
        banker_cards[t, 0] = b1
        banker_cards[t, 1] = b2
        banker_cards[t, 2] = b3
        for card in (p1, p2, b1, b2):
            counts[t, card - 1] -= 1
            unseen[t, card - 1] -= 1
        if p3 != 0:
            counts[t, p3 - 1] -= 1
            unseen[t, p3 - 1] -= 1
        if b3 != 0:
            counts[t, b3 - 1] -= 1
            unseen[t, b3 - 1] -= 1
        player_total[t] = pt
        banker_total[t] = bt
        player_ncards[t] = pn
        banker_ncards[t] = bn
        o = outcome_table[pt, bt, pn - 2, bn - 2]
        outcome[t] = o
        winner[t] = outcome_winner[o]
        natural[t] = pn == 2 and bn == 2 and (pt >= 8 or bt >= 8)
        player_pair[t] = p1 == p2
        banker_pair[t] = b1 == b2


def _renamed(func, name: str):
    """A copy of ``func`` under another name: numba's on-disk cache is keyed by the function's name,
    so two builds of one function (parallel and serial) would otherwise load each other's code."""
    clone = types.FunctionType(func.__code__, func.__globals__, name, func.__defaults__,
                               func.__closure__)
    clone.__qualname__ = name
    return clone


# The same loop compiled twice: threads pay off from a few thousand tables; below that the cost of
# waking them (about a millisecond on a loaded machine) exceeds the work, so small batches run serially.
_deal_parallel = numba.njit(parallel=True, cache=True)(_deal_loop)
_deal_serial = numba.njit(cache=True)(_renamed(_deal_loop, "_deal_loop_serial"))
PARALLEL_MIN_TABLES = 2048
"""Batches of at least this many tables are dealt with numba's threads."""


@numba.njit(parallel=True, cache=True)
def _init_kernel(shoe, position, counts, unseen, rng, full_counts, stack_len, burn, burn_counts):
    for t in numba.prange(shoe.shape[0]):
        _new_shoe(t, shoe, position, counts, unseen, rng, full_counts, stack_len, burn, burn_counts)


@numba.njit(parallel=True, cache=True)
def _shuffle_kernel(tables, shoe, position, counts, unseen, hands_in_shoe, shoes_started, cut_hands,
                    rng, full_counts, burn, burn_counts):
    for i in numba.prange(tables.shape[0]):
        t = tables[i]
        _new_shoe(t, shoe, position, counts, unseen, rng, full_counts, 0, burn, burn_counts)
        hands_in_shoe[t] = 0
        shoes_started[t] += 1
        cut_hands[t] = 0


@dataclasses.dataclass
class ShoeState:
    """The explicit state of N tables (row ``t`` of every array is table ``t``).

    Attributes:
        shoe: ``(n, cards)`` uint8 card codes (1..13 = A..K) in deal order.
        position: ``(n,)`` index of the next card to be dealt.
        counts: ``(n, 13)`` cards of each rank really left in the shoe (not dealt, not burned).
        unseen: ``(n, 13)`` cards of each rank the players have not seen: the shoe plus the face-down
            burned cards. This is the composition a counter knows; exact odds computed from it are the
            true odds of the next hand given what has been seen.
        hands_in_shoe: ``(n,)`` hands dealt from the current shoe.
        shoes_started: ``(n,)`` shoes shuffled so far (1 after :func:`init`).
        cut_hands: ``(n,)`` hands begun after the cut card came out (for ``hand_after_cut``).
        rng: ``(n,)`` uint64 state of each table's random stream.
        cut_position: index in the shoe of the cut card (``cards - cards_behind_cut``).
    """

    shoe: np.ndarray
    position: np.ndarray
    counts: np.ndarray
    unseen: np.ndarray
    hands_in_shoe: np.ndarray
    shoes_started: np.ndarray
    cut_hands: np.ndarray
    rng: np.ndarray
    cut_position: int

    @property
    def n_tables(self) -> int:
        """Number of tables."""
        return self.shoe.shape[0]

    @property
    def cards_left(self) -> np.ndarray:
        """Cards not yet dealt or burned, per table."""
        return self.shoe.shape[1] - self.position

    def copy(self) -> "ShoeState":
        """A deep copy (the engine updates states in place)."""
        return ShoeState(**{f.name: (np.copy(getattr(self, f.name)) if f.name != "cut_position"
                                     else self.cut_position) for f in dataclasses.fields(self)})


@dataclasses.dataclass
class HandResult:
    """One hand at each of N tables. Card codes 1..13 (A..K), 0 = no third card.

    Attributes:
        player_cards, banker_cards: ``(n, 3)`` cards in the order dealt to each hand.
        player_total, banker_total: final totals 0..9.
        player_ncards, banker_ncards: 2 or 3.
        outcome: settlement class, an index into :data:`pb_gym.rules.OUTCOMES`.
        winner: 0 banker, 1 player, 2 tie (:data:`pb_gym.rules.WINNERS`).
        natural: either hand had a natural (8 or 9 on two cards).
        player_pair, banker_pair: the first two cards of that hand have the same rank.
        shuffled: the shoe was (re)shuffled and burned just before this hand.
    """

    player_cards: np.ndarray
    banker_cards: np.ndarray
    player_total: np.ndarray
    banker_total: np.ndarray
    player_ncards: np.ndarray
    banker_ncards: np.ndarray
    outcome: np.ndarray
    winner: np.ndarray
    natural: np.ndarray
    player_pair: np.ndarray
    banker_pair: np.ndarray
    shuffled: np.ndarray

    @classmethod
    def empty(cls, n: int) -> "HandResult":
        """Preallocated result arrays for ``n`` tables (pass as ``out=`` to reuse memory)."""
        u8 = np.uint8
        return cls(np.zeros((n, 3), u8), np.zeros((n, 3), u8), np.zeros(n, u8), np.zeros(n, u8),
                   np.zeros(n, u8), np.zeros(n, u8), np.zeros(n, u8), np.zeros(n, u8),
                   np.zeros(n, np.bool_), np.zeros(n, np.bool_), np.zeros(n, np.bool_),
                   np.zeros(n, np.bool_))

    def __len__(self) -> int:
        return self.outcome.shape[0]

    def payoffs(self, rules: Rules) -> np.ndarray:
        """Net win per unit staked on each of the 7 bet spots (:data:`pb_gym.rules.BETS`), ``(n, 7)``."""
        return R.payoffs(rules, self.outcome, self.player_pair, self.banker_pair)


Seed = int | np.random.SeedSequence | Sequence[int] | np.ndarray | None


def table_seeds(seed: Seed, n_tables: int) -> np.ndarray:
    """The initial random state of each table.

    An int (or ``SeedSequence``, or None for fresh entropy) is a root seed: the tables' states are drawn
    from ``SeedSequence(seed)``. A sequence of ``n_tables`` ints seeds table ``t`` alone with
    ``seed[t]``, exactly as a single table seeded with that int, so that N one-table states and one
    N-table state deal the same hands (the Gymnasium convention ``seed + i`` for sub-environments).
    """
    if isinstance(seed, (list, tuple, np.ndarray)):
        seeds = np.asarray(seed)
        if seeds.shape != (n_tables,) or seeds.dtype.kind not in "iu":
            raise ValueError(f"seed must be an int or {n_tables} ints (one per table); got "
                             f"{seeds.shape} of {seeds.dtype}")
        return np.array([np.random.SeedSequence(int(s)).generate_state(1, dtype=np.uint64)[0]
                         for s in seeds], dtype=np.uint64)
    if isinstance(seed, (bool, np.bool_)) or not (seed is None or isinstance(
            seed, (int, np.integer, np.random.SeedSequence))):
        raise ValueError(f"seed={seed!r} is not allowed; allowed: an int >= 0, a SeedSequence, None, "
                         "or one int per table")
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return seq.generate_state(n_tables, dtype=np.uint64)


def _parse_stack(stack: Sequence | np.ndarray, rules: Rules, n_tables: int) -> np.ndarray:
    """Validate a stacked shoe top: card names or codes, one row per table or one row for all."""
    arr = np.asarray(stack, dtype=object)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] not in (1, n_tables):
        raise ValueError(f"stack must be a list of cards or one list per table ({n_tables} tables); "
                         f"got shape {arr.shape}")
    codes = np.vectorize(R.card_code, otypes=[np.uint8])(arr) if arr.size else arr.astype(np.uint8)
    if codes.shape[1] > rules.n_cards:
        raise ValueError(f"stack has {codes.shape[1]} cards but a {rules.decks}-deck shoe holds "
                         f"{rules.n_cards}")
    per_rank = R.CARDS_PER_RANK_PER_DECK * rules.decks
    for row_index, row in enumerate(codes):
        used = np.bincount(row.astype(np.intp) - 1, minlength=R.N_RANKS)
        over = np.flatnonzero(used > per_rank)
        if over.size:
            r = over[0]
            raise ValueError(f"impossible stack (table {row_index}): {used[r]} cards of rank "
                             f"{R.RANKS[r]} but a {rules.decks}-deck shoe holds only {per_rank}")
    return np.broadcast_to(codes, (n_tables, codes.shape[1]))


def init(rules: Rules, n_tables: int, seed: Seed = None,
         stack: Sequence | np.ndarray | None = None) -> ShoeState:
    """Shuffle a fresh shoe at each of ``n_tables`` tables and apply the burn rule.

    Args:
        rules: the table rules (decks, burn, cut card).
        n_tables: number of independent tables (shoes).
        seed: root seed, or one seed per table (see :func:`table_seeds`). The same seed gives the
            same hands.
        stack: optional stacked shoe top, in deal order: a list of cards (``"A"``, ``"10"``, ``"K"`` or
            codes 1..13) for every table, or one list per table. The rest of the shoe is the remaining
            cards, shuffled. The stack is the shoe from its top card, so with ``rules.burn`` its first
            card is the one turned for the burn; use ``burn=False`` to deal the stack from the first
            hand. A stack with more cards of a rank than the decks hold is rejected.
    """
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a pb_gym.Rules, got {type(rules).__name__}")
    if isinstance(n_tables, bool) or not isinstance(n_tables, (int, np.integer)) or n_tables < 1:
        raise ValueError(f"n_tables={n_tables!r} is not allowed; allowed: an integer >= 1")
    n_tables = int(n_tables)
    n_cards = rules.n_cards
    shoe = np.zeros((n_tables, n_cards), dtype=np.uint8)
    full = R.full_shoe(rules.decks)
    stack_len = 0
    if stack is not None:
        codes = _parse_stack(stack, rules, n_tables)
        stack_len = codes.shape[1]
        if stack_len:
            shoe[:, :stack_len] = codes
            # the rest of each shoe: the cards the stack did not use, in rank order, shuffled below
            for t in range(codes.shape[0] if codes.strides[0] else 1):
                rest = full - np.bincount(codes[t].astype(np.intp) - 1, minlength=R.N_RANKS)
                shoe[t, stack_len:] = np.repeat(np.arange(1, R.N_RANKS + 1, dtype=np.uint8), rest)
            if not codes.strides[0]:
                shoe[1:, stack_len:] = shoe[0, stack_len:]
    state = ShoeState(
        shoe=shoe,
        position=np.zeros(n_tables, dtype=np.int32),
        counts=np.zeros((n_tables, R.N_RANKS), dtype=np.int16),
        unseen=np.zeros((n_tables, R.N_RANKS), dtype=np.int16),
        hands_in_shoe=np.zeros(n_tables, dtype=np.int32),
        shoes_started=np.ones(n_tables, dtype=np.int64),
        cut_hands=np.zeros(n_tables, dtype=np.int8),
        rng=table_seeds(seed, n_tables),
        cut_position=n_cards - rules.cards_behind_cut,
    )
    _init_kernel(state.shoe, state.position, state.counts, state.unseen, state.rng, full, stack_len,
                 bool(rules.burn), R.BURN_COUNTS)
    return state


def deal(rules: Rules, state: ShoeState, out: HandResult | None = None,
         active: np.ndarray | None = None) -> tuple[ShoeState, HandResult]:
    """Deal one hand at every table (reshuffling first where the cut card has come out).

    Returns the (in-place updated) state and the hands. ``out`` reuses preallocated result arrays.
    ``active`` (a boolean mask) deals only at those tables: the others keep their state untouched
    (shoe, random stream) and get an empty result row (no cards, all flags False).
    """
    n = state.n_tables
    result = out if out is not None else HandResult.empty(n)
    if len(result) != n:
        raise ValueError(f"out holds {len(result)} tables but the state has {n}")
    if active is None:
        active = _all_active(n)
    elif active.shape != (n,) or active.dtype != np.bool_:
        raise ValueError(f"active must be a boolean mask of shape ({n},)")
    kernel = _deal_parallel if n >= PARALLEL_MIN_TABLES else _deal_serial
    kernel(active, state.shoe, state.position, state.counts, state.unseen, state.hands_in_shoe,
                 state.shoes_started, state.cut_hands, state.rng, state.cut_position,
                 bool(rules.hand_after_cut), bool(rules.burn), R.full_shoe(rules.decks),
                 R.BURN_COUNTS, R.CARD_VALUES, R.PLAYER_DRAWS, R.BANKER_TABLEAU, R.OUTCOME_TABLE,
                 R.OUTCOME_WINNER, result.player_cards, result.banker_cards, result.player_total,
                 result.banker_total, result.player_ncards, result.banker_ncards, result.outcome,
                 result.winner, result.natural, result.player_pair, result.banker_pair,
                 result.shuffled)
    return state, result


def shuffle(rules: Rules, state: ShoeState, tables: np.ndarray | Sequence[int] | None = None,
            seed: Seed = None) -> ShoeState:
    """Start a fresh shoe (shuffle and burn) at the given tables (indices or a boolean mask; all if None).

    Without ``seed`` each table continues its own random stream (deterministic given the original
    seed); with ``seed`` (one int per selected table, or a root seed) the tables are reseeded first,
    as :func:`init` would seed them.
    """
    index = np.arange(state.n_tables) if tables is None else np.asarray(tables)
    if index.dtype == np.bool_:
        if index.shape != (state.n_tables,):
            raise ValueError(f"a table mask must have shape ({state.n_tables},); got {index.shape}")
        index = np.flatnonzero(index)
    index = index.astype(np.int64)
    if index.size and (index.min() < 0 or index.max() >= state.n_tables):
        raise ValueError(f"table indices must be in 0..{state.n_tables - 1}")
    if seed is not None:
        state.rng[index] = table_seeds(seed, index.size)
    _shuffle_kernel(index, state.shoe, state.position, state.counts, state.unseen,
                    state.hands_in_shoe, state.shoes_started, state.cut_hands, state.rng,
                    R.full_shoe(rules.decks), bool(rules.burn), R.BURN_COUNTS)
    return state


@functools.lru_cache(maxsize=8)
def _all_active(n: int) -> np.ndarray:
    mask = np.ones(n, dtype=np.bool_)
    mask.flags.writeable = False
    return mask


def next_hand_composition(rules: Rules, state: ShoeState) -> np.ndarray:
    """The cards the players have not seen before the next hand, ``(n, 13)``: ``state.unseen``, or a
    full shoe at tables whose next :func:`deal` reshuffles first. Exact odds of this composition are
    the odds of the next hand given everything seen."""
    due = state.position >= state.cut_position
    if rules.hand_after_cut:
        due &= state.cut_hands > 0
    return np.where(due[:, None], R.full_shoe(rules.decks), state.unseen)


def validate_stakes(rules: Rules, stakes: np.ndarray | dict, n: int) -> np.ndarray:
    """Check stakes and return them as a float ``(n, 7)`` array in :data:`pb_gym.rules.BETS` order.

    ``stakes`` is an ``(n, 7)`` array, or a dict ``{bet: stake or (n,) stakes}``. Stakes must be finite
    and >= 0, and zero on side bets this table does not offer.
    """
    if isinstance(stakes, dict):
        array = np.zeros((n, R.N_BETS))
        for bet, value in stakes.items():
            if bet not in R.BETS:
                raise ValueError(f"unknown bet {bet!r}; allowed: {', '.join(R.BETS)}")
            array[:, R.BETS.index(bet)] = value
    else:
        array = np.asarray(stakes, dtype=np.float64)
        if array.shape != (n, R.N_BETS):
            raise ValueError(f"stakes must have shape ({n}, {R.N_BETS}) (one column per bet: "
                             f"{', '.join(R.BETS)}); got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("stakes must be finite numbers")
    if np.any(array < 0):
        bet = R.BETS[int(np.argwhere(array < 0)[0, 1])]
        raise ValueError(f"negative stake on {bet!r}; stakes must be >= 0")
    unoffered = ~rules.offered_mask
    if np.any(array[:, unoffered] != 0):
        bet = R.BETS[int(np.flatnonzero(unoffered & np.any(array != 0, axis=0))[0])]
        raise ValueError(f"stake on {bet!r}, which this table does not offer; offered: "
                         f"{', '.join(rules.offered_bets)}")
    return array


def settle(rules: Rules, result: HandResult, stakes: np.ndarray | dict) -> np.ndarray:
    """Net win of each table's hand for the given stakes per bet spot (see :func:`validate_stakes`).

    A tie pushes banker and player stakes (net 0); a push is returned as 0.
    """
    array = validate_stakes(rules, stakes, len(result))
    return np.einsum("ij,ij->i", array, result.payoffs(rules))
