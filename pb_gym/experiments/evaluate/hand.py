"""One hand of an evaluate chunk in one compiled pass over its tables (:mod:`pb_gym.experiments.evaluate`).

Why. A hand of the main job touches, for each of its 15 seats at each of its 5,000 tables, a dozen
``(seats, tables)`` arrays: the progressions' proposals, the stake rules, settlement and ends
(:mod:`pb_gym.session`), the ledgers' accounting and the progressions' updates. Four kernels called
one after the other each stream those arrays (some 7 MB, more than a core's cache) and three of them
ran on one thread. :func:`hand_rows` runs all four over one chunk of tables at a time, on the
session's threads (:func:`pb_gym.parallel.checked_rows`): a chunk's arrays are read once a hand while
they are in cache, and every part of the hand runs on every core.

The results are the same bits. Each part does for a table what it did before, in the same order
(proposal, hand, accounting, update), and no table's result depends on another's; what sums over
the tables (the money staked on each column, the counts of caps, the largest stake) is summed in
table order on one thread afterwards (:func:`pb_gym.experiments.evaluate.ledger.account_totals`).
"""

from __future__ import annotations

import numba
import numpy as np
from numba.experimental import structref

from pb_gym.agents import staking
from pb_gym.experiments.evaluate import ledger
from pb_gym.session import kernels as session_kernels
from pb_gym.session import live as session_live
from pb_gym.shoe_state import NamedFields


@structref.register
class _HandStateType(NamedFields):
    pass


class HandState(structref.StructRefProxy):
    """The arguments of :func:`hand_rows` as one compiled object (:data:`HAND_STATE_FIELDS`): a call
    from Python then types one object, not the forty-odd arrays of the programs, the session and the
    ledgers, which cost a pool thread tens of microseconds of the GIL at every hand (and with them,
    the pass ran no faster on two threads than on one). Made by :func:`new_hand_state`."""


HAND_STATE_FIELDS = (
    "programs",
    "program_state",
    "last_decision",
    "max_units",
    "unit",
    "program_seats",
    "slot_of",
    "columns",
    "capped",
    "pays",
    "deal",
    "requested",
    "chosen",
    "sticky",
    "play_state",
    "ledgers",
    "live",
    "live_count",
    "totals_done",
)
structref.define_proxy(HandState, _HandStateType, list(HAND_STATE_FIELDS))


@numba.njit(cache=True)
def new_hand_state(*fields):
    """A :class:`HandState` of ``fields`` (the :data:`HAND_STATE_FIELDS`, in order), built by a cached
    kernel (a structref proxy called from Python compiles its constructor again in every process)."""
    return HandState(*fields)


@numba.njit(cache=True, nogil=True)
def hand_rows(start, stop, hand):
    """The hand at the tables ``start..stop-1`` of a :class:`HandState`: the program seats' proposals
    (:func:`agents.staking.propose_range`), the hand (:func:`pb_gym.session.kernels.play_state_rows`),
    every seat's accounting (:func:`pb_gym.experiments.evaluate.ledger.account_range`) and the program seats'
    updates (:func:`agents.staking.update_range`). Returns the session's ``(table, problem)`` (nothing
    is accounted after a problem: the hand is refused). Each seat visits the tables of its list of
    live ones (:mod:`pb_gym.session.live`); where every seat still has most of the range listed, the
    kernels run without lists, over every row, as the code compiled for the environments does (a
    study whose seats seldom end pays nothing for the lists). A pass over every table (on one
    thread) also adds what :func:`pb_gym.experiments.evaluate.ledger.account_totals` sums, in its order,
    and says so in ``hand.totals_done[0]``."""
    totals = start == 0 and stop == hand.columns.shape[1]
    if session_live.mostly_listed(hand.live, hand.live_count, start, stop):
        found = _hand_parts(start, stop, hand, None, None, totals)
    else:
        found = _hand_parts(start, stop, hand, hand.live, hand.live_count, totals)
    if totals and found[0] < 0:
        hand.totals_done[0] = True
    return found


@numba.njit(cache=True, nogil=True)
def _hand_parts(start, stop, hand, live, live_count, totals):
    """:func:`hand_rows`' parts, over each seat's ``live`` tables or (None) every table (``totals``:
    :func:`pb_gym.experiments.evaluate.ledger.account_range`'s)."""
    programs, program_state, unit = hand.programs, hand.program_state, hand.unit
    program_seats, slot_of, columns, capped = hand.program_seats, hand.slot_of, hand.columns, hand.capped
    requested, play_state = hand.requested, hand.play_state
    staking.propose_range(
        start,
        stop,
        programs,
        program_state,
        hand.last_decision,
        hand.max_units,
        unit,
        program_seats,
        slot_of,
        requested,
        columns,
        capped,
        live,
        live_count,
    )
    found = session_kernels.play_state_rows(
        start, stop, hand.deal, requested, hand.chosen, hand.sticky, play_state, live, live_count
    )
    if found[0] >= 0:
        return found
    seats = play_state.seats
    ledger.account_range(start, stop, seats, columns, slot_of, capped, hand.ledgers, live, live_count, totals)
    staking.update_range(
        start,
        stop,
        programs,
        program_state,
        hand.pays,
        program_seats,
        seats.placed,
        seats.net,
        unit,
        live,
        live_count,
    )
    return found


def no_programs(n_tables: int) -> tuple[staking.ProgramTable, staking.ProgramState]:
    """The program table and state of no seat (a chunk whose systems are all played in Python: a
    learned policy, Kelly): the kernels' loops over the program seats then do nothing."""
    none = np.zeros(0, dtype=np.int64)
    table = staking.ProgramTable(
        progression=none,
        choice=none,
        columns=np.zeros((0, 2), dtype=np.int64),
        base=np.zeros(0),
        reset_on_cap=np.zeros(0, dtype=np.bool_),
        recovering=np.zeros(0, dtype=np.bool_),
        grow=np.zeros(0),
        wins_to_reset=none,
        sequence=np.zeros((0, 1)),
        length=none,
        steps=np.zeros((0, 4), dtype=np.int64),
        line=none,
    )
    state = staking.ProgramState(
        wanted=np.zeros((0, n_tables)),
        level=np.zeros((0, n_tables)),
        counter=np.zeros((0, n_tables), dtype=np.int64),
        tail=np.zeros((0, n_tables), dtype=np.int64),
        lines=np.zeros((1, 1, 1)),
        drawn=np.zeros((0, n_tables), dtype=np.int64),
    )
    return table, state
