"""The statistics every study reports: normal quantiles, binomial, mean and ratio confidence intervals.

Every function is plain
Python and numpy, works from sums where a study merges chunks (so that the merged figure is the same
to the last bit whatever the chunking), and says what it returns where a statistic is undefined
(``nan``: no data; ``inf``: an interval the data cannot bound), which :mod:`pb_gym.strict_json` writes
as ``null`` with the reason.

* :data:`Z95`, :func:`z_value`: the two-sided normal quantile of a confidence level.
* :func:`normal_ci`: ``[estimate - z se, estimate + z se]``.
* :func:`wilson`: the Wilson interval of a binomial proportion (successes out of n).
* :func:`mean_se_from_sums`: mean and standard error from ``n``, ``sum x`` and ``sum x^2`` (integer
  sums stay exact in any merge order).
* :func:`mean_se`: mean and standard error of a sample.
* :func:`ratio_ci`: ``sum x / sum n`` over independent groups (shoes, sessions) with the delta-method
  (ratio-estimator) interval, from each group's sums (the core's, :mod:`pb_gym.ci`, which the
  benchmark scorer uses too).
* :func:`ratio_ci_from_moments`: the same estimator from the five sums a merge keeps
  (``sum x``, ``sum n``, ``sum x^2``, ``sum n^2``, ``sum x n``) and the number of groups.
* :func:`iqm`, :func:`stratified_bootstrap_ci`: the interquartile mean of training runs and its
  stratified bootstrap interval, as rliable (Agarwal et al., 2021) reports an RL algorithm's score
  across seeds (the same definitions, written here: rliable would bring scipy, arch and seaborn).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from pb_gym.ci import Z95, ratio_ci


def z_value(confidence: float = 0.95) -> float:
    """The two-sided normal quantile of ``confidence``: P(|Z| <= z) = confidence for Z ~ N(0, 1).

    :class:`statistics.NormalDist` gives a first value (to about 2 units in the last place); two
    Newton steps on the upper tail, ``erfc(z / sqrt 2) / 2 = (1 - confidence) / 2``, make it exact to
    the last bit (``z_value(0.95) == Z95``; tested).

    Raises:
        ValueError: ``confidence`` is not strictly between 0 and 1.
    """
    if not (isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0):
        raise ValueError(
            f"confidence={confidence!r} is not allowed; allowed: a number strictly between 0 and 1, e.g. 0.95"
        )
    tail = (1.0 - confidence) / 2.0
    z = NormalDist().inv_cdf(1.0 - tail)
    for _ in range(2):
        density = math.exp(-z * z / 2.0) / math.sqrt(2.0 * math.pi)
        z += (0.5 * math.erfc(z / math.sqrt(2.0)) - tail) / density
    return z


def normal_ci(estimate: float, se: float, z: float = Z95) -> list[float]:
    """``[estimate - z se, estimate + z se]`` as floats (``nan`` where either is ``nan``)."""
    return [float(estimate - z * se), float(estimate + z * se)]


def wilson(successes: int, n: int, z: float = Z95) -> list[float]:
    """Wilson interval of a binomial proportion, ``successes`` out of ``n`` (95% by default).

    Unlike the normal interval it stays inside [0, 1] and is not empty at 0 or n successes. No trials
    (``n == 0``): ``[nan, nan]``.
    """
    if n == 0:
        return [math.nan, math.nan]
    p = successes / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n * n)) / (1 + z**2 / n)
    return [centre - half, centre + half]


def mean_se_from_sums(n: int, total: int | float, squares: int | float) -> tuple[float, float]:
    """Mean and standard error of the mean from ``n``, ``sum x`` and ``sum x^2``.

    With integer sums the sample variance ``(n sum x^2 - (sum x)^2) / (n (n - 1))`` is computed from
    exact integers, so chunks merged in any order give the same bits. ``n == 0``: ``(nan, nan)``;
    ``n == 1``: ``(x, nan)`` (one value has no spread).
    """
    if n == 0:
        return math.nan, math.nan
    mean = total / n
    sd = math.sqrt((n * squares - total * total) / (n * (n - 1))) if n > 1 else math.nan
    return mean, sd / math.sqrt(n)


def mean_se(values: np.ndarray) -> tuple[float, float]:
    """Mean and standard error (``std(ddof=1) / sqrt(n)``) of a sample; fewer than two values:
    standard error ``inf`` (no interval can be given; :func:`normal_ci` then spans everything)."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    se = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    return float(values.mean()) if n else math.nan, se


