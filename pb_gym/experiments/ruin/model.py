"""The gambler's-ruin model of one-unit flat betting: each bet's step, the closed form and the Markov chain.

The job of this file is the exact answer; the simulation that checks it is
:mod:`pb_gym.experiments.ruin.simulation`, and the study that runs both is :mod:`pb_gym.experiments.ruin`.

* :func:`step_distribution`: the net win of one hand of a bet, on the lattice of 1/L units (L = 20 for
  the banker's 0.95: a win is +19, a loss -20, a tie 0; L = 1 for +1/-1).
* :func:`closed_form`: the classical formula of the +1/-1 walk (player, fair coin). With ties removed,
  p = P(win) / (P(win) + P(lose)), q = 1 - p, r = q/p: P(target before ruin from i) = (1 - r^i) /
  (1 - r^N), expected decisions = i/(q-p) - N/(q-p) P (fair: i/N and i(N-i)); expected hands =
  decisions / (1 - P(tie)).
* :func:`markov_chain`: any bet. The transient states are the bankrolls L .. N L - 1; the absorbing
  probability and the expected number of hands solve (I - Q) x = b, a banded linear system (bandwidth =
  the largest step), solved exactly by banded Gaussian elimination (:func:`_banded_solve`). On the +1/-1
  walk it agrees with the closed form to ~1e-12 (tested).
* :func:`exact_curves`, :func:`exact_lookup`: the curves and the points the study reports.

**Stopping rule**: success as soon as the bankroll is >= ``target`` units, ruin as soon as it is < 1
unit (the one-unit stake cannot be covered); a banker win that carries the bankroll past the target is
kept. The chain assumes independent hands with the full-shoe probabilities.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.experiments.common.yaml_config import ConfigError


def step_distribution(bet: str, rules: R.Rules) -> dict:
    """The net win of one hand, on the lattice of 1/L units: ``{"lattice": L, "steps": [...],
    "probabilities": [...], "p_win", "p_lose", "p_push"}`` (steps are ints, 1 unit = L)."""
    if bet == "fair_coin":
        payoff, prob = np.array([1.0, -1.0]), np.array([0.5, 0.5])
    else:
        prob = exact.outcome_probabilities(R.full_shoe(rules.decks))
        payoff = rules.paytable()[:, R.BETS.index(bet)]
    lattice = next(
        (L for L in range(1, 1001) if np.allclose(payoff * L, np.round(payoff * L), atol=1e-9)), None
    )
    if lattice is None:
        raise ConfigError(
            f"the {bet} payouts {sorted(set(payoff))} are not on a lattice of 1/L units for any L <= 1000"
        )
    steps = np.round(payoff * lattice).astype(np.int64)
    values = np.unique(steps)
    probabilities = np.array([prob[steps == v].sum() for v in values])
    return {
        "lattice": lattice,
        "steps": values.tolist(),
        "probabilities": probabilities.tolist(),
        "p_win": float(probabilities[values > 0].sum()),
        "p_lose": float(probabilities[values < 0].sum()),
        "p_push": float(probabilities[values == 0].sum()),
    }


def closed_form(p_win: float, p_lose: float, start: int | np.ndarray, target: int | np.ndarray) -> dict:
    """Classical gambler's ruin for the +1/-1 walk with pushes: P(target before 0), expected hands."""
    i = np.asarray(start, dtype=np.float64)
    n = np.asarray(target, dtype=np.float64)
    decided = p_win + p_lose
    p, q = p_win / decided, p_lose / decided
    if math.isclose(p, q, rel_tol=0.0, abs_tol=1e-15):
        success = i / n
        decisions = i * (n - i)
    else:
        r = q / p
        success = (1.0 - r**i) / (1.0 - r**n)
        decisions = i / (q - p) - n / (q - p) * success
    return {"p_win": success, "hands": decisions / decided}


@numba.njit(cache=True)
def _banded_solve(band: np.ndarray, lower: int, upper: int, rhs: np.ndarray) -> np.ndarray:
    """Solve A x = rhs for a banded A given as ``band[i, j - i + lower] = A[i, j]``.

    Gaussian elimination without pivoting: I - Q of an absorbing chain is diagonally dominant, so no
    pivoting is needed and the fill-in stays inside the band. ``band`` and ``rhs`` are overwritten.
    """
    n = band.shape[0]
    for k in range(n):
        pivot = band[k, lower]
        for i in range(k + 1, min(n, k + lower + 1)):
            factor = band[i, k - i + lower] / pivot
            if factor != 0.0:
                for j in range(k, min(n, k + upper + 1)):
                    band[i, j - i + lower] -= factor * band[k, j - k + lower]
                for m in range(rhs.shape[1]):
                    rhs[i, m] -= factor * rhs[k, m]
    x = np.zeros_like(rhs)
    for i in range(n - 1, -1, -1):
        for m in range(rhs.shape[1]):
            s = rhs[i, m]
            for j in range(i + 1, min(n, i + upper + 1)):
                s -= band[i, j - i + lower] * x[j, m]
            x[i, m] = s / band[i, lower]
    return x


