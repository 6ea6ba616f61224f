"""Exact optimal play of a baccarat session: how to gamble if you must, at a real table.

The problem: Dubins & Savage's (*How to Gamble If You Must: Inequalities for Stochastic Processes*,
McGraw-Hill, 1965) at a baccarat table. A player holds a bankroll ``B`` (table units) and wants to reach
a goal ``G > B`` within ``H`` hands. Before each hand they sit out or stake whole units ``s`` on one
offered bet, ``table_min <= s <= table_max`` and ``s <= bankroll``. Hands are independent deals from a
full shoe: each bet's net return per unit has the shoe's exact distribution (:func:`bet_outcomes`, from
:func:`pb_gym.exact.hand_class_counts` and the catalog's paytables). The session is won (value 1) when
the bankroll reaches ``G``, and lost (value 0) when the hands run out first; a bankroll under the table
minimum can stake nothing more.

The lattice. Every amount is exact: a payout ``p/q`` per unit puts bankrolls on multiples of ``1/q``
unit, so the bankroll lives on the lattice of ``1/L`` unit with ``L`` the least common multiple of the
denominators of the offered bets' payouts (the banker's 19:20 makes ``L = 20``). A bankroll is an
integer count of *ticks* (``1/L`` unit); stakes and payouts are integer ticks, and nothing is rounded.
A payout that is no rational with denominator at most :data:`MAX_DENOMINATOR` is refused.

The solution. Backward induction over (hands left ``h``, bankroll tick ``b``)::

    V[0][b] = 0 for b < G,   V[h][b] = 1 for b >= G,
    V[h][b] = max(V[h-1][b], max over legal (bet, s) of sum_o p_o V[h-1][min(b + s r_o, G)])

vectorized over the bankrolls with numpy (:func:`solve`). Any other policy is valued by the same
recursion without the maximum (:func:`evaluate`); bold and timid play are given as tables
(:func:`bold_play`, :func:`timid_play`).

Ties. Where the goal is out of reach (every action is worth exactly 0) the player sits out. Elsewhere
the bets are ranked, the smaller stake first, then the bets in catalog order (:attr:`Session.bets` is
kept in that order), and no bet last; the chosen action is the first in that ranking whose value is
within :data:`TIE_TOLERANCE` of the best value, so floating-point noise never picks an action. No bet
ranks last because with hands to spare sitting a hand out is worth the same within the tolerance:
ranked first it would be chosen until the last hands, and the policy would wait out the session and
lose up to the tolerance. :attr:`Solution.values` holds the chosen actions' values, i.e. the value
of the returned policy (each within the tolerance of the maximum at its state).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from pb_gym import catalog, exact, suited
from pb_gym import rules as R
from pb_gym.rules import Rules

NO_BET = -1
"""The bet code of sitting a hand out (stake 0) in :class:`PolicyTable` and :class:`Solution`."""
TIE_TOLERANCE = 1e-12
"""Actions whose values differ by at most this are tied; the ranking of the module docstring decides."""
MAX_DENOMINATOR = 1000
"""The largest denominator a payout per unit may have (19:20 has 20)."""
MAX_CELLS = 20_000_000
"""The most cells, ``(hands + 1) x (goal ticks + 1)``, of a value table (about 250 MB of tables)."""
CHUNK_CELLS = 4_000_000
"""Action values computed at once, ``stakes x bets x bankroll ticks`` (stakes are taken in chunks)."""
DEFAULT_BETS: tuple[str, ...] = ("banker", "player", "tie")

Amount = int | float | Fraction | Decimal
"""An amount in table units: an int, or a decimal on the bankroll lattice (``10.5``, ``Fraction(39, 2)``)."""
_NUMBERS = (int, np.integer, float, np.floating, Fraction, Decimal)


# ---- The session and its exact outcome distributions -----------------------------------------------
@dataclasses.dataclass(frozen=True)
class BetOutcomes:
    """One bet's exact distribution of net return per unit staked, for one hand from a full shoe.

    ``pays`` are the distinct net returns per unit (ascending; ``-1`` a loss, ``0`` a push) and
    ``counts`` the deals giving each, out of ``total`` (ordered six-card deals for a bet settled by rank;
    first-four-card deals, the published convention, for a bet on suits)."""

    name: str
    pays: tuple[Fraction, ...]
    counts: tuple[int, ...]
    total: int

    @property
    def probabilities(self) -> np.ndarray:
        """``counts / total`` as float64, ``(n_outcomes,)`` (each correctly rounded)."""
        return np.array([count / self.total for count in self.counts])


def _exact_pay(value: float, bet: str) -> Fraction:
    """A float payout as the small rational it stands for (0.95 -> 19/20), or a ValueError."""
    pay = Fraction(value).limit_denominator(MAX_DENOMINATOR)
    if abs(float(pay) - value) > 1e-9 * max(1.0, abs(value)):
        raise ValueError(
            f"bets: {bet!r} pays {value!r} per unit, not a rational with denominator <= {MAX_DENOMINATOR}; "
            "the bankroll lattice needs exact payouts"
        )
    return pay


@functools.lru_cache(maxsize=64)
def _outcomes(name: str, rules: Rules) -> BetOutcomes:
    bet = catalog.get_bet(name, rules)
    column = bet.column()
    if bet.suited:
        counts = np.array(suited.suit_class_counts(suited.suited_shoe(rules.decks)), dtype=object)
    else:
        counts = exact.hand_class_counts(R.full_shoe(rules.decks)).astype(object)
    values = np.unique(column)
    return BetOutcomes(
        name=name,
        pays=tuple(_exact_pay(float(v), name) for v in values),
        counts=tuple(int(counts[column == v].sum()) for v in values),
        total=int(counts.sum()),
    )


@functools.lru_cache(maxsize=64)
def exact_payouts(bets: tuple[str, ...], rules: Rules) -> dict[str, list[Fraction]]:
    """Each bet's distinct payouts per unit as exact rationals (0.95 -> 19/20); a ValueError naming the
    bet for a payout that is no rational with denominator at most :data:`MAX_DENOMINATOR`."""
    return {
        name: [_exact_pay(float(v), name) for v in np.unique(catalog.get_bet(name, rules).column())]
        for name in bets
    }


def ticks_per_unit(bets: tuple[str, ...], rules: Rules) -> int:
    """The bankroll lattice of ``bets``: the lcm of the denominators of all their payouts."""
    return math.lcm(*(pay.denominator for row in exact_payouts(bets, rules).values() for pay in row))


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _fraction(value: object, field: str) -> Fraction:
    """An amount in units as an exact Fraction (a float is read as the decimal it prints as)."""
    if _is_int(value):
        return Fraction(int(value))  # type: ignore[call-overload]  # checked int
    if isinstance(value, (float, np.floating)) and math.isfinite(value):
        return Fraction(repr(float(value)))
    if isinstance(value, (Fraction, Decimal)) and math.isfinite(value):
        return Fraction(value)
    raise ValueError(f"{field} must be a number of units: an int or a finite decimal (got {value!r})")


def _units(ticks: int | np.integer, ticks_per_unit: int) -> int | float:
    """An amount for reports: an int when whole, else the float of the exact value."""
    whole, rest = divmod(int(ticks), ticks_per_unit)
    return whole if rest == 0 else int(ticks) / ticks_per_unit


@dataclasses.dataclass(frozen=True, kw_only=True)
class Session:
    """A session to win: reach ``goal`` from ``bankroll`` within ``hands`` hands, validated on
    construction (each error names its field and what is allowed).

    Args:
        bankroll: the starting bankroll in units (an int, or a decimal on the lattice), at least
            ``table_min``.
        goal: the bankroll to reach, above ``bankroll`` (an int or a decimal on the lattice).
        hands: the most hands the session may last, an integer >= 1.
        table_min: the smallest stake, a whole number of units >= 1.
        table_max: the largest stake in whole units (>= ``table_min``); None: no maximum (the bankroll
            caps the stake).
        bets: the bets offered, names from :func:`pb_gym.catalog.bet_names`; kept in catalog order
            (the order of the tie-break).
        decks: decks in the shoe, 1 to 8.
        rules: the table's payouts (commission, tie pays, side-bet pays); None: ``Rules(decks=decks)``.
            Its ``decks`` must equal ``decks``.
    """

    bankroll: Amount
    goal: Amount
    hands: int
    table_min: int = 1
    table_max: int | None = None
    bets: tuple[str, ...] = DEFAULT_BETS
    decks: int = 8
    rules: Rules | None = None

    def __post_init__(self) -> None:
        self._check_table()
        for name in ("hands", "table_min", "table_max", "decks"):  # (numpy ints as plain ints)
            object.__setattr__(self, name, None if getattr(self, name) is None else int(getattr(self, name)))
        self._check_bets()
        self._check_amounts()

    def _check_table(self) -> None:
        if not _is_int(self.decks) or not 1 <= self.decks <= R.MAX_DECKS:
            raise ValueError(f"decks must be an integer from 1 to {R.MAX_DECKS} (got {self.decks!r})")
        if self.rules is not None and not isinstance(self.rules, Rules):
            raise ValueError(f"rules must be a pb_gym.Rules or None (got {type(self.rules).__name__})")
        if self.rules is not None and self.rules.decks != self.decks:
            raise ValueError(f"rules.decks must equal decks ({self.decks}) (got {self.rules.decks})")
        if not _is_int(self.table_min) or self.table_min < 1:
            raise ValueError(f"table_min must be a whole number of units >= 1 (got {self.table_min!r})")
        top = self.table_max
        if top is not None and (not _is_int(top) or top < self.table_min):
            raise ValueError(f"table_max must be None (no maximum) or whole units >= table_min (got {top!r})")
        if not _is_int(self.hands) or self.hands < 1:
            raise ValueError(f"hands must be an integer >= 1 (got {self.hands!r})")

    def _check_bets(self) -> None:
        bets = (self.bets,) if isinstance(self.bets, str) else self.bets
        if not isinstance(bets, (tuple, list)) or not bets:
            raise ValueError(f"bets must be a non-empty list of bet names (got {self.bets!r})")
        names = catalog.bet_names(self.table_rules)
        for bet in bets:
            if bet not in names:
                raise ValueError(f"bets: unknown bet {bet!r}; the catalog's bets are: {', '.join(names)}")
        if len(set(bets)) != len(bets):
            raise ValueError(f"bets must name each bet once (got {list(bets)})")
        object.__setattr__(self, "bets", tuple(name for name in names if name in bets))

    def _check_amounts(self) -> None:
        ticks = self.ticks_per_unit  # (refuses a payout off every small lattice)
        bankroll, goal = _fraction(self.bankroll, "bankroll"), _fraction(self.goal, "goal")
        for field, amount in (("bankroll", bankroll), ("goal", goal)):
            if (amount * ticks).denominator != 1:
                raise ValueError(
                    f"{field} must be on the lattice of 1/{ticks} unit (the payouts of "
                    f"{', '.join(self.bets)}) (got {getattr(self, field)!r})"
                )
        if bankroll < self.table_min:
            raise ValueError(f"bankroll must be >= table_min ({self.table_min}) (got {self.bankroll!r})")
        if goal <= bankroll:
            raise ValueError(f"goal must be above the bankroll ({self.bankroll!r}) (got {self.goal!r})")
        cells = (self.hands + 1) * (self.goal_ticks + 1)
        if cells > MAX_CELLS:
            raise ValueError(
                f"hands must be fewer or goal smaller ({cells:,} value cells, above {MAX_CELLS:,})"
            )

    # ---- derived figures ------------------------------------------------------------------------
    @property
    def table_rules(self) -> Rules:
        """The rules that pay the bets: ``rules``, or ``Rules(decks=decks)``."""
        return self.rules if self.rules is not None else Rules(decks=int(self.decks))

    @property
    def ticks_per_unit(self) -> int:
        """``L``: bankrolls are whole multiples of ``1/L`` unit (the lcm of the payouts' denominators)."""
        return ticks_per_unit(tuple(self.bets), self.table_rules)

    @property
    def bankroll_ticks(self) -> int:
        """The starting bankroll in ticks."""
        return int(_fraction(self.bankroll, "bankroll") * self.ticks_per_unit)

    @property
    def goal_ticks(self) -> int:
        """The goal in ticks: the states are bankrolls ``0 .. goal_ticks - 1`` and the goal reached."""
        return int(_fraction(self.goal, "goal") * self.ticks_per_unit)


def bet_outcomes(session: Session) -> tuple[BetOutcomes, ...]:
    """Each offered bet's exact distribution of net return per unit, in :attr:`Session.bets` order.

    Args:
        session: the session (its bets, decks and rules).

    Returns:
        One :class:`BetOutcomes` per bet.
    """
    return tuple(_outcomes(name, session.table_rules) for name in session.bets)


@dataclasses.dataclass(frozen=True)
class _Model:
    """The recursion's arrays: live bankrolls ``0 .. n-1`` ticks (``n`` the goal reached), the stakes
    (whole units), per bet its outcomes' shifts (ticks per unit staked) and probabilities, and
    ``legal[s, b]``: stake ``s`` is at most bankroll ``b``."""

    n: int
    stakes: np.ndarray
    shifts: tuple[np.ndarray, ...]
    probabilities: tuple[np.ndarray, ...]
    legal: np.ndarray


def _model(session: Session) -> _Model:
    ticks, n = session.ticks_per_unit, session.goal_ticks
    # every stake some bankroll under the goal may place, whole units ascending
    top = (n - 1) // ticks if session.table_max is None else min((n - 1) // ticks, int(session.table_max))
    stakes = np.arange(int(session.table_min), top + 1, dtype=np.int64)
    outcomes = bet_outcomes(session)
    shifts = tuple(np.array([int(pay * ticks) for pay in o.pays], dtype=np.int64) for o in outcomes)
    legal = stakes[:, None] * ticks <= np.arange(n)[None, :]
    return _Model(n, stakes, shifts, tuple(o.probabilities for o in outcomes), legal)


# ---- Policies and the solution ---------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PolicyTable:
    """A policy as two ``(hands + 1, goal ticks + 1)`` tables indexed ``[hands left, bankroll tick]``.

    ``bet`` is an index into :attr:`Session.bets` or :data:`NO_BET`; ``stake`` the stake in whole units
    (0 with no bet). Row 0 (no hands left) and the last column (the goal reached) are not read."""

    bet: np.ndarray
    stake: np.ndarray


PolicyFunction = Callable[[Fraction, int], tuple[str, int] | None]
"""A policy as a function of (bankroll in units, exact; hands left) -> ``(bet name, stake)`` or None."""
Policy = PolicyTable | PolicyFunction


@dataclasses.dataclass(frozen=True)
class Solution:
    """The optimal policy of a :class:`Session` and its value at every state.

    Tables are ``(hands + 1, goal ticks + 1)``, indexed ``[hands left, bankroll tick]``; the last
    column is the goal reached (value 1, no bet). Read them in units with :meth:`value` and
    :meth:`action`."""

    session: Session
    values: np.ndarray
    bet: np.ndarray
    stake: np.ndarray

    @property
    def p_goal(self) -> float:
        """The optimal probability of reaching the goal from the starting bankroll with every hand."""
        return float(self.values[self.session.hands, self.session.bankroll_ticks])

    @property
    def policy(self) -> PolicyTable:
        """The optimal policy as a table :func:`evaluate` reads."""
        return PolicyTable(bet=self.bet, stake=self.stake)

    def _hands(self, hands_left: int) -> int:
        if not _is_int(hands_left) or not 0 <= hands_left <= self.session.hands:
            raise ValueError(f"hands_left must be an integer, 0 to {self.session.hands} (got {hands_left!r})")
        return int(hands_left)

    def _state(self, bankroll: Amount, hands_left: int) -> tuple[int, int]:
        lattice = self.session.ticks_per_unit
        ticks = _fraction(bankroll, "bankroll") * lattice
        if ticks.denominator != 1 or ticks < 0:
            raise ValueError(f"bankroll must be >= 0, on the lattice of 1/{lattice} unit (got {bankroll!r})")
        return min(int(ticks), self.session.goal_ticks), self._hands(hands_left)

    def value(self, bankroll: Amount, hands_left: int) -> float:
        """The optimal probability of reaching the goal from ``bankroll`` (units) with ``hands_left``."""
        b, h = self._state(bankroll, hands_left)
        return float(self.values[h, b])

    def action(self, bankroll: Amount, hands_left: int) -> tuple[str, int] | None:
        """The optimal action at ``bankroll`` (units) with ``hands_left``: ``(bet name, stake in whole
        units)``, or None for no bet."""
        b, h = self._state(bankroll, hands_left)
        k = int(self.bet[h, b])
        return None if k == NO_BET else (self.session.bets[k], int(self.stake[h, b]))

    def runs(self, hands_left: int, states: np.ndarray | None = None) -> list[dict]:
        """The optimal actions with ``hands_left`` as runs of one action, bankrolls ascending:
        ``{"from": b0, "to": b1, "bet": name or None, "stake": s}`` (in units, both ends included),
        over the bankroll ticks of the boolean mask ``states`` (a run covers those from ``b0`` to
        ``b1``), or (None) every bankroll from the table minimum to under the goal."""
        h, ticks = self._hands(hands_left), self.session.ticks_per_unit
        if states is None:
            states = np.arange(self.session.goal_ticks) >= int(self.session.table_min) * ticks
        where = np.flatnonzero(states)
        bet, stake = self.bet[h, where], self.stake[h, where]
        change = np.flatnonzero((bet[1:] != bet[:-1]) | (stake[1:] != stake[:-1])) + 1
        bounds = zip(np.concatenate([[0], change]), np.concatenate([change, [len(where)]]) - 1, strict=True)
        names = (*self.session.bets, None)  # (NO_BET indexes the last)
        return [
            {
                "from": _units(where[a], ticks),
                "to": _units(where[z], ticks),
                "bet": names[bet[a]],
                "stake": int(stake[a]),
            }
            for a, z in (bounds if len(where) else ())
        ]

    def to_json(self, states: str = "reachable") -> dict:
        """A JSON-ready summary of the solution.

        Args:
            states: ``"reachable"``: the policy at the states the optimal play reaches from the start
                with positive probability (:func:`state_distribution`); ``"all"``: at every bankroll
                from the table minimum to under the goal.

        Returns:
            ``session`` (its fields, amounts in units), ``ticks_per_unit``, ``p_goal``, ``start`` (the
            optimal action at the start: ``{"bet", "stake"}`` or None), ``expected_hands`` (the expected
            number of hands played on each bet, and sat out at a live bankroll under ``"no bet"``)
            and ``policy``: for each number of hands left, keys ``"H"`` down to ``"1"``, the runs of
            :meth:`runs` (a number of hands left with no reachable live state is left out).
        """
        if states not in ("reachable", "all"):
            raise ValueError(f"states must be 'reachable' or 'all' (got {states!r})")
        session, n, ticks = self.session, self.session.goal_ticks, self.session.ticks_per_unit
        occupancy = state_distribution(session, self.policy)
        live = np.arange(n) >= int(session.table_min) * ticks
        shown = live & (
            occupancy[:, :n] > 0 if states == "reachable" else occupancy[:, :n] >= 0
        )  # (>= 0: all)
        at_live = occupancy[1:, :n] * live
        expected = {name: float(at_live[self.bet[1:, :n] == k].sum()) for k, name in enumerate(session.bets)}
        expected["no bet"] = float(at_live[self.bet[1:, :n] == NO_BET].sum())
        start = self.action(session.bankroll, session.hands)
        return {
            "session": {
                **{name: getattr(session, name) for name in ("hands", "table_min", "table_max", "decks")},
                "bankroll": _units(session.bankroll_ticks, ticks),
                "goal": _units(n, ticks),
                "bets": list(session.bets),
            },
            "ticks_per_unit": ticks,
            "p_goal": self.p_goal,
            "start": None if start is None else {"bet": start[0], "stake": start[1]},
            "expected_hands": expected,
            "policy": {str(h): self.runs(h, shown[h]) for h in range(session.hands, 0, -1) if shown[h].any()},
        }


# ---- Backward induction ----------------------------------------------------------------------------
def _action_values(previous: np.ndarray, model: _Model, part: slice) -> np.ndarray:
    """Values of the actions (stake in ``part``, bet), stake-major, ``(len(part) x bets, n)``; an
    illegal stake is ``-inf``."""
    # windows[below + d][b] is V[h-1] at bankroll b + d: 0 under 0 (illegal stakes only), 1 over the goal
    top = int(model.stakes[-1])
    below = top * max(0, -min(int(s.min()) for s in model.shifts))
    above = top * max(0, max(int(s.max()) for s in model.shifts))
    windows = sliding_window_view(np.concatenate([np.zeros(below), previous, np.ones(above)]), model.n)
    stakes = model.stakes[part]
    out = np.zeros((len(stakes), len(model.shifts), model.n))
    for k, (shifts, probabilities) in enumerate(zip(model.shifts, model.probabilities, strict=True)):
        for shift, p in zip(shifts, probabilities, strict=True):
            out[:, k, :] += p * windows[below + stakes * shift]
    out[~np.broadcast_to(model.legal[part][:, None, :], out.shape)] = -np.inf
    return out.reshape(-1, model.n)


def _best_actions(previous: np.ndarray, model: _Model) -> tuple[np.ndarray, np.ndarray]:
    """The chosen action (0: no bet, ``1 + stake index x bets + bet index``) and its value in each live
    state, by the tie-break of the module docstring; two passes over the stakes (the best value, then
    the first bet within the tolerance of it) when they come in more than one chunk."""
    n, n_bets = model.n, len(model.shifts)
    step = max(1, CHUNK_CELLS // (n_bets * n))
    parts = [slice(i, i + step) for i in range(0, len(model.stakes), step)]
    kept: list[np.ndarray] = []
    best = previous[:n].copy()
    for part in parts:
        values = _action_values(previous, model, part)
        best = np.maximum(best, values.max(axis=0))
        if len(parts) == 1:
            kept.append(values)
    threshold = best - TIE_TOLERANCE
    # the goal out of reach: every action is worth exactly 0 (sums of zeros), and no bet is chosen
    chosen = np.where(best == 0.0, 0, -1)
    value = np.zeros(n)
    for i, part in enumerate(parts):
        open_states = chosen < 0
        if not open_states.any():
            break
        values = kept[i] if kept else _action_values(previous, model, part)
        within = values >= threshold
        first = within.argmax(axis=0)
        hit = np.flatnonzero(open_states & within.any(axis=0))
        chosen[hit] = 1 + part.start * n_bets + first[hit]
        value[hit] = values[first[hit], hit]
    # left: no bet beats every bet by more than the tolerance
    sit = chosen < 0
    chosen[sit], value[sit] = 0, previous[:n][sit]
    return chosen, value


def solve(session: Session) -> Solution:
    """The optimal policy of ``session`` by backward induction, exact on the bankroll lattice.

    Args:
        session: the session to win.

    Returns:
        The :class:`Solution`: ``p_goal``, the value table and the optimal actions (ties broken as the
        module docstring says).
    """
    model = _model(session)
    hands, n, n_bets = int(session.hands), model.n, len(model.shifts)
    values = np.zeros((hands + 1, n + 1))
    values[:, n] = 1.0
    bet = np.full((hands + 1, n + 1), NO_BET, dtype=np.int16)
    stake = np.zeros((hands + 1, n + 1), dtype=np.int64)
    for h in range(1, hands + 1):
        chosen, values[h, :n] = _best_actions(values[h - 1], model)
        action, placed = chosen - 1, chosen > 0
        bet[h, :n] = np.where(placed, action % n_bets, NO_BET)
        stake[h, :n] = np.where(placed, model.stakes[action // n_bets], 0)
    for table in (values, bet, stake):
        table.setflags(write=False)
    return Solution(session=session, values=values, bet=bet, stake=stake)


# ---- Any policy's value; bold and timid play -------------------------------------------------------
def _state_text(session: Session, b: int, h: int) -> str:
    return f"at bankroll {_units(b, session.ticks_per_unit)} with {h} hand(s) left"


def _whole_stake(value: object, where: str) -> int:
    number = isinstance(value, _NUMBERS) and not isinstance(value, bool) and math.isfinite(value)
    if number and value == int(value):  # type: ignore[call-overload]  # a finite number
        return int(value)  # type: ignore[call-overload]
    raise ValueError(f"policy: {where}, the stake must be a whole number of units (got {value!r})")


def table_from_function(session: Session, policy: PolicyFunction) -> PolicyTable:
    """``policy``, a function of (bankroll in units as a Fraction, hands left) returning ``(bet name,
    stake in whole units)`` or None, as a :class:`PolicyTable`: called at every live state (a bankroll
    from the table minimum to under the goal), no bet elsewhere. A ValueError names the state of an
    action that is not ``(bet, stake)``, of a bet not offered or of a stake off whole units (the table
    limits and the bankroll are checked where a table is valued: :func:`policy_values`)."""
    ticks, n, offered = session.ticks_per_unit, session.goal_ticks, ", ".join(session.bets)
    bet = np.full((session.hands + 1, n + 1), NO_BET, dtype=np.int64)
    stake = np.zeros_like(bet)
    for h in range(1, session.hands + 1):
        for b in range(int(session.table_min) * ticks, n):
            action = policy(Fraction(b, ticks), h)
            if action is None:
                continue
            where = _state_text(session, b, h)
            if not isinstance(action, tuple) or len(action) != 2:
                raise ValueError(f"policy: {where}, an action must be (bet, stake) or None (got {action!r})")
            if action[0] not in session.bets:
                raise ValueError(f"policy: {where}, bet {action[0]!r} is not offered ({offered})")
            bet[h, b] = session.bets.index(action[0])
            stake[h, b] = _whole_stake(action[1], where)
    return PolicyTable(bet=bet, stake=stake)


def _check_table(session: Session, table: PolicyTable) -> tuple[np.ndarray, np.ndarray]:
    """The live part ``[1:, :n]`` of a policy table as int64 arrays, every action checked legal."""
    n, shape = session.goal_ticks, (session.hands + 1, session.goal_ticks + 1)
    for name in ("bet", "stake"):
        array = np.asarray(getattr(table, name))
        if array.shape != shape or array.dtype.kind not in "iu":
            raise ValueError(f"policy.{name} must be integers, shape {shape} (got {array.shape})")
    bet, stake = (np.asarray(a)[1:, :n].astype(np.int64) for a in (table.bet, table.stake))
    top = np.iinfo(np.int64).max if session.table_max is None else int(session.table_max)
    placed = bet != NO_BET
    for bad, why in (
        ((bet < NO_BET) | (bet >= len(session.bets)), f"the bet must be -1 or 0..{len(session.bets) - 1}"),
        (placed & (stake < session.table_min), f"the stake is below the table minimum ({session.table_min})"),
        (placed & (stake > top), f"the stake is above the table maximum ({session.table_max})"),
        (placed & (stake * session.ticks_per_unit > np.arange(n)), "the stake is above the bankroll"),
    ):
        if bad.any():
            h, b = np.argwhere(bad)[0]
            where = _state_text(session, int(b), int(h) + 1)
            raise ValueError(f"policy: {where}, {why} (bet {bet[h, b]}, stake {stake[h, b]})")
    return bet, np.where(placed, stake, 0)


def _steps(session: Session, policy: Policy, hands: range) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """For each ``h`` of ``hands``: the bankroll ticks the policy's action at ``(h, b)`` leads to and
    their probabilities, ``(n, outcomes)`` each (no bet: ``b`` with probability 1; the goal clipped to
    ``n``). The actions are checked first (:func:`_check_table`)."""
    table = policy if isinstance(policy, PolicyTable) else table_from_function(session, policy)
    bet, stake = _check_table(session, table)
    model = _model(session)
    # one row per bet padded with probability 0, and a last row (which NO_BET indexes) for no bet
    shifts = np.zeros((len(model.shifts) + 1, max(len(s) for s in model.shifts)), dtype=np.int64)
    probabilities = np.zeros(shifts.shape)
    for k, (s, p) in enumerate(zip(model.shifts, model.probabilities, strict=True)):
        shifts[k, : len(s)], probabilities[k, : len(p)] = s, p
    probabilities[-1, 0] = 1.0
    bankrolls = np.arange(model.n)[:, None]
    for h in hands:
        row = bet[h - 1]
        yield h, np.clip(bankrolls + stake[h - 1][:, None] * shifts[row], 0, model.n), probabilities[row]


def policy_values(session: Session, policy: Policy) -> np.ndarray:
    """The exact value of ``policy`` at every state, ``(hands + 1, goal ticks + 1)``.

    Args:
        session: the session.
        policy: a :class:`PolicyTable`, or a function of (bankroll in units as a Fraction, hands left)
            returning ``(bet name, stake in whole units)`` or None, called at every state with a
            bankroll from the table minimum to under the goal.

    Returns:
        The value table indexed ``[hands left, bankroll tick]`` (read-only).

    Raises:
        ValueError: an illegal action (a bet not offered; a stake off whole units, under the minimum,
            over the maximum or over the bankroll), naming its state.
    """
    n = session.goal_ticks
    values = np.zeros((session.hands + 1, n + 1))
    values[:, n] = 1.0
    for h, reached, probabilities in _steps(session, policy, range(1, session.hands + 1)):
        values[h, :n] = (probabilities * values[h - 1][reached]).sum(axis=1)
    values.setflags(write=False)
    return values


def state_distribution(session: Session, policy: Policy) -> np.ndarray:
    """Where ``policy`` takes the bankroll: the probability of each state, forward from the start.

    Args:
        session: the session.
        policy: as :func:`policy_values` takes it.

    Returns:
        ``(hands + 1, goal ticks + 1)``: row ``h`` the distribution of the bankroll tick with ``h``
        hands left (row ``hands`` the start; the last column the goal reached, which absorbs). Row 0
        is the end: the goal reached, a bankroll under the table minimum, or one left between.
    """
    n = session.goal_ticks
    out = np.zeros((session.hands + 1, n + 1))
    out[session.hands, session.bankroll_ticks] = 1.0
    for h, reached, probabilities in _steps(session, policy, range(session.hands, 0, -1)):
        weights = out[h, :n, None] * probabilities
        out[h - 1] = np.bincount(reached.ravel(), weights=weights.ravel(), minlength=n + 1)
        out[h - 1, n] += out[h, n]
    out.setflags(write=False)
    return out


def evaluate(session: Session, policy: Policy) -> float:
    """The exact probability that ``policy`` reaches the goal from the starting bankroll.

    Args:
        session: the session.
        policy: as :func:`policy_values` takes it (the errors too).

    Returns:
        ``policy_values(session, policy)[hands, bankroll tick]``.
    """
    return float(policy_values(session, policy)[session.hands, session.bankroll_ticks])


def _policy_on(session: Session, bet: str, stakes: np.ndarray) -> PolicyTable:
    """A stationary policy: ``stakes[b]`` units on ``bet`` at each bankroll tick (0: no bet)."""
    n = session.goal_ticks
    stake = np.zeros((session.hands + 1, n + 1), dtype=np.int64)
    stake[1:, :n] = stakes
    codes = np.where(stake > 0, session.bets.index(bet), NO_BET)
    return PolicyTable(bet=codes, stake=stake)


def _offered(session: Session, bet: str) -> None:
    if bet not in session.bets:
        raise ValueError(f"bet must be one of the session's bets ({', '.join(session.bets)}) (got {bet!r})")


def bold_play(session: Session, bet: str = "player") -> PolicyTable:
    """Dubins & Savage's bold play on one bet: stake what a win needs to reach the goal.

    From bankroll ``b`` the stake is ``ceil((G - b) / w)`` whole units, ``w`` the bet's largest payout
    per unit (1 on player; 0.95 on banker, so that 10.5 units win the last 10), capped by the bankroll
    (whole units) and the table maximum, and at least the table minimum; a bankroll under the minimum
    stakes nothing.

    Args:
        session: the session.
        bet: one of the session's bets.

    Returns:
        The policy as a :class:`PolicyTable`.
    """
    _offered(session, bet)
    ticks, n = session.ticks_per_unit, session.goal_ticks
    win = int(max(_outcomes(bet, session.table_rules).pays) * ticks)  # ticks won per unit staked (> 0)
    bankroll = np.arange(n)
    needed = -(-(n - bankroll) // win)
    top = np.minimum(needed, bankroll // ticks)
    if session.table_max is not None:
        top = np.minimum(top, int(session.table_max))
    stakes = np.where(bankroll // ticks >= session.table_min, np.maximum(top, session.table_min), 0)
    return _policy_on(session, bet, stakes)


def timid_play(session: Session, bet: str = "player", stake: int = 1) -> PolicyTable:
    """Flat betting: ``stake`` units on ``bet`` every hand (the whole units of a smaller bankroll, while
    they reach the table minimum).

    Args:
        session: the session.
        bet: one of the session's bets.
        stake: the flat stake in whole units, within the table's limits.

    Returns:
        The policy as a :class:`PolicyTable`.
    """
    _offered(session, bet)
    top = session.table_max
    if not _is_int(stake) or stake < session.table_min or (top is not None and stake > top):
        raise ValueError(f"stake must be whole units from table_min to table_max ({top}) (got {stake!r})")
    whole = np.arange(session.goal_ticks) // session.ticks_per_unit
    stakes = np.where(whole >= session.table_min, np.minimum(whole, int(stake)), 0)
    return _policy_on(session, bet, stakes)
