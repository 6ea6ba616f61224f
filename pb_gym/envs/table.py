"""The environments' side of the table session: configs, spaces, actions and observations.

The game itself -- the stake rules, the deal, settlement, the bead plate, the episode ends -- is the
table session's (:mod:`pb_gym.session`); the single environment (:mod:`pb_gym.envs.punto_banco`) and
the native vector environment (:mod:`pb_gym.envs.vector`) are shells around a one-seat session of 1
or N tables. This module holds what only an environment needs, written once over batches of tables
(row ``t`` of every array is table ``t``):

* :func:`make_config` validates the keyword arguments of both environments into an :class:`EnvConfig`
  (rules, money, limits, episode ends, action and observation options); :func:`limits` turns it into
  the session's :class:`~pb_gym.session.Limits` (in betting units).
* :func:`observation_space` / :func:`action_space`: the spaces of ONE table.
* :class:`Tables`: the env's view of its session table by table (:func:`new_tables`,
  :func:`reset_tables`).
* Actions -> requested stakes (:func:`requested_stakes`: step 1 of the stake rules below; the session
  applies steps 2-4); :func:`play_hand` decodes, plays one hand of the session at every table and
  writes the observations (three compiled calls for a batch); the single env's step is ONE compiled
  call (:func:`step_one` over a :class:`StepState` that holds its arguments).
* :func:`observe`: THE observation of a seat of a session, as an env configured by an
  :class:`EnvConfig` shows it (the envs' steps write theirs with the same code; ``pb-gym evaluate``
  reads a learned policy's with it); :func:`hand_info` the batched infos; :func:`action_masks` the
  masks for MaskablePPO.

Units. Money amounts given to the environment (``bankroll``, ``table_min``, ``table_max``,
``win_target``) are in money; ``unit`` is the betting unit in money. Inside, and in everything the
environment returns (observation, reward, stakes in ``info``), amounts are in **betting units**
(money / ``unit``).

Stake rules (:func:`pb_gym.session.place_rows`; applied to every table every hand, in this order):

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

import dataclasses
import functools
import math
import sys
from collections.abc import Sequence
from typing import Any, cast

import numba
import numpy as np
from gymnasium import spaces
from numba.core import types
from numba.experimental import structref

from pb_gym import catalog, engine, progress
from pb_gym import rules as R
from pb_gym.rules import Rules
from pb_gym.session import (
    LAST_HAND_FIELDS,
    MAX_CARDS,
    PLAY_MIN_TABLES,
    Limits,
    Seats,
    Session,
    deal_constants,
    place_rows,
    play_rows,
    restart_rows,
    seat_struct,
)
from pb_gym.threads import parallel_for, run_rows

ACTION_MODES: tuple[str, ...] = ("discrete", "multidiscrete", "box")
"""``action_mode`` options, the default first (``discrete`` works with every SB3 / RL Zoo algorithm)."""
OBSERVATIONS: tuple[str, ...] = ("flat", "dict")
"""``observation`` options, the default first: one float32 ``Box`` (``MlpPolicy``) or a ``Dict``."""
OBS_SCALES: tuple[str, ...] = ("scaled", "raw")
"""``obs_scale`` options, the default first: every feature divided by a documented bound (about
[0, 1]), or the raw units (cards, betting units, hands)."""
HANDS_SCALE = 100
"""Hands that scale the episode-hands feature when the env has no ``max_hands`` of its own (the limit
is then Gymnasium's ``TimeLimit``; 100 is the registered ``max_episode_steps``)."""
STAKE_UNITS: tuple[str, ...] = ("units", "fraction")
REWARDS: tuple[str, ...] = ("realized", "expected", "log_growth")
"""``reward`` options: the dealt net win of the hand; the exact EV of the stakes placed given the
cards unseen before the hand; or the exact expected log growth of the bankroll over the hand (Kelly's
objective) given the same cards (see :func:`play_hand`)."""
LOG_GROWTH_FLOOR = 0.5
"""With ``reward="log_growth"``, a hand class that would leave less than half the table minimum (an
all-in bet lost: nothing at all) counts as leaving half of it, so the reward stays finite: ruin costs
``log(table_min / 2 / bankroll)``, far below any hand a sane stake can lose."""
DEFAULT_STAKE_LEVELS: dict[str, tuple[float, ...]] = {
    "units": (1.0, 2.0, 5.0, 10.0, 25.0),
    "fraction": (0.01, 0.02, 0.05, 0.1, 0.25),
}
RULE_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Rules))

_LAST_HAND_HIGH = np.array([1, 1, 1, 9, 9, 3, 3, 1, 1, 1], dtype=np.float32)

OBS_KEYS: tuple[str, ...] = ("bankroll", "bead_plate", "cards_left", "hands", "last_hand", "shoe")
"""Observation keys in the (sorted) order of the Dict space and of the flattened observation."""

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
"""Keys of the per-hand ``info`` (``hand_info=True``); ``ev`` is added with ``info_ev=True``."""

_F32_MAX = float(np.finfo(np.float32).max)
_BOOL_ARGS = ("one_shoe", "visible_discards", "allow_no_bet", "info_ev", "hand_info")


def _bad(name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"{name}={value!r} is not allowed; allowed: {allowed}")


def _number(value: object) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(float(value))
    )


