"""The progression systems as data, run by one compiled kernel over every seat and table.

Every progression system of :mod:`agents.systems` (flat, the Martingales, Paroli, D'Alembert, the
stepped sequences, Labouchere, Oscar's Grind, and the flat bettors that choose their side) describes
itself as a :class:`Program`: which progression rule moves its stake, how it chooses its bet, and the
parameters of both. A :class:`Programs` holds the programs of many seats stacked as arrays, and their
state (``(seats, tables)`` arrays), and two kernels play them:

* :func:`propose_rows`: each seat's stake column and stake for the next hand, with the table maximum
  and ``on_cap`` applied (the :class:`agents.systems.Proposal` of every seat at once), written
  straight into the session's requested stakes;
* :func:`update_rows`: after the hand, each seat's progression moves on its result (wins and losses
  only; pushes and no-bets leave it).

A system played alone (``propose`` / ``update`` on one object) runs the same kernels on a one-seat
:class:`Programs`, so each rule is written once, here. The evaluator (:mod:`pb_gym.experiments.evaluate`)
stacks the programs of all its progression seats and calls each kernel once a hand: the per-hand cost
of a seat is a few nanoseconds a table instead of a dozen numpy calls (``pb-gym bench``).

The arithmetic is the numpy implementation's it replaced, operation for operation (the same roundings:
the reports' digests are unchanged): a stake is ``min(wanted, max_units)`` units; a new stake is
computed from the wanted, not the capped, one.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numba
import numpy as np

from pb_gym import rules as R
from pb_gym.kelly import kelly_bisection as kelly_bisection  # (moved to the core: pb_gym.kelly)
from pb_gym.session.live import seat_span, table_at

NO_BET = -1
"""The column of no bet."""
PROGRESSIONS: tuple[str, ...] = (
    "flat",
    "doubling",
    "paroli",
    "dalembert",
    "stepped",
    "labouchere",
    "oscars_grind",
)
"""How a program's stake moves (:class:`Program`)."""
FLAT, DOUBLING, PAROLI, DALEMBERT, STEPPED, LABOUCHERE, OSCARS_GRIND = range(len(PROGRESSIONS))
CHOICES: tuple[str, ...] = ("fixed", "follow", "chop", "drawn")
"""How a program chooses its bet: always its column; the last non-tie winner's; its opposite; or a
column drawn for each hand by the system itself (:attr:`ProgramState.drawn`)."""
FIXED, FOLLOW, CHOP, DRAWN = range(len(CHOICES))
OVER_TOLERANCE = 1e-9
"""A wanted stake above the table maximum by more than this (in units) is capped (or, ``on_cap:
reset``, restarts the series)."""
LINE_WIDTH = 64
"""A Labouchere line's first buffer width (doubled when a line outgrows it)."""


@dataclasses.dataclass(frozen=True)
class Program:
    """One system's staking as data.

    Attributes:
        progression: one of :data:`PROGRESSIONS`: ``flat`` (``base`` always); ``doubling`` (after a
            loss ``2 wanted + grow``, or with ``recovering`` ``(series losses + base) / win pays``;
            after a win ``base``); ``paroli`` (double after a win, ``base`` after a loss or after
            ``wins_to_reset`` wins, 0 = never); ``dalembert`` (``+base`` after a loss, ``-base`` after
            a win, never below ``base``); ``stepped`` (``base`` times ``sequence[step]``; a win moves
            the step by ``win_step``, a loss by ``loss_step``); ``labouchere`` (the line ``sequence``);
            ``oscars_grind``.
        choice: one of :data:`CHOICES`.
        columns: the stake columns (:class:`pb_gym.catalog.TableBets`): ``(column, column)`` for a
            fixed bet, ``(banker, player)`` for ``follow`` and ``chop``.
        base: the base stake in units.
        reset_on_cap: ``on_cap="reset"``: a wanted stake above the table maximum restarts the series.
        recovering: see ``doubling``.
        grow: see ``doubling`` (0, or ``base`` for the Grand Martingale).
        wins_to_reset: see ``paroli``.
        sequence: the stake multipliers of ``stepped``, the first line of ``labouchere``.
        win_step, loss_step: ``stepped``: ``(delta, wrap)``: the step moves by ``delta``, modulo the
            sequence's length if ``wrap``, else held within it.
    """

    progression: str
    columns: tuple[int, int]
    base: float
    choice: str = "fixed"
    reset_on_cap: bool = False
    recovering: bool = False
    grow: float = 0.0
    wins_to_reset: int = 0
    sequence: tuple[float, ...] = (1.0,)
    win_step: tuple[int, bool] = (0, False)
    loss_step: tuple[int, bool] = (0, False)

    def __post_init__(self) -> None:
        if self.progression not in PROGRESSIONS:
            raise ValueError(
                f"Program.progression={self.progression!r} is not allowed; allowed: {', '.join(PROGRESSIONS)}"
            )
        if self.choice not in CHOICES:
            raise ValueError(f"Program.choice={self.choice!r} is not allowed; allowed: {', '.join(CHOICES)}")
        if not self.sequence:
            raise ValueError("Program.sequence: at least one number")


