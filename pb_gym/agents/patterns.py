"""Road patterns as betting systems: a pattern over the roads picks the side, a progression sizes the stake.

Players bet by the roads (:mod:`pb_gym.roads`). A :class:`RoadPattern` follows each table's roads
hand by hand (:class:`pb_gym.roads.RoadTracker`, restarted at every new shoe) and, before each hand,
asks its ``pattern`` for banker, player or no bet; the stake is whatever the ``stake`` progression
(any system of :mod:`pb_gym.agents.systems` that only sizes a stake: flat, Martingale, Paroli, ...)
asks for. The progression sees only the hands the pattern bets (no bet: its state does not move).
The patterns (``after`` is ``n``):

* ``streak``: follow the dragon: after ``n`` or more in a row (the current Big Road column ``n`` long),
  bet the same side again.
* ``chop``: after the last ``n`` decisions alternated (``n = 1``: after any decision), bet the other
  side.
* ``copy_column``: expect the current Big Road column to be as long as the previous one: shorter, bet
  the same side; as long, bet the other side (the column ends); longer, no bet.
* ``double``: BB-PP: after a column of exactly two, bet that the next column is two too (same side
  after its first entry, the other side after its second).
* ``ask_majority``: bet the side whose result would make most derived roads red (the ask road); no bet
  on a draw.
* ``ask_unanimous``: bet only when all three derived roads would mark red for the same side.
* ``rules``: a user's pattern (:func:`check_rules`): rules over the last marks of each road, the first
  that matches decides.

Ties push banker and player bets and leave the roads' columns alone (a tie is no decision).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import numpy as np
from annotated_types import Ge, Le

from pb_gym import roads
from pb_gym import rules as R
from pb_gym.agents import systems

PATTERNS = ("streak", "chop", "copy_column", "double", "ask_majority", "ask_unanimous", "rules")
"""The patterns a :class:`RoadPattern` may follow."""
PROGRESSIONS = (
    "flat",
    "martingale",
    "grand_martingale",
    "paroli",
    "reverse_martingale",
    "dalembert",
    "fibonacci",
    "labouchere",
    "one_three_two_six",
    "oscars_grind",
)
"""The systems that may size a pattern's stake (they bet one side and only size the stake)."""
MEMORY = 8
"""Marks of each road a pattern may look back on."""
ROAD_NAMES = ("big_road", *roads.DERIVED_ROADS)
"""The roads a user's rule may read, in the tracker's order."""
MARKS = {"big_road": {"B": 1, "P": -1}, **{name: {"red": 1, "blue": -1} for name in roads.DERIVED_ROADS}}
"""The marks of each road a rule may name, and their codes in :attr:`pb_gym.roads.RoadTracker.history`."""
RULE_BETS = ("banker", "player", "same", "opposite", "none")
"""What a rule bets: a side, the last decision's side (``same``), the other one, or nothing."""


