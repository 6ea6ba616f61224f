"""Table logic shared by the single and the vector environment, written once over batches of tables.

Everything here works on *batches* of tables (row ``t`` of every array is table ``t``): the single
environment (:mod:`pb_gym.envs.punto_banco`) is a batch of one, the native vector environment
(:mod:`pb_gym.envs.vector`) a batch of N. The pieces:

* :func:`make_config` validates the keyword arguments of both environments into a :class:`EnvConfig`
  (rules, money, limits, episode ends, action and observation options).
* :func:`observation_space` / :func:`action_space`: the spaces of ONE table.
* :class:`Tables`: the state of N tables (the engine's :class:`~pb_gym.engine.ShoeState` plus the
  bankroll, counters, bead plate and last hand of each table), :func:`new_tables`, :func:`reset_tables`.
* :func:`decode_actions` turns actions into stakes per bet spot, applying the stake rules (below);
  :func:`play_hand` decodes, deals one hand at every table with ONE :func:`pb_gym.engine.deal` call,
  settles and updates the tables; :func:`write_obs` builds the observations, :func:`hand_info` the infos,
  :func:`action_masks` the masks for MaskablePPO.

Units. Money amounts given to the environment (``bankroll``, ``table_min``, ``table_max``,
``win_target``) are in money; ``unit`` is the betting unit in money. Inside, and in everything the
environment returns (observation, reward, stakes in ``info``), amounts are in **betting units**
(money / ``unit``).

Stake rules (applied to every table every hand, in this order):

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
from typing import Any, Sequence

import numba
import numpy as np
from gymnasium import spaces

from pb_gym import engine
from pb_gym import exact
from pb_gym import rules as R
from pb_gym.rules import BETS, Rules
from pb_gym.threads import run_rows

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
REWARDS: tuple[str, ...] = ("realized", "expected")
"""``reward`` options: the dealt net win of the hand, or the exact EV of the stakes placed given the
cards unseen before the hand (see :func:`play_hand`)."""
DEFAULT_STAKE_LEVELS: dict[str, tuple[float, ...]] = {
    "units": (1.0, 2.0, 5.0, 10.0, 25.0),
    "fraction": (0.01, 0.02, 0.05, 0.1, 0.25),
}
RULE_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Rules))

LAST_HAND_FIELDS: tuple[str, ...] = (
    "banker_won", "player_won", "tie", "player_total", "banker_total", "player_ncards",
    "banker_ncards", "natural", "player_pair", "banker_pair",
)
"""Entries of the ``last_hand`` observation (all 0 before the first hand of an episode)."""
_LAST_HAND_HIGH = np.array([1, 1, 1, 9, 9, 3, 3, 1, 1, 1], dtype=np.float32)

BEAD_CODES: tuple[str, ...] = ("", "B", "P", "T")
"""Bead plate codes: 0 = empty, 1 = banker win, 2 = player win, 3 = tie (``winner + 1``)."""

OBS_KEYS: tuple[str, ...] = ("bankroll", "bead_plate", "cards_left", "hands", "last_hand", "shoe")
"""Observation keys in the (sorted) order of the Dict space and of the flattened observation."""

HAND_INFO_KEYS: tuple[str, ...] = (
    "player_cards", "banker_cards", "player_total", "banker_total", "winner", "natural",
    "player_pair", "banker_pair", "shuffled", "stakes", "bankroll",
)
"""Keys of the per-hand ``info`` (``hand_info=True``); ``ev`` is added with ``info_ev=True``."""

_F32_MAX = float(np.finfo(np.float32).max)
_BOOL_ARGS = ("one_shoe", "visible_discards", "allow_no_bet", "info_ev", "hand_info")


def _bad(name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"{name}={value!r} is not allowed; allowed: {allowed}")


def _number(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)) and math.isfinite(float(value))


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
        and each offered side bet in :data:`pb_gym.rules.BETS` order."""
        return (("no_bet",) if self.allow_no_bet else ()) + self.rules.offered_bets

    @functools.cached_property
    def choice_spot(self) -> np.ndarray:
        """Column in :data:`~pb_gym.rules.BETS` of each bet choice (-1 = no bet)."""
        return _read_only(np.array([-1 if c == "no_bet" else BETS.index(c) for c in self.bet_choices],
                                   dtype=np.int64))

    @functools.cached_property
    def box_spots(self) -> np.ndarray:
        """Column in :data:`~pb_gym.rules.BETS` of each entry of a ``box`` action (the offered spots)."""
        return _read_only(np.array([BETS.index(b) for b in self.rules.offered_bets], dtype=np.int64))

    @functools.cached_property
    def n_actions(self) -> int:
        """Size of the ``discrete`` action space: 1 (no bet, if allowed) + bets x stake levels."""
        n_bets = len(self.rules.offered_bets)
        return int(self.allow_no_bet) + n_bets * len(self.stake_levels)

    @functools.cached_property
    def obs_keys(self) -> tuple[str, ...]:
        return tuple(k for k in OBS_KEYS if k != "shoe" or self.visible_discards)

    @functools.cached_property
    def obs_sizes(self) -> dict[str, int]:
        sizes = {"bankroll": 1, "bead_plate": self.history, "cards_left": 1, "hands": 2,
                 "last_hand": len(LAST_HAND_FIELDS), "shoe": R.N_RANKS}
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
        return (1.0 / np.concatenate([np.asarray(bound[k], dtype=np.float64) for k in self.obs_keys])
                ).astype(np.float32)