def _int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """Validated settings of a table (see :func:`make_config` for the meaning of each field)."""

    rules: Rules
    bankroll: float
    unit: float
    table_min: float
    table_max: float
    win_target: float | None
    max_hands: int | None
    one_shoe: bool
    visible_discards: bool
    history: int
    action_mode: str
    stake_levels: tuple[float, ...]
    stake_unit: str
    allow_no_bet: bool
    observation: str
    obs_scale: str
    info_ev: bool
    hand_info: bool
    reward: str = "realized"
    extra_bets: tuple[catalog.Bet, ...] = ()

    @functools.cached_property
    def bets(self) -> catalog.TableBets:
        """The table's bet columns (:class:`pb_gym.catalog.TableBets`): the seven
        :data:`~pb_gym.rules.BETS` spots, then the extra catalog or user bets."""
        return catalog.TableBets(self.rules, self.extra_bets)

    @property
    def n_columns(self) -> int:
        """Stake columns: 7 + the extra bets (stakes in ``info``, ``ev``, the session's payoffs)."""
        return R.N_BETS + len(self.extra_bets)

    # ---- derived figures, in betting units ------------------------------------------------------
    @property
    def bankroll_units(self) -> float:
        return self.bankroll / self.unit

    @property
    def min_units(self) -> float:
        return self.table_min / self.unit

    @property
    def max_units(self) -> float:
        return self.table_max / self.unit

    @property
    def target_units(self) -> float:
        """Win target in units (0 = none)."""
        return 0.0 if self.win_target is None else self.win_target / self.unit

    @functools.cached_property
    def bet_choices(self) -> tuple[str, ...]:
        """Names of the bet choices of the discrete modes: ``no_bet`` (if allowed), banker, player, tie
        and each offered side bet in :data:`pb_gym.rules.BETS` order, then the extra bets."""
        return (("no_bet",) if self.allow_no_bet else ()) + self.bets.offered

    @functools.cached_property
    def choice_spot(self) -> np.ndarray:
        """Column in :data:`~pb_gym.rules.BETS` of each bet choice (-1 = no bet)."""
        columns = self.bets.columns
        return _read_only(
            np.array([-1 if c == "no_bet" else columns.index(c) for c in self.bet_choices], dtype=np.int64)
        )

    @functools.cached_property
    def box_spots(self) -> np.ndarray:
        """Column in :data:`~pb_gym.rules.BETS` of each entry of a ``box`` action (the offered spots)."""
        columns = self.bets.columns
        return _read_only(np.array([columns.index(b) for b in self.bets.offered], dtype=np.int64))

    @functools.cached_property
    def n_actions(self) -> int:
        """Size of the ``discrete`` action space: 1 (no bet, if allowed) + bets x stake levels."""
        n_bets = len(self.bets.offered)
        return int(self.allow_no_bet) + n_bets * len(self.stake_levels)

    @functools.cached_property
    def obs_keys(self) -> tuple[str, ...]:
        return tuple(k for k in OBS_KEYS if k != "shoe" or self.visible_discards)

    @functools.cached_property
    def obs_sizes(self) -> dict[str, int]:
        sizes = {
            "bankroll": 1,
            "bead_plate": self.history,
            "cards_left": 1,
            "hands": 2,
            "last_hand": len(LAST_HAND_FIELDS),
            "shoe": R.N_RANKS,
        }
        return {k: sizes[k] for k in self.obs_keys}

    @functools.cached_property
    def obs_offsets(self) -> dict[str, tuple[int, int]]:
        """``key -> (start, stop)`` of each observation field in the flat observation."""
        out, start = {}, 0
        for key, size in self.obs_sizes.items():
            out[key] = (start, start + size)
            start += size
        return out

    @functools.cached_property
    def obs_size(self) -> int:
        return sum(self.obs_sizes.values())

    @property
    def flatten_obs(self) -> bool:
        """True when the observation is one flat ``Box`` (``observation="flat"``)."""
        return self.observation == "flat"

    @functools.cached_property
    def obs_factors(self) -> np.ndarray | None:
        """What :func:`write_obs` multiplies the raw flat observation by (``obs_scale="scaled"``), one
        float32 per entry; None for ``"raw"``. Each field is divided by its bound (see
        :func:`observation_space`): bankroll by the starting bankroll, the bead plate by 3, cards left
        by the cards of a full shoe, episode hands by ``max_hands`` (or :data:`HANDS_SCALE`), hands of
        this shoe by the most a shoe can deal (``n_cards / 4``: a hand takes at least 4 cards), the last
        hand by its maxima (totals 9, cards 3), the unseen counts of each rank by ``4 x decks``."""
        if self.obs_scale == "raw":
            return None
        n_cards = float(self.rules.n_cards)
        bound = {
            "bankroll": [self.bankroll_units],
            "bead_plate": [3.0] * self.history,
            "cards_left": [n_cards],
            "hands": [float(self.max_hands or HANDS_SCALE), n_cards / 4.0],
            "last_hand": list(_LAST_HAND_HIGH),
            "shoe": [float(R.CARDS_PER_RANK_PER_DECK * self.rules.decks)] * R.N_RANKS,
        }
        return (1.0 / np.concatenate([np.asarray(bound[k], dtype=np.float64) for k in self.obs_keys])).astype(
            np.float32
        )


