"""pb_gym/experiments/common/stats.py: the normal quantile, Wilson, mean and ratio intervals every study
shares,
against textbook values and direct computations on the data."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from pb_gym import simulate
from pb_gym.experiments.common import stats


def test_z_value_is_the_normal_quantile_to_the_last_bit():
    assert stats.z_value(0.95) == stats.Z95 == 1.959963984540054
    assert stats.z_value() == stats.Z95
    # the core's copy (pb-gym simulate; the core may not import the studies) is the same number
    assert simulate.Z95 == stats.Z95
    for confidence, z in (
        (0.90, 1.6448536269514722),
        (0.99, 2.5758293035489004),
        (0.5, 0.6744897501960817),
    ):  # published quantiles (e.g. scipy's ndtri)
        assert stats.z_value(confidence) == pytest.approx(z, rel=1e-15, abs=0)
    for confidence in (0.3, 0.8, 0.999):  # and the definition: P(|Z| <= z) = confidence
        z = stats.z_value(confidence)
        assert 2 * NormalDist().cdf(z) - 1 == pytest.approx(confidence, rel=1e-14)
    for bad in (0, 1, 1.5, -0.1, math.nan, "0.95"):
        with pytest.raises(
            ValueError,
            match=r"confidence=.* is not allowed; allowed: a number "
            r"strictly between 0 and 1, e.g. 0.95",
        ):
            stats.z_value(bad)


def test_wilson_interval():
    # 8 successes in 10 trials, 95%: the textbook Wilson interval [0.4902, 0.9433]
    low, high = stats.wilson(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    # the interval solves |p - p_hat| = z sqrt(p (1 - p) / n) at both ends
    for end in (low, high):
        assert abs(end - 0.8) == pytest.approx(stats.Z95 * math.sqrt(end * (1 - end) / 10), rel=1e-12)
    zero = stats.wilson(0, 20)
    assert zero[0] == pytest.approx(0.0, abs=1e-15) and 0 < zero[1] < 0.2  # not empty at 0 of n
    assert all(math.isnan(v) for v in stats.wilson(0, 0))
    wider = stats.wilson(8, 10, z=stats.z_value(0.99))
    assert wider[0] < low and wider[1] > high


def test_means_and_their_standard_errors():
    values = np.array([3, 5, 100, 7, 2, 11])
    mean, se = stats.mean_se_from_sums(len(values), int(values.sum()), int((values**2).sum()))
    assert mean == pytest.approx(values.mean(), rel=1e-15)
    assert se == pytest.approx(values.std(ddof=1) / math.sqrt(len(values)), rel=1e-13)
    assert stats.mean_se(values) == pytest.approx((mean, se), rel=1e-13)
    one = stats.mean_se_from_sums(1, 4, 16)
    assert one[0] == 4 and math.isnan(one[1])
    assert all(math.isnan(v) for v in stats.mean_se_from_sums(0, 0, 0))
    assert stats.mean_se(np.array([2.5])) == (2.5, math.inf)
    assert stats.normal_ci(2.0, 0.5) == [2.0 - stats.Z95 * 0.5, 2.0 + stats.Z95 * 0.5]


def test_ratio_ci_is_computed_over_groups():
    """From per-group sums: three shoes with hands 2, 3, 1 and sums of x 3, 4, 5."""
    x, n = np.array([3.0, 4.0, 5.0]), np.array([2.0, 3.0, 1.0])
    ci = stats.ratio_ci(x, n)
    assert ci["estimate"] == pytest.approx(12 / 6) and ci["n"] == 6
    se = np.sqrt(3 / 2 * np.sum((x - 2 * n) ** 2)) / 6
    assert ci["se"] == pytest.approx(se)
    assert ci["ci95"] == pytest.approx([2 - stats.Z95 * se, 2 + stats.Z95 * se])
    assert stats.ratio_ci(x, np.zeros(3))["estimate"] is None
    # the same estimator from the five sums a merge keeps
    ratio, low, high = stats.ratio_ci_from_moments(
        x.sum(), n.sum(), (x * x).sum(), (n * n).sum(), (x * n).sum(), len(x)
    )
    assert ratio == ci["estimate"] and [low, high] == pytest.approx(ci["ci95"], rel=1e-12)
    assert stats.ratio_ci_from_moments(3.0, 2.0, 9.0, 4.0, 6.0, 1) == (1.5, -math.inf, math.inf)
    assert all(math.isnan(v) for v in stats.ratio_ci_from_moments(1.0, 0.0, 1.0, 0.0, 0.0, 5))


def test_rliable_other_reports_on_hand_computed_runs():
    """The optimality gap, the probability of improvement and the performance profile as rliable
    defines them, on runs small enough to count by hand."""
    assert stats.optimality_gap([0.8, 0.9, 1.1]) == pytest.approx((0.2 + 0.1 + 0.0) / 3, abs=1e-15)
    assert stats.optimality_gap([0.5], gamma=2.0) == 1.5
    # X = (1, 3), Y = (2, 2): the pairs X > Y are (3, 2) twice, of 4 -> 0.5; with a tie, one half
    assert stats.probability_of_improvement(np.array([1.0, 3.0]), np.array([2.0, 2.0]))["estimate"] == 0.5
    assert stats.probability_of_improvement(np.array([2.0]), np.array([2.0]))["estimate"] == 0.5
    # two tasks: 1 on the first (X always above), 0 on the second: averaged over tasks
    both = stats.probability_of_improvement({"a": [3.0, 4.0], "b": [0.0]}, {"a": [1.0], "b": [1.0, 2.0]})
    assert both["estimate"] == 0.5 and 0.0 <= both["ci"][0] <= both["ci"][1] <= 1.0
    better = stats.probability_of_improvement(np.arange(10.0) + 100, np.arange(10.0), seed=3)
    assert better == {"estimate": 1.0, "ci": [1.0, 1.0]}
    assert stats.probability_of_improvement(np.arange(5.0), np.arange(5.0) + 0.5, seed=1) == (
        stats.probability_of_improvement(np.arange(5.0), np.arange(5.0) + 0.5, seed=1)
    )  # the same seed, the same interval
    assert stats.performance_profile([0.8, 0.9, 1.0], [0.5, 0.85, 0.95, 1.0]) == [1.0, 2 / 3, 1 / 3, 0.0]
    with pytest.raises(ValueError, match="optimality_gap of 0 values"):
        stats.optimality_gap([])
    with pytest.raises(ValueError, match="X and Y need the same tasks"):
        stats.probability_of_improvement({"a": [1.0], "b": [1.0]}, {"a": [1.0]})
    with pytest.raises(ValueError, match="probability_of_improvement: every task needs at least one run"):
        stats.probability_of_improvement(np.array([]), np.array([1.0]))