def make_config(**kwargs: Any) -> EnvConfig:
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
    reward given what the agent knew; the bankroll still moves by the realized win).
    """
    defaults: dict[str, Any] = dict(
        rules=None, bankroll=1000.0, unit=10.0, table_min=10.0, table_max=5000.0, win_target=None,
        max_hands=100, one_shoe=False, visible_discards=True, history=20,
        action_mode="discrete", stake_levels=None, stake_unit="units", allow_no_bet=True,
        observation="flat", obs_scale="scaled", flatten_obs=None, info_ev=False, hand_info=True,
        reward="realized",
    )
    unknown = [k for k in kwargs if k not in defaults and k not in RULE_FIELDS]
    if unknown:
        raise ValueError(f"unknown keyword argument {unknown[0]!r}; allowed: "
                         f"{', '.join(list(defaults) + list(RULE_FIELDS))}")
    rule_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in RULE_FIELDS}
    a = {**defaults, **kwargs}
    rules = a["rules"]
    if rules is not None:
        if not isinstance(rules, Rules):
            raise _bad("rules", rules, "a pb_gym.Rules or None")
        if rule_kwargs:
            raise ValueError(f"pass either rules=Rules(...) or rule fields such as "
                             f"{next(iter(rule_kwargs))}=..., not both")
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
        raise _bad("bankroll", a["bankroll"], f"a number >= table_min ({tmin:g}), or the player is "
                   "ruined before the first hand")
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
            raise ValueError(f"flatten_obs={a['flatten_obs']!r} contradicts observation="
                             f"{kwargs['observation']!r}; pass observation= only")
    if a["reward"] not in REWARDS:
        raise _bad("reward", a["reward"], ", ".join(REWARDS))
    if a["stake_unit"] not in STAKE_UNITS:
        raise _bad("stake_unit", a["stake_unit"], ", ".join(STAKE_UNITS))
    levels = a["stake_levels"]
    if levels is None:
        levels = DEFAULT_STAKE_LEVELS[a["stake_unit"]]
    allowed_levels = ("increasing positive numbers of units" if a["stake_unit"] == "units"
                      else "increasing fractions of the bankroll in (0, 1]")
    if isinstance(levels, (int, float, np.number)):
        levels = (levels,)
    if not isinstance(levels, (list, tuple, np.ndarray)) or len(levels) == 0 or not all(
            _number(x) and x > 0 for x in levels):
        raise _bad("stake_levels", a["stake_levels"], allowed_levels)
    levels = tuple(float(x) for x in levels)
    if any(b <= x for x, b in zip(levels, levels[1:])) or (
            a["stake_unit"] == "fraction" and levels[-1] > 1.0):
        raise _bad("stake_levels", a["stake_levels"], allowed_levels)
    return EnvConfig(
        rules=rules, bankroll=bankroll, unit=unit, table_min=tmin, table_max=tmax, win_target=target,
        max_hands=None if max_hands is None else int(max_hands), one_shoe=bool(a["one_shoe"]),
        visible_discards=bool(a["visible_discards"]), history=int(a["history"]),
        action_mode=a["action_mode"], stake_levels=levels, stake_unit=a["stake_unit"],
        allow_no_bet=bool(a["allow_no_bet"]), observation=observation,
        obs_scale=a["obs_scale"],
        info_ev=bool(a["info_ev"]), hand_info=bool(a["hand_info"]), reward=a["reward"],
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
        "hands": np.array([_F32_MAX if cfg.max_hands is None else float(cfg.max_hands),
                           cfg.rules.n_cards / 4.0]),
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
    return spaces.Box(0.0, 1.0, shape=(len(cfg.rules.offered_bets),), dtype=np.float32)


# --------------------------------------------------------------------------------------------------
# State of N tables
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Tables(engine._CheckedArrays):
    """State of N tables. Amounts in betting units. Updated in place by the functions of this module.

    The arrays' dtypes and shapes (those of :func:`new_tables`) are checked when the tables are built
    and when a field is replaced, so that the compiled kernels can trust them."""

    _FIELDS = engine._array_fields(
        ("bankroll", np.float64, 1), ("episode_hands", np.int64, 1), ("bead", np.int8, 2),
        ("last_hand", np.float32, 2), ("player_cards", np.uint8, 2), ("banker_cards", np.uint8, 2),
        ("stakes", np.float64, 2), ("reward", np.float64, 1))

    shoe: engine.ShoeState
    bankroll: np.ndarray  # (n,) float64
    episode_hands: np.ndarray  # (n,) int64: hands dealt in the episode
    bead: np.ndarray  # (n, history) int8: BEAD_CODES, most recent first, cleared at each new shoe
    last_hand: np.ndarray  # (n, 10) float32: LAST_HAND_FIELDS of the last hand
    player_cards: np.ndarray  # (n, 3) uint8: last hand's cards (0 = none)
    banker_cards: np.ndarray  # (n, 3) uint8
    stakes: np.ndarray  # (n, 7) float64: stakes of the last hand, BETS order
    reward: np.ndarray  # (n,) float64: net win of the last hand
    result: engine.HandResult  # reused by every deal
    seeded: bool = False

    @property
    def n(self) -> int:
        return self.bankroll.shape[0]

    def _widths(self) -> dict[str, int]:
        return {"bead": self.bead.shape[1] if self.bead.ndim == 2 else -1,
                "last_hand": len(LAST_HAND_FIELDS), "player_cards": 3, "banker_cards": 3,
                "stakes": R.N_BETS}

    def _check(self) -> None:
        super()._check()
        if not isinstance(self.shoe, engine.ShoeState) or self.shoe.n_tables != self.n:
            raise ValueError(f"Tables.shoe must be an engine.ShoeState of {self.n} tables")
        if not isinstance(self.result, engine.HandResult) or len(self.result) != self.n:
            raise ValueError(f"Tables.result must be an engine.HandResult of {self.n} tables")


def _check_batch(cfg: EnvConfig, tables: Tables, active: np.ndarray | None = None) -> None:
    """Before a kernel: ``tables`` were made for ``cfg`` (bead plate length, shoe size) and ``active``
    is one flag per table. Cheap (a few comparisons); the arrays themselves are checked by
    :class:`Tables` when set."""
    if not isinstance(tables, Tables):
        raise TypeError(f"tables must be a pb_gym.envs.table.Tables (new_tables), got "
                        f"{type(tables).__name__}")
    if tables.bead.shape[1] != cfg.history or tables.shoe.shoe.shape[1] != cfg.rules.n_cards:
        raise ValueError(f"these tables were made for another config (bead plate of "
                         f"{tables.bead.shape[1]} hands, {tables.shoe.shoe.shape[1]}-card shoes; "
                         f"this config: history={cfg.history}, {cfg.rules.n_cards}-card shoes): use "
                         "new_tables(cfg, n) with the config you play them with")
    if active is not None and (type(active) is not np.ndarray or active.dtype != np.bool_
                               or active.shape != (tables.n,)):
        raise ValueError(f"active must be a boolean mask of shape ({tables.n},)")


def table_bytes(cfg: EnvConfig) -> int:
    """Bytes one table of a batch holds: its shoe state and hand (:func:`pb_gym.engine.table_bytes`),
    its row of :class:`Tables` and its rows of the batched observation space's bounds and of one
    observation (float32)."""
    row = 8 + 8 + cfg.history + 4 * len(LAST_HAND_FIELDS) + 3 + 3 + 8 * R.N_BETS + 8
    return engine.table_bytes(cfg.rules) + row + 3 * 4 * cfg.obs_size


def new_tables(cfg: EnvConfig, n: int, seed: engine.Seed = None) -> Tables:
    """N tables with a fresh shoe each (``seed``: see :func:`pb_gym.engine.table_seeds`)."""
    tables = Tables(
        shoe=engine.init(cfg.rules, n, seed),
        bankroll=np.full(n, cfg.bankroll_units),
        episode_hands=np.zeros(n, dtype=np.int64),
        bead=np.zeros((n, cfg.history), dtype=np.int8),
        last_hand=np.zeros((n, len(LAST_HAND_FIELDS)), dtype=np.float32),
        player_cards=np.zeros((n, 3), dtype=np.uint8),
        banker_cards=np.zeros((n, 3), dtype=np.uint8),
        stakes=np.zeros((n, R.N_BETS)),
        reward=np.zeros(n),
        result=engine.HandResult.empty(n),
    )
    return tables


def reset_tables(cfg: EnvConfig, tables: Tables, index: np.ndarray | None = None,
                 seeds: Sequence[int] | np.ndarray | None = None) -> None:
    """Start new episodes at the tables ``index`` (all if None): a fresh shoe (seeded with one int per
    table if ``seeds`` is given, else continuing each table's random stream) and the starting bankroll."""
    _check_batch(cfg, tables)
    idx = np.arange(tables.n) if index is None else np.asarray(index, dtype=np.int64)
    engine.shuffle(cfg.rules, tables.shoe, idx, seed=None if seeds is None else np.asarray(seeds))
    tables.bankroll[idx] = cfg.bankroll_units
    tables.episode_hands[idx] = 0
    tables.bead[idx] = 0
    tables.last_hand[idx] = 0
    tables.player_cards[idx] = 0
    tables.banker_cards[idx] = 0
    tables.stakes[idx] = 0
    tables.reward[idx] = 0


# --------------------------------------------------------------------------------------------------
# Actions -> stakes
# --------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _discrete_stakes_kernel(actions, discrete, no_bet_first, n_levels, choice_spot, levels, fraction,
                            bankroll, active, min_u, max_u, forced, out):
    """Stakes of the discrete modes; returns the first row with an out-of-range action, or -1."""
    n_choices = choice_spot.shape[0]
    n_actions = (n_choices - 1) * n_levels + 1 if no_bet_first else n_choices * n_levels
    bad = -1
    for t in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[t, j] = 0.0
        if not active[t]:
            continue
        if discrete:
            a = actions[t, 0]
            if a < 0 or a >= n_actions:
                if bad < 0:
                    bad = t
                continue
            if no_bet_first:
                if a == 0:
                    continue
                choice = 1 + (a - 1) // n_levels
                level = (a - 1) % n_levels
            else:
                choice = a // n_levels
                level = a % n_levels
        else:
            choice = actions[t, 0]
            level = actions[t, 1]
            if choice < 0 or choice >= n_choices or level < 0 or level >= n_levels:
                if bad < 0:
                    bad = t
                continue
        spot = choice_spot[choice]
        if spot < 0:
            continue
        b = bankroll[t]
        s = levels[level] * b if fraction else levels[level]
        if s > max_u:
            s = max_u
        if s > b:
            s = b
        if s < min_u:
            s = min_u if (forced and b >= min_u) else 0.0
        out[t, spot] = s
    return bad


