"""Observations and infos: THE observation of a seat of a session as an env configured by an
:class:`~pb_gym.envs.config.EnvConfig` shows it (:func:`observe`; the envs' steps write theirs with the
same row function, :func:`obs_rows`), the batched infos (:func:`hand_info`) and the exact figures of
the hand just dealt (EVs, log growth, the ``expected`` / ``log_growth`` rewards)."""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np

from pb_gym import rules as R
from pb_gym.envs.config import LOG_GROWTH_FLOOR, EnvConfig, bad, is_number, read_only
from pb_gym.envs.tables import Tables, check_batch
from pb_gym.parallel import run_rows
from pb_gym.session import Session

OBS_MIN_TABLES = 16384
"""Batches of at least this many tables write their observations on several threads
(:mod:`pb_gym.parallel`)."""


@functools.lru_cache(maxsize=64)
def obs_struct(cfg: EnvConfig, seat: int = 0, per_unit: float = 1.0) -> tuple:
    """The observation layout of a config as the kernels read it: ``(offsets of bankroll, bead plate,
    cards left, hands, last hand, shoe (-1 = hidden), history, factors (float32; 1s = raw), seat,
    per_unit, leak offsets (the first card's class, the burned cards, the bottom card; -1 = not
    leaked), hand_after_cut)``."""
    off = cfg.obs_offsets
    factors = cfg.obs_factors
    leak_start = off["leak"][0] if "leak" in off else 0
    leak = {name: leak_start + start for name, start in cfg.leak_offsets.items()}
    return (
        off["bankroll"][0],
        off["bead_plate"][0],
        off["cards_left"][0],
        off["hands"][0],
        off["last_hand"][0],
        off["shoe"][0] if "shoe" in off else -1,
        cfg.history,
        read_only(np.ones(cfg.obs_size, np.float32) if factors is None else factors),
        int(seat),
        float(per_unit),
        leak.get("first_card_class", -1),
        leak.get("burn_card", -1),
        leak.get("bottom_card", -1),
        bool(cfg.rules.hand_after_cut),
    )


@numba.njit(cache=True, nogil=True)
def obs_rows(start, stop, consts, seats, records, shoe, out, rows=None):
    """The observations of one seat at the tables ``start..stop-1`` (or ``rows[start:stop]``) as the
    session state is now (after the last hand): the one observation function of the environments
    and of anything that plays a policy on a session (written out in the loop: a row function taking
    a dozen arrays would cost more per row than the row)."""
    o_bankroll, o_bead, o_cards, o_hands, o_last, o_shoe, history, factors, seat, per_unit = consts[:10]
    o_first, o_burn, o_bottom, hand_after_cut = consts[10:]
    bankroll, hands = seats.bankroll, seats.hands
    bead, last_hand = records.bead, records.last_hand
    shoe_cards, position, unseen, hands_in_shoe = shoe.shoe, shoe.position, shoe.unseen, shoe.hands_in_shoe
    n_cards = shoe_cards.shape[1]
    size = factors.shape[0]
    for i in range(start, stop):
        t = i if rows is None else rows[i]
        row = out[t]
        row[o_bankroll] = bankroll[seat, t] / per_unit
        for k in range(history):
            row[o_bead + k] = bead[t, k]
        row[o_cards] = n_cards - position[t]
        row[o_hands] = hands[seat, t]
        row[o_hands + 1] = hands_in_shoe[t]
        for k in range(last_hand.shape[1]):
            row[o_last + k] = last_hand[t, k]
        if o_shoe >= 0:
            for r in range(unseen.shape[1]):
                row[o_shoe + r] = unseen[t, r]
        for k in range(size):  # the scaling (factors of 1 in raw units: x * 1 is x)
            row[k] *= factors[k]
    if o_first >= 0 or o_burn >= 0 or o_bottom >= 0:
        # a pass of their own: in the loop above, this branch alone cost it about 25% at 4,096 tables
        for i in range(start, stop):
            t = i if rows is None else rows[i]
            leak_rows(out[t], t, o_first, o_burn, o_bottom, hand_after_cut, shoe, factors)


