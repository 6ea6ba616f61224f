"""One hand at every table of an environment: THE env step (:func:`step`, the single env's one table
and a batch alike), the compiled state it runs over (:class:`StepState`), the restart of every table
(:func:`restart_all`), and the step's reward and end flags (:func:`hand_outcome`)."""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
from numba.experimental import structref

from pb_gym import engine, shoe_shuffle
from pb_gym import rules as R
from pb_gym.envs.actions import BOX, bad_action, decode_rows, decode_struct
from pb_gym.envs.config import EnvConfig
from pb_gym.envs.observation import exact_reward, obs_rows, obs_struct
from pb_gym.envs.tables import Tables, check_batch, limits_struct
from pb_gym.parallel import checked_rows
from pb_gym.session import PLAY_MIN_TABLES, deal_constants, play_rows, restart_rows
from pb_gym.session.kernels import new_play_state
from pb_gym.shoe_state import NamedFields

_play_rows = numba.njit(nogil=True, inline="always")(play_rows.py_func)
"""The session's hand (:func:`pb_gym.session.play_rows`, the same Python function) compiled to be
inlined into the steps below. numba links the code of every kernel a compiled function calls into
that function, and LLVM optimizes it and emits its machine code again there: each layer of calls
between a step and the session's kernels cost about as much to compile as the kernels themselves (a
fresh cache's first step: docs/performance.md, "Compile cost"). The steps call the kernels through
inlined glue only."""


@structref.register
class _StepStateType(NamedFields):
    pass


class StepState(structref.StructRefProxy):
    """The arguments of one env step (:func:`step`) held by ONE compiled object: a step then
    passes two objects to the compiled code (this and the observation buffer) instead of some fifty
    arrays, whose unboxing would cost a single env more than its hand. Built by
    :func:`step_state`; rebuilt when an array of the session is replaced."""


_STEP_FIELDS = ("ints", "floats", "dec", "active", "requested", "chosen", "play", "obs_consts")
"""The fields of a :class:`StepState`: the action buffers and their decoding, the tables that play,
the requested stakes and chosen columns, the session's :class:`pb_gym.session.kernels.PlayState`
(with the env's limits) and the observation's constants."""
structref.define_proxy(StepState, _StepStateType, list(_STEP_FIELDS))


@numba.njit(cache=True)
def _new_step_state(*fields):
    """A :class:`StepState` of ``fields`` (the :data:`_STEP_FIELDS`, in order), built by a cached
    kernel (as :func:`pb_gym.shoe_state._new_shoe_view`: a proxy class called from Python would
    compile its constructor again in every process)."""
    return StepState(*fields)


def step_state(
    cfg: EnvConfig,
    tables: Tables,
    ints: np.ndarray,
    floats: np.ndarray,
    active: np.ndarray,
    max_hands: int | None = None,
) -> StepState:
    """The :class:`StepState` of ``tables`` stepped with the action buffers ``ints`` / ``floats`` (see
    :func:`action_array`; the caller writes each step's actions into them) where ``active``
    (``max_hands`` overriding ``cfg.max_hands``). ``tables`` and their shoe state are checked
    against ``cfg`` here: a state is built again whenever an array of the session is replaced
    (:attr:`pb_gym.session.Session.version`)."""
    check_batch(cfg, tables)  # (the arrays' shapes cannot change until the session's version moves)
    engine.check_state(cfg.rules, tables.session.shoe, deals=False)
    session = tables.session
    seats, records, shoe, hand = session.structs()
    play = new_play_state(
        seats,
        records,
        shoe,
        hand,
        deal_constants(cfg.rules),
        session.payoffs,
        limits_struct(cfg, cfg.max_hands if max_hands is None else max_hands),
    )
    return _new_step_state(
        ints, floats, decode_struct(cfg), active, tables.requested, tables.chosen, play, obs_struct(cfg)
    )


@numba.njit(cache=True, nogil=True)
def _decode_state(state):
    """:func:`decode_rows` over all the tables of a :class:`StepState`."""
    return decode_rows(
        np.int64(0),
        state.active.shape[0],
        state.ints,
        state.floats,
        state.dec,
        state.play.seats.bankroll,
        state.requested,
        state.chosen,
        state.active,
    )


@numba.njit(cache=True, nogil=True)
def _play_obs_state(start, stop, state, obs):
    """:func:`pb_gym.session.play_rows` at the tables ``start..stop-1`` of a :class:`StepState`, then,
    if no table was unusable, their observations into ``obs``. Returns ``(table, problem)``
    (:data:`pb_gym.parallel.NO_PROBLEM` if none)."""
    play = state.play
    found = _play_rows(
        start,
        stop,
        state.active,
        state.requested,
        state.chosen,
        False,
        play.seats,
        play.records,
        play.shoe,
        play.deal_consts,
        play.hand,
        play.payoffs,
        play.limits,
        state.dec[0] != BOX,
    )
    if found[0] < 0:
        obs_rows(start, stop, state.obs_consts, play.seats, play.records, play.shoe, obs)
    return found


