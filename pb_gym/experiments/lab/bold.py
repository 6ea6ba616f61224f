"""Lesson 4, how to bet if you must: bold play, timid play and the exact optimum of a session.

A player holds ``bankroll`` units and needs ``goal`` within ``hands`` hands at a table with a maximum.
:mod:`pb_gym.session_optimum` gives everything exact: the optimal policy by backward induction
(:func:`~pb_gym.session_optimum.solve`), Dubins & Savage's bold play and flat (timid) betting as
policies (:func:`~pb_gym.session_optimum.bold_play`, :func:`~pb_gym.session_optimum.timid_play`) and
their values (:func:`~pb_gym.session_optimum.policy_values`). :func:`bold_sessions` plays the three
policies on the same hands dealt by the shoe engine, each reading its own policy table.
"""

from __future__ import annotations

import functools

import numpy as np

from pb_gym import engine
from pb_gym import rules as R
from pb_gym import session_optimum as so
from pb_gym.experiments.lab.common import MAX_SESSIONS, check_choice, check_int, lab_rules, running_share

PLAIN_BETS = ("player", "banker")
"""The bet that bold and timid play stake on."""
OFFERED = ("banker", "player", "tie")
"""The bets the optimal player may choose from."""
TABLE_MAXIMUMS = (0, 2, 5, 10, 25, 50)
"""The table maximums offered, in units (0: no maximum)."""
MAX_GOAL = 60
MAX_HANDS = 200
POLICIES = ("optimal", "bold", "timid")
"""The policies compared, in the page's order."""


def check_bold(bankroll: int, goal: int, hands: int, table_max: int, bet: str) -> None:
    """Raise a ValueError naming the field unless the session is one the lesson offers."""
    check_int("goal", goal, 2, MAX_GOAL)
    check_int("bankroll", bankroll, 1, goal - 1)
    check_int("hands", hands, 1, MAX_HANDS)
    check_choice("table_max", table_max, TABLE_MAXIMUMS, " (0: no maximum)")
    check_choice("bet", bet, PLAIN_BETS)


def session(bankroll: int, goal: int, hands: int, table_max: int, decks: int = 8) -> so.Session:
    """The :class:`pb_gym.session_optimum.Session`: banker, player and tie offered, a one-unit
    minimum, ``table_max`` units at most (0: none)."""
    return so.Session(
        bankroll=int(bankroll),
        goal=int(goal),
        hands=int(hands),
        table_max=int(table_max) or None,
        bets=OFFERED,
        decks=int(decks),
    )


@functools.lru_cache(maxsize=64)
def _policies(bankroll: int, goal: int, hands: int, table_max: int, bet: str, decks: int):
    table = session(bankroll, goal, hands, table_max, decks)
    solution = so.solve(table)
    policies = {
        "optimal": solution.policy,
        "bold": so.bold_play(table, bet),
        "timid": so.timid_play(table, bet, 1),
    }
    return table, solution, policies


def bold_exact(
    bankroll: int, goal: int, hands: int, table_max: int, bet: str = "player", decks: int = 8
) -> dict:
    """The exact P(reach the goal) of the optimal, bold and timid policies, and the optimal policy.

    Args:
        bankroll: the starting bankroll in units, 1 to ``goal - 1``.
        goal: the bankroll to reach, 2 to 60 units.
        hands: the most hands, 1 to 200.
        table_max: the table maximum in units, one of :data:`TABLE_MAXIMUMS` (0: none).
        bet: the bet of bold and timid play, one of :data:`PLAIN_BETS`.
        decks: decks in the shoe, 1 to 8.

    Returns:
        ``p_goal`` per policy; ``curve``: per policy P(goal) from every whole bankroll ``1 .. goal-1``
        with all the hands (``bankrolls`` the x axis); ``start``: the optimal first action
        (``{"bet", "stake"}`` or None); ``stake`` and ``bet``: the optimal stake (units) and bet name
        (None: no bet) at every whole bankroll ``0 .. goal - 1`` (columns) and number of hands left
        ``1 .. hands`` (rows).
    """
    check_bold(bankroll, goal, hands, table_max, bet)
    check_int("decks", decks, 1, R.MAX_DECKS)
    table, solution, policies = _policies(
        int(bankroll), int(goal), int(hands), int(table_max), bet, int(decks)
    )
    ticks = table.ticks_per_unit
    whole = np.arange(int(goal)) * ticks
    values = {name: so.policy_values(table, policy) for name, policy in policies.items()}
    names = np.array([*table.bets, None], dtype=object)
    start = solution.action(bankroll, hands)
    return {
        "p_goal": {name: float(v[hands, table.bankroll_ticks]) for name, v in values.items()},
        "curve": {
            "bankrolls": list(range(1, int(goal))),
            **{name: v[hands, whole[1:]].tolist() for name, v in values.items()},
        },
        "start": None if start is None else {"bet": start[0], "stake": start[1]},
        "stake": solution.stake[1:, whole].tolist(),
        "bet": names[solution.bet[1:, whole]].tolist(),
    }


def bold_sessions(
    bankroll: int, goal: int, hands: int, table_max: int, bet: str, sessions: int, seed: int, decks: int = 8
) -> dict:
    """The three policies played on the same ``sessions`` tables dealt by the engine from ``seed``.

    Args:
        bankroll, goal, hands, table_max, bet, decks: as :func:`bold_exact` takes them.
        sessions: how many sessions, 1 to 1,000.
        seed: the deal's root seed, an integer >= 0.

    Returns:
        Per policy ``reached`` (one bool per session) and ``running`` (the share of the first ``k``
        sessions that reached the goal).
    """
    check_bold(bankroll, goal, hands, table_max, bet)
    check_int("sessions", sessions, 1, MAX_SESSIONS)
    check_int("seed", seed, 0, None)
    check_int("decks", decks, 1, R.MAX_DECKS)
    return _bold_sessions(
        int(bankroll), int(goal), int(hands), int(table_max), bet, int(sessions), int(seed), int(decks)
    )


@functools.lru_cache(maxsize=32)
def _bold_sessions(
    bankroll: int, goal: int, hands: int, table_max: int, bet: str, sessions: int, seed: int, decks: int
) -> dict:
    table, _, policies = _policies(bankroll, goal, hands, table_max, bet, decks)
    rules = lab_rules(decks)
    ticks, top = table.ticks_per_unit, table.goal_ticks
    columns = [R.BETS.index(name) for name in table.bets]
    state = engine.init(rules, sessions, seed=seed)
    held = {name: np.full(sessions, table.bankroll_ticks, dtype=np.int64) for name in policies}
    rows = np.arange(sessions)
    for left in range(hands, 0, -1):
        if all(((b >= top) | (b < ticks)).all() for b in held.values()):
            break  # every session has reached the goal or cannot cover the minimum
        _, hand = engine.deal(rules, state)
        net = np.round(hand.payoffs(rules)[:, columns] * ticks).astype(np.int64)
        for name, policy in policies.items():
            b = held[name]
            at = np.minimum(b, top)
            code = np.asarray(policy.bet)[left, at].astype(np.int64)
            placed = (b < top) & (code != so.NO_BET)
            stake = np.asarray(policy.stake)[left, at]
            b[placed] += stake[placed] * net[rows[placed], code[placed]]
    out = {}
    for name, b in held.items():
        reached = b >= top
        out[name] = {"reached": reached, "running": running_share(reached)}
    return out


__all__ = [
    "PLAIN_BETS",
    "OFFERED",
    "TABLE_MAXIMUMS",
    "POLICIES",
    "check_bold",
    "session",
    "bold_exact",
    "bold_sessions",
]