def make_config(**kwargs: Any) -> EnvConfig:  # noqa: C901
    """Validate the environment keyword arguments; a bad name or value raises a ``ValueError`` naming it.

    Rules (either ``rules=Rules(...)`` or any of its fields, not both): ``decks``, ``banker_variant``,
    ``commission``, ``tie_pays``, ``side_bets``, ``pair_pays``, ``dragon7_pays``, ``panda8_pays``,
    ``burn``, ``cut_card``, ``hand_after_cut`` (see :class:`pb_gym.Rules`).

    Table: ``bankroll`` (starting bankroll, money, default 1000), ``unit`` (betting unit, money, 10),
    ``table_min`` (10), ``table_max`` (5000), ``win_target`` (money; the episode ends when the bankroll
    reaches it; None), ``max_hands`` (hands per episode, truncation; 100, None = no limit of the
    env's own; ``gymnasium.make`` passes None and Gymnasium's ``TimeLimit`` ends episodes), ``one_shoe``
    (an episode is one shoe: truncated when the cut card has come out; False = episodes run across
    reshuffles), ``visible_discards`` (observe the 13 unseen counts; True).

    Agent interface: ``action_mode`` (``discrete``, the default; ``multidiscrete``; ``box``), ``stake_levels``
    (increasing positive numbers; default 1, 2, 5, 10, 25 units or 1, 2, 5, 10, 25% of the bankroll),
    ``stake_unit`` (``units`` or ``fraction`` of the current bankroll), ``allow_no_bet`` (True),
    ``history`` (bead plate length, 20), ``observation`` (``flat``: one Box, the default; ``dict``: a
    Dict of Boxes), ``obs_scale`` (``scaled``: every feature divided by a documented bound, the
    default; ``raw``: cards, units, hands), ``flatten_obs`` (older name: True = ``observation="flat"``,
    False = ``"dict"``), ``info_ev``
    (exact EV of each bet in ``info``; False), ``hand_info`` (cards, totals, winner, stakes in ``info``),
    ``reward`` (``realized``: the hand's net win, the default; ``expected``: the exact EV of the stakes
    placed given the cards unseen before the hand, an unbiased, noise-free estimate of the realized
    reward given what the agent knew; ``log_growth``: the exact expected log growth of the bankroll over
    the hand, ``sum_h P(h) log(1 + net_h / bankroll)`` over the hand classes, Kelly's objective; the
    bankroll still moves by the realized win).
    """
    progress.note_compiling(sys.modules[__name__])  # the first run on a machine compiles the kernels
    defaults: dict[str, Any] = dict(
        rules=None,
        bankroll=1000.0,
        unit=10.0,
        table_min=10.0,
        table_max=5000.0,
        win_target=None,
        max_hands=100,
        one_shoe=False,
        visible_discards=True,
        history=20,
        action_mode="discrete",
        stake_levels=None,
        stake_unit="units",
        allow_no_bet=True,
        observation="flat",
        obs_scale="scaled",
        flatten_obs=None,
        info_ev=False,
        hand_info=True,
        reward="realized",
        extra_bets=(),
        custom_bets=(),
    )
    unknown = [k for k in kwargs if k not in defaults and k not in RULE_FIELDS]
    if unknown:
        raise ValueError(
            f"unknown keyword argument {unknown[0]!r}; allowed: "
            f"{', '.join(list(defaults) + list(RULE_FIELDS))}"
        )
    rule_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in RULE_FIELDS}
    a = {**defaults, **kwargs}
    # side_bets may name any catalog bet or a user bet: the rules' own four go to Rules.side_bets,
    # the others are the table's extra columns (pb_gym.catalog.TableBets; Rules knows no catalog)
    custom = a["custom_bets"]
    if isinstance(custom, (dict, catalog.Bet)) or not isinstance(custom, (list, tuple)):
        raise _bad(
            "custom_bets",
            custom,
            "a list of bets of your own (pb_gym.catalog.Bet or {name, rows: [{when, pays}]} definitions)",
        )
    extra: tuple[catalog.Bet, ...] = ()
    if isinstance(rule_kwargs.get("side_bets"), str):
        rule_kwargs["side_bets"] = (rule_kwargs["side_bets"],)
    if isinstance(rule_kwargs.get("side_bets"), (tuple, list)):
        own, extra = catalog.split_side_bets(rule_kwargs["side_bets"], custom)
        rule_kwargs["side_bets"] = own
    more = a["extra_bets"]
    if more:
        if isinstance(more, (str, dict, catalog.Bet)) or not isinstance(more, (list, tuple)):
            more = (more,)
        own, more_bets = catalog.split_side_bets(tuple(more), custom)
        if own:
            raise _bad(
                "extra_bets",
                a["extra_bets"],
                "catalog or user bets other than the rules' own "
                f"side bets ({', '.join(own)}: give them in Rules(side_bets=...))",
            )
        extra = extra + more_bets
    names = [bet.name for bet in extra]
    if len(set(names)) != len(names):
        raise _bad("extra_bets", a["extra_bets"], "each bet at most once (side_bets and extra_bets together)")
    # every definition is checked, offered or not; one the table does not offer is a mistake (it would
    # silently be no bet at all)
    unused = [name for name in catalog.user_bets(custom) if name not in names]
    if unused:
        raise ValueError(
            f"custom_bets: {unused[0]!r} is defined but not offered; offer it by naming it "
            "in side_bets (or extra_bets), or remove its definition"
        )
    rules = a["rules"]
    if rules is not None:
        if not isinstance(rules, Rules):
            raise _bad("rules", rules, "a pb_gym.Rules or None")
        if rule_kwargs:
            raise ValueError(
                f"pass either rules=Rules(...) or rule fields such as {next(iter(rule_kwargs))}=..., not both"
            )
    else:
        rules = Rules(**rule_kwargs)  # raises ValueError("Rules.<field>=... is not allowed; ...")

    for name in _BOOL_ARGS:
        if not isinstance(a[name], (bool, np.bool_)):
            raise _bad(name, a[name], "True or False")
    for name in ("bankroll", "unit", "table_min", "table_max"):
        if not _number(a[name]) or a[name] <= 0:
            raise _bad(name, a[name], "a positive number (money)")
    bankroll, unit, tmin, tmax = (float(a[k]) for k in ("bankroll", "unit", "table_min", "table_max"))
    if tmax < tmin:
        raise _bad("table_max", a["table_max"], f"a number >= table_min ({tmin:g})")
    if bankroll < tmin:
        raise _bad(
            "bankroll",
            a["bankroll"],
            f"a number >= table_min ({tmin:g}), or the player is ruined before the first hand",
        )
    target = a["win_target"]
    if target is not None:
        if not _number(target) or target <= bankroll:
            raise _bad("win_target", target, f"None or a number > bankroll ({bankroll:g})")
        target = float(target)
    max_hands = a["max_hands"]
    if max_hands is not None and (not _int(max_hands) or max_hands < 1):
        raise _bad("max_hands", max_hands, "None or an integer >= 1")
    if not _int(a["history"]) or not 1 <= a["history"] <= 1000:
        raise _bad("history", a["history"], "an integer from 1 to 1000")
    if a["action_mode"] not in ACTION_MODES:
        raise _bad("action_mode", a["action_mode"], ", ".join(ACTION_MODES))
    if a["observation"] not in OBSERVATIONS:
        raise _bad("observation", a["observation"], ", ".join(OBSERVATIONS))
    if a["obs_scale"] not in OBS_SCALES:
        raise _bad("obs_scale", a["obs_scale"], ", ".join(OBS_SCALES))
    observation = a["observation"]
    if a["flatten_obs"] is not None:  # the older name of observation= (True: flat, False: dict)
        if not isinstance(a["flatten_obs"], (bool, np.bool_)):
            raise _bad("flatten_obs", a["flatten_obs"], "None, True or False")
        observation = "flat" if a["flatten_obs"] else "dict"
        if "observation" in kwargs and kwargs["observation"] != observation:
            raise ValueError(
                f"flatten_obs={a['flatten_obs']!r} contradicts observation="
                f"{kwargs['observation']!r}; pass observation= only"
            )
    if a["reward"] not in REWARDS:
        raise _bad("reward", a["reward"], ", ".join(REWARDS))
    if a["stake_unit"] not in STAKE_UNITS:
        raise _bad("stake_unit", a["stake_unit"], ", ".join(STAKE_UNITS))
    levels = a["stake_levels"]
    if levels is None:
        levels = DEFAULT_STAKE_LEVELS[a["stake_unit"]]
    allowed_levels = (
        "increasing positive numbers of units"
        if a["stake_unit"] == "units"
        else "increasing fractions of the bankroll in (0, 1]"
    )
    if isinstance(levels, (int, float, np.number)):
        levels = (levels,)
    if (
        not isinstance(levels, (list, tuple, np.ndarray))
        or len(levels) == 0
        or not all(_number(x) and x > 0 for x in levels)
    ):
        raise _bad("stake_levels", a["stake_levels"], allowed_levels)
    levels = tuple(float(x) for x in levels)
    if any(b <= x for x, b in zip(levels, levels[1:], strict=False)) or (
        a["stake_unit"] == "fraction" and levels[-1] > 1.0
    ):
        raise _bad("stake_levels", a["stake_levels"], allowed_levels)
    return EnvConfig(
        rules=rules,
        bankroll=bankroll,
        unit=unit,
        table_min=tmin,
        table_max=tmax,
        win_target=target,
        max_hands=None if max_hands is None else int(max_hands),
        one_shoe=bool(a["one_shoe"]),
        visible_discards=bool(a["visible_discards"]),
        history=int(a["history"]),
        action_mode=a["action_mode"],
        stake_levels=levels,
        stake_unit=a["stake_unit"],
        allow_no_bet=bool(a["allow_no_bet"]),
        observation=observation,
        obs_scale=a["obs_scale"],
        info_ev=bool(a["info_ev"]),
        hand_info=bool(a["hand_info"]),
        reward=a["reward"],
        extra_bets=extra,
    )


