"""The baccarat roads: the bead plate, the Big Road and its three derived roads, and the ask road.

These are the scoreboards shown at every baccarat table. The rules, as written in the project's roads
specification (the standard derivation rules, as implemented for example by SabienNguyen/baccarat-sim):

* **Bead plate**: one cell per hand, ties included, in columns of six (top to bottom, oldest first),
  with the pair markers.
* **Big Road**: a tie never opens or extends a column; it is a mark on the latest cell, with a count.
  A tie before the first decision is recorded (``leading_ties``) but opens no column. The same winner
  goes down the column, a change of winner starts a new column. The six-row display turns right
  along the bottom (the "dragon tail") while the column keeps its logical length.
* **Derived roads** with offset ``k`` (Big Eye Boy ``k = 1``, Small Road ``k = 2``, Cockroach Pig
  ``k = 3``): the first mark is made by the Big Road entry at column ``k+1`` row 2, or if there is
  none, at column ``k+2`` row 1; every later entry makes one mark. For an entry at column ``c``, row
  ``r`` (both counted from 1): ``r = 1`` is red if columns ``c-1`` and ``c-1-k`` have the same length,
  otherwise blue; ``r >= 2`` is blue if column ``c-k`` has exactly ``r-1`` entries, otherwise red. Red
  means "repeating", blue "choppy"; neither means banker or player. The marks are laid out like the
  Big Road.
* **Ask road**: the mark each derived road would make next after a banker and after a player result
  (None where that entry would make no mark yet).

Two forms: :func:`read_roads` draws every road of one sequence of results (the scoreboard, the
``pb-gym roads`` command, pictures); :class:`RoadTracker` follows the roads of many tables at once
(numpy arrays, no loop over tables) for the betting systems and the studies that read them hand by hand.
Pure numpy and Python; no study or plotting library.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from pb_gym import rules as R

OUTCOME_LETTERS = R.OUTCOME_LETTERS
"""Banker, player, tie: the letters of a result (index = :data:`pb_gym.rules.BANKER` / ``PLAYER`` /
``TIE``)."""
ROWS = 6
"""Rows of every road's display (the bead plate's columns, the Big Road's turn to the right)."""
DERIVED_ROADS = {"big_eye_boy": 1, "small_road": 2, "cockroach_pig": 3}
"""Each derived road's offset ``k``."""
RED, BLUE = "red", "blue"


def parse_outcomes(text: str) -> tuple[str, ...]:
    """The results of a string of ``B`` / ``P`` / ``T`` (oldest first; case, spaces and commas
    ignored). An empty string or any other letter is a ValueError naming it."""
    cleaned = [c for c in text.upper() if c not in " ,\t\n"]
    if not cleaned:
        raise ValueError("outcomes: empty; allowed: a string of B (banker), P (player), T (tie)")
    bad = sorted({c for c in cleaned if c not in OUTCOME_LETTERS})
    if bad:
        raise ValueError(
            f"outcomes: {''.join(bad)!r} is not allowed; allowed: B (banker), P (player), T (tie)"
        )
    return tuple(cleaned)


@dataclasses.dataclass(frozen=True)
class Bead:
    """One hand on the bead plate: its result letter and the pair markers."""

    outcome: str
    banker_pair: bool = False
    player_pair: bool = False


@dataclasses.dataclass(frozen=True)
class BigRoadEntry:
    """One cell of the Big Road: the winner (``"B"`` / ``"P"``) and the ties marked on it since."""

    winner: str
    ties: int = 0