@numba.njit(cache=True)
def _box_stakes_kernel(actions, spots, bankroll, active, min_u, max_u, forced, out):
    for t in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[t, j] = 0.0
        if not active[t]:
            continue
        b = bankroll[t]
        cap = b if b < max_u else max_u
        total = 0.0
        best = 0
        best_x = 0.0
        for j in range(spots.shape[0]):
            x = actions[t, j]
            if not x > 0.0:  # also NaN
                x = 0.0
            elif x > 1.0:
                x = 1.0
            s = x * cap
            out[t, spots[j]] = s
            total += s
            if x > best_x:
                best_x = x
                best = j
        if total > b:
            f = b / total
            total = 0.0
            for j in range(spots.shape[0]):
                out[t, spots[j]] *= f
                total += out[t, spots[j]]
            if total > b:  # rounding: take the excess off the largest stake
                out[t, spots[best]] -= total - b
        placed = False
        for j in range(spots.shape[0]):
            if out[t, spots[j]] < min_u:
                out[t, spots[j]] = 0.0
            else:
                placed = True
        if forced and not placed and b >= min_u:
            out[t, spots[best]] = min_u
    return -1


def decode_actions(cfg: EnvConfig, actions: np.ndarray, bankroll: np.ndarray, out: np.ndarray,
                   active: np.ndarray | None = None) -> np.ndarray:
    """Stakes ``(n, 7)`` in units (:data:`~pb_gym.rules.BETS` order) of a batch of actions.

    ``actions``: ``(n, 2)`` ints (multidiscrete), ``(n,)`` ints (discrete) or ``(n, n_offered)`` floats
    (box). Rows where ``active`` is False get no stakes. Out-of-range discrete actions raise ValueError.
    """
    if type(bankroll) is not np.ndarray or bankroll.ndim != 1 or bankroll.dtype != np.float64:
        raise ValueError("bankroll must be a 1-D float64 array, one bankroll per table")
    n = bankroll.shape[0]
    if type(out) is not np.ndarray or out.shape != (n, R.N_BETS) or out.dtype != np.float64:
        raise ValueError(f"out must be a float64 array of shape ({n}, {R.N_BETS})")
    if active is None:
        active = np.ones(n, dtype=np.bool_)
    elif type(active) is not np.ndarray or active.shape != (n,) or active.dtype != np.bool_:
        raise ValueError(f"active must be a boolean mask of shape ({n},)")
    mode = cfg.action_mode
    if mode == "box":
        acts = np.asarray(actions, dtype=np.float64)
        k = len(cfg.rules.offered_bets)
        if acts.shape != (n, k):
            raise ValueError(f"box actions must have shape ({n}, {k}) (one stake per offered bet: "
                             f"{', '.join(cfg.rules.offered_bets)}); got {acts.shape}")
        _box_stakes_kernel(acts, cfg.box_spots, bankroll, active, cfg.min_units, cfg.max_units,
                           not cfg.allow_no_bet, out)
        return out
    acts = np.asarray(actions)
    if acts.dtype.kind not in "iu":
        if acts.dtype.kind == "f" and np.all(acts == np.floor(acts)):
            acts = acts.astype(np.int64)
        else:
            raise ValueError(f"{mode} actions must be integers; got dtype {acts.dtype}")
    shape = (n, 2) if mode == "multidiscrete" else (n,)
    if acts.shape != shape:
        raise ValueError(f"{mode} actions must have shape {shape}; got {acts.shape}")
    acts = acts.astype(np.int64, copy=False).reshape(n, -1)
    bad = _discrete_stakes_kernel(acts, mode == "discrete", cfg.allow_no_bet, len(cfg.stake_levels),
                                  cfg.choice_spot, np.asarray(cfg.stake_levels),
                                  cfg.stake_unit == "fraction", bankroll, active, cfg.min_units,
                                  cfg.max_units, not cfg.allow_no_bet, out)
    if bad >= 0:
        allowed = (f"0..{cfg.n_actions - 1}" if mode == "discrete" else
                   f"[0..{len(cfg.bet_choices) - 1}, 0..{len(cfg.stake_levels) - 1}] (bet choices "
                   f"{', '.join(cfg.bet_choices)}; {len(cfg.stake_levels)} stake levels)")
        raise ValueError(f"action {acts[bad].tolist() if mode != 'discrete' else int(acts[bad, 0])} "
                         f"(table {bad}) is out of range; allowed: {allowed}")
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
    raw = levels * b if cfg.stake_unit == "fraction" else np.broadcast_to(levels, (b.shape[0],
                                                                                   levels.shape[1]))
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
SETTLE_MIN_TABLES = 16384
"""Batches of at least this many tables are settled on several threads (:mod:`pb_gym.threads`)."""
OBS_MIN_TABLES = 16384
"""The same for writing observations."""


