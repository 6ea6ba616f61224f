"""The rules as data: every tableau cell against the rule sheets, values, paytables, validation."""

import numpy as np
import pytest

from pb_gym import rules as R
from pb_gym.rules import Rules


def banker_draws_per_club_sheet(banker_total: int, third: int | None) -> bool:
    """The banker's rule in the words of the club rule sheet (by banker total)."""
    if third is None:  # the player stood: the banker draws on 0-5
        return banker_total <= 5
    if banker_total <= 2:
        return True
    if banker_total == 3:
        return third != 8
    if banker_total == 4:
        return 2 <= third <= 7
    if banker_total == 5:
        return 4 <= third <= 7
    if banker_total == 6:
        return third in (6, 7)
    return False  # 7 stands (8 and 9 are naturals)


def banker_draws_per_north_american_sheet(banker_total: int, third: int | None) -> bool:
    """The same rule as the North American sheet states it (by the player's third card)."""
    if third is None:
        return banker_total <= 5
    if banker_total >= 7:
        return False
    if third in (2, 3):
        return banker_total <= 4
    if third in (4, 5):
        return banker_total <= 5
    if third in (6, 7):
        return banker_total <= 6
    if third == 8:
        return banker_total <= 2
    return banker_total <= 3  # 9, 10/face (0) or ace


@pytest.mark.parametrize("sheet", [banker_draws_per_club_sheet, banker_draws_per_north_american_sheet])
@pytest.mark.parametrize("banker_total", range(10))
def test_every_tableau_cell_matches_the_rule_sheets(sheet, banker_total):
    for column in range(11):
        third = None if column == R.NO_THIRD_CARD else column
        assert R.BANKER_TABLEAU[banker_total, column] == sheet(banker_total, third), (banker_total, third)
        assert R.banker_draws(banker_total, third) == sheet(banker_total, third)


def test_tableau_shape_and_draw_count():
    assert R.BANKER_TABLEAU.shape == (10, 11)
    # 3 rows always draw (30 with a third card), 9 + 6 + 4 + 2 conditional draws, 6 with no third card
    assert int(R.BANKER_TABLEAU[:, :10].sum()) == 30 + 9 + 6 + 4 + 2
    assert int(R.BANKER_TABLEAU[:, R.NO_THIRD_CARD].sum()) == 6


def test_player_draws_on_0_to_5_only():
    assert [bool(x) for x in R.PLAYER_DRAWS] == [True] * 6 + [False] * 4


def test_card_values_and_codes():
    assert R.RANKS == ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
    assert list(R.RANK_VALUES) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0]
    assert R.CARD_VALUES[0] == 0 and R.CARD_VALUES[13] == 0 and R.CARD_VALUES[1] == 1
    assert list(R.BURN_COUNTS) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10]
    assert R.card_code("A") == 1 and R.card_code("10") == 10 and R.card_code("k") == 13
    assert R.card_code(7) == 7
    with pytest.raises(ValueError, match="unknown card 'X'; allowed: one of A, 2"):
        R.card_code("X")
    with pytest.raises(ValueError, match="card code 14 is out of range; allowed: 1..13"):
        R.card_code(14)
    assert R.full_shoe(8).sum() == 416


def test_outcome_table_classes():
    t = R.OUTCOME_TABLE
    o = R.OUTCOMES.index
    assert t[3, 6, 1, 0] == o("banker_6") and t[3, 6, 1, 1] == o("banker_6")
    assert t[3, 7, 1, 1] == o("banker_3card_7") and t[3, 7, 1, 0] == o("banker")
    assert t[8, 7, 1, 0] == o("player_3card_8") and t[8, 7, 0, 0] == o("player")
    assert t[5, 5, 1, 1] == o("tie") and t[9, 2, 0, 0] == o("player") and t[2, 9, 0, 0] == o("banker")


