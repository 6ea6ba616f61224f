"""The exact calculator against the published figures, integer counts, brute force and identities."""

import itertools
import math

import numpy as np
import pytest

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.reference import deal_hand
from pb_gym.rules import Rules

# The published figures (tests/data/published_figures.json names their sources: the Wizard of Odds'
# baccarat and EZ baccarat analyses): decks -> P(banker), P(player), P(tie), house edges in %; and
# (bet, rules, 8-deck edge, 6-deck edge) of the variants and side bets
from published_figures import EIGHT_DECK_COUNTS, MAIN_FIGURES, VARIANT_FIGURES  # noqa: E402


def edge_pct(ev: float) -> float:
    """House edge in percent, rounded to the 4 decimals the published tables show."""
    return round(-100 * float(ev), 4)


@pytest.mark.parametrize("decks", sorted(MAIN_FIGURES))
def test_main_bets_reproduce_published_figures_exactly(decks):
    pb, pp, pt, banker, player, tie8, tie9 = MAIN_FIGURES[decks]
    shoe = R.full_shoe(decks)
    odds = exact.odds(shoe)
    assert round(odds["probabilities"]["banker"], 6) == pb
    assert round(odds["probabilities"]["player"], 6) == pp
    assert round(odds["probabilities"]["tie"], 6) == pt
    assert edge_pct(odds["ev"]["banker"]) == banker
    assert edge_pct(odds["ev"]["player"]) == player
    assert edge_pct(odds["ev"]["tie"]) == tie8
    assert edge_pct(exact.expected_values(shoe, Rules(tie_pays=9))[R.BETS.index("tie")]) == tie9


@pytest.mark.parametrize("bet, kwargs, edge8, edge6", VARIANT_FIGURES)
def test_variants_and_side_bets_reproduce_published_figures(bet, kwargs, edge8, edge6):
    for decks, edge in ((8, edge8), (6, edge6)):
        ev = exact.expected_values(R.full_shoe(decks), Rules(decks=decks, **kwargs))
        assert edge_pct(ev[R.BETS.index(bet)]) == edge, (decks, bet, kwargs)


def test_integer_counts_for_8_decks_equal_the_published_integers():
    counts = exact.outcome_counts(R.full_shoe(8))
    by_winner = [
        sum(int(c) for c, w in zip(counts, R.OUTCOME_WINNER, strict=True) if w == winner)
        for winner in range(3)
    ]
    assert int(counts.sum()) == EIGHT_DECK_COUNTS["deals_of_six_cards"] == exact.deals_of_six(416)
    assert int(by_winner[R.BANKER]) == EIGHT_DECK_COUNTS["banker"]
    assert int(by_winner[R.PLAYER]) == EIGHT_DECK_COUNTS["player"]
    assert int(by_winner[R.TIE]) == EIGHT_DECK_COUNTS["tie"]


def test_multiset_weights_count_every_ordering_once():
    weights = exact.multiset_weights()
    assert weights.shape == (math.comb(15, 6), R.N_OUTCOMES)
    assert weights.sum() == 10**6
    # the row of a multiset sums to its number of distinct orderings: 6! / prod(m_v!)
    for index, multiset in enumerate(itertools.combinations_with_replacement(range(10), 6)):
        expected = math.factorial(6)
        for v in set(multiset):
            expected //= math.factorial(multiset.count(v))
        assert weights[index].sum() == expected


@pytest.mark.parametrize(
    "composition",
    [
        [1, 1, 0, 2, 1, 0, 1, 2, 1, 1, 1, 0, 0],  # 11 cards, every branch reachable
        [0, 2, 2, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0],  # 9 cards, ten-valued cards of different ranks
    ],
)
def test_counts_equal_brute_force_over_every_ordered_deal(composition):
    """Deal every ordered 6-card sequence of the physical cards through the plain reference loop."""
    cards = [rank + 1 for rank, n in enumerate(composition) for _ in range(n)]
    tally = np.zeros(R.N_OUTCOMES, dtype=np.int64)
    pairs = 0
    for deal in itertools.permutations(cards, 6):
        hand, _ = deal_hand(deal, 0)
        tally[hand.outcome] += 1
        pairs += deal[0] == deal[2]
    assert list(exact.outcome_counts(composition)) == list(tally)
    assert exact.pair_probability(composition) == pytest.approx(pairs / tally.sum(), rel=1e-12)


