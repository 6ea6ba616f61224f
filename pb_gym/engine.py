"""The vectorized shoe engine: N independent tables, one hand at each per call.

Design (after EnvPool / pgx): the whole state of every table is a handful of arrays in a
:class:`ShoeState`; :func:`deal` is a state transition that deals one hand at every table and returns a
:class:`HandResult` of per-table arrays; :func:`settle` turns stakes per bet spot into net wins. The hot
loop is compiled with numba (one iteration per table, run on several threads by
:mod:`pb_gym.threads`) because a hand is a short chain of data-dependent branches (naturals,
third cards, the tableau) that numpy can only express as many full-array passes; compiled, it deals
tens of millions of hands per second on two cores.

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
import sys
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

from pb_gym import memory, progress
from pb_gym import rules as R
from pb_gym.rules import Rules
from pb_gym.threads import parallel_for, run_rows

_U64 = np.uint64
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53

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


@numba.njit(inline="always")
def _mix(z: np.uint64) -> np.uint64:
    """splitmix64's output function of a counter value."""
    z = (z ^ (z >> _U64(30))) * _MIX1
    z = (z ^ (z >> _U64(27))) * _MIX2
    return z ^ (z >> _U64(31))


# (new_shoe and deal_rows are called only from compiled code: no Python or C entry point is compiled;
# numba's type stubs omit these flags)
@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]
def new_shoe(t, shoe, start, burn):
    """Shuffle the cards below ``start`` of table ``t`` of a :class:`ShoeView` (cards above are a
    stacked top), then burn with ``burn``.

    Each table's stream is splitmix64 over a counter (``rng[t]``, advanced by the golden gamma per
    draw): the Fisher-Yates swap of position ``i`` takes ``start + floor(u * (i - start + 1))`` with
    ``u`` the draw's top 53 bits as a fraction. The draws of a shuffle do not depend on each other,
    so they are computed first in a loop the compiler vectorizes, then the swaps run."""
    cards = shoe.shoe
    counts = shoe.counts
    unseen = shoe.unseen
    rng = shoe.rng
    n_cards = cards.shape[1]
    per_rank = n_cards // _N_RANKS
    if start == 0:
        k = 0
        for r in range(_N_RANKS):
            for _ in range(per_rank):
                cards[t, k] = r + 1
                k += 1
    n_draws = max(n_cards - 1 - start, 0)
    draws = np.empty(n_draws, dtype=np.int32)
    seed = rng[t]
    for k in range(n_draws):  # draw k swaps position n_cards - 1 - k
        z = _mix(seed + _U64(k + 1) * _GOLDEN)
        draws[k] = start + np.int32(float(z >> _U64(11)) * _TO_UNIT * (n_cards - start - k))
    rng[t] = seed + _U64(n_draws) * _GOLDEN
    for k in range(n_draws):
        i = n_cards - 1 - k
        j = draws[k]
        tmp = cards[t, i]
        cards[t, i] = cards[t, j]
        cards[t, j] = tmp
    for r in range(_N_RANKS):
        counts[t, r] = per_rank
        unseen[t, r] = per_rank
    pos = 0
    if burn:
        first = cards[t, 0] - 1
        counts[t, first] -= 1
        unseen[t, first] -= 1  # turned face up: seen
        pos = 1
        for _ in range(R.BURN_COUNTS[first]):
            counts[t, cards[t, pos] - 1] -= 1  # burned face down: gone, but not seen
            pos += 1
    shoe.position[t] = pos


@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]
def deal_rows(start, stop, active, shoe, hand, hand_after_cut, burn):  # noqa: C901 - the hand loop of the engine: a call per step costs speed
    """Deal one hand at every table ``t`` of ``start..stop-1`` where ``active[t]``, from a
    :class:`ShoeView` into a :class:`HandView` (tables sitting out get an empty result row and keep
    their state); a table whose cut card has come out reshuffles first (after one more hand with
    ``hand_after_cut``). The caller has checked the rows (:func:`check_rows`): this trusts them."""
    cards = shoe.shoe
    position = shoe.position
    counts = shoe.counts
    unseen = shoe.unseen
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
    for t in range(start, stop):
        if not active[t]:  # a table sitting this hand out: untouched state, an empty result row
            for k in range(_MAX_CARDS):
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
            new_shoe(t, shoe, np.int64(0), burn)  # (the signature of _init_rows: one specialization)
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