def check_rules(rules: Sequence[Mapping[str, Any]]) -> tuple[tuple[dict[str, tuple[int, ...]], str], ...]:
    """Validate a user's pattern and return it coded: ``({road: marks, ...}, bet)`` per rule.

    A rule is a mapping ``{"when": {road: [marks, newest last], ...}, "bet": ...}``: roads among
    :data:`ROAD_NAMES` (Big Road marks ``B`` / ``P``, the derived roads' ``red`` / ``blue``), at most
    :data:`MEMORY` marks each, and ``bet`` one of :data:`RULE_BETS`. A ValueError names the rule and
    the key, e.g. ``rules.1.when.small_road: 'green' is not allowed; allowed: red, blue``."""
    if isinstance(rules, (str, Mapping)) or not isinstance(rules, Sequence) or not rules:
        raise ValueError("rules: a non-empty list of rules is needed ({when: {road: [marks]}, bet: ...})")
    coded = []
    for i, rule in enumerate(rules):
        where = f"rules.{i}"
        if not isinstance(rule, Mapping):
            raise ValueError(f"{where}: a mapping with keys when, bet is needed")
        unknown = sorted(set(rule) - {"when", "bet"})
        if unknown:
            raise ValueError(f"{where}.{unknown[0]}: unknown key; allowed keys here: when, bet")
        bet = rule.get("bet")
        if bet not in RULE_BETS:
            raise ValueError(f"{where}.bet: {bet!r} is not allowed; allowed: {', '.join(RULE_BETS)}")
        when = rule.get("when")
        if not isinstance(when, Mapping) or not when:
            raise ValueError(
                f"{where}.when: a mapping of road: [marks] is needed; roads: {', '.join(ROAD_NAMES)}"
            )
        condition = {}
        for road, marks in when.items():
            if road not in MARKS:
                raise ValueError(f"{where}.when.{road}: unknown road; allowed: {', '.join(ROAD_NAMES)}")
            if isinstance(marks, str) or not isinstance(marks, Sequence) or not 1 <= len(marks) <= MEMORY:
                raise ValueError(
                    f"{where}.when.{road}: a list of 1 to {MEMORY} marks is needed "
                    f"(newest last); allowed marks: {', '.join(MARKS[road])}"
                )
            for mark in marks:
                if mark not in MARKS[road]:
                    raise ValueError(
                        f"{where}.when.{road}: {mark!r} is not allowed; allowed: {', '.join(MARKS[road])}"
                    )
            condition[road] = tuple(MARKS[road][mark] for mark in marks)
        coded.append((condition, str(bet)))
    return tuple(coded)


def decide(
    pattern: str,
    tracker: roads.RoadTracker,
    after: int = 3,
    rules: Sequence[tuple[Mapping[str, tuple[int, ...]], str]] = (),
) -> np.ndarray:
    """The side each table's ``pattern`` bets next (:data:`pb_gym.rules.BANKER` or ``PLAYER``), -1 no
    bet (see the module docstring; ``rules`` coded by :func:`check_rules`)."""
    n = tracker.n
    last = tracker.last
    # the other side of the last decision (-1 before the first)
    other = np.select([last == R.BANKER, last == R.PLAYER], [R.PLAYER, R.BANKER], -1)
    current, previous = tracker.lengths[:, 0], tracker.lengths[:, 1]
    none = np.full(n, -1, dtype=np.int64)
    if pattern == "streak":
        return np.where(current >= after, last, none)
    if pattern == "chop":
        recent = tracker.history[:, 0, -after:]
        alternated = np.all(recent != 0, axis=1) & np.all(recent[:, 1:] != recent[:, :-1], axis=1)
        return np.where(alternated, other, none)
    if pattern == "copy_column":
        two = tracker.columns >= 2
        return np.where(two & (current < previous), last, np.where(two & (current == previous), other, none))
    if pattern == "double":
        established = (tracker.columns >= 2) & (previous == 2)
        return np.where(
            established & (current == 1), last, np.where(established & (current == 2), other, none)
        )
    if pattern in ("ask_majority", "ask_unanimous"):
        ask = tracker.ask()
        reds = (ask == 1).sum(axis=2)  # (n, 2): reds after a banker, after a player
        if pattern == "ask_majority":
            return np.where(reds[:, 0] > reds[:, 1], 0, np.where(reds[:, 1] > reds[:, 0], 1, none))
        return np.where(reds[:, 0] == 3, 0, np.where(reds[:, 1] == 3, 1, none))
    if pattern == "rules":
        side = none.copy()
        undecided = np.ones(n, dtype=bool)
        for condition, bet in rules:
            match = undecided.copy()
            for road, marks in condition.items():
                recent = tracker.history[:, ROAD_NAMES.index(road), -len(marks) :]
                match &= np.all(recent == np.array(marks), axis=1)
            chosen = {
                "banker": np.zeros(n, dtype=np.int64),
                "player": np.ones(n, dtype=np.int64),
                "same": last,
                "opposite": other,
                "none": none,
            }[bet]
            side[match] = chosen[match]
            undecided &= ~match
        return side
    raise ValueError(f"pattern={pattern!r} is not allowed; allowed: {', '.join(PATTERNS)}")