@numba.njit(cache=True, nogil=True)
def _settle_update_kernel(start, stop, active, stakes, outcome, winner, player_total, banker_total, player_ncards,
                          banker_ncards, natural, player_pair, banker_pair, shuffled, player_cards,
                          banker_cards, paytable, pair_pays, pp_col, bp_col, position, cut_position,
                          cut_hands, hand_after_cut, min_u, target_u, max_hands, one_shoe,
                          bankroll, episode_hands, bead, last_hand, last_player, last_banker,
                          last_reward, reward, terminated, truncated):
    history = bead.shape[1]
    for t in range(start, stop):
        if not active[t]:
            reward[t] = 0.0
            terminated[t] = False
            truncated[t] = False
            continue
        o = outcome[t]
        r = 0.0
        for j in range(stakes.shape[1]):
            s = stakes[t, j]
            if s != 0.0:
                if j == pp_col:
                    pay = pair_pays if player_pair[t] else -1.0
                elif j == bp_col:
                    pay = pair_pays if banker_pair[t] else -1.0
                else:
                    pay = paytable[o, j]
                r += s * pay
        reward[t] = r
        last_reward[t] = r
        b = bankroll[t] + r
        if b < 0.0:  # rounding of proportionally scaled stakes only: stakes never exceed the bankroll
            b = 0.0
        bankroll[t] = b
        episode_hands[t] += 1
        if shuffled[t]:
            for k in range(history):
                bead[t, k] = 0
        for k in range(history - 1, 0, -1):
            bead[t, k] = bead[t, k - 1]
        w = winner[t]
        bead[t, 0] = w + 1
        last_hand[t, 0] = 1.0 if w == 0 else 0.0
        last_hand[t, 1] = 1.0 if w == 1 else 0.0
        last_hand[t, 2] = 1.0 if w == 2 else 0.0
        last_hand[t, 3] = player_total[t]
        last_hand[t, 4] = banker_total[t]
        last_hand[t, 5] = player_ncards[t]
        last_hand[t, 6] = banker_ncards[t]
        last_hand[t, 7] = 1.0 if natural[t] else 0.0
        last_hand[t, 8] = 1.0 if player_pair[t] else 0.0
        last_hand[t, 9] = 1.0 if banker_pair[t] else 0.0
        for k in range(3):
            last_player[t, k] = player_cards[t, k]
            last_banker[t, k] = banker_cards[t, k]
        terminated[t] = b < min_u or (target_u > 0.0 and b >= target_u)
        tr = max_hands > 0 and episode_hands[t] >= max_hands
        if one_shoe and position[t] >= cut_position and (not hand_after_cut or cut_hands[t] == 1):
            tr = True  # the cut card is out: the next hand would come from a new shoe
        truncated[t] = tr


