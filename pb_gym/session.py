"""The table session: N tables, K seats (players) at each, one hand at every table per call.

Every kind of player -- an environment action, a betting system, a learned policy, a card counter --
asks for stakes; the session does everything else, once, for all of them:

* **the stake rules** (:func:`_place_seat`, in this order, for every seat still playing at a table
  that deals):

  1. the *requested* stake of each bet column (``requested[k, t, j] >= 0``, in the session's amount
     unit);
  2. each column is capped at the table maximum, then at the seat's bankroll;
  3. if the columns together exceed the bankroll they are scaled down in proportion so that they add
     up to the bankroll (a rounding excess comes off the seat's *chosen* column, below);
  4. a column below the table minimum is not placed (stake 0); when no-bet is not allowed
     (``Limits.allow_no_bet=False``) and nothing would be placed, the table minimum is placed on the
     chosen column (the column of the largest request, the first on ties) while the bankroll covers it.

  Per seat the session reports what was placed and where a rule cut the request: ``table_capped``
  (some request above the table maximum) and ``bankroll_capped`` (some stake above the bankroll after
  step 2, or the proportional scale-down of step 3).
* **the deal**: one :func:`pb_gym.engine.deal` of every table's shoe (all seats of a table share its
  hand: common random numbers);
* **settlement** through ONE payoff matrix, ``payoffs[hand_class, column]`` (:func:`payoff_matrix`:
  :meth:`pb_gym.rules.Rules.payoff_matrix`, row = :func:`pb_gym.rules.hand_class`): the net win of a
  seat is ``sum_j stake_j * payoffs[class, j]``; the bankroll moves by it;
* **the table's records** (bead plate, last hand, its cards; cleared at each new shoe);
* **the end conditions per seat** (:data:`END_REASONS`, first match wins): ruin (bankroll below the
  table minimum), win target (bankroll at or above it), stop loss (bankroll at or below the floor)
  -- these *terminate* --; the seat's hand limit and, with ``one_shoe``, the cut card out -- these
  *truncate*.

Amounts are in one unit of the caller's choice (the environments: betting units; a study may use
money): ``Limits`` and ``requested`` must use the same. ``Limits.tolerance`` widens the comparisons
of stakes and bankrolls with the limits (``s < min - tol`` is not placed, ruin is ``b < min - tol``,
target ``b >= target - tol``, stop loss ``b <= floor + tol``), for callers whose amounts carry
rounding (0 = exact, the environments).

Design (after EnvPool / pgx): the state is arrays (:class:`Seats` ``(K, N, ...)``, :class:`TableRecords`
``(N, ...)``, the engine's :class:`~pb_gym.engine.ShoeState` and :class:`~pb_gym.engine.HandResult`);
the compiled kernels are pure functions of them that take *structs* (tuples of the state's arrays:
:func:`seat_struct`, :func:`record_struct`, ...) rather than long argument lists; each works on a
``[start, stop)`` range of tables, run serially below a batch size and on several threads above it by
:func:`pb_gym.threads.run_rows` (nogil kernels; numba's own threading layer never starts).

A new stake rule is a change in :func:`_place_seat`; a new bet column is a column of the payoff
matrix (the bet catalog's, or ``Rules.payoff_matrix``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import sys
from collections.abc import Sequence

import numba
import numpy as np

from pb_gym import engine, progress
from pb_gym import rules as R
from pb_gym.rules import Rules
from pb_gym.threads import parallel_for, run_rows

__all__ = [
    "END_REASONS",
    "LAST_HAND_FIELDS",
    "BEAD_CODES",
    "Limits",
    "Seats",
    "TableRecords",
    "Session",
    "Placement",
    "payoff_matrix",
]

# --------------------------------------------------------------------------------------------------
# Named constants
# --------------------------------------------------------------------------------------------------
END_REASONS: tuple[str, ...] = ("playing", "ruin", "target", "stop_loss", "max_hands", "one_shoe")
"""``Seats.ended`` codes: 0 = still playing; 1-3 terminate the seat's session, 4-5 truncate it."""
PLAYING, RUIN, TARGET, STOP_LOSS, MAX_HANDS, SHOE_END = range(len(END_REASONS))

LAST_HAND_FIELDS: tuple[str, ...] = (
    "banker_won",
    "player_won",
    "tie",
    "player_total",
    "banker_total",
    "player_ncards",
    "banker_ncards",
    "natural",
    "player_pair",
    "banker_pair",
)
"""Entries of a table's ``last_hand`` record (all 0 before the first hand)."""
N_LAST_HAND = len(LAST_HAND_FIELDS)
BEAD_CODES: tuple[str, ...] = ("", "B", "P", "T")
"""Bead plate codes: 0 = empty, 1 = banker win, 2 = player win, 3 = tie (``winner + 1``)."""
MAX_CARDS = 3
"""Cards a hand can hold (the third card: 0 when not drawn)."""
TWO_CARDS = 2
"""Cards of a hand without a third card (the hand class counts cards from two)."""
_TOTALS, _, _CARD_AXIS, _, _PAIR_AXIS, _ = R.HAND_CLASS_SHAPE  # 10 totals, 2 card counts, 2 pair flags

SHOE_MISMATCH = engine.SHOE_MISMATCH