class ProgramTable(NamedTuple):
    """The programs of ``S`` seats as the kernels read them (``(S,)`` arrays; ``sequence`` padded)."""

    progression: np.ndarray
    choice: np.ndarray
    columns: np.ndarray
    base: np.ndarray
    reset_on_cap: np.ndarray
    recovering: np.ndarray
    grow: np.ndarray
    wins_to_reset: np.ndarray
    sequence: np.ndarray
    length: np.ndarray
    steps: np.ndarray
    line: np.ndarray


class ProgramState(NamedTuple):
    """The state of ``S`` seats at ``n`` tables.

    Attributes:
        wanted: ``(S, n)`` the next wanted stake in units.
        level: ``(S, n)`` the series' losses (``doubling``) or profit (``oscars_grind``), in units.
        counter: ``(S, n)`` the win streak (``paroli``), the step (``stepped``), the line's first index
            (``labouchere``).
        tail: ``(S, n)`` one past the line's last index (``labouchere``).
        lines: ``(L, n, width)`` the Labouchere lines (row ``ProgramTable.line[s]`` of seat ``s``).
        drawn: ``(S, n)`` the column a ``drawn`` seat's system chose for the next hand.
    """

    wanted: np.ndarray
    level: np.ndarray
    counter: np.ndarray
    tail: np.ndarray
    lines: np.ndarray
    drawn: np.ndarray


class Programs:
    """The stacked programs and state of several seats over ``n`` tables, all reset."""

    def __init__(self, programs: list[Program], n_tables: int) -> None:
        if not programs:
            raise ValueError("Programs: at least one program")
        s, n = len(programs), int(n_tables)
        width = max(len(p.sequence) for p in programs)
        lab = [i for i, p in enumerate(programs) if p.progression == "labouchere"]
        line_row = np.full(s, -1, dtype=np.int64)
        line_row[lab] = np.arange(len(lab))
        self.programs = list(programs)
        self.table = ProgramTable(
            np.array([PROGRESSIONS.index(p.progression) for p in programs], dtype=np.int64),
            np.array([CHOICES.index(p.choice) for p in programs], dtype=np.int64),
            np.array([p.columns for p in programs], dtype=np.int64).reshape(s, 2),
            np.array([p.base for p in programs], dtype=np.float64),
            np.array([p.reset_on_cap for p in programs], dtype=np.bool_),
            np.array([p.recovering for p in programs], dtype=np.bool_),
            np.array([p.grow for p in programs], dtype=np.float64),
            np.array([p.wins_to_reset for p in programs], dtype=np.int64),
            np.array(
                [list(p.sequence) + [0.0] * (width - len(p.sequence)) for p in programs], dtype=np.float64
            ),
            np.array([len(p.sequence) for p in programs], dtype=np.int64),
            np.array(
                [[p.win_step[0], p.win_step[1], p.loss_step[0], p.loss_step[1]] for p in programs],
                dtype=np.int64,
            ),
            line_row,
        )
        line_width = max([LINE_WIDTH] + [4 * len(programs[i].sequence) for i in lab])
        self.state = ProgramState(
            np.zeros((s, n)),
            np.zeros((s, n)),
            np.zeros((s, n), dtype=np.int64),
            np.zeros((s, n), dtype=np.int64),
            np.zeros((max(1, len(lab)), n if lab else 1, line_width)),
            np.full((s, n), NO_BET, dtype=np.int64),
        )
        restart_rows(self.table, self.state)

    @property
    def n_tables(self) -> int:
        return self.state.wanted.shape[1]

    def make_room(self) -> None:
        """Double the Labouchere buffers if some line could outgrow them in the next hand (a loss adds
        one number; a full row is shifted to its start by the kernel)."""
        lines = self.state.lines
        rows = self.table.line
        if rows.max() < 0:
            return
        used = self.state.tail[rows >= 0] - self.state.counter[rows >= 0]
        if used.max() + 1 > lines.shape[2]:
            grown = np.zeros(lines.shape[:2] + (2 * lines.shape[2],))
            grown[:, :, : lines.shape[2]] = lines
            self.state = self.state._replace(lines=grown)