class _Paytable:
    """Per-rules constants of the settle kernel (computed once per config)."""

    cache: dict[Rules, tuple[np.ndarray, float]] = {}

    @classmethod
    def get(cls, rules: Rules) -> tuple[np.ndarray, float]:
        if rules not in cls.cache:
            cls.cache[rules] = (np.ascontiguousarray(rules.paytable()), float(rules.pair_pays))
        return cls.cache[rules]


_PP_COL = BETS.index("player_pair")
_BP_COL = BETS.index("banker_pair")


def record_hand(cfg: EnvConfig, tables: Tables, hand: engine.HandResult,
                shoe: engine.ShoeState) -> None:
    """Fold a hand dealt elsewhere into the tables' bead plates and last-hand records, exactly as a
    step would (the same kernel, with no stakes; bankrolls and hand counters are left alone). For
    code that deals with the engine itself and needs the environment's observations of it, such as
    a learned policy replayed by ``pb-gym evaluate``."""
    _check_batch(cfg, tables)
    n = tables.n
    engine.check_state(cfg.rules, shoe, deals=False)
    engine.check_result(hand, n)
    if shoe.n_tables != n:
        raise ValueError(f"shoe holds {shoe.n_tables} tables but the tables are {n}")
    paytable, pair_pays = _Paytable.get(cfg.rules)
    run_rows(_settle_update_kernel, n, SETTLE_MIN_TABLES,
        np.ones(n, dtype=np.bool_), np.zeros((n, R.N_BETS)), hand.outcome, hand.winner,
        hand.player_total, hand.banker_total, hand.player_ncards, hand.banker_ncards, hand.natural,
        hand.player_pair, hand.banker_pair, hand.shuffled, hand.player_cards, hand.banker_cards,
        paytable, pair_pays, _PP_COL, _BP_COL, shoe.position, shoe.cut_position, shoe.cut_hands,
        bool(cfg.rules.hand_after_cut), cfg.min_units, cfg.target_units, 0, cfg.one_shoe,
        np.full(n, np.inf), np.zeros(n, dtype=np.int64), tables.bead, tables.last_hand,
        tables.player_cards, tables.banker_cards, tables.reward, np.empty(n),
        np.empty(n, dtype=np.bool_), np.empty(n, dtype=np.bool_))