@dataclasses.dataclass(frozen=True)
class Roads:
    """Every road of one sequence of results (see the module docstring for the rules).

    Attributes:
        bead_plate: one bead per hand, oldest first (:func:`bead_columns` lays it out).
        leading_ties: ties before the first decision (recorded, no column).
        big_road: the Big Road's logical columns, oldest first, each a list of entries.
        derived: each derived road's marks (``"red"`` / ``"blue"``) in the order made, by name
            (:data:`DERIVED_ROADS`).
        ask: for ``"B"`` and ``"P"``, the mark each derived road would make next (None: no mark).
    """

    bead_plate: tuple[Bead, ...]
    leading_ties: int
    big_road: tuple[tuple[BigRoadEntry, ...], ...]
    derived: dict[str, tuple[str, ...]]
    ask: dict[str, dict[str, str | None]]

    @property
    def column_lengths(self) -> list[int]:
        """The Big Road's logical column lengths."""
        return [len(column) for column in self.big_road]

    def to_dict(self) -> dict:
        """Plain data (the ``pb-gym roads --json`` output)."""
        return {
            "bead_plate": [
                [
                    bead.outcome + ("b" if bead.banker_pair else "") + ("p" if bead.player_pair else "")
                    for bead in column
                ]
                for column in bead_columns(self.bead_plate)
            ],
            "big_road": [[entry.winner for entry in column] for column in self.big_road],
            "ties": {
                "leading": self.leading_ties,
                "on_cells": [
                    [column_index, row_index, entry.ties]
                    for column_index, column in enumerate(self.big_road)
                    for row_index, entry in enumerate(column)
                    if entry.ties
                ],
            },
            **{name: list(marks) for name, marks in self.derived.items()},
            "ask_road": self.ask,
        }


def bead_columns(beads: Sequence[Bead]) -> list[list[Bead]]:
    """The bead plate in columns of six, oldest first."""
    return [list(beads[start : start + ROWS]) for start in range(0, len(beads), ROWS)]


def big_road_columns(outcomes: Iterable[str]) -> tuple[int, list[list[BigRoadEntry]]]:
    """Leading ties and the Big Road's logical columns of a sequence of results."""
    leading = 0
    columns: list[list[BigRoadEntry]] = []
    for outcome in outcomes:
        if outcome == "T":
            if columns:
                last = columns[-1][-1]
                columns[-1][-1] = BigRoadEntry(last.winner, last.ties + 1)
            else:
                leading += 1
        elif columns and columns[-1][-1].winner == outcome:
            columns[-1].append(BigRoadEntry(outcome))
        else:
            columns.append([BigRoadEntry(outcome)])
    return leading, columns


def derived_mark(lengths: Sequence[int], column: int, row: int, k: int) -> str | None:
    """The mark that the Big Road entry at ``column``, ``row`` (from 1) makes on the derived road of
    offset ``k``, given the lengths of the columns before it (``lengths[i]`` is column ``i + 1``);
    None where the entry comes before the road's first mark."""
    if column < k + 1 or (column == k + 1 and row < 2):
        return None
    if row == 1:
        return RED if lengths[column - 2] == lengths[column - 2 - k] else BLUE
    return BLUE if lengths[column - 1 - k] == row - 1 else RED


def derived_marks(lengths: Sequence[int], k: int) -> list[str]:
    """Every mark of the derived road of offset ``k`` for Big Road columns of these lengths, in the
    order made."""
    marks = []
    for column, length in enumerate(lengths, start=1):
        for row in range(1, length + 1):
            mark = derived_mark(lengths, column, row, k)
            if mark is not None:
                marks.append(mark)
    return marks


