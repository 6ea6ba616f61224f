"""The bet catalog and the hand-class exact calculator: published figures to the integer, the seven
spots against the rules' payoff matrix, brute force over every ordered deal, and bad definitions."""

import functools
import itertools
import json
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest

from pb_gym import catalog, exact
from pb_gym import rules as R
from pb_gym.reference import deal_hand
from pb_gym.rules import Rules

from repo_paths import DATA  # noqa: E402

# Published figures, each with its source named (Wizard of Odds, Advanced Advantage Play)
FIGURES = json.loads((DATA / "catalog_figures.json").read_text())
EIGHT_DECKS = R.full_shoe(8)


@pytest.fixture(scope="module")
def eight_deck_counts() -> np.ndarray:
    return exact.hand_class_counts(EIGHT_DECKS)


def test_hand_class_counts_sum_to_every_deal_and_agree_with_the_outcome_counts(eight_deck_counts):
    assert int(eight_deck_counts.sum()) == FIGURES["total_deals_8_decks"] == exact.deals_of_six(416)
    pt, bt, pn, bn, _, _ = R.hand_class_fields(np.arange(R.N_HAND_CLASSES))
    outcome = R.OUTCOME_TABLE[pt, bt, pn - 2, bn - 2]
    by_outcome = [int(eight_deck_counts[outcome == o].sum()) for o in range(R.N_OUTCOMES)]
    assert by_outcome == [int(c) for c in exact.outcome_counts(EIGHT_DECKS)]


@pytest.mark.parametrize("entry", FIGURES["counts_8_decks"], ids=lambda e: e["bet"])
def test_published_8_deck_combination_counts_to_the_integer(entry, eight_deck_counts):
    bet = catalog.get_bet(entry["bet"])
    masks = zip(bet.rows, bet.row_masks(), strict=True)
    counts = {row.label: int(eight_deck_counts[mask].sum()) for row, mask in masks}
    for label, published in entry["rows"].items():
        assert counts[label] == published, (entry["bet"], label, entry["source"])


def test_combination_counts_by_row_and_the_issues_figures():
    counts = catalog.combination_counts("dragon_bonus_player", EIGHT_DECKS)
    assert counts["win by 9"] == 18_409_431_764_992
    assert counts["total"] == 4_998_398_275_503_360
    assert sum(v for k, v in counts.items() if k != "total") == counts["total"]
    assert catalog.combination_counts("player_total_0", EIGHT_DECKS)["player_total=0"] == 469_796_508_410_880


@pytest.mark.parametrize(
    "bet, decks, published, decimals, source", FIGURES["returns"]["rows"], ids=lambda x: str(x)
)
def test_published_returns(bet, decks, published, decimals, source):
    ev = catalog.expected_values(R.full_shoe(decks), [bet])[0]
    assert abs(ev - published) <= 0.5 * 10.0**-decimals + 1e-12, (bet, decks, ev, source)


@pytest.mark.parametrize(
    "bet, decks, published, decimals, source", FIGURES["edges_pct"]["rows"], ids=lambda x: str(x)
)
def test_published_house_edges(bet, decks, published, decimals, source):
    edge = -100 * catalog.expected_values(R.full_shoe(decks), [bet])[0]
    # a source may round a figure it printed elsewhere with one more digit (bad_beat: 8.4585 -> 8.459)
    printed = [_half_up(edge, decimals), _half_up(_half_up(edge, decimals + 1), decimals)]
    assert published in printed, (bet, decks, edge, source)