DEAL_MIN_TABLES = 8192
"""Batches of at least this many tables are dealt on several threads (:mod:`pb_gym.threads`); below
that, waking a thread costs more than the hands."""
SHUFFLE_MIN_TABLES = 128
"""The same for shuffling (a shuffle is some hundreds of cards: threads pay off sooner)."""


@numba.njit(cache=True, nogil=True)
def _init_rows(start, stop, shoe, stack_len, burn):
    for t in range(start, stop):
        new_shoe(t, shoe, stack_len, burn)


@numba.njit(cache=True, nogil=True)
def _shuffle_rows(start, stop, tables, shoe, burn):
    for i in range(start, stop):
        t = tables[i]
        new_shoe(t, shoe, np.int64(0), burn)
        shoe.hands_in_shoe[t] = 0
        shoe.shoes_started[t] += 1
        shoe.cut_hands[t] = 0


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


TABLE_PROBLEMS = {
    1: "its position is outside the shoe",
    2: "its counts by rank are negative, above the unseen counts or above a full shoe",
    3: "its counts by rank do not add up to the cards left behind its position",
    4: "it would deal past the end of the shoe (position beyond the cut card)",
    5: "a card code of the next hand is outside 1..13",
    6: "its shoe does not hold the cards of these rules",
}
SHOE_MISMATCH = 6
"""Problem code of a shoe array whose length is not the rules' (kernels that skip
:func:`check_state` per call test it themselves: :func:`pb_gym.session.play_rows`)."""


def array_fields(*fields: tuple[str, type, int]) -> tuple[tuple[str, np.dtype, int], ...]:
    """``(name, dtype, dimensions)`` of each array field of a :class:`CheckedArrays` class."""
    return tuple((name, np.dtype(dtype), ndim) for name, dtype, ndim in fields)


STATE_ARRAYS = array_fields(
    ("shoe", np.uint8, 2),
    ("position", np.int32, 1),
    ("counts", np.int16, 2),
    ("unseen", np.int16, 2),
    ("hands_in_shoe", np.int32, 1),
    ("shoes_started", np.int64, 1),
    ("cut_hands", np.int8, 1),
    ("rng", np.uint64, 1),
)
"""(name, dtype, dimensions) of each array of a :class:`ShoeState`, as :func:`init` makes them."""
RESULT_ARRAYS = array_fields(
    ("player_cards", np.uint8, 2),
    ("banker_cards", np.uint8, 2),
    ("player_total", np.uint8, 1),
    ("banker_total", np.uint8, 1),
    ("player_ncards", np.uint8, 1),
    ("banker_ncards", np.uint8, 1),
    ("outcome", np.uint8, 1),
    ("winner", np.uint8, 1),
    ("natural", np.bool_, 1),
    ("player_pair", np.bool_, 1),
    ("banker_pair", np.bool_, 1),
    ("shuffled", np.bool_, 1),
)
"""(name, dtype, dimensions) of each array of a :class:`HandResult`, as :meth:`HandResult.empty`."""


@structref.register
class _ShoeViewType(types.StructRef):
    def preprocess_fields(self, fields: Any) -> tuple:
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class ShoeView(structref.StructRefProxy):
    """A :class:`ShoeState`'s arrays (and ``cut_position``) as the kernels take them: one compiled
    object whose fields are read by name (``shoe.position``), never by place. Made by
    :attr:`ShoeState.view`."""


@structref.register
class _HandViewType(types.StructRef):
    def preprocess_fields(self, fields: Any) -> tuple:
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class HandView(structref.StructRefProxy):
    """A :class:`HandResult`'s arrays as the kernels take them (fields read by name). Made by
    :attr:`HandResult.view`."""


SHOE_VIEW_FIELDS = tuple(name for name, _, _ in STATE_ARRAYS) + ("cut_position",)
HAND_VIEW_FIELDS = tuple(name for name, _, _ in RESULT_ARRAYS)
structref.define_proxy(ShoeView, _ShoeViewType, list(SHOE_VIEW_FIELDS))
structref.define_proxy(HandView, _HandViewType, list(HAND_VIEW_FIELDS))


