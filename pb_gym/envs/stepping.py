"""One hand at every table of an environment: the compiled step (:class:`StepState` holds its
arguments), the single env's one-call step (:func:`step_one`), a batch's passes (:func:`decode_state`,
:func:`play_state`, or :func:`step_small_batch` in one call below :data:`SMALL_BATCH` tables), the
restart of every table (:func:`restart_all`), and the step's reward and end flags."""

from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

from pb_gym import engine, shoe_shuffle
from pb_gym import rules as R
from pb_gym.envs.actions import BOX, bad_action, decode_rows, decode_struct
from pb_gym.envs.config import EnvConfig
from pb_gym.envs.observation import OBS_MIN_TABLES, exact_reward, obs_rows, obs_struct
from pb_gym.envs.tables import Tables, check_batch, limits_struct, scratch
from pb_gym.parallel import checked_rows
from pb_gym.session import MAX_CARDS, PLAY_MIN_TABLES, deal_constants, play_rows, restart_rows

_play_rows = numba.njit(nogil=True, inline="always")(play_rows.py_func)
"""The session's hand (:func:`pb_gym.session.play_rows`, the same Python function) compiled to be
inlined into the steps below. numba links the code of every kernel a compiled function calls into
that function, and LLVM optimizes it and emits its machine code again there: each layer of calls
between a step and the session's kernels cost about as much to compile as the kernels themselves (a
fresh cache's first step: docs/performance.md, "Compile cost"). The steps call the kernels through
inlined glue only."""


@numba.njit(nogil=True, inline="always")
def _step_rows(
    start,
    stop,
    decode,
    action_ints,
    action_floats,
    dec,
    deal,
    requested,
    chosen,
    seats,
    records,
    shoe,
    deal_consts,
    hand,
    payoffs,
    lim,
    obs_consts,
    obs,
):
    """One env step of tables ``start..stop-1`` in one call: (``decode``: the actions into requests,)
    the session's hand (:func:`pb_gym.session.play_rows`) and the observations into ``obs``.
    Returns ``(kind, table, code)``: kind 0 = done, 1 = an out-of-range action at ``table`` (nothing
    played), 2 = an unusable shoe state at ``table`` (problem ``code``; nothing dealt there)."""
    if decode:
        bad = decode_rows(
            start, stop, action_ints, action_floats, dec, seats.bankroll, requested, chosen, deal
        )
        if bad >= 0:
            return 1, bad, 0
    table, problem = _play_rows(
        start,
        stop,
        deal,
        requested,
        chosen,
        False,
        seats,
        records,
        shoe,
        deal_consts,
        hand,
        payoffs,
        lim,
        dec[0] != BOX,
    )
    if table >= 0:
        return 2, table, problem
    if obs.shape[0] > 0:
        obs_rows(start, stop, obs_consts, seats, records, shoe, obs)
    return 0, -1, 0


@structref.register
class _StepStateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class StepState(structref.StructRefProxy):
    """The arguments of one env step (:func:`_step_rows`) held by ONE compiled object: a step then
    passes two objects to the compiled code (this and the observation buffer) instead of some fifty
    arrays, whose unboxing would cost a single env more than its hand. Built by
    :func:`step_state`; rebuilt when an array of the session is replaced."""


_STEP_FIELDS = (
    "ints",
    "floats",
    "dec",
    "active",
    "requested",
    "chosen",
    "seats",
    "records",
    "shoe",
    "deal_consts",
    "hand",
    "payoffs",
    "lim",
    "obs_consts",
)
structref.define_proxy(StepState, _StepStateType, list(_STEP_FIELDS))


@numba.njit(cache=True)
def _new_step_state(*fields):
    """A :class:`StepState` of ``fields`` (the :data:`_STEP_FIELDS`, in order), built by a cached
    kernel (as :func:`pb_gym.shoe_state._new_shoe_view`: a proxy class called from Python would
    compile its constructor again in every process)."""
    return StepState(*fields)


STEP_SCALARS: tuple[str, ...] = (
    "net",
    "terminated",
    "truncated",
    "player_total",
    "banker_total",
    "winner",
    "natural",
    "player_pair",
    "banker_pair",
    "shuffled",
    "bankroll",
)
"""What :func:`step_one` writes about table 0 after its stakes (``out[n_bets:]``): the seat's net
win, end flags, the hand and the bankroll after it."""