def red_share_independent(banker: float, player: float, k: int) -> float:
    """The long-run share of red marks on the derived road of offset ``k`` when every hand is
    independent, banker winning with probability ``banker`` and player with ``player`` (ties make no
    Big Road entry, so only ``p = banker / (banker + player)`` and ``q = 1 - p`` matter).

    The Big Road's columns then alternate sides and their lengths are independent: a banker column has
    length ``l`` with probability ``p^(l-1) q``, a player column ``q^(l-1) p``. Column ``c`` makes one
    mark per entry: its first entry is blue when columns ``c-1`` and ``c-1-k`` differ in length, and of
    its entries down only the one at row ``L(c-k) + 1`` is blue, which exists when ``L(c) > L(c-k)``.
    Over a banker and a player column (``1/q + 1/p = 1/(pq)`` marks), the expected blues are, for odd
    ``k`` (columns ``c-1``, ``c-1-k`` and ``c``, ``c-k`` of opposite sides: equal lengths with
    probability ``pq / (1 - pq)``, ``P(L(c) > L(c-k)) = p^2 / (1 - pq)`` for a banker column),
    ``3 (1 - 2pq) / (1 - pq)``; for even ``k`` (the same sides: equal with probability ``(1-s)/(1+s)``,
    longer with ``s / (1+s)``, ``s`` the side's ``p`` or ``q``), ``3 (p / (1+p) + q / (1+q))``. So the
    red share is::

        odd k (Big Eye Boy, Cockroach Pig):  1 - 3 pq (1 - 2pq) / (1 - pq)
        even k (Small Road):                 1 - 3 pq (p / (1 + p) + q / (1 + q))

    Both are 1/2 at ``p = q``; at the full 8-deck shoe's odds they are 50.0031% (Big Eye Boy, Cockroach
    Pig) and 50.0114% (Small Road). A shoe starts its roads afresh (its first columns already follow
    these laws) and the cut card ends its last column early: a boundary effect of about one column a
    shoe, which the roads study's independent hands carry and this long-run share does not.
    """
    if not banker > 0 or not player > 0:
        raise ValueError(f"banker={banker!r}, player={player!r} are not allowed; allowed: both > 0")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r} is not allowed; allowed: an integer >= 1")
    p = banker / (banker + player)
    q = 1.0 - p
    pq = p * q
    blue = 3.0 * pq * (1.0 - 2.0 * pq) / (1.0 - pq) if k % 2 else 3.0 * pq * (p / (1.0 + p) + q / (1.0 + q))
    return 1.0 - blue


def next_marks(lengths: Sequence[int], last_winner: str | None, winner: str) -> dict[str, str | None]:
    """What each derived road would mark if the next decision were ``winner`` (the ask road)."""
    if last_winner == winner:
        column, row = len(lengths), lengths[-1] + 1
        grown = list(lengths[:-1]) + [row]
    else:
        column, row = len(lengths) + 1, 1
        grown = list(lengths) + [1]
    return {name: derived_mark(grown, column, row, k) for name, k in DERIVED_ROADS.items()}


def read_roads(
    outcomes: Iterable[str],
    banker_pairs: Sequence[bool] | None = None,
    player_pairs: Sequence[bool] | None = None,
) -> Roads:
    """Every road of a sequence of results (``"B"`` / ``"P"`` / ``"T"``, oldest first), with the pair
    markers of each hand if given."""
    results = tuple(outcomes)
    for outcome in results:
        if outcome not in OUTCOME_LETTERS:
            raise ValueError(f"outcome {outcome!r} is not allowed; allowed: B, P, T")
    n = len(results)
    bank = list(banker_pairs) if banker_pairs is not None else [False] * n
    play = list(player_pairs) if player_pairs is not None else [False] * n
    if len(bank) != n or len(play) != n:
        raise ValueError("banker_pairs / player_pairs: one flag per hand is needed")
    beads = tuple(Bead(o, bool(b), bool(p)) for o, b, p in zip(results, bank, play, strict=True))
    leading, columns = big_road_columns(results)
    lengths = [len(column) for column in columns]
    last = columns[-1][-1].winner if columns else None
    return Roads(
        bead_plate=beads,
        leading_ties=leading,
        big_road=tuple(tuple(column) for column in columns),
        derived={name: tuple(derived_marks(lengths, k)) for name, k in DERIVED_ROADS.items()},
        ask={winner: next_marks(lengths, last, winner) for winner in ("B", "P")},
    )