@numba.njit(cache=True, nogil=True)
def _step_all(state, obs):
    """The whole step of a :class:`StepState` in one compiled call (the actions decoded, then
    :func:`_play_obs_state` at every table): a step of a few tables pays one call's dispatch instead
    of two. Returns ``(kind, table, code)``: kind 0 = done, 1 = an out-of-range action at ``table``
    (nothing played), 2 = an unusable shoe state at ``table`` (problem ``code``)."""
    bad = _decode_state(state)
    if bad >= 0:
        return 1, bad, 0
    table, problem = _play_obs_state(np.int64(0), state.active.shape[0], state, obs)
    if table >= 0:
        return 2, table, problem
    return 0, -1, 0


def step(
    cfg: EnvConfig,
    state: StepState,
    ints: np.ndarray,
    obs: np.ndarray,
    restart: Callable[[], StepState] | None = None,
) -> None:
    """One env step of every table of a :class:`StepState` (:func:`step_state`): its actions decoded
    into requested stakes at the active tables, the session's hand there (the stake rules, one deal,
    settlement, records, ends; :func:`pb_gym.session.play_rows`, on several threads from
    :data:`STEP_MIN_TABLES` tables) and the observations after it into ``obs``. The single env steps
    its one table here, a vector env its batch.

    Every action is checked before any table changes: a ValueError names the first out-of-range one
    (``ints``: the action buffer of ``state``, for the message). ``restart`` (the vector env's
    autoreset) runs after the check and before the hand, and returns the state to play (rebuilt if it
    replaced an array of the session). The outcome is in the session's arrays
    (:func:`hand_outcome`)."""
    n = obs.shape[0]
    if restart is None and n < STEP_MIN_TABLES:
        kind, table, code = _step_all(state, obs)
        if kind == 1:
            raise bad_action(cfg, ints, table)
        if kind == 2:
            engine.raise_table_problem(table, code)
        return
    bad = _decode_state(state)
    if bad >= 0:
        raise bad_action(cfg, ints, bad)
    if restart is not None:
        state = restart()
    found = checked_rows(_play_obs_state, n, STEP_MIN_TABLES, state, obs)
    if found[0] >= 0:
        engine.raise_table_problem(*found)


@numba.njit(cache=True, nogil=True)
def restart_all(state, bankroll0, obs):
    """Every table of a :class:`StepState` starts a new episode, in one compiled call: a new shoe
    (continuing each table's random stream, as :func:`pb_gym.engine.shuffle`), empty records, the
    seat at ``bankroll0`` (:meth:`pb_gym.session.Session.reset`), and the first observations into
    ``obs``. False (nothing done) if the shoe arrays do not hold a shoe of the rules."""
    play = state.play
    shoe = play.shoe
    _, burn, per_rank = play.deal_consts
    if shoe.shoe.shape[1] != per_rank * R.N_RANKS:
        return False
    n = shoe.position.shape[0]
    # the shuffle of pb_gym.engine.init, already compiled when the tables were made: called with its
    # argument types from there (no literal 0), so that no second specialization is compiled
    zero = np.int64(0)
    shoe_shuffle._init_rows(zero, n, shoe, zero, burn)
    for t in range(n):
        shoe.hands_in_shoe[t] = 0
        shoe.shoes_started[t] += 1
        shoe.cut_hands[t] = 0
    index = np.empty(n, np.int64)  # (np.arange would compile one more kernel)
    for t in range(n):
        index[t] = t
    restart_rows(index, bankroll0, play.seats, play.records)
    obs_rows(zero, n, state.obs_consts, play.seats, play.records, shoe, obs)
    return True


STEP_MIN_TABLES = PLAY_MIN_TABLES
"""Batches of at least this many tables are stepped on several threads (:mod:`pb_gym.parallel`)."""


def hand_outcome(
    cfg: EnvConfig, tables: Tables, active: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fresh ``(reward, terminated, truncated)`` of the hand just played by the tables' one seat: the
    net win, or with ``reward="expected"`` / ``"log_growth"`` the :func:`exact_reward`."""
    seat_arrays = tables.session.seats
    reward = seat_arrays.net[0].copy()
    if cfg.reward != "realized":
        staked = np.flatnonzero(active & seat_arrays.placed[0])
        reward[active] = 0.0
        if staked.size:
            reward[staked] = exact_reward(cfg, tables, staked)
    return reward, seat_arrays.terminated[0].copy(), seat_arrays.truncated[0].copy()