# --------------------------------------------------------------------------------------------------
# Spaces (of one table)
# --------------------------------------------------------------------------------------------------
def _field_bounds(cfg: EnvConfig, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Raw-unit bounds of one field (the bankroll, and the episode hands without ``max_hands``, have
    none: float32's maximum)."""
    size = cfg.obs_sizes[key]
    high = {
        "bankroll": np.full(1, _F32_MAX),
        "bead_plate": np.full(size, 3.0),
        "cards_left": np.full(1, float(cfg.rules.n_cards)),
        "hands": np.array(
            [_F32_MAX if cfg.max_hands is None else float(cfg.max_hands), cfg.rules.n_cards / 4.0]
        ),
        "last_hand": _LAST_HAND_HIGH,
        "shoe": np.full(R.N_RANKS, float(R.CARDS_PER_RANK_PER_DECK * cfg.rules.decks)),
    }[key]
    return np.zeros(size, dtype=np.float32), high.astype(np.float32)


def observation_space(cfg: EnvConfig) -> spaces.Dict | spaces.Box:
    """The observation space of one table: one float32 Box (``observation="flat"``, fields in
    :data:`OBS_KEYS` order at ``cfg.obs_offsets``) or a Dict of float32 Boxes. With ``obs_scale=
    "scaled"`` the bounds are the raw ones times :attr:`EnvConfig.obs_factors` (every bounded
    feature in [0, 1]; the unbounded ones keep float32's maximum)."""
    bounds = {k: _field_bounds(cfg, k) for k in cfg.obs_keys}
    factors = cfg.obs_factors
    if factors is not None:
        scaled = {}
        for key, (lo, hi) in bounds.items():
            a, b = cfg.obs_offsets[key]
            scaled[key] = (lo, np.where(hi >= _F32_MAX, _F32_MAX, hi * factors[a:b]).astype(np.float32))
        bounds = scaled
    if cfg.flatten_obs:
        low = np.concatenate([b[0] for b in bounds.values()])
        high = np.concatenate([b[1] for b in bounds.values()])
        return spaces.Box(low, high, dtype=np.float32)
    return spaces.Dict({k: spaces.Box(lo, hi, dtype=np.float32) for k, (lo, hi) in bounds.items()})


def action_space(cfg: EnvConfig) -> spaces.Space:
    """The action space of one table (see :data:`ACTION_MODES`)."""
    if cfg.action_mode == "multidiscrete":
        return spaces.MultiDiscrete([len(cfg.bet_choices), len(cfg.stake_levels)])
    if cfg.action_mode == "discrete":
        return spaces.Discrete(cfg.n_actions)
    return spaces.Box(0.0, 1.0, shape=(len(cfg.bets.offered),), dtype=np.float32)


# --------------------------------------------------------------------------------------------------
# State of N tables: a one-seat session
# --------------------------------------------------------------------------------------------------
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
    checking their dtype and shape."""

    session: Session

    def __init__(self, session: Session) -> None:
        object.__setattr__(self, "session", session)

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


def _check_batch(cfg: EnvConfig, tables: Tables, active: np.ndarray | None = None) -> None:
    """Before a kernel: ``tables`` were made for ``cfg`` (bead plate length, shoe size) and ``active``
    is one flag per table. Cheap (a few comparisons); the arrays themselves are checked by
    :class:`Tables` when set."""
    if not isinstance(tables, Tables):
        raise TypeError(
            f"tables must be a pb_gym.envs.table.Tables (new_tables), got {type(tables).__name__}"
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
    return Tables(
        Session(
            cfg.rules,
            limits(cfg, max_hands),
            n,
            1,
            seed=seed,
            history=cfg.history,
            sticky_ends=False,
            payoffs=_extra_payoffs(cfg),
        )
    )


def _extra_payoffs(cfg: EnvConfig) -> np.ndarray | None:
    """The session's payoff matrix: None (the rules' own, 7 columns) without extra bets, else the
    table's columns from the catalog (:meth:`pb_gym.catalog.TableBets.pay_matrix`)."""
    return cfg.bets.pay_matrix() if cfg.extra_bets else None


def reset_tables(
    cfg: EnvConfig,
    tables: Tables,
    index: np.ndarray | None = None,
    seeds: Sequence[int] | np.ndarray | None = None,
) -> None:
    """Start new episodes at the tables ``index`` (all if None): a fresh shoe (seeded with one int per
    table if ``seeds`` is given, else continuing each table's random stream) and the starting bankroll."""
    _check_batch(cfg, tables)
    tables.session.reset(index, seeds)


# --------------------------------------------------------------------------------------------------
# Actions -> requested stakes (the session applies the stake rules)
# --------------------------------------------------------------------------------------------------
DISCRETE, MULTIDISCRETE, BOX = range(len(ACTION_MODES))


@functools.lru_cache(maxsize=64)
def decode_struct(cfg: EnvConfig) -> tuple:
    """The action decoding of a config as the kernels read it: ``(mode, no_bet_first, choice_spot,
    stake_levels, fraction, box_spots, table_max)`` (mode: :data:`DISCRETE`, ...)."""
    return (
        ACTION_MODES.index(cfg.action_mode),
        cfg.allow_no_bet,
        cfg.choice_spot,
        _read_only(np.asarray(cfg.stake_levels, dtype=np.float64)),
        cfg.stake_unit == "fraction",
        cfg.box_spots,
        cfg.max_units,
    )


@numba.njit(cache=True, nogil=True)
def _decode_rows(start, stop, action_ints, action_floats, dec, bankroll, requested, chosen, active):  # noqa: C901
    """Step 1 of the stake rules for every active table ``start..stop-1`` (seat 0): the requested
    stake of each bet column and the chosen column. Returns the first table whose action is out of
    range (the tables after it are not decoded), or -1."""
    mode, no_bet_first, choice_spot, levels, fraction, box_spots, table_max = dec
    n_bets = requested.shape[2]
    if mode == BOX:
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
        return -1
    n_levels = levels.shape[0]
    n_choices = choice_spot.shape[0]
    n_actions = (n_choices - 1) * n_levels + 1 if no_bet_first else n_choices * n_levels
    for t in range(start, stop):
        if not active[t]:
            continue
        if mode == DISCRETE:
            a = action_ints[t, 0]
            if a < 0 or a >= n_actions:
                return t
            if no_bet_first:
                choice = 0 if a == 0 else 1 + (a - 1) // n_levels
                level = 0 if a == 0 else (a - 1) % n_levels
            else:
                choice = a // n_levels
                level = a % n_levels
        else:
            choice = action_ints[t, 0]
            level = action_ints[t, 1]
            if choice < 0 or choice >= n_choices or level < 0 or level >= n_levels:
                return t
        # one column: the other columns of the row are left as they are, unread by the stake rules
        # given single=True (pb_gym.session.place_rows); requested_stakes starts from zeros
        spot = choice_spot[choice]
        chosen[0, t] = spot
        if spot >= 0:
            requested[0, t, spot] = levels[level] * bankroll[0, t] if fraction else levels[level]
    return -1


@numba.njit(cache=True, nogil=True)
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
        bad = _decode_rows(start, stop, action_ints, action_floats, dec, seats[0], requested, chosen, deal)
        if bad >= 0:
            return 1, bad, 0
    table, problem = play_rows(
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
        _obs_rows(start, stop, obs_consts, seats, records, shoe, obs)
    return 0, -1, 0


@structref.register
class _StepStateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class StepState(structref.StructRefProxy):
    """The arguments of one env step (:func:`_step_rows`) held by ONE compiled object: a step then
    passes two objects to the compiled code (this and the observation buffer) instead of some fifty
    arrays, whose unboxing would cost a single env more than its hand (issue #11). Built by
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
def _new_step_state(
    ints,
    floats,
    dec,
    active,
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
):
    return StepState(
        ints,
        floats,
        dec,
        active,
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
    )


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


@numba.njit(cache=True, nogil=True)
def _step_all(state, obs):
    """:func:`_step_rows` over all the tables of a :class:`StepState`, actions decoded first: one
    compiled call for the whole step of a batch small enough for one thread."""
    return _step_rows(
        0,
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
    bankroll, stakes, net = state.seats[0], state.seats[3], state.seats[4]
    terminated, truncated = state.seats[8], state.seats[9]
    hand = state.hand
    player_cards, banker_cards = hand.player_cards, hand.banker_cards
    player_total, banker_total, winner = hand.player_total, hand.banker_total, hand.winner
    natural, shuffled = hand.natural, hand.shuffled
    player_pair, banker_pair = hand.player_pair, hand.banker_pair
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
    cfg: EnvConfig, tables: Tables, ints: np.ndarray, floats: np.ndarray, active: np.ndarray
) -> StepState:
    """The :class:`StepState` of ``tables`` stepped with the action buffers ``ints`` / ``floats`` (see
    :func:`action_array`; the caller writes each step's actions into them) where ``active``."""
    session = tables.session
    requested, chosen = _scratch(session)
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
        _limits_struct(cfg, cfg.max_hands),
        obs_struct(cfg),
    )


@numba.njit(cache=True, nogil=True)
def _decode_state(state):
    """:func:`_decode_rows` over all the tables of a :class:`StepState`."""
    return _decode_rows(
        0,
        state.active.shape[0],
        state.ints,
        state.floats,
        state.dec,
        state.seats[0],
        state.requested,
        state.chosen,
        state.active,
    )


@numba.njit(cache=True, nogil=True)
def _play_state(start, stop, state):
    """:func:`pb_gym.session.play_rows` at the tables ``start..stop-1`` of a :class:`StepState`."""
    return play_rows(
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
    """:func:`_obs_rows` at the tables ``start..stop-1`` of a :class:`StepState`."""
    _obs_rows(start, stop, state.obs_consts, state.seats, state.records, state.shoe, obs)


def batch_state(
    cfg: EnvConfig,
    tables: Tables,
    ints: np.ndarray,
    floats: np.ndarray,
    active: np.ndarray,
    max_hands: int | None = None,
) -> StepState:
    """The :class:`StepState` of a batch of ``tables`` for :func:`play_state` (as :func:`step_state`,
    ``max_hands`` overriding ``cfg.max_hands``; ``ints`` / ``floats`` / ``active``: the caller's
    buffers, written before each step)."""
    session = tables.session
    requested, chosen = _scratch(session)
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
        _limits_struct(cfg, cfg.max_hands if max_hands is None else max_hands),
        obs_struct(cfg),
    )


def decode_state(cfg: EnvConfig, state: StepState, ints: np.ndarray) -> None:
    """Step 1 of :func:`play_state`: the actions in the buffers of ``state`` (checked layout, see
    :func:`action_array`) into requested stakes at its active tables; ValueError naming the first
    out-of-range action (nothing else is changed). Reads only the active tables' bankrolls."""
    bad = _decode_state(state)
    if bad >= 0:  # every action checked before any table is dealt
        raise _bad_action(cfg, ints, bad)


def play_state(
    cfg: EnvConfig, tables: Tables, state: StepState, active: np.ndarray, obs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`play_hand` over a :class:`StepState` (:func:`batch_state`) whose actions
    :func:`decode_state` has decoded: the same compiled passes and the same results, each pass handed
    one compiled object instead of some forty arrays (the batch's fixed cost per step)."""
    _check_batch(cfg, tables)
    engine.check_state(cfg.rules, tables.session.shoe, deals=False)
    n = tables.n
    found: list[tuple] = []

    def rows(start: int, stop: int) -> None:
        result = _play_state(start, stop, state)
        if result[0] >= 0:
            found.append(result)

    parallel_for(n, rows, STEP_MIN_TABLES)
    if found:
        engine.raise_table_problem(*min(found))
    run_rows(_obs_state, n, OBS_MIN_TABLES, state, obs)
    return _hand_outcome(cfg, tables, active)


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
    for t in range(n):
        engine.new_shoe(t, shoe, 0, burn)
        shoe.hands_in_shoe[t] = 0
        shoe.shoes_started[t] += 1
        shoe.cut_hands[t] = 0
    restart_rows(np.arange(n), bankroll0, state.seats, state.records)
    _obs_rows(0, n, state.obs_consts, state.seats, state.records, state.shoe, obs)
    return True


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


_NO_INTS = _read_only(np.zeros((0, 2), dtype=np.int64))
_NO_FLOATS = _read_only(np.zeros((0, 1), dtype=np.float64))
_NO_OBS = np.zeros((0, 1), dtype=np.float32)


def _bad_action(cfg: EnvConfig, ints: np.ndarray, t: int) -> ValueError:
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
    bad = _decode_rows(
        0, n, ints, floats, decode_struct(cfg), bankroll[None], requested, chosen, np.ones(n, dtype=np.bool_)
    )
    if bad >= 0:
        raise _bad_action(cfg, ints, bad)
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
    place_rows(
        0, n, active, requested[None], chosen[None], True, seat_struct(seats), _limits_struct(cfg, None)
    )
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


# --------------------------------------------------------------------------------------------------
# One hand at every table
# --------------------------------------------------------------------------------------------------
STEP_MIN_TABLES = PLAY_MIN_TABLES
"""Batches of at least this many tables are stepped on several threads (:mod:`pb_gym.threads`)."""
OBS_MIN_TABLES = 16384
"""The same for writing observations alone."""
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
    _check_batch(cfg, tables)
    engine.check_state(cfg.rules, tables.session.shoe, deals=False)
    result = _step_all(state, obs)
    if result[0]:
        _raise_step(cfg, ints, result)
    return _hand_outcome(cfg, tables, active)


@functools.lru_cache(maxsize=64)
def _limits_struct(cfg: EnvConfig, max_hands: int | None) -> tuple:
    return limits(cfg, max_hands).struct()


def record_hand(cfg: EnvConfig, tables: Tables, hand: engine.HandResult, shoe: engine.ShoeState) -> None:
    """Fold a hand dealt elsewhere into the tables' bead plates and last-hand records, exactly as a
    step would (bankrolls and hand counters are left alone): :meth:`pb_gym.session.Session.record`."""
    _check_batch(cfg, tables)
    engine.check_state(cfg.rules, shoe, deals=False)
    engine.check_result(hand, tables.n)
    if shoe.n_tables != tables.n:
        raise ValueError(f"shoe holds {shoe.n_tables} tables but the tables are {tables.n}")
    tables.session.record(hand)


def play_hand(
    cfg: EnvConfig,
    tables: Tables,
    actions: np.ndarray,
    active: np.ndarray,
    max_hands: int | None = None,
    obs: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode ``actions`` into requested stakes, play one hand of the session at every table where
    ``active`` (the stake rules, one deal, settlement, records, ends: :mod:`pb_gym.session`) and, given
    ``obs`` (``(n, obs_size)`` float32), write the observations after the hand into it. Returns fresh
    ``(reward, terminated, truncated)`` arrays
    (inactive tables: 0, False, False; no hand is dealt to them and their shoe is untouched).

    The reward is the hand's net win (``cfg.reward == "realized"``) or, with ``"expected"``, the sum
    over the spots of stake x exact EV per unit (:func:`ev_before_hand`: the cards unseen before the
    hand, burned cards included) -- the conditional expectation of the net win given the cards seen,
    so the optimal policy is the same and the outcome noise is gone. With ``"log_growth"`` it is the
    conditional expectation of ``log(bankroll after / bankroll before)`` given the same cards
    (:func:`log_growth_before_hand`), whose maximizer is the Kelly bettor. The bankroll, ruin and the
    win target always follow the realized net win.

    ``max_hands`` overrides ``cfg.max_hands`` (the vector env's ``max_episode_steps``)."""
    _check_batch(cfg, tables, active)
    session = tables.session
    n = tables.n
    ints, floats = action_array(cfg, actions, n)
    requested, chosen = _scratch(session)
    lim = _limits_struct(cfg, cfg.max_hands if max_hands is None else max_hands)
    if obs is None:
        obs = _NO_OBS
    elif type(obs) is not np.ndarray or obs.shape != (n, cfg.obs_size) or obs.dtype != np.float32:
        raise ValueError(f"obs must be a float32 array of shape ({n}, {cfg.obs_size})")
    engine.check_state(cfg.rules, session.shoe, deals=False)
    seats, records, shoe, hand = session.structs()
    # a batch: three compiled calls (decode, the session's hand, observations) -- as one call the
    # compiled code of the three passes ran 10-15% slower on 4,096 tables (the single env's step,
    # where the call itself is the cost, is one call: step_one)
    bad = _decode_rows(0, n, ints, floats, decode_struct(cfg), seats[0], requested, chosen, active)
    if bad >= 0:  # every action checked before any table is dealt
        raise _bad_action(cfg, ints, bad)
    deal_consts = deal_constants(cfg.rules)
    found: list[tuple] = []

    def rows(start: int, stop: int) -> None:
        result = play_rows(
            start,
            stop,
            active,
            requested,
            chosen,
            False,
            seats,
            records,
            shoe,
            deal_consts,
            hand,
            session.payoffs,
            lim,
            cfg.action_mode != "box",
        )
        if result[0] >= 0:
            found.append(result)

    parallel_for(n, rows, STEP_MIN_TABLES)
    if found:
        engine.raise_table_problem(*min(found))
    if obs.shape[0]:
        run_rows(_obs_rows, n, OBS_MIN_TABLES, obs_struct(cfg), seats, records, shoe, obs)
    return _hand_outcome(cfg, tables, active)


def _hand_outcome(
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


def exact_reward(cfg: EnvConfig, tables: Tables, rows: np.ndarray) -> np.ndarray:
    """The ``"expected"`` or ``"log_growth"`` reward ``(len(rows),)`` of the hand just played at the
    tables ``rows`` (where a stake was placed), from the cards unseen before it."""
    stakes = tables.session.seats.stakes[0][rows]
    if cfg.reward == "expected":
        return np.einsum("ij,ij->i", stakes, ev_before_hand(cfg, tables, rows))
    return log_growth_before_hand(cfg, tables, rows)


def _raise_step(cfg: EnvConfig, ints: np.ndarray, result: tuple) -> None:
    kind, table, code = result
    if kind == 1:
        raise _bad_action(cfg, ints, table)
    if kind == 2:
        engine.raise_table_problem(table, code)


def _scratch(session: Session) -> tuple[np.ndarray, np.ndarray]:
    """The session's buffers of requested stakes and chosen columns (made once)."""
    try:
        return session._env_scratch
    except AttributeError:
        session._env_scratch = (
            np.zeros((1, session.n_tables, session.n_bets)),
            np.full((1, session.n_tables), -1, dtype=np.int64),
        )
        return session._env_scratch


# --------------------------------------------------------------------------------------------------
# Observations and infos
# --------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def obs_struct(cfg: EnvConfig, seat: int = 0, per_unit: float = 1.0) -> tuple:
    """The observation layout of a config as the kernels read it: ``(offsets of bankroll, bead plate,
    cards left, hands, last hand, shoe (-1 = hidden), history, factors (float32; 1s = raw), seat,
    per_unit)``."""
    off = cfg.obs_offsets
    factors = cfg.obs_factors
    return (
        off["bankroll"][0],
        off["bead_plate"][0],
        off["cards_left"][0],
        off["hands"][0],
        off["last_hand"][0],
        off["shoe"][0] if "shoe" in off else -1,
        cfg.history,
        _read_only(np.ones(cfg.obs_size, np.float32) if factors is None else factors),
        int(seat),
        float(per_unit),
    )


@numba.njit(cache=True, nogil=True)
def _obs_rows(start, stop, consts, seats, records, shoe, out, rows=None):
    """The observations of one seat at the tables ``start..stop-1`` (or ``rows[start:stop]``) as the
    session state is now (after the last hand): the one observation function of the environments
    and of anything that plays a policy on a session (written out in the loop: a row function taking
    a dozen arrays would cost more per row than the row)."""
    o_bankroll, o_bead, o_cards, o_hands, o_last, o_shoe, history, factors, seat, per_unit = consts
    bankroll, hands = seats[0], seats[1]
    bead, last_hand = records[0], records[1]
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
        raise _bad("seat", seat, f"an integer in 0..{session.n_seats - 1}")
    if not _number(per_unit) or per_unit <= 0:
        raise _bad("per_unit", per_unit, "a positive number")
    n = session.n_tables
    if out is None:
        out = np.empty((n, cfg.obs_size), dtype=np.float32)
    elif type(out) is not np.ndarray or out.shape != (n, cfg.obs_size) or out.dtype != np.float32:
        raise ValueError(f"out must be a float32 array of shape ({n}, {cfg.obs_size})")
    seats, records, shoe, _ = session.structs()
    consts = obs_struct(cfg, int(seat), float(per_unit))
    if rows is None:
        run_rows(_obs_rows, n, OBS_MIN_TABLES, consts, seats, records, shoe, out)
    else:
        rows = np.asarray(rows, dtype=np.int64)
        if rows.ndim != 1 or (rows.size and (rows.min() < 0 or rows.max() >= n)):
            raise ValueError(f"rows must be table indices in 0..{n - 1}")
        run_rows(_obs_rows, rows.size, OBS_MIN_TABLES, consts, seats, records, shoe, out, rows)
    return out


def write_obs(cfg: EnvConfig, tables: Tables) -> np.ndarray:
    """The flat observations ``(n, obs_size)`` float32 of every table, in a NEW array (never reused),
    scaled by :attr:`EnvConfig.obs_factors` unless ``obs_scale="raw"`` (:func:`observe`)."""
    _check_batch(cfg, tables)
    return observe(cfg, tables.session)


def split_obs(cfg: EnvConfig, flat: np.ndarray) -> dict[str, np.ndarray] | np.ndarray:
    """The observation in the configured form: ``flat`` itself (``observation="flat"``) or a dict of
    views of it (one per field; the last axis is the field)."""
    if cfg.flatten_obs:
        return flat
    return {k: flat[..., a:b] for k, (a, b) in cfg.obs_offsets.items()}


def ev_before_hand(cfg: EnvConfig, tables: Tables, rows: np.ndarray | None = None) -> np.ndarray:
    """Exact EV per unit of every bet spot ``(n, 7)`` of the hand just dealt, given the cards the
    players had seen before it (the unseen counts plus the hand's own cards; after a reshuffle that is
    the new shoe, burn card turned). ``rows``: only these tables (``(len(rows), 7)``)."""
    return cfg.bets.expected_values(composition_before_hand(tables, rows))


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
    probabilities = exact.hand_class_probabilities(composition_before_hand(tables, rows))
    return (probabilities * growth).sum(axis=1)


def composition_before_hand(tables: Tables, rows: np.ndarray | None = None) -> np.ndarray:
    """The cards ``(n, 13)`` the players had not seen before the hand just dealt (``rows``: only these
    tables): the unseen counts plus the hand's own cards."""
    res = tables.result
    select = slice(None) if rows is None else rows
    cards = np.concatenate([res.player_cards[select], res.banker_cards[select]], axis=1).astype(np.intp)
    comp = tables.shoe.unseen[select].astype(np.int64)
    for c in range(cards.shape[1]):  # a row appears once per column: plain fancy-index adds suffice
        code = cards[:, c]
        rows = np.flatnonzero(code > 0)
        comp[rows, code[rows] - 1] += 1
    return comp


def hand_info(cfg: EnvConfig, tables: Tables) -> dict[str, np.ndarray]:
    """Batched info of the hand just played (new arrays): cards, totals, winner (0 banker, 1 player,
    2 tie), natural, pairs, shuffled, stakes (units, BETS order), bankroll after the hand (units) and,
    with ``info_ev``, the exact EV per unit of each bet before the hand."""
    info: dict[str, np.ndarray] = {}
    if cfg.hand_info:
        res = tables.result
        info = {
            "player_cards": res.player_cards.copy(),
            "banker_cards": res.banker_cards.copy(),
            "player_total": res.player_total.copy(),
            "banker_total": res.banker_total.copy(),
            "winner": res.winner.copy(),
            "natural": res.natural.copy(),
            "player_pair": res.player_pair.copy(),
            "banker_pair": res.banker_pair.copy(),
            "shuffled": res.shuffled.copy(),
            "stakes": tables.stakes.copy(),
            "bankroll": tables.bankroll.copy(),
        }
    if cfg.info_ev:
        info["ev"] = ev_before_hand(cfg, tables)
    return info