def markov_chain(steps: dict, target: int, dense: bool = False) -> dict:
    """Exact P(reach ``target`` units before ruin) and expected hands from every whole-unit start.

    States: bankrolls b = L .. target*L - 1 lattice units (L = ``steps["lattice"]``); from b the bankroll
    moves to b + s with probability p_s; b + s >= target*L is success, b + s < L is ruin (the stake
    cannot be covered), anything else is transient. Solves (I - Q) [P, E] = [r, 1] with r_b = P(success
    in one hand). ``dense=True`` uses numpy's dense solver instead (a cross-check).
    Returns ``starts`` (1 .. target-1), ``p_win`` and ``hands`` (arrays over starts).
    """
    L = steps["lattice"]
    moves = np.array(steps["steps"], dtype=np.int64)
    probs = np.array(steps["probabilities"])
    low, top = L, target * L  # transient: low <= b < top
    n = top - low
    lower, upper = max(0, -moves.min()), max(0, moves.max())
    band = np.zeros((n, lower + upper + 1))
    rhs = np.zeros((n, 2))
    rhs[:, 1] = 1.0
    b = np.arange(low, top)
    for s, p in zip(moves, probs, strict=True):
        nxt = b + s
        inside = (nxt >= low) & (nxt < top)
        # A = I - Q: subtract p at (b, b + s) for transient successors
        band[np.flatnonzero(inside), s + lower] -= p
        rhs[nxt >= top, 0] += p
    band[:, lower] += 1.0
    if dense:
        matrix = np.zeros((n, n))
        for d in range(-lower, upper + 1):
            rows = np.arange(max(0, -d), min(n, n - d))
            matrix[rows, rows + d] = band[rows, d + lower]
        solution = np.linalg.solve(matrix, rhs)
    else:
        solution = _banded_solve(band, lower, upper, rhs.copy())
    starts = np.arange(1, target)
    index = starts * L - low
    return {"starts": starts, "p_win": solution[index, 0], "hands": solution[index, 1]}


def exact_curves(rules: R.Rules, bets: tuple[str, ...], target: int, start: int, max_target: int) -> dict:
    """Per bet: P(success) and expected hands against the start (for ``target``) and against the
    target (``start + 1 .. max_target``, for ``start``), and on the +1/-1 walk the largest difference
    between the chain and the closed form."""
    out: dict = {}
    for bet in bets:
        steps = step_distribution(bet, rules)
        chain = markov_chain(steps, target)
        targets = np.arange(start + 1, max_target + 1)
        by_target = [markov_chain(steps, int(t)) for t in targets]
        entry = {
            "steps": steps,
            "vs_start": {
                "target": target,
                "starts": chain["starts"].tolist(),
                "p_win": chain["p_win"].tolist(),
                "hands": chain["hands"].tolist(),
            },
            "vs_target": {
                "start": start,
                "targets": targets.tolist(),
                "p_win": [float(c["p_win"][start - 1]) for c in by_target],
                "hands": [float(c["hands"][start - 1]) for c in by_target],
            },
        }
        if steps["steps"] in ([-1, 0, 1], [-1, 1]):  # the +1/-1 walk: compare with the closed form
            cf_start = closed_form(steps["p_win"], steps["p_lose"], chain["starts"], target)
            cf_target = closed_form(steps["p_win"], steps["p_lose"], start, targets)
            entry["closed_form_max_abs_diff"] = {
                "p_win": float(
                    max(
                        np.max(np.abs(cf_start["p_win"] - chain["p_win"])),
                        np.max(np.abs(cf_target["p_win"] - entry["vs_target"]["p_win"])),
                    )
                ),
                "hands_relative": float(
                    max(
                        np.max(np.abs(cf_start["hands"] / chain["hands"] - 1)),
                        np.max(np.abs(cf_target["hands"] / np.array(entry["vs_target"]["hands"]) - 1)),
                    )
                ),
            }
        out[bet] = entry
    return out


def exact_lookup(steps: dict) -> Callable[[int, int], tuple[float, float]]:
    """``exact_at(start, target) -> (P(success), expected hands)`` for one bet's steps, solving the
    chain once per target."""
    cache: dict[int, dict] = {}

    def exact_at(start: int, target: int) -> tuple[float, float]:
        if target not in cache:
            cache[target] = markov_chain(steps, target)
        chain = cache[target]
        return float(chain["p_win"][start - 1]), float(chain["hands"][start - 1])

    return exact_at


__all__ = ["step_distribution", "closed_form", "markov_chain", "exact_curves", "exact_lookup"]