def ratio_ci_from_moments(
    sum_x: float, sum_n: float, sum_x2: float, sum_n2: float, sum_xn: float, groups: int, z: float = Z95
) -> tuple[float, float, float]:
    """:func:`ratio_ci` from the sums a merge keeps instead of the per-group values:
    ``(R, low, high)`` with ``R = sum x / sum n``; the residuals ``x_g - R n_g`` have the sum of squares
    ``sum x^2 - 2 R sum x n + R^2 sum n^2``.

    ``sum n <= 0``: ``(nan, nan, nan)``; one group: ``(R, -inf, inf)`` (no spread to measure).
    """
    if sum_n <= 0:
        return math.nan, math.nan, math.nan
    ratio = sum_x / sum_n
    if groups < 2:
        return float(ratio), -math.inf, math.inf
    squares = max(sum_x2 - 2 * ratio * sum_xn + ratio * ratio * sum_n2, 0.0)
    se = math.sqrt(squares / (groups - 1) / groups) / (sum_n / groups)
    return float(ratio), float(ratio - z * se), float(ratio + z * se)


def iqm(values) -> float:
    """The interquartile mean: the mean of the values left when the lowest and the highest quarter are
    cut (``floor(n / 4)`` values from each end, after sorting), over every value given (any shape).
    rliable's aggregate (``scipy.stats.trim_mean(values, 0.25, axis=None)``): robust to an outlying
    run, more efficient than the median. Five runs: the mean of the middle three.

    Raises:
        ValueError: no values, or a value that is not finite.
    """
    flat = np.sort(np.asarray(values, dtype=np.float64).ravel())
    if flat.size == 0 or not np.all(np.isfinite(flat)):
        raise ValueError(f"iqm of {flat.size} values: allowed: at least one value, every one finite")
    cut = flat.size // 4
    return float(flat[cut : flat.size - cut].mean())


def stratified_bootstrap_ci(
    scores: dict[str, np.ndarray] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = iqm,
    reps: int = 50_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[float]:
    """The percentile interval of ``statistic`` of the runs under the stratified bootstrap: each
    replicate draws, within each task (the stratum), as many runs as it has, with replacement, and
    applies ``statistic`` to every drawn score together (rliable's ``StratifiedBootstrap`` and
    ``get_interval_estimates``, percentile method; 50,000 replicates is its default).

    Args:
        scores: the runs' scores per task (``{task: (runs,)}``), or one task's ``(runs,)``.
        statistic: a function of the drawn scores (one flat array), :func:`iqm` by default.
        reps: bootstrap replicates (the interval's ends move by about 1e-3 of its width between seeds
            at 50,000).
        confidence: the interval's coverage, in (0, 1).
        seed: the replicates' seed (the same seed, the same interval).

    Raises:
        ValueError: an empty task, fewer than one replicate, a confidence outside (0, 1).
    """
    strata = _strata(scores, "stratified_bootstrap_ci")
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ValueError(f"reps={reps!r} is not allowed; allowed: an integer >= 1")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} is not allowed; allowed: a number in (0, 1)")
    rng = np.random.default_rng(seed)
    draws = [s[rng.integers(0, s.size, size=(reps, s.size))] for s in strata]
    drawn = np.concatenate(draws, axis=1)
    values = np.array([statistic(row) for row in drawn]) if statistic is not iqm else _iqm_rows(drawn)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return [float(low), float(high)]


