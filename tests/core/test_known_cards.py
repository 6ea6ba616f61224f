"""Known cards and edge sorting: brute force on a small shoe, the published figures, the CLI."""

import functools
import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from pb_gym import exact, known_cards
from pb_gym import rules as R
from pb_gym.reference import deal_hand

from repo_paths import DATA  # noqa: E402

# Jacobson's known-card and edge-sorting figures (tests/data/known_cards_figures.json names the source)
FIGURES = json.loads((DATA / "known_cards_figures.json").read_text())

# A small shoe of 11 cards (9 ranks, two kings, two sevens): every ordered 6-card deal is enumerated
SMALL = np.zeros(R.N_RANKS, dtype=np.int64)
for letter, count in {"A": 1, "2": 1, "3": 1, "5": 1, "6": 1, "7": 2, "8": 1, "9": 1, "J": 1, "K": 2}.items():
    SMALL[known_cards.RANK_LETTERS.index(letter)] = count


@functools.lru_cache(maxsize=1)
def small_deals() -> tuple[np.ndarray, np.ndarray]:
    """Every ordered deal of six of the 11 labelled cards: their ranks (n, 6) and hand classes, dealt
    by the reference Python loop."""
    cards = [rank for rank in range(R.N_RANKS) for _ in range(SMALL[rank])]
    ranks, classes = [], []
    for deal in itertools.permutations(cards, 6):
        hand, _ = deal_hand([r + 1 for r in deal], 0)
        ranks.append(deal)
        classes.append(
            R.hand_class(
                hand.player_total,
                hand.banker_total,
                len(hand.player),
                len(hand.banker),
                hand.player[0] == hand.player[1],
                hand.banker[0] == hand.banker[1],
            )
        )
    return np.array(ranks), np.array(classes)


def brute_force_law(known: dict) -> np.ndarray:
    ranks, classes = small_deals()
    keep = np.ones(len(classes), dtype=bool)
    for position, allowed in known.items():
        keep &= np.isin(ranks[:, position - 1], list(allowed))
    return np.bincount(classes[keep], minlength=R.N_HAND_CLASSES) / keep.sum()


K, SEVEN, NINE, ACE = (known_cards.RANK_LETTERS.index(x) for x in "K79A")
CASES = [
    {},
    {1: [NINE]},
    {2: [K]},
    {4: [SEVEN]},
    {5: [SEVEN]},
    {6: [K]},
    {1: [K], 3: [K]},
    {1: [SEVEN], 5: [SEVEN], 6: [ACE]},
    {1: known_cards.parse_known("1=6789")[1]},
    {1: [5, 6, 7, 8], 2: [5, 6, 7, 8], 3: [0, 1, 2, 3, 4, 9, 10, 11, 12], 6: [9, 10, 11, 12]},
]


@pytest.mark.parametrize("known", CASES, ids=[repr(c) for c in CASES])
def test_law_given_known_cards_matches_brute_force(known):
    law = known_cards.hand_class_probabilities(SMALL, known)
    np.testing.assert_allclose(law, brute_force_law(known), rtol=0, atol=1e-12)
    ranks, _ = small_deals()
    keep = np.ones(len(ranks), dtype=bool)
    for position, allowed in known.items():
        keep &= np.isin(ranks[:, position - 1], list(allowed))
    assert known_cards.known_probability(SMALL, known) == pytest.approx(keep.mean(), abs=1e-12)


def test_no_known_card_is_the_exact_law_and_rows_are_priced_one_by_one():
    shoes = np.stack([SMALL, SMALL + 1])
    law = known_cards.hand_class_probabilities(shoes)
    np.testing.assert_allclose(law, exact.hand_class_probabilities(shoes), rtol=0, atol=1e-13)
    ev = known_cards.expected_values(shoes, {1: [NINE]})
    assert ev.shape == (2, len(R.BETS))
    np.testing.assert_allclose(ev[1], known_cards.expected_values(SMALL + 1, {1: [NINE]}), rtol=0, atol=1e-15)