@numba.njit(cache=True, nogil=True, inline="always")
def _step_all(state, obs):
    """:func:`_step_rows` over all the tables of a :class:`StepState`, actions decoded first: one
    compiled call for the whole step of a batch small enough for one thread (and inlined into
    :func:`step_one`: no layer of calls between the single env's step and the kernels)."""
    return _step_rows(
        np.int64(0),
        state.active.shape[0],
        True,
        state.ints,
        state.floats,
        state.dec,
        state.active,
        state.requested,
        state.chosen,
        state.seats,
        state.records,
        state.shoe,
        state.deal_consts,
        state.hand,
        state.payoffs,
        state.lim,
        state.obs_consts,
        obs,
    )


@numba.njit(cache=True, nogil=True)
def step_one(state, obs, out, cards):
    """:func:`_step_rows` over all the tables of a :class:`StepState`, actions decoded first, then
    table 0's stakes and :data:`STEP_SCALARS` into ``out`` (float64, ``n_bets + 11``) and, if
    ``cards`` (uint8 ``(2, 3)``) is not empty, its player's and banker's cards: a single env's step
    then reads everything it returns from two fresh arrays, with one ``tolist``."""
    result = _step_all(state, obs)
    if result[0] != 0:
        return result
    bankroll, stakes, net = state.seats.bankroll, state.seats.stakes, state.seats.net
    terminated, truncated = state.seats.terminated, state.seats.truncated
    hand = state.hand
    player_cards, banker_cards = hand.player_cards, hand.banker_cards
    player_total, banker_total, winner = hand.player_total, hand.banker_total, hand.winner
    natural, player_pair, banker_pair, shuffled = (
        hand.natural,
        hand.player_pair,
        hand.banker_pair,
        hand.shuffled,
    )
    n_bets = stakes.shape[2]
    for j in range(n_bets):
        out[j] = stakes[0, 0, j]
    out[n_bets] = net[0, 0]
    out[n_bets + 1] = terminated[0, 0]
    out[n_bets + 2] = truncated[0, 0]
    out[n_bets + 3] = player_total[0]
    out[n_bets + 4] = banker_total[0]
    out[n_bets + 5] = winner[0]
    out[n_bets + 6] = natural[0]
    out[n_bets + 7] = player_pair[0]
    out[n_bets + 8] = banker_pair[0]
    out[n_bets + 9] = shuffled[0]
    out[n_bets + 10] = bankroll[0, 0]
    if cards.shape[0] > 0:
        for k in range(MAX_CARDS):
            cards[0, k] = player_cards[0, k]
            cards[1, k] = banker_cards[0, k]
    return result


def step_state(
    cfg: EnvConfig,
    tables: Tables,
    ints: np.ndarray,
    floats: np.ndarray,
    active: np.ndarray,
    max_hands: int | None = None,
) -> StepState:
    """The :class:`StepState` of ``tables`` stepped with the action buffers ``ints`` / ``floats`` (see
    :func:`action_array`; the caller writes each step's actions into them) where ``active``: a
    single env's (:func:`step_one`) or a batch's (:func:`play_state`; ``max_hands`` overriding
    ``cfg.max_hands``)."""
    session = tables.session
    requested, chosen = scratch(session)
    seats, records, shoe, hand = session.structs()
    return _new_step_state(
        ints,
        floats,
        decode_struct(cfg),
        active,
        requested,
        chosen,
        seats,
        records,
        shoe,
        deal_constants(cfg.rules),
        hand,
        session.payoffs,
        limits_struct(cfg, cfg.max_hands if max_hands is None else max_hands),
        obs_struct(cfg),
    )


batch_state = step_state
"""The :class:`StepState` of a batch (:func:`step_state`, the same function)."""


@numba.njit(cache=True, nogil=True)
def _decode_state(state):
    """:func:`decode_rows` over all the tables of a :class:`StepState`."""
    return decode_rows(
        np.int64(0),
        state.active.shape[0],
        state.ints,
        state.floats,
        state.dec,
        state.seats.bankroll,
        state.requested,
        state.chosen,
        state.active,
    )


@numba.njit(cache=True, nogil=True)
def _play_state(start, stop, state):
    """:func:`pb_gym.session.play_rows` at the tables ``start..stop-1`` of a :class:`StepState`."""
    return _play_rows(
        start,
        stop,
        state.active,
        state.requested,
        state.chosen,
        False,
        state.seats,
        state.records,
        state.shoe,
        state.deal_consts,
        state.hand,
        state.payoffs,
        state.lim,
        state.dec[0] != BOX,
    )