def _half_up(x: float, decimals: int) -> float:
    """``x`` rounded as printed tables round (half up, in decimal)."""
    return float(Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


@pytest.mark.parametrize("row", FIGURES["total_cards_probabilities"]["rows"], ids=lambda r: f"{r[0]}decks")
def test_4_5_6_probabilities(row):
    decks, *published = row
    pt, bt, pn, bn, _, _ = R.hand_class_fields(np.arange(R.N_HAND_CLASSES))
    p = exact.hand_class_probabilities(R.full_shoe(decks))
    assert [round(float(p[pn + bn == n].sum()), 6) for n in (4, 5, 6)] == published


@pytest.mark.parametrize(
    "rules",
    [
        Rules(),
        Rules(banker_variant="no-commission"),
        Rules(banker_variant="ez", tie_pays=9),
        Rules(commission=0.04, pair_pays=12, dragon7_pays=30, panda8_pays=20.5, side_bets=("dragon7",)),
    ],
    ids=["standard", "no-commission", "ez-tie9", "custom-pays"],
)
def test_the_seven_spots_equal_the_rules_payoff_matrix(rules):
    assert catalog.bet_names(rules)[: R.N_BETS] == R.BETS
    np.testing.assert_array_equal(catalog.pay_matrix(R.BETS, rules), rules.payoff_matrix())
    # and their exact EVs equal the fast 7-spot path of pb_gym.exact
    comps = np.stack([R.full_shoe(8), R.full_shoe(1), R.full_shoe(8) - np.arange(13) * 2])
    np.testing.assert_allclose(
        catalog.expected_values(comps, R.BETS, rules), exact.expected_values(comps, rules), rtol=0, atol=1e-14
    )


def _brute_force_hand_class_counts(composition):
    return _brute_force(tuple(composition)).copy()


@functools.lru_cache(maxsize=4)
def _brute_force(composition):
    """Deal every ordered 6-card sequence of the physical cards through the plain reference loop."""
    cards = [rank + 1 for rank, n in enumerate(composition) for _ in range(n)]
    counts = np.zeros(R.N_HAND_CLASSES, dtype=np.int64)
    for deal in itertools.permutations(cards, 6):
        hand, _ = deal_hand(deal, 0)
        player, banker = hand.player, hand.banker
        cls = R.hand_class(
            hand.player_total,
            hand.banker_total,
            len(player),
            len(banker),
            player[0] == player[1],
            banker[0] == banker[1],
        )
        counts[cls] += 1
    return counts


@pytest.mark.parametrize(
    "composition",
    [
        [0, 0, 0, 0, 1, 0, 0, 0, 1, 3, 2, 1, 2],  # 10 cards, 8 zero-valued of 4 ranks: both hands' pairs
        [2, 0, 0, 2, 1, 1, 0, 1, 1, 1, 0, 0, 1],  # 10 cards, pairs of nonzero values, third cards drawn
    ],
)
def test_counts_and_catalog_evs_equal_brute_force_over_every_ordered_deal(composition):
    brute = _brute_force_hand_class_counts(composition)
    np.testing.assert_array_equal(exact.hand_class_counts(composition), brute)
    probabilities = brute / brute.sum()
    np.testing.assert_allclose(exact.hand_class_probabilities(composition), probabilities, rtol=0, atol=1e-15)
    pay = catalog.pay_matrix()
    np.testing.assert_allclose(catalog.expected_values(composition), probabilities @ pay, rtol=0, atol=1e-13)
    pt, bt, pn, bn, pp, bp = R.hand_class_fields(np.arange(R.N_HAND_CLASSES))
    pairs = [
        probabilities[pp].sum(),
        probabilities[bp].sum(),
        probabilities[pp & bp].sum(),
        probabilities[pp | bp].sum(),
    ]
    np.testing.assert_allclose(exact.pair_probabilities(composition), pairs, rtol=0, atol=1e-15)


def test_float_path_equals_integer_path_for_many_compositions_in_chunks(monkeypatch):
    monkeypatch.setattr(exact, "CLASS_CHUNK", 48)  # several chunks, and a last block padded
    rng = np.random.default_rng(11)
    comps = R.full_shoe(8) - rng.integers(0, 32, size=(101, 13))
    comps[:5, 9:] = rng.integers(0, 3, size=(5, 4))  # few zero-valued cards left (Z < 4 included)
    counts = np.stack([exact.hand_class_counts(c) for c in comps])
    deals = np.array([float(exact.deals_of_six(n)) for n in comps.sum(axis=1)])
    np.testing.assert_allclose(
        exact.hand_class_probabilities(comps), counts / deals[:, None], rtol=1e-12, atol=1e-17
    )
    pay = catalog.pay_matrix(["lucky6", "either_pair", "dragon_bonus_banker"])
    np.testing.assert_allclose(
        exact.hand_class_expectations(comps, pay), (counts / deals[:, None]) @ pay, rtol=0, atol=1e-12
    )
    assert exact.value_class_probabilities(comps[:3]).shape == (3, exact.N_VALUE_CLASSES)
    assert catalog.expected_values(comps.reshape(101, 1, 13), ["tie"]).shape == (101, 1, 1)


def test_removing_a_card_is_a_martingale_for_every_catalog_bet():
    """Exchangeability: the count-weighted average of the EVs after one card is removed is the EV."""
    comp = R.full_shoe(2) - np.array([0, 1, 0, 2, 0, 0, 1, 0, 3, 0, 2, 0, 1])
    removed = np.array([comp - np.eye(13, dtype=np.int64)[r] for r in range(13)])
    weights = comp / comp.sum()
    np.testing.assert_allclose(
        weights @ catalog.expected_values(removed), catalog.expected_values(comp), rtol=0, atol=1e-13
    )


def test_every_catalog_bet_has_a_source_and_a_valid_round_trip():
    for rules in (Rules(), Rules(banker_variant="ez")):
        for name, bet in catalog.catalog(rules).items():
            assert bet.source, name
            again = catalog.bet_from_dict(bet.as_dict())
            np.testing.assert_array_equal(again.column(), bet.column())
    assert len(set(catalog.bet_names())) == len(catalog.bet_names()) >= 50


def test_user_bet_used_with_catalog_names():
    bet = catalog.bet_from_dict(
        {
            "name": "tie_on_7_or_8",
            "source": "a test table",
            "rows": [{"when": {"winner": "tie", "player_total": [7, 8]}, "pays": "45 to 1"}],
        }
    )
    ev = catalog.expected_values(EIGHT_DECKS, [bet, "egalite_7", "egalite_8"])
    published = FIGURES["counts_8_decks"]
    tie7 = next(e for e in published if e["bet"] == "egalite_7")["rows"]["tie on 7"]
    tie8 = next(e for e in published if e["bet"] == "egalite_8")["rows"]["tie on 8"]
    assert ev[0] == pytest.approx(46 * (tie7 + tie8) / FIGURES["total_deals_8_decks"] - 1, abs=1e-14)


def test_mixed_pair_and_total_bets_are_priced_exactly():
    """A bet on a pair *and* a total needs the joint law (a pair of 5s is a player 0): exact here."""
    bet = catalog.bet_from_dict(
        {
            "name": "pair_and_zero",
            "rows": [
                {"when": {"player_pair": True, "player_total": 0}, "pays": 3},
                {"when": {"player_pair": True, "player_total": [1, 2, 3, 4, 5, 6, 7, 8, 9]}, "pays": "push"},
            ],
        }
    )
    assert bet.uses_pairs
    composition = [0, 0, 0, 0, 1, 0, 0, 0, 1, 3, 2, 1, 2]
    brute = _brute_force_hand_class_counts(composition)
    assert catalog.expected_values(composition, [bet])[0] == pytest.approx(
        (brute / brute.sum()) @ bet.column(), abs=1e-14
    )


def test_unknown_bet_names_list_the_allowed_ones():
    with pytest.raises(ValueError, match=r"^unknown bet 'dragon_bonus'; allowed: banker, player, tie, "):
        catalog.pay_matrix(["dragon_bonus"])


ROW = {"when": {"winner": "player"}, "pays": 1}


@pytest.mark.parametrize(
    "definition, message",
    [
        (
            {"rows": [ROW]},
            "a bet definition needs a 'name' of lower-case letters, digits and underscores; got None",
        ),
        (
            {"name": "My Bet", "rows": [ROW]},
            "a bet definition needs a 'name' of lower-case letters, digits and underscores; got 'My Bet'",
        ),
        (
            {"name": "b", "rows": [ROW], "pay": 3},
            "bet 'b': unknown key 'pay'; allowed: name, title, source, rows",
        ),
        (
            {"name": "b", "rows": []},
            "bet 'b': 'rows' must be a non-empty list of rows {when: {field: value, ...}, pays: ...}",
        ),
        (
            {"name": "b", "rows": [ROW, {"when": {"winer": "player"}, "pays": 1}]},
            "bet 'b', row 2: unknown outcome field 'winer'; allowed: " + ", ".join(catalog.FIELDS),
        ),
        (
            {"name": "b", "rows": [{"when": {"player_total": 10}, "pays": 1}]},
            "bet 'b', row 1: player_total=10 does not exist; allowed: 0..9",
        ),
        (
            {"name": "b", "rows": [{"when": {"winner": "dragon"}, "pays": 1}]},
            "bet 'b', row 1: winner='dragon' does not exist; allowed: banker, player, tie",
        ),
        (
            {"name": "b", "rows": [{"when": {"player_natural": "yes"}, "pays": 1}]},
            "bet 'b', row 1: player_natural='yes' does not exist; allowed: false, true",
        ),
        (
            {"name": "b", "rows": [{"when": {"player_cards": True}, "pays": 1}]},
            "bet 'b', row 1: player_cards=True does not exist; allowed: 2, 3",
        ),
        (
            {"name": "b", "rows": [{"when": {"winner": "player"}, "pays": -2}]},
            "bet 'b', row 1: pays -2 is negative but not a loss; allowed: a net win >= 0 per unit "
            "(e.g. 1.5 or '3:2'), 'push' (0) or 'lose' (-1)",
        ),
        (
            {"name": "b", "rows": [{"when": {"winner": "player"}, "pays": "evens"}]},
            "bet 'b', row 1: pays 'evens' is not a payout; allowed: a net win >= 0 per unit (e.g. 1.5 or "
            "'3:2'), 'push' (0) or 'lose' (-1)",
        ),
        (
            {"name": "b", "rows": [{"when": {"winner": "player"}}]},
            "bet 'b', row 1: missing 'pays'; allowed: a net win >= 0 per unit (e.g. 1.5 or '3:2'), "
            "'push' (0) or 'lose' (-1)",
        ),
        (
            {"name": "b", "rows": [{"when": {"winner": "player"}, "pays": 1, "odds": 2}]},
            "bet 'b', row 1: unknown key 'odds'; allowed: when, pays, label",
        ),
        (
            {"name": "b", "rows": [{"when": {"player_natural": True, "player_cards": 3}, "pays": 1}]},
            "bet 'b', row 1 (player_natural=true, player_cards=3) matches no hand",
        ),
        (
            {
                "name": "b",
                "rows": [{"when": {"winner": "player"}, "pays": 1}, {"when": {"player_total": 9}, "pays": 2}],
            },
            "bet 'b': rows 1 and 2 overlap (both match player 9 on 2 cards, banker 0 on 2 cards, "
            "player_pair=false, banker_pair=false); a hand may match one row only",
        ),
    ],
)
def test_bad_definitions_are_errors_naming_the_bet_and_the_row(definition, message):
    with pytest.raises(ValueError) as error:
        catalog.bet_from_dict(definition)
    assert str(error.value) == message


def test_pays_forms():
    def pays(value):
        definition = {"name": "b", "rows": [{"when": {"winner": "tie"}, "pays": value}]}
        return catalog.bet_from_dict(definition).rows[0].pays

    forms = {"3:2": 1.5, "3 to 2": 1.5, "push": 0.0, "lose": -1.0, -1: -1.0, 0.54: 0.54, 8: 8.0}
    assert {form: pays(form) for form in forms} == forms
