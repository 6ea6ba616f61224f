"""The table session's data: its named constants, the table limits (:class:`Limits`), the state arrays
(:class:`Seats`, :class:`TableRecords`) and the views the compiled kernels take of them
(:class:`SeatView`, :class:`RecordView`; :mod:`pb_gym.session.kernels`). Everything here is importable
from :mod:`pb_gym.session`."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import numba
import numpy as np
from numba.experimental import structref

from pb_gym import engine
from pb_gym import rules as R
from pb_gym.rules import Rules
from pb_gym.shoe_state import NamedFields

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
(
    LAST_BANKER_WON,
    LAST_PLAYER_WON,
    LAST_TIE,
    LAST_PLAYER_TOTAL,
    LAST_BANKER_TOTAL,
    LAST_PLAYER_NCARDS,
    LAST_BANKER_NCARDS,
    LAST_NATURAL,
    LAST_PLAYER_PAIR,
    LAST_BANKER_PAIR,
) = range(N_LAST_HAND)
"""Column of each :data:`LAST_HAND_FIELDS` entry in a ``last_hand`` record (the kernels write by name)."""
BEAD_CODES: tuple[str, ...] = ("",) + R.OUTCOME_LETTERS
"""Letters of the bead plate's codes: ``""`` for :data:`pb_gym.rules.BEAD_EMPTY`, then B, P, T at
:func:`pb_gym.rules.bead_code` of each :class:`pb_gym.rules.Outcome`."""
MAX_CARDS = 3
"""Cards a hand can hold (the third card: 0 when not drawn)."""

SHOE_MISMATCH = engine.SHOE_MISMATCH

PLAY_MIN_TABLES = engine.DEAL_MIN_TABLES
"""Batches of at least this many tables are played on several threads (:mod:`pb_gym.parallel`): the
deal dominates a hand's work, so the engine's threshold applies (below it, a hand's handoff to another
thread, which waits for that thread to be scheduled, costs more than it saves)."""


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
# Constants the kernels take, as named tuples of scalars (the state's arrays: views, below)
# --------------------------------------------------------------------------------------------------
class LimitsStruct(NamedTuple):
    """:class:`Limits` as the kernels read them (:meth:`Limits.struct`)."""

    table_min: float
    table_max: float
    target: float
    """The win target (inf = none)."""
    floor: float
    """The stop-loss floor (-inf = none)."""
    max_hands: int
    """The seat's hand limit (0 = none)."""
    one_shoe: bool
    forced: bool
    """A bet is forced every hand (``not Limits.allow_no_bet``)."""
    tolerance: float


class DealConstants(NamedTuple):
    """The per-rules constants of the deal (:func:`deal_constants`)."""

    hand_after_cut: bool
    burn: bool
    per_rank: int
    """Cards of each rank in a full shoe."""


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

    def struct(self) -> LimitsStruct:
        """The limits as the kernels read them (:class:`LimitsStruct`: no target = inf, no floor =
        -inf, no hand limit = 0)."""
        return LimitsStruct(
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
@structref.register
class _SeatViewType(NamedFields):
    pass


class SeatView(structref.StructRefProxy):
    """A :class:`Seats`'s arrays as the kernels take them: one compiled object whose fields are read
    by name (``seats.bankroll``), as :class:`pb_gym.engine.ShoeView`. Made by :attr:`Seats.view`."""


@structref.register
class _RecordViewType(NamedFields):
    pass


class RecordView(structref.StructRefProxy):
    """A :class:`TableRecords`'s arrays as the kernels take them (fields read by name). Made by
    :attr:`TableRecords.view`."""


SEAT_FIELDS = engine.array_fields(
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
"""(name, dtype, dimensions) of each array of :class:`Seats`, in its order."""
RECORD_FIELDS = engine.array_fields(
    ("bead", np.int8, 2),
    ("last_hand", np.float32, 2),
    ("player_cards", np.uint8, 2),
    ("banker_cards", np.uint8, 2),
    ("hand_class", np.int16, 1),
)
"""(name, dtype, dimensions) of each array of :class:`TableRecords`, in its order."""
structref.define_proxy(SeatView, _SeatViewType, [name for name, _, _ in SEAT_FIELDS])
structref.define_proxy(RecordView, _RecordViewType, [name for name, _, _ in RECORD_FIELDS])


# built by cached kernels, as pb_gym.engine's views are
@numba.njit(cache=True)
def _new_seat_view(*fields):
    return SeatView(*fields)


@numba.njit(cache=True)
def _new_record_view(*fields):
    return RecordView(*fields)


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

    _FIELDS = SEAT_FIELDS
    _VIEW = staticmethod(_new_seat_view)
    _VIEW_FIELDS = tuple(name for name, _, _ in SEAT_FIELDS)

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
        shapes = {2: (n_seats, n_tables), 3: (n_seats, n_tables, n_bets)}
        return cls(*(np.zeros(shapes[ndim], dtype) for _, dtype, ndim in SEAT_FIELDS))


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

    _FIELDS = RECORD_FIELDS
    _VIEW = staticmethod(_new_record_view)
    _VIEW_FIELDS = tuple(name for name, _, _ in RECORD_FIELDS)

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


@functools.lru_cache(maxsize=32)
def deal_constants(rules: Rules) -> DealConstants:
    """The per-rules constants of the deal (:class:`DealConstants`; the drawing rules, card values and
    outcome classes are module constants of :mod:`pb_gym.rules`, compiled into the kernels)."""
    return DealConstants(
        bool(rules.hand_after_cut), bool(rules.burn), R.CARDS_PER_RANK_PER_DECK * rules.decks
    )
