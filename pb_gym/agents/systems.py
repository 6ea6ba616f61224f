"""Betting systems, vectorized over N tables.

Each system keeps its own state per table (arrays) and decides the next stake for every table at once;
no Python loop over tables. What a system sees before a hand, what it proposes and what it learns
after it, the index spaces (spot, column, slot) and the conventions every system keeps (pushes, no
bet placed, the table maximum, the bankroll) are the protocol of :mod:`pb_gym.agents.system_protocol`,
whose names this module exports too (:class:`BettingSystem`, :class:`TableView`, :class:`Proposal`,
:class:`HandOutcome`, :data:`NO_BET`, ...).

The progression systems (:class:`Programmed`: flat to Oscar's Grind, and the flat bettors that choose
a side) describe their staking as data, a :class:`agents.staking.Program`, played by one compiled
kernel: alone, through ``propose`` and ``update``, or stacked with every other such seat of a study by
the evaluator (one kernel call a hand for all of them).

Each constructor's signature is the system's config schema (``pb-gym evaluate`` derives the YAML keys,
their types, ranges and defaults from it: :mod:`pb_gym.experiments.evaluate.settings`): the type hints
carry the ranges as :mod:`annotated_types` constraints (``Annotated[float, Gt(0)]``), and the
parameters a system fixes itself are listed in its ``not_configurable``. A new parameter is a change
in the system's constructor alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, ClassVar

import numpy as np
from annotated_types import Ge, MinLen

from pb_gym import catalog, ev_bound, exact, kelly
from pb_gym import rules as R
from pb_gym.agents import kelly_rows, staking
from pb_gym.agents.system_protocol import BANKER_SPOT as BANKER_SPOT
from pb_gym.agents.system_protocol import LOSS as LOSS
from pb_gym.agents.system_protocol import NO_BET as NO_BET
from pb_gym.agents.system_protocol import OVER_MAX as OVER_MAX
from pb_gym.agents.system_protocol import PLAYER_SPOT as PLAYER_SPOT
from pb_gym.agents.system_protocol import PUSH as PUSH
from pb_gym.agents.system_protocol import WIN as WIN
from pb_gym.agents.system_protocol import BetName as BetName
from pb_gym.agents.system_protocol import BetNames as BetNames
from pb_gym.agents.system_protocol import BettingSystem as BettingSystem
from pb_gym.agents.system_protocol import HandOutcome as HandOutcome
from pb_gym.agents.system_protocol import Probability as Probability
from pb_gym.agents.system_protocol import Proposal as Proposal
from pb_gym.agents.system_protocol import TableView as TableView
from pb_gym.agents.system_protocol import Units as Units
from pb_gym.agents.system_protocol import bet_columns as bet_columns
from pb_gym.agents.system_protocol import capped_proposal as capped_proposal
from pb_gym.agents.system_protocol import check_bets as check_bets
from pb_gym.kelly import KELLY_ITERATIONS as KELLY_ITERATIONS
from pb_gym.kelly import kelly_growth as kelly_growth
from pb_gym.parallel import run_rows


class Programmed(BettingSystem):
    """A system whose staking is a :class:`agents.staking.Program`: ``propose`` and ``update`` run the
    compiled kernels on the system's own one-seat state. A subclass that overrides ``propose`` or
    ``update`` is played through them (the evaluator stacks only the programs of those that do not:
    :meth:`compiled`)."""

    def program(self) -> staking.Program:
        """The system's staking as data (after :meth:`bind`: it names the table's columns)."""
        return staking.Program(
            "flat", (self.column, self.column), self.base, reset_on_cap=self.on_cap == "reset"
        )

    def compiled(self) -> bool:
        """Whether the system's decisions are its program's alone (no overridden ``propose`` or
        ``update``), so that the evaluator may play it stacked with other programs."""
        cls = type(self)
        return cls.propose is Programmed.propose and cls.update is Programmed.update

    def draw(self) -> np.ndarray:
        """The column of each table's next bet, for a program whose choice is ``drawn``."""
        raise NotImplementedError

    def reset(self, n_tables: int, rng: np.random.Generator | None = None) -> None:
        super().reset(n_tables, rng)
        self.programs = staking.Programs([self.program()], n_tables)
        self._pays_cache: tuple[R.Rules, float] | None = None  # win_pays of the last rules seen

    def propose(self, view: TableView) -> Proposal:
        state = self.programs.state
        if self.programs.programs[0].choice == "drawn":
            state.drawn[0] = self.draw()
        n = self.programs.n_tables
        columns = np.empty((1, n), dtype=np.int64)
        capped = np.empty((1, n), dtype=np.bool_)
        requested = np.zeros((1, n, 1))
        top = max(int(self.programs.table.columns.max()), int(state.drawn.max()), 0)
        staking.propose_rows(
            self.programs.table,
            state,
            np.asarray(view.last_decision),
            float(view.max_units),
            1.0,
            np.zeros(1, dtype=np.int64),
            np.zeros(top + 1, dtype=np.int64),  # every column to the one slot
            requested,
            columns,
            capped,
        )
        units = np.where(
            columns[0] != NO_BET, requested[0, :, 0], np.minimum(state.wanted[0], view.max_units)
        )
        return Proposal(columns[0], units, capped[0])

    def pays(self, rules: R.Rules) -> float:
        """:meth:`win_pays` of ``rules``, kept for the next call with the same rules."""
        if self._pays_cache is None or self._pays_cache[0] is not rules:
            self._pays_cache = (rules, self.win_pays(rules))
        return self._pays_cache[1]

    def update(self, view: TableView, outcome: HandOutcome) -> None:
        """Move the progression after a hand: wins and losses only; pushes and no-bets leave it."""
        net = np.where(
            outcome.result == WIN,
            np.abs(outcome.net_units),
            np.where(outcome.result == LOSS, -np.abs(outcome.net_units), 0.0),
        )
        self.programs.make_room()
        staking.update_rows(
            self.programs.table,
            self.programs.state,
            np.array([self.pays(view.rules)]),
            np.zeros(1, dtype=np.int64),
            np.asarray(outcome.placed, dtype=np.bool_)[None],
            np.ascontiguousarray(net, dtype=np.float64)[None],
            1.0,
        )


