"""The engine's state as arrays: the shoe state and hand result of N tables, the compiled views the
kernels take them by (fields read by name), and the checks that let the kernels trust them.

:mod:`pb_gym.engine` deals from these (its kernels take a :class:`ShoeView` and a :class:`HandView`) and
exports every public name here; this module holds the data and its validation (and the inputs of a new
state: the tables' seeds, a stacked shoe top), the engine the dealing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

from pb_gym import rules as R
from pb_gym.rules import Rules

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
    ("suits", np.uint8, 2),
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
    ("player_suits", np.uint8, 2),
    ("banker_suits", np.uint8, 2),
)
"""(name, dtype, dimensions) of each array of a :class:`HandResult`, as :meth:`HandResult.empty`."""


class NamedFields(types.StructRef):
    """Base of the compiled objects whose fields the kernels read by name (the state's views, the
    bundles of a step's arguments): each field is typed as its value without literals, so that one
    compiled kernel serves every value."""

    def preprocess_fields(self, fields: Any) -> tuple:
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


@structref.register
class _ShoeViewType(NamedFields):
    pass


class ShoeView(structref.StructRefProxy):
    """A :class:`ShoeState`'s arrays (and ``cut_position``) as the kernels take them: one compiled
    object whose fields are read by name (``shoe.position``), never by place. Made by
    :attr:`ShoeState.view`."""


@structref.register
class _HandViewType(NamedFields):
    pass


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
        suits: ``(n, cards)`` uint8 suit of each card of ``shoe`` (an index in
            :data:`pb_gym.suited.SUITS`), or ``(n, 0)`` for a state that does not track suits (the
            default of :func:`pb_gym.engine.init`: the suits cost the shuffle a second pass of swaps). A
            fresh shoe lists its cards by rank, copy ``j`` of a rank in suit ``j % 4``; the shuffle
            moves each card's suit with its rank (the same swaps), so the ranks dealt are the same
            bits with suits or without.
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
    suits: np.ndarray
    position: np.ndarray
    counts: np.ndarray
    unseen: np.ndarray
    hands_in_shoe: np.ndarray
    shoes_started: np.ndarray
    cut_hands: np.ndarray
    rng: np.ndarray
    cut_position: int

    def _widths(self) -> dict[str, int]:
        width = self.shoe.shape[1]
        suits = 0 if self.suits.ndim == 2 and self.suits.shape[1] == 0 else width  # (n, 0): untracked
        return {"shoe": width, "suits": suits, "counts": R.N_RANKS, "unseen": R.N_RANKS}

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
        winner: the :class:`pb_gym.rules.Outcome` code (0 banker, 1 player, 2 tie).
        natural: either hand had a natural (8 or 9 on two cards).
        player_pair, banker_pair: the first two cards of that hand have the same rank.
        shuffled: the shoe was (re)shuffled and burned just before this hand.
        player_suits, banker_suits: ``(n, 3)`` the suit of each card of ``player_cards`` /
            ``banker_cards`` (an index in :data:`pb_gym.suited.SUITS`; 0 where there is no card), from
            a state that tracks suits (``engine.init(..., suited=True)``); all 0 otherwise.

    The arrays' dtypes and shapes (those of :meth:`empty`) are checked when a result is built and
    when an array is replaced, so that :func:`deal` can write into it (``out=``).
    """

    _FIELDS = RESULT_ARRAYS
    _VIEW = staticmethod(_new_hand_view)
    _VIEW_FIELDS = HAND_VIEW_FIELDS

    def _widths(self) -> dict[str, int]:
        return {"player_cards": 3, "banker_cards": 3, "player_suits": 3, "banker_suits": 3}

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
    player_suits: np.ndarray
    banker_suits: np.ndarray

    @classmethod
    def empty(cls, n: int) -> HandResult:
        """Preallocated result arrays for ``n`` tables (pass as ``out=`` to reuse memory)."""
        return cls(*(np.zeros((n, 3) if ndim == 2 else n, dtype) for _, dtype, ndim in RESULT_ARRAYS))

    def __len__(self) -> int:
        return self.outcome.shape[0]

    def payoffs(self, rules: Rules) -> np.ndarray:
        """Net win per unit staked on each of the 7 bet spots (:data:`pb_gym.rules.BETS`), ``(n, 7)``."""
        return R.payoffs(rules, self.outcome, self.player_pair, self.banker_pair)

    def perfect_pairs(self) -> np.ndarray:
        """``(n, 2)`` bool: the player's / the banker's first two cards are identical in rank and suit
        (a hand dealt from a state that tracks suits)."""
        player = self.player_pair & (self.player_suits[:, 0] == self.player_suits[:, 1])
        banker = self.banker_pair & (self.banker_suits[:, 0] == self.banker_suits[:, 1])
        return np.stack([player, banker], axis=1)


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


def parse_stack(stack: Sequence | np.ndarray, rules: Rules, n_tables: int) -> np.ndarray:
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


def stacked_shoe(codes: np.ndarray, rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """One table's shoe and suits for a stacked top ``codes``: the canonical shoe's copies of each rank
    (copy ``j`` in suit ``j % 4``), the stack taking them in order, then the unused ones."""
    per_rank = R.CARDS_PER_RANK_PER_DECK * rules.decks
    copy = np.arange(rules.n_cards) % per_rank  # the canonical shoe, by rank
    rank = np.arange(rules.n_cards) // per_rank
    ranks = codes.astype(np.intp) - 1
    seen = np.zeros(R.N_RANKS, dtype=np.intp)
    taken = np.empty(ranks.size, dtype=np.intp)  # which canonical card each stacked one is
    for k, r in enumerate(ranks):
        taken[k] = r * per_rank + seen[r]
        seen[r] += 1
    order = np.concatenate([taken, np.setdiff1d(np.arange(rules.n_cards), taken)])
    return (rank[order] + 1).astype(np.uint8), (copy[order] % R.CARDS_PER_RANK_PER_DECK).astype(np.uint8)
