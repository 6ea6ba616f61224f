"""Lesson 2, gambler's ruin: flat stakes on one bet from ``start`` until ``target`` or ruin.

The exact answer is the ruin study's own (:mod:`pb_gym.experiments.ruin.model`: the banded Markov
chain for any bet, the classical closed form beside it on the +1/-1 walk); the sessions are dealt by
the study's own simulation (:func:`pb_gym.experiments.ruin.simulation.simulate_engine` from real
shoes, :func:`~pb_gym.experiments.ruin.simulation.simulate_coin` for the coin), so the tally on the
page is the engine's to the last session. A stake of ``k`` units is the one-unit walk counted in
stakes: the start and the target are multiples of the stake, and ruin is a bankroll below one stake.

The paths drawn are those of the first sessions of the same deal (:func:`ruin_sessions`): the engine
gives every table its own random stream, so the first ``k`` tables of a deal are dealt the same hands
whatever the number of tables; the coin's paths replay the study's draws in the same order.
"""

from __future__ import annotations

import functools

import numpy as np

from pb_gym import engine
from pb_gym import rules as R
from pb_gym.experiments.lab.common import MAX_SESSIONS, check_choice, check_int, lab_rules, running_share
from pb_gym.experiments.ruin import model, simulation

BETS = ("player", "banker", "fair_coin")
"""The bets of the lesson: one unit on player (+1/-1, ties push), on banker (+0.95/-1) or a fair coin."""
STAKES = (1, 2, 5, 10)
"""The flat stakes offered, in units."""
MAX_UNITS = 60
"""The largest target, in units."""
MAX_HANDS = 20_000
"""A session still open after this many hands is counted as unfinished."""
PATHS = 30
"""The sessions whose bankroll paths are drawn (the first of the deal)."""


def check_session(bet: str, start: int, target: int, stake: int) -> None:
    """Raise a ValueError naming the field unless the session is one the lesson offers: a bet of
    :data:`BETS`, a stake of :data:`STAKES`, and ``stake <= start < target <= MAX_UNITS``, both
    multiples of the stake."""
    check_choice("bet", bet, BETS)
    check_choice("stake", stake, STAKES)
    check_int("target", target, 2 * stake, MAX_UNITS)
    check_int("start", start, stake, target - stake)
    for field, value in (("start", start), ("target", target)):
        if value % stake:
            raise ValueError(f"{field}={value} is not allowed; allowed: a multiple of the stake ({stake})")


def ruin_exact(bet: str, start: int, target: int, stake: int = 1, decks: int = 8) -> dict:
    """The exact chances of a session.

    Args:
        bet: one of :data:`BETS`.
        start: the starting bankroll in units.
        target: the bankroll that ends the session as a success.
        stake: the flat stake in units (:data:`STAKES`).
        decks: decks in the shoe, 1 to 8.

    Returns:
        ``p_target`` (reach the target before ruin), ``p_ruin``, ``hands`` (expected hands, ties
        included), ``curve`` (``start`` and ``p_target`` for every start that is a multiple of the
        stake, for this target), ``step`` (one hand's ``p_win``, ``p_lose``, ``p_push``) and, on the
        +1/-1 walk, ``closed_form``: the classical formula's P(target).
    """
    check_session(bet, start, target, stake)
    check_int("decks", decks, 1, R.MAX_DECKS)
    return _ruin_exact(bet, int(start), int(target), int(stake), int(decks))


