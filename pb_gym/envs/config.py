"""The environment's configuration: ONE frozen dataclass, :class:`EnvConfig`.

Its init parameters are the keyword arguments of :class:`~pb_gym.envs.punto_banco.PuntoBancoEnv` and
:class:`~pb_gym.envs.vector.PuntoBancoVectorEnv` (both spell them out with the same names and defaults;
a test compares the signatures), the ``env:`` section of ``pb-gym train`` (derived from it, same
defaults) and what a saved model records (:meth:`EnvConfig.record`, read back by
:meth:`EnvConfig.from_record`, which maps the keys of older files). Each field's docstring below is
its reference; a bad value raises a ``ValueError`` naming the field and the allowed values, an unknown
keyword a ``TypeError`` (as any Python callable).

Units. Money amounts given to the environment (``bankroll``, ``table_min``, ``table_max``,
``win_target``) are in money; ``unit`` is the betting unit in money. Inside, and in everything the
environment returns (observation, reward, stakes in ``info``), amounts are in **betting units** (money
/ ``unit``).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import math
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from pb_gym import catalog
from pb_gym import rules as R
from pb_gym.rules import Rules
from pb_gym.session import LAST_HAND_FIELDS

ACTION_MODES: tuple[str, ...] = ("discrete", "multidiscrete", "box")
"""``action_mode`` options, the default first (``discrete`` works with every SB3 / RL Zoo algorithm)."""
OBSERVATIONS: tuple[str, ...] = ("flat", "dict")
"""``observation`` options, the default first: one float32 ``Box`` (``MlpPolicy``) or a ``Dict``."""
OBS_SCALES: tuple[str, ...] = ("scaled", "raw")
"""``obs_scale`` options, the default first: every feature divided by a documented bound, or the raw
units (cards, betting units, hands)."""
HANDS_SCALE = 100
"""Hands that scale the episode-hands feature when the env has no ``max_hands`` of its own (the limit
is then Gymnasium's ``TimeLimit``; 100 is the registered ``max_episode_steps``): the scaled feature is
``hands / 100`` and exceeds 1 in an episode longer than 100 hands (its bound is then the episode's
most hands over 100, :func:`pb_gym.envs.spaces.episode_hands_high`: ``inf`` without a limit)."""
STAKE_UNITS: tuple[str, ...] = ("units", "fraction")
"""``stake_unit`` options, the default first."""
REWARDS: tuple[str, ...] = ("realized", "expected", "log_growth")
"""``reward`` options: the dealt net win of the hand; the exact EV of the stakes placed given the
cards unseen before the hand; or the exact expected log growth of the bankroll over the hand (Kelly's
objective) given the same cards."""
LOG_GROWTH_FLOOR = 0.5
"""With ``reward="log_growth"``, a hand class that would leave less than half the table minimum (an
all-in bet lost: nothing at all) counts as leaving half of it, so the reward stays finite: ruin costs
``log(table_min / 2 / bankroll)``, far below any hand a sane stake can lose."""
DEFAULT_STAKE_LEVELS: dict[str, tuple[float, ...]] = {
    "units": (1.0, 2.0, 5.0, 10.0, 25.0),
    "fraction": (0.01, 0.02, 0.05, 0.1, 0.25),
}
"""The ``stake_levels`` of ``stake_levels=None``, per ``stake_unit``."""
RULE_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Rules))
"""The fields of :class:`pb_gym.Rules`; each but ``side_bets`` is also a shortcut keyword of the config."""
RULE_SHORTCUTS: tuple[str, ...] = tuple(f for f in RULE_FIELDS if f != "side_bets")

LEGACY_DEFAULTS: dict[str, Any] = {
    "observation": "dict",
    "obs_scale": "raw",
    "action_mode": "multidiscrete",
}
"""The environment defaults before the flat, scaled observation and the discrete actions became the
defaults: a saved ``env.json`` that does not name these keys was trained with these values."""

OBS_KEYS: tuple[str, ...] = ("bankroll", "bead_plate", "cards_left", "hands", "last_hand", "leak", "shoe")
"""Observation keys in the (sorted) order of the Dict space and of the flattened observation
(``leak`` only with ``leaks``)."""
LEAKS: tuple[str, ...] = ("first_card_class", "burn_card", "bottom_card")
"""``leaks`` options, in the order of their features in the ``leak`` observation field."""
LEAK_SIZES: dict[str, int] = {"first_card_class": 2, "burn_card": R.N_RANKS, "bottom_card": R.N_RANKS}
"""Features of each leak in the ``leak`` field: ``[high, low]``; the face-down burned cards by rank; the
bottom card's rank, one-hot."""
LEAK_HIGH: dict[str, float] = {
    "first_card_class": 1.0,
    "burn_card": float(R.BURN_COUNTS.max()),
    "bottom_card": 1.0,
}
"""The bound of each leak's features (the scaled observation divides by it): flags of 1; at most 10
cards of a rank burned face down."""
LAST_HAND_HIGH = np.array([1, 1, 1, 9, 9, 3, 3, 1, 1, 1], dtype=np.float32)
"""The largest value of each field of the ``last_hand`` observation
(:data:`~pb_gym.session.LAST_HAND_FIELDS`)."""
LAST_HAND_HIGH.flags.writeable = False

_BOOLS = ("one_shoe", "visible_discards", "allow_no_bet", "info_ev", "hand_info")
_MONEY = ("bankroll", "unit", "table_min", "table_max")
_CHOICES = {
    "action_mode": ACTION_MODES,
    "observation": OBSERVATIONS,
    "obs_scale": OBS_SCALES,
    "stake_unit": STAKE_UNITS,
    "reward": REWARDS,
}

# the canonical values' types; None is only the default that __post_init__ replaces
_DEFAULT_RULES = cast(Rules, None)
_DEFAULT_SIDE_BETS = cast("tuple[str | catalog.Bet, ...]", None)
_DEFAULT_LEVELS = cast("tuple[float, ...]", None)
MAX_EPISODE_HANDS = 10**12
"""Largest ``max_hands`` (the hand counters are int64 and float32 features; None: no limit)."""


def bad(name: str, value: object, allowed: str) -> ValueError:
    """The error of a bad value: ``name=value is not allowed; allowed: ...``."""
    return ValueError(f"{name}={value!r} is not allowed; allowed: {allowed}")


def is_number(value: object) -> bool:
    """A finite int or float (not a bool)."""
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(float(value))
    )