def mark_columns(marks: Sequence[str]) -> list[list[str]]:
    """Marks (Big Road winners or derived reds / blues) in logical columns: the same mark goes down,
    a change starts a new column."""
    columns: list[list[str]] = []
    for mark in marks:
        if columns and columns[-1][-1] == mark:
            columns[-1].append(mark)
        else:
            columns.append([mark])
    return columns


def layout(columns: Sequence[Sequence[object]], rows: int = ROWS) -> dict[tuple[int, int], object]:
    """Display cells ``(x, y) -> item`` of logical columns on a board ``rows`` high: each column starts
    at the top, one display column right of where the previous one started, goes down while the cell
    below is free and on the board, and then turns right (the dragon tail) for the rest of its items."""
    cells: dict[tuple[int, int], object] = {}
    start = -1
    for column in columns:
        start += 1
        while (start, 0) in cells:
            start += 1
        x, y = start, 0
        turned = False
        for index, item in enumerate(column):
            if index:
                if not turned and y + 1 < rows and (x, y + 1) not in cells:
                    y += 1
                else:
                    turned = True
                    x += 1
                    while (x, y) in cells:
                        x += 1
            cells[(x, y)] = item
    return cells


def grid(cells: dict[tuple[int, int], object], rows: int = ROWS, min_width: int = 1) -> list[list]:
    """The cells of :func:`layout` as ``rows`` lists (None = empty), as wide as the rightmost cell."""
    width = max([min_width] + [x + 1 for x, _ in cells])
    board: list[list] = [[None] * width for _ in range(rows)]
    for (x, y), item in cells.items():
        board[y][x] = item
    return board