PLAY_MIN_TABLES = engine.DEAL_MIN_TABLES
"""Batches of at least this many tables are played on several threads (:mod:`pb_gym.threads`): the
deal dominates a hand's work, so the engine's threshold applies. (A study's session of 15 seats at
5,000 tables was slower on two threads than on one on a loaded machine, measured side by side: a
hand's handoff to a pool thread waits for that thread to be scheduled.)"""


@functools.lru_cache(maxsize=32)
def payoff_matrix(rules: Rules) -> np.ndarray:
    """``(N_HAND_CLASSES, 7)`` net win per unit staked, row = hand class, column = bet
    (:meth:`pb_gym.rules.Rules.payoff_matrix`), C-contiguous and read-only (computed once per rules)."""
    matrix = np.ascontiguousarray(rules.payoff_matrix(), dtype=np.float64)
    matrix.flags.writeable = False
    return matrix


def _bad(name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"{name}={value!r} is not allowed; allowed: {allowed}")


def _is_number(value: object) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(float(value))
    )


# --------------------------------------------------------------------------------------------------
# Limits: the table's money rules and the seats' end conditions
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Limits:
    """The table's limits and every seat's end conditions, in the session's amount unit.

    Args:
        bankroll: every seat's starting bankroll (>= ``table_min``).
        table_min: the table minimum stake per bet column (0 < ``table_min`` <= ``table_max``).
        table_max: the table maximum stake per bet column.
        win_target: a seat whose bankroll reaches it ends (``target``); None = none.
        stop_loss_floor: a seat whose bankroll falls to it or below ends (``stop_loss``); None = none.
        max_hands: a seat ends (``max_hands``, a truncation) after this many hands; None = none.
        one_shoe: a seat ends (``one_shoe``, a truncation) when the cut card has come out.
        allow_no_bet: False forces a bet every hand (the table minimum on the chosen column).
        tolerance: slack of the comparisons with the limits (see the module docstring); 0 = exact.
    """

    bankroll: float
    table_min: float
    table_max: float
    win_target: float | None = None
    stop_loss_floor: float | None = None
    max_hands: int | None = None
    one_shoe: bool = False
    allow_no_bet: bool = True
    tolerance: float = 0.0

    def __post_init__(self) -> None:
        for name in ("bankroll", "table_min", "table_max"):
            value = getattr(self, name)
            if not _is_number(value) or value <= 0:
                raise _bad(f"Limits.{name}", value, "a positive number")
        if self.table_max < self.table_min:
            raise _bad("Limits.table_max", self.table_max, f"a number >= table_min ({self.table_min:g})")
        if self.win_target is not None and not _is_number(self.win_target):
            raise _bad("Limits.win_target", self.win_target, "None or a number")
        if self.stop_loss_floor is not None and not _is_number(self.stop_loss_floor):
            raise _bad("Limits.stop_loss_floor", self.stop_loss_floor, "None or a number")
        if self.max_hands is not None and (
            isinstance(self.max_hands, bool)
            or not isinstance(self.max_hands, (int, np.integer))
            or self.max_hands < 1
        ):
            raise _bad("Limits.max_hands", self.max_hands, "None or an integer >= 1")
        for name in ("one_shoe", "allow_no_bet"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise _bad(f"Limits.{name}", getattr(self, name), "True or False")
        if not _is_number(self.tolerance) or self.tolerance < 0:
            raise _bad("Limits.tolerance", self.tolerance, "a number >= 0")

    def struct(self) -> tuple:
        """The limits as the kernels read them: ``(table_min, table_max, target (inf = none), floor
        (-inf = none), max_hands (0 = none), one_shoe, forced, tolerance)``."""
        return (
            float(self.table_min),
            float(self.table_max),
            math.inf if self.win_target is None else float(self.win_target),
            -math.inf if self.stop_loss_floor is None else float(self.stop_loss_floor),
            0 if self.max_hands is None else int(self.max_hands),
            bool(self.one_shoe),
            not self.allow_no_bet,
            float(self.tolerance),
        )


# --------------------------------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------------------------------
def _fields(*fields: tuple[str, type, int]) -> tuple:
    return engine.array_fields(*fields)


@dataclasses.dataclass
class Seats(engine.CheckedArrays):
    """Every seat's state, ``(K seats, N tables, ...)``. Amounts in the session's unit.

    Attributes:
        bankroll: current bankroll.
        hands: hands the seat has played (been dealt while playing) since its start.
        ended: :data:`END_REASONS` code: 0 while playing, else why the seat's session ended (sticky
            sessions keep it until :meth:`Session.reset`; otherwise it says why this hand ended it).
        stakes: ``(K, N, n_bets)`` stakes placed on the last hand (0 where nothing was placed).
        net: the net win of the last hand.
        placed: the seat placed a stake on the last hand.
        table_capped: a request of the last hand was above the table maximum (cut to it).
        bankroll_capped: the last hand's stakes were cut to the bankroll (all-in, or scaled down).
        terminated, truncated: the seat's session ended with the last hand (ruin / target / stop loss;
            hand limit / shoe end).
    """

    _FIELDS = _fields(
        ("bankroll", np.float64, 2),
        ("hands", np.int64, 2),
        ("ended", np.int8, 2),
        ("stakes", np.float64, 3),
        ("net", np.float64, 2),
        ("placed", np.bool_, 2),
        ("table_capped", np.bool_, 2),
        ("bankroll_capped", np.bool_, 2),
        ("terminated", np.bool_, 2),
        ("truncated", np.bool_, 2),
    )

    bankroll: np.ndarray
    hands: np.ndarray
    ended: np.ndarray
    stakes: np.ndarray
    net: np.ndarray
    placed: np.ndarray
    table_capped: np.ndarray
    bankroll_capped: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray

    def _check(self) -> None:
        k, n = self.bankroll.shape if self.bankroll.ndim == 2 else (0, 0)
        for name, dtype, ndim in self._FIELDS:
            array = getattr(self, name)
            shape = (k, n, self.stakes.shape[-1] if self.stakes.ndim == 3 else -1) if ndim == 3 else (k, n)
            if (
                type(array) is np.ndarray
                and array.dtype == dtype
                and array.shape == shape
                and array.flags.c_contiguous
                and k >= 1
                and n >= 1
            ):
                continue
            got = f"{array.shape} of {array.dtype}" if isinstance(array, np.ndarray) else type(array).__name__
            raise ValueError(
                f"Seats.{name} must be a C-contiguous {dtype.name} array of shape {shape}; got {got}"
            )

    @classmethod
    def empty(cls, n_seats: int, n_tables: int, n_bets: int) -> Seats:
        k, n = n_seats, n_tables
        return cls(
            np.zeros((k, n)),
            np.zeros((k, n), np.int64),
            np.zeros((k, n), np.int8),
            np.zeros((k, n, n_bets)),
            np.zeros((k, n)),
            *(np.zeros((k, n), np.bool_) for _ in range(5)),
        )


@dataclasses.dataclass
class TableRecords(engine.CheckedArrays):
    """What each table shows of its past, ``(N, ...)``.

    Attributes:
        bead: ``(N, history)`` int8 :data:`BEAD_CODES` of this shoe's hands, most recent first
            (cleared at each new shoe).
        last_hand: ``(N, 10)`` float32 :data:`LAST_HAND_FIELDS` of the last hand (0s before the first).
        player_cards, banker_cards: ``(N, 3)`` uint8 cards of the last hand (0 = none).
        hand_class: ``(N,)`` int16 :func:`pb_gym.rules.hand_class` of the last hand dealt (at a table
            offering suited bets, plus ``N_HAND_CLASSES`` x its suit class:
            :data:`pb_gym.rules.N_SUITED_CLASSES`).
    """

    _FIELDS = _fields(
        ("bead", np.int8, 2),
        ("last_hand", np.float32, 2),
        ("player_cards", np.uint8, 2),
        ("banker_cards", np.uint8, 2),
        ("hand_class", np.int16, 1),
    )

    bead: np.ndarray
    last_hand: np.ndarray
    player_cards: np.ndarray
    banker_cards: np.ndarray
    hand_class: np.ndarray

    def _widths(self) -> dict[str, int]:
        return {
            "bead": self.bead.shape[1] if self.bead.ndim == 2 else -1,
            "last_hand": N_LAST_HAND,
            "player_cards": MAX_CARDS,
            "banker_cards": MAX_CARDS,
        }

    @classmethod
    def empty(cls, n_tables: int, history: int) -> TableRecords:
        n = n_tables
        return cls(
            np.zeros((n, history), np.int8),
            np.zeros((n, N_LAST_HAND), np.float32),
            np.zeros((n, MAX_CARDS), np.uint8),
            np.zeros((n, MAX_CARDS), np.uint8),
            np.zeros(n, np.int16),
        )


# ---- structs: the tuples of arrays the kernels take ----------------------------------------------
_SEAT_NAMES = tuple(name for name, _, _ in Seats._FIELDS)
_RECORD_NAMES = tuple(name for name, _, _ in TableRecords._FIELDS)
seat_struct = operator.attrgetter(*_SEAT_NAMES)
"""``seat_struct(seats)``: the tuple of :class:`Seats` arrays the kernels take."""
record_struct = operator.attrgetter(*_RECORD_NAMES)
shoe_struct = operator.attrgetter("view")
"""``shoe_struct(state)``: the :class:`pb_gym.engine.ShoeView` of a shoe state (fields by name)."""
hand_struct = operator.attrgetter("view")
"""``hand_struct(hand)``: the :class:`pb_gym.engine.HandView` of a hand result (fields by name)."""


@functools.lru_cache(maxsize=32)
def deal_constants(rules: Rules) -> tuple:
    """The per-rules constants of the deal, as one struct: ``(hand_after_cut, burn, cards per rank
    of a full shoe)`` (the drawing rules, card values and outcome classes are module constants of
    :mod:`pb_gym.rules`, compiled into the kernels)."""
    return (bool(rules.hand_after_cut), bool(rules.burn), R.CARDS_PER_RANK_PER_DECK * rules.decks)


# --------------------------------------------------------------------------------------------------
# Kernels: each runs over a range of tables ``start..stop-1`` and takes the state as structs; the
# row bodies are written out in the loops (a row function taking a dozen arrays costs more per call
# than the row's work: every array is passed and reference-counted at each call)
# --------------------------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True, inline="always")
def _place_single(k, t, b, requested, chosen, stakes, table_min, table_max, forced, tol):
    """The stake rules on the seat's chosen column alone (``single``: see :func:`place_rows`): steps 2
    and 4 (step 3 cannot apply)."""
    for j in range(stakes.shape[2]):
        stakes[k, t, j] = 0.0
    c = chosen[k, t]
    s = requested[k, t, c] if c >= 0 else 0.0
    c = max(c, 0)
    over_max = s > table_max + tol
    if s > table_max:  # 2. the table maximum, then the bankroll
        s = table_max
    over_bankroll = s > b
    if over_bankroll:
        s = b
    any_placed = s != 0.0 and s >= table_min - tol  # 4. below the minimum: not placed
    if any_placed:
        stakes[k, t, c] = s
    elif forced and b >= table_min - tol:
        stakes[k, t, c] = table_min
        any_placed = True
    return any_placed, over_max, over_bankroll


@numba.njit(cache=True, nogil=True, inline="always")
def _cap_requests(k, t, b, requested, stakes, table_max, tol):
    """Steps 1 and 2: every requested column cut to the table maximum, then to the bankroll. Returns
    ``(top column, columns requested, total, over_max, over_bankroll)``."""
    top = 0
    top_request = 0.0
    total = 0.0
    over_max = False
    over_bankroll = False
    requested_columns = 0
    for j in range(stakes.shape[2]):
        s = requested[k, t, j]
        if s == 0.0:  # (most columns: nothing asked)
            stakes[k, t, j] = 0.0
            continue
        requested_columns += 1
        if s > top_request:
            top_request = s
            top = j
        over_max = over_max or s > table_max + tol
        s = min(s, table_max)
        if s > b:
            s = b
            over_bankroll = True
        stakes[k, t, j] = s
        total += s
    return top, requested_columns, total, over_max, over_bankroll


@numba.njit(cache=True, nogil=True, inline="always")
def _scale_down(k, t, b, total, top, chosen, stakes):
    """Step 3: columns that together exceed the bankroll scaled down in proportion (a rounding excess
    comes off the chosen column)."""
    f = b / total
    total = 0.0
    for j in range(stakes.shape[2]):
        stakes[k, t, j] *= f
        total += stakes[k, t, j]
    if total > b:
        c = chosen[k, t]
        stakes[k, t, c if c >= 0 else top] -= total - b


@numba.njit(cache=True, nogil=True, inline="always")
def _drop_below_minimum(k, t, top, requested_columns, stakes, table_min, tol):
    """Step 4: a column below the table minimum is not placed; returns whether any is."""
    if requested_columns == 1 and stakes[k, t, top] != 0.0:  # the usual single bet
        if stakes[k, t, top] < table_min - tol:
            stakes[k, t, top] = 0.0
            return False
        return True
    any_placed = False
    for j in range(stakes.shape[2]):
        if stakes[k, t, j] < table_min - tol:
            stakes[k, t, j] = 0.0
        else:
            any_placed = True
    return any_placed


@numba.njit(cache=True, nogil=True, inline="always")
def _place_seat(k, t, b, requested, chosen, stakes, table_min, table_max, forced, tol, single):
    """THE stake rules (module docstring, steps 1-4) for seat ``k`` at table ``t`` with bankroll
    ``b``: writes ``stakes[k, t, :]`` and returns ``(placed, table_capped, bankroll_capped)``.
    ``single``: see :func:`place_rows`. (Inlined, with its steps, into its two callers,
    :func:`place_rows` and :func:`settle_rows`: a call taking these arrays would cost more than the
    rules.)"""
    if single:
        return _place_single(k, t, b, requested, chosen, stakes, table_min, table_max, forced, tol)
    top, requested_columns, total, over_max, over_bankroll = _cap_requests(
        k, t, b, requested, stakes, table_max, tol
    )
    if total > b:  # 3. several columns over the bankroll
        over_bankroll = True
        _scale_down(k, t, b, total, top, chosen, stakes)
    any_placed = _drop_below_minimum(k, t, top, requested_columns, stakes, table_min, tol)
    if forced and not any_placed and b >= table_min - tol:
        c = chosen[k, t]  # (read only here: most seats never need it)
        stakes[k, t, c if c >= 0 else top] = table_min
        any_placed = True
    return any_placed, over_max, over_bankroll


@numba.njit(cache=True, nogil=True)
def place_rows(start, stop, deal, requested, chosen, sticky, seats, limits, single=False):
    """THE stake rules (:func:`_place_seat`) for every seat still playing at the tables of
    ``start..stop-1`` that deal: writes the seats' ``stakes``, ``placed``, ``table_capped`` and
    ``bankroll_capped``. ``chosen[k, t]``: the seat's chosen column, or -1 for the column of its
    largest request (the first on ties). ``single``: the caller guarantees that each seat requests
    nothing outside its chosen column (an env's discrete action), so the other columns are not read:
    the same rules on one column (steps 2 and 4; step 3 cannot apply)."""
    bankroll, _, ended, stakes, _, placed, table_capped, bankroll_capped, _, _ = seats
    table_min, table_max, _, _, _, _, forced, tol = limits
    for k in range(ended.shape[0]):  # seat by seat: every array's row of a seat is contiguous
        for t in range(start, stop):
            if not deal[t] or (sticky and ended[k, t] != PLAYING):
                continue
            placed[k, t], table_capped[k, t], bankroll_capped[k, t] = _place_seat(
                k, t, bankroll[k, t], requested, chosen, stakes, table_min, table_max, forced, tol, single
            )


@numba.njit(cache=True, nogil=True)
def record_rows(start, stop, deal, hand, records, suited=False):
    """Fold the hand just dealt at every table of ``start..stop-1`` that dealt into the table's
    records (bead plate, last hand, cards, hand class). ``suited``: the hand class is the suited one
    (:data:`pb_gym.rules.N_SUITED_CLASSES`, the hand's cards' suits read), for a table offering
    suited bets."""
    player_cards, banker_cards = hand.player_cards, hand.banker_cards
    player_total, banker_total = hand.player_total, hand.banker_total
    player_ncards, banker_ncards = hand.player_ncards, hand.banker_ncards
    winner, natural, shuffled = hand.winner, hand.natural, hand.shuffled
    player_pair, banker_pair = hand.player_pair, hand.banker_pair
    player_suits, banker_suits = hand.player_suits, hand.banker_suits
    bead, last_hand, last_player, last_banker, hand_class = records
    history = bead.shape[1]
    for t in range(start, stop):
        if not deal[t]:
            continue
        if shuffled[t]:
            for i in range(history):
                bead[t, i] = 0
        for i in range(history - 1, 0, -1):
            bead[t, i] = bead[t, i - 1]
        w = winner[t]
        bead[t, 0] = w + 1
        last_hand[t, 0] = 1.0 if w == R.BANKER else 0.0
        last_hand[t, 1] = 1.0 if w == R.PLAYER else 0.0
        last_hand[t, 2] = 1.0 if w == R.TIE else 0.0
        last_hand[t, 3] = player_total[t]
        last_hand[t, 4] = banker_total[t]
        last_hand[t, 5] = player_ncards[t]
        last_hand[t, 6] = banker_ncards[t]
        last_hand[t, 7] = 1.0 if natural[t] else 0.0
        last_hand[t, 8] = 1.0 if player_pair[t] else 0.0
        last_hand[t, 9] = 1.0 if banker_pair[t] else 0.0
        for i in range(MAX_CARDS):
            last_player[t, i] = player_cards[t, i]
            last_banker[t, i] = banker_cards[t, i]
        c = player_total[t] * _TOTALS + banker_total[t]  # pb_gym.rules.hand_class
        c = c * _CARD_AXIS + player_ncards[t] - TWO_CARDS
        c = c * _CARD_AXIS + banker_ncards[t] - TWO_CARDS
        c = c * _PAIR_AXIS + (1 if player_pair[t] else 0)
        c = c * _PAIR_AXIS + (1 if banker_pair[t] else 0)
        if suited:  # + N_HAND_CLASSES * the suit class (pb_gym.rules.N_SUIT_CLASSES)
            player_perfect = player_pair[t] and player_suits[t, 0] == player_suits[t, 1]
            banker_perfect = banker_pair[t] and banker_suits[t, 0] == banker_suits[t, 1]
            c += R.N_HAND_CLASSES * ((1 if player_perfect else 0) + (2 if banker_perfect else 0))
        hand_class[t] = c


@numba.njit(cache=True, nogil=True, inline="always")
def _sit_out(k, t, stakes, net, placed, table_capped, bankroll_capped, terminated, truncated):
    """Seat ``k`` sits this hand out at table ``t``: no stakes, no net, no flags."""
    for j in range(stakes.shape[2]):
        stakes[k, t, j] = 0.0
    net[k, t] = 0.0
    placed[k, t] = False
    table_capped[k, t] = False
    bankroll_capped[k, t] = False
    terminated[k, t] = False
    truncated[k, t] = False


@numba.njit(cache=True, nogil=True, inline="always")
def _end_reason(b, h, shoe_end, table_min, target, floor, max_hands, tol):
    """The :data:`END_REASONS` code of a seat with bankroll ``b`` after ``h`` hands (first match:
    ruin, target, stop loss terminate; the hand limit and the shoe's end truncate)."""
    if b < table_min - tol:
        return RUIN
    if b >= target - tol:
        return TARGET
    if b <= floor + tol:
        return STOP_LOSS
    if max_hands > 0 and h >= max_hands:
        return MAX_HANDS
    if shoe_end:
        return SHOE_END
    return PLAYING


@numba.njit(cache=True, nogil=True)
def settle_rows(
    start,
    stop,
    deal,
    requested,
    chosen,
    sticky,
    payoffs,
    hand_class,
    shoe,
    hand_after_cut,
    seats,
    limits,
    single=False,
):
    """After the deal (and :func:`record_rows`), every seat at the tables of ``start..stop-1``: a
    seat still playing at a table that dealt gets the stake rules (:func:`_place_seat`) on its
    request, is settled through the payoff matrix row of the hand class, and its bankroll, hand
    count and end (:data:`END_REASONS`, first match: :func:`_end_reason`) move; a seat that does not
    play this hand gets no stakes, no net and no end this hand (:func:`_sit_out`). The stakes are
    placed here, after the deal, in the same pass as settlement (they depend only on the bankroll
    before the hand and the request, never on the cards): one pass over each seat's rows, seat by
    seat (each row of a seat is contiguous). ``single``: see :func:`place_rows`."""
    (bankroll, hands, ended, stakes, net, placed, table_capped, bankroll_capped, terminated, truncated) = (
        seats
    )
    table_min, table_max, target, floor, max_hands, one_shoe, forced, tol = limits
    position, cut_hands, cut_position = shoe.position, shoe.cut_hands, shoe.cut_position
    n_bets = stakes.shape[2]
    for k in range(ended.shape[0]):
        for t in range(start, stop):
            if not deal[t] or (sticky and ended[k, t] != PLAYING):  # sits this hand out
                # (cleared once: a seat that ended hands ago is already all zeros, and rewriting its
                # rows would cost a study of many seats memory traffic; stakes are 0 unless placed)
                if (
                    placed[k, t]
                    | table_capped[k, t]
                    | bankroll_capped[k, t]
                    | terminated[k, t]
                    | truncated[k, t]
                ):
                    _sit_out(k, t, stakes, net, placed, table_capped, bankroll_capped, terminated, truncated)
                continue
            b = bankroll[k, t]
            placed[k, t], table_capped[k, t], bankroll_capped[k, t] = _place_seat(
                k, t, b, requested, chosen, stakes, table_min, table_max, forced, tol, single
            )
            row = hand_class[t]
            r = 0.0
            for j in range(n_bets):
                s = stakes[k, t, j]
                if s != 0.0:
                    r += s * payoffs[row, j]
            net[k, t] = r
            b += r
            if b < 0.0:  # rounding of proportionally scaled stakes only: stakes never exceed it
                b = 0.0
            bankroll[k, t] = b
            h = hands[k, t] + 1
            hands[k, t] = h
            # the cut card is out: the next hand would come from a new shoe
            shoe_end = one_shoe and position[t] >= cut_position and (not hand_after_cut or cut_hands[t] == 1)
            reason = _end_reason(b, h, shoe_end, table_min, target, floor, max_hands, tol)
            terminated[k, t] = RUIN <= reason <= STOP_LOSS  # ruin, target or stop loss
            truncated[k, t] = (max_hands > 0 and h >= max_hands) or shoe_end
            ended[k, t] = reason


@numba.njit(cache=True, nogil=True)
def restart_rows(index, bankroll0, seats, records):
    """The tables ``index`` start afresh: empty records, every seat there at ``bankroll0``, playing,
    no hands, nothing staked."""
    bead, last_hand, last_player, last_banker, hand_class = records
    (bankroll, hands, ended, stakes, net, placed, table_capped, bankroll_capped, terminated, truncated) = (
        seats
    )
    for i in range(index.shape[0]):
        t = index[i]
        bead[t, :] = 0
        last_hand[t, :] = 0.0
        last_player[t, :] = 0
        last_banker[t, :] = 0
        hand_class[t] = 0
        for k in range(ended.shape[0]):
            bankroll[k, t] = bankroll0
            hands[k, t] = 0
            ended[k, t] = PLAYING
            stakes[k, t, :] = 0.0
            net[k, t] = 0.0
            placed[k, t] = False
            table_capped[k, t] = False
            bankroll_capped[k, t] = False
            terminated[k, t] = False
            truncated[k, t] = False


@numba.njit(cache=True, nogil=True)
def play_rows(
    start,
    stop,
    deal,
    requested,
    chosen,
    sticky,
    seats,
    records,
    shoe,
    deal_consts,
    hand,
    payoffs,
    limits,
    single=False,
):
    """One hand at tables ``start..stop-1``: the deal at every table that deals (``deal[t]``), its
    records (:func:`record_rows`), then for every seat still playing there the stake rules,
    settlement and ends in one pass (:func:`settle_rows`). Returns ``(table, problem)`` of the
    first table whose shoe state is unusable (nothing is dealt then), or ``(-1, 0)``. ``sticky``:
    a seat that has ended sits out until reset (else it plays on). ``single``: see
    :func:`place_rows`."""
    hand_after_cut, burn, per_rank = deal_consts
    if shoe.shoe.shape[1] != per_rank * R.N_RANKS:  # the kernels would write past it
        return start, SHOE_MISMATCH
    table, problem = engine.check_rows(start, stop, shoe, hand_after_cut, per_rank)
    if table >= 0:
        return table, problem
    engine.deal_rows(start, stop, deal, shoe, hand, hand_after_cut, burn)
    record_rows(start, stop, deal, hand, records, payoffs.shape[0] == R.N_SUITED_CLASSES)
    settle_rows(
        start,
        stop,
        deal,
        requested,
        chosen,
        sticky,
        payoffs,
        records[4],
        shoe,
        hand_after_cut,
        seats,
        limits,
        single,
    )
    return -1, 0


# --------------------------------------------------------------------------------------------------
# The session
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Placement:
    """What the stake rules made of a hand's requests (new arrays, ``(K, N, ...)``)."""

    stakes: np.ndarray
    placed: np.ndarray
    table_capped: np.ndarray
    bankroll_capped: np.ndarray


class Session:
    """N tables, K seats at each, one hand at every table per :meth:`play` (module docstring).

    Args:
        rules: the table rules.
        limits: the table's limits and the seats' end conditions (:class:`Limits`).
        n_tables: N.
        n_seats: K (players sharing each table's hands).
        seed: the tables' seeds (:func:`pb_gym.engine.table_seeds`: a root seed or one per table).
        history: bead plate length of each table.
        sticky_ends: a seat whose session ended sits out (no stakes, bankroll frozen) until
            :meth:`reset` (True, a study); False: it plays on and its end is reported again at each
            hand (an environment, whose caller decides when to reset).
        payoffs: the payoff matrix ``(N_HAND_CLASSES, n_bets)``; default :func:`payoff_matrix`.
    """

    _shoe: engine.ShoeState
    # the environments' buffers of requested stakes and chosen columns, made on first use by
    # pb_gym.envs.table._scratch (absent until then)
    _env_scratch: tuple[np.ndarray, np.ndarray]

    def __init__(
        self,
        rules: Rules,
        limits: Limits,
        n_tables: int,
        n_seats: int = 1,
        *,
        seed: engine.Seed = None,
        history: int = 20,
        sticky_ends: bool = True,
        payoffs: np.ndarray | None = None,
    ) -> None:
        progress.note_compiling(sys.modules[__name__])  # the first run on a machine compiles the kernels
        if not isinstance(rules, Rules):
            raise TypeError(f"rules must be a pb_gym.Rules, got {type(rules).__name__}")
        if not isinstance(limits, Limits):
            raise TypeError(f"limits must be a pb_gym.session.Limits, got {type(limits).__name__}")
        for name, value in (("n_tables", n_tables), ("n_seats", n_seats), ("history", history)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise _bad(name, value, "an integer >= 1")
        if payoffs is None:
            payoffs = payoff_matrix(rules)
        payoffs = np.ascontiguousarray(payoffs, dtype=np.float64)
        classes = (R.N_HAND_CLASSES, R.N_SUITED_CLASSES)
        if payoffs.ndim != 2 or payoffs.shape[0] not in classes or payoffs.shape[1] < 1:
            raise ValueError(
                f"payoffs must have shape ({R.N_HAND_CLASSES}, n_bets) (one row per hand class) or "
                f"({R.N_SUITED_CLASSES}, n_bets) (per suited hand class, for suited bets); "
                f"got {payoffs.shape}"
            )
        self.rules = rules
        self.limits = limits
        self.sticky_ends = bool(sticky_ends)
        self.payoffs = payoffs
        n, k = int(n_tables), int(n_seats)
        self._changes = [0]  # arrays replaced in this session's state (see version)
        self.shoe = engine.init(rules, n, seed, suited=self.suited)
        self._hand = engine.HandResult.empty(n)
        self._records = TableRecords.empty(n, int(history))
        self._seats = Seats.empty(k, n, payoffs.shape[1])
        self._seats.bankroll[:] = limits.bankroll
        for part in (self._hand, self._records, self._seats):
            part.watch(self._changes)
        self._structs: tuple = ()
        self._structs_version = -1
        self._limits = limits.struct()
        self._deal_consts = deal_constants(rules)
        self._all = np.ones(n, dtype=np.bool_)
        self._chosen = np.full((k, n), -1, dtype=np.int64)  # "the largest request" for every seat

    def __getstate__(self) -> dict:
        """Copies and pickles leave the kernels' structs behind (compiled objects: rebuilt on use)."""
        state = self.__dict__.copy()
        state["_structs"], state["_structs_version"] = (), -1
        return state

    # ---- shape -------------------------------------------------------------------------------
    @property
    def n_tables(self) -> int:
        return self.records.bead.shape[0]

    @property
    def n_seats(self) -> int:
        return self.seats.bankroll.shape[0]

    @property
    def n_bets(self) -> int:
        return self.payoffs.shape[1]

    @property
    def history(self) -> int:
        return self.records.bead.shape[1]

    @property
    def seats(self) -> Seats:
        """Every seat's state (:class:`Seats`)."""
        return self._seats

    @property
    def records(self) -> TableRecords:
        """Every table's records (:class:`TableRecords`)."""
        return self._records

    @property
    def hand(self) -> engine.HandResult:
        """The last hand dealt at every table (rows of tables that did not deal: empty)."""
        return self._hand

    @property
    def version(self) -> int:
        """Counts the arrays replaced in this session's state (its seats, records, hand and shoe
        state) and the shoe states handed to it: what is built from its arrays (:meth:`structs`, an
        env's compiled step state) is built again when it moves."""
        return self._changes[0]

    def structs(self) -> tuple[tuple, tuple, engine.ShoeView, engine.HandView]:
        """``(seats, records, shoe, hand)`` as the kernels take them (tuples of the seats' and records'
        arrays, :func:`seat_struct` and :func:`record_struct`; the shoe state's and hand's views),
        rebuilt only when an array has been replaced since the last call (:attr:`version`)."""
        if self._structs_version != self._changes[0]:
            self._structs = (
                seat_struct(self._seats),
                record_struct(self._records),
                shoe_struct(self._shoe),
                hand_struct(self._hand),
            )
            self._structs_version = self._changes[0]
        return self._structs

    @property
    def suited(self) -> bool:
        """Whether the tables settle suited bets (a payoff matrix by suited hand class): their shoes
        track suits."""
        return self.payoffs.shape[0] == R.N_SUITED_CLASSES

    @property
    def shoe(self) -> engine.ShoeState:
        return self._shoe

    @shoe.setter
    def shoe(self, state: engine.ShoeState) -> None:
        """Replace the tables' shoe state (checked against the rules and the number of tables)."""
        engine.check_state(self.rules, state, deals=False)
        if self.suited and state.suits.shape[1] == 0:
            raise ValueError(
                "this session settles suited bets: its shoe state must track suits "
                "(engine.init(..., suited=True))"
            )
        if hasattr(self, "_shoe") and state.n_tables != self._shoe.n_tables:
            raise ValueError(
                f"the shoe state holds {state.n_tables} tables but the session has {self._shoe.n_tables}"
            )
        self._shoe = state
        state.watch(self._changes)
        self._changes[0] += 1  # the kernels' structs hold the old state's arrays

    # ---- reset -------------------------------------------------------------------------------
    def reset(
        self,
        tables: np.ndarray | Sequence[int] | None = None,
        seeds: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        """Start afresh at the given tables (indices; all if None): a new shoe (reseeded with one int
        per table if ``seeds`` is given, else continuing each table's random stream), empty records,
        and every seat there back to the starting bankroll, playing, with no hands."""
        index = np.arange(self.n_tables) if tables is None else np.asarray(tables, dtype=np.int64)
        engine.shuffle(self.rules, self.shoe, index, seed=None if seeds is None else np.asarray(seeds))
        if index.size and (index.min() < 0 or index.max() >= self.n_tables):  # (shuffle checked it)
            raise ValueError(f"table indices must be in 0..{self.n_tables - 1}")
        seats, records, _, _ = self.structs()
        restart_rows(index, float(self.limits.bankroll), seats, records)

    # ---- one hand ----------------------------------------------------------------------------
    def check_requests(self, requested: np.ndarray) -> np.ndarray:
        """``requested`` as a C-contiguous float64 ``(K, N, n_bets)`` array (``(N, n_bets)`` is taken
        as one seat), finite and >= 0; ValueError naming the problem otherwise."""
        k, n, b = self.n_seats, self.n_tables, self.n_bets
        array = np.asarray(requested, dtype=np.float64)
        if array.ndim == 2 and k == 1:
            array = array[None]
        if array.shape != (k, n, b):
            one = f" or ({n}, {b}) for one seat" if k == 1 else ""
            raise ValueError(
                f"requested stakes must have shape ({k}, {n}, {b}) (seats, tables, bet "
                f"columns){one}; got {np.shape(requested)}"
            )
        if not np.isfinite(array).all():
            raise ValueError("requested stakes must be finite numbers")
        if (array < 0).any():
            raise ValueError("requested stakes must be >= 0")
        return np.ascontiguousarray(array)

    def play(
        self, requested: np.ndarray, deal: np.ndarray | None = None, chosen: np.ndarray | None = None
    ) -> Seats:
        """Play one hand: the stake rules on ``requested`` (:meth:`check_requests`) for every seat
        still playing, one hand dealt at every table (or where the ``(N,)`` bool mask ``deal`` is
        True: the other tables keep their shoe and their seats sit out), settlement, records, ends.
        ``chosen`` ``(K, N)``: each seat's chosen column for the forced bet and the rounding
        correction (default: its largest request). Returns :attr:`seats` (updated in place)."""
        requested = self.check_requests(requested)
        n = self.n_tables
        if deal is None:
            deal = self._all
        elif type(deal) is not np.ndarray or deal.shape != (n,) or deal.dtype != np.bool_:
            raise ValueError(f"deal must be a boolean mask of shape ({n},)")
        if chosen is None:
            chosen = self._chosen
        else:
            chosen = np.asarray(chosen)
            if (
                chosen.shape != (self.n_seats, n)
                or chosen.dtype.kind not in "iu"
                or (chosen.size and (chosen.min() < -1 or chosen.max() >= self.n_bets))
            ):
                raise ValueError(f"chosen must be ({self.n_seats}, {n}) ints in -1..{self.n_bets - 1}")
            chosen = chosen.astype(np.int64)
        self._run(requested, chosen, deal)
        return self.seats

    def _run(self, requested: np.ndarray, chosen: np.ndarray, deal: np.ndarray) -> None:
        engine.check_state(self.rules, self.shoe, deals=False)
        problems: list[tuple[int, int]] = []
        seats, records, shoe, hand = self.structs()

        def rows(start: int, stop: int) -> None:
            found = play_rows(
                start,
                stop,
                deal,
                requested,
                chosen,
                self.sticky_ends,
                seats,
                records,
                shoe,
                self._deal_consts,
                hand,
                self.payoffs,
                self._limits,
            )
            if found[0] >= 0:
                problems.append(found)

        parallel_for(self.n_tables, rows, PLAY_MIN_TABLES)
        if problems:
            engine.raise_table_problem(*min(problems))

    def place(self, requested: np.ndarray, chosen: np.ndarray | None = None) -> Placement:
        """The stake rules alone (no deal, nothing changes): what :meth:`play` would place for these
        requests now, and where the table maximum or the bankroll would cut them."""
        requested = self.check_requests(requested)
        scratch = Seats(
            self.seats.bankroll.copy(),
            self.seats.hands.copy(),
            self.seats.ended.copy(),
            np.zeros_like(self.seats.stakes),
            *(np.zeros_like(getattr(self.seats, name)) for name in _SEAT_NAMES[4:]),
        )
        chosen = self._chosen if chosen is None else np.asarray(chosen, dtype=np.int64)
        place_rows(
            0,
            self.n_tables,
            self._all,
            requested,
            chosen,
            self.sticky_ends,
            seat_struct(scratch),
            self._limits,
        )
        return Placement(scratch.stakes, scratch.placed, scratch.table_capped, scratch.bankroll_capped)

    def record(self, hand: engine.HandResult) -> None:
        """Fold a hand dealt elsewhere (``(N,)`` rows) into the tables' records, as :meth:`play`
        would; the seats are left alone."""
        engine.check_result(hand, self.n_tables)
        run_rows(
            record_rows,
            self.n_tables,
            PLAY_MIN_TABLES,
            self._all,
            hand_struct(hand),
            self.structs()[1],
            self.suited,
        )
