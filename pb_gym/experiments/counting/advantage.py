"""The advantage player's report: what a count earns and risks, in the units card counters use.

Counting tools for blackjack (CVData, CVCX, Schlesinger's *Blackjack Attack*) report a count by these
figures; this module computes them for a baccarat count from its per-bet figures:

* win rate and SD per hand bet (``mean``, ``sd`` of one bet's net win in units of the stake) and per
  100 hands dealt (a count bets on a fraction ``frequency`` of the hands);
* EV and SD per hour at ``hands_per_hour`` (mini-baccarat and live tables deal about 70-80);
* DI, the desirability index: 1000 x win rate / SD, per hand dealt;
* N0 = variance / EV^2: the hands to be one SD ahead;
* SCORE: the win per 100 hands at the bet size where the bankroll of 10,000 units gives a 13.5%
  (e^-2) risk of ruin; with the diffusion formula below it is DI^2;
* risk of ruin for a bankroll: the diffusion formula exp(-2 EV B / var) (no goal, no time limit), and,
  because 40:1 and 200:1 tails break the normal approximation, a simulated double barrier (a goal and a
  hand limit) with 95% CIs (:func:`double_barrier`); the same barrier for the normal model
  (:func:`diffusion_barrier`, a closed-form series) and for independent two-outcome bets
  (:func:`walk_barrier`, exact), so that the tail's and the shoe's parts of a risk of ruin can be told
  apart (:func:`barrier_models`).

Jacobson's published desirability index for his side-bet counts is reproduced by
:func:`jacobson_di`: it divides the win per hand dealt by the SD of the bet *off the top of the shoe*
(the full shoe's win probability) over the hands bet, not by the SD of the bets the count makes.

The counting studies (:mod:`pb_gym.experiments.counting`, :mod:`pb_gym.experiments.atlas`) give every count
and
every perfect-information bettor these figures from their per-shoe sums (:func:`bettor_report`), with
a double barrier over whole shoes (:func:`shoe_barrier`: sessions of ``session_shoes`` shoes drawn from
the dealt ones, so the hands of a shoe keep their correlation). :func:`replay_count` deals a count
given as tags (balanced or not, any starting count, a running or a true count) without the exact
calculator; :data:`HOW_DRAGON7` is Stephen How's published Dragon 7 count, replayed that way.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numba
import numpy as np
from pydantic import Field

from pb_gym import engine, exact
from pb_gym import rules as R
from pb_gym.experiments.common.yaml_config import Strict
from pb_gym.experiments.counting import counts

HANDS_PER_HOUR = 75
"""Hands dealt per hour at a mini-baccarat or live table (about 70-80)."""
SCORE_RUIN = math.exp(-2.0)
"""The risk of ruin (13.5%) at which SCORE is defined."""
SCORE_BANKROLL = 10_000.0
"""The bankroll (units) to which SCORE is scaled."""


class RiskConfig(Strict):
    """The advantage player's figures of a counting study (the ``advantage:`` section)."""

    bankroll: float = Field(500.0, gt=0, description="bankroll for the risk of ruin, in units of one bet")
    goal: float = Field(
        1000.0, gt=0, description="the double barrier's goal: stop once this many units ahead"
    )
    session_shoes: int = Field(500, ge=1, le=100_000, description="the double barrier's time limit, in shoes")
    hands_per_hour: float = Field(
        HANDS_PER_HOUR, gt=0, description="hands dealt per hour (EV and SD per hour)"
    )
    sessions: int = Field(
        10_000,
        ge=100,
        le=1_000_000,
        description="sessions simulated for the double barrier (resampled shoes)",
    )
    seed: int = Field(0, ge=0, description="seed of the sessions' shoe draws")