def test_impossible_known_cards_are_refused():
    with pytest.raises(ValueError, match="cannot be dealt"):
        known_cards.hand_class_probabilities(SMALL, {1: [K], 3: [K], 5: [K]})  # two kings only


@pytest.mark.parametrize(
    "text, message",
    [
        ("7=9", "bad position"),
        ("1=Z", "bad ranks"),
        ("1=", "bad ranks"),
        ("19", "bad position"),
        ("1=9,1=8", "given twice"),
        ("", "nothing given"),
    ],
)
def test_parse_known_names_the_bad_part(text, message):
    with pytest.raises(ValueError, match=message):
        known_cards.parse_known(text)


def test_parse_known_reads_ranks_and_sets():
    assert known_cards.parse_known("1=9, 4=t,2=10") == {1: (8,), 4: (9,), 2: (9,)}
    assert known_cards.parse_known("1=6789") == {1: (5, 6, 7, 8)}


def pct(x: float) -> float:
    return round(100 * x, 3)


@functools.lru_cache(maxsize=1)
def eight_deck_table() -> np.ndarray:
    return known_cards.value_prefix_table(R.full_shoe(8))


@pytest.mark.parametrize("position", [1, 2, 3, 4])
def test_known_card_edges_reproduce_jacobson(position):
    published = FIGURES["known_card_edge_pct"][str(position)]
    assert pct(known_cards.known_value_edge(eight_deck_table(), position)) == published


@pytest.mark.slow
@pytest.mark.parametrize("position", [1, 2, 5, 6])
def test_known_card_edges_by_rank_reproduce_jacobson(position):
    edge = known_cards.known_card_edge(R.full_shoe(8), position)["edge"]
    assert pct(edge) == FIGURES["known_card_edge_pct"][str(position)]


def test_edge_sorting_reproduces_jacobson_and_the_best_split():
    table = eight_deck_table()
    figures = FIGURES["edge_sorting_pct"]
    assert pct(known_cards.sorted_cards_edge(table, (6, 7, 8, 9), (1,))) == figures["one_card_6789"]
    assert pct(known_cards.sorted_cards_edge(table, (6, 7, 8, 9), (1, 2, 3, 4))) == figures["four_cards_6789"]
    assert len(known_cards.value_splits()) == 511  # 1,023 nonempty classes, each split counted twice
    split, edge = known_cards.best_split(table)
    assert pct(edge) == figures["four_cards_best_split"]
    assert split == (4, 5, 6, 7, 8, 9)


def test_value_prefix_table_agrees_with_the_exact_calculator():
    table = known_cards.value_prefix_table(SMALL)
    main = [R.BETS.index(b) for b in known_cards.MAIN_BET_NAMES]
    np.testing.assert_allclose(
        table.reshape(-1, 3).sum(axis=0), exact.expected_values(SMALL)[main], rtol=0, atol=1e-13
    )
    assert known_cards.value_prefix_probabilities(SMALL).sum() == pytest.approx(1.0, abs=1e-13)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pb_gym.experiments.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_odds_known_prices_the_bets_given_the_cards():
    ranks = ",".join(map(str, SMALL))
    done = run_cli("odds", "--ranks", ranks, "--known", "1=9,5=7", "--bets", "banker,player,tie", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    expected = known_cards.expected_values(SMALL, {1: [NINE], 5: [SEVEN]}, ["banker", "player", "tie"])
    assert [result["ev"][b] for b in ("banker", "player", "tie")] == pytest.approx(expected, abs=1e-15)
    assert result["known"] == {"1": ["9"], "5": ["7"]}


@pytest.mark.parametrize("known, message", [("1=X", "bad ranks"), ("8=9", "bad position")])
def test_cli_odds_known_bad_input_is_one_line_and_status_2(known, message):
    done = run_cli("odds", "--known", known)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