@numba.njit(cache=True, nogil=True, inline="always")
def leak_rows(row, t, o_first, o_burn, o_bottom, hand_after_cut, shoe, factors):
    """The ``leak`` features of table ``t`` before its next hand (:attr:`EnvConfig.leaks`), zeros where
    the next hand comes from a shoe not yet shuffled (the cut card is out), scaled by ``factors``."""
    shoe_cards, position, counts, unseen = shoe.shoe, shoe.position, shoe.counts, shoe.unseen
    pos = position[t]
    visible = pos < shoe.cut_position or (hand_after_cut and shoe.cut_hands[t] == 0)
    if o_first >= 0:
        code = shoe_cards[t, min(pos, shoe_cards.shape[1] - 1)]
        high = visible and 6 <= code <= 9  # ranks 6, 7, 8, 9: values 6-9
        row[o_first] = 1.0 if high else 0.0
        row[o_first + 1] = 1.0 if visible and not high else 0.0
    if o_burn >= 0:
        for r in range(unseen.shape[1]):  # the burned face-down cards: unseen, but not in the shoe
            row[o_burn + r] = unseen[t, r] - counts[t, r] if visible else 0.0
    if o_bottom >= 0:
        bottom = shoe_cards[t, shoe_cards.shape[1] - 1] - 1
        for r in range(unseen.shape[1]):
            row[o_bottom + r] = 1.0 if visible and r == bottom else 0.0
    for o, width in ((o_first, 2), (o_burn, unseen.shape[1]), (o_bottom, unseen.shape[1])):
        if o >= 0:
            for k in range(o, o + width):
                row[k] *= factors[k]


