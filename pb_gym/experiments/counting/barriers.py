"""The risk of ruin with a goal and a time limit (a "double barrier"), for the advantage player's report.

A session starts at a bankroll, ends at ruin (the bankroll below one stake: the next bet cannot be
covered), at the goal (the bankroll plus ``goal`` reached) or at the time limit. Four ways to the same
chances, each a model of the bets (:mod:`pb_gym.experiments.counting.advantage` sets them side by side):

* :func:`shoe_barrier` (and :func:`shoe_barriers`, several variants over one set of draws): sessions of
  whole shoes drawn from the dealt ones, each shoe's running win kept (:func:`shoe_extremes`), so the
  hands of a shoe keep their correlation; simulated, with 95% CIs;
* :func:`double_barrier`: independent hands of given outcomes and probabilities, simulated;
* :func:`walk_barrier`: independent two-outcome bets (:func:`two_outcome_bet`), exact;
* :func:`diffusion_barrier`: the normal model (a Brownian motion of the same drift and variance), a
  closed-form series.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numba
import numpy as np

from pb_gym.ci import Z95
from pb_gym.experiments.common import stats


def double_barrier(
    values: np.ndarray,
    probabilities: np.ndarray,
    bankroll: float,
    goal: float,
    hands: int,
    sessions: int = 20_000,
    seed: int = 0,
    stake: float = 1.0,
) -> dict:
    """Simulated risk of ruin with a goal and a time limit (a "double barrier").

    Each hand dealt nets one of ``values`` (units, per unit staked; 0 for a hand not bet) with
    ``probabilities``, independently. A session starts at ``bankroll``, ends at ruin (the bankroll
    below ``stake``: the next bet cannot be covered), at the goal (``bankroll + goal`` reached) or after
    ``hands``. Returns ``p_ruin``, ``p_goal``, ``p_behind`` (below the start at the limit), the mean
    final win, each share with its Wilson 95% CI, and the mean's 95% CI.
    """
    values = np.asarray(values, dtype=np.float64)
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if values.shape != probabilities.shape or values.ndim != 1 or not values.size:
        raise ValueError("values and probabilities: one-dimensional arrays of the same length")
    if np.any(probabilities < 0) or abs(probabilities.sum() - 1.0) > 1e-9:
        raise ValueError("probabilities: non-negative, summing to 1")
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(probabilities)
    cumulative[-1] = 1.0
    b = np.full(sessions, float(bankroll))
    playing = np.ones(sessions, dtype=bool)
    ruined = np.zeros(sessions, dtype=bool)
    reached = np.zeros(sessions, dtype=bool)
    for _ in range(hands):
        rows = np.flatnonzero(playing)
        if not rows.size:
            break
        draw = np.searchsorted(cumulative, rng.random(rows.size), side="right")
        b[rows] += stake * values[np.minimum(draw, values.size - 1)]
        ruin = b[rows] < stake
        goal_hit = b[rows] >= bankroll + goal
        ruined[rows[ruin]] = True
        reached[rows[goal_hit & ~ruin]] = True
        playing[rows[ruin | goal_hit]] = False
    behind = playing & (b < bankroll)
    win = b - bankroll
    half = 1.96 * float(win.std(ddof=1)) / math.sqrt(sessions) if sessions > 1 else math.nan
    counts = (int(ruined.sum()), int(reached.sum()), int(behind.sum()))
    return _risk_figures(*counts, sessions, float(win.mean()), half)


def diffusion_barrier(
    mean: float, variance: float, bankroll: float, goal: float, steps: float, stake: float = 1.0
) -> dict:
    """The normal (diffusion) double barrier: the chance that a Brownian motion with drift ``mean`` and
    ``variance`` per step, started at 0, falls to ``-(bankroll - stake)`` (ruin: the bankroll below one
    ``stake``) before it reaches ``+goal`` and within ``steps`` steps, and the chance it reaches the goal
    first within them.

    With ``a = bankroll - stake``, ``L = a + goal``, ``theta = 2 mean / variance``, the chance of ever
    leaving by the lower side is ``(1 - exp(-theta goal)) / (exp(theta a) - exp(-theta goal))``; the
    chance of doing so after ``steps`` is the eigenfunction series of the first-exit density (the
    driftless density times Girsanov's ``exp(-mean a / variance - mean^2 t / (2 variance))``):
    ``exp(-mean a / variance) (pi variance / L^2) sum_n n sin(n pi a / L) exp(-lambda_n T) / lambda_n``
    with ``lambda_n = mean^2 / (2 variance) + n^2 pi^2 variance / (2 L^2)``, summed until its terms are
    below ``exp(-40)``. The goal's side is the same with the drift reversed. Returns ``p_ruin`` and
    ``p_goal``.
    """
    if not variance > 0:
        raise ValueError(f"variance={variance!r} is not allowed; allowed: a number > 0")
    if not bankroll > stake or not goal > 0 or not steps > 0:
        raise ValueError(
            f"bankroll={bankroll!r}, goal={goal!r}, steps={steps!r}, stake={stake!r} are not allowed; "
            "allowed: bankroll > stake > 0, goal > 0, steps > 0"
        )
    a = float(bankroll - stake)
    return {
        "p_ruin": _lower_exit(mean, variance, a, float(goal), float(steps)),
        "p_goal": _lower_exit(-mean, variance, float(goal), a, float(steps)),
    }


def _lower_exit(mean: float, variance: float, a: float, b: float, steps: float) -> float:
    """P(a Brownian motion of drift ``mean`` and ``variance`` from 0 hits ``-a`` before ``+b`` and by
    time ``steps``) (:func:`diffusion_barrier`)."""
    width = a + b
    theta = 2.0 * mean / variance
    if theta == 0.0:
        ever = b / width
    elif (
        theta > 0.0
    ):  # in a form that cannot overflow: exp(-theta a) (1 - exp(-theta b)) / (1 - exp(-theta L))
        ever = math.exp(-theta * a) * -math.expm1(-theta * b) / -math.expm1(-theta * width)
    else:  # 1 - P(the upper side first), the upper side's chance written the same way with -theta
        ever = 1.0 - math.exp(theta * b) * -math.expm1(theta * a) / -math.expm1(theta * width)
    scale = math.pi**2 * variance * steps / (2.0 * width * width)
    terms = math.ceil(math.sqrt(40.0 / scale)) + 2  # the n-th term carries exp(-n^2 scale)
    if terms > 10_000_000:  # the horizon is a vanishing part of the time to cross: nothing crosses
        return 0.0
    n = np.arange(1, terms + 1, dtype=np.float64)
    rate = mean * mean / (2.0 * variance) + n * n * math.pi**2 * variance / (2.0 * width * width)
    log_factor = -mean * a / variance - rate * steps
    later = (
        math.pi
        * variance
        / width**2
        * float(np.sum(n * np.sin(n * math.pi * a / width) * np.exp(log_factor) / rate))
    )
    return min(max(ever - later, 0.0), 1.0)


def two_outcome_bet(mean: float, sd: float) -> tuple[float, float]:
    """The bet that wins ``win`` units with probability ``p`` and otherwise loses one, with this
    ``mean`` and ``sd``: ``win + 1 = (sd^2 + (1 + mean)^2) / (1 + mean)``, ``p = (1 + mean) / (win + 1)``.
    Returns ``(win, p)`` (for a Dragon 7 count's bets, about 40:1)."""
    if not mean > -1.0 or not sd > 0:
        raise ValueError(f"mean={mean!r}, sd={sd!r} are not allowed; allowed: mean > -1, sd > 0")
    spread = (sd * sd + (1.0 + mean) ** 2) / (1.0 + mean)
    return spread - 1.0, (1.0 + mean) / spread


@numba.njit(cache=True, nogil=True)
def _walk(win, p, bankroll, goal, stake, bets, alive):
    """The exact walk of :func:`walk_barrier` over the number of wins ``k`` (the position after ``t``
    bets is ``bankroll + stake (k (win + 1) - t)``): ``(ruin, goal, behind)``."""
    alive[0] = 1.0
    lo, hi = 0, 0
    ruin = reached = 0.0
    for t in range(1, bets + 1):
        alive[hi + 1] = alive[hi] * p
        for k in range(hi, lo, -1):
            alive[k] = alive[k] * (1.0 - p) + alive[k - 1] * p
        alive[lo] = alive[lo] * (1.0 - p)
        hi += 1
        while lo <= hi and bankroll + stake * (lo * (win + 1.0) - t) < stake:
            ruin += alive[lo]
            alive[lo] = 0.0
            lo += 1
        while hi >= lo and bankroll + stake * (hi * (win + 1.0) - t) >= bankroll + goal:
            reached += alive[hi]
            alive[hi] = 0.0
            hi -= 1
        if lo > hi:
            break
        if t % 1024 == 0 and alive[lo : hi + 1].sum() < 1e-15:  # every session has ended
            break
    behind = 0.0
    for k in range(lo, hi + 1):
        if stake * (k * (win + 1.0) - bets) < 0.0:
            behind += alive[k]
    return ruin, reached, behind


def walk_barrier(win: float, p: float, bankroll: float, goal: float, bets: int, stake: float = 1.0) -> dict:
    """The double barrier of independent bets, exactly: each bet wins ``win`` units (per unit staked)
    with probability ``p`` and otherwise loses one; a session starts at ``bankroll``, ends at ruin (the
    bankroll below ``stake``), at the goal (``bankroll + goal`` reached) or after ``bets`` bets.

    The walk is followed by its number of wins (the position is a function of it and of the bets made),
    so the chances are exact, not simulated. Returns ``p_ruin``, ``p_goal`` and ``p_behind`` (the
    session ends below its start: ruined, or behind after the last bet)."""
    if not win > 0 or not 0.0 < p < 1.0:
        raise ValueError(f"win={win!r}, p={p!r} are not allowed; allowed: win > 0, 0 < p < 1")
    if not bankroll >= stake > 0 or not goal > 0:
        raise ValueError(
            f"bankroll={bankroll!r}, goal={goal!r}, stake={stake!r} are not allowed; "
            "allowed: bankroll >= stake > 0, goal > 0"
        )
    if isinstance(bets, bool) or not isinstance(bets, (int, np.integer)) or bets < 1:
        raise ValueError(f"bets={bets!r} is not allowed; allowed: an integer >= 1")
    alive = np.zeros(int(bets) + 2)
    ruin, reached, behind = _walk(
        float(win), float(p), float(bankroll), float(goal), float(stake), int(bets), alive
    )
    return {"p_ruin": float(ruin), "p_goal": float(reached), "p_behind": float(behind + ruin)}


def _risk_figures(ruined: int, reached: int, behind: int, sessions: int, mean: float, half: float) -> dict:
    """A simulated double barrier's figures (:func:`double_barrier`, :func:`shoe_barrier`): each share
    of the sessions with its Wilson 95% CI, and the mean win with its CI's half-width ``half``."""
    return {
        "p_ruin": ruined / sessions,
        "p_ruin_ci95": stats.wilson(ruined, sessions),
        "p_goal": reached / sessions,
        "p_goal_ci95": stats.wilson(reached, sessions),
        "p_behind": behind / sessions,
        "p_behind_ci95": stats.wilson(behind, sessions),
        "mean_win": mean,
        "mean_win_ci95": [mean - half, mean + half],
    }


def shoe_extremes(shoe: np.ndarray, values: np.ndarray, n_shoes: int) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest running sum (0 at the shoe's start) of ``values`` ``(rows, c)`` over each
    shoe, the rows of one shoe taken in row order: ``(n_shoes, c)`` each."""
    values = np.asarray(values, dtype=np.float64).reshape(len(shoe), -1)
    low = np.zeros((n_shoes, values.shape[1]))
    high = np.zeros_like(low)
    if not len(shoe):
        return low, high
    order = np.argsort(shoe, kind="stable")
    group = shoe[order]
    running = np.cumsum(values[order], axis=0)
    starts = np.flatnonzero(np.append(True, group[1:] != group[:-1]))
    offset = np.where(starts[:, None] > 0, running[np.maximum(starts - 1, 0)], 0.0)
    relative = running - np.repeat(offset, np.diff(np.append(starts, len(group))), axis=0)
    shoes = group[starts]
    low[shoes] = np.minimum(np.minimum.reduceat(relative, starts, axis=0), 0.0)
    high[shoes] = np.maximum(np.maximum.reduceat(relative, starts, axis=0), 0.0)
    return low, high


_BLOCK = 1_000  # sessions per block of the shoe barrier (bounds the memory of its shoe draws: 4 MB)
_RUIN, _GOAL = 1, 2  # how a session of the shoe barrier ended (0: at the time limit)


@numba.njit(cache=True, nogil=True)
def _barrier_sessions(idx, net, low, high, bankroll, target, stake, final, ends):
    """The sessions of :func:`shoe_barrier` over the drawn shoes ``idx`` ``(m, shoes)``, each played
    shoe by shoe up to its end: writes each one's ``final`` bankroll and how it ``ends`` (0, ``_RUIN``,
    ``_GOAL``), returns the shoes played in all. (The bankroll before shoe ``j`` is ``bankroll`` plus
    the nets of shoes ``0..j`` minus that of ``j``, the running sum formed left to right: the bits of
    the array form ``bankroll + cumsum(x) - x`` that this loop replaces.)"""
    played = 0
    for i in range(idx.shape[0]):
        running = 0.0
        ends[i] = 0
        for j in range(idx.shape[1]):
            s = idx[i, j]
            running += net[s]
            before = (bankroll + running) - net[s]
            if before + low[s] < stake:  # ruin first: the shoe's low point comes before the goal's
                final[i], ends[i] = before + low[s], _RUIN
                break
            if before + high[s] >= target:
                final[i], ends[i] = before + high[s], _GOAL
                break
            final[i] = before + net[s]
        played += j + 1
    return played


def shoe_barrier(
    net: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    bankroll: float,
    goal: float,
    shoes: int,
    sessions: int = 10_000,
    seed: int = 0,
    stake: float = 1.0,
) -> dict:
    """Risk of ruin with a goal and a time limit in shoes (a "double barrier"), by resampling shoes.

    Each session starts at ``bankroll`` and plays up to ``shoes`` shoes drawn independently, with
    replacement, from the dealt ones: shoe ``s`` nets ``net[s]`` units, its running win going down to
    ``low[s]`` and up to ``high[s]`` (:func:`shoe_extremes`). It ends at ruin (the bankroll below
    ``stake``: the next bet cannot be covered), at the goal (``bankroll + goal`` reached) or after
    ``shoes``; ruin is checked first within a shoe (the two cannot both happen in one shoe unless it
    swings by more than ``bankroll + goal - stake``). Returns ``p_ruin``, ``p_goal``, ``p_behind``
    (the session ends below its start: ruined, or behind at the limit), the ``mean_win`` (a session
    stopped at the goal counts the shoe's high point) and ``mean_shoes`` played.
    """
    return shoe_barriers([(net, low, high)], bankroll, goal, shoes, sessions, seed, stake)[0]


def shoe_barriers(
    variants: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
    bankroll: float,
    goal: float,
    shoes: int,
    sessions: int = 10_000,
    seed: int = 0,
    stake: float = 1.0,
) -> list[dict]:
    """:func:`shoe_barrier` of each ``(net, low, high)`` of ``variants`` (the same number of shoes),
    all over the same drawn shoes: each result is the bits of its own :func:`shoe_barrier` call with
    this ``seed``, and the draws, most of the work, are made once."""
    variants = [
        (
            np.asarray(net, dtype=np.float64),
            np.asarray(low, dtype=np.float64),
            np.asarray(high, dtype=np.float64),
        )
        for net, low, high in variants
    ]
    for net, low, high in variants:
        if net.ndim != 1 or not net.size or low.shape != net.shape or high.shape != net.shape:
            raise ValueError("net, low, high: one-dimensional arrays of the same length (one per shoe)")
    if len({net.size for net, _, _ in variants}) > 1:
        raise ValueError("every variant of the shoe barrier must have the same number of shoes")
    for name, value in (("shoes", shoes), ("sessions", sessions)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}={value!r} is not allowed; allowed: an integer >= 1")
    if not variants:
        return []
    rng = np.random.default_rng(seed)
    # per variant: sessions ruined, at the goal, behind; the sums of the win and its square; shoes
    sums = np.zeros((len(variants), 6))
    target = bankroll + goal
    for start in range(0, sessions, _BLOCK):
        m = min(_BLOCK, sessions - start)
        idx = rng.integers(0, variants[0][0].size, size=(m, shoes))
        final, ends = np.empty(m), np.empty(m, dtype=np.int8)
        for v, (net, low, high) in enumerate(variants):
            played = _barrier_sessions(
                idx, net, low, high, float(bankroll), float(target), float(stake), final, ends
            )
            is_goal = ends == _GOAL
            win = final - bankroll
            sums[v] += (
                int((ends == _RUIN).sum()),
                int(is_goal.sum()),
                int((~is_goal & (win < 0)).sum()),
                float(win.sum()),
                float((win * win).sum()),
                played,
            )
    return [_barrier_figures(row, sessions) for row in sums.tolist()]


def _barrier_figures(sums: list[float], sessions: int) -> dict:
    """:func:`shoe_barrier`'s figures from its sums over the sessions (those of :func:`shoe_barriers`)."""
    ruined, reached, behind = (int(count) for count in sums[:3])
    total_win, total_square, played = sums[3:]
    mean = total_win / sessions
    sd = math.sqrt(max(total_square / sessions - mean * mean, 0.0) * sessions / max(sessions - 1, 1))
    half = Z95 * sd / math.sqrt(sessions)
    return {**_risk_figures(ruined, reached, behind, sessions, mean, half), "mean_shoes": played / sessions}


__all__ = [
    "double_barrier",
    "diffusion_barrier",
    "two_outcome_bet",
    "walk_barrier",
    "shoe_extremes",
    "shoe_barrier",
    "shoe_barriers",
]