def optimality_gap(values, gamma: float = 1.0) -> float:
    """rliable's optimality gap: how far the runs fall short of the score ``gamma`` (the optimum's),
    on average, a run above it counting as reaching it: ``mean(gamma - min(value, gamma))``. 0 when
    every run is optimal; unlike the IQM it weighs every run, the worst ones included."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    if flat.size == 0 or not np.all(np.isfinite(flat)):
        raise ValueError(
            f"optimality_gap of {flat.size} values: allowed: at least one value, every one finite"
        )
    return float(np.mean(gamma - np.minimum(flat, gamma)))


def probability_of_improvement(
    x: dict[str, np.ndarray] | np.ndarray,
    y: dict[str, np.ndarray] | np.ndarray,
    reps: int = 2_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict:
    """rliable's probability of improvement of algorithm X over Y: per task, the chance that a run of X
    scores above a run of Y (a tie counts one half: the Mann-Whitney U statistic over the product of the
    two run counts), averaged over the tasks; with its percentile interval under the stratified
    bootstrap, the runs of X and of Y drawn independently within each task (rliable draws
    2,000 replicates for this figure).

    Returns:
        ``{"estimate": P(X > Y), "ci": [low, high]}``; 0.5 means neither is better.
    """
    xs = _strata(x, "probability_of_improvement")
    ys = _strata(y, "probability_of_improvement")
    if len(xs) != len(ys):
        raise ValueError("probability_of_improvement: X and Y need the same tasks")
    rng = np.random.default_rng(seed)

    def prob(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # (reps or 1, m) x (reps or 1, n) -> (reps or 1,)
        greater = (a[:, :, None] > b[:, None, :]).mean(axis=(1, 2))
        equal = (a[:, :, None] == b[:, None, :]).mean(axis=(1, 2))
        return greater + 0.5 * equal

    estimate = float(np.mean([prob(a[None], b[None])[0] for a, b in zip(xs, ys, strict=True)]))
    replicates = np.mean(
        [
            prob(a[rng.integers(0, a.size, (reps, a.size))], b[rng.integers(0, b.size, (reps, b.size))])
            for a, b in zip(xs, ys, strict=True)
        ],
        axis=0,
    )
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return {"estimate": estimate, "ci": [float(low), float(high)]}


def performance_profile(values, taus) -> list[float]:
    """rliable's performance profile: for each threshold ``tau``, the share of runs whose score is
    above it (a run-score distribution; the whole curve, not one aggregate, shows how often an
    algorithm does how well)."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    return [float(np.mean(flat > tau)) for tau in np.asarray(taus, dtype=np.float64)]


def _strata(scores: dict[str, np.ndarray] | np.ndarray, name: str) -> list[np.ndarray]:
    strata = [
        np.asarray(v, dtype=np.float64).ravel()
        for v in (scores.values() if isinstance(scores, dict) else [scores])
    ]
    if not strata or any(s.size == 0 for s in strata):
        raise ValueError(f"{name}: every task needs at least one run")
    return strata


def _iqm_rows(rows: np.ndarray) -> np.ndarray:
    """:func:`iqm` of each row (the same figures, at once)."""
    ordered = np.sort(rows, axis=1)
    cut = rows.shape[1] // 4
    return ordered[:, cut : rows.shape[1] - cut].mean(axis=1)


__all__ = [
    "Z95",
    "iqm",
    "stratified_bootstrap_ci",
    "optimality_gap",
    "probability_of_improvement",
    "performance_profile",
    "z_value",
    "normal_ci",
    "wilson",
    "mean_se_from_sums",
    "mean_se",
    "ratio_ci",
    "ratio_ci_from_moments",
]


def two_sided_p(estimate: float, low: float, high: float, reference: float, z: float = Z95) -> float:
    """The two-sided p-value of ``reference`` under the normal interval ``[low, high]`` of ``estimate``
    (its half-width ``z`` standard errors): 1 at the estimate, 0.05 at a 95% interval's ends."""
    se = (high - low) / (2 * z)
    if not se > 0:
        return 1.0 if reference == estimate else 0.0
    return math.erfc(abs(estimate - reference) / se / math.sqrt(2))


def holm(p_values: list[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down test: which hypotheses are rejected with family-wise error at most ``alpha``.

    The p-values are taken smallest first; the i-th (from 0) is rejected while ``p <= alpha / (m - i)``,
    and every one after the first that is not rejected is kept. Valid under any dependence between the
    tests (systems that play the same hands are correlated).

    Args:
        p_values: one p-value per hypothesis.
        alpha: the family-wise error rate.

    Returns:
        For each hypothesis, in the order given, whether it is rejected.
    """
    m = len(p_values)
    rejected = [False] * m
    for i, k in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        if p_values[k] > alpha / (m - i):
            break
        rejected[k] = True
    return rejected