def figures(mean: float, sd: float, frequency: float, hands_per_hour: float = HANDS_PER_HOUR) -> dict:
    """The advantage player's figures of a count that bets one unit on a fraction of the hands.

    Args:
        mean: the mean net win of one bet the count makes (units per unit staked).
        sd: the SD of one bet's net win.
        frequency: the share of the hands dealt that the count bets on (0..1].
        hands_per_hour: hands dealt per hour.

    Returns:
        ``win_rate_per_bet``, ``sd_per_bet``, ``win_per_100_dealt``, ``sd_per_100_dealt``,
        ``ev_per_hour``, ``sd_per_hour``, ``di``, ``n0`` (hands dealt), ``score``.
    """
    if not 0.0 < frequency <= 1.0:
        raise ValueError(f"frequency={frequency!r} is not allowed; allowed: a share in (0, 1]")
    if not sd > 0:
        raise ValueError(f"sd={sd!r} is not allowed; allowed: a number > 0")
    if not hands_per_hour > 0:
        raise ValueError(f"hands_per_hour={hands_per_hour!r} is not allowed; allowed: a number > 0")
    ev = frequency * mean  # per hand dealt
    variance = frequency * (sd * sd + mean * mean) - ev * ev
    sd_dealt = math.sqrt(variance)
    return {
        "win_rate_per_bet": mean,
        "sd_per_bet": sd,
        "win_per_100_dealt": 100.0 * ev,
        "sd_per_100_dealt": 10.0 * sd_dealt,
        "ev_per_hour": hands_per_hour * ev,
        "sd_per_hour": math.sqrt(hands_per_hour) * sd_dealt,
        "di": 1000.0 * ev / sd_dealt,
        "n0": variance / (ev * ev) if ev != 0 else math.inf,
        "score": score(ev, variance),
    }


def score(ev: float, variance: float) -> float:
    """SCORE: win per 100 hands when the bet is sized so that :data:`SCORE_BANKROLL` units carry a
    :data:`SCORE_RUIN` risk of ruin by the diffusion formula (0 for a count that does not win)."""
    if ev <= 0:
        return 0.0
    # exp(-2 k ev B / (k^2 var)) = SCORE_RUIN  ->  k = 2 ev B / (var (-ln SCORE_RUIN))
    k = 2.0 * ev * SCORE_BANKROLL / (variance * -math.log(SCORE_RUIN))
    return 100.0 * k * ev


def risk_of_ruin(bankroll: float, ev: float, variance: float) -> float:
    """The diffusion (normal) risk of ever losing ``bankroll`` units: exp(-2 ev B / var); 1 when the
    count does not win."""
    if ev <= 0:
        return 1.0
    return math.exp(-2.0 * ev * bankroll / variance)


def _interval(successes: int, n: int) -> list[float]:
    """Wilson 95% interval of a share."""
    if n == 0:
        return [math.nan, math.nan]
    z = 1.959963984540054
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [centre - half, centre + half]


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
        "p_ruin_ci95": _interval(ruined, sessions),
        "p_goal": reached / sessions,
        "p_goal_ci95": _interval(reached, sessions),
        "p_behind": behind / sessions,
        "p_behind_ci95": _interval(behind, sessions),
        "mean_win": mean,
        "mean_win_ci95": [mean - half, mean + half],
    }


def jacobson_di(frequency: float, win_per_100_dealt: float, house_edge: float, pays: float) -> float:
    """Jacobson's desirability index of a side-bet count, as he computes it: the win per hand dealt
    over the SD per hand dealt of a bet placed on ``frequency`` of the hands at the *full shoe's*
    odds (win ``pays``:1 with probability (1 - house_edge) / (pays + 1), else lose 1)."""
    p = (1.0 - house_edge) / (pays + 1.0)
    second_moment = p * pays * pays + (1.0 - p)
    return 1000.0 * (win_per_100_dealt / 100.0) / math.sqrt(frequency * second_moment)


def count_di(frequency: float, win_per_100_dealt: float, pays: float) -> float:
    """The desirability index from the count's own bets: the same bet at the count's average edge
    (win per bet = win per 100 dealt / (100 x frequency)), a two-outcome bet paying ``pays``:1."""
    mean = win_per_100_dealt / (100.0 * frequency)
    p = (1.0 + mean) / (pays + 1.0)
    sd = math.sqrt(p * pays * pays + (1.0 - p) - mean * mean)
    return figures(mean, sd, frequency)["di"]


# --------------------------------------------------------------------------------------------------
# Per-shoe sums -> the report of one bettor (a count or the perfect-information bettor of one bet)
# --------------------------------------------------------------------------------------------------
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
    half = 1.959963984540054 * sd / math.sqrt(sessions)
    return {**_risk_figures(ruined, reached, behind, sessions, mean, half), "mean_shoes": played / sessions}