# The kernels take a seat's rows (1-D arrays) and loop over its tables with the seat's parameters as
# scalars: a per-table helper taking the state's tuples would pass (and reference-count) a dozen
# arrays at every table, costing more than the rules themselves.
@numba.njit(cache=True, nogil=True)
def _line_stake(line, head, tail, base):
    """A Labouchere line's stake: its first plus its last number (the only one, if one is left)."""
    if tail - head == 1:
        return line[head] * base
    return (line[head] + line[tail - 1]) * base


@numba.njit(cache=True, nogil=True)
def _new_line(line, first, length, base):
    """A new Labouchere line (``first``, ``length`` numbers) in ``line``; returns its stake."""
    for i in range(length):
        line[i] = first[i]
    return _line_stake(line, 0, length, base)


@numba.njit(cache=True, nogil=True)
def _restart_seat(table, state, s, t):
    """Seat ``s`` at table ``t`` starts a new series (the wanted stake back to ``base``)."""
    base = table.base[s]
    state.wanted[s, t] = base
    state.level[s, t] = 0.0
    state.counter[s, t] = 0
    if table.progression[s] == LABOUCHERE:
        length = table.length[s]
        state.tail[s, t] = length
        state.wanted[s, t] = _new_line(state.lines[table.line[s], t], table.sequence[s], length, base)


@numba.njit(cache=True, nogil=True)
def restart_rows(table, state):
    """Every seat at every table starts afresh."""
    for s in range(state.wanted.shape[0]):
        for t in range(state.wanted.shape[1]):
            _restart_seat(table, state, s, t)


@numba.njit(cache=True, nogil=True)
def propose_rows(table, state, last_decision, max_units, unit, seat_of, slot_of, requested, columns, capped):
    """Every program seat's proposal for the next hand at every table: its stake column
    (``columns[seat_of[s], t]``, :data:`NO_BET` for none), where the table maximum bound
    (``capped``), and the stake in money on the session's slot of that column (``requested[seat_of[s],
    t, slot_of[column]] = units * unit``; the rest of ``requested`` is left alone)."""
    propose_range(
        0,
        state.wanted.shape[1],
        table,
        state,
        last_decision,
        max_units,
        unit,
        seat_of,
        slot_of,
        requested,
        columns,
        capped,
    )


@numba.njit(cache=True, nogil=True)
def propose_range(
    start,
    stop,
    table,
    state,
    last_decision,
    max_units,
    unit,
    seat_of,
    slot_of,
    requested,
    columns,
    capped,
    live=None,
    live_count=None,
):
    """:func:`propose_rows` at the tables ``start..stop-1`` alone (a pass over a chunk of tables that
    also plays and settles their hand: :mod:`pb_gym.experiments.evaluate.hand`); ``live``, ``live_count``:
    each seat's rows to visit (:mod:`pb_gym.session.live`), or every row."""
    over_limit = max_units + OVER_TOLERANCE
    for s in range(state.wanted.shape[0]):
        k = seat_of[s]
        choice = table.choice[s]
        reset = table.reset_on_cap[s]
        banker, player = table.columns[s, 0], table.columns[s, 1]
        wanted, drawn = state.wanted[s], state.drawn[s]
        stake_rows, column_row, capped_row = requested[k], columns[k], capped[k]
        lo, hi, listed = seat_span(live, live_count, k, start, stop)
        for at in range(lo, hi):
            t = table_at(live, k, at, listed)
            units = wanted[t]
            over = units > over_limit
            if over and reset:
                _restart_seat(table, state, s, t)
                units = wanted[t]
            if choice == FIXED:
                column = banker
            elif choice == DRAWN:
                column = drawn[t]
            elif choice == FOLLOW:
                column = player if last_decision[t] == R.PLAYER else banker
            else:  # CHOP
                column = player if last_decision[t] == R.BANKER else banker
            column_row[t] = column
            capped_row[t] = over
            if column != NO_BET:
                stake_rows[t, slot_of[column]] = min(units, max_units) * unit


@numba.njit(cache=True, nogil=True)
def _step(step, delta, wrap, length):
    """A stepped sequence's next step: ``step + delta``, modulo ``length`` if ``wrap``, else held
    within ``0..length-1``."""
    step += delta
    if wrap:
        return step % length
    return min(max(step, 0), length - 1)