@functools.lru_cache(maxsize=256)
def _ruin_exact(bet: str, start: int, target: int, stake: int, decks: int) -> dict:
    steps = model.step_distribution(bet, lab_rules(decks))
    chain = model.markov_chain(steps, target // stake)
    i = start // stake - 1
    result = {
        "p_target": float(chain["p_win"][i]),
        "p_ruin": float(1.0 - chain["p_win"][i]),
        "hands": float(chain["hands"][i]),
        "curve": {"start": (chain["starts"] * stake).tolist(), "p_target": chain["p_win"].tolist()},
        "step": {key: steps[key] for key in ("p_win", "p_lose", "p_push")},
    }
    if steps["lattice"] == 1 and set(steps["steps"]) <= {-1, 0, 1}:
        formula = model.closed_form(steps["p_win"], steps["p_lose"], start // stake, target // stake)
        result["closed_form"] = float(formula["p_win"])
    return result


def ruin_sessions(
    bet: str,
    start: int,
    target: int,
    stake: int,
    sessions: int,
    seed: int,
    decks: int = 8,
    paths: int = PATHS,
) -> dict:
    """``sessions`` sessions dealt from ``seed``, and the bankroll paths of the first ``paths``.

    Args:
        bet, start, target, stake, decks: the session, as :func:`ruin_exact` takes it.
        sessions: how many, 1 to :data:`~pb_gym.experiments.lab.common.MAX_SESSIONS`.
        seed: the deal's root seed, an integer >= 0.
        paths: how many paths to keep (the first sessions').

    Returns:
        Per session (in deal order) ``success``, ``finished`` and ``hands``; ``running`` (the share of
        successes among the first ``k`` sessions, for every ``k``); ``paths`` (a list of bankroll
        paths in units, each from the start to the session's end).
    """
    check_session(bet, start, target, stake)
    check_int("sessions", sessions, 1, MAX_SESSIONS)
    check_int("seed", seed, 0, None)
    check_int("decks", decks, 1, R.MAX_DECKS)
    check_int("paths", paths, 0, MAX_SESSIONS)
    return _ruin_sessions(
        bet, int(start), int(target), int(stake), int(sessions), int(seed), int(decks), paths
    )


@functools.lru_cache(maxsize=64)
def _ruin_sessions(
    bet: str, start: int, target: int, stake: int, sessions: int, seed: int, decks: int, paths: int
) -> dict:
    rules = lab_rules(decks)
    starts = np.full(sessions, start // stake, dtype=np.int64)
    targets = np.full(sessions, target // stake, dtype=np.int64)
    if bet == "fair_coin":
        sim = simulation.simulate_coin(starts, targets, seed, MAX_HANDS)
        traces = _coin_paths(starts, targets, seed, min(paths, sessions))
    else:
        sim = simulation.simulate_engine(rules, [bet], starts, targets, seed, MAX_HANDS)[bet]
        traces = _engine_paths(rules, bet, start // stake, target // stake, seed, min(paths, sessions))
    for field in ("success", "finished", "hands"):
        sim[field].setflags(write=False)
    return {
        "success": sim["success"],
        "finished": sim["finished"],
        "hands": sim["hands"],
        "running": running_share(sim["success"]),
        "paths": [trace * stake for trace in traces],
    }


def _engine_paths(
    rules: R.Rules, bet: str, start: int, target: int, seed: int, count: int
) -> list[np.ndarray]:
    """The bankroll paths (in stakes) of the first ``count`` tables of a deal from ``seed``, under the
    stopping rule of :func:`pb_gym.experiments.ruin.simulation.simulate_engine`."""
    if count == 0:
        return []
    lattice = model.step_distribution(bet, rules)["lattice"]
    state = engine.init(rules, count, seed=seed)
    bankroll = np.full(count, start * lattice, dtype=np.int64)
    open_ = np.ones(count, dtype=bool)
    rows = [bankroll.copy()]
    column = R.BETS.index(bet)
    while open_.any() and len(rows) <= MAX_HANDS:
        _, hand = engine.deal(rules, state)
        step = np.round(hand.payoffs(rules)[:, column] * lattice).astype(np.int64)
        bankroll[open_] += step[open_]
        open_ &= (bankroll < target * lattice) & (bankroll >= lattice)
        rows.append(bankroll.copy())
    return _cut(np.array(rows) / lattice)


def _coin_paths(starts: np.ndarray, targets: np.ndarray, seed: int, count: int) -> list[np.ndarray]:
    """The paths of the first ``count`` coin sessions, drawing the random numbers of
    :func:`pb_gym.experiments.ruin.simulation.simulate_coin` in its order (every open session's)."""
    if count == 0:
        return []
    rng = np.random.default_rng(seed)
    bankroll = np.array(starts, dtype=np.int64)
    live = np.arange(len(bankroll))
    rows = [bankroll[:count].copy()]
    for _ in range(MAX_HANDS):
        if live.size == 0 or live[0] >= count:
            break
        bankroll[live] += np.where(rng.random(live.size) < 0.5, 1, -1)
        ended = (bankroll[live] >= targets[live]) | (bankroll[live] < 1)
        live = live[~ended]
        rows.append(bankroll[:count].copy())
    return _cut(np.array(rows, dtype=np.float64))


def _cut(rows: np.ndarray) -> list[np.ndarray]:
    """Each column of ``rows`` (a bankroll per hand) up to the hand that ended it."""
    out = []
    for path in rows.T:
        moved = np.flatnonzero(path != path[-1])
        out.append(path[: (moved[-1] + 2 if moved.size else 1)])
    return out


__all__ = [
    "BETS",
    "STAKES",
    "MAX_UNITS",
    "MAX_HANDS",
    "PATHS",
    "check_session",
    "ruin_exact",
    "ruin_sessions",
]