class RoadPattern(systems.BettingSystem):
    """A road pattern picks banker, player or no bet; the ``stake`` progression sizes the stake.

    Args:
        pattern: one of :data:`PATTERNS` (the module docstring says what each bets).
        after: ``n`` of ``streak`` (n in a row) and ``chop`` (n alternations), 1 to 8.
        rules: a user's pattern (``pattern: rules``): see :func:`check_rules`.
        stake: the progression that sizes the stake: ``{"type": one of PROGRESSIONS, its options}``
            (default flat); ``base`` and ``on_cap`` are the pattern's own.
    """

    key = "road_pattern"
    not_configurable = ("bet",)

    def __init__(
        self,
        pattern: Literal[
            "streak", "chop", "copy_column", "double", "ask_majority", "ask_unanimous", "rules"
        ] = "streak",
        after: Annotated[int, Ge(1), Le(MEMORY)] = 3,
        rules: Sequence[Mapping[str, Any]] | None = None,
        stake: Mapping[str, Any] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if pattern not in PATTERNS:
            raise ValueError(f"pattern={pattern!r} is not allowed; allowed: {', '.join(PATTERNS)}")
        if not 1 <= after <= MEMORY:
            raise ValueError(f"after={after!r} is not allowed; allowed: 1 to {MEMORY}")
        if (pattern == "rules") != (rules is not None):
            raise ValueError("rules: needed with pattern: rules, and only then")
        self.pattern = pattern
        self.after = int(after)
        self.rules = check_rules(rules) if rules is not None else ()
        self.progression = make_progression(stake, self.base, self.on_cap)

    def reset(self, n_tables: int, rng: np.random.Generator | None = None) -> None:
        super().reset(n_tables, rng)
        self.progression.reset(n_tables, rng)
        self.tracker = roads.RoadTracker(n_tables, memory=MEMORY)
        self.shoe = np.full(n_tables, -1, dtype=np.int64)

    def bet_columns(self) -> tuple[int, ...]:
        return (systems.BANKER_SPOT, systems.PLAYER_SPOT)

    def propose(self, view: systems.TableView) -> systems.Proposal:
        side = decide(self.pattern, self.tracker, self.after, self.rules)
        stake = self.progression.propose(view)
        column = np.where(
            side == 0, systems.BANKER_SPOT, np.where(side == 1, systems.PLAYER_SPOT, systems.NO_BET)
        )
        return stake._replace(column=column.astype(np.int64))

    def update(self, view: systems.TableView, outcome: systems.HandOutcome) -> None:
        self.progression.update(view, outcome)
        if view.hand is None:
            return
        if view.shoe is not None:  # a new shoe: new roads
            started = np.asarray(view.shoe.shoes_started)
            self.tracker.restart(started != self.shoe)
            self.shoe = started.astype(np.int64).copy()
        self.tracker.record(np.asarray(view.hand.winner))


def make_progression(stake: Mapping[str, Any] | None, base: float, on_cap: str) -> systems.BettingSystem:
    """The progression a pattern's ``stake`` entry names (default flat), at the pattern's base stake
    and table-maximum policy; a ValueError names the key at fault."""
    options = dict(stake or {"type": "flat"})
    kind = options.pop("type", None)
    if kind not in PROGRESSIONS:
        raise ValueError(f"stake.type: {kind!r} is not allowed; allowed: {', '.join(PROGRESSIONS)}")
    for key in ("base", "on_cap", "bet", "name"):
        if key in options:
            raise ValueError(f"stake.{key}: set on the pattern itself, not in its stake")
    try:
        return systems.SYSTEMS[kind](base=base, on_cap=on_cap, **options)  # type: ignore[arg-type]
    except TypeError as error:
        raise ValueError(f"stake ({kind}): {error}") from None


PATTERN_SYSTEMS: dict[str, type[systems.BettingSystem]] = {RoadPattern.key: RoadPattern}
"""The pattern systems by their config ``type``."""

__all__ = ["PATTERNS", "PROGRESSIONS", "RoadPattern", "check_rules", "decide", "make_progression"]
