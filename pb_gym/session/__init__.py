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
the compiled kernels are pure functions of them that take their *views* (one compiled object per part
of the state, its arrays read by name: :class:`SeatView`, :class:`RecordView`, the engine's
:class:`~pb_gym.engine.ShoeView` and :class:`~pb_gym.engine.HandView`) rather than long argument
lists; each works on a ``[start, stop)`` range of tables, run serially below a batch size and on
several threads above it by :func:`pb_gym.parallel.run_rows` (nogil kernels; numba's own threading
layer never starts).

A new stake rule is a change in :func:`_place_seat`; a new bet column is a column of the payoff
matrix (the bet catalog's, or ``Rules.payoff_matrix``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from pb_gym import engine, progress
from pb_gym import rules as R
from pb_gym.parallel import checked_rows, run_rows
from pb_gym.rules import Rules
from pb_gym.session import kernels

# the kernels and the state's names, importable from here (the environments' stepper and the studies
# that call the kernels directly import them from pb_gym.session)
from pb_gym.session.kernels import place_rows as place_rows
from pb_gym.session.kernels import play_rows as play_rows
from pb_gym.session.kernels import record_rows as record_rows
from pb_gym.session.kernels import restart_rows as restart_rows
from pb_gym.session.kernels import settle_rows as settle_rows
from pb_gym.session.state import BEAD_CODES as BEAD_CODES
from pb_gym.session.state import END_REASONS as END_REASONS
from pb_gym.session.state import LAST_HAND_FIELDS as LAST_HAND_FIELDS
from pb_gym.session.state import MAX_CARDS as MAX_CARDS
from pb_gym.session.state import MAX_HANDS as MAX_HANDS
from pb_gym.session.state import N_LAST_HAND as N_LAST_HAND
from pb_gym.session.state import PLAY_MIN_TABLES as PLAY_MIN_TABLES
from pb_gym.session.state import PLAYING as PLAYING
from pb_gym.session.state import RUIN as RUIN
from pb_gym.session.state import SEAT_FIELDS, _bad
from pb_gym.session.state import SHOE_END as SHOE_END
from pb_gym.session.state import SHOE_MISMATCH as SHOE_MISMATCH
from pb_gym.session.state import STOP_LOSS as STOP_LOSS
from pb_gym.session.state import TARGET as TARGET
from pb_gym.session.state import DealConstants as DealConstants
from pb_gym.session.state import Limits as Limits
from pb_gym.session.state import LimitsStruct as LimitsStruct
from pb_gym.session.state import RecordView as RecordView
from pb_gym.session.state import Seats as Seats
from pb_gym.session.state import SeatView as SeatView
from pb_gym.session.state import TableRecords as TableRecords
from pb_gym.session.state import deal_constants as deal_constants
from pb_gym.session.state import payoff_matrix as payoff_matrix

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
        progress.note_compiling(kernels)  # the first run on a machine compiles the kernels
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
        self._play_state: kernels.PlayState | None = None  # made from the structs on first play
        self._limits = limits.struct()
        self._deal_consts = deal_constants(rules)
        self._all = np.ones(n, dtype=np.bool_)
        self._chosen = np.full((k, n), -1, dtype=np.int64)  # "the largest request" for every seat

    def __getstate__(self) -> dict:
        """Copies and pickles leave the kernels' structs behind (compiled objects: rebuilt on use)."""
        state = self.__dict__.copy()
        state["_structs"], state["_structs_version"], state["_play_state"] = (), -1, None
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

    def structs(self) -> tuple[SeatView, RecordView, engine.ShoeView, engine.HandView]:
        """``(seats, records, shoe, hand)`` as the kernels take them (each part's view, its arrays by
        name), rebuilt only when an array has been replaced since the last call (:attr:`version`)."""
        if self._structs_version != self._changes[0]:
            self._structs = (
                self._seats.view,
                self._records.view,
                self._shoe.view,
                self._hand.view,
            )
            self._structs_version = self._changes[0]
            self._play_state = None
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
    def check_requests(self, requested: np.ndarray, checked_seats: Sequence[int] | None = None) -> np.ndarray:
        """``requested`` as a C-contiguous float64 ``(K, N, n_bets)`` array (``(N, n_bets)`` is taken
        as one seat), finite and >= 0; ValueError naming the problem otherwise. ``checked_seats``:
        only these seats' requests are checked for finite and >= 0 (all by default)."""
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
        checked = array
        if checked_seats is not None:
            index = np.asarray(checked_seats)
            if index.ndim != 1 or (
                index.size and (index.dtype.kind not in "iu" or index.min() < 0 or index.max() >= k)
            ):
                raise ValueError(
                    f"checked_seats={checked_seats!r} is not allowed; allowed: seat indices 0..{k - 1}"
                )
            checked = array[index.astype(np.intp)]
        if not np.isfinite(checked).all():
            raise ValueError("requested stakes must be finite numbers")
        if (checked < 0).any():
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

    def play_arguments(self, requested: np.ndarray, checked_seats: Sequence[int] | None = None) -> tuple:
        """For a caller that plays the hand inside its own compiled pass over the tables (the
        evaluator's: its seats' proposals, the hand and their accounting, a chunk of tables at a
        time): ``(deal, requested, chosen, sticky, state)``, the arguments of
        :func:`kernels.play_state_rows` after the checks of :meth:`play` (``requested`` by
        :meth:`check_requests`; every table deals, each seat's default column). Its rows return
        ``(table, problem)``: :func:`pb_gym.engine.raise_table_problem` raises what :meth:`play` would.
        ``checked_seats`` (:meth:`check_requests`): the caller's pass writes the other seats'
        requests itself and answers for them (the evaluator's compiled progressions, most seats of
        the main job, whose checks here would repeat that pass's)."""
        requested = self.check_requests(requested, checked_seats)
        return self._all, requested, self._chosen, self.sticky_ends, self._state()

    def _state(self) -> kernels.PlayState:
        """The checked shoe state and the structs as one :class:`kernels.PlayState`."""
        engine.check_state(self.rules, self.shoe, deals=False)
        seats, records, shoe, hand = self.structs()
        if self._play_state is None:
            self._play_state = kernels.new_play_state(
                seats, records, shoe, hand, self._deal_consts, self.payoffs, self._limits
            )
        return self._play_state

    def _run(self, requested: np.ndarray, chosen: np.ndarray, deal: np.ndarray) -> None:
        state = self._state()
        found = checked_rows(
            kernels.play_state_rows,
            self.n_tables,
            PLAY_MIN_TABLES,
            deal,
            requested,
            chosen,
            self.sticky_ends,
            state,
        )
        if found[0] >= 0:
            engine.raise_table_problem(*found)

    def place(self, requested: np.ndarray, chosen: np.ndarray | None = None) -> Placement:
        """The stake rules alone (no deal, nothing changes): what :meth:`play` would place for these
        requests now, and where the table maximum or the bankroll would cut them."""
        requested = self.check_requests(requested)
        scratch = Seats(
            self.seats.bankroll.copy(),
            self.seats.hands.copy(),
            self.seats.ended.copy(),
            np.zeros_like(self.seats.stakes),
            *(np.zeros_like(getattr(self.seats, name)) for name, _, _ in SEAT_FIELDS[4:]),
        )
        chosen = self._chosen if chosen is None else np.asarray(chosen, dtype=np.int64)
        place_rows(
            0,
            self.n_tables,
            self._all,
            requested,
            chosen,
            self.sticky_ends,
            scratch.view,
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
            hand.view,
            self.structs()[1],
            self.suited,
        )
