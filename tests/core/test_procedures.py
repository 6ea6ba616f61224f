"""Dealing procedures: their validation, the composition invariants of each, and card frequencies."""

import numpy as np
import pytest

from pb_gym import procedures
from pb_gym import rules as R

RULES = R.Rules()
FULL = R.full_shoe(8)
CHI2_12_999 = 32.90949  # the 99.9% quantile of chi-square with 12 degrees of freedom


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(shuffle="machine"), "Dealing.shuffle='machine' is not allowed; allowed: hand, csm"),
        (
            dict(shuffle="csm", csm_delay=-1),
            "Dealing.csm_delay=-1 is not allowed; allowed: an integer from 0 to 50",
        ),
        (dict(csm_delay=2), "0 with shuffle='hand'"),
        (
            dict(burn="two"),
            "Dealing.burn='two' is not allowed; allowed: rules, value, one_down, one_up, none",
        ),
        (dict(cut_range=(20, 10)), "low <= high"),
        (dict(shuffle="csm", cut_range=(10, 20)), "a CSM has no cut card"),
    ],
)
def test_a_bad_procedure_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", "\\(").replace(")", "\\)")):
        procedures.Dealing(**kwargs)


def test_a_cut_range_the_rules_refuse_is_named():
    with pytest.raises(ValueError, match="Dealing.cut_range=\\(3, 20\\) is not allowed; allowed: 6..208"):
        procedures.ProcedureDealer(RULES, procedures.Dealing(cut_range=(3, 20)), 2, seed=0)


@pytest.mark.parametrize("delay", [0, 1, 5])
def test_a_csm_deals_from_the_full_shoe_less_the_last_delay_hands(delay):
    dealer = procedures.ProcedureDealer(
        RULES, procedures.Dealing(shuffle="csm", csm_delay=delay), 50, seed=delay
    )
    history = []
    for _ in range(30):
        before = dealer.unseen()
        out = sum(history[-delay:], np.zeros_like(before)) if delay else np.zeros_like(before)
        np.testing.assert_array_equal(before, FULL[None, :] - out)
        hand = dealer.deal()
        assert (hand["used"] >= 4).all() and (hand["used"] <= 6).all()
        assert (hand["dealt"].sum(axis=1) == hand["used"]).all()
        history.append(hand["dealt"])


def test_csm_card_frequencies_are_uniform_by_rank():
    # every card of a delay-0 CSM hand is a uniform draw from the full shoe: over 20,000 hands the
    # first card's rank counts pass a chi-square test at 99.9% (a fair dealer fails it 1 time in 1,000)
    dealer = procedures.ProcedureDealer(RULES, procedures.Dealing(shuffle="csm"), 20_000, seed=11)
    first = dealer.deal()["cards"][:, 0]
    observed = np.bincount(first, minlength=13)
    expected = 20_000 / 13
    assert ((observed - expected) ** 2 / expected).sum() < CHI2_12_999


def test_the_hand_shuffled_shoe_burns_and_cuts_as_configured():
    low, high = 7, 104
    dealer = procedures.ProcedureDealer(RULES, procedures.Dealing(cut_range=(low, high)), 4000, seed=5)
    behind = RULES.n_cards - dealer.cut
    assert behind.min() >= low and behind.max() <= high
    # uniform on 98 depths: each quarter of the range holds a quarter of the shoes (5 sigma bounds)
    quarters = np.bincount((behind - low) * 4 // (high - low + 1), minlength=4)
    assert np.all(np.abs(quarters - 1000) < 5 * np.sqrt(4000 * 0.25 * 0.75))
    # the value burn: the turned card is seen, its value in cards burned face down are not
    first = dealer.shoe[:, 0]
    np.testing.assert_array_equal(dealer.position, 1 + R.BURN_COUNTS[first])
    assert (dealer.unseen().sum(axis=1) == RULES.n_cards - 1).all()
    for burn, position, seen in (("one_down", 1, 0), ("one_up", 1, 1), ("none", 0, 0)):
        other = procedures.ProcedureDealer(RULES, procedures.Dealing(burn=burn), 10, seed=1)
        assert (other.position == position).all()
        assert (other.unseen().sum(axis=1) == RULES.n_cards - seen).all()


def test_the_hand_shuffled_shoe_deals_to_the_cut_card_and_shuffles_again():
    dealer = procedures.ProcedureDealer(RULES, procedures.Dealing(burn="none"), 20, seed=3)
    dealt = np.zeros((20, 13), dtype=np.int64)
    finished = np.zeros(20, dtype=bool)  # the first shoe's cut card has come out
    hands = 0
    while not finished.all():
        before = dealer.unseen()
        np.testing.assert_array_equal(before[~finished], FULL - dealt[~finished])
        hand = dealer.deal()
        assert not hand["shuffled"][~finished].any()
        dealt += np.where(~finished[:, None], hand["dealt"], 0)
        finished |= dealer.shoe_over()
        hands += 1
    assert hands > 60
    hand = dealer.deal()
    assert hand["shuffled"].any() and (dealer.shoes[hand["shuffled"]] >= 2).all()


@pytest.mark.parametrize("after", [False, True])
def test_hand_after_cut_deals_exactly_one_more_hand(after):
    """With Rules.hand_after_cut, every shoe deals exactly one hand begun behind the cut card; without
    it, none (the shoe is shuffled as soon as the cut card is out), as the engine does."""
    rules = R.Rules(decks=1, cut_card=14, hand_after_cut=after)
    dealer = procedures.ProcedureDealer(rules, procedures.Dealing(), 50, seed=7)
    behind = np.zeros(50, dtype=np.int64)
    shoes_done = np.zeros(50, dtype=np.int64)
    for _ in range(200):
        began_behind = dealer.position >= dealer.cut
        hand = dealer.deal()
        shoes_done += hand["shuffled"]
        behind += began_behind & ~hand["shuffled"]
    assert shoes_done.min() >= 5
    # each finished shoe (the one in play may or may not have dealt its hand behind the cut yet)
    assert np.all(behind - int(after) * shoes_done >= 0)
    assert np.all(behind - int(after) * shoes_done <= int(after))