def test_paytables_by_variant():
    o, b = R.OUTCOMES.index, R.BETS.index
    std = Rules().paytable()
    assert std[o("banker"), b("banker")] == pytest.approx(0.95)
    assert std[o("tie"), b("banker")] == 0 and std[o("tie"), b("player")] == 0
    assert std[o("tie"), b("tie")] == 8 and Rules(tie_pays=9).paytable()[o("tie"), b("tie")] == 9
    assert std[o("player"), b("banker")] == -1 and std[o("banker_6"), b("player")] == -1
    assert std[o("banker_3card_7"), b("dragon7")] == 40 and std[o("banker"), b("dragon7")] == -1
    assert std[o("player_3card_8"), b("panda8")] == 25 and std[o("tie"), b("panda8")] == -1
    nc = Rules(banker_variant="no-commission").paytable()
    assert nc[o("banker_6"), b("banker")] == 0.5 and nc[o("banker"), b("banker")] == 1
    ez = Rules(banker_variant="ez").paytable()
    assert ez[o("banker_3card_7"), b("banker")] == 0 and ez[o("banker_6"), b("banker")] == 1
    assert Rules(commission=0.04).paytable()[o("banker"), b("banker")] == pytest.approx(0.96)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"decks": 0}, r"Rules.decks=0 is not allowed; allowed: an integer from 1 to 8"),
        ({"decks": R.MAX_DECKS + 1}, rf"Rules.decks={R.MAX_DECKS + 1} .*1 to {R.MAX_DECKS}\b"),
        ({"decks": "8"}, r"Rules.decks='8' .*1 to 8"),
        ({"banker_variant": "french"}, r"banker_variant='french' .*standard, no-commission, ez"),
        ({"tie_pays": 7}, r"tie_pays=7 .*8 or 9"),
        ({"side_bets": ("dragon7", "lucky6")}, r"side_bets='lucky6' .*player_pair, banker_pair, dragon7"),
        ({"cut_card": 3}, r"cut_card=3 .*6\.\.208 cards left"),
        ({"cut_card": 0.99}, r"cut_card=0.99 .*leaves 4\)"),
        ({"cut_card": 1.5}, r"penetration fraction in \(0, 1\)"),
        ({"cut_card": 10, "hand_after_cut": True}, r"cut_card=10 .*12\.\.208"),
        ({"dragon7_pays": -40}, r"dragon7_pays=-40 .*positive payout"),
        ({"commission": 1.5}, r"commission=1.5"),
        ({"burn": "yes"}, r"burn='yes' .*true or false"),
    ],
)
def test_rules_validation_names_the_field_and_allowed_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Rules(**kwargs)


def test_rules_derived_fields():
    rules = Rules(decks=6, side_bets=["panda8", "player_pair"], cut_card=0.75)
    assert rules.side_bets == ("player_pair", "panda8")  # canonical order
    assert rules.offered_bets == ("banker", "player", "tie", "player_pair", "panda8")
    assert list(rules.offered_mask) == [True, True, True, True, False, False, True]
    assert rules.n_cards == 312 and rules.cards_behind_cut == 78
    assert Rules().cards_behind_cut == 14
    assert rules.replace(decks=8).decks == 8
    with pytest.raises(ValueError, match="decks"):
        rules.replace(decks=12)


def test_payoffs_sets_pair_columns_from_flags():
    rules = Rules()
    outcome = np.array([R.OUTCOMES.index("tie"), R.OUTCOMES.index("player")])
    pay = R.payoffs(rules, outcome, np.array([True, False]), np.array([False, True]))
    assert pay.shape == (2, 7)
    assert pay[0, R.BETS.index("player_pair")] == 11 and pay[0, R.BETS.index("banker_pair")] == -1
    assert pay[1, R.BETS.index("banker_pair")] == 11 and pay[1, R.BETS.index("player")] == 1


def test_hand_class_round_trip_and_payoff_matrix_settles_like_payoffs():
    """The hand class holds everything settlement needs: its payoff row equals the outcome/pair
    settlement of every dealt hand, and the encoding inverts exactly."""
    from pb_gym import engine

    assert R.N_HAND_CLASSES == 1600
    index = np.arange(R.N_HAND_CLASSES)
    assert np.array_equal(R.hand_class(*R.hand_class_fields(index)), index)
    for rules in (Rules(), Rules(banker_variant="ez", tie_pays=9), Rules(banker_variant="no-commission")):
        state = engine.init(rules, 4096, seed=7)
        _, hand = engine.deal(rules, state)
        cls = R.hand_class(
            hand.player_total,
            hand.banker_total,
            hand.player_ncards,
            hand.banker_ncards,
            hand.player_pair,
            hand.banker_pair,
        )
        assert np.array_equal(rules.payoff_matrix()[cls], hand.payoffs(rules))