def play_hand(cfg: EnvConfig, tables: Tables, actions: np.ndarray, active: np.ndarray,
              max_hands: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode ``actions`` into stakes, deal one hand at every table (one engine call), settle and update
    the tables where ``active``. Returns fresh ``(reward, terminated, truncated)`` arrays (inactive
    tables: 0, False, False; no hand is dealt to them and their shoe is untouched).

    The reward is the hand's net win (``cfg.reward == "realized"``) or, with ``"expected"``, the sum
    over the spots of stake x exact EV per unit (:func:`ev_before_hand`: the cards unseen before the
    hand, burned cards included) -- the conditional expectation of the net win given the cards seen,
    so the optimal policy is the same and the outcome noise is gone. The bankroll, ruin and the win
    target always follow the realized net win.

    ``max_hands`` overrides ``cfg.max_hands`` (the vector env's ``max_episode_steps``)."""
    _check_batch(cfg, tables, active)
    n = tables.n
    decode_actions(cfg, actions, tables.bankroll, tables.stakes, active)
    rules = cfg.rules
    shoe = tables.shoe
    res = tables.result
    engine.deal(rules, shoe, out=res, active=active)
    paytable, pair_pays = _Paytable.get(rules)
    reward = np.empty(n)
    terminated = np.empty(n, dtype=np.bool_)
    truncated = np.empty(n, dtype=np.bool_)
    limit = cfg.max_hands if max_hands is None else max_hands
    run_rows(_settle_update_kernel, n, SETTLE_MIN_TABLES,
        active, tables.stakes, res.outcome, res.winner, res.player_total, res.banker_total,
        res.player_ncards, res.banker_ncards, res.natural, res.player_pair, res.banker_pair,
        res.shuffled, res.player_cards, res.banker_cards, paytable, pair_pays, _PP_COL, _BP_COL,
        shoe.position, shoe.cut_position, shoe.cut_hands, bool(rules.hand_after_cut), cfg.min_units,
        cfg.target_units, 0 if limit is None else int(limit), cfg.one_shoe, tables.bankroll,
        tables.episode_hands, tables.bead, tables.last_hand, tables.player_cards,
        tables.banker_cards, tables.reward, reward, terminated, truncated)
    if cfg.reward == "expected":
        staked = np.flatnonzero(active & (tables.stakes != 0.0).any(axis=1))
        reward[active] = 0.0
        if staked.size:
            ev = ev_before_hand(cfg, tables, staked)
            reward[staked] = np.einsum("ij,ij->i", tables.stakes[staked], ev)
    return reward, terminated, truncated


# --------------------------------------------------------------------------------------------------
# Observations and infos
# --------------------------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _obs_kernel(start, stop, bankroll, bead, position, n_cards, episode_hands, hands_in_shoe,
                last_hand, unseen, o_bankroll, o_bead, o_cards, o_hands, o_last, o_shoe, out):
    for t in range(start, stop):
        out[t, o_bankroll] = bankroll[t]
        for k in range(bead.shape[1]):
            out[t, o_bead + k] = bead[t, k]
        out[t, o_cards] = n_cards - position[t]
        out[t, o_hands] = episode_hands[t]
        out[t, o_hands + 1] = hands_in_shoe[t]
        for k in range(last_hand.shape[1]):
            out[t, o_last + k] = last_hand[t, k]
        if o_shoe >= 0:
            for r in range(unseen.shape[1]):
                out[t, o_shoe + r] = unseen[t, r]


def write_obs(cfg: EnvConfig, tables: Tables) -> np.ndarray:
    """The flat observations ``(n, obs_size)`` float32 of every table, in a NEW array (never reused),
    scaled by :attr:`EnvConfig.obs_factors` unless ``obs_scale="raw"``."""
    _check_batch(cfg, tables)
    out = np.empty((tables.n, cfg.obs_size), dtype=np.float32)
    off = cfg.obs_offsets
    shoe = tables.shoe
    run_rows(_obs_kernel, tables.n, OBS_MIN_TABLES, tables.bankroll, tables.bead, shoe.position,
             shoe.shoe.shape[1], tables.episode_hands, shoe.hands_in_shoe, tables.last_hand,
             shoe.unseen, off["bankroll"][0], off["bead_plate"][0], off["cards_left"][0],
             off["hands"][0], off["last_hand"][0], off["shoe"][0] if "shoe" in off else -1, out)
    factors = cfg.obs_factors
    if factors is not None:
        out *= factors
    return out


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
    res = tables.result
    select = slice(None) if rows is None else rows
    cards = np.concatenate([res.player_cards[select], res.banker_cards[select]],
                           axis=1).astype(np.intp)
    comp = tables.shoe.unseen[select].astype(np.int64)
    for c in range(cards.shape[1]):  # a row appears once per column: plain fancy-index adds suffice
        code = cards[:, c]
        rows = np.flatnonzero(code > 0)
        comp[rows, code[rows] - 1] += 1
    return exact.expected_values(comp, cfg.rules)


def hand_info(cfg: EnvConfig, tables: Tables) -> dict[str, np.ndarray]:
    """Batched info of the hand just played (new arrays): cards, totals, winner (0 banker, 1 player,
    2 tie), natural, pairs, shuffled, stakes (units, BETS order), bankroll after the hand (units) and,
    with ``info_ev``, the exact EV per unit of each bet before the hand."""
    info: dict[str, np.ndarray] = {}
    if cfg.hand_info:
        res = tables.result
        info = {
            "player_cards": res.player_cards.copy(), "banker_cards": res.banker_cards.copy(),
            "player_total": res.player_total.copy(), "banker_total": res.banker_total.copy(),
            "winner": res.winner.copy(), "natural": res.natural.copy(),
            "player_pair": res.player_pair.copy(), "banker_pair": res.banker_pair.copy(),
            "shuffled": res.shuffled.copy(), "stakes": tables.stakes.copy(),
            "bankroll": tables.bankroll.copy(),
        }
    if cfg.info_ev:
        info["ev"] = ev_before_hand(cfg, tables)
    return info
