"""The gambler's-ruin sessions simulated: real shoes for player and banker, numpy for the fair coin.

The job of this file is the simulated side of :mod:`pb_gym.experiments.ruin` (the exact side is
:mod:`pb_gym.experiments.ruin.model`). Every session is one engine table dealing real shoes (burn, cut card,
reshuffles), all sessions of a chunk in parallel, with the same stopping rule as the Markov chain
(success at >= target units, ruin below one unit, a winning overshoot kept, ties counted as hands), so
the comparison also checks that the shoe's small dependence between hands does not matter at this
scale.

Scale-out: the simulated sessions of all points, listed point after point, are cut into chunks
(:mod:`pb_gym.experiments.common.scale`; chunk ``i`` seeded with ``SeedSequence(seed).spawn(n)[i]``). A chunk
(:func:`simulate_chunk`) returns, per bet and point, integer counts (successes, ruins, unfinished) and
the sums of the hands and of their squares; :func:`merge` adds them in chunk order and
:func:`summarize` computes the estimates and CIs from the merged sums, so the result is the same to
the last bit on every backend (serial, local processes, Dask).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pb_gym import engine
from pb_gym import rules as R
from pb_gym.experiments.common import scale
from pb_gym.experiments.common.stats import mean_se_from_sums, normal_ci, wilson
from pb_gym.experiments.ruin.model import step_distribution

ENGINE_BETS = ("player", "banker")
"""The bets dealt by the engine (the fair coin is numpy's)."""


def simulate_engine(
    rules: R.Rules,
    bets: list[str],
    starts: np.ndarray,
    targets: np.ndarray,
    seed: int | np.random.SeedSequence,
    max_hands: int,
) -> dict:
    """One session per entry of ``starts`` / ``targets`` (units), for each bet on the same dealt hands.

    Returns per bet ``success`` (bool), ``hands`` (int) and ``finished`` (bool), one entry per session.
    """
    n = len(starts)
    lattice = {bet: step_distribution(bet, rules)["lattice"] for bet in bets}
    start = np.asarray(starts, dtype=np.int64)
    target = np.asarray(targets, dtype=np.int64)
    bankroll = {bet: start * lattice[bet] for bet in bets}
    done = {bet: np.zeros(n, dtype=bool) for bet in bets}
    success = {bet: np.zeros(n, dtype=bool) for bet in bets}
    hands = {bet: np.zeros(n, dtype=np.int64) for bet in bets}
    state = engine.init(rules, n, seed=seed)
    table = np.arange(n)  # the session of each engine table (tables are dropped as sessions end)
    played = 0
    while played < max_hands:
        live = ~np.all([done[b][table] for b in bets], axis=0)
        if not live.any():
            break
        if live.sum() < 0.5 * len(table):  # compact: keep dealing only where a session is open
            keep = np.flatnonzero(live)
            fields: dict[str, Any] = {
                k: (v[keep] if isinstance(v, np.ndarray) else v) for k, v in vars(state).items()
            }
            state = engine.ShoeState(**fields)
            table = table[keep]
        _, hand = engine.deal(rules, state)
        payoffs = hand.payoffs(rules)
        played += 1
        for bet in bets:
            open_ = ~done[bet][table]
            t = table[open_]
            step = np.round(payoffs[open_, R.BETS.index(bet)] * lattice[bet]).astype(np.int64)
            bankroll[bet][t] += step
            hands[bet][t] += 1
            won = bankroll[bet][t] >= target[t] * lattice[bet]
            ruined = bankroll[bet][t] < lattice[bet]
            success[bet][t] = won
            done[bet][t] = won | ruined
    return {bet: {"success": success[bet], "hands": hands[bet], "finished": done[bet]} for bet in bets}


def simulate_coin(
    starts: np.ndarray, targets: np.ndarray, seed: int | np.random.SeedSequence, max_hands: int
) -> dict:
    """The fair coin: +1/-1 with probability 1/2, numpy random numbers, the same stopping rule."""
    rng = np.random.default_rng(seed)
    bankroll = np.array(starts, dtype=np.int64)
    target = np.asarray(targets, dtype=np.int64)
    n = len(bankroll)
    hands = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    success = np.zeros(n, dtype=bool)
    live = np.arange(n)
    for _ in range(max_hands):
        if live.size == 0:
            break
        bankroll[live] += np.where(rng.random(live.size) < 0.5, 1, -1)
        hands[live] += 1
        won = bankroll[live] >= target[live]
        ended = won | (bankroll[live] < 1)
        success[live[won]] = True
        done[live[ended]] = True
        live = live[~ended]
    return {"success": success, "hands": hands, "finished": done}


def session_counts(sim: dict, point: np.ndarray, n_points: int) -> dict[str, np.ndarray]:
    """Per point (``point`` gives each session's): sessions ``finished``, ``successes``, ``ruins``,
    ``unfinished``, and the sums of the hands and of their squares over the finished sessions. Integers,
    so that merging chunks is exact in any order."""
    finished = sim["finished"]
    hands = np.where(finished, sim["hands"], 0).astype(np.int64)

    def per_point(values: np.ndarray) -> np.ndarray:
        out = np.zeros(n_points, dtype=np.int64)
        np.add.at(out, point, values.astype(np.int64))
        return out

    successes = per_point(sim["success"] & finished)
    return {
        "finished": per_point(finished),
        "successes": successes,
        "ruins": per_point(finished) - successes,
        "unfinished": per_point(~finished),
        "hands": per_point(hands),
        "hands_sq": per_point(hands * hands),
    }


def simulate_chunk(
    chunk: scale.Chunk,
    rules: R.Rules,
    bets: tuple[str, ...],
    points: list[tuple[int, int]],
    sessions: int,
    max_hands: int,
) -> dict:
    """The task of one chunk: sessions ``chunk.start ..`` of the list of all points' sessions (point
    ``k`` owns sessions ``k * sessions .. (k + 1) * sessions - 1``), reduced to :func:`session_counts`
    per bet. The engine deals from the chunk's seed itself and the coin draws from its first child:
    the Martingale section's chunks (pb-gym evaluate, the same root seed) deal from *their* first
    child, so the two sections never deal the same shoes."""
    point = np.arange(chunk.start, chunk.start + chunk.size) // sessions
    starts = np.array([p[0] for p in points])[point]
    targets = np.array([p[1] for p in points])[point]
    counts = {}
    engine_bets = [b for b in bets if b in ENGINE_BETS]
    if engine_bets:
        sims = simulate_engine(rules, engine_bets, starts, targets, chunk.seed, max_hands)
        counts.update({bet: session_counts(sims[bet], point, len(points)) for bet in engine_bets})
    if "fair_coin" in bets:
        coin = simulate_coin(starts, targets, chunk.child_seeds(1)[0], max_hands)
        counts["fair_coin"] = session_counts(coin, point, len(points))
    return counts


def merge(parts: list[dict]) -> dict:
    """Add the chunks' counts, per bet and key (integers: exact)."""
    return {bet: {key: sum(p[bet][key] for p in parts) for key in parts[0][bet]} for bet in parts[0]}


def summarize(
    counts: dict, points: list[tuple[int, int]], exact_lookup: Callable[[int, int], tuple[float, float]]
) -> list[dict]:
    """One row per point, from the merged :func:`session_counts`: simulated P(success) and mean hands
    with 95% CIs (over the finished sessions), the exact values, z."""
    rows = []
    for k, (start, target) in enumerate(points):
        n, wins = int(counts["finished"][k]), int(counts["successes"][k])
        total, squares = int(counts["hands"][k]), int(counts["hands_sq"][k])
        p_hat = wins / n if n else math.nan
        mean, se_h = mean_se_from_sums(n, total, squares)  # exact from the integer sums
        exact_p, exact_h = exact_lookup(start, target)
        se_p = math.sqrt(max(exact_p * (1 - exact_p), 1e-300) / n) if n else math.nan
        rows.append(
            {
                "start": start,
                "target": target,
                "sessions": n,
                "unfinished": int(counts["unfinished"][k]),
                "ruins": int(counts["ruins"][k]),
                "p_win": p_hat,
                "p_win_ci95": wilson(wins, n),
                "p_win_exact": exact_p,
                "p_win_z": (p_hat - exact_p) / se_p,
                "hands": mean,
                "hands_ci95": normal_ci(mean, se_h),
                "hands_exact": exact_h,
                "hands_z": (mean - exact_h) / se_h,
            }
        )
    return rows


__all__ = [
    "ENGINE_BETS",
    "simulate_engine",
    "simulate_coin",
    "session_counts",
    "simulate_chunk",
    "merge",
    "summarize",
]
