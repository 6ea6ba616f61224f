"""The vectorized shoe engine: N independent tables, one hand at each per call.

Design (after EnvPool / pgx): the whole state of every table is a handful of arrays in a
:class:`ShoeState`; :func:`deal` is a state transition that deals one hand at every table and returns a
:class:`HandResult` of per-table arrays; :func:`settle` turns stakes per bet spot into net wins. The hot
loop is compiled with numba (one iteration per table, a large batch split over several threads by
:mod:`pb_gym.parallel`) because a hand is a short chain of data-dependent branches (naturals,
third cards, the tableau) that numpy can only express as many full-array passes; compiled, it deals
tens of millions of hands per second on two cores.

The state arrays are updated in place (as numpy's ``out=`` arguments are) and the same state object is
returned; use :meth:`ShoeState.copy` to branch a state.

Shoe conventions (see :class:`pb_gym.rules.Rules`): each shoe is shuffled with the table's own random
stream (:mod:`pb_gym.shoe_shuffle`), the burn rule is applied, and when the cut card has come out the
shoe is reshuffled before the next hand (after one more hand if ``hand_after_cut``). Counts by rank are
kept both of the cards really left in the shoe (``counts``) and of the cards the players have not seen
(``unseen``: the shoe plus the face-down burned cards), which is what a card counter can know.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence

import numba
import numpy as np

from pb_gym import memory, progress
from pb_gym import rules as R
from pb_gym.parallel import checked_rows, run_rows
from pb_gym.rules import Rules
from pb_gym.shoe_shuffle import _init_rows, _scratch, _shoe_arrays, _shuffle_rows
from pb_gym.shoe_shuffle import new_shoe as new_shoe
from pb_gym.shoe_shuffle import shuffle_row as shuffle_row
from pb_gym.shoe_shuffle import stream_index as stream_index
from pb_gym.shoe_state import (
    HAND_VIEW_FIELDS,
    RESULT_ARRAYS,
    SHOE_MISMATCH,
    SHOE_VIEW_FIELDS,
    STATE_ARRAYS,
    TABLE_PROBLEMS,
    CheckedArrays,
    HandResult,
    HandView,
    Seed,
    ShoeState,
    ShoeView,
    array_fields,
    check_arrays,
    check_result,
    parse_stack,
    raise_table_problem,
    stacked_shoe,
    table_seeds,
)

# the rules' numbers the kernels use, by name
_N_RANKS = R.N_RANKS  # card codes 1..13, ranks 0..12
_POINTS = 10  # a hand's total is the sum of its card values modulo 10
_NATURAL = R.NATURAL_MIN  # a two-card 8 or 9
_MAX_CARDS = 3  # cards a hand can hold
_HAND_CARDS = 6  # the most cards one hand takes from the shoe

# A hand's whole course (third cards, final totals, outcome, winner, natural) is a function of its two
# two-card totals and the values of the next two cards in the shoe: 10 x 10 x 10 x 10 cases, looked up
# in one 20 KB table (it stays in the first-level cache) instead of three unpredictable branches.
# Each entry packs its fields into 16 bits at these shifts:
_AT_PLAYER_TOTAL = 0  # 4 bits: the player's final total
_AT_BANKER_TOTAL = 4  # 4 bits: the banker's final total
_AT_OUTCOME = 8  # 3 bits: the outcome class (pb_gym.rules.OUTCOMES)
_AT_PLAYER_DRAWS = 11  # 1 bit: the player drew a third card (the 5th card of the hand)
_AT_BANKER_DRAWS = 12  # 1 bit: the banker drew one (the 6th card if the player drew, else the 5th)
_AT_NATURAL = 13  # 1 bit: either hand had a natural
_AT_WINNER = 14  # 2 bits: pb_gym.rules.WINNERS


def _hand_table() -> np.ndarray:
    """``HAND_TABLE[((player_total * 10 + banker_total) * 10 + v5) * 10 + v6]`` for the two-card totals
    and the values ``v5``, ``v6`` of the two cards after the first four: the packed course of the hand,
    from the drawing rules and outcome classes of :mod:`pb_gym.rules`."""
    pt2, bt2, v5, v6 = np.indices((_POINTS,) * 4).reshape(4, -1)
    natural = (pt2 >= _NATURAL) | (bt2 >= _NATURAL)
    player_draws = ~natural & R.PLAYER_DRAWS[pt2]
    player = np.where(player_draws, (pt2 + v5) % _POINTS, pt2)
    column = np.where(player_draws, v5, R.NO_THIRD_CARD)
    banker_draws = ~natural & R.BANKER_TABLEAU[bt2, column]
    banker_card = np.where(player_draws, v6, v5)
    banker = np.where(banker_draws, (bt2 + banker_card) % _POINTS, bt2)
    outcome = R.OUTCOME_TABLE[player, banker, player_draws.astype(int), banker_draws.astype(int)]
    winner = R.OUTCOME_WINNER[outcome]
    packed = (
        (player << _AT_PLAYER_TOTAL)
        | (banker << _AT_BANKER_TOTAL)
        | (outcome.astype(np.int64) << _AT_OUTCOME)
        | (player_draws.astype(np.int64) << _AT_PLAYER_DRAWS)
        | (banker_draws.astype(np.int64) << _AT_BANKER_DRAWS)
        | (natural.astype(np.int64) << _AT_NATURAL)
        | (winner.astype(np.int64) << _AT_WINNER)
    )
    return packed.astype(np.uint16)


HAND_TABLE = _hand_table()
"""The packed course of a hand by its two-card totals and next two card values (:func:`_hand_table`)."""
_VALUES = R.CARD_VALUES.astype(np.intp)  # a card code's value (0 for no card), as an index


# (called only from compiled code: no Python or C entry point is compiled; numba's type stubs omit
# these flags)
@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]
def deal_rows(start, stop, active, shoe, hand, hand_after_cut, burn):  # noqa: C901 - the hand loop of the engine: a call per step costs speed
    """Deal one hand at every table ``t`` of ``start..stop-1`` where ``active[t]``, from a
    :class:`ShoeView` into a :class:`HandView` (tables sitting out get an empty result row and keep
    their state); a table whose cut card has come out reshuffles first (after one more hand with
    ``hand_after_cut``). The caller has checked the rows (:func:`check_rows`): this trusts them."""
    cards, suits, counts, unseen, rng, position = _shoe_arrays(shoe)  # (a reshuffle hands them on)
    hands_in_shoe = shoe.hands_in_shoe
    shoes_started = shoe.shoes_started
    cut_hands = shoe.cut_hands
    cut_position = shoe.cut_position
    player_cards = hand.player_cards
    banker_cards = hand.banker_cards
    player_total = hand.player_total
    banker_total = hand.banker_total
    player_ncards = hand.player_ncards
    banker_ncards = hand.banker_ncards
    outcome = hand.outcome
    winner = hand.winner
    natural = hand.natural
    player_pair = hand.player_pair
    banker_pair = hand.banker_pair
    shuffled = hand.shuffled
    player_suits, banker_suits = hand.player_suits, hand.banker_suits
    suited = suits.shape[1] > 0
    draws = _scratch(cards.shape[1])
    for t in range(start, stop):
        if not active[t]:  # a table sitting this hand out: untouched state, an empty result row
            for k in range(_MAX_CARDS):
                player_cards[t, k] = 0
                banker_cards[t, k] = 0
                player_suits[t, k] = 0
                banker_suits[t, k] = 0
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
            position[t] = shuffle_row(t, cards, suits, counts, unseen, rng, np.int64(0), burn, draws)
            hands_in_shoe[t] = 0
            shoes_started[t] += 1
            cut_hands[t] = 0
        shuffled[t] = reshuffle
        pos = position[t]
        p1 = np.intp(cards[t, pos])
        b1 = np.intp(cards[t, pos + 1])
        p2 = np.intp(cards[t, pos + 2])
        b2 = np.intp(cards[t, pos + 3])
        c5 = np.intp(cards[t, pos + 4])  # the player's third card if the player draws
        c6 = np.intp(cards[t, pos + 5])
        pt = _VALUES[p1] + _VALUES[p2]
        bt = _VALUES[b1] + _VALUES[b2]
        pt = pt - _POINTS if pt >= _POINTS else pt
        bt = bt - _POINTS if bt >= _POINTS else bt
        e = np.intp(HAND_TABLE[((pt * _POINTS + bt) * _POINTS + _VALUES[c5]) * _POINTS + _VALUES[c6]])
        pd = (e >> _AT_PLAYER_DRAWS) & 1
        bd = (e >> _AT_BANKER_DRAWS) & 1
        cb = c6 if pd else c5  # the banker's third card if the banker draws
        position[t] = pos + 4 + pd + bd
        hands_in_shoe[t] += 1
        player_cards[t, 0] = p1
        player_cards[t, 1] = p2
        player_cards[t, 2] = c5 if pd else 0
        banker_cards[t, 0] = b1
        banker_cards[t, 1] = b2
        banker_cards[t, 2] = cb if bd else 0
        if suited:
            player_suits[t, 0] = suits[t, pos]
            player_suits[t, 1] = suits[t, pos + 2]
            player_suits[t, 2] = suits[t, pos + 4] if pd else 0
            banker_suits[t, 0] = suits[t, pos + 1]
            banker_suits[t, 1] = suits[t, pos + 3]
            banker_suits[t, 2] = suits[t, pos + 4 + pd] if bd else 0
        counts[t, p1 - 1] -= 1
        unseen[t, p1 - 1] -= 1
        counts[t, p2 - 1] -= 1
        unseen[t, p2 - 1] -= 1
        counts[t, b1 - 1] -= 1
        unseen[t, b1 - 1] -= 1
        counts[t, b2 - 1] -= 1
        unseen[t, b2 - 1] -= 1
        counts[t, c5 - 1] -= pd
        unseen[t, c5 - 1] -= pd
        counts[t, cb - 1] -= bd
        unseen[t, cb - 1] -= bd
        player_total[t] = (e >> _AT_PLAYER_TOTAL) & 15
        banker_total[t] = (e >> _AT_BANKER_TOTAL) & 15
        player_ncards[t] = 2 + pd
        banker_ncards[t] = 2 + bd
        outcome[t] = (e >> _AT_OUTCOME) & 7
        winner[t] = (e >> _AT_WINNER) & 3
        natural[t] = (e >> _AT_NATURAL) & 1
        player_pair[t] = p1 == p2
        banker_pair[t] = b1 == b2


DEAL_BLOCK = 1024
"""Tables checked and then dealt at a time by :func:`deal_checked_rows`: the check pass brings their rows
into the cache for the deal (a block's state is some hundreds of kilobytes)."""


@numba.njit(cache=True, nogil=True)
def deal_checked_rows(start, stop, active, shoe, hand, hand_after_cut, burn, per_rank):
    """:func:`check_rows` then :func:`deal_rows` over ``start..stop-1``, :data:`DEAL_BLOCK` tables at a
    time: returns ``(table, problem)`` of the first unusable table (its block and the blocks after it
    are not dealt), or ``(-1, 0)``."""
    for first in range(start, stop, DEAL_BLOCK):
        last = min(first + DEAL_BLOCK, stop)
        table, problem = check_rows(first, last, shoe, hand_after_cut, per_rank)
        if table >= 0:
            return table, problem
        deal_rows(first, last, active, shoe, hand, hand_after_cut, burn)
    return -1, 0


DEAL_MIN_TABLES = 2048
"""Batches of at least this many tables are dealt on several threads (:mod:`pb_gym.parallel`); below
that, waking a thread costs more than the hands."""
SHUFFLE_MIN_TABLES = 128
"""The same for a new engine's shuffles (:func:`init`; a shuffle is some hundreds of cards: threads pay
off sooner)."""
RESHUFFLE_MIN_TABLES = 48
"""The same for :func:`shuffle` (a vector env's tables that start an episode each step: about a hundred
at 4,096 tables)."""


@numba.njit(cache=True, nogil=True)
def check_rows(start, stop, shoe, hand_after_cut, per_rank):  # noqa: C901 - one vector pass per check (its speed): each is a branch
    """The first table of ``start..stop-1`` of a :class:`ShoeView` whose state :func:`deal_rows` could
    not use safely, and why (a key of ``TABLE_PROBLEMS``), or (-1, 0).

    The deal trusts what it reads: a position past the shoe or a card code outside 1..13 would make
    it read or write outside its arrays. First passes free of branches only say whether anything is
    wrong (each compiles to vector code: the counts as one flat run of numbers, the rows' sums, the
    next hand's cards); only then does a last pass find the table and why."""
    cards = shoe.shoe
    position = shoe.position
    counts = shoe.counts
    unseen = shoe.unseen
    cut_hands = shoe.cut_hands
    cut_position = shoe.cut_position
    n_cards = cards.shape[1]
    # the rows as one flat run from index 0 (C-contiguous: checked when the state is built; a loop
    # from 0 over a slice compiles to vector code, one from start * 13 did not)
    flat_counts = counts.reshape(-1)[start * _N_RANKS : stop * _N_RANKS]
    flat_unseen = unseen.reshape(-1)[start * _N_RANKS : stop * _N_RANKS]
    signs = 0  # negative once any count is negative, above its unseen count or above a full shoe
    for i in range(flat_counts.shape[0]):
        c = flat_counts[i]
        u = flat_unseen[i]
        signs |= c | (u - c) | (per_rank - u)
    bad = signs < 0
    for t in range(start, stop):
        left = 0
        for r in range(_N_RANKS):
            left += counts[t, r]
        pos = position[t]
        bad |= (left != n_cards - pos) | (pos < 0) | (pos > n_cards)
        deals = (pos < cut_position) | (hand_after_cut & (cut_hands[t] == 0))  # else reshuffles
        bad |= deals & (pos + _HAND_CARDS > n_cards)
    for t in range(start, stop):
        pos = position[t]
        deals = (pos < cut_position) | (hand_after_cut & (cut_hands[t] == 0))
        first = min(max(pos, 0), n_cards - _HAND_CARDS)  # in bounds whatever the position
        low = cards[t, first]
        high = low
        for k in range(first + 1, first + _HAND_CARDS):
            low = min(low, cards[t, k])
            high = max(high, cards[t, k])
        bad |= deals & ((low < 1) | (high > _N_RANKS))
    if not bad:
        return -1, 0
    for t in range(start, stop):
        pos = position[t]
        if pos < 0 or pos > n_cards:
            return t, 1
        left = 0
        for r in range(_N_RANKS):
            if counts[t, r] < 0 or counts[t, r] > unseen[t, r] or unseen[t, r] > per_rank:
                return t, 2
            left += counts[t, r]
        if left != n_cards - pos:
            return t, 3
        if pos < cut_position or (hand_after_cut and cut_hands[t] == 0):  # deals from this shoe
            if pos + _HAND_CARDS > n_cards:
                return t, 4
            for k in range(pos, pos + _HAND_CARDS):
                if cards[t, k] < 1 or cards[t, k] > _N_RANKS:
                    return t, 5
    return -1, 0


def _per_rank(rules: Rules) -> int:
    return R.CARDS_PER_RANK_PER_DECK * rules.decks


def check_state(rules: Rules, state: ShoeState, deals: bool = True) -> None:
    """Check that ``state`` can be used with ``rules`` by the compiled kernels; raise ValueError if not.

    :func:`deal` and :func:`shuffle` call this once per call: the kernels write in place and trust the
    arrays, so a state made for other rules (another shoe size or cut card) or edited by hand must be
    refused before it makes them write outside their arrays. The arrays' dtypes and shapes are
    checked when a :class:`ShoeState` is built or one of its arrays is replaced; here, the shoe
    against the rules and, with ``deals``, every table (position inside the shoe, counts by rank
    consistent with it, card codes of the next hand in 1..13) in one compiled pass."""
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a pb_gym.Rules, got {type(rules).__name__}")
    if not isinstance(state, ShoeState):
        raise TypeError(
            f"state must be a pb_gym.engine.ShoeState (from engine.init), got {type(state).__name__}"
        )
    n_cards = state.shoe.shape[1]
    if n_cards != rules.n_cards:
        raise ValueError(
            f"the state holds shoes of {n_cards} cards but the rules deal "
            f"{rules.decks}-deck shoes of {rules.n_cards} cards: deal a state with the "
            "Rules it was made for (engine.init)"
        )
    cut = n_cards - rules.cards_behind_cut
    if state.cut_position != cut:
        raise ValueError(
            f"the state's cut card is at card {state.cut_position} but the rules put it "
            f"at card {cut} (cut_card={rules.cut_card!r}): deal a state with the Rules "
            "it was made for (engine.init)"
        )
    if deals:
        table, problem = check_rows(
            0, state.n_tables, state.view, bool(rules.hand_after_cut), _per_rank(rules)
        )
        raise_table_problem(table, problem)


def table_bytes(rules: Rules, suited: bool = False) -> int:
    """Bytes of one table's state (:class:`ShoeState`: the shoe, its suits if ``suited``, counts,
    counters) and of its row of a :class:`HandResult`: what :func:`init` and a :func:`deal` allocate
    per table."""
    widths = {"shoe": rules.n_cards, "suits": rules.n_cards if suited else 0}
    state = sum(
        dtype.itemsize * widths.get(name, R.N_RANKS if ndim == 2 else 1) for name, dtype, ndim in STATE_ARRAYS
    )
    return state + sum(dtype.itemsize * (3 if ndim == 2 else 1) for _, dtype, ndim in RESULT_ARRAYS)


def init(
    rules: Rules,
    n_tables: int,
    seed: Seed = None,
    stack: Sequence | np.ndarray | None = None,
    suited: bool = False,
) -> ShoeState:
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
        suited: track each card's suit too (:attr:`ShoeState.suits`, the hands'
            ``player_suits`` / ``banker_suits``, :func:`unseen_by_suit`), for the suited bets. The ranks
            dealt are the same bits either way (the suits follow the same swaps); tracking them costs
            the shuffle a second pass (``pb-gym bench``).
    """
    if not isinstance(suited, (bool, np.bool_)):
        raise ValueError(f"suited={suited!r} is not allowed; allowed: True, False")
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a pb_gym.Rules, got {type(rules).__name__}")
    if isinstance(n_tables, bool) or not isinstance(n_tables, (int, np.integer)) or n_tables < 1:
        raise ValueError(f"n_tables={n_tables!r} is not allowed; allowed: an integer >= 1")
    n_tables = int(n_tables)
    progress.note_compiling(sys.modules[__name__])  # the first run on a machine compiles the deal
    memory.require(
        n_tables * table_bytes(rules, bool(suited)),
        f"a shoe state of {n_tables:,} tables",
        "deal fewer tables at once",
    )
    n_cards = rules.n_cards
    shoe = np.zeros((n_tables, n_cards), dtype=np.uint8)
    suits = np.zeros((n_tables, n_cards if suited else 0), dtype=np.uint8)
    stack_len = 0
    if stack is not None:
        codes = parse_stack(stack, rules, n_tables)
        stack_len = codes.shape[1]
        if stack_len:
            # each stacked card is the next unused copy of its rank; the rest of each shoe, the copies
            # the stack did not use, in rank order, is shuffled below
            for t in range(codes.shape[0] if codes.strides[0] else 1):
                shoe[t], suit_row = stacked_shoe(codes[t], rules)
                if suited:
                    suits[t] = suit_row
            if not codes.strides[0]:
                shoe[1:], suits[1:] = shoe[0], suits[0]
    state = ShoeState(
        shoe=shoe,
        suits=suits,
        position=np.zeros(n_tables, dtype=np.int32),
        counts=np.zeros((n_tables, R.N_RANKS), dtype=np.int16),
        unseen=np.zeros((n_tables, R.N_RANKS), dtype=np.int16),
        hands_in_shoe=np.zeros(n_tables, dtype=np.int32),
        shoes_started=np.ones(n_tables, dtype=np.int64),
        cut_hands=np.zeros(n_tables, dtype=np.int8),
        rng=table_seeds(seed, n_tables),
        cut_position=n_cards - rules.cards_behind_cut,
    )
    run_rows(_init_rows, n_tables, SHUFFLE_MIN_TABLES, state.view, stack_len, bool(rules.burn))
    return state


def deal(
    rules: Rules, state: ShoeState, out: HandResult | None = None, active: np.ndarray | None = None
) -> tuple[ShoeState, HandResult]:
    """Deal one hand at every table (reshuffling first where the cut card has come out).

    Returns the (in-place updated) state and the hands. ``out`` reuses preallocated result arrays.
    ``active`` (a boolean mask) deals only at those tables: the others keep their state untouched
    (shoe, random stream) and get an empty result row (no cards, all flags False).

    A state that does not fit the rules, or a table whose state is inconsistent (see
    :func:`check_state`), raises ``ValueError`` before any card of that table is dealt; the tables
    of other blocks (:data:`DEAL_BLOCK`) or chunks (several threads) may have been dealt by then.
    """
    check_state(rules, state, deals=False)  # the per-table checks run with the deal, chunk by chunk
    n = state.n_tables
    if out is None:
        result = HandResult.empty(n)
    else:
        result = out
        check_result(out, n)
    if active is None:
        active = _all_active(n)
    elif type(active) is not np.ndarray or active.shape != (n,) or active.dtype != np.bool_:
        raise ValueError(f"active must be a boolean mask of shape ({n},)")
    hand_after_cut, burn, per_rank = bool(rules.hand_after_cut), bool(rules.burn), _per_rank(rules)
    shoe, hand = state.view, result.view
    # each block of tables is checked just before it is dealt (its rows are then in cache)
    found = checked_rows(
        deal_checked_rows,
        n,
        DEAL_MIN_TABLES,
        active,
        shoe,
        hand,
        hand_after_cut,
        burn,
        per_rank,
    )
    if found[0] >= 0:
        raise_table_problem(*found)
    return state, result


def shuffle(
    rules: Rules, state: ShoeState, tables: np.ndarray | Sequence[int] | None = None, seed: Seed = None
) -> ShoeState:
    """Start a fresh shoe (shuffle and burn) at the given tables (indices or a boolean mask; all if None).

    Without ``seed`` each table continues its own random stream (deterministic given the original
    seed); with ``seed`` (one int per selected table, or a root seed) the tables are reseeded first,
    as :func:`init` would seed them.
    """
    check_state(rules, state, deals=False)  # a new shoe overwrites the tables' cards and counts
    index = np.arange(state.n_tables) if tables is None else np.asarray(tables)
    if index.dtype == np.bool_:
        if index.shape != (state.n_tables,):
            raise ValueError(f"a table mask must have shape ({state.n_tables},); got {index.shape}")
        index = np.flatnonzero(index)
    if index.ndim != 1 or (index.size and index.dtype.kind not in "iu"):
        raise ValueError(
            f"tables must be table indices or a boolean mask of shape "
            f"({state.n_tables},); got {index.shape} of {index.dtype}"
        )
    index = index.astype(np.int64)
    if index.size and (index.min() < 0 or index.max() >= state.n_tables):
        raise ValueError(f"table indices must be in 0..{state.n_tables - 1}")
    if seed is not None:
        state.rng[index] = table_seeds(seed, index.size)
    # on several threads only without repeated tables (a table listed twice is shuffled twice, in
    # order: two threads must not shuffle it at once); looked for only where threads would run (a
    # single env's reset shuffles one table)
    min_tables = RESHUFFLE_MIN_TABLES
    if index.size >= min_tables and np.unique(index).size != index.size:
        min_tables = index.size + 1
    burn = bool(rules.burn)
    run_rows(_shuffle_rows, index.size, min_tables, index, state.view, burn)
    return state


@functools.lru_cache(maxsize=8)
def _all_active(n: int) -> np.ndarray:
    mask = np.ones(n, dtype=np.bool_)
    mask.flags.writeable = False
    return mask


def shoe_over(rules: Rules, state: ShoeState) -> np.ndarray:
    """``(n,)`` bool: the tables whose shoe is finished (the cut card has come out, and the hand after
    it has been dealt with ``hand_after_cut``), so that their next :func:`deal` reshuffles first."""
    check_state(rules, state, deals=False)
    due = state.position >= state.cut_position
    if rules.hand_after_cut:
        due &= state.cut_hands > 0
    return due


def next_hand_composition(rules: Rules, state: ShoeState) -> np.ndarray:
    """The cards the players have not seen before the next hand, ``(n, 13)``: ``state.unseen``, or a
    full shoe at tables whose next :func:`deal` reshuffles first. Exact odds of this composition are
    the odds of the next hand given everything seen."""
    # (shoe_over checks the state: a full shoe of other rules would be wrong odds)
    due = shoe_over(rules, state)
    composition = state.unseen.astype(np.int64)  # (a copy: faster than np.where's broadcast)
    composition[due] = R.full_shoe(rules.decks)
    return composition


@numba.njit(cache=True, nogil=True)
def _unseen_by_suit_rows(start, stop, shoe, burn, out):
    """``out[t]``: the cards of table ``t`` the players have not seen, by rank and suit: the shoe behind
    its position, and with ``burn`` the cards burned face down after the turned one."""
    cards, suits, position = shoe.shoe, shoe.suits, shoe.position
    for t in range(start, stop):
        out[t] = 0
        for k in range(position[t], cards.shape[1]):
            out[t, cards[t, k] - 1, suits[t, k]] += 1
        if burn:
            for k in range(1, 1 + R.BURN_COUNTS[cards[t, 0] - 1]):
                out[t, cards[t, k] - 1, suits[t, k]] += 1


def unseen_by_suit(rules: Rules, state: ShoeState) -> np.ndarray:
    """The cards the players have not seen, by rank and suit, ``(n, 13, 4)`` int64 (ranks A..K by
    :data:`pb_gym.suited.SUITS`): summed over suits, ``state.unseen``. Computed from the shoe's cards
    when asked (the deal keeps counts by rank only)."""
    check_state(rules, state)
    n_suits = R.CARDS_PER_RANK_PER_DECK
    if state.suits.shape[1] == 0:
        raise ValueError("this state does not track suits: make it with engine.init(..., suited=True)")
    if state.suits.max(initial=0) >= n_suits:
        raise ValueError(f"the state's suits must be 0..{n_suits - 1} (was it changed by hand?)")
    out = np.zeros((state.n_tables, R.N_RANKS, n_suits), dtype=np.int64)
    _unseen_by_suit_rows(0, state.n_tables, state.view, bool(rules.burn), out)
    if not np.array_equal(out.sum(axis=2), state.unseen):
        raise ValueError(
            "the state's cards by suit do not add up to its unseen counts by rank (was it changed by hand?)"
        )
    return out


def next_hand_suited_composition(rules: Rules, state: ShoeState) -> np.ndarray:
    """:func:`next_hand_composition` by rank and suit, ``(n, 13, 4)``: :func:`unseen_by_suit`, or a full
    shoe (``decks`` of each card) at tables whose next :func:`deal` reshuffles first. The composition
    :mod:`pb_gym.suited` prices the suited bets of the next hand from."""
    full = np.full((R.N_RANKS, R.CARDS_PER_RANK_PER_DECK), rules.decks, dtype=np.int64)
    return np.where(shoe_over(rules, state)[:, None, None], full, unseen_by_suit(rules, state))


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
            raise ValueError(
                f"stakes must have shape ({n}, {R.N_BETS}) (one column per bet: "
                f"{', '.join(R.BETS)}); got {array.shape}"
            )
    if not np.all(np.isfinite(array)):
        raise ValueError("stakes must be finite numbers")
    if np.any(array < 0):
        bet = R.BETS[int(np.argwhere(array < 0)[0, 1])]
        raise ValueError(f"negative stake on {bet!r}; stakes must be >= 0")
    unoffered = ~rules.offered_mask
    if np.any(array[:, unoffered] != 0):
        bet = R.BETS[int(np.flatnonzero(unoffered & np.any(array != 0, axis=0))[0])]
        raise ValueError(
            f"stake on {bet!r}, which this table does not offer; offered: {', '.join(rules.offered_bets)}"
        )
    return array


def settle(rules: Rules, result: HandResult, stakes: np.ndarray | dict) -> np.ndarray:
    """Net win of each table's hand for the given stakes per bet spot (see :func:`validate_stakes`).

    A tie pushes banker and player stakes (net 0); a push is returned as 0.
    """
    array = validate_stakes(rules, stakes, len(result))
    return np.einsum("ij,ij->i", array, result.payoffs(rules))


__all__ = [
    "DEAL_BLOCK",
    "DEAL_MIN_TABLES",
    "HAND_TABLE",
    "HAND_VIEW_FIELDS",
    "RESULT_ARRAYS",
    "stream_index",
    "SHOE_MISMATCH",
    "SHOE_VIEW_FIELDS",
    "SHUFFLE_MIN_TABLES",
    "RESHUFFLE_MIN_TABLES",
    "STATE_ARRAYS",
    "TABLE_PROBLEMS",
    "CheckedArrays",
    "HandResult",
    "HandView",
    "Seed",
    "ShoeState",
    "ShoeView",
    "array_fields",
    "check_arrays",
    "check_result",
    "check_rows",
    "check_state",
    "deal",
    "deal_checked_rows",
    "deal_rows",
    "init",
    "new_shoe",
    "next_hand_composition",
    "next_hand_suited_composition",
    "raise_table_problem",
    "settle",
    "shoe_over",
    "shuffle",
    "shuffle_row",
    "table_bytes",
    "table_seeds",
    "unseen_by_suit",
    "validate_stakes",
]