# The views are built by cached kernels: a proxy class called from Python compiles its constructor
# again in every process (about 0.5 s each, even with a warm cache).
@numba.njit(cache=True)
def _new_shoe_view(*fields):
    return ShoeView(*fields)


@numba.njit(cache=True)
def _new_hand_view(*fields):
    return HandView(*fields)


def check_arrays(owner: str, obj: object, fields: tuple, n: int, width: dict[str, int]) -> None:
    """Every array field of ``obj`` has its dtype, ``n`` rows and (2-D ones) the given width;
    ValueError naming ``owner.field`` otherwise."""
    for name, dtype, ndim in fields:
        array = getattr(obj, name)
        shape = (n, width[name]) if ndim == 2 else (n,)
        if (
            type(array) is np.ndarray
            and (array.dtype is dtype or array.dtype == dtype)
            and (array.shape == shape)
        ):
            continue
        got = f"{array.shape} of {array.dtype}" if isinstance(array, np.ndarray) else type(array).__name__
        raise ValueError(f"{owner}.{name} must be a {dtype.name} array of shape {shape}; got {got}")


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


def raise_table_problem(table: int, problem: int) -> None:
    """Raise the ValueError of :func:`check_rows`'s ``(table, problem)`` (nothing for ``table < 0``)."""
    if table >= 0:
        raise ValueError(
            f"the state of table {table} is inconsistent: {TABLE_PROBLEMS[problem]} "
            "(was it changed by hand, or made for other Rules?)"
        )


class CheckedArrays:
    """Base of the array dataclasses the kernels take (the engine's, the session's): the dtypes and
    shapes of their arrays are checked when one is built and whenever an array is replaced, so that
    the kernels can trust them.

    ``version`` counts the arrays replaced in this object, and each counter given to :meth:`watch`
    (a session's) moves with it: code that keeps its arrays (a :attr:`view`,
    :meth:`pb_gym.session.Session.structs`) rebuilds them when it moves. A class with a ``_VIEW`` (a
    compiled constructor of a structref proxy whose fields are the ``_VIEW_FIELDS``) hands the kernels
    that one compiled object (:attr:`view`), made on first use and again after a replacement."""

    __slots__ = ("__dict__", "__weakref__", "_version", "_view", "_watchers")  # (not in vars())
    _version: int
    _view: Any
    _watchers: tuple[list[int], ...]
    _FIELDS: tuple = ()  # (name, dtype, ndim) of each array field, the first one giving n
    _VIEW: Any = None
    _VIEW_FIELDS: tuple[str, ...] = ()

    def _widths(self) -> dict[str, int]:
        raise NotImplementedError

    def _check(self) -> None:
        first = getattr(self, self._FIELDS[0][0])
        if type(first) is not np.ndarray or first.ndim != self._FIELDS[0][2] or first.shape[0] < 1:
            raise ValueError(
                f"{type(self).__name__}.{self._FIELDS[0][0]} must be a "
                f"{self._FIELDS[0][2]}-D array with one row per table"
            )
        check_arrays(type(self).__name__, self, self._FIELDS, first.shape[0], self._widths())
        for name, _, _ in self._FIELDS:  # (the kernels read some arrays as one flat run)
            if not getattr(self, name).flags.c_contiguous:
                raise ValueError(f"{type(self).__name__}.{name} must be C-contiguous (np.ascontiguousarray)")

    def __post_init__(self) -> None:
        self._check()
        object.__setattr__(self, "_version", 0)
        object.__setattr__(self, "_view", None)
        object.__setattr__(self, "_watchers", ())

    def watch(self, counter: list[int]) -> None:
        """Add one to ``counter[0]`` too whenever an array of this object is replaced."""
        object.__setattr__(self, "_watchers", (*self._watchers, counter))

    @property
    def version(self) -> int:
        """Arrays replaced in this object since it was built."""
        return self._version

    @property
    def view(self) -> Any:
        """The arrays as the kernels take them (one compiled object, fields by name)."""
        view = self._view
        if view is None:
            view = self._VIEW(*(getattr(self, name) for name in self._VIEW_FIELDS))
            object.__setattr__(self, "_view", view)
        return view

    def __setattr__(self, name: str, value: object) -> None:
        fields = self.__dataclass_fields__  # type: ignore[attr-defined]
        built = next(reversed(fields)) in self.__dict__  # __init__ sets the fields in order
        object.__setattr__(self, name, value)
        if built and name in fields:
            object.__setattr__(self, "_view", None)
            object.__setattr__(self, "_version", self._version + 1)
            for counter in self._watchers:
                counter[0] += 1
            self._check()

    def __getstate__(self) -> dict:
        # the view is compiled code's: made again on first use (a session's counter in the watchers is
        # the same list again when the session is in the same pickle or deep copy)
        return {"fields": dict(self.__dict__), "watchers": self._watchers}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state["fields"])
        object.__setattr__(self, "_version", 0)
        object.__setattr__(self, "_view", None)
        object.__setattr__(self, "_watchers", state["watchers"])


