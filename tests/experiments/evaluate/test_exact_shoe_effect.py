"""The shoe-effect study of Labouchere (pb_gym/experiments/evaluate/shoe_effect.py): its Labouchere is the
evaluator's on the same hands, its value iteration is the exact chain, its split adds up."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pb_gym.experiments.evaluate import shoe_effect
from pb_gym.experiments.evaluate.settings import StudyConfig


def test_its_labouchere_is_the_evaluators_on_the_same_hands():
    # the evaluator at the exact config, seed 5, every hand's results recorded and fed to play():
    # every session's final bankroll agrees, and the goals are the evaluator's 2,409 of 4,000
    config = StudyConfig.model_validate(shoe_effect.CONFIG)
    table, winners = shoe_effect.evaluator_winners(config)
    hands = iter(winners)
    final = shoe_effect.play(lambda playing: next(hands), table.n, config.hands)
    np.testing.assert_allclose(final, table.seats.bankroll[0] / 10.0, rtol=0, atol=1e-9)
    assert int((final >= shoe_effect.GOAL - shoe_effect.TOLERANCE).sum()) == 2409


def test_the_value_iteration_is_the_exact_chain():
    ids, value = shoe_effect.goal_values()
    assert len(ids) == value.size == 24_954
    assert value[0] == pytest.approx(shoe_effect.exact_p_target(), abs=1e-14)


def test_the_split_by_hand_adds_up_to_the_miss():
    split = shoe_effect.miss_by_hand(5)
    assert split["goals"] == 2409
    assert split["expected"] == pytest.approx(4000 * shoe_effect.exact_p_target(), abs=1e-9)
    assert sum(row["miss"] for row in split["spans"]) == pytest.approx(split["miss"], abs=1e-9)
    assert split["miss"] / split["sd"] == pytest.approx(-4.20, abs=0.005)
    assert math.hypot(*(row["sd"] for row in split["spans"])) == pytest.approx(split["sd"], rel=1e-12)


@pytest.mark.parametrize("way", shoe_effect.WAYS)
def test_each_way_of_dealing_is_near_the_exact_p_goal(way):
    # 20,000 sessions: within 3.29 binomial SE (99.9%) of the exact P(goal) (the shoe effect measured
    # in the docs is 30 times smaller than this SE)
    q = shoe_effect.exact_p_target()
    row = shoe_effect.dealt(way, 20_000, 1, batch=10_000)
    assert row["sessions"] == 20_000
    assert abs(row["p_target"] - q) < 3.29 * math.sqrt(q * (1 - q) / 20_000)


def test_an_unknown_way_is_refused():
    with pytest.raises(ValueError, match="way='cards' is not allowed; allowed: independent, csm, shoe"):
        shoe_effect.dealt("cards", 10, 1)
