"""Actions -> requested stakes: step 1 of the stake rules (below), the checks of an action batch's
layout and range, and the masks for MaskablePPO. The session applies steps 2-4.

Stake rules (:func:`pb_gym.session.place_rows`; applied to every table every hand, in this order;
amounts in betting units):

1. The requested stake of each bet spot, in units: a stake level (``stake_unit="units"``: the level in
   units; ``"fraction"``: the level times the current bankroll) for the discrete modes; for the ``box``
   mode ``a * min(bankroll, table_max)`` where ``a`` is the action entry clipped to ``[0, 1]`` (NaN = 0).
2. Each spot's stake is capped at the table maximum and at the bankroll.
3. If the stakes of several spots (box mode) add up to more than the bankroll they are scaled down in
   proportion so that they add up to the bankroll.
4. A spot whose stake is below the table minimum is not placed (stake 0). When betting is forced
   (``allow_no_bet=False``) and nothing would be placed, the table minimum is placed instead on the
   chosen spot (box mode: the spot with the largest action entry, banker on ties); the bankroll always
   covers it, since an episode ends (ruin) as soon as the bankroll falls below the table minimum.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from pb_gym.envs.config import ACTION_MODES, EnvConfig, read_only
from pb_gym.envs.tables import limits_struct
from pb_gym.session import Seats, place_rows

DISCRETE, MULTIDISCRETE, BOX = range(len(ACTION_MODES))


@functools.lru_cache(maxsize=64)
def decode_struct(cfg: EnvConfig) -> tuple:
    """The action decoding of a config as the kernels read it: ``(mode, no_bet_first, choice_spot,
    stake_levels, fraction, box_spots, table_max)`` (mode: :data:`DISCRETE`, ...)."""
    return (
        ACTION_MODES.index(cfg.action_mode),
        cfg.allow_no_bet,
        cfg.choice_spot,
        read_only(np.asarray(cfg.stake_levels, dtype=np.float64)),
        cfg.stake_unit == "fraction",
        cfg.box_spots,
        cfg.max_units,
    )


# (called only from decode_rows: no Python or C entry point is compiled; numba's stubs omit these flags)
@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]
def _decode_box_rows(start, stop, action_floats, box_spots, table_max, bankroll, requested, chosen, active):
    """:func:`decode_rows` of the ``box`` mode: each offered spot's entry clipped to [0, 1] (NaN = 0)
    times ``min(bankroll, table_max)``; the chosen column is the largest entry's (the first on ties)."""
    n_bets = requested.shape[2]
    for t in range(start, stop):
        if not active[t]:
            continue
        b = bankroll[0, t]
        cap = b if b < table_max else table_max
        for j in range(n_bets):
            requested[0, t, j] = 0.0
        best = 0
        best_x = 0.0
        for j in range(box_spots.shape[0]):
            x = action_floats[t, j]
            if not x > 0.0:  # also NaN
                x = 0.0
            elif x > 1.0:
                x = 1.0
            requested[0, t, box_spots[j]] = x * cap
            if x > best_x:
                best_x = x
                best = j
        chosen[0, t] = box_spots[best]


@numba.njit(cache=True, nogil=True, inline="always")
def _choice_and_level(mode, action_ints, t, no_bet_first, n_choices, n_levels):
    """The bet choice and stake level of table ``t``'s discrete or multidiscrete action; ``(-1, -1)``
    when it is out of range."""
    if mode == DISCRETE:
        a = action_ints[t, 0]
        n_actions = (n_choices - 1) * n_levels + 1 if no_bet_first else n_choices * n_levels
        if a < 0 or a >= n_actions:
            return -1, -1
        if not no_bet_first:
            return a // n_levels, a % n_levels
        if a == 0:
            return 0, 0
        return 1 + (a - 1) // n_levels, (a - 1) % n_levels
    choice = action_ints[t, 0]
    level = action_ints[t, 1]
    if choice < 0 or choice >= n_choices or level < 0 or level >= n_levels:
        return -1, -1
    return choice, level