class Flat(Programmed):
    """Flat betting: ``base`` units on every hand, whatever happens."""

    key = "flat"


class Martingale(Programmed):
    """Martingale: double the stake after a loss, back to ``base`` after a win; a push changes nothing.

    With ``recovering=True`` the stake after a loss is instead ``(series losses + base) / win_pays``,
    so that a win recovers every loss of the series plus one base unit even at 19:20 (the plain
    doubling on banker does not: after k >= 1 losses a win nets +0.95, +0.90, +0.80, ... and turns
    negative after five). At the table maximum see ``on_cap``.

    Args:
        recovering: after a loss, stake what recovers the series' losses plus one ``base`` (instead of
            doubling).
    """

    key = "martingale"
    GROW: ClassVar[float] = 0.0
    """Added to the doubled stake after a loss, in units of ``base``."""

    def __init__(self, recovering: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.recovering = recovering

    def program(self) -> staking.Program:
        return dataclasses.replace(
            super().program(),
            progression="doubling",
            recovering=bool(self.recovering),
            grow=self.GROW * self.base,
        )


class GrandMartingale(Martingale):
    """Grand Martingale: after a loss the next stake is twice the last plus one ``base``; after a win,
    back to ``base``; a push changes nothing."""

    key = "grand_martingale"
    GROW = 1.0


class Paroli(Programmed):
    """Paroli (reverse Martingale with a goal): double after each win; after ``wins_to_reset``
    consecutive wins (default 3) bank the gain and restart at ``base``; a loss restarts at ``base``;
    a push changes nothing. ``wins_to_reset=None`` never banks: the plain reverse Martingale.

    Args:
        wins_to_reset: consecutive wins after which the gain is banked and the stake restarts at
            ``base`` (null: never).
    """

    key = "paroli"

    def __init__(self, wins_to_reset: Annotated[int, Ge(1)] | None = 3, **kwargs) -> None:
        super().__init__(**kwargs)
        if wins_to_reset is not None and wins_to_reset < 1:
            raise ValueError(f"wins_to_reset={wins_to_reset!r} is not allowed; allowed: >= 1 or None")
        self.wins_to_reset = wins_to_reset

    def program(self) -> staking.Program:
        return dataclasses.replace(
            super().program(), progression="paroli", wins_to_reset=self.wins_to_reset or 0
        )


class ReverseMartingale(Paroli):
    """Reverse Martingale: double after a win, back to ``base`` after a loss; a push changes nothing."""

    key = "reverse_martingale"
    not_configurable = ("wins_to_reset",)

    def __init__(self, **kwargs) -> None:
        super().__init__(wins_to_reset=None, **kwargs)


class DAlembert(Programmed):
    """D'Alembert: one ``base`` more after a loss, one less after a win, never below ``base``; a push
    changes nothing."""

    key = "dalembert"

    def program(self) -> staking.Program:
        return dataclasses.replace(super().program(), progression="dalembert")


def _fibonacci(n: int) -> list[int]:
    sequence = [1, 1]
    while len(sequence) < n:
        sequence.append(sequence[-1] + sequence[-2])
    return sequence


class _Stepped(Programmed):
    """A system whose stake is ``base`` times an entry of a fixed sequence, indexed per table: a win
    moves the index by ``WIN_STEP``, a loss by ``LOSS_STEP`` (``(delta, wrap)``: modulo the sequence's
    length if ``wrap``, else held within it)."""

    SEQUENCE: ClassVar[np.ndarray] = np.array([1.0])
    WIN_STEP: ClassVar[tuple[int, bool]] = (0, False)
    LOSS_STEP: ClassVar[tuple[int, bool]] = (0, False)

    def program(self) -> staking.Program:
        return dataclasses.replace(
            super().program(),
            progression="stepped",
            sequence=tuple(float(x) for x in self.SEQUENCE),
            win_step=self.WIN_STEP,
            loss_step=self.LOSS_STEP,
        )


class Fibonacci(_Stepped):
    """Fibonacci: stakes follow 1, 1, 2, 3, 5, 8, ... ``base``; one step forward after a loss, two
    steps back after a win (not below the first); a push changes nothing."""

    key = "fibonacci"
    SEQUENCE = np.array([float(x) for x in _fibonacci(80)])
    WIN_STEP = (-2, False)
    LOSS_STEP = (1, False)


class Labouchere(Programmed):
    """Labouchere (cancellation): a line of numbers (default 1, 2, 3, 4 units of ``base``); stake the
    first plus the last (the single number when one is left); a win crosses both off, a loss appends
    the amount lost (in units of ``base``); when the line is empty the series is won (its original sum)
    and a new line starts. A push changes nothing. At the table maximum see ``on_cap`` (``"reset"``
    starts a new line).

    Args:
        line: the starting line, in units of ``base``.
    """

    key = "labouchere"

    def __init__(self, line: Annotated[Sequence[Units], MinLen(1)] = (1, 2, 3, 4), **kwargs) -> None:
        super().__init__(**kwargs)
        line = [float(x) for x in line]
        if not line or any(not x > 0 for x in line):
            raise ValueError(f"line={line!r} is not allowed; allowed: a non-empty list of numbers > 0")
        self.line = np.array(line)

    def program(self) -> staking.Program:
        return dataclasses.replace(
            super().program(), progression="labouchere", sequence=tuple(float(x) for x in self.line)
        )


class OneThreeTwoSix(_Stepped):
    """1-3-2-6: after consecutive wins stake 1, 3, 2, 6 ``base``; a loss, or a completed cycle of four
    wins, restarts at 1; a push changes nothing."""

    key = "one_three_two_six"
    SEQUENCE = np.array([1.0, 3.0, 2.0, 6.0])
    WIN_STEP = (1, True)
    LOSS_STEP = (-len(SEQUENCE), False)


class OscarsGrind(Programmed):
    """Oscar's Grind: each series aims at a profit of one ``base``. After a loss the stake is repeated;
    after a win it is raised by one ``base``, but never above what would finish the series at exactly
    +``base`` (``(base - series profit) / win_pays``) and never below one ``base`` (with the banker's
    commission a series can end 0.05 short: a win of one unit after a win of one unit finishes it
    with +1.90); when the series profit reaches +``base`` a new series starts. A push changes
    nothing."""

    key = "oscars_grind"

    def program(self) -> staking.Program:
        return dataclasses.replace(super().program(), progression="oscars_grind")


class FollowTheWinner(Programmed):
    """Follow the last winner: flat ``base`` on banker or player, whichever won the last hand that was
    not a tie (banker before the first decision). Ties push and change nothing."""

    key = "follow_winner"
    CHOICE: ClassVar[str] = "follow"

    def bet_columns(self) -> tuple[int, ...]:
        return (BANKER_SPOT, PLAYER_SPOT)

    def program(self) -> staking.Program:
        return dataclasses.replace(super().program(), choice=self.CHOICE, columns=(BANKER_SPOT, PLAYER_SPOT))


class Chop(FollowTheWinner):
    """Chop: flat ``base`` on the opposite of the last non-tie winner (a bet that the shoe alternates;
    banker before the first decision). Ties push and change nothing."""

    key = "chop"
    CHOICE = "chop"


class RandomBettor(Programmed):
    """Random bettor: each hand, with probability ``p_bet``, flat ``base`` on a bet drawn uniformly from
    ``bets`` (default banker or player).

    Args:
        bets: the bets drawn from.
        p_bet: the probability of betting on a hand.
    """

    key = "random"
    not_configurable = ("bet",)

    def __init__(self, bets: BetNames = ("banker", "player"), p_bet: Probability = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)
        bets = check_bets(bets)
        if not 0.0 < p_bet <= 1.0:
            raise ValueError(f"p_bet={p_bet!r} is not allowed; allowed: a probability in (0, 1]")
        self.bets = bets
        self.columns = bet_columns(bets, None)
        self.p_bet = p_bet
        self._ahead: list[np.ndarray] = []  # the next hands' bets, drawn already (draw), last first

    def bind(self, table: catalog.TableBets) -> None:
        super().bind(table)
        self.columns = bet_columns(self.bets, table)
        self._ahead = []

    def bet_columns(self) -> tuple[int, ...]:
        return tuple(int(column) for column in self.columns)

    def program(self) -> staking.Program:
        return dataclasses.replace(super().program(), choice="drawn")

    def reset(self, n_tables: int, rng: np.random.Generator | None = None) -> None:
        super().reset(n_tables, rng)
        self._ahead = []

    def draw(self) -> np.ndarray:
        """Each table's bet for the next hand (drawn from the system's own random stream). A bettor
        betting every hand draws the bets of :data:`DRAW_AHEAD` hands at once: numpy's ``integers``
        takes consecutive values of the stream whatever the batch, so they are the bets a draw a
        hand would give."""
        if self.p_bet < 1.0:  # (the bets and the chance to bet interleave in the stream)
            column = self.columns[self.rng.integers(0, len(self.columns), self.n)]
            return np.where(self.rng.random(self.n) < self.p_bet, column, NO_BET)
        if not self._ahead:
            drawn = self.columns[self.rng.integers(0, len(self.columns), (DRAW_AHEAD, self.n))]
            self._ahead = list(drawn[::-1])
        return self._ahead.pop()


DRAW_AHEAD = 32
"""Hands of bets a :class:`RandomBettor` betting every hand draws at once: one call to the generator
for many hands, whose overhead is a draw's main cost at a study's batch sizes."""


_PayoffGroup = tuple[int, np.ndarray, "slice | np.ndarray | None"]
"""A bet's stake column, its distinct non-zero payoffs, and where its probabilities come from: a slice of
the payoff-level columns, the probabilities themselves (a catalog or user bet), or None (a pair bet)."""


class Kelly(BettingSystem):
    """Kelly betting on the exact edge of the current shoe.

    Before each hand the exact probabilities of the next hand are computed from the cards not yet seen
    (:func:`pb_gym.exact.expectations`). For each bet in ``bets`` the Kelly fraction maximizes the
    expected log of the bankroll over that bet's outcomes (win, push, loss, or several win payouts);
    with a single win payout ``b`` and pushes it is ``(b p - q) / (b (p + q))``, which is <= 0 for
    every bet off the top of the shoe, so the system bets only when the shoe has made some bet
    positive. It stakes ``fraction`` x f* of its bankroll on the best such bet (by expected log growth),
    rounded down to the table maximum; below the table minimum it does not bet.

    Most hands need no exact calculation: where the proven upper bound of :mod:`pb_gym.ev_bound`
    shows that every bet in ``bets`` has EV < 0 (about nine hands in ten), nothing can be staked, and
    the exact EV is computed only for the other hands. The decisions are the same as with the exact
    EV everywhere (``skip_proven=False``), only faster.

    Args:
        bets: the bets priced before each hand (the best positive one is staked).
        fraction: the share of the Kelly stake staked (0.5: half Kelly).
    """

    key = "kelly"
    needs_composition = True
    not_configurable = ("bet", "skip_proven")

    def __init__(
        self, bets: BetNames = ("banker",), fraction: Probability = 1.0, skip_proven: bool = True, **kwargs
    ) -> None:
        self.bets = check_bets(bets)
        super().__init__(bet=self.bets[0], **kwargs)
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"fraction={fraction!r} is not allowed; allowed: (0, 1] of the Kelly stake")
        self.fraction = fraction
        self.skip_proven = bool(skip_proven)
        self._priced: tuple[R.Rules, np.ndarray, list[_PayoffGroup], np.ndarray, tuple | None] | None = None

    def _levels(self, rules: R.Rules) -> tuple[np.ndarray, list[_PayoffGroup]]:
        """Indicator columns over outcome classes for each bet's distinct non-zero payoffs."""
        table = rules.paytable()
        columns: list[np.ndarray] = []
        groups: list[_PayoffGroup] = []
        for bet in self.bets:
            if bet not in R.BETS:
                continue  # a catalog or user bet: priced over the hand classes (_extra_fractions)
            spot = R.BETS.index(bet)
            if bet in ("player_pair", "banker_pair"):
                groups.append((spot, np.array([rules.pair_pays, -1.0]), None))
                continue
            values = np.array(sorted(set(table[:, spot]) - {0.0}))
            first = len(columns)
            for value in values:
                columns.append((table[:, spot] == value).astype(float))
            groups.append((spot, values, slice(first, first + len(values))))
        matrix = np.array(columns).T if columns else np.zeros((R.N_OUTCOMES, 0))
        return matrix, groups

    def _pricing(self, rules: R.Rules) -> tuple[np.ndarray, list[_PayoffGroup], np.ndarray, tuple | None]:
        """:meth:`_levels`, the net payoffs per outcome class of the bets priced over them (one column
        a bet), and for a bettor on one such bet alone the arguments of its compiled pass
        (:func:`agents.kelly_rows.kelly_rows`, else None), worked out once for these rules (every
        hand asks); the groups are a new list."""
        if self._priced is None or (self._priced[0] is not rules and self._priced[0] != rules):
            matrix, groups = self._levels(rules)
            spots = [
                R.BETS.index(b) for b in self.bets if b in R.BETS and b not in ("player_pair", "banker_pair")
            ]
            payoffs = rules.paytable()[:, spots]
            one_bet = None
            if len(groups) == 1 and isinstance(groups[0][2], slice) and self.skip_proven:
                column, values, _ = groups[0]
                bound = ev_bound.bet_bound(payoffs[:, 0])
                x = np.asarray(values, dtype=np.float64)
                one_bet = (
                    ev_bound.FULL_SHOE_PROPORTIONS,
                    *bound.tables,
                    bound.cubic_by_pair,
                    bound.quartic_by_pairs,
                    ev_bound.MARGIN,
                    # (the multiset weights folded as exact.expectations folds them: the same bits)
                    np.ascontiguousarray(exact.folded_weights(payoffs)),
                    np.ascontiguousarray(exact.folded_weights(matrix)),
                    x,
                    kelly.kelly_high(x),
                    KELLY_ITERATIONS,
                    column,
                )
            self._priced = (rules, matrix, groups, payoffs, one_bet)
        _, matrix, groups, payoffs, one_bet = self._priced
        return matrix, list(groups), payoffs, one_bet

    def stake_fractions(
        self, composition: np.ndarray, rules: R.Rules, table: catalog.TableBets | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Best column and its full-Kelly fraction of bankroll for each composition (0 if
        none is > 0). Bets beyond the seven spots (catalog or user bets of ``table``) are priced
        exactly over the hand classes (:func:`pb_gym.exact.hand_class_probabilities`: every
        composition, no bound first)."""
        matrix, groups, payoffs, one_bet = self._pricing(rules)
        if one_bet is not None:  # (the same steps in one compiled pass over the tables)
            ranks = np.ascontiguousarray(
                exact.validate_composition(composition, copy=False).reshape(-1, R.N_RANKS)
            )
            best_column = np.full(len(ranks), NO_BET, dtype=np.int8)
            best_fraction = np.zeros(len(ranks))
            run_rows(
                kelly_rows.kelly_rows,
                len(ranks),
                kelly_rows.KELLY_MIN_ROWS,
                ranks,
                *one_bet,
                best_column,
                best_fraction,
            )
            return best_column, best_fraction
        extra = [bet for bet in self.bets if bet not in R.BETS]
        if extra:
            if table is None:
                raise ValueError(f"Kelly on {', '.join(extra)} needs the table's bets (bind the system)")
            hand_probabilities = exact.hand_class_probabilities(composition)
            for bet in extra:
                column = table.bet(bet).column()
                values = np.array(sorted(set(column.tolist()) - {0.0}))
                indicator = (column[:, None] == values[None, :]).astype(float)
                # row by row: a table's decision is the same bits whatever the batch it is in
                groups.append((table.column(bet), values, exact.row_products(hand_probabilities, indicator)))
        n = composition.shape[0]
        # the payoff-level probabilities are computed only at the rows where the bound and the exact
        # EV of each bet leave some bet possibly positive; elsewhere nothing can be staked on them
        level_rows = np.arange(n)
        if matrix.shape[1] and self.skip_proven:
            level_rows = np.flatnonzero(~ev_bound.proven_negative(composition, payoffs))
            if level_rows.size:
                # where the bound cannot tell, the exact EV of each bet (one column a bet, not one a
                # payoff level) still rules out most hands; clearly negative EVs stake nothing
                ev = exact.expectations(composition[level_rows], payoffs)
                level_rows = level_rows[~np.all(ev < -ev_bound.MARGIN, axis=1)]
        probabilities = np.zeros((level_rows.size, matrix.shape[1]))
        if matrix.shape[1] and level_rows.size:
            probabilities = exact.expectations(composition[level_rows], matrix)
        best_growth = np.zeros(n)
        best_fraction = np.zeros(n)
        best_column = np.full(n, NO_BET, dtype=np.int8)
        for group_column, values, cols in groups:
            rows = np.arange(n)
            if cols is None:
                pair = exact.pair_probability(composition)
                p = np.stack([pair, 1.0 - pair], axis=1)
            elif isinstance(cols, np.ndarray):  # an extra bet: its probabilities themselves
                p = cols
            else:  # a slice of the payoff-level columns
                rows, p = level_rows, probabilities[:, cols]
            f, growth = kelly_growth(p, values)
            better = growth > best_growth[rows]
            best_growth[rows[better]] = growth[better]
            best_fraction[rows[better]] = f[better]
            best_column[rows[better]] = group_column
        return best_column, best_fraction

    def bet_columns(self) -> tuple[int, ...]:
        return tuple(int(column) for column in bet_columns(self.bets, self.table_bets))

    def propose(self, view: TableView) -> Proposal:
        assert view.composition is not None  # needs_composition: the session supplies it
        column, f = self.stake_fractions(view.composition, view.rules, view.bets or self.table_bets)
        return capped_proposal(
            np.where(f > 0, column, NO_BET), self.fraction * f * view.bankroll_units, view.max_units
        )


SYSTEMS: dict[str, type[BettingSystem]] = {
    cls.key: cls
    for cls in (
        Flat,
        Martingale,
        GrandMartingale,
        Paroli,
        ReverseMartingale,
        DAlembert,
        Fibonacci,
        Labouchere,
        OneThreeTwoSix,
        OscarsGrind,
        FollowTheWinner,
        Chop,
        RandomBettor,
        Kelly,
    )
}
"""Every betting system by its config ``type``."""