def observe(
    cfg: EnvConfig,
    session: Session,
    seat: int = 0,
    per_unit: float = 1.0,
    out: np.ndarray | None = None,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """The flat observations ``(n, obs_size)`` float32 that seat ``seat`` of ``session`` has at every
    table now, as the environment configured by ``cfg`` shows them (the env's step writes its
    observations with the same row function). ``per_unit``: session amount per betting unit of
    ``cfg`` (1 when the session is in betting units, ``cfg.unit`` when it is in money). The session's
    bead plate must be at least ``cfg.history`` long (its first entries are shown). A NEW array unless
    ``out`` is given; ``rows`` (table indices): only those rows of ``out`` are written."""
    if not isinstance(session, Session):
        raise TypeError(f"session must be a pb_gym.session.Session, got {type(session).__name__}")
    if session.history < cfg.history:
        raise ValueError(
            f"the session keeps a bead plate of {session.history} hands but the config "
            f"shows {cfg.history}: make the session with history >= {cfg.history}"
        )
    if session.shoe.shoe.shape[1] != cfg.rules.n_cards:
        raise ValueError(
            f"the session deals {session.shoe.shoe.shape[1]}-card shoes but the config "
            f"{cfg.rules.n_cards}-card shoes"
        )
    if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not (0 <= seat < session.n_seats):
        raise bad("seat", seat, f"an integer in 0..{session.n_seats - 1}")
    if not is_number(per_unit) or per_unit <= 0:
        raise bad("per_unit", per_unit, "a positive number")
    n = session.n_tables
    if out is None:
        out = np.empty((n, cfg.obs_size), dtype=np.float32)
    elif type(out) is not np.ndarray or out.shape != (n, cfg.obs_size) or out.dtype != np.float32:
        raise ValueError(f"out must be a float32 array of shape ({n}, {cfg.obs_size})")
    seats, records, shoe, _ = session.structs()
    consts = obs_struct(cfg, int(seat), float(per_unit))
    if rows is None:
        run_rows(obs_rows, n, OBS_MIN_TABLES, consts, seats, records, shoe, out)
    else:
        rows = np.asarray(rows, dtype=np.int64)
        if rows.ndim != 1 or (rows.size and (rows.min() < 0 or rows.max() >= n)):
            raise ValueError(f"rows must be table indices in 0..{n - 1}")
        run_rows(obs_rows, rows.size, OBS_MIN_TABLES, consts, seats, records, shoe, out, rows)
    return out


def write_obs(cfg: EnvConfig, tables: Tables) -> np.ndarray:
    """The flat observations ``(n, obs_size)`` float32 of every table, in a NEW array (never reused),
    scaled by :attr:`EnvConfig.obs_factors` unless ``obs_scale="raw"`` (:func:`observe`)."""
    check_batch(cfg, tables)
    return observe(cfg, tables.session)


def split_obs(cfg: EnvConfig, flat: np.ndarray) -> dict[str, np.ndarray] | np.ndarray:
    """The observation in the configured form: ``flat`` itself (``observation="flat"``) or a dict of
    views of it (one per field; the last axis is the field)."""
    if cfg.flat:
        return flat
    return {k: flat[..., a:b] for k, (a, b) in cfg.obs_offsets.items()}


def ev_before_hand(
    cfg: EnvConfig, tables: Tables, rows: np.ndarray | None = None, columns: np.ndarray | None = None
) -> np.ndarray:
    """Exact EV per unit of every bet spot ``(n, 7)`` of the hand just dealt, given the cards the
    players had seen before it (the unseen counts plus the hand's own cards; after a reshuffle that is
    the new shoe, burn card turned) and what the config's leaks showed (:mod:`pb_gym.envs.leaks`).
    ``rows``: only these tables (``(len(rows), 7)``); ``columns`` (a boolean per column): only those
    priced, 0 in the others (:meth:`pb_gym.catalog.TableBets.expected_values`; with leaks, every
    column)."""
    if cfg.leaks:
        from pb_gym.envs import leaks

        leak = leaks.of_hand_dealt(cfg, tables.shoe, tables.result, rows)
        return leaks.expected_values(cfg, composition_before_hand(tables, rows), leak)
    if cfg.bets.suited:  # the suited bets are priced from the cards by rank and suit
        return cfg.bets.expected_values(suited_composition_before_hand(cfg, tables, rows), columns)
    return cfg.bets.expected_values(composition_before_hand(tables, rows), columns)


def log_growth_before_hand(cfg: EnvConfig, tables: Tables, rows: np.ndarray) -> np.ndarray:
    """Exact expected log growth ``(len(rows),)`` of the seat's bankroll over the hand just dealt at the
    tables ``rows``, for the stakes placed, given the cards unseen before it: ``sum_h P(h) log(1 +
    stakes . pay[h] / bankroll)`` over the hand classes ``h`` (the bankroll before the hand; a class
    that would leave less than :data:`LOG_GROWTH_FLOOR` x the table minimum counts as leaving that)."""
    from pb_gym import exact  # the env imports the exact odds only when it prices a hand

    session = tables.session
    seats = session.seats
    stakes = seats.stakes[0][rows]
    before = seats.bankroll[0][rows] - seats.net[0][rows]
    # (rows, hand classes): the net win of each hand class, row by row (the same bits in any batch)
    net = exact.row_products(stakes, session.payoffs.T)
    floor = LOG_GROWTH_FLOOR * cfg.min_units
    growth = np.log(np.maximum(before[:, None] + net, floor) / before[:, None])
    composition = composition_before_hand(tables, rows)
    if cfg.leaks:  # the burned or bottom card shown (the first card's class is refused with log growth)
        from pb_gym.envs import leaks

        composition = leaks.composition(
            leaks.of_hand_dealt(cfg, tables.shoe, tables.result, rows), composition
        )
    probabilities = exact.hand_class_probabilities(composition)
    return (probabilities * growth).sum(axis=1)


def composition_before_hand(tables: Tables, rows: np.ndarray | None = None) -> np.ndarray:
    """The cards ``(n, 13)`` the players had not seen before the hand just dealt (``rows``: only these
    tables): the unseen counts plus the hand's own cards."""
    res = tables.result
    select = np.arange(len(res.player_cards))  # (indices, whatever selects the rows: a mask too)
    if rows is not None:
        select = select[rows]
    out = np.empty((len(select), R.N_RANKS), dtype=np.int64)
    _composition_rows(tables.shoe.unseen, res.player_cards, res.banker_cards, select, out)
    return out


@numba.njit(cache=True, nogil=True)
def _composition_rows(unseen, player_cards, banker_cards, rows, out):
    """:func:`composition_before_hand` of the tables ``rows`` into ``out``: a single env asks for one
    table each step, and numpy's calls over a row cost more than the row."""
    for i in range(rows.shape[0]):
        t = rows[i]
        for r in range(out.shape[1]):
            out[i, r] = unseen[t, r]
        for c in range(player_cards.shape[1]):  # (code 0: no third card)
            if player_cards[t, c] > 0:
                out[i, player_cards[t, c] - 1] += 1
            if banker_cards[t, c] > 0:
                out[i, banker_cards[t, c] - 1] += 1


HAND_INFO_KEYS: tuple[str, ...] = (
    "player_cards",
    "banker_cards",
    "player_total",
    "banker_total",
    "winner",
    "natural",
    "player_pair",
    "banker_pair",
    "shuffled",
    "stakes",
    "bankroll",
)
"""The keys of the per-hand info (``hand_info=True``), in the order :func:`info_dict` takes their values:
the cards (1..13, 0 = no third card), the totals, the winner (:class:`pb_gym.rules.Outcome`), the
natural, pair and new-shoe flags, the stakes (units, BETS order) and the bankroll after the hand (units);
``ev`` follows with ``info_ev=True``."""


def info_dict(
    container: type[dict],
    player_cards: Any,
    banker_cards: Any,
    player_total: Any,
    banker_total: Any,
    winner: Any,
    natural: Any,
    player_pair: Any,
    banker_pair: Any,
    shuffled: Any,
    stakes: Any,
    bankroll: Any,
) -> dict[str, Any]:
    """THE per-hand info of the environments (the keys of :data:`HAND_INFO_KEYS`, in order) in a new
    ``container``; the caller adds ``ev`` (``info_ev=True``). The single env passes one table's
    values (Python scalars and read-only arrays), the vector env batched numpy arrays
    (:func:`hand_info`). (Keywords, not a zip of the keys: the single env's step builds one.)"""
    return container(
        player_cards=player_cards,
        banker_cards=banker_cards,
        player_total=player_total,
        banker_total=banker_total,
        winner=winner,
        natural=natural,
        player_pair=player_pair,
        banker_pair=banker_pair,
        shuffled=shuffled,
        stakes=stakes,
        bankroll=bankroll,
    )


def suited_composition_before_hand(
    cfg: EnvConfig, tables: Tables, rows: np.ndarray | None = None
) -> np.ndarray:
    """:func:`composition_before_hand` by rank and suit, ``(n, 13, 4)`` (a shoe that tracks suits: a
    table offering a suited bet): the unseen cards by rank and suit plus the hand's own cards."""
    from pb_gym import engine

    res = tables.result
    select = slice(None) if rows is None else rows
    comp = engine.unseen_by_suit(cfg.rules, tables.shoe)[select]
    cards = np.concatenate([res.player_cards[select], res.banker_cards[select]], axis=1).astype(np.intp)
    suits = np.concatenate([res.player_suits[select], res.banker_suits[select]], axis=1).astype(np.intp)
    for c in range(cards.shape[1]):
        code = cards[:, c]
        dealt = np.flatnonzero(code > 0)
        comp[dealt, code[dealt] - 1, suits[dealt, c]] += 1
    return comp


def hand_info(cfg: EnvConfig, tables: Tables) -> dict[str, np.ndarray]:
    """Batched info of the hand just played (:func:`info_dict`, new numpy arrays with the engine's
    dtypes, one row per table) and, with ``info_ev``, the exact EV per unit of each bet before the
    hand."""
    info: dict[str, np.ndarray] = {}
    if cfg.hand_info:
        res = tables.result
        info = info_dict(
            dict,
            res.player_cards.copy(),
            res.banker_cards.copy(),
            res.player_total.copy(),
            res.banker_total.copy(),
            res.winner.copy(),
            res.natural.copy(),
            res.player_pair.copy(),
            res.banker_pair.copy(),
            res.shuffled.copy(),
            tables.stakes.copy(),
            tables.bankroll.copy(),
        )
        if cfg.bets.suited:  # the cards' suits settle the suited bets
            info["player_suits"] = res.player_suits.copy()
            info["banker_suits"] = res.banker_suits.copy()
    if cfg.info_ev:
        info["ev"] = ev_before_hand(cfg, tables)
    return info


def exact_reward(cfg: EnvConfig, tables: Tables, rows: np.ndarray) -> np.ndarray:
    """The ``"expected"`` or ``"log_growth"`` reward ``(len(rows),)`` of the hand just played at the
    tables ``rows`` (where a stake was placed), from the cards unseen before it."""
    stakes = tables.session.seats.stakes[0][rows]
    if cfg.reward == "expected":  # (the EVs of the columns staked: a zero stake adds nothing)
        staked = np.any(stakes != 0.0, axis=0)
        return np.einsum("ij,ij->i", stakes, ev_before_hand(cfg, tables, rows, staked))
    return log_growth_before_hand(cfg, tables, rows)