def _shifted(
    net: np.ndarray, low: np.ndarray, high: np.ndarray, bets: np.ndarray, delta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shoes with their mean net moved by ``delta``, spread over each shoe's bets."""
    per_bet = delta * bets / max(float(bets.mean()), 1e-300)
    return net + per_bet, low + np.minimum(per_bet, 0.0), high + np.maximum(per_bet, 0.0)


def barrier_with_ci(
    net: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    bets: np.ndarray,
    ev: np.ndarray,
    risk: RiskConfig,
    stake: float = 1.0,
) -> dict:
    """:func:`shoe_barrier` of the dealt shoes, recentred on the exact EV: each shoe's dealt path keeps
    its swings, and the shoes' mean net is moved from the dealt one to the mean exact EV ``ev`` of the
    hands bet (the dealt outcomes' noise around it has mean zero, and is far larger). Each figure has a
    95% CI that carries both sources of error: the exact win rate's 95% CI over shoes (the barrier run
    again at each end of it, on the same draws) widened by the simulation's half-width there."""
    n = len(net)
    se = float(np.std(ev, ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    shift = float(np.mean(ev) - np.mean(net))

    # the centre and both ends of the win rate's CI, over the same draws
    shifts = [shift] + [shift + d * 1.959963984540054 * se for d in (-1, 1)]
    centre, *ends = shoe_barriers(
        [_shifted(net, low, high, bets, delta) for delta in shifts],
        risk.bankroll,
        risk.goal,
        risk.session_shoes,
        risk.sessions,
        risk.seed,
        stake,
    )
    out = dict(centre)
    for key in ("p_ruin", "p_goal", "p_behind", "mean_win"):
        lo = min(e[f"{key}_ci95"][0] for e in ends + [centre])
        hi = max(e[f"{key}_ci95"][1] for e in ends + [centre])
        out[f"{key}_ci95"] = [max(lo, 0.0), min(hi, 1.0)] if key != "mean_win" else [lo, hi]
    out.update(
        {
            "bankroll": risk.bankroll,
            "goal": risk.goal,
            "session_shoes": risk.session_shoes,
            "sessions": risk.sessions,
            "shoes_resampled": n,
        }
    )
    return out


def bettor_report(
    hands: np.ndarray,
    bets: np.ndarray,
    ev: np.ndarray,
    payoff: np.ndarray,
    payoff_sq: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    risk: RiskConfig,
    barrier: bool = True,
) -> dict:
    """The advantage player's figures of a one-unit bettor, from per-shoe sums (one row per shoe):
    hands dealt, hands bet, exact EV, dealt payoff and its square on the hands bet, and the running
    win's extremes (:func:`shoe_extremes`).

    The win rate per hand bet is the exact EV (the estimate with the least noise); its SD is the dealt
    payoffs' (second moment minus the square of their mean). Then :func:`figures` (win and SD per hand
    bet, per 100 hands dealt and per hour; DI, N0, SCORE), the diffusion risk of ruin at
    ``risk.bankroll`` and, with ``barrier``, the double barrier over shoes (:func:`barrier_with_ci`)
    and the same barrier for the normal model and for independent bets (:func:`barrier_models`).
    """
    n_bets, n_hands, shoes = float(bets.sum()), float(hands.sum()), len(hands)
    if n_bets <= 0:
        return {"note": "never bets"}
    mean = float(ev.sum()) / n_bets
    realized = float(payoff.sum()) / n_bets
    sd = math.sqrt(max(float(payoff_sq.sum()) / n_bets - realized * realized, 0.0))
    if sd <= 0:
        return {"note": "every hand bet paid the same: no SD"}
    out = figures(mean, sd, n_bets / n_hands, risk.hands_per_hour)
    per_hand_ev = out["win_per_100_dealt"] / 100.0
    variance = (out["sd_per_100_dealt"] / 10.0) ** 2
    out.update(
        {
            "realized_win_rate_per_bet": realized,
            "bets_per_shoe": n_bets / shoes,
            "win_per_shoe": float(ev.sum()) / shoes,
            "realized_win_per_shoe": float(payoff.sum()) / shoes,
            "risk_of_ruin_formula": risk_of_ruin(risk.bankroll, per_hand_ev, variance),
        }
    )
    if barrier:
        out["double_barrier"] = barrier_with_ci(payoff, low, high, bets, ev, risk)
        out["barrier_models"] = barrier_models(mean, sd, n_bets / shoes, risk)
    return out


def barrier_models(
    mean: float, sd: float, bets_per_shoe: float, risk: RiskConfig, stake: float = 1.0
) -> dict:
    """The double barrier of ``risk`` (bankroll, goal, ``session_shoes``) for two models of the bets,
    beside the resampled shoes of :func:`barrier_with_ci`: over ``bets`` = ``bets_per_shoe`` x
    ``session_shoes`` bets (rounded) of this ``mean`` and ``sd`` (per bet), the ``normal`` one (a
    diffusion of the same drift and variance, :func:`diffusion_barrier`) and the ``walk`` of
    independent bets (the two-outcome bet of the same mean and SD, :func:`two_outcome_bet`: ``win``
    units with probability ``p_win``, else -1; :func:`walk_barrier`, exact). The normal model has no
    tail, the walk has the bet's tail but no shoe: bets independent, as many in every session."""
    bets = max(1, round(bets_per_shoe * risk.session_shoes))
    if risk.bankroll <= stake:
        return {"bets": bets, "note": f"a bankroll of {risk.bankroll:g} does not cover one bet"}
    win, p_win = two_outcome_bet(mean, sd)
    return {
        "bets": bets,
        "normal": diffusion_barrier(mean, sd * sd, risk.bankroll, risk.goal, bets, stake),
        "walk": {
            "win": win,
            "p_win": p_win,
            **walk_barrier(win, p_win, risk.bankroll, risk.goal, bets, stake),
        },
    }


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{100 * value:.{digits}f}"


def _model_cells(models: dict | None) -> list[str]:
    """The ruin % of :func:`barrier_models`' two models (``n/a`` without them)."""
    if not models or "note" in models:
        return ["n/a", "n/a"]
    return [
        _pct(models["normal"]["p_ruin"]),
        f"{_pct(models['walk']['p_ruin'])} ({models['walk']['win']:.1f}:1)",
    ]


def advantage_table(rows: list[tuple[str, dict]], risk: dict) -> str:
    """The advantage player's figures of several bettors (``(name, bettor_report(...))`` pairs) as a
    Markdown table; ``risk`` is the :class:`RiskConfig` the reports were computed with (as a dict)."""
    barrier = f"{risk['bankroll']:g} units, goal +{risk['goal']:g}, {risk['session_shoes']} shoes"
    lines = [
        "| bettor | hands bet % | win/bet % | SD/bet | units/100 hands | SD/100 hands | "
        f"units/hour ({risk['hands_per_hour']:g} hands) | DI | SCORE | N0 (hands) | units/shoe | "
        f"risk of ruin, formula ({risk['bankroll']:g} units) % | ruin % ({barrier}) | goal % | "
        "behind % | mean win (units) | ruin %, same barrier: normal model | ruin %, same barrier: "
        "independent bets |",
        "|---|" + "---|" * 17,
    ]
    for name, a in rows:
        if "note" in a:
            lines.append(f"| {name} | " + " | ".join([a["note"]] + [""] * 16) + " |")
            continue
        freq = a["win_per_100_dealt"] / 100.0 / a["win_rate_per_bet"] if a["win_rate_per_bet"] else math.nan
        b = a.get("double_barrier")

        def ci(key: str, factor: float = 100.0, digits: int = 1, b: dict | None = b) -> str:
            if b is None:
                return "n/a"
            lo, hi = b[f"{key}_ci95"]
            return f"{factor * b[key]:.{digits}f} [{factor * lo:.{digits}f}, {factor * hi:.{digits}f}]"

        cells = [
            _pct(freq, 2),
            f"{100 * a['win_rate_per_bet']:+.2f}",
            f"{a['sd_per_bet']:.2f}",
            f"{a['win_per_100_dealt']:+.3f}",
            f"{a['sd_per_100_dealt']:.1f}",
            f"{a['ev_per_hour']:+.3f}",
            f"{a['di']:.2f}",
            f"{a['score']:.2f}",
            f"{a['n0']:,.0f}" if math.isfinite(a["n0"]) else "inf",
            f"{a['win_per_shoe']:+.3f}",
            _pct(a["risk_of_ruin_formula"]),
            ci("p_ruin"),
            ci("p_goal"),
            ci("p_behind"),
            ci("mean_win", 1.0, 0),
            *_model_cells(a.get("barrier_models")),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# A count replayed on dealt shoes (no exact calculator): tags, a starting count, running or true
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CountSpec:
    """A count as a player keeps it.

    ``tags`` for A, 2, ..., 9 and the ten-value cards
    (:func:`pb_gym.experiments.counting.counts.tags_by_rank`); the
    count starts at ``start``; it is the running count (``true=False``) or the running count per
    deck unseen (``true=True``; ``start`` is then added after the division); the player bets one unit
    on ``bet`` (a column of :data:`pb_gym.rules.BETS`) when the count is at least ``trigger``.
    """

    tags: tuple[float, ...]
    trigger: float
    bet: str
    start: float = 0.0
    true: bool = True

    def value(self, unseen: np.ndarray, decks: int) -> np.ndarray:
        """The count before the next hand for compositions ``unseen`` ``(n, 13)``."""
        unseen = np.asarray(unseen, dtype=np.float64)
        seen = (R.full_shoe(decks)[None, :] - unseen) @ counts.tags_by_rank(self.tags)
        if self.true:
            seen = seen / (unseen.sum(axis=1) / R.CARDS_PER_DECK)
        return self.start + seen


def replay_count(
    rules: R.Rules, count: CountSpec, shoes: int, seed: int | np.random.SeedSequence
) -> dict[str, np.ndarray]:
    """Deal the first shoe of ``shoes`` tables and play ``count``: per-shoe ``hands``, ``bets``, ``ev``
    (the exact EV of the hands bet, :func:`pb_gym.exact.expected_values`), ``payoff`` and ``payoff_sq``
    (the dealt net win and its square on the hands bet), ``low`` and ``high`` (the running win's
    extremes): the sums :func:`bettor_report` reads."""
    if count.bet not in R.BETS:
        raise ValueError(f"bet={count.bet!r} is not allowed; allowed: {', '.join(R.BETS)}")
    column = R.BETS.index(count.bet)
    state = engine.init(rules, shoes, seed=seed)
    hand = engine.HandResult.empty(shoes)
    out = {k: np.zeros(shoes) for k in ("hands", "bets", "ev", "payoff", "payoff_sq", "low", "high")}
    running = np.zeros(shoes)
    while True:
        live = counts.live_tables(rules, state)
        if not live.any():
            return out
        tables = np.flatnonzero(live)
        unseen = state.unseen[tables]
        bet = count.value(unseen, rules.decks) >= count.trigger
        if bet.any():
            out["ev"][tables[bet]] += exact.expected_values(unseen[bet].astype(np.int64), rules)[:, column]
        engine.deal(rules, state, hand)
        win = np.where(bet, hand.payoffs(rules)[tables, column], 0.0)
        out["hands"][tables] += 1
        out["bets"][tables] += bet
        out["payoff"][tables] += win
        out["payoff_sq"][tables] += win * win
        running[tables] += win
        out["low"][tables] = np.minimum(out["low"][tables], running[tables])
        out["high"][tables] = np.maximum(out["high"][tables], running[tables])


HOW_DRAGON7 = {
    "source": "Stephen How, 'Unbalanced Dragon 7 Count', discountgambling.net, October 2012",
    "count": CountSpec(
        tags=(1, 0, 0, -1, -1, -1, -1, 2, 2, 0), trigger=0.0, bet="dragon7", start=-32.0, true=False
    ),
    "conditions": "8 decks, cut card 16 cards from the end; EZ Baccarat's Dragon 7 (40:1)",
    "rules": {"decks": 8, "cut_card": 16, "burn": True, "hand_after_cut": False},
    "risk": {"bankroll": 500.0, "goal": 1000.0, "session_shoes": 500},
    "win_per_shoe": 0.52,
    "bets_per_shoe": 6.8,
    "p_ruin": 0.035,
    "p_behind": 0.24,
    "mean_win": 250.0,
}
"""Stephen How's unbalanced Dragon 7 count (A +1; 4, 5, 6, 7 -1; 8, 9 +2; the rest 0; start at -32,
bet when the running count is at least 0) and the figures he publishes for it."""
