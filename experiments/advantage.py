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
  hand limit) with 95% CIs (:func:`double_barrier`).

Jacobson's published desirability index for his side-bet counts is reproduced by
:func:`jacobson_di`: it divides the win per hand dealt by the SD of the bet *off the top of the shoe*
(the full shoe's win probability) over the hands bet, not by the SD of the bets the count makes.
"""

from __future__ import annotations

import math

import numpy as np

HANDS_PER_HOUR = 75
"""Hands dealt per hour at a mini-baccarat or live table (about 70-80)."""
SCORE_RUIN = math.exp(-2.0)
"""The risk of ruin (13.5%) at which SCORE is defined."""
SCORE_BANKROLL = 10_000.0
"""The bankroll (units) to which SCORE is scaled."""


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
    return {
        "p_ruin": float(ruined.mean()),
        "p_ruin_ci95": _interval(int(ruined.sum()), sessions),
        "p_goal": float(reached.mean()),
        "p_goal_ci95": _interval(int(reached.sum()), sessions),
        "p_behind": float(behind.mean()),
        "p_behind_ci95": _interval(int(behind.sum()), sessions),
        "mean_win": float(win.mean()),
        "mean_win_ci95": [float(win.mean()) - half, float(win.mean()) + half],
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