@numba.njit(cache=True, nogil=True)
def _labouchere_rows(table, state, s, placed, net, unit, start, stop, live, live_count, k):
    """A Labouchere seat after the hand: a win crosses off the first and last numbers (a new line when
    none is left), a loss appends the amount lost in units of ``base``."""
    base, length = table.base[s], table.length[s]
    first = table.sequence[s]
    lines = state.lines[table.line[s]]
    wanted, head, tail = state.wanted[s], state.counter[s], state.tail[s]
    width = lines.shape[1]
    lo, hi, listed = seat_span(live, live_count, k, start, stop)
    for at in range(lo, hi):
        t = table_at(live, k, at, listed)
        if not placed[t] or net[t] == 0.0:
            continue
        line = lines[t]
        if net[t] > 0.0:
            h, e = head[t] + 1, tail[t] - (1 if tail[t] - head[t] >= 2 else 0)
            if e <= h:
                h, e = 0, length
                wanted[t] = _new_line(line, first, length, base)
            else:
                wanted[t] = _line_stake(line, h, e, base)
        else:
            h, e = head[t], tail[t]
            if e >= width:  # the line at the buffer's end: shifted to its start (make_room made room)
                for i in range(e - h):
                    line[i] = line[h + i]
                h, e = 0, e - h
            line[e] = -(net[t] / unit) / base
            e += 1
            wanted[t] = _line_stake(line, h, e, base)
        head[t], tail[t] = h, e


@numba.njit(cache=True, nogil=True)
def _progression_rows(
    table, s, wanted, level, count, placed, net, unit, win_pays, start, stop, live, live_count, k
):
    """Seat ``s``'s progression (any but ``flat`` and ``labouchere``) at the tables ``start..stop-1``
    after the hand: its rows ``wanted``, ``level``, ``count``, ``placed`` and ``net``."""
    kind, base, grow, recovering = table.progression[s], table.base[s], table.grow[s], table.recovering[s]
    streak_goal, length, sequence = table.wins_to_reset[s], table.length[s], table.sequence[s]
    win_delta, win_wrap = table.steps[s, 0], table.steps[s, 1] != 0
    loss_delta, loss_wrap = table.steps[s, 2], table.steps[s, 3] != 0
    lo, hi, listed = seat_span(live, live_count, k, start, stop)
    for at in range(lo, hi):
        t = table_at(live, k, at, listed)
        r = net[t]
        if not placed[t] or r == 0.0:
            continue
        won = r > 0.0
        w, lv, c = wanted[t], level[t], count[t]
        restart = False
        if kind == DOUBLING:
            restart = won
            lv = lv if won else lv - r / unit
            w = (lv + base) / win_pays if recovering else 2.0 * w + grow
        elif kind == PAROLI:
            c += 1
            w *= 2.0
            restart = not won or (streak_goal > 0 and c >= streak_goal)
        elif kind == DALEMBERT:
            w = max(w - base, base) if won else w + base
        elif kind == STEPPED:
            c = _step(c, win_delta, win_wrap, length) if won else _step(c, loss_delta, loss_wrap, length)
            w = sequence[c] * base
        elif kind == OSCARS_GRIND:
            lv += r / unit  # the net win in units
            restart = won and lv >= base - OVER_TOLERANCE
            if won and not restart:
                w = max(min(w + base, (base - lv) / win_pays), base)
        if restart:
            w, lv, c = base, 0.0, 0
        wanted[t], level[t], count[t] = w, lv, c


@numba.njit(cache=True, nogil=True)
def update_rows(table, state, pays, seat_of, placed, net, unit):
    """Every program seat's progression after the hand: ``placed[seat_of[s], t]`` and the net win in
    money ``net[seat_of[s], t]`` (> 0 a win, < 0 a loss, 0 a push: nothing moves); ``pays[s]``: the
    net win per unit of a plain win on the seat's bet (the recovering Martingale's and Oscar's
    Grind's target)."""
    update_range(0, state.wanted.shape[1], table, state, pays, seat_of, placed, net, unit)


@numba.njit(cache=True, nogil=True)
def update_range(start, stop, table, state, pays, seat_of, placed, net, unit, live=None, live_count=None):
    """:func:`update_rows` at the tables ``start..stop-1`` alone; ``live``, ``live_count``: each
    seat's rows to visit (:mod:`pb_gym.session.live`), or every row."""
    for s in range(state.wanted.shape[0]):
        k = seat_of[s]
        kind = table.progression[s]
        if kind == LABOUCHERE:
            _labouchere_rows(table, state, s, placed[k], net[k], unit, start, stop, live, live_count, k)
        elif kind != FLAT:
            _progression_rows(
                table,
                s,
                state.wanted[s],
                state.level[s],
                state.counter[s],
                placed[k],
                net[k],
                unit,
                pays[s],
                start,
                stop,
                live,
                live_count,
                k,
            )
