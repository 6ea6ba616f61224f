"""The suited side bets: the Wizard of Odds' perfect-pair counts to the integer, and a brute force."""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from pb_gym import suited

# Wizard of Odds, "Perfect Pairs" (tests/data/known_cards_figures.json names the source)
FIGURES = json.loads((Path(__file__).resolve().parent / "data" / "known_cards_figures.json").read_text())


def test_perfect_pair_counts_reproduce_the_published_eight_deck_counts():
    published = FIGURES["perfect_pair_v2"]
    counts = suited.perfect_pair_counts(suited.suited_shoe(8))
    assert counts == {k: published[k] for k in ("two", "one", "none", "total")}
    v1 = FIGURES["perfect_pair_v1"]
    assert counts["one"] + counts["two"] == v1["8_decks_25"]["win"]
    six = suited.perfect_pair_counts(suited.suited_shoe(6))
    assert six["one"] + six["two"] == v1["6_decks_25"]["win"]
    assert six["total"] == v1["6_decks_25"]["total"]


@pytest.mark.parametrize(
    "decks, bet, key",
    [(8, "perfect_pair", None), (8, "perfect_pair_v1", "8_decks_25"), (6, "perfect_pair_v1", "6_decks_25")],
)
def test_perfect_pair_house_edges_reproduce_the_published_figures(decks, bet, key):
    published = FIGURES["perfect_pair_v2"] if key is None else FIGURES["perfect_pair_v1"][key]
    ev = float(suited.expected_values(suited.suited_shoe(decks), [bet])[0])
    assert round(-100 * ev, 4) == published["house_edge_pct"]


def test_perfect_pair_v1_at_26_to_1():
    p = suited.perfect_pair_probabilities(suited.suited_shoe(8))
    assert (
        round(-100 * ((p[1] + p[2]) * 26 - p[0]), 4)
        == FIGURES["perfect_pair_v1"]["8_decks_26"]["house_edge_pct"]
    )


def test_perfect_pair_matches_a_brute_force_of_a_small_suited_shoe():
    shoe = np.zeros((13, 4), dtype=np.int64)
    shoe[0, 0], shoe[0, 1], shoe[5, 2], shoe[12, 3], shoe[3, 0] = 3, 1, 2, 2, 1  # 9 cards
    cards = [(r, s) for r in range(13) for s in range(4) for _ in range(shoe[r, s])]
    tally = np.zeros(3)
    for deal in itertools.permutations(range(len(cards)), 4):
        c = [cards[i] for i in deal]
        tally[int(c[0] == c[2]) + int(c[1] == c[3])] += 1
    np.testing.assert_allclose(suited.perfect_pair_probabilities(shoe), tally / tally.sum(), atol=1e-15)
    counts = suited.perfect_pair_counts(shoe)
    assert [counts["none"], counts["one"], counts["two"]] == list(tally // 4)


def test_bad_suited_input_names_the_shape_and_the_bets():
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 13, 4\)"):
        suited.perfect_pair_counts(np.ones(13, dtype=np.int64))
    with pytest.raises(ValueError, match="allowed: perfect_pair, perfect_pair_v1"):
        suited.expected_values(suited.suited_shoe(8), ["royal_match"])
