"""Linear counts, written once for the counting studies
(:mod:`pb_gym.experiments.counting`, :mod:`pb_gym.experiments.atlas`).

* :func:`effects_of_removal`: EoR(r) = EV(composition minus one card of rank r) - EV(composition), for
  any function giving the exact EVs of many compositions at once.
* :func:`eor_tags`: tags proportional to one bet's EoR, largest |tag| given; whole-number tags are
  the nearest *balanced* ones (:func:`balanced_integer_tags`): plain rounding would unbalance the
  count, and the true count of an unbalanced count drifts with the depth of the shoe, so that no
  single threshold fits it.
* :func:`true_counts`, :func:`best_threshold` (the threshold fitted on a training deal),
  :func:`live_tables` (the first-shoe bookkeeping of a deal) and :func:`perfect_bettor` (one unit on
  a bet whenever its exact EV is positive).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from pb_gym import engine
from pb_gym import rules as R

TEN_VALUE_RANKS = ("10", "J", "Q", "K")
"""The ranks worth 0 in baccarat that share one tag (10, J, Q, K)."""


def effects_of_removal(
    composition: np.ndarray, expected_values: Callable[[np.ndarray], np.ndarray]
) -> dict[str, np.ndarray]:
    """EV of every bet for ``composition`` (``ev``, (k,)), after removing one card of each rank
    (``ev_removed``, (13, k), NaN where the rank is absent) and their difference (``eor``).

    ``expected_values`` maps compositions ``(n, 13)`` to the exact EVs ``(n, k)``.
    """
    composition = np.asarray(composition, dtype=np.int64)
    removed = composition[None, :] - np.eye(R.N_RANKS, dtype=np.int64)
    present = composition > 0
    ev = expected_values(composition[None, :])[0]
    ev_removed = np.full((R.N_RANKS, ev.shape[0]), np.nan)
    ev_removed[present] = expected_values(removed[present])
    return {"ev": ev, "ev_removed": ev_removed, "eor": ev_removed - ev[None, :]}


def eor_tags(eor: np.ndarray, largest: float, integer: bool = False) -> np.ndarray:
    """Tags proportional to one bet's effects of removal, largest |tag| = ``largest``; all zeros when
    the EoR vanish (a bet no linear count can see, e.g. the pairs: every rank is equally common in a
    full shoe, so every EoR is the same, hence zero).

    A card whose removal raises the bet's EV gets a positive tag: a high count favours the bet. With
    ``integer``, the nearest balanced whole-number tags (:func:`balanced_integer_tags`)."""
    size = np.max(np.abs(eor))
    if not np.isfinite(size) or size < 1e-15:
        return np.zeros(R.N_RANKS)
    tags = eor / size * largest
    return balanced_integer_tags(tags) if integer else tags


_TEN_GROUP = [R.RANKS.index(r) for r in TEN_VALUE_RANKS]
_VALUE_WEIGHTS = np.array([1] * 9 + [len(TEN_VALUE_RANKS)])  # ranks per baccarat value A..9, 0
_CHOICES = (np.arange(2**10)[:, None] >> np.arange(10)[None, :]) & 1  # floor or ceiling, per value


def balanced_integer_tags(tags: np.ndarray) -> np.ndarray:
    """The whole-number tags nearest to ``tags`` (least squares over the cards of a full shoe) among
    those that are balanced (sum over a full shoe 0) and give 10, J, Q, K one tag, each tag the floor
    or the ceiling of its target; all zeros when no such rounding exists."""
    target = np.append(np.asarray(tags, dtype=np.float64)[:9], np.mean(np.asarray(tags)[_TEN_GROUP]))
    candidates = np.floor(target)[None, :] + _CHOICES
    balanced = candidates @ _VALUE_WEIGHTS == 0
    if not balanced.any():
        return np.zeros(R.N_RANKS)
    error = ((candidates - target[None, :]) ** 2) @ _VALUE_WEIGHTS
    best = candidates[np.flatnonzero(balanced)[np.argmin(error[balanced])]]
    return np.append(best[:9], [best[9]] * len(TEN_VALUE_RANKS)).astype(np.float64)


def tags_by_rank(tags: tuple[float, ...]) -> np.ndarray:
    """Tags by rank (13) from tags given for A, 2, ..., 9 and the ten-value cards (10 numbers)."""
    if len(tags) != 10:
        raise ValueError(f"tags: 10 numbers (A, 2, ..., 9, ten-value); got {len(tags)}")
    return np.array(list(tags[:9]) + [tags[9]] * len(TEN_VALUE_RANKS), dtype=np.float64)


def true_counts(unseen: np.ndarray, tags: np.ndarray, decks: int) -> np.ndarray:
    """True counts ``(n, c)`` of ``c`` counts (``tags`` ``(c, 13)``) for compositions ``unseen``
    ``(n, 13)``: the tags of the cards seen, summed, per deck unseen."""
    unseen = np.asarray(unseen, dtype=np.float64)
    seen = R.full_shoe(decks)[None, :] - unseen
    return (seen @ np.asarray(tags, dtype=np.float64).T) / (unseen.sum(axis=1) / R.CARDS_PER_DECK)[:, None]


def best_threshold(true_count: np.ndarray, ev: np.ndarray) -> tuple[float, float]:
    """The threshold t maximising sum of EV over hands with true count >= t (inf: never bet).

    Exact over all thresholds: sort by true count, descending, and take the running sum of the EVs at
    the last hand of each distinct count value. Returns (threshold, summed EV there).
    """
    order = np.argsort(-true_count, kind="stable")
    tc, cumulative = true_count[order], np.cumsum(ev[order])
    group_end = np.append(tc[1:] != tc[:-1], True)
    candidates = np.flatnonzero(group_end)
    if candidates.size == 0:
        return math.inf, 0.0
    best = candidates[np.argmax(cumulative[candidates])]
    if cumulative[best] <= 0:
        return math.inf, 0.0
    return float(tc[best]), float(cumulative[best])


def live_tables(rules: R.Rules, state: engine.ShoeState) -> np.ndarray:
    """Tables whose next hand is still a hand of their first shoe (the next deal reshuffles where the
    cut card is out, after one more hand if the rules say so)."""
    due = state.position >= state.cut_position
    if rules.hand_after_cut:
        due &= state.cut_hands == 1
    return (state.shoes_started == 1) & ~due


def perfect_bettor(ev: np.ndarray, payoff: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The perfect-information bettor of each bet: one unit whenever the bet's exact EV is > 0.

    Returns, elementwise over ``ev`` and the dealt ``payoff``: ``positive`` (the hands bet), ``gain``
    (max(EV, 0): the predicted profit) and ``realized`` (the dealt payoff on the hands bet)."""
    positive = ev > 0
    return positive, np.where(positive, ev, 0.0), np.where(positive, payoff, 0.0)


__all__ = [
    "TEN_VALUE_RANKS",
    "balanced_integer_tags",
    "best_threshold",
    "effects_of_removal",
    "eor_tags",
    "live_tables",
    "perfect_bettor",
    "tags_by_rank",
    "true_counts",
]
