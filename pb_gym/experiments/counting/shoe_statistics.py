"""Statistics over shoes for the counting study (:mod:`pb_gym.experiments.counting`).

Hands within a shoe are correlated, shoes are independent: a chunk of the main deal returns sums only,
per shoe (one row per shoe), per depth bin, and the moments of (true count, EV), never per-hand arrays
(:func:`shoe_sums`); :func:`merge` concatenates the per-shoe rows in chunk order and adds the rest, so
the merged sums are the same, to the last bit, wherever the chunks ran. Every figure is then a ratio
of per-shoe sums with its 95% confidence interval over shoes (the ratio estimator of
:func:`pb_gym.experiments.common.stats.ratio_ci`): the perfect-information bettor's of each bet
(:func:`bet_figures`), a count's (:func:`count_figures`), and the figures by depth
(:func:`depth_figures`).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence

import numpy as np

from pb_gym import rules as R
from pb_gym.experiments.common.stats import ratio_ci
from pb_gym.experiments.counting import counts
from pb_gym.experiments.counting.advantage import RiskConfig, bettor_report
from pb_gym.experiments.counting.barriers import shoe_extremes

# --------------------------------------------------------------------------------------------------
# One chunk of the main deal: mergeable sums (per shoe, per depth bin, moments of true count and EV)
# --------------------------------------------------------------------------------------------------
PER_SHOE = (
    "hands",
    "ev",
    "positive",
    "gain",
    "realized",
    "realized_sq",
    "perfect_low",
    "perfect_high",
    "count_bet",
    "count_ev",
    "count_payoff",
    "count_payoff_sq",
    "count_low",
    "count_high",
)
"""The per-shoe sums (one row per shoe): the merge concatenates them in chunk order; the rest add up."""


def _sum_by(index: np.ndarray, weights: np.ndarray, length: int) -> np.ndarray:
    """Column sums of ``weights`` ``(rows, k)`` grouped by ``index``: ``(length, k)``."""
    columns = [np.bincount(index, weights=w, minlength=length) for w in weights.T]
    return np.stack(columns, axis=1) if columns else np.zeros((length, 0))


def shoe_sums(
    dealt: dict[str, np.ndarray],
    n_shoes: int,
    count_index: list[int],
    thresholds: list[float],
    n_bins: int,
    bin_cards: int,
) -> dict[str, np.ndarray]:
    """Reduce the per-hand rows of a deal (:func:`pb_gym.experiments.counting.deal_shoes`) to the sums
    every statistic needs.

    Per shoe (``(n_shoes,)`` or ``(n_shoes, k)``): ``hands`` dealt; per studied bet the sum of the exact
    ``ev``, the number of hands with EV > 0 (``positive``), the sum of max(EV, 0) (``gain``: the
    perfect-information bettor's predicted profit) and of the dealt payoff on those hands
    (``realized``, its square ``realized_sq`` and the running win's extremes ``perfect_low`` and
    ``perfect_high``, :func:`pb_gym.experiments.counting.barriers.shoe_extremes`); per count, the
    hands with true count >= its threshold (``count_bet``), the sums of the EV and of the dealt payoff
    on them, the payoff's square and the running win's extremes (``count_payoff_sq``, ``count_low``,
    ``count_high``). Per depth bin: ``depth_hands``, ``depth_positive``, ``depth_gain``, ``depth_ev``.
    Per count: ``moments`` = (n, sum x, sum y, sum x^2, sum y^2, sum xy) of x = true count and y = the
    counted bet's EV.
    """
    shoe, ev = dealt["shoe"], dealt["ev"]
    payoff = dealt["payoff"].astype(np.float64)
    positive, gain, realized = counts.perfect_bettor(ev, payoff)
    tc = dealt["true_count"].astype(np.float64)
    counted = ev[:, count_index]
    bet = tc >= np.asarray(thresholds, dtype=np.float64)[None, :]
    depth_bin = dealt["depth"].astype(np.int64) // bin_cards
    count_payoff = np.where(bet, payoff[:, count_index], 0.0)
    perfect_low, perfect_high = shoe_extremes(shoe, realized, n_shoes)
    count_low, count_high = shoe_extremes(shoe, count_payoff, n_shoes)
    return {
        "hands": np.bincount(shoe, minlength=n_shoes).astype(np.float64),
        "ev": _sum_by(shoe, ev, n_shoes),
        "positive": _sum_by(shoe, positive.astype(np.float64), n_shoes),
        "gain": _sum_by(shoe, gain, n_shoes),
        "realized": _sum_by(shoe, realized, n_shoes),
        "realized_sq": _sum_by(shoe, realized * realized, n_shoes),
        "perfect_low": perfect_low,
        "perfect_high": perfect_high,
        "count_bet": _sum_by(shoe, bet.astype(np.float64), n_shoes),
        "count_ev": _sum_by(shoe, np.where(bet, counted, 0.0), n_shoes),
        "count_payoff": _sum_by(shoe, count_payoff, n_shoes),
        "count_payoff_sq": _sum_by(shoe, count_payoff * count_payoff, n_shoes),
        "count_low": count_low,
        "count_high": count_high,
        "depth_hands": np.bincount(depth_bin, minlength=n_bins).astype(np.int64),
        "depth_positive": _sum_by(depth_bin, positive.astype(np.float64), n_bins),
        "depth_gain": _sum_by(depth_bin, gain, n_bins),
        "depth_ev": _sum_by(depth_bin, ev, n_bins),
        "moments": np.stack(
            [
                np.full(len(count_index), float(len(shoe))),
                tc.sum(axis=0),
                counted.sum(axis=0),
                (tc * tc).sum(axis=0),
                (counted * counted).sum(axis=0),
                (tc * counted).sum(axis=0),
            ],
            axis=1,
        ),
    }


def merge(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Merge chunk sums exactly: per-shoe rows concatenated in chunk order, everything else added (in
    chunk order, so the floating-point result does not depend on where or when a chunk ran)."""
    return {
        key: (
            np.concatenate([p[key] for p in parts])
            if key in PER_SHOE
            else functools.reduce(operator.add, [p[key] for p in parts])
        )
        for key in parts[0]
    }


# --------------------------------------------------------------------------------------------------
# Statistics over shoes, from the merged sums
# --------------------------------------------------------------------------------------------------
def correlation(moments: np.ndarray) -> float:
    """Pearson correlation from (n, sum x, sum y, sum x^2, sum y^2, sum xy)."""
    n, sx, sy, sxx, syy, sxy = (float(v) for v in moments)
    cov, var_x, var_y = sxy - sx * sy / n, sxx - sx * sx / n, syy - sy * sy / n
    return cov / math.sqrt(var_x * var_y) if var_x > 0 and var_y > 0 else math.nan


def bet_figures(
    main: dict[str, np.ndarray], names: Sequence[str], ev_full: np.ndarray, eor: np.ndarray, risk: RiskConfig
) -> dict[str, dict]:
    """The perfect-information bettor's figures of each bet ``names[k]`` (column ``k`` of the merged
    sums ``main``), beside its full-shoe EV ``ev_full[k]`` and its effects of removal ``eor[:, k]``:
    the share of hands with EV > 0, the mean EV when positive, the predicted and realized gain per
    hand, the cut-card effect (the average exact EV per hand dealt minus the full-shoe EV) and the
    advantage player's figures (:func:`pb_gym.experiments.counting.advantage.bettor_report`)."""
    n = main["hands"]  # hands dealt, per shoe
    hands = int(n.sum())
    per_bet: dict[str, dict] = {}
    for k, name in enumerate(names):
        gain, realized = main["gain"][:, k], main["realized"][:, k]
        cut = ratio_ci(main["ev"][:, k] - ev_full[k] * n, n)
        per_bet[name] = {
            "ev_full_shoe": float(ev_full[k]),
            "share_positive": ratio_ci(main["positive"][:, k], n),
            "mean_ev_when_positive": ratio_ci(gain, main["positive"][:, k]),
            "gain_per_hand_predicted": ratio_ci(gain, n),
            "gain_per_hand_realized": ratio_ci(realized, n),
            "realized_minus_predicted": ratio_ci(realized - gain, n),
            "average_ev_per_hand_dealt": ratio_ci(main["ev"][:, k], n),
            "cut_card_effect": cut,
            "cut_card_effect_significant": bool(cut["ci95"][0] > 0 or cut["ci95"][1] < 0),
            "eor": {rank: float(eor[r, k]) for r, rank in enumerate(R.RANKS)},
        }
        per_bet[name]["gain_per_shoe_predicted"] = (
            per_bet[name]["gain_per_hand_predicted"]["estimate"] * hands / len(n)
        )
        per_bet[name]["advantage"] = bettor_report(
            n,
            main["positive"][:, k],
            gain,
            realized,
            main["realized_sq"][:, k],
            main["perfect_low"][:, k],
            main["perfect_high"][:, k],
            risk,
        )
    return per_bet


def count_figures(main: dict[str, np.ndarray], j: int, perfect_bet: dict, risk: RiskConfig) -> dict:
    """Count ``j``'s figures from the merged sums ``main``, beside those of the perfect-information
    bettor of the bet it plays (``perfect_bet``, an entry of :func:`bet_figures`): the correlation of
    its true count with the bet's EV, the share of hands it bets, its predicted and realized profit per
    hand, the part of the perfect-information gain it captures, and the advantage player's figures."""
    n = main["hands"]
    perfect = perfect_bet["gain_per_hand_predicted"]["estimate"]
    predicted = ratio_ci(main["count_ev"][:, j], n)
    return {
        "correlation_true_count_ev": correlation(main["moments"][j]),
        "share_of_hands_bet": ratio_ci(main["count_bet"][:, j], n),
        "profit_per_hand_predicted": predicted,
        "profit_per_hand_realized": ratio_ci(main["count_payoff"][:, j], n),
        "perfect_info_share_of_hands_bet": perfect_bet["share_positive"]["estimate"],
        "perfect_info_profit_per_hand_predicted": perfect,
        "perfect_info_profit_per_hand_realized": perfect_bet["gain_per_hand_realized"]["estimate"],
        "fraction_of_perfect_info_gain": (predicted["estimate"] / perfect) if perfect else None,
        "advantage": bettor_report(
            n,
            main["count_bet"][:, j],
            main["count_ev"][:, j],
            main["count_payoff"][:, j],
            main["count_payoff_sq"][:, j],
            main["count_low"][:, j],
            main["count_high"][:, j],
            risk,
        ),
    }


def depth_figures(main: dict[str, np.ndarray], names: Sequence[str], bin_cards: int) -> dict:
    """The figures by depth (cards out of the shoe, burn included, before the hand; bins of
    ``bin_cards``): the hands in each bin and, per bet, the share of hands with EV > 0, the mean EV
    when positive, the gain per hand and the mean EV (None where a bin has no hand to divide by)."""
    hands_in_bin = main["depth_hands"]
    by_depth: dict[str, dict] = {}
    for k, name in enumerate(names):
        positives, ev_pos, ev_sum = (main[key][:, k] for key in ("depth_positive", "depth_gain", "depth_ev"))
        with np.errstate(invalid="ignore", divide="ignore"):
            by_depth[name] = {
                "share_positive": np.where(hands_in_bin > 0, positives / hands_in_bin, np.nan),
                "mean_ev_when_positive": np.where(positives > 0, ev_pos / positives, np.nan),
                "gain_per_hand": np.where(hands_in_bin > 0, ev_pos / hands_in_bin, np.nan),
                "mean_ev": np.where(hands_in_bin > 0, ev_sum / hands_in_bin, np.nan),
            }
    return {
        "bin_start_cards": (np.arange(len(hands_in_bin)) * bin_cards).tolist(),
        "hands": hands_in_bin.tolist(),
        "bets": {
            name: {key: [None if np.isnan(v) else float(v) for v in values] for key, values in stats.items()}
            for name, stats in by_depth.items()
        },
    }


__all__ = [
    "PER_SHOE",
    "shoe_sums",
    "merge",
    "correlation",
    "bet_figures",
    "count_figures",
    "depth_figures",
]
