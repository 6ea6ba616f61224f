"""The protocol between a betting system and the evaluator: what a system sees, decides and learns.

The evaluator (:mod:`pb_gym.experiments.evaluate`) seats every system at a table session
(:class:`pb_gym.session.Session`: all systems share each table's hands) and calls, for every hand:

1. ``propose(view)`` -> :class:`Proposal`: everything the system decides, per table: the stake
   ``column`` of its bet (or :data:`NO_BET`), the stake in betting ``units`` (the table maximum
   applied) and where the table maximum bound (``capped``);
2. the session applies the table's stake rules (the table maximum, then the bankroll; a stake below
   the table minimum is not placed), deals the hand and settles;
3. ``update(view, outcome)`` with what happened (:class:`HandOutcome`): whether a bet was placed,
   win / loss / push, the units staked and won, and whether the table maximum cut the stake.

A system holds nothing between ``propose`` and ``update`` for the evaluator to read: what it decided is
in its :class:`Proposal`, and ``update`` gets the view again.

**Index spaces.** One name each, everywhere in the systems and the evaluator:

* a *spot* is an index into :data:`pb_gym.rules.BETS` (the seven spots of the rules);
* a *column* is a stake column of the table (:class:`pb_gym.catalog.TableBets`: the seven spots in
  their own order, so a spot is its own column, then the table's catalog or user bets); systems
  propose columns, and :meth:`BettingSystem.bind` maps each bet name to its column, the one place
  where names become indices;
* a *slot* is a stake column of the evaluator's table session, which keeps one for each column some
  seat may bet (:meth:`BettingSystem.bet_columns`): :func:`pb_gym.experiments.evaluate.slots` maps
  columns to slots;
* a learned policy's own action indices are mapped to columns by the policy
  (:class:`agents.learned.Sb3Policy`).

Conventions shared by every system (stated once here, and in each docstring where it matters):

* **Pushes.** A tie pushes banker and player bets (as does a banker three-card 7 under EZ rules): the
  stake is returned and the system's state does not move, so the same stake is offered again.
* **No bet placed** (session over, stake below the table minimum): the state does not move.
* **Table maximum** (``on_cap``): ``"cap"`` stakes the maximum and keeps the progression going (the
  next wanted stake is computed from the wanted, not the capped, stake); ``"reset"`` abandons the
  series as soon as the progression asks for more than the maximum and stakes one base unit instead
  (the losses of the series stay lost). The evaluator reports how often the maximum binds.
* **Bankroll.** A stake above the bankroll is cut to the whole bankroll (all-in); a bankroll below the
  table minimum is ruin.

The systems themselves are in :mod:`pb_gym.agents.systems`, which exports these names too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal, NamedTuple

import numpy as np
from annotated_types import Gt, Le, MinLen

from pb_gym import catalog, engine
from pb_gym import rules as R
from pb_gym.agents import staking
from pb_gym.session import Session

NO_BET = staking.NO_BET
BetName = Annotated[str, MinLen(1)]
"""A bet's name: one of :data:`pb_gym.rules.BETS`, a catalog side bet (:mod:`pb_gym.catalog`) or a
user's bet (``custom_bets:``) offered at the table; the table's columns
(:class:`pb_gym.catalog.TableBets`) say which (:meth:`BettingSystem.bind`)."""
Units = Annotated[float, Gt(0)]
"""A stake in betting units (> 0)."""
Probability = Annotated[float, Gt(0), Le(1)]
"""A probability or fraction in (0, 1]."""
BetNames = Annotated[Sequence[BetName], MinLen(1)]
"""A non-empty list of bet names (for systems that choose among several)."""
WIN, PUSH, LOSS = 1, 0, -1
BANKER_SPOT = R.BETS.index("banker")
PLAYER_SPOT = R.BETS.index("player")
"""The banker and player spots (their own columns at every table)."""
OVER_MAX = staking.OVER_TOLERANCE
"""A wanted stake above the table maximum by more than this (in units) is capped."""


@dataclasses.dataclass
class TableView:
    """What a system may look at before a hand (arrays over tables).

    Attributes:
        bankroll_units: each table's bankroll in betting units.
        max_units: the table maximum in units (a scalar).
        rules: the table's rules (payouts).
        composition: ``(n, 13)`` cards the players have not seen, for systems that count
            (``needs_composition``); None otherwise.
        last_winner: winner of the previous hand (a :class:`pb_gym.rules.Outcome`; -1 before the first).
        last_decision: winner of the last hand that was not a tie (-1 before the first).
        min_units: the table minimum in units.
        hands_played: hands dealt so far in the session (0 before the first).
        shoe: the engine state of the tables (read only: position, hands in the shoe, unseen cards).
        hand: the engine's result arrays of the last hand dealt (the previous hand when proposing,
            this hand when updating); None before the first hand.
        session: the table session the system plays in (read only: a learned policy reads its
            observation from it with the environment's own function), or None.
        seat: the system's seat in ``session``.
        unit: the session's money per betting unit.
    """

    bankroll_units: np.ndarray
    max_units: float
    rules: R.Rules
    composition: np.ndarray | None
    last_winner: np.ndarray
    last_decision: np.ndarray
    min_units: float = 1.0
    hands_played: int = 0
    shoe: engine.ShoeState | None = None
    hand: engine.HandResult | None = None
    session: Session | None = None
    seat: int = 0
    unit: float = 1.0
    bets: catalog.TableBets | None = None
    """The table's bet columns (the seven spots, then its extra catalog or user bets); None: the
    seven spots of ``rules``."""


@dataclasses.dataclass
class HandOutcome:
    """What happened to a system's bet on one hand, per table.

    Attributes:
        placed: a bet was placed.
        result: WIN (1), PUSH (0) or LOSS (-1); 0 where nothing was placed.
        staked_units: the units actually staked (after caps).
        net_units: the net win in units.
        table_capped: the table maximum (or, for ``on_cap="reset"``, the series restart) cut the stake.
    """

    placed: np.ndarray
    result: np.ndarray
    staked_units: np.ndarray
    net_units: np.ndarray
    table_capped: np.ndarray


class Proposal(NamedTuple):
    """Everything a system decides before a hand, per table.

    Attributes:
        column: ``(n,)`` the stake column of the bet (:class:`pb_gym.catalog.TableBets`), or
            :data:`NO_BET`.
        units: ``(n,)`` the stake in betting units, the table maximum applied (ignored where there
            is no bet).
        capped: ``(n,)`` bool: the table maximum bound the stake (or, ``on_cap="reset"``, restarted
            the series). The table session applies the maximum too; the system's own account of it is
            what its progression needs, what the report counts (``table_max_binds``: with
            ``on_cap="reset"`` the session never sees a stake above the maximum), and it keeps a
            runaway progression's request finite.
    """

    column: np.ndarray
    units: np.ndarray
    capped: np.ndarray


def capped_proposal(column: np.ndarray | int, units: np.ndarray, max_units: float) -> Proposal:
    """The proposal of ``units`` on ``column`` (one column for every table, or one each), cut to the
    table maximum ``max_units``, with where it bound."""
    units = np.asarray(units, dtype=np.float64)
    columns = np.broadcast_to(np.asarray(column, dtype=np.int64), units.shape).copy()
    return Proposal(columns, np.minimum(units, max_units), units > max_units + OVER_MAX)


class BettingSystem:
    """Base class: one bet, a base stake in units, the table-maximum policy.

    Args:
        bet: the bet the system plays (a name offered at the table).
        base: the base stake in betting units.
        on_cap: at the table maximum, ``"cap"`` stakes the maximum and keeps the progression going;
            ``"reset"`` abandons the series and stakes one ``base`` instead (see the module docstring).
        name: a display name (defaults to the system's key).
    """

    key: ClassVar[str] = "system"
    needs_composition: ClassVar[bool] = False
    bead_plate: int = 0
    """Hands of the bead plate the system reads from the session (a learned policy's history)."""
    not_configurable: ClassVar[tuple[str, ...]] = ()
    """Constructor parameters that are no config key: fixed by the system itself (``bet``, for a
    system that chooses among ``bets``) or switches of the implementation that do not change a
    decision."""

    def __init__(
        self,
        *,
        name: str | None = None,
        bet: BetName = "banker",
        base: Units = 1.0,
        on_cap: Literal["cap", "reset"] = "cap",
    ) -> None:
        if not isinstance(bet, str) or not bet:
            raise ValueError(f"bet={bet!r} is not allowed; allowed: a bet name offered at the table")
        if not base > 0:
            raise ValueError(f"base={base!r} is not allowed; allowed: a stake > 0 units")
        if on_cap not in ("cap", "reset"):
            raise ValueError(f"on_cap={on_cap!r} is not allowed; allowed: cap, reset")
        self.bet = bet
        self.column = R.BETS.index(bet) if bet in R.BETS else NO_BET  # set by bind for other bets
        self.table_bets: catalog.TableBets | None = None
        self.base = float(base)
        self.on_cap = on_cap
        self.name = name or self.key
        self.n = 0

    # -- lifecycle ------------------------------------------------------------------------------
    def bind(self, table: catalog.TableBets) -> None:
        """Take the stake columns of the table the system plays at (``bet`` -> its column; the seven
        spots keep theirs). A bet the table does not offer is a ValueError listing the offered ones."""
        self.table_bets = table
        self.column = table.column(self.bet)

    def reset(self, n_tables: int, rng: np.random.Generator | None = None) -> None:
        """Start every table's series afresh."""
        self.n = n_tables
        self.rng = rng if rng is not None else np.random.default_rng(0)

    # -- deciding -------------------------------------------------------------------------------
    def bet_columns(self) -> tuple[int, ...]:
        """Every stake column :meth:`propose` may return: the evaluator's table session keeps a slot
        for these only."""
        return (self.column,)

    def propose(self, view: TableView) -> Proposal:
        """Column, stake in units and where the table maximum bound, for every table: flat ``base``
        on the system's column by default."""
        return capped_proposal(self.column, np.full(self.n, self.base), view.max_units)

    # -- learning from the hand -----------------------------------------------------------------
    def update(self, view: TableView, outcome: HandOutcome) -> None:
        """Move the state after a hand (nothing by default); pushes and no-bets never move it."""

    def win_pays(self, rules: R.Rules) -> float:
        """The net win per unit of a plain win on this system's bet (0.95 for a 5% banker bet; for a
        catalog or user bet, its smallest win)."""
        if self.column >= R.N_BETS and self.table_bets is not None:
            column = self.table_bets.bet(self.bet).column()
            return float(column[column > 0].min())
        return (
            float(rules.paytable()[_win_row(self.column), self.column])
            if self.column not in (R.BETS.index("player_pair"), R.BETS.index("banker_pair"))
            else float(rules.pair_pays)
        )


def check_bets(bets: Sequence[str]) -> tuple[str, ...]:
    """Validate a list of bet names (for systems that choose among several); return it as a tuple.
    Whether the table offers them is checked when the system is bound to it (:meth:`BettingSystem.bind`)."""
    if isinstance(bets, str) or not bets:
        raise ValueError("bets: at least one bet is needed (a list of names)")
    for bet in bets:
        if not isinstance(bet, str) or not bet:
            raise ValueError(f"bets: {bet!r} is not allowed; allowed: bet names offered at the table")
    if len(set(bets)) != len(bets):
        raise ValueError("bets: each bet at most once")
    return tuple(bets)


def bet_columns(bets: Sequence[str], table: catalog.TableBets | None) -> np.ndarray:
    """The stake columns of ``bets``: the table's (:class:`pb_gym.catalog.TableBets`), or the seven
    spots' own columns before the system is bound (:data:`NO_BET` for another bet)."""
    if table is not None:
        return np.array([table.column(b) for b in bets], dtype=np.int64)
    return np.array([R.BETS.index(b) if b in R.BETS else NO_BET for b in bets], dtype=np.int64)


def _win_row(spot: int) -> int:
    """The outcome class of an ordinary win of a bet spot (to read its payout in the paytable)."""
    return R.OUTCOMES.index(
        {
            "banker": "banker",
            "player": "player",
            "tie": "tie",
            "dragon7": "banker_3card_7",
            "panda8": "player_3card_8",
        }[R.BETS[spot]]
    )
