"""The settings of the session environments (:mod:`pb_gym.envs.session_env`), validated, and what
follows from them: the bankroll's lattice (ticks), the actions and their masks, the observation, the
keyword arguments of the table inside and of the exact solver's :class:`pb_gym.session_optimum.Session`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from pb_gym import catalog, session_optimum
from pb_gym import rules as R
from pb_gym.envs.config import EnvConfig, bad, is_int
from pb_gym.rules import Rules

MAIN_BETS: tuple[str, ...] = ("banker", "player", "tie")
MAX_TICKS = 2**40
"""The largest goal plus one hand's win, in ticks: every amount stays a float64 integer."""


def _amount(name: str, value: object) -> Fraction:
    """An amount in units as an exact Fraction (a float read as the decimal it prints as)."""
    if is_int(value):
        return Fraction(int(value))  # type: ignore[call-overload]  # checked int
    if isinstance(value, (float, np.floating)) and math.isfinite(value):
        return Fraction(repr(float(value)))
    if isinstance(value, Fraction) or (isinstance(value, Decimal) and value.is_finite()):
        return Fraction(value)
    raise bad(name, value, "a number of units (an int, or a decimal on the bankroll's lattice)")


@dataclasses.dataclass(frozen=True)
class SessionSettings:
    """The validated settings of a session env (the keyword arguments of :class:`SessionEnv`) and what
    follows from them: the lattice, the actions, the masks, the observation and the table inside.

    Build it with :func:`session_settings`; the fields hold canonical values (amounts as Fractions,
    ``bets`` in catalog order)."""

    bankroll: Fraction
    goal: Fraction
    hands: int
    table_min: int
    table_max: int
    bets: tuple[str, ...]
    decks: int
    ticks_per_unit: int
    """``L``: every amount is a whole number of ``1/L`` unit (the lcm of the payouts' denominators)."""

    @property
    def stakes(self) -> tuple[int, ...]:
        """The stakes of each bet, whole units ``table_min .. table_max``."""
        return tuple(range(self.table_min, self.table_max + 1))

    @property
    def n_actions(self) -> int:
        return 1 + len(self.bets) * len(self.stakes)

    @property
    def bankroll_ticks(self) -> int:
        return int(self.bankroll * self.ticks_per_unit)

    @property
    def goal_ticks(self) -> int:
        return int(self.goal * self.ticks_per_unit)

    @property
    def min_ticks(self) -> int:
        return self.table_min * self.ticks_per_unit

    @property
    def stake_ticks(self) -> np.ndarray:
        """The stake of each action in ticks (0 for no bet), ``(n_actions,)`` int64."""
        per_bet = np.array(self.stakes, dtype=np.int64) * self.ticks_per_unit
        return np.concatenate([[0], np.tile(per_bet, len(self.bets))]).astype(np.int64)

    def table_actions(self, table: EnvConfig) -> np.ndarray:
        """The action of the table inside (``table``: its config, made from :meth:`table_kwargs`) that
        each action takes, ``(n_actions,)`` int64."""
        return np.array(
            [0] + [table.action_index(b, k) for b in self.bets for k in range(len(self.stakes))],
            dtype=np.int64,
        )

    def action_index(self, bet: str, stake: int = 0) -> int:
        """The action that stakes ``stake`` whole units on ``bet`` (``"no_bet"``: 0, no stake)."""
        if bet == "no_bet":
            return 0
        if bet not in self.bets:
            raise bad("bet", bet, "no_bet, " + ", ".join(self.bets))
        if not is_int(stake) or not self.table_min <= stake <= self.table_max:
            raise bad("stake", stake, f"whole units from {self.table_min} to {self.table_max}")
        return 1 + self.bets.index(bet) * len(self.stakes) + int(stake) - self.table_min

    def describe_action(self, index: int) -> tuple[str, int]:
        """``(bet, stake in units)`` of action ``index``; ``("no_bet", 0)`` for 0."""
        if not is_int(index) or not 0 <= index < self.n_actions:
            raise bad("action", index, f"an integer in 0..{self.n_actions - 1}")
        if index == 0:
            return "no_bet", 0
        bet, k = divmod(int(index) - 1, len(self.stakes))
        return self.bets[bet], self.stakes[k]

    def action_meanings(self) -> tuple[str, ...]:
        """What each action does: ``"no_bet"``, then ``"BET@STAKE"`` (stake in units), bet-major."""
        return ("no_bet", *(f"{bet}@{s}" for bet in self.bets for s in self.stakes))

    def masks(self, ticks: np.ndarray) -> np.ndarray:
        """The legal actions at bankrolls ``ticks`` ``(n,)``: ``(n, n_actions)`` bool (no bet always;
        a stake while the bankroll covers it)."""
        return self.stake_ticks[None, :] <= np.asarray(ticks)[:, None]

    def observe(self, ticks: np.ndarray, hands_left: np.ndarray) -> np.ndarray:
        """The observations ``(n, 2)`` float32 at bankrolls ``ticks`` with ``hands_left`` hands left."""
        out = np.empty((len(ticks), 2), dtype=np.float32)
        out[:, 0] = np.minimum(ticks, self.goal_ticks) / self.goal_ticks
        out[:, 1] = np.asarray(hands_left) / self.hands
        return out

    def problem(self) -> dict[str, Any]:
        """The keyword arguments of :class:`pb_gym.session_optimum.Session` for this session (amounts
        as ints where whole, else Fractions)."""
        whole = {
            k: int(v) if v.denominator == 1 else v
            for k, v in (("bankroll", self.bankroll), ("goal", self.goal))
        }
        return dict(
            whole,
            hands=self.hands,
            table_min=self.table_min,
            table_max=self.table_max,
            bets=self.bets,
            decks=self.decks,
        )

    def table_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the table inside (:class:`~pb_gym.envs.punto_banco.PuntoBancoEnv`):
        money in ticks (unit 1), one stake level per whole unit, the continuous shuffler with no delay,
        no burn, the hand limit; the observation it computes is not shown (the smallest one)."""
        ticks = self.ticks_per_unit
        return dict(
            decks=self.decks,
            burn=False,
            side_bets=tuple(b for b in self.bets if b not in MAIN_BETS),
            bankroll=float(self.bankroll_ticks),
            unit=1.0,
            table_min=float(self.min_ticks),
            table_max=float(self.table_max * ticks),
            win_target=float(self.goal_ticks),
            max_hands=self.hands,
            shuffle="csm",
            csm_delay=0,
            visible_discards=False,
            history=1,
            action_mode="discrete",
            stake_levels=tuple(float(s * ticks) for s in self.stakes),
            stake_unit="units",
            allow_no_bet=True,
            reward="realized",
        )


def _lattice(bets: tuple[str, ...], rules: Rules, stakes: Sequence[int]) -> int:
    """Ticks per unit for ``bets`` (:func:`pb_gym.session_optimum.ticks_per_unit`), after checking that
    each payout of each stake is exact in float64."""
    pays = session_optimum.exact_payouts(bets, rules)
    ticks = session_optimum.ticks_per_unit(bets, rules)
    for name, row in pays.items():
        for pay in row:
            for s in stakes:
                if float(s * ticks) * float(pay) != float(s * ticks * pay):
                    raise bad("bets", name, "bets whose payouts are exact in floating point at these stakes")
    return ticks


def _check_table(hands: object, table_min: object, table_max: object, decks: object) -> None:
    if not is_int(hands) or not 1 <= hands <= 10**6:  # type: ignore[operator]
        raise bad("hands", hands, "an integer from 1 to 1,000,000")
    if not is_int(decks) or not 1 <= decks <= R.MAX_DECKS:  # type: ignore[operator]
        raise bad("decks", decks, f"an integer from 1 to {R.MAX_DECKS}")
    if not is_int(table_min) or table_min < 1:  # type: ignore[operator]
        raise bad("table_min", table_min, "a whole number of units >= 1")
    if not is_int(table_max) or not table_min <= table_max <= 1000:  # type: ignore[operator]
        raise bad("table_max", table_max, f"a whole number of units from table_min ({table_min}) to 1000")


def _check_bets(bets: object, rules: Rules) -> tuple[str, ...]:
    given = (bets,) if isinstance(bets, str) else bets
    names = catalog.bet_names(rules)
    allowed = "a non-empty list of catalog bet names, each once (" + ", ".join(MAIN_BETS) + ", ...)"
    if not isinstance(given, (tuple, list)) or not given or len(set(given)) != len(given):
        raise bad("bets", bets, allowed)
    for bet in given:
        if bet not in names:
            raise bad("bets", bets, allowed)
    return tuple(name for name in names if name in given)


def session_settings(
    *,
    bankroll: object,
    goal: object,
    hands: object,
    table_max: object,
    table_min: object = 1,
    bets: object = MAIN_BETS,
    decks: object = 8,
) -> SessionSettings:
    """The validated :class:`SessionSettings` (each bad value a ``ValueError`` naming it and what is
    allowed). Arguments as :class:`SessionEnv` takes them."""
    _check_table(hands, table_min, table_max, decks)
    rules = Rules(decks=int(decks))  # type: ignore[call-overload]  # checked int
    names = _check_bets(bets, rules)
    stakes = range(int(table_min), int(table_max) + 1)  # type: ignore[call-overload]
    ticks = _lattice(names, rules, stakes)
    start, target = _amount("bankroll", bankroll), _amount("goal", goal)
    for name, value, amount in (("bankroll", bankroll, start), ("goal", goal, target)):
        if (amount * ticks).denominator != 1:
            raise bad(
                name, value, f"an amount on the lattice of 1/{ticks} unit (the payouts of {', '.join(names)})"
            )
    if start < int(table_min):  # type: ignore[call-overload]
        raise bad("bankroll", bankroll, f"an amount >= table_min ({table_min})")
    if target <= start:
        raise bad("goal", goal, f"an amount above the bankroll ({bankroll})")
    top = max(float(p) for name in names for p in np.unique(catalog.get_bet(name, rules).column()))
    if (target + int(table_max) * Fraction(top)) * ticks > MAX_TICKS:  # type: ignore[call-overload]
        raise bad("goal", goal, f"a goal under {MAX_TICKS / ticks:.3g} units less one hand's win")
    return SessionSettings(
        bankroll=start,
        goal=target,
        hands=int(hands),  # type: ignore[call-overload]
        table_min=int(table_min),  # type: ignore[call-overload]
        table_max=int(table_max),  # type: ignore[call-overload]
        bets=names,
        decks=int(decks),  # type: ignore[call-overload]
        ticks_per_unit=ticks,
    )


def whole_ticks(ticks: np.ndarray) -> np.ndarray:
    """The tables' bankrolls as int64 ticks; they are whole by construction (a RuntimeError if not)."""
    whole = np.rint(ticks)
    if not np.array_equal(whole, ticks):
        raise RuntimeError(
            f"a bankroll left the tick lattice ({ticks[whole != ticks][0]!r}): please report it"
        )
    return whole.astype(np.int64)


def step_info(
    s: SessionSettings, ticks: np.ndarray, hands_left: np.ndarray, illegal: np.ndarray, count: np.ndarray
) -> dict[str, Any]:
    return {
        "bankroll": ticks / s.ticks_per_unit,
        "hands_left": hands_left.copy(),
        "action_mask": s.masks(ticks),
        "illegal_action": illegal.copy(),
        "illegal_actions": count.copy(),
    }


def check_action(s: SessionSettings, action: object) -> int:
    if is_int(action) or (
        isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu"
    ):
        a = int(action)  # type: ignore[call-overload]  # an int or a 0-d integer array
        if 0 <= a < s.n_actions:
            return a
    raise bad("action", action, f"an integer in 0..{s.n_actions - 1} (see action_meanings)")


__all__ = [
    "MAIN_BETS",
    "MAX_TICKS",
    "SessionSettings",
    "check_action",
    "session_settings",
    "step_info",
    "whole_ticks",
]
