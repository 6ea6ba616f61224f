"""The suited side bets: the Wizard of Odds' perfect-pair counts to the integer, and a brute force."""

import itertools
import json

import gymnasium as gym
import numpy as np
import pytest

import pb_gym  # noqa: F401  (registers the env)
from pb_gym import catalog, engine, suited
from pb_gym import rules as R
from pb_gym.rules import Rules

from repo_paths import DATA  # noqa: E402

# Wizard of Odds, "Perfect Pairs" (tests/data/known_cards_figures.json names the source)
FIGURES = json.loads((DATA / "known_cards_figures.json").read_text())


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


# --------------------------------------------------------------------------------------------------
# The engine deals suits; the catalog settles and prices the suited bets
# --------------------------------------------------------------------------------------------------
RANK_FIELDS = [name for name, _, _ in engine.RESULT_ARRAYS if name not in ("player_suits", "banker_suits")]


@pytest.mark.parametrize("stack", [None, ["A", "A", "K", "7"]])
def test_a_suited_shoe_deals_the_same_ranks_bit_for_bit(stack):
    rules = Rules()
    plain = engine.init(rules, 16, seed=11, stack=stack)
    cards = engine.init(rules, 16, seed=11, stack=stack, suited=True)
    assert plain.suits.shape == (16, 0) and cards.suits.shape == (16, rules.n_cards)
    for _ in range(400):  # several shoes: the reshuffles too
        _, a = engine.deal(rules, plain)
        _, b = engine.deal(rules, cards)
        for name in RANK_FIELDS:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        np.testing.assert_array_equal(plain.shoe, cards.shoe)
        np.testing.assert_array_equal(plain.rng, cards.rng)
        by_suit = engine.unseen_by_suit(rules, cards)
        np.testing.assert_array_equal(by_suit.sum(axis=2), cards.unseen)
    assert not a.player_suits.any()  # a shoe without suits deals none
    # every card of the shoe once: decks of each rank and suit
    table = np.zeros((13, 4), dtype=np.int64)
    np.add.at(table, (cards.shoe[0].astype(int) - 1, cards.suits[0]), 1)
    assert (table == rules.decks).all()


def test_unseen_by_suit_needs_a_shoe_that_tracks_suits():
    rules = Rules()
    with pytest.raises(ValueError, match=r"suited=True"):
        engine.unseen_by_suit(rules, engine.init(rules, 2, seed=0))
    with pytest.raises(ValueError, match="suited=.yes. is not allowed; allowed: True, False"):
        engine.init(rules, 2, seed=0, suited="yes")


def test_suited_catalog_bets_reproduce_the_published_counts_and_edges():
    published = FIGURES["perfect_pair_v2"]
    assert catalog.combination_counts("perfect_pair", suited.suited_shoe(8)) == {
        "one perfect pair": published["one"],
        "two perfect pairs": published["two"],
        "loss": published["none"],
        "total": published["total"],
    }
    v1 = FIGURES["perfect_pair_v1"]["8_decks_25"]
    counts = catalog.combination_counts("perfect_pair_v1", suited.suited_shoe(8))
    assert counts["a perfect pair"] == v1["win"] and counts["total"] == v1["total"]
    ev = catalog.expected_values(suited.suited_shoe(8), ["perfect_pair", "perfect_pair_v1", "banker"])
    assert round(-100 * ev[0], 4) == published["house_edge_pct"]
    assert round(-100 * ev[1], 4) == v1["house_edge_pct"]
    assert ev[2] == catalog.expected_values(R.full_shoe(8), ["banker"])[0]  # rank bets: the same bits
    with pytest.raises(
        ValueError, match=r"perfect_pair: a bet on suits is priced from a composition by rank"
    ):
        catalog.expected_values(R.full_shoe(8), ["perfect_pair"])
    with pytest.raises(ValueError, match="reads only the suit fields"):
        catalog.bet_from_dict(
            {"name": "x", "rows": [{"when": {"perfect_pairs": 1, "winner": "tie"}, "pays": 9}]}
        )


def test_engine_settles_perfect_pairs_at_the_exact_ev():
    """Realized net of each hand minus its exact EV before the hand (from the unseen cards by rank and
    suit) has mean 0: the simulated mean stays within 3.29 standard errors (99.9%)."""
    rules = Rules()
    pay = np.stack([catalog.get_bet(b).column() for b in ("perfect_pair", "perfect_pair_v1")], axis=1)
    state = engine.init(rules, 512, seed=2024, suited=True)
    diffs = []
    for _ in range(300):
        ev = catalog.expected_values(
            engine.next_hand_suited_composition(rules, state), ["perfect_pair", "perfect_pair_v1"]
        )
        _, hand = engine.deal(rules, state)
        perfect = hand.perfect_pairs()
        net = pay[perfect[:, 0].astype(int) + 2 * perfect[:, 1].astype(int)]
        diffs.append(net - ev)
    diff = np.concatenate(diffs)
    bound = 3.29 * diff.std(axis=0) / np.sqrt(diff.shape[0])
    assert np.all(np.abs(diff.mean(axis=0)) < bound), (diff.mean(axis=0), bound)


def test_the_env_offers_and_settles_a_suited_bet():
    env = gym.make("pb_gym/PuntoBanco-v0", side_bets=["perfect_pair"], info_ev=True, max_episode_steps=10_000)
    cfg = env.unwrapped.config
    assert cfg.bets.suited and env.unwrapped.tables.session.payoffs.shape[0] == R.N_SUITED_CLASSES
    pay = catalog.get_bet("perfect_pair").column()
    choice = cfg.bet_choices.index("perfect_pair")
    env.reset(seed=3)
    rewards = []
    for _ in range(3000):
        _, reward, terminated, truncated, info = env.step(1 + (choice - 1) * len(cfg.stake_levels))
        perfect = [
            bool(info["player_pair"]) and info["player_suits"][0] == info["player_suits"][1],
            bool(info["banker_pair"]) and info["banker_suits"][0] == info["banker_suits"][1],
        ]
        assert reward == pay[int(perfect[0]) + 2 * int(perfect[1])]
        assert -1.0 <= info["ev"][R.N_BETS] < 1.0  # (a suit-level exact EV: the engine test checks it)
        rewards.append(reward)
        if terminated or truncated:
            env.reset()
    assert 25.0 in rewards  # a perfect pair was dealt and paid
    with pytest.raises(ValueError, match="reward"):
        gym.make("pb_gym/PuntoBanco-v0", side_bets=["perfect_pair"], reward="log_growth")