def test_float_path_equals_integer_path_and_counts_sum_to_deals_of_six():
    rng = np.random.default_rng(7)
    comps = R.full_shoe(8) - rng.integers(0, 30, size=(200, 13))
    counts = exact.outcome_counts(comps)
    totals = comps.sum(axis=1)
    assert all(int(c.sum()) == exact.deals_of_six(n) for c, n in zip(counts, totals, strict=True))
    probs = exact.outcome_probabilities(comps)
    expected = counts / np.array([float(exact.deals_of_six(n)) for n in totals])[:, None]
    np.testing.assert_allclose(probs, expected, rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("variant", R.BANKER_VARIANTS)
def test_removing_a_card_is_a_martingale_for_every_bet(variant):
    """Exchangeability: the count-weighted average of the EVs after removing one card equals the EV."""
    rules = Rules(banker_variant=variant)
    rng = np.random.default_rng(3)
    for comp in [R.full_shoe(8), R.full_shoe(1), R.full_shoe(8) - rng.integers(0, 25, 13)]:
        removed = np.array([comp - np.eye(13, dtype=np.int64)[r] for r in range(13) if comp[r] > 0])
        weights = np.array([comp[r] for r in range(13) if comp[r] > 0]) / comp.sum()
        np.testing.assert_allclose(
            weights @ exact.expected_values(removed, rules),
            exact.expected_values(comp, rules),
            rtol=0,
            atol=1e-13,
        )


def test_vectorized_shapes():
    comps = np.stack([R.full_shoe(8), R.full_shoe(6)])
    assert exact.expected_values(comps).shape == (2, 7)
    assert exact.outcome_probabilities(comps[None]).shape == (1, 2, 6)
    np.testing.assert_allclose(exact.outcome_probabilities(comps).sum(axis=-1), 1.0, rtol=1e-14)


@pytest.mark.parametrize(
    "composition, message",
    [
        ([4] * 12, r"13 counts by rank \(A, 2, 3, .*\) on its last axis; got shape \(12,\)"),
        ([4] * 12 + [-1], r"composition counts must be >= 0"),
        ([1, 1, 1, 1, 1] + [0] * 8, r"at least 6 cards .* got 5"),
        ([0.5] * 13, r"whole numbers of cards"),
        (["a"] * 13, r"whole numbers of cards"),
    ],
)
def test_bad_compositions_are_rejected(composition, message):
    with pytest.raises(ValueError, match=message):
        exact.expected_values(composition)


def test_integer_counts_refuse_more_than_8_decks():
    with pytest.raises(ValueError, match="at most 416 cards"):
        exact.outcome_counts(R.full_shoe(8) + 1)
    assert exact.outcome_probabilities(R.full_shoe(8) * 2).sum() == pytest.approx(1.0)


def test_pair_probabilities_in_closed_form_agree_with_the_hand_class_law():
    """Player pair, banker pair, both, either: the closed form by exchangeability against the marginals
    of the joint hand-class law (which splits zero-valued pairs by rank) and the one-pair formula."""
    rng = np.random.default_rng(5)
    comps = np.concatenate([R.full_shoe(8)[None], R.full_shoe(1) - rng.integers(0, 3, size=(20, 13))])
    pairs = exact.pair_probabilities(comps)
    np.testing.assert_allclose(pairs[:, 0], exact.pair_probability(comps), rtol=1e-15)
    np.testing.assert_allclose(pairs[:, 1], pairs[:, 0], rtol=0)
    _, _, _, _, pp, bp = R.hand_class_fields(np.arange(R.N_HAND_CLASSES))
    law = exact.hand_class_probabilities(comps)
    marginals = np.stack(
        [law[:, pp].sum(1), law[:, bp].sum(1), law[:, pp & bp].sum(1), law[:, pp | bp].sum(1)], axis=1
    )
    np.testing.assert_allclose(pairs, marginals, rtol=0, atol=1e-15)
    np.testing.assert_allclose(exact.value_class_probabilities(comps).sum(axis=1), 1.0, rtol=1e-14)


def test_a_small_batch_walks_narrow_blocks_with_the_same_bits_as_a_full_block():
    """Fewer compositions than a block (16) are walked in one narrower block, not padded to 16: a
    single env prices one composition per step. Every composition's probabilities are the same bits
    alone, in any small batch, and in a batch of full blocks."""
    widths = {1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 8: 8, 9: 16, 16: 16, 17: 16, 1000: 16}
    assert {n: exact.block_width(n) for n in widths} == widths
    rng = np.random.default_rng(5)
    compositions = np.repeat(R.full_shoe(8)[None], 40, axis=0)
    for row in compositions:  # late shoes: up to 380 of 416 cards seen
        seen = rng.choice(416, size=rng.integers(0, 380), replace=False)
        np.subtract.at(row, np.repeat(np.arange(13), 32)[seen], 1)
    for probabilities in (exact.outcome_probabilities, exact.hand_class_probabilities):
        batch = probabilities(compositions)
        for n in (1, 2, 3, 5, 8, 16, 17, 33):
            assert np.array_equal(probabilities(compositions[:n]), batch[:n])
        assert all(np.array_equal(probabilities(c), batch[i]) for i, c in enumerate(compositions))
        assert probabilities(compositions[:1]).flags["C_CONTIGUOUS"]
    # and so are their EVs: the product with the pay table is row by row (BLAS's is not)
    from pb_gym import catalog

    rules = Rules()
    table = catalog.TableBets(rules, catalog.rank_bets(rules)[7:])  # the 58 bets settled by rank
    for expected_values in (exact.expected_values, table.expected_values):
        batch = expected_values(compositions)
        for n in (1, 2, 5, 16, 17, 33):
            assert np.array_equal(expected_values(compositions[:n]), batch[:n])
        assert all(np.array_equal(expected_values(c[None])[0], batch[i]) for i, c in enumerate(compositions))


def test_a_usable_composition_is_read_in_place_only_when_asked():
    shoe = R.full_shoe(8)
    assert exact.validate_composition(shoe, copy=False) is shoe
    checked = exact.validate_composition(shoe)
    assert checked is not shoe and np.array_equal(checked, shoe)
    as_int32 = shoe.astype(np.int32)  # converted, so a new array either way
    assert exact.validate_composition(as_int32, copy=False).dtype == np.int64
    with pytest.raises(ValueError, match="composition counts must be >= 0"):
        exact.validate_composition(np.where(np.arange(13) == 0, -1, 32), copy=False)


@pytest.mark.parametrize(
    ("rank", "count", "message"),
    [
        (0, -1, r"composition counts must be >= 0"),
        (12, exact.MAX_RANK_COUNT + 1, r"at most 1,000,000,000 cards of a rank"),
        (5, np.iinfo(np.int64).min, r"composition counts must be >= 0"),
        (None, 0, r"at least 6 cards .* got 5"),
    ],
)
@pytest.mark.parametrize("contiguous", [True, False])
def test_a_bad_row_among_many_is_refused_by_name(rank, count, message, contiguous):
    """The compiled check of an int64 batch (branch-free passes) refuses what the checks with
    messages refuse, wherever the bad row is, and a non-contiguous batch is checked the same way."""
    batch = np.tile(R.full_shoe(8), (5000, 1))
    assert exact.validate_composition(batch, copy=False) is batch
    if rank is None:  # a row of five cards
        batch[3210] = [1, 1, 1, 1, 1] + [0] * 8
    else:
        batch[3210, rank] = count
    if not contiguous:
        batch = np.repeat(batch, 2, axis=0)[::2]
        assert not batch.flags.c_contiguous
    with pytest.raises(ValueError, match=message):
        exact.validate_composition(batch, copy=False)


def test_one_expectation_is_the_same_bits_as_on_the_path_of_several():
    """A single sum (a Kelly bettor's EV) takes the kernel's one-output path, which forms each
    multiset's product where it adds it: the same operations in the same order as the path of several
    outputs, so the same bits (the same weights given twice take the other path), on compositions
    from full shoes to a shoe's last cards."""
    rng = np.random.default_rng(3)
    full = R.full_shoe(8)
    taken = [rng.multinomial(int(n), full / full.sum()) for n in rng.integers(0, 390, 300)]
    comps = np.maximum(full - np.array(taken), 0)
    comps = comps[comps.sum(axis=1) >= exact.MIN_CARDS]
    weights = exact.multiset_weights().astype(np.float64) @ Rules().paytable()[:, [R.BETS.index("banker")]]
    alone = exact.multiset_expectations(comps, weights)[:, 0]
    twice = exact.multiset_expectations(comps, np.repeat(weights, 2, axis=1))
    np.testing.assert_array_equal(alone, twice[:, 0])
    np.testing.assert_array_equal(alone, twice[:, 1])
    # blocks narrower than exact.STACK_WIDTH keep their scratch arrays on the heap, wider ones in the
    # stack frame: a composition walked in a batch of 1, 2, 3 or 9 is the same bits either way
    for n in (1, 2, 3, 9):
        np.testing.assert_array_equal(exact.multiset_expectations(comps[:n], weights)[:, 0], alone[:n])
        np.testing.assert_array_equal(
            exact.multiset_expectations(comps[:n], np.repeat(weights, 2, axis=1)), twice[:n]
        )


def _shoe_states() -> np.ndarray:
    """Compositions from a full 8-deck shoe to a depleted one: mid- and late-shoe deals, a shoe down to
    its last 14 cards, ranks run out, six cards of one value and the fewest cards allowed; and the
    largest shoes the one-composition path prices."""
    from pb_gym import engine

    state = engine.init(Rules(decks=8), 4, seed=5)
    dealt = []
    for _ in range(70):
        engine.deal(Rules(decks=8), state)
        dealt.append(state.unseen.astype(np.int64))
    depleted = [
        [1, 0, 2, 0, 1, 3, 0, 1, 2, 0, 2, 1, 1],  # 14 cards, four ranks gone
        [0, 0, 0, 0, 0, 0, 0, 3, 1, 0, 2, 0, 1],  # 7 cards
        [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],  # 6 cards, no 7-9 and no ten-valued card
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0],  # six tens
    ]
    huge = [[exact.ONE_COMPOSITION_MOST] * 13, [exact.ONE_COMPOSITION_MOST + 1] * 13]  # (beyond: batched)
    return np.concatenate([R.full_shoe(8)[None], *dealt[::7], np.array(depleted + huge, dtype=np.int64)])


@pytest.mark.parametrize("rules", [Rules(), Rules(banker_variant="ez", tie_pays=9, pair_pays=12)])
def test_one_composition_is_priced_to_the_bit_as_a_row_of_a_batch(rules):
    # the one-composition path (a single env's step) is its own compiled call: its EVs are those of the
    # batched walk, bit for bit, from a full shoe to a depleted one
    states = _shoe_states()
    assert len(states) > 16  # (the batch walks in blocks of 16 lanes)
    batch = exact.expected_values(states, rules)
    for composition, row in zip(states, batch, strict=True):
        alone = exact.expected_values(composition, rules)
        assert alone.tobytes() == row.tobytes()
        assert exact.expected_values(composition[None], rules).tobytes() == row.tobytes()
    classes = exact.hand_class_probabilities(states)
    for composition, row in zip(states, classes, strict=True):
        assert exact.hand_class_probabilities(composition).tobytes() == row.tobytes()