def scoreboard_text(roads: Roads, width: int | None = None) -> str:
    """The roads as a casino scoreboard in text: bead plate (B / P / T, ``b`` / ``p`` pair markers
    below), Big Road (a digit = ties on that cell), the three derived roads (R red, B blue), and the
    ask road. ``width`` keeps the last display columns of each road only."""

    def rows_of(board: list[list], cell) -> list[str]:
        shown = [row[-width:] if width else row for row in board]
        return ["  " + "".join(cell(item) for item in row).rstrip() for row in shown]

    def bead_cell(bead: Bead | None) -> str:
        if bead is None:
            return ".  "
        marks = ("b" if bead.banker_pair else "") + ("p" if bead.player_pair else "")
        return f"{bead.outcome}{marks:<2}"

    bead_board = grid({(i // ROWS, i % ROWS): b for i, b in enumerate(roads.bead_plate)})
    n_hands = len(roads.bead_plate)
    lines = [f"Bead plate ({n_hands} hand{'' if n_hands == 1 else 's'})"] + rows_of(bead_board, bead_cell)

    def road_cell(entry) -> str:
        if entry is None:
            return ".  "
        if isinstance(entry, BigRoadEntry):
            return entry.winner + (str(min(entry.ties, 9)) if entry.ties else " ") + " "
        return ("R" if entry == RED else "B") + "  "

    tie_note = f", {roads.leading_ties} leading tie(s)" if roads.leading_ties else ""
    lines.append(f"Big Road ({len(roads.big_road)} columns{tie_note}; a digit: ties on the cell)")
    lines += rows_of(grid(layout(roads.big_road)), road_cell)
    for name, marks in roads.derived.items():
        reds = sum(mark == RED for mark in marks)
        lines.append(f"{name.replace('_', ' ').title()} ({len(marks)} marks, {reds} red; R red, B blue)")
        lines += rows_of(grid(layout(mark_columns(marks))), road_cell)
    lines.append("Ask road (next mark of Big Eye Boy / Small Road / Cockroach Pig)")
    for winner, label in (("B", "banker"), ("P", "player")):
        shown = " ".join({RED: "R", BLUE: "B", None: "-"}[roads.ask[winner][name]] for name in DERIVED_ROADS)
        lines.append(f"  if {label:<6}: {shown}")
    return "\n".join(lines) + "\n"


class RoadTracker:
    """The roads of ``n`` tables at once, one decision at a time (numpy arrays over tables).

    After each hand (:meth:`record`, with each table's winner: a :class:`pb_gym.rules.Outcome`, -1 no
    hand) it holds, per table: the Big Road's current column length and the lengths of the previous
    ones (``lengths[:, 0]`` is the current column, ``lengths[:, j]`` the ``j``-th before it), the number
    of columns, the last decision, the mark each derived road made on this hand (``made``: +1 red, -1
    blue, 0 none), the last ``memory`` marks of each road (``history``: ``(n, 4, memory)``, roads in the
    order Big Road (+1 banker, -1 player), Big Eye Boy, Small Road, Cockroach Pig; newest last; 0 =
    none yet), and :meth:`ask` gives the ask road. :meth:`restart` clears the tables of a new shoe.
    """

    KEEP = 5  # columns c-1-k for k <= 3 need the current column and the four before it

    def __init__(self, n: int, memory: int = 8) -> None:
        self.n = n
        self.memory = memory
        self.lengths = np.zeros((n, self.KEEP), dtype=np.int64)
        self.columns = np.zeros(n, dtype=np.int64)
        self.last = np.full(n, -1, dtype=np.int64)
        self.made = np.zeros((n, 3), dtype=np.int64)
        self.history = np.zeros((n, 4, memory), dtype=np.int8)

    def restart(self, mask: np.ndarray) -> None:
        """Clear the roads of the tables in ``mask`` (a new shoe)."""
        self.lengths[mask] = 0
        self.columns[mask] = 0
        self.last[mask] = -1
        self.made[mask] = 0
        self.history[mask] = 0

    def _marks(self, same: np.ndarray) -> np.ndarray:
        """``(n, 3)`` marks (+1 red, -1 blue, 0 none) of the next entry: down the current column where
        ``same``, else a new column."""
        out = np.zeros((self.n, 3), dtype=np.int64)
        row = np.where(same, self.lengths[:, 0] + 1, 1)
        column = np.where(same, self.columns, self.columns + 1)
        for j, k in enumerate(DERIVED_ROADS.values()):
            # new column: columns c-1 and c-1-k are lengths[:, 0] and lengths[:, k] now
            red_new = self.lengths[:, 0] == self.lengths[:, k]
            # down: column c-k is lengths[:, k]
            blue_down = self.lengths[:, k] == row - 1
            mark = np.where(same, np.where(blue_down, -1, 1), np.where(red_new, 1, -1))
            active = (column > k + 1) | ((column == k + 1) & (row >= 2))
            out[:, j] = np.where(active, mark, 0)
        return out

    def ask(self) -> np.ndarray:
        """``(n, 2, 3)``: the mark (+1 red, -1 blue, 0 none) each derived road would make next, after
        a banker ([:, 0]) and after a player ([:, 1])."""
        return np.stack([self._marks(self.last == side) for side in (R.BANKER, R.PLAYER)], axis=1)

    def record(self, winner: np.ndarray) -> None:
        """Add each table's result (a :class:`pb_gym.rules.Outcome`, -1 = nothing dealt)."""
        winner = np.asarray(winner)
        decided = (winner == R.BANKER) | (winner == R.PLAYER)
        same = decided & (winner == self.last)
        marks = np.where(decided[:, None], self._marks(same), 0)
        new = decided & ~same
        self.lengths[new] = np.roll(self.lengths[new], 1, axis=1)
        self.lengths[new, 0] = 0
        self.columns[new] += 1
        self.lengths[decided, 0] += 1
        self.last[decided] = winner[decided]
        self.made = marks
        entry = np.concatenate([np.where(winner == R.BANKER, 1, -1)[:, None], marks], axis=1)
        for road in range(4):
            push = decided & (entry[:, road] != 0)
            self.history[push, road] = np.roll(self.history[push, road], -1, axis=1)
            self.history[push, road, -1] = entry[push, road]