def _per_rank(rules: Rules) -> int:
    return R.CARDS_PER_RANK_PER_DECK * rules.decks


def check_result(result: HandResult, n: int) -> None:
    """Check that ``result`` can receive a hand at each of ``n`` tables (``out=`` of :func:`deal`)."""
    if not isinstance(result, HandResult):
        raise TypeError(
            f"out must be a pb_gym.engine.HandResult (HandResult.empty(n)), got {type(result).__name__}"
        )
    if len(result) != n:
        raise ValueError(f"out holds {len(result)} tables but the state has {n}")


@dataclasses.dataclass
class ShoeState(CheckedArrays):
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

    The arrays' dtypes and shapes are checked when the state is built and when an array is replaced
    (ValueError naming the array); :func:`deal` checks the state against its rules.
    """

    _FIELDS = STATE_ARRAYS
    _VIEW = staticmethod(_new_shoe_view)
    _VIEW_FIELDS = SHOE_VIEW_FIELDS

    shoe: np.ndarray
    position: np.ndarray
    counts: np.ndarray
    unseen: np.ndarray
    hands_in_shoe: np.ndarray
    shoes_started: np.ndarray
    cut_hands: np.ndarray
    rng: np.ndarray
    cut_position: int

    def _widths(self) -> dict[str, int]:
        return {"shoe": self.shoe.shape[1], "counts": R.N_RANKS, "unseen": R.N_RANKS}

    @property
    def n_tables(self) -> int:
        """Number of tables."""
        return self.shoe.shape[0]

    @property
    def cards_left(self) -> np.ndarray:
        """Cards not yet dealt or burned, per table."""
        return self.shoe.shape[1] - self.position

    def copy(self) -> ShoeState:
        """A deep copy (the engine updates states in place)."""
        fields: dict[str, Any] = {
            f.name: (np.copy(getattr(self, f.name)) if f.name != "cut_position" else self.cut_position)
            for f in dataclasses.fields(self)
        }
        return ShoeState(**fields)


@dataclasses.dataclass
class HandResult(CheckedArrays):
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

    The arrays' dtypes and shapes (those of :meth:`empty`) are checked when a result is built and
    when an array is replaced, so that :func:`deal` can write into it (``out=``).
    """

    _FIELDS = RESULT_ARRAYS
    _VIEW = staticmethod(_new_hand_view)
    _VIEW_FIELDS = HAND_VIEW_FIELDS

    def _widths(self) -> dict[str, int]:
        return {"player_cards": 3, "banker_cards": 3}

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
    def empty(cls, n: int) -> HandResult:
        """Preallocated result arrays for ``n`` tables (pass as ``out=`` to reuse memory)."""
        u8 = np.uint8
        return cls(
            np.zeros((n, 3), u8),
            np.zeros((n, 3), u8),
            np.zeros(n, u8),
            np.zeros(n, u8),
            np.zeros(n, u8),
            np.zeros(n, u8),
            np.zeros(n, u8),
            np.zeros(n, u8),
            np.zeros(n, np.bool_),
            np.zeros(n, np.bool_),
            np.zeros(n, np.bool_),
            np.zeros(n, np.bool_),
        )

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
            raise ValueError(
                f"seed must be an int or {n_tables} ints (one per table); got {seeds.shape} of {seeds.dtype}"
            )
        if seeds.size and seeds.min() < 0:
            raise ValueError(
                f"seed={int(seeds.min())} (table {int(np.argmin(seeds))}) is not "
                "allowed; allowed: ints >= 0, one per table"
            )
        return np.array(
            [np.random.SeedSequence(int(s)).generate_state(1, dtype=np.uint64)[0] for s in seeds],
            dtype=np.uint64,
        )
    if isinstance(seed, (bool, np.bool_)) or not (
        seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence))
    ):
        raise ValueError(
            f"seed={seed!r} is not allowed; allowed: an int >= 0, a SeedSequence, None, or one int per table"
        )
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(
            f"seed={int(seed)} is not allowed; allowed: an int >= 0, a SeedSequence, "
            "None, or one int per table"
        )
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return seq.generate_state(n_tables, dtype=np.uint64)


