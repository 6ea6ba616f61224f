"""The count-convention replays (pb_gym/experiments/atlas/conventions.py): each convention is the rule its
name says, on the same dealt hands."""

from __future__ import annotations

import numpy as np
import pytest

from pb_gym import rules as R
from pb_gym.experiments.atlas import conventions
from pb_gym.experiments.atlas.published import PUBLISHED
from pb_gym.experiments.counting.counts import tags_by_rank, true_counts

PUBLISHED_3G8 = next(p for p in PUBLISHED if p.bet == "three_giving_eight")
TAGS = tags_by_rank(PUBLISHED_3G8.tags)


@pytest.fixture(scope="module")
def hands():
    return conventions.deal(
        R.Rules(decks=8, cut_card=14, burn=True, hand_after_cut=True), "three_giving_eight", 30, 5
    )


def test_the_deal_is_the_first_shoe_of_every_table(hands):
    assert set(np.unique(hands["shoe"]).tolist()) == set(range(30))
    # the cards seen plus the cards unseen make the full shoe, and the face-up burn card is seen
    assert np.array_equal(
        hands["seen"] + hands["unseen"], np.broadcast_to(R.full_shoe(8), hands["seen"].shape)
    )
    first = np.unique(hands["shoe"], return_index=True)[1]  # each shoe's first hand
    assert (hands["seen"][first].sum(axis=1) == 1).all()
    assert (hands["seen"][first, hands["burn_up"][first]] == 1).all()
    # a burn card of value v (tens 10) burns v more face down
    value = np.minimum(hands["burn_up"][first] + 1, 10)
    assert np.array_equal(hands["burn_down"][first].sum(axis=1), value)


def test_the_baseline_is_the_atlas_replay_and_the_conventions_are_what_they_say(hands):
    rules = conventions.conventions()
    trigger = PUBLISHED_3G8.trigger
    baseline = rules["running / decks unseen, >= trigger (baseline)"](hands, TAGS, trigger)
    atlas = true_counts(hands["unseen"], TAGS[None, :], 8)[:, 0] >= trigger
    assert np.array_equal(baseline, atlas) and 0 < baseline.sum() < baseline.size
    running = hands["seen"] @ TAGS
    assert np.array_equal(
        rules["divisor the shoe's 8 decks (running count / 8)"](hands, TAGS, trigger), running >= 16
    )
    assert np.array_equal(rules["running count >= 4 x trigger"](hands, TAGS, trigger), running >= 8)
    half = rules["divisor half-decks unseen"](hands, TAGS, trigger)
    assert np.array_equal(half, true_counts(hands["unseen"], TAGS[None, :], 8)[:, 0] >= 2 * trigger)
    assert not (half & ~baseline).any()  # a stricter trigger bets on a subset


def test_figures_are_the_shares_of_the_hands(hands):
    bet = conventions.conventions()["running / decks unseen, >= trigger (baseline)"](
        hands, TAGS, PUBLISHED_3G8.trigger
    )
    f = conventions.figures(hands, bet, PUBLISHED_3G8, 0.08682)
    assert f["bet_frequency"] == pytest.approx(bet.mean(), abs=1e-15)
    assert f["average_edge"] == pytest.approx(hands["ev"][bet].mean(), abs=1e-12)
    assert f["units_per_100_hands"] == pytest.approx(100 * hands["ev"][bet].sum() / bet.size, abs=1e-12)
    lo, hi = f["bet_frequency_ci"]
    assert lo < f["bet_frequency"] < hi


def test_the_ruin_barriers_on_the_same_draws():
    report = conventions.ruin_study(shoes=60, seed=2, sessions=400)
    rows = {(r["count"], r["deal"], r["barrier"]): r for r in report["rows"]}
    assert len(rows) == 9
    deal = "cut 16, one more hand after it"
    within = rows[("bet at > 0", deal, "ruin below one bet, within the shoe (ours)")]
    at_end = rows[("bet at > 0", deal, "ruin below one bet, at the shoe's end only")]
    richer = rows[("bet at > 0", deal, "for scale: a bankroll of 565 units")]
    # on the same draws a ruin seen only at the shoes' ends is a ruin within them too, and more
    # bankroll is never ruined more often
    assert at_end["p_ruin"] <= within["p_ruin"]
    assert richer["p_ruin"] <= within["p_ruin"]
    stated = rows[("bet at >= 0 (as stated)", deal, "ruin below one bet, within the shoe (ours)")]
    assert stated["bets_per_shoe"] > within["bets_per_shoe"]  # >= 0 bets on every hand > 0 bets on


def test_each_family_at_the_published_share_of_hands(hands):
    x, bet = conventions.at_frequency(np.array([0.0, 1.0, 1.0, 2.0, 3.0]), 0.35)
    assert x == 2.0 and bet.tolist() == [False, False, False, True, True]  # 40%: the nearest share
    families = conventions.count_families(hands, TAGS)
    running = hands["seen"] @ TAGS
    assert np.array_equal(families["running count / the shoe's 8 decks"], running / 8)
    true = true_counts(hands["unseen"], TAGS[None, :], 8)[:, 0]
    np.testing.assert_allclose(families["true count per deck unseen"], true, rtol=1e-12)
    frequency = PUBLISHED_3G8.bet_frequency
    chosen = {}
    for name, values in families.items():
        trigger, bet = conventions.at_frequency(values, frequency)
        levels = np.unique(values)
        shares = np.array([(values >= level).mean() for level in levels])
        assert abs(bet.mean() - frequency) == pytest.approx(np.abs(shares - frequency).min(), abs=1e-15)
        chosen[name] = bet
    perfect = chosen["perfect information (the exact EV)"]  # the hands of the highest exact EV
    assert hands["ev"][perfect].min() >= hands["ev"][~perfect].max()
