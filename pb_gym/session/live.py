"""The tables where each seat still has work: the row kernels' optional lists of live rows.

Why. A seat whose session has ended sits out every hand after, and once its last hand is cleared
(:func:`pb_gym.session.kernels.settle_rows` clears it the next hand) nothing of it changes again. In
the evaluator's main job about half of all seat-rows are such seats, spread at random among the
live ones: a kernel that visits every row and tests each spends on them nearly as much as on a seat
that plays.

``live[k, :live_count[k]]`` lists, in increasing order, the tables where seat ``k`` may still have
work; a kernel given the lists visits those rows alone, in the same order as the rows of a range,
so every sum over the tables takes the same bits. Without lists (``live=None``, the default of the
kernels that take them) the same kernel visits every row of its range, as before: the two forms are
compiled apart (:func:`seat_span`, :func:`table_at` are resolved by the argument's type), and the
list-free one is the code it was. :func:`drop_finished` shortens the lists after a hand; a seat
with most of a range listed visits the whole range, and where every seat does
(:func:`mostly_listed`) the evaluator runs the list-free code.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from pb_gym.session.state import PLAYING

DENSE_SHARE_NUMERATOR, DENSE_SHARE_DENOMINATOR = 4, 5
"""A seat with at least this share (4/5) of a range's tables listed visits the whole range: every
row of the range is a row the kernels handle (a finished one costs its test), and reading the list
cost the live rows about a nanosecond each in each kernel, more than the finished fifth cost."""


def seat_span(live: Any, live_count: Any, k: int, start: int, stop: int) -> tuple[int, int, bool]:
    """``(lo, hi, listed)``: the positions ``lo..hi-1`` to visit for seat ``k`` at the tables
    ``start..stop-1``, those of its list that fall in the range when ``listed``, else the tables
    ``lo..hi-1`` themselves (no lists, or at least :data:`DENSE_SHARE_NUMERATOR` /
    :data:`DENSE_SHARE_DENOMINATOR` of the range listed: a seat that still plays nearly everywhere
    then reads no list; compiled code only)."""
    raise NotImplementedError("compiled code only")


def table_at(live: Any, k: int, i: int, listed: bool) -> int:
    """The table at position ``i`` of seat ``k``'s span (:func:`seat_span`; compiled code only)."""
    raise NotImplementedError("compiled code only")


# (the overloads' parameters carry no annotations: numba requires the implementations' signatures
# to match the typing functions' exactly, annotations included)
@overload(seat_span, inline="always")
def _seat_span(live, live_count, k, start, stop):
    if isinstance(live, types.NoneType):
        return lambda live, live_count, k, start, stop: (start, stop, False)

    def span(live, live_count, k, start, stop):
        rows = live[k, : live_count[k]]
        lo, hi = np.searchsorted(rows, start), np.searchsorted(rows, stop)
        if (hi - lo) * DENSE_SHARE_DENOMINATOR >= (stop - start) * DENSE_SHARE_NUMERATOR:
            return start, stop, False  # (most of the range listed: the range itself is cheaper)
        return lo, hi, True

    return span


@overload(table_at, inline="always")
def _table_at(live, k, i, listed):
    if isinstance(live, types.NoneType):
        return lambda live, k, i, listed: i
    return lambda live, k, i, listed: live[k, i] if listed else i


@numba.njit(cache=True, nogil=True)
def mostly_listed(live, live_count, start, stop):
    """Whether every seat visits the whole range ``start..stop-1`` (:func:`seat_span`): the kernels can
    then run without lists."""
    for k in range(live.shape[0]):
        if seat_span(live, live_count, k, start, stop)[2]:
            return False
    return True


def all_live(n_seats: int, n_tables: int) -> tuple[np.ndarray, np.ndarray]:
    """Lists of every table for every seat: ``(live, live_count)``."""
    live = np.empty((n_seats, n_tables), dtype=np.int64)
    live[:] = np.arange(n_tables)
    return live, np.full(n_seats, n_tables, dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def drop_finished(live, live_count, ended, terminated, truncated):
    """Shorten each seat's list after a hand of a sticky session (an ended seat sits out until
    reset): a table leaves it once the seat there has ended and its last hand is cleared, i.e. it
    ended before this hand (``ended`` but neither ``terminated`` nor ``truncated`` set: the hand it
    ended in sets one, and the next clears both with the rest of its row). Nothing of that row is
    written again, so no kernel needs to visit it."""
    for k in range(live.shape[0]):
        kept = 0
        for i in range(live_count[k]):
            t = live[k, i]
            if ended[k, t] == PLAYING or terminated[k, t] or truncated[k, t]:
                live[k, kept] = t
                kept += 1
        live_count[k] = kept