def is_int(value: object) -> bool:
    """An int (not a bool)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclasses.dataclass(frozen=True, kw_only=True)
class EnvConfig:
    """The validated settings of a table: the rules, the money, the episode ends and the agent's
    interface (actions, observations, infos, reward). Every argument is keyword-only; the fields hold
    canonical values after construction (``rules`` a :class:`~pb_gym.Rules`, ``stake_levels`` a tuple,
    ``side_bets`` the full tuple of side bets offered)."""

    rules: Rules = _DEFAULT_RULES
    """The rules of the table (:class:`pb_gym.Rules`, or a dict of its fields, as
    ``EnvSpec.to_json`` writes it; its ``side_bets`` may then name catalog or user bets as
    ``side_bets`` below). None: ``Rules()`` with the rule keywords below. Give either ``rules`` or
    rule keywords, not both."""
    decks: dataclasses.InitVar[int | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.decks`; None: the rules' default). Not kept: read
    ``config.rules.decks``."""
    banker_variant: dataclasses.InitVar[str | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.banker_variant`)."""
    commission: dataclasses.InitVar[float | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.commission`)."""
    tie_pays: dataclasses.InitVar[int | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.tie_pays`)."""
    pair_pays: dataclasses.InitVar[float | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.pair_pays`)."""
    dragon7_pays: dataclasses.InitVar[float | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.dragon7_pays`)."""
    panda8_pays: dataclasses.InitVar[float | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.panda8_pays`)."""
    burn: dataclasses.InitVar[bool | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.burn`)."""
    cut_card: dataclasses.InitVar[int | float | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.cut_card`)."""
    hand_after_cut: dataclasses.InitVar[bool | None] = None
    """Rule keyword (:attr:`pb_gym.Rules.hand_after_cut`)."""
    side_bets: tuple[str | catalog.Bet, ...] = _DEFAULT_SIDE_BETS
    """Every side bet the table offers, in order: the rules' own (``player_pair``, ``banker_pair``,
    ``dragon7``, ``panda8``; they become ``rules.side_bets``), other catalog side bets by name
    (:func:`pb_gym.catalog.bet_names`) and the user's own bets as :class:`pb_gym.catalog.Bet` objects
    or definition dicts (``{name, rows: [{when, pays}]}``, :func:`pb_gym.catalog.bet_from_dict`). The
    extra bets are stake columns after the seven :data:`pb_gym.rules.BETS`. None: the rules' side
    bets. Given with ``rules``, it replaces ``rules.side_bets``."""
    bankroll: float = 1000.0
    """Starting bankroll, money."""
    unit: float = 10.0
    """The betting unit, money: everything the env returns is in units of it."""
    table_min: float = 10.0
    """Table minimum per bet spot, money; the episode ends (ruin) when the bankroll falls below it."""
    table_max: float = 5000.0
    """Table maximum per bet spot, money (>= ``table_min``)."""
    win_target: float | None = None
    """Money; the episode ends (terminated) when the bankroll reaches it. None: no target."""
    max_hands: int | None = 100
    """Hands per episode (truncation). None: no limit of the env's own (``gymnasium.make`` passes
    None; Gymnasium's ``TimeLimit`` with ``max_episode_steps`` then ends episodes)."""
    one_shoe: bool = False
    """An episode is one shoe: truncated when the cut card has come out. False: episodes run across
    reshuffles."""
    shuffle: str = "hand"
    """``hand``: a shoe shuffled by hand, dealt to the cut card, then shuffled again; ``csm``: a
    continuous shuffling machine (:mod:`pb_gym.procedures`): every hand is drawn at random from the
    cards in the machine, and a hand's cards go back into it ``csm_delay`` hands after it was dealt
    (so the ``shoe`` feature, the cards unseen, is the machine's content, and the hands of the shoe
    stay 0). A machine burns no card (give ``burn=False``) and has no cut card, so ``one_shoe`` and
    ``leaks`` do not apply to it."""
    csm_delay: int = 0
    """With ``shuffle="csm"``: the hands a hand's cards stay out of the machine (0: they go back
    straight after it), 0 to :data:`pb_gym.procedures.MAX_CSM_DELAY`."""
    visible_discards: bool = True
    """Observe the 13 unseen-card counts (the ``shoe`` field)."""
    history: int = 20
    """Bead plate length in the observation (hands of this shoe, most recent first), 1 to 1000."""
    action_mode: str = "discrete"
    """``discrete`` (``Discrete(1 + n_bets * K)``), ``multidiscrete`` (``[bet, size]``) or ``box``
    (one stake fraction per offered bet spot)."""
    stake_levels: tuple[float, ...] = _DEFAULT_LEVELS
    """The K stake levels of the discrete modes: increasing positive units (``stake_unit="units"``)
    or fractions of the current bankroll in (0, 1] (``"fraction"``). None: 1, 2, 5, 10, 25 units or
    1, 2, 5, 10, 25% (:data:`DEFAULT_STAKE_LEVELS`)."""
    stake_unit: str = "units"
    """``units`` or ``fraction`` (of the current bankroll): how ``stake_levels`` read."""
    allow_no_bet: bool = True
    """The agent may sit a hand out; False forces a bet each hand (the table minimum at least)."""
    observation: str = "flat"
    """``flat``: one float32 ``Box`` (``MlpPolicy``); ``dict``: a ``Dict`` of Boxes, one per field
    (``MultiInputPolicy``)."""
    obs_scale: str = "scaled"
    """``scaled``: each feature divided by a documented bound (``obs_factors``); ``raw``: cards,
    units, hands."""
    info_ev: bool = False
    """Add ``ev`` (the exact EV per unit of each stake column before the hand) to ``info``."""
    hand_info: bool = True
    """Cards, totals, winner, stakes and bankroll in ``info`` (the vector env's default is False)."""
    leaks: tuple[str, ...] = ()
    """Information a casino procedure leaks before each hand, shown in the ``leak`` observation field
    (any of :data:`LEAKS`): ``first_card_class``: edge sorting, whether the first card of the hand
    (the player's first) is high (6, 7, 8, 9) or low; ``burn_card``: the cards the burn rule discarded
    face down are shown (the true shoe is known); ``bottom_card``: the bottom card of the shoe is known
    (a ribbon-spread cut; it lies behind the cut card and is never dealt). A leak shows nothing before
    a hand dealt from a shoe shuffled as the hand is dealt (the cut card had come out: the first hand
    of every shoe but an episode's first, when episodes run across reshuffles). The exact EVs (``expected``
    rewards, ``info_ev``, the benchmark's perfect bettor) are conditional on the leak
    (:mod:`pb_gym.envs.leaks`). ``first_card_class`` prices the seven spots only: no extra catalog bets
    and no ``log_growth`` reward with it. Default: no leak."""
    reward: str = "realized"
    """``realized``: the hand's net win; ``expected``: the exact EV of the stakes placed given the
    cards unseen before the hand (an unbiased, noise-free estimate of the realized reward);
    ``log_growth``: the exact expected log growth of the bankroll over the hand (Kelly's objective).
    The bankroll always moves by the realized win."""

    def __post_init__(self, *rule_keywords: Any) -> None:
        # the rule keywords' InitVars, in the order they are declared (_RULE_INITVARS)
        shortcuts = dict(zip(_RULE_INITVARS, rule_keywords, strict=True))
        rules, side_bets = _resolve_rules(self.rules, self.side_bets, shortcuts)
        set_ = functools.partial(object.__setattr__, self)
        set_("rules", rules)
        set_("side_bets", side_bets)
        for name in _BOOLS:
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise bad(name, value, "True or False")
            set_(name, bool(value))
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise bad(name, getattr(self, name), ", ".join(allowed))
        for name, value in _check_money(self).items():
            set_(name, value)
        if self.max_hands is not None:
            if not is_int(self.max_hands) or not 1 <= self.max_hands <= MAX_EPISODE_HANDS:
                raise bad("max_hands", self.max_hands, f"None or an integer from 1 to {MAX_EPISODE_HANDS:,}")
            set_("max_hands", int(self.max_hands))
        if not is_int(self.history) or not 1 <= self.history <= 1000:
            raise bad("history", self.history, "an integer from 1 to 1000")
        set_("history", int(self.history))
        set_("stake_levels", _check_levels(self.stake_levels, self.stake_unit))
        if self.reward == "log_growth" and self.bets.suited:
            raise bad(
                "reward",
                self.reward,
                "realized or expected with a bet on suits (the log growth is summed over the rank-level "
                "hand classes)",
            )
        set_("leaks", _check_leaks(self))
        set_("csm_delay", _check_shuffle(self))

    # ---- records ------------------------------------------------------------------------------
    def record(self) -> dict[str, Any]:
        """The config as plain JSON values, one key per field (``rules`` a dict of its fields, user
        bets as definition dicts): what a saved model's ``env.json`` holds.
        ``EnvConfig.from_record(config.record()) == config``."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "rules":
                value = {
                    k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(value).items()
                }
            elif f.name == "side_bets":
                value = [b if isinstance(b, str) else b.as_dict() for b in value]
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> EnvConfig:
        """The config a saved record describes (:meth:`record`, or the keyword arguments of an older
        ``env.json``): the older keys are mapped (``flatten_obs`` -> ``observation``; ``extra_bets``
        and ``custom_bets`` -> ``side_bets``; the rule fields at the top level -> rule keywords; the
        older defaults of :data:`LEGACY_DEFAULTS` where a file does not name them). Another key is a
        ``ValueError`` naming it and the allowed keys."""
        return cls(**upgrade_record(data))

    # ---- derived figures ----------------------------------------------------------------------
    @functools.cached_property
    def extra_bets(self) -> tuple[catalog.Bet, ...]:
        """The bets of ``side_bets`` beyond the rules' own (catalog or user bets): the stake columns
        after the seven :data:`~pb_gym.rules.BETS`."""
        return catalog.split_side_bets(self.side_bets)[1]

    @functools.cached_property
    def bets(self) -> catalog.TableBets:
        """The table's bet columns (:class:`pb_gym.catalog.TableBets`): the seven
        :data:`~pb_gym.rules.BETS` spots, then the extra catalog or user bets."""
        return catalog.TableBets(self.rules, self.extra_bets)

    @property
    def n_columns(self) -> int:
        """Stake columns: 7 + the extra bets (stakes in ``info``, ``ev``, the session's payoffs)."""
        return R.N_BETS + len(self.extra_bets)

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

    @property
    def flat(self) -> bool:
        """True when the observation is one flat ``Box`` (``observation="flat"``)."""
        return self.observation == "flat"

    @functools.cached_property
    def bet_choices(self) -> tuple[str, ...]:
        """Names of the bet choices of the discrete modes: ``no_bet`` (if allowed), banker, player, tie
        and each offered side bet in :data:`pb_gym.rules.BETS` order, then the extra bets."""
        return (("no_bet",) if self.allow_no_bet else ()) + self.bets.offered

    @functools.cached_property
    def n_actions(self) -> int:
        """Size of the ``discrete`` action space: 1 (no bet, if allowed) + bets x stake levels."""
        return int(self.allow_no_bet) + len(self.bets.offered) * len(self.stake_levels)

    @functools.cached_property
    def choice_spot(self) -> np.ndarray:
        """Column in :data:`~pb_gym.rules.BETS` of each bet choice (-1 = no bet)."""
        columns = self.bets.columns
        return read_only(
            np.array([-1 if c == "no_bet" else columns.index(c) for c in self.bet_choices], dtype=np.int64)
        )

    @functools.cached_property
    def box_spots(self) -> np.ndarray:
        """Column in :data:`~pb_gym.rules.BETS` of each entry of a ``box`` action (the offered spots)."""
        columns = self.bets.columns
        return read_only(np.array([columns.index(b) for b in self.bets.offered], dtype=np.int64))

    @functools.cached_property
    def obs_keys(self) -> tuple[str, ...]:
        return tuple(
            k for k in OBS_KEYS if (k != "shoe" or self.visible_discards) and (k != "leak" or self.leaks)
        )

    @functools.cached_property
    def leak_offsets(self) -> dict[str, int]:
        """``leak -> start`` of each leak's features inside the ``leak`` field (:data:`LEAK_SIZES`)."""
        starts = itertools.accumulate((LEAK_SIZES[leak] for leak in self.leaks), initial=0)
        return dict(zip(self.leaks, starts, strict=False))  # (the last sum is the field's end)

    @functools.cached_property
    def obs_sizes(self) -> dict[str, int]:
        sizes = {
            "bankroll": 1,
            "bead_plate": self.history,
            "cards_left": 1,
            "hands": 2,
            "last_hand": len(LAST_HAND_FIELDS),
            "leak": sum(LEAK_SIZES[leak] for leak in self.leaks),
            "shoe": R.N_RANKS,
        }
        return {k: sizes[k] for k in self.obs_keys}

    @functools.cached_property
    def obs_offsets(self) -> dict[str, tuple[int, int]]:
        """``key -> (start, stop)`` of each observation field in the flat observation."""
        edges = list(itertools.accumulate(self.obs_sizes.values(), initial=0))
        return {key: (a, b) for key, a, b in zip(self.obs_sizes, edges, edges[1:], strict=False)}

    @functools.cached_property
    def obs_size(self) -> int:
        return sum(self.obs_sizes.values())

    @functools.cached_property
    def obs_factors(self) -> np.ndarray | None:
        """What the observation kernel multiplies the raw flat observation by (``obs_scale="scaled"``),
        one float32 per entry; None for ``"raw"``. Each field is divided by its bound: bankroll by the
        starting bankroll (1 at the start, 0 at ruin; above, bounded only by the episode's limits:
        :func:`pb_gym.envs.spaces.bankroll_high`), the bead plate by 3, cards left
        by the cards of a full shoe, episode hands by ``max_hands`` (or :data:`HANDS_SCALE` = 100 when
        ``max_hands`` is None: then the feature passes 1 after 100 hands), hands of this shoe by the
        most a shoe can deal (``n_cards / 4``: a hand takes at least 4 cards), the last hand by its
        maxima (totals 9, cards 3), the leaks' features by :data:`LEAK_HIGH` (flags by 1, burned cards
        by 10), the unseen counts of each rank by ``4 x decks``."""
        if self.obs_scale == "raw":
            return None
        bounds = self.field_bounds(self.bankroll_units, float(self.max_hands or HANDS_SCALE))
        return (1.0 / np.concatenate(list(bounds.values()))).astype(np.float32)

    def field_bounds(self, bankroll: float, episode_hands: float) -> dict[str, np.ndarray]:
        """The raw-unit bound of each feature of every observation field (float64, :attr:`obs_keys`
        order) given the bankroll's and the episode hands' (the one table of bounds that
        :attr:`obs_factors` divides by and the spaces' highs are: :mod:`pb_gym.envs.spaces`)."""
        n_cards = float(self.rules.n_cards)
        bound = {
            "bankroll": [bankroll],
            "bead_plate": [3.0] * self.history,
            "cards_left": [n_cards],
            "hands": [episode_hands, n_cards / 4.0],
            "last_hand": list(LAST_HAND_HIGH),
            "leak": leak_bounds(self),
            "shoe": [float(R.CARDS_PER_RANK_PER_DECK * self.rules.decks)] * R.N_RANKS,
        }
        return {k: np.asarray(bound[k], dtype=np.float64) for k in self.obs_keys}

    def action_index(self, bet: str, stake_level: int = 0) -> int:
        """The ``discrete`` action that stakes level ``stake_level`` (0..K-1) on ``bet`` (a name of
        :attr:`bet_choices`; ``"no_bet"`` takes no level)."""
        if bet not in self.bet_choices:
            raise bad("bet", bet, ", ".join(self.bet_choices))
        if bet == "no_bet":
            return 0
        k = len(self.stake_levels)
        if not is_int(stake_level) or not 0 <= stake_level < k:
            raise bad("stake_level", stake_level, f"an integer in 0..{k - 1}")
        return int(self.allow_no_bet) + self.bets.offered.index(bet) * k + int(stake_level)

    def describe_action(self, index: int) -> tuple[str, float]:
        """What the ``discrete`` action ``index`` does: ``(bet, stake level)``, the level as given in
        ``stake_levels`` (units or a fraction of the bankroll); ``("no_bet", 0.0)`` for no bet."""
        if not is_int(index) or not 0 <= index < self.n_actions:
            raise bad("index", index, f"an integer in 0..{self.n_actions - 1}")
        if self.allow_no_bet and index == 0:
            return "no_bet", 0.0
        bet, level = divmod(int(index) - int(self.allow_no_bet), len(self.stake_levels))
        return self.bets.offered[bet], self.stake_levels[level]


_RULE_INITVARS: tuple[str, ...] = tuple(
    name for name in inspect.signature(EnvConfig).parameters if name in RULE_SHORTCUTS
)
"""The rule keywords in the order :class:`EnvConfig` declares them, which is the order its
``__post_init__`` receives them in, whatever the order of :data:`RULE_SHORTCUTS`."""


def _resolve_rules(
    rules: object, side_bets: object, shortcuts: dict[str, Any]
) -> tuple[Rules, tuple[str | catalog.Bet, ...]]:
    """The :class:`Rules` and the canonical side bets of ``rules`` (a Rules, a dict of its fields or
    None), ``side_bets`` and the rule keywords given."""
    given = {k: v for k, v in shortcuts.items() if v is not None}
    if rules is None:
        rules = Rules(**given)
    elif given:
        raise ValueError(
            f"pass either rules=Rules(...) or rule keywords such as {next(iter(given))}=..., not both"
        )
    elif isinstance(rules, Mapping):
        data = dict(rules)
        unknown = [k for k in data if k not in RULE_FIELDS]
        if unknown:
            raise bad("rules", rules, f"a pb_gym.Rules or a dict of its fields ({', '.join(RULE_FIELDS)})")
        if side_bets is None and "side_bets" in data:
            side_bets = data["side_bets"]
        data.pop("side_bets", None)
        rules = Rules(**data)
    elif not isinstance(rules, Rules):
        raise bad("rules", rules, "a pb_gym.Rules, a dict of its fields, or None")
    if side_bets is None:
        return rules, tuple(rules.side_bets)
    if isinstance(side_bets, (str, Mapping, catalog.Bet)):
        side_bets = (side_bets,)
    if not isinstance(side_bets, (list, tuple)):
        raise bad(
            "side_bets", side_bets, "None or a list of bet names, pb_gym.catalog.Bet or bet definitions"
        )
    own, extra = catalog.split_side_bets(tuple(side_bets))
    if own != rules.side_bets:
        rules = dataclasses.replace(rules, side_bets=own)
    known = catalog.catalog()  # a catalog bet by its name, a user's own as the Bet
    return rules, tuple(rules.side_bets) + tuple(b.name if known.get(b.name) == b else b for b in extra)


def _check_money(cfg: EnvConfig) -> dict[str, float | None]:
    """The money fields as floats, checked (positive, ordered, a target above the bankroll)."""
    for name in _MONEY:
        value = getattr(cfg, name)
        if not is_number(value) or value <= 0:
            raise bad(name, value, "a positive number (money)")
    bankroll, tmin, tmax = float(cfg.bankroll), float(cfg.table_min), float(cfg.table_max)
    if tmax < tmin:
        raise bad("table_max", cfg.table_max, f"a number >= table_min ({tmin:g})")
    if bankroll < tmin:
        raise bad(
            "bankroll",
            cfg.bankroll,
            f"a number >= table_min ({tmin:g}), or the player is ruined before the first hand",
        )
    target = cfg.win_target
    if target is not None:
        if not is_number(target) or target <= bankroll:
            raise bad("win_target", target, f"None or a number > bankroll ({bankroll:g})")
        target = float(target)
    return dict(bankroll=bankroll, unit=float(cfg.unit), table_min=tmin, table_max=tmax, win_target=target)


def read_only(array: np.ndarray) -> np.ndarray:
    """``array``, made read-only."""
    array.flags.writeable = False
    return array


def leak_bounds(cfg: EnvConfig) -> list[float]:
    """The raw-unit bound of every feature of the ``leak`` field (:data:`LEAK_HIGH`)."""
    return [LEAK_HIGH[leak] for leak in cfg.leaks for _ in range(LEAK_SIZES[leak])]


def _check_leaks(cfg: EnvConfig) -> tuple[str, ...]:
    """``leaks`` as a tuple in :data:`LEAKS` order, checked (known names, each once, and what
    ``first_card_class`` can price)."""
    given = cfg.leaks
    leaks = (given,) if isinstance(given, str) else given
    allowed = f"a list drawn from {', '.join(LEAKS)} (each at most once), or [] for no leak"
    if not isinstance(leaks, (list, tuple)) or any(leak not in LEAKS for leak in leaks):
        raise bad("leaks", given, allowed)
    if len(set(leaks)) != len(leaks):
        raise bad("leaks", given, allowed)
    if leaks and cfg.bets.suited:
        raise bad("leaks", given, "[] with a bet on suits (the leaked cards' EVs are priced by rank)")
    if "first_card_class" in leaks:
        if cfg.extra_bets:
            raise bad(
                "leaks",
                given,
                "first_card_class only with the seven spots of pb_gym.rules.BETS (its exact EVs "
                f"price those); the table also offers {cfg.extra_bets[0].name!r}",
            )
        if cfg.reward == "log_growth":
            raise bad("leaks", given, "first_card_class with reward realized or expected, not log_growth")
    return tuple(leak for leak in LEAKS if leak in leaks)


def _check_shuffle(cfg: EnvConfig) -> int:
    """``csm_delay`` as an int, with ``shuffle`` checked against it and the rest of the config."""
    from pb_gym import procedures  # (numba: not at the package's import)

    delay = procedures.check_shuffle(cfg.shuffle, cfg.csm_delay)
    if cfg.shuffle == "hand":
        return delay
    why = {
        "one_shoe": (cfg.one_shoe, "False with shuffle='csm' (a continuous shuffler has no end of shoe)"),
        "leaks": (cfg.leaks, "[] with shuffle='csm' (no burn card, no cut, no first card set apart)"),
        "burn": (cfg.rules.burn, "False with shuffle='csm' (a continuous shuffler burns no card)"),
    }
    for name, (value, allowed) in why.items():
        if value:
            raise bad(name, value, allowed)
    # the cards out of the machine (the last csm_delay hands and the next one) stay before the cut card,
    # so that the engine never reshuffles
    room = cfg.rules.n_cards - cfg.rules.cards_behind_cut
    if 6 * (delay + 1) > room:
        raise bad(
            "csm_delay", delay, f"at most {room // 6 - 1} with {cfg.rules.decks} deck(s) and this cut card"
        )
    return delay


def _check_levels(levels: object, stake_unit: str) -> tuple[float, ...]:
    """``stake_levels`` as a tuple of floats (None: :data:`DEFAULT_STAKE_LEVELS`), checked."""
    if levels is None:
        return DEFAULT_STAKE_LEVELS[stake_unit]
    allowed = (
        "increasing positive numbers of units"
        if stake_unit == "units"
        else "increasing fractions of the bankroll in (0, 1]"
    )
    given = levels
    if isinstance(levels, (int, float, np.number)):
        levels = (levels,)
    if (
        not isinstance(levels, (list, tuple, np.ndarray))
        or len(levels) == 0
        or not all(is_number(x) and x > 0 for x in levels)
    ):
        raise bad("stake_levels", given, allowed)
    out = tuple(float(x) for x in levels)
    if any(b <= x for x, b in zip(out, out[1:], strict=False)) or (
        stake_unit == "fraction" and out[-1] > 1.0
    ):
        raise bad("stake_levels", given, allowed)
    return out


def make_config(**kwargs: Any) -> EnvConfig:
    """``EnvConfig(**kwargs)``: the environments' keyword arguments validated (an unknown one is a
    ``TypeError``, a bad value a ``ValueError`` naming it)."""
    return EnvConfig(**kwargs)


def parameters() -> dict[str, inspect.Parameter]:
    """The init parameters of :class:`EnvConfig` by name (keyword-only, with their defaults): the
    envs' signatures and train's ``env:`` section are these."""
    return dict(inspect.signature(EnvConfig).parameters)


@functools.cache
def field_docs() -> dict[str, str]:
    """Each init parameter's docstring (the attribute docstrings of :class:`EnvConfig`), one line."""
    tree = ast.parse(inspect.getsource(EnvConfig).lstrip())
    body = cast(ast.ClassDef, tree.body[0]).body
    docs: dict[str, str] = {}
    for node, after in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


_OLD_KEYS = ("flatten_obs", "extra_bets", "custom_bets")


def upgrade_record(data: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :class:`EnvConfig` that a saved record (or an older ``env.json``'s
    ``env_kwargs``) describes: see :meth:`EnvConfig.from_record`."""
    out = dict(data)
    allowed = list(parameters()) + list(_OLD_KEYS)
    unknown = [k for k in out if k not in allowed]
    if unknown:
        raise ValueError(
            f"env.json: unknown environment setting {unknown[0]!r}; allowed: {', '.join(parameters())} "
            f"(and the older {', '.join(_OLD_KEYS)})"
        )
    if "flatten_obs" in out:  # the older name of observation= (True: flat, False: dict)
        flat = out.pop("flatten_obs")
        out.setdefault("observation", "flat" if flat else "dict")
    for key, value in LEGACY_DEFAULTS.items():
        out.setdefault(key, value)
    extra = list(out.pop("extra_bets", None) or ())
    custom = {d["name"]: d for d in out.pop("custom_bets", None) or () if isinstance(d, Mapping)}
    if extra or custom:
        rules = out.get("rules")
        side = out.get("side_bets")
        if side is None and isinstance(rules, Mapping):
            side = rules.get("side_bets")
        if side is None:
            side = rules.side_bets if isinstance(rules, Rules) else R.SIDE_BETS
        side = [side] if isinstance(side, str) else list(side)
        out["side_bets"] = tuple(custom.get(b, b) if isinstance(b, str) else b for b in side + extra)
    for key in ("side_bets", "stake_levels", "leaks"):
        if isinstance(out.get(key), list):
            out[key] = tuple(out[key])
    return out