@numba.njit(cache=True, nogil=True)
def decode_rows(start, stop, action_ints, action_floats, dec, bankroll, requested, chosen, active):
    """Step 1 of the stake rules for every active table ``start..stop-1`` (seat 0): the requested
    stake of each bet column and the chosen column. Returns the first table whose action is out of
    range (the tables after it are not decoded), or -1."""
    mode, no_bet_first, choice_spot, levels, fraction, box_spots, table_max = dec
    if mode == BOX:
        _decode_box_rows(
            start, stop, action_floats, box_spots, table_max, bankroll, requested, chosen, active
        )
        return -1
    n_levels = levels.shape[0]
    n_choices = choice_spot.shape[0]
    for t in range(start, stop):
        if not active[t]:
            continue
        choice, level = _choice_and_level(mode, action_ints, t, no_bet_first, n_choices, n_levels)
        if choice < 0:
            return t
        # one column: the other columns of the row are left as they are, unread by the stake rules
        # given single=True (pb_gym.session.place_rows); requested_stakes starts from zeros
        spot = choice_spot[choice]
        chosen[0, t] = spot
        if spot >= 0:
            requested[0, t, spot] = levels[level] * bankroll[0, t] if fraction else levels[level]
    return -1


def action_array(cfg: EnvConfig, actions: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``actions`` of ``n`` tables checked and laid out for the kernels: ``(ints, floats)``, one of
    them empty (``(n, 1)`` / ``(n, 2)`` int64 for the discrete modes, ``(n, n_offered)`` float64 for
    ``box``). Wrong shapes or dtypes raise ValueError naming them."""
    mode = cfg.action_mode
    if mode == "box":
        acts = np.asarray(actions, dtype=np.float64)
        k = len(cfg.bets.offered)
        if acts.shape != (n, k):
            raise ValueError(
                f"box actions must have shape ({n}, {k}) (one stake per offered bet: "
                f"{', '.join(cfg.bets.offered)}); got {acts.shape}"
            )
        return _NO_INTS, np.ascontiguousarray(acts)
    acts = np.asarray(actions)
    if acts.dtype.kind not in "iu":
        if acts.dtype.kind == "f" and np.all(acts == np.floor(acts)):
            acts = acts.astype(np.int64)
        else:
            raise ValueError(f"{mode} actions must be integers; got dtype {acts.dtype}")
    shape = (n, 2) if mode == "multidiscrete" else (n,)
    if acts.shape != shape:
        raise ValueError(f"{mode} actions must have shape {shape}; got {acts.shape}")
    return np.ascontiguousarray(acts.astype(np.int64, copy=False).reshape(n, -1)), _NO_FLOATS


_NO_INTS = read_only(np.zeros((0, 2), dtype=np.int64))
_NO_FLOATS = read_only(np.zeros((0, 1), dtype=np.float64))


def bad_action(cfg: EnvConfig, ints: np.ndarray, t: int) -> ValueError:
    allowed = (
        f"0..{cfg.n_actions - 1}"
        if cfg.action_mode == "discrete"
        else f"[0..{len(cfg.bet_choices) - 1}, 0..{len(cfg.stake_levels) - 1}] (bet choices "
        f"{', '.join(cfg.bet_choices)}; {len(cfg.stake_levels)} stake levels)"
    )
    shown = int(ints[t, 0]) if cfg.action_mode == "discrete" else ints[t].tolist()
    return ValueError(f"action {shown} (table {t}) is out of range; allowed: {allowed}")


def requested_stakes(cfg: EnvConfig, actions: object, bankroll: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step 1 of the stake rules for a batch of actions: the requested stakes ``(n, 7)`` in units and
    the chosen column of each table ``(n,)`` (-1: no bet), given each table's bankroll in units; pass
    them to :meth:`pb_gym.session.Session.play` (a policy playing seat ``k``: row ``k``)."""
    bankroll = np.ascontiguousarray(bankroll, dtype=np.float64)
    if bankroll.ndim != 1:
        raise ValueError("bankroll must be a 1-D array, one bankroll per table")
    n = bankroll.shape[0]
    ints, floats = action_array(cfg, actions, n)
    requested = np.zeros((1, n, cfg.n_columns))
    chosen = np.full((1, n), -1, dtype=np.int64)
    bad = decode_rows(
        0, n, ints, floats, decode_struct(cfg), bankroll[None], requested, chosen, np.ones(n, dtype=np.bool_)
    )
    if bad >= 0:
        raise bad_action(cfg, ints, bad)
    return requested[0], chosen[0]


def decode_actions(
    cfg: EnvConfig,
    actions: np.ndarray,
    bankroll: np.ndarray,
    out: np.ndarray,
    active: np.ndarray | None = None,
) -> np.ndarray:
    """Stakes ``(n, 7)`` in units (:data:`~pb_gym.rules.BETS` order) that a batch of actions places:
    :func:`requested_stakes` then the session's stake rules (:mod:`pb_gym.session`), written into
    ``out``.

    ``actions``: ``(n, 2)`` ints (multidiscrete), ``(n,)`` ints (discrete) or ``(n, n_offered)`` floats
    (box). Rows where ``active`` is False get no stakes. Out-of-range discrete actions raise ValueError.
    """
    if type(bankroll) is not np.ndarray or bankroll.ndim != 1 or bankroll.dtype != np.float64:
        raise ValueError("bankroll must be a 1-D float64 array, one bankroll per table")
    n = bankroll.shape[0]
    if type(out) is not np.ndarray or out.shape != (n, cfg.n_columns) or out.dtype != np.float64:
        raise ValueError(f"out must be a float64 array of shape ({n}, {cfg.n_columns})")
    if active is None:
        active = np.ones(n, dtype=np.bool_)
    elif type(active) is not np.ndarray or active.shape != (n,) or active.dtype != np.bool_:
        raise ValueError(f"active must be a boolean mask of shape ({n},)")
    requested, chosen = requested_stakes(cfg, actions, bankroll)
    requested[~active] = 0.0
    seats = Seats.empty(1, n, cfg.n_columns)
    seats.bankroll[0] = bankroll
    seats.ended[0] = np.where(active, 0, 1)  # inactive rows sit out
    place_rows(0, n, active, requested[None], chosen[None], True, seats.view, limits_struct(cfg, None))
    out[...] = seats.stakes[0]
    return out


def action_masks(cfg: EnvConfig, bankroll: np.ndarray) -> np.ndarray:
    """Valid actions per table for MaskablePPO, ``(n, m)`` bool.

    ``multidiscrete``: the bet-choice mask followed by the stake-level mask (sb3-contrib's layout);
    ``discrete``: one entry per action. A bet is allowed while the bankroll covers the table minimum; a
    stake level is allowed when its stake lies within the table minimum and ``min(bankroll, table
    maximum)`` (if no level does, every level is allowed: stakes are then capped as documented).
    No bet is allowed if ``allow_no_bet``; when nothing else is (ruin), everything is allowed.
    """
    if cfg.action_mode == "box":
        raise ValueError("action masks exist for action_mode='multidiscrete' or 'discrete', not 'box'")
    b = np.asarray(bankroll, dtype=np.float64)[:, None]
    levels = np.asarray(cfg.stake_levels)[None, :]
    raw = (
        levels * b if cfg.stake_unit == "fraction" else np.broadcast_to(levels, (b.shape[0], levels.shape[1]))
    )
    eps = 1e-9
    level_ok = (raw >= cfg.min_units - eps) & (raw <= np.minimum(b, cfg.max_units) + eps)
    level_ok[~level_ok.any(axis=1)] = True
    can_bet = b[:, 0] >= cfg.min_units
    choice_spot = cfg.choice_spot
    choice_ok = np.where(choice_spot[None, :] < 0, cfg.allow_no_bet, can_bet[:, None])
    stuck = ~choice_ok.any(axis=1)
    choice_ok[stuck] = True
    if cfg.action_mode == "multidiscrete":
        return np.concatenate([choice_ok, level_ok], axis=1)
    bets = choice_ok[:, choice_spot >= 0]
    pairs = (bets[:, :, None] & level_ok[:, None, :]).reshape(b.shape[0], -1)
    if cfg.allow_no_bet:
        return np.concatenate([choice_ok[:, :1], pairs], axis=1)
    return pairs