@numba.njit(cache=True, nogil=True)
def _obs_state(start, stop, state, obs):
    """:func:`obs_rows` at the tables ``start..stop-1`` of a :class:`StepState`."""
    obs_rows(start, stop, state.obs_consts, state.seats, state.records, state.shoe, obs)


@numba.njit(cache=True, nogil=True)
def _play_obs_state(start, stop, state, obs):
    """:func:`_play_state` then, if no table was unusable, :func:`_obs_state` at the tables
    ``start..stop-1``."""
    found = _play_state(start, stop, state)
    if found[0] < 0:
        _obs_state(start, stop, state, obs)
    return found


def decode_state(cfg: EnvConfig, state: StepState, ints: np.ndarray) -> None:
    """Step 1 of :func:`play_state`: the actions in the buffers of ``state`` (checked layout, see
    :func:`action_array`) into requested stakes at its active tables; ValueError naming the first
    out-of-range action (nothing else is changed). Reads only the active tables' bankrolls."""
    bad = _decode_state(state)
    if bad >= 0:  # every action checked before any table is dealt
        raise bad_action(cfg, ints, bad)


def play_state(
    cfg: EnvConfig, tables: Tables, state: StepState, active: np.ndarray, obs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 2-4 of a batch's step over a :class:`StepState` (:func:`batch_state`) whose actions
    :func:`decode_state` has decoded: the session's hand at every active table (the stake rules, one
    deal, settlement, records, ends; :func:`pb_gym.session.play_rows`, on several threads from
    :data:`STEP_MIN_TABLES` tables) and the observations after it into ``obs``. Returns fresh
    ``(reward, terminated, truncated)`` (:func:`hand_outcome`)."""
    check_batch(cfg, tables)
    engine.check_state(cfg.rules, tables.session.shoe, deals=False)
    found = checked_rows(_play_obs_state, tables.n, STEP_MIN_TABLES, state, obs)
    if found[0] >= 0:
        engine.raise_table_problem(*found)
    return hand_outcome(cfg, tables, active)


@numba.njit(cache=True, nogil=True)
def restart_all(state, bankroll0, obs):
    """Every table of a :class:`StepState` starts a new episode, in one compiled call: a new shoe
    (continuing each table's random stream, as :func:`pb_gym.engine.shuffle`), empty records, the
    seat at ``bankroll0`` (:meth:`pb_gym.session.Session.reset`), and the first observations into
    ``obs``. False (nothing done) if the shoe arrays do not hold a shoe of the rules."""
    shoe = state.shoe
    _, burn, per_rank = state.deal_consts
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
    restart_rows(index, bankroll0, state.seats, state.records)
    obs_rows(zero, n, state.obs_consts, state.seats, state.records, state.shoe, obs)
    return True


STEP_MIN_TABLES = PLAY_MIN_TABLES
"""Batches of at least this many tables are stepped on several threads (:mod:`pb_gym.parallel`)."""
SMALL_BATCH = min(STEP_MIN_TABLES, OBS_MIN_TABLES)
"""Below this many tables a vector step runs on one thread anyway: :func:`step_small_batch` makes it
one compiled call instead of three (decode, play, observe)."""


def step_small_batch(
    cfg: EnvConfig, tables: Tables, state: StepState, ints: np.ndarray, active: np.ndarray, obs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`decode_state` then :func:`play_state` in ONE compiled call (:func:`_step_all`), for a
    batch of fewer than :data:`SMALL_BATCH` tables: the same passes in the same order, so the same
    results and errors (every action is checked before any table changes); a step of a few tables
    then costs one call's dispatch instead of three. ``ints``: the action buffer of ``state`` (for
    the message naming an out-of-range action)."""
    check_batch(cfg, tables)
    engine.check_state(cfg.rules, tables.session.shoe, deals=False)
    result = _step_all(state, obs)
    if result[0]:
        raise_step(cfg, ints, result)
    return hand_outcome(cfg, tables, active)


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


def raise_step(cfg: EnvConfig, ints: np.ndarray, result: tuple) -> None:
    kind, table, code = result
    if kind == 1:
        raise bad_action(cfg, ints, table)
    if kind == 2:
        engine.raise_table_problem(table, code)
