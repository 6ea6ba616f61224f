"""Deal hands with the engine and set the observed figures beside the exact ones (``pb-gym simulate``).

A check a user can run on any rules: every bet's realized return per unit, with a 95% confidence
interval, next to its exact expected value from :mod:`pb_gym.exact`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from pb_gym import engine, exact
from pb_gym import rules as R

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def simulate(
    rules: R.Rules, hands: int, seed: int, tables: int, progress: Callable[[int], None] | None = None
) -> dict:
    """Deal ``hands`` hands over ``tables`` tables and compare observed figures with the exact ones.

    Every bet is staked one unit on every hand; its realized return per unit is reported with a 95%
    normal confidence interval, next to the exact full-shoe EV. (Hands dealt through shoes to the cut
    card average very slightly differently from a full shoe: the cut-card effect, far below these
    intervals at any practical number of hands.)
    """
    state = engine.init(rules, tables, seed=seed)
    out = engine.HandResult.empty(tables)
    outcome_counts = np.zeros(R.N_OUTCOMES, dtype=np.int64)
    pair_counts = np.zeros(2, dtype=np.int64)
    net_sum = np.zeros(R.N_BETS)
    net_sq = np.zeros(R.N_BETS)
    done = 0
    while done < hands:
        engine.deal(rules, state, out)
        take = min(tables, hands - done)
        outcome = out.outcome[:take]
        outcome_counts += np.bincount(outcome, minlength=R.N_OUTCOMES)
        pair_counts += [int(out.player_pair[:take].sum()), int(out.banker_pair[:take].sum())]
        payoff = R.payoffs(rules, outcome, out.player_pair[:take], out.banker_pair[:take])
        net_sum += payoff.sum(axis=0)
        net_sq += np.einsum("ij,ij->j", payoff, payoff)
        done += take
        if progress is not None:
            progress(take)
    winners = np.bincount(R.OUTCOME_WINNER, weights=outcome_counts, minlength=3).astype(np.int64)
    probabilities = exact.outcome_probabilities(R.full_shoe(rules.decks))
    exact_winner = np.bincount(R.OUTCOME_WINNER, weights=probabilities, minlength=3)
    exact_ev = exact.expected_values(R.full_shoe(rules.decks), rules)
    bets = {}
    for i, bet in enumerate(R.BETS):
        mean = net_sum[i] / hands
        variance = max(net_sq[i] / hands - mean * mean, 0.0) * hands / max(hands - 1, 1)
        half = Z95 * math.sqrt(variance / hands)
        bets[bet] = {
            "return_per_unit": mean,
            "ci95": [mean - half, mean + half],
            "exact_ev": float(exact_ev[i]),
            "exact_within_ci": bool(mean - half <= exact_ev[i] <= mean + half),
        }
    frequencies = {name: int(n) for name, n in zip(R.WINNERS, winners, strict=True)}
    return {
        "hands": int(hands),
        "tables": int(tables),
        "seed": int(seed),
        "decks": rules.decks,
        "variant": rules.banker_variant,
        "tie_pays": rules.tie_pays,
        "wins": frequencies,
        "frequencies": {name: n / hands for name, n in frequencies.items()},
        "exact_probabilities": {name: float(p) for name, p in zip(R.WINNERS, exact_winner, strict=True)},
        "outcomes": {name: int(n) for name, n in zip(R.OUTCOMES, outcome_counts, strict=True)},
        "pairs": {"player_pair": int(pair_counts[0]), "banker_pair": int(pair_counts[1])},
        "bets": bets,
    }