def _parse_stack(stack: Sequence | np.ndarray, rules: Rules, n_tables: int) -> np.ndarray:
    """Validate a stacked shoe top: card names or codes, one row per table or one row for all."""
    arr = np.asarray(stack, dtype=object)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] not in (1, n_tables):
        raise ValueError(
            f"stack must be a list of cards or one list per table ({n_tables} tables); got shape {arr.shape}"
        )
    codes = np.vectorize(R.card_code, otypes=[np.uint8])(arr) if arr.size else arr.astype(np.uint8)
    if codes.shape[1] > rules.n_cards:
        raise ValueError(
            f"stack has {codes.shape[1]} cards but a {rules.decks}-deck shoe holds {rules.n_cards}"
        )
    per_rank = R.CARDS_PER_RANK_PER_DECK * rules.decks
    for row_index, row in enumerate(codes):
        used = np.bincount(row.astype(np.intp) - 1, minlength=R.N_RANKS)
        over = np.flatnonzero(used > per_rank)
        if over.size:
            r = over[0]
            raise ValueError(
                f"impossible stack (table {row_index}): {used[r]} cards of rank "
                f"{R.RANKS[r]} but a {rules.decks}-deck shoe holds only {per_rank}"
            )
    return np.broadcast_to(codes, (n_tables, codes.shape[1]))


def table_bytes(rules: Rules) -> int:
    """Bytes of one table's state (:class:`ShoeState`: the shoe, counts, counters) and of its row of a
    :class:`HandResult`: what :func:`init` and a :func:`deal` allocate per table."""
    state = sum(
        dtype.itemsize * (rules.n_cards if name == "shoe" else R.N_RANKS if ndim == 2 else 1)
        for name, dtype, ndim in STATE_ARRAYS
    )
    return state + sum(dtype.itemsize * (3 if ndim == 2 else 1) for _, dtype, ndim in RESULT_ARRAYS)


def init(
    rules: Rules, n_tables: int, seed: Seed = None, stack: Sequence | np.ndarray | None = None
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
    """
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a pb_gym.Rules, got {type(rules).__name__}")
    if isinstance(n_tables, bool) or not isinstance(n_tables, (int, np.integer)) or n_tables < 1:
        raise ValueError(f"n_tables={n_tables!r} is not allowed; allowed: an integer >= 1")
    n_tables = int(n_tables)
    progress.note_compiling(sys.modules[__name__])  # the first run on a machine compiles the deal
    memory.require(
        n_tables * table_bytes(rules), f"a shoe state of {n_tables:,} tables", "deal fewer tables at once"
    )
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
    problems: list[tuple[int, int]] = []

    def rows(start: int, stop: int) -> None:
        # each block of tables is checked just before it is dealt (its rows are then in cache)
        found = deal_checked_rows(start, stop, active, shoe, hand, hand_after_cut, burn, per_rank)
        if found[0] >= 0:
            problems.append(found)

    parallel_for(n, rows, DEAL_MIN_TABLES)
    if problems:
        raise_table_problem(*min(problems))
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
    run_rows(_shuffle_rows, index.size, SHUFFLE_MIN_TABLES, index, state.view, bool(rules.burn))
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
    return np.where(shoe_over(rules, state)[:, None], R.full_shoe(rules.decks), state.unseen)


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
