"""The environments' state of N tables: a one-seat :class:`pb_gym.session.Session` seen table by table
(:class:`Tables`), made and reset for an :class:`~pb_gym.envs.config.EnvConfig`, with its limits in
betting units."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from pb_gym import engine
from pb_gym.envs.config import EnvConfig
from pb_gym.session import LAST_HAND_FIELDS, Limits, Session

if TYPE_CHECKING:
    from pb_gym.procedures import CsmTray

_VIEWS: dict[str, tuple[str, str, bool]] = {
    # Tables field -> (session part, array, per seat: take seat 0)
    "bankroll": ("seats", "bankroll", True),
    "episode_hands": ("seats", "hands", True),
    "stakes": ("seats", "stakes", True),
    "reward": ("seats", "net", True),
    "bead": ("records", "bead", False),
    "last_hand": ("records", "last_hand", False),
    "player_cards": ("records", "player_cards", False),
    "banker_cards": ("records", "banker_cards", False),
}


class Tables:
    """The environments' state of N tables: a one-seat :class:`pb_gym.session.Session` (``session``),
    seen table by table. Amounts in betting units. Every field is a view of the session's arrays:

    ``bankroll`` ``(n,)`` float64, ``episode_hands`` ``(n,)`` int64 (hands dealt in the episode),
    ``bead`` ``(n, history)`` int8 (:data:`~pb_gym.session.BEAD_CODES`, most recent first, cleared at
    each new shoe),
    ``last_hand`` ``(n, 10)`` float32 (:data:`LAST_HAND_FIELDS`), ``player_cards`` / ``banker_cards``
    ``(n, 3)`` uint8 (the last hand's cards, 0 = none), ``stakes`` ``(n, 7)`` float64 (stakes of the last
    hand, BETS order), ``reward`` ``(n,)`` float64 (net win of the last hand), ``shoe`` (the engine's
    state) and ``result`` (the last hand dealt). Assigning a field copies the new values in, after
    checking their dtype and shape. ``csm``: the continuous shuffler's tray (``shuffle="csm"``), or
    None. ``requested`` ``(1, n, n_bets)`` and ``chosen`` ``(1, n)``: the step's buffers of requested
    stakes and chosen columns (:func:`pb_gym.envs.stepping.step_state`)."""

    session: Session
    csm: CsmTray | None
    requested: np.ndarray
    chosen: np.ndarray

    def __init__(self, session: Session, csm: CsmTray | None = None) -> None:
        object.__setattr__(self, "session", session)
        object.__setattr__(self, "csm", csm)
        object.__setattr__(self, "requested", np.zeros((1, session.n_tables, session.n_bets)))
        object.__setattr__(self, "chosen", np.full((1, session.n_tables), -1, dtype=np.int64))

    @property
    def n(self) -> int:
        return self.session.n_tables

    @property
    def shoe(self) -> engine.ShoeState:
        return self.session.shoe

    @property
    def result(self) -> engine.HandResult:
        return self.session.hand

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            part, array, per_seat = _VIEWS[name]
        except KeyError:
            raise AttributeError(f"'Tables' object has no attribute {name!r}") from None
        value = getattr(getattr(self.session, part), array)
        return value[0] if per_seat else value

    def __setattr__(self, name: str, value: object) -> None:
        if name == "shoe":
            # checked by the session's setter against the rules and the number of tables
            self.session.shoe = cast(engine.ShoeState, value)
            return
        if name not in _VIEWS:
            raise AttributeError(f"cannot set Tables.{name}")
        current = getattr(self, name)
        field = ((name, current.dtype, current.ndim),)
        engine.check_arrays(
            "Tables",
            type("New", (), {name: value})(),
            field,
            self.n,
            {name: current.shape[1] if current.ndim == 2 else 0},
        )
        current[...] = value


def check_batch(cfg: EnvConfig, tables: Tables, active: np.ndarray | None = None) -> None:
    """Before a kernel: ``tables`` were made for ``cfg`` (bead plate length, shoe size) and ``active``
    is one flag per table. Cheap (a few comparisons); the arrays themselves are checked by
    :class:`Tables` when set."""
    if not isinstance(tables, Tables):
        raise TypeError(
            f"tables must be a pb_gym.envs.tables.Tables (new_tables), got {type(tables).__name__}"
        )
    session = tables.session
    if session.history != cfg.history or session.shoe.shoe.shape[1] != cfg.rules.n_cards:
        raise ValueError(
            f"these tables were made for another config (bead plate of "
            f"{session.history} hands, {session.shoe.shoe.shape[1]}-card shoes; "
            f"this config: history={cfg.history}, {cfg.rules.n_cards}-card shoes): use "
            "new_tables(cfg, n) with the config you play them with"
        )
    if active is not None and (
        type(active) is not np.ndarray or active.dtype != np.bool_ or active.shape != (tables.n,)
    ):
        raise ValueError(f"active must be a boolean mask of shape ({tables.n},)")


def table_bytes(cfg: EnvConfig) -> int:
    """Bytes one table of a batch holds: its shoe state and hand (:func:`pb_gym.engine.table_bytes`),
    its row of the session's seat and table arrays and its rows of the batched observation space's
    bounds and of one observation (float32)."""
    row = 8 + 8 + 1 + 8 * cfg.n_columns + 8 + 5 + cfg.history + 4 * len(LAST_HAND_FIELDS) + 3 + 3 + 2
    return engine.table_bytes(cfg.rules) + row + 3 * 4 * cfg.obs_size


@functools.lru_cache(maxsize=64)
def limits(cfg: EnvConfig, max_hands: int | None = None) -> Limits:
    """The session limits of a config, in betting units (``max_hands`` overrides ``cfg.max_hands``:
    the vector env's ``max_episode_steps``)."""
    return Limits(
        bankroll=cfg.bankroll_units,
        table_min=cfg.min_units,
        table_max=cfg.max_units,
        win_target=None if cfg.win_target is None else cfg.target_units,
        max_hands=cfg.max_hands if max_hands is None else max_hands,
        one_shoe=cfg.one_shoe,
        allow_no_bet=cfg.allow_no_bet,
    )


def new_tables(cfg: EnvConfig, n: int, seed: engine.Seed = None, max_hands: int | None = None) -> Tables:
    """N tables with a fresh shoe each (``seed``: see :func:`pb_gym.engine.table_seeds`): a one-seat
    session whose seats play on after their episode ends (the env's caller resets them)."""
    session = Session(
        cfg.rules,
        limits(cfg, max_hands),
        n,
        1,
        seed=seed,
        history=cfg.history,
        sticky_ends=False,
        # the table's columns (pb_gym.catalog.TableBets.pay_matrix); None: the rules' own seven
        payoffs=cfg.bets.pay_matrix() if cfg.extra_bets else None,
    )
    if cfg.shuffle != "csm":
        return Tables(session)
    from pb_gym import procedures

    tray = procedures.CsmTray.empty(n, cfg.csm_delay)
    tray.restart(session.shoe)
    return Tables(session, tray)


def reset_tables(
    cfg: EnvConfig,
    tables: Tables,
    index: np.ndarray | None = None,
    seeds: Sequence[int] | np.ndarray | None = None,
) -> None:
    """Start new episodes at the tables ``index`` (all if None): a fresh shoe (seeded with one int per
    table if ``seeds`` is given, else continuing each table's random stream) and the starting bankroll."""
    check_batch(cfg, tables)
    tables.session.reset(index, seeds)
    if tables.csm is not None:
        tables.csm.restart(tables.shoe, None if index is None else np.asarray(index, dtype=np.int64))


def after_hand(cfg: EnvConfig, tables: Tables, active: np.ndarray) -> bool:
    """With ``shuffle="csm"``, after a hand at the ``active`` tables (and after its exact rewards and
    EVs, which price the cards as they were before it): the continuous shuffler's pass
    (:func:`pb_gym.procedures.csm_rows`: the hand into the tray, the hands beyond ``csm_delay`` back
    into the machine, the next hand drawn from it). True if it ran: the observations must then be
    made again. False (nothing done) for a hand-shuffled shoe."""
    if tables.csm is None:
        return False
    from pb_gym import procedures

    procedures.csm_prepare(tables.shoe, tables.csm, cfg.csm_delay, active)
    return True


@functools.lru_cache(maxsize=64)
def limits_struct(cfg: EnvConfig, max_hands: int | None) -> tuple:
    return limits(cfg, max_hands).struct()


def record_hand(cfg: EnvConfig, tables: Tables, hand: engine.HandResult, shoe: engine.ShoeState) -> None:
    """Fold a hand dealt elsewhere into the tables' bead plates and last-hand records, exactly as a
    step would (bankrolls and hand counters are left alone): :meth:`pb_gym.session.Session.record`."""
    check_batch(cfg, tables)
    engine.check_state(cfg.rules, shoe, deals=False)
    engine.check_result(hand, tables.n)
    if shoe.n_tables != tables.n:
        raise ValueError(f"shoe holds {shoe.n_tables} tables but the tables are {tables.n}")
    tables.session.record(hand)
