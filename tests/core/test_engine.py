"""The vectorized engine: stacked-shoe scenarios and their settlement, parity with the plain reference
loop, shoe bookkeeping (burn, cut card, counts), seeding, statistics against the exact odds, errors."""

import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from pb_gym import engine, exact, parallel
from pb_gym import rules as R
from pb_gym.reference import deal_hand
from pb_gym.rules import Rules

ONE_UNIT_EACH = {bet: 1.0 for bet in R.BETS}

# name: stack (P, B, P, B, then third cards) | player cards | banker cards | outcome | net per unit of the
# banker under the standard, no-commission and EZ variants | net per unit of player, tie at 8:1, player pair,
# banker pair, dragon 7, panda 8
SCENARIOS = {
    "player natural 9": "4 K 5 2     | 4 5   | K 2   | player         | -1 -1 -1   | 1 -1 -1 -1 -1 -1",
    "banker natural stops a drawing player": (
        "K 9 5 K     | K 5   | 9 K   | banker         | 0.95 1 1   | -1 -1 -1 -1 -1 -1"
    ),
    "natural tie 8-8, banker pair": (
        "3 4 5 4     | 3 5   | 4 4   | tie            | 0 0 0      | 0 8 -1 11 -1 -1"
    ),
    "banker 3 stands on the player's 8": (
        "2 A 3 2 8   | 2 3 8 | A 2   | tie            | 0 0 0      | 0 8 -1 -1 -1 -1"
    ),
    "banker 3 draws on the player's 9": (
        "2 A 3 2 9 5 | 2 3 9 | A 2 5 | banker         | 0.95 1 1   | -1 -1 -1 -1 -1 -1"
    ),
    "banker 4 stands on the player's ace": (
        "A 3 3 A A   | A 3 A | 3 A   | player         | -1 -1 -1   | 1 -1 -1 -1 -1 -1"
    ),
    "banker 4 draws on the player's 2": (
        "A 3 3 A 2 5 | A 3 2 | 3 A 5 | banker         | 0.95 1 1   | -1 -1 -1 -1 -1 -1"
    ),
    "banker 5 draws on the player's 4": (
        "2 2 2 3 4 4 | 2 2 4 | 2 3 4 | banker         | 0.95 1 1   | -1 -1 11 -1 -1 -1"
    ),
    "banker 5 stands on the player's 3": (
        "2 2 A 3 3   | 2 A 3 | 2 3   | player         | -1 -1 -1   | 1 -1 -1 -1 -1 -1"
    ),
    "banker 6 draws on the player's 6; Panda 8": (
        "K 3 2 3 6 K | K 2 6 | 3 3 K | player_3card_8 | -1 -1 -1   | 1 -1 -1 11 -1 25"
    ),
    "banker 6 stands on the player's 5": (
        "K A 2 5 5   | K 2 5 | A 5   | player         | -1 -1 -1   | 1 -1 -1 -1 -1 -1"
    ),
    "banker 7 stands on the player's 7": (
        "A 3 2 4 7   | A 2 7 | 3 4   | banker         | 0.95 1 1   | -1 -1 -1 -1 -1 -1"
    ),
    "player stands on 6, banker draws on 5 to a three-card 7: Dragon 7": (
        "3 2 3 3 2   | 3 3   | 2 3 2 | banker_3card_7 | 0.95 1 0   | -1 -1 11 -1 40 -1"
    ),
    "banker wins with 6: no-commission pays half": (
        "A 2 3 4 K   | A 3 K | 2 4   | banker_6       | 0.95 0.5 1 | -1 -1 -1 -1 -1 -1"
    ),
    "player stands on 7, banker stands on 6": (
        "4 2 3 4     | 4 3   | 2 4   | player         | -1 -1 -1   | 1 -1 -1 -1 -1 -1"
    ),
    "both pairs, tie 9-9": "7 Q 7 Q 5 9 | 7 7 5 | Q Q 9 | tie            | 0 0 0      | 0 8 11 11 -1 -1",
}


def _cards(text):
    return [R.card_code(c) for c in text.split()]


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("variant_index, variant", list(enumerate(R.BANKER_VARIANTS)))
def test_stacked_scenarios_deal_and_settle_exactly(scenario, variant_index, variant):
    stack, player, banker, outcome, banker_nets, other_nets = (
        column.strip() for column in SCENARIOS[scenario].split("|")
    )
    rules = Rules(burn=False, banker_variant=variant)
    state = engine.init(rules, 2, seed=1, stack=stack.split())
    state, hand = engine.deal(rules, state)
    for t in range(2):
        assert [c for c in hand.player_cards[t] if c] == _cards(player)
        assert [c for c in hand.banker_cards[t] if c] == _cards(banker)
        assert R.OUTCOMES[hand.outcome[t]] == outcome
    expected = [float(banker_nets.split()[variant_index]), *map(float, other_nets.split())]
    np.testing.assert_allclose(engine.settle(rules, hand, ONE_UNIT_EACH), sum(expected))
    np.testing.assert_allclose(hand.payoffs(rules)[0], expected)
    # the tie at 9:1 and a stake on one spot only
    nine = Rules(burn=False, banker_variant=variant, tie_pays=9)
    tie_only = engine.settle(nine, hand, {"tie": 10.0})
    np.testing.assert_allclose(tie_only, 10 * (9 if outcome == "tie" else -1))


def test_stacked_result_fields():
    rules = Rules(burn=False)
    _, hand = engine.deal(rules, engine.init(rules, 1, stack="3 2 3 3 2".split()))
    assert (hand.player_total[0], hand.banker_total[0]) == (6, 7)
    assert (hand.player_ncards[0], hand.banker_ncards[0]) == (2, 3)
    assert R.WINNERS[hand.winner[0]] == "banker"
    assert not hand.natural[0] and hand.player_pair[0] and not hand.banker_pair[0]
    _, hand = engine.deal(rules, engine.init(rules, 1, stack="K 9 5 K".split()))
    assert hand.natural[0] and hand.player_ncards[0] == 2


def test_stack_with_burn_turns_its_first_card():
    rules = Rules(burn=True)
    # the 3 is turned and burns 3 more; the hand starts at the fifth card
    state = engine.init(rules, 1, stack="3 K K K 4 K 5 2".split())
    assert state.position[0] == 4
    assert state.unseen[0].sum() == 416 - 1 and state.counts[0].sum() == 416 - 4
    _, hand = engine.deal(rules, state)
    assert list(hand.player_cards[0][:2]) == [4, 5] and R.OUTCOMES[hand.outcome[0]] == "player"


def test_stack_rest_of_shoe_is_the_remaining_cards_and_per_table_stacks():
    rules = Rules(decks=1, burn=False)
    state = engine.init(rules, 2, seed=3, stack=[["A", "A", "A", "A"], ["K", "Q", "J", "10"]])
    for t, stack in enumerate(([1, 1, 1, 1], [13, 12, 11, 10])):
        assert list(state.shoe[t, :4]) == stack
        assert np.array_equal(np.bincount(state.shoe[t], minlength=14)[1:], np.full(13, 4))


@pytest.mark.parametrize(
    "stack, message",
    [
        (["A"] * 33, r"impossible stack \(table 0\): 33 cards of rank A but a 8-deck shoe holds only 32"),
        (["K", "X"], r"unknown card 'X'; allowed: one of A, 2, 3"),
        ([["A"], ["A"], ["A"]], r"one list per table \(2 tables\); got shape \(3, 1\)"),
        (["2"] * 417, r"stack has 417 cards but a 8-deck shoe holds 416"),
    ],
)
def test_bad_stacks_are_rejected(stack, message):
    with pytest.raises(ValueError, match=message):
        engine.init(Rules(), 2, stack=stack)


@pytest.mark.parametrize(
    "rules",
    [
        Rules(),
        Rules(decks=1, cut_card=0.75),
        Rules(decks=6, burn=False),
        Rules(decks=2, hand_after_cut=True, cut_card=20),
    ],
    ids=["8 decks", "1 deck 75%", "6 decks no burn", "hand after cut"],
)
def test_engine_deals_each_shoe_exactly_as_the_reference_loop(rules):
    """Replay each table's shoe through the plain Python loop: same hands, same reshuffle point."""
    n = 64
    state = engine.init(rules, n, seed=11)
    shoes, positions = state.shoe.copy(), state.position.copy()
    full = R.full_shoe(rules.decks)
    for t in range(n):  # burn bookkeeping: the turned card is seen, the burned ones are not
        first = shoes[t, 0] - 1
        assert positions[t] == ((1 + R.BURN_COUNTS[first]) if rules.burn else 0)
    expected_hands = []
    for t in range(n):
        hands, pos, after_cut = [], int(positions[t]), 0
        while pos < state.cut_position or (rules.hand_after_cut and after_cut == 0):
            after_cut += pos >= state.cut_position
            hand, pos = deal_hand(list(shoes[t]), pos)
            hands.append(hand)
        expected_hands.append(hands)
    for k in range(max(len(h) for h in expected_hands) + 1):
        _, hand = engine.deal(rules, state)
        for t in range(n):
            if k < len(expected_hands[t]):
                ref = expected_hands[t][k]
                assert not hand.shuffled[t]
                assert tuple(c for c in hand.player_cards[t] if c) == ref.player
                assert tuple(c for c in hand.banker_cards[t] if c) == ref.banker
                assert (hand.player_total[t], hand.banker_total[t]) == (ref.player_total, ref.banker_total)
                assert hand.outcome[t] == ref.outcome
                dealt = np.bincount(shoes[t, : state.position[t]], minlength=14)[1:]
                assert np.array_equal(state.counts[t], full - dealt)
                burned = np.bincount(shoes[t, 1 : positions[t]], minlength=14)[1:]
                assert np.array_equal(state.unseen[t], full - dealt + burned)
                assert state.hands_in_shoe[t] == k + 1
            elif k == len(expected_hands[t]):
                assert hand.shuffled[t] and state.hands_in_shoe[t] == 1
                assert state.shoes_started[t] == 2


def test_same_seed_same_hands_and_per_table_seeds_match_single_tables():
    rules = Rules()
    a, b, c = (
        engine.init(rules, 300, seed=5),
        engine.init(rules, 300, seed=5),
        engine.init(rules, 300, seed=6),
    )
    singles = [engine.init(rules, 1, seed=s) for s in (40, 41, 42)]
    batch = engine.init(rules, 3, seed=[40, 41, 42])
    differs = False
    for _ in range(200):
        _, ha = engine.deal(rules, a)
        _, hb = engine.deal(rules, b)
        _, hc = engine.deal(rules, c)
        assert np.array_equal(ha.player_cards, hb.player_cards)
        assert np.array_equal(ha.banker_cards, hb.banker_cards)
        differs |= not np.array_equal(ha.player_cards, hc.player_cards)
        _, hbatch = engine.deal(rules, batch)
        for t, single in enumerate(singles):
            _, hs = engine.deal(rules, single)
            assert np.array_equal(hs.banker_cards[0], hbatch.banker_cards[t])
    assert differs


def test_shuffle_selected_tables_and_copy():
    rules = Rules()
    state = engine.init(rules, 4, seed=0)
    for _ in range(10):
        engine.deal(rules, state)
    saved = state.copy()
    engine.shuffle(rules, state, np.array([False, True, False, True]))
    assert list(state.hands_in_shoe) == [10, 0, 10, 0] and list(state.shoes_started) == [1, 2, 1, 2]
    assert np.array_equal(state.shoe[0], saved.shoe[0]) and saved.hands_in_shoe[1] == 10
    engine.shuffle(rules, state, [2], seed=[99])
    assert np.array_equal(state.shoe[2], engine.init(rules, 1, seed=99).shoe[0])
    with pytest.raises(ValueError, match=r"table indices must be in 0..3"):
        engine.shuffle(rules, state, [4])


def _z_scores(observed_counts, probabilities, n):
    return (observed_counts - n * probabilities) / np.sqrt(n * probabilities * (1 - probabilities))


def test_frequencies_over_a_million_hands_match_exact_probabilities():
    """10^6 hands dealt through whole 8-deck shoes: every outcome class and the pair frequencies
    within 5 standard errors of the exact full-shoe probabilities (false alarm ~6e-7 per check;
    the cut-card effect is far below one standard error here)."""
    rules = Rules()
    tables, rounds = 4096, 245
    state = engine.init(rules, tables, seed=2024)
    out = engine.HandResult.empty(tables)
    outcomes = np.zeros(R.N_OUTCOMES)
    pairs = np.zeros(2)
    for _ in range(rounds):
        engine.deal(rules, state, out)
        outcomes += np.bincount(out.outcome, minlength=R.N_OUTCOMES)
        pairs += [out.player_pair.sum(), out.banker_pair.sum()]
    n = tables * rounds
    assert n >= 10**6
    z = _z_scores(outcomes, exact.outcome_probabilities(R.full_shoe(8)), n)
    assert np.all(np.abs(z) < 5), dict(zip(R.OUTCOMES, z, strict=True))
    z_pairs = _z_scores(pairs, exact.pair_probability(R.full_shoe(8)), n)
    assert np.all(np.abs(z_pairs) < 5), z_pairs


def _martingale_z(hands: int, seed: int, decks: int) -> np.ndarray:
    """Deal through whole shoes; compare each hand with the exact odds of the cards unseen before it."""
    rules = Rules(decks=decks)
    tables = 2048
    state = engine.init(rules, tables, seed=seed)
    out = engine.HandResult.empty(tables)
    diff = np.zeros(R.N_OUTCOMES)
    var = np.zeros(R.N_OUTCOMES)
    for _ in range(hands // tables):
        # the next hand's exact odds, from what the players have not seen (reshuffle: a full shoe)
        p_hand = engine.next_hand_composition(rules, state)
        p = exact.outcome_probabilities(p_hand)
        engine.deal(rules, state, out)
        diff += (np.eye(R.N_OUTCOMES)[out.outcome] - p).sum(axis=0)
        var += (p * (1 - p)).sum(axis=0)
    return diff / np.sqrt(var)


def test_every_hand_follows_the_exact_odds_of_its_unseen_cards():
    """Sum over hands of (indicator - exact probability given the unseen cards) is a martingale:
    within 5 standard errors for every outcome class, at every depth of 1-deck shoes."""
    z = _martingale_z(200_000, seed=8, decks=1)
    assert np.all(np.abs(z) < 5), z


@pytest.mark.slow
@pytest.mark.parametrize("decks", [1, 8])
def test_every_hand_follows_the_exact_odds_of_its_unseen_cards_slow(decks):
    z = _martingale_z(2_000_000, seed=9, decks=decks)
    assert np.all(np.abs(z) < 5), z


def test_settle_rejects_bad_stakes():
    rules = Rules(side_bets=("dragon7",))
    _, hand = engine.deal(rules, engine.init(rules, 3, seed=0))
    with pytest.raises(ValueError, match=r"negative stake on 'player'; stakes must be >= 0"):
        engine.settle(rules, hand, {"player": np.array([1.0, -2.0, 0.0])})
    with pytest.raises(ValueError, match=r"unknown bet 'bankr'; allowed: banker, player, tie"):
        engine.settle(rules, hand, {"bankr": 1.0})
    with pytest.raises(
        ValueError,
        match=r"stake on 'panda8', which this table does not offer; "
        r"offered: banker, player, tie, dragon7",
    ):
        engine.settle(rules, hand, {"panda8": 1.0})
    with pytest.raises(ValueError, match=r"stakes must have shape \(3, 7\)"):
        engine.settle(rules, hand, np.ones((3, 3)))
    with pytest.raises(ValueError, match="stakes must be finite"):
        engine.settle(rules, hand, {"tie": np.nan})
    with pytest.raises(ValueError, match=r"n_tables=0 is not allowed"):
        engine.init(rules, 0)
    with pytest.raises(ValueError, match=r"seed must be an int or 3 ints"):
        engine.init(rules, 3, seed=[1, 2])


def test_deal_with_an_active_mask_leaves_other_tables_untouched():
    rules = Rules()
    state = engine.init(rules, 4, seed=[1, 2, 3, 4])
    twin = engine.init(rules, 4, seed=[1, 2, 3, 4])
    mask = np.array([True, False, True, False])
    for _ in range(120):  # through a reshuffle
        before = state.copy()
        _, hand = engine.deal(rules, state, active=mask)
        _, full = engine.deal(rules, twin)
        for field in ("shoe", "position", "counts", "unseen", "rng", "shoes_started"):
            assert np.array_equal(getattr(state, field)[~mask], getattr(before, field)[~mask]), field
        assert not hand.player_cards[~mask].any() and not hand.shuffled[~mask].any()
        assert np.array_equal(hand.player_cards[mask], full.player_cards[mask])
    with pytest.raises(ValueError, match=r"active must be a boolean mask of shape \(4,\)"):
        engine.deal(rules, state, active=np.ones(3, dtype=bool))


@pytest.mark.parametrize("hand_after_cut", [False, True])
def test_next_hand_composition_is_a_full_shoe_exactly_when_the_next_deal_reshuffles(hand_after_cut):
    rules = Rules(decks=1, cut_card=14, hand_after_cut=hand_after_cut)
    state = engine.init(rules, 16, seed=4)
    for _ in range(30):
        composition = engine.next_hand_composition(rules, state)
        assert composition.dtype == np.int64 and not np.shares_memory(composition, state.unseen)
        dealing = ~engine.shoe_over(rules, state)
        assert np.array_equal(composition[dealing], state.unseen[dealing])
        _, hand = engine.deal(rules, state)
        full = np.all(composition == R.full_shoe(1), axis=1)
        assert np.array_equal(full, hand.shuffled)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_hands_do_not_depend_on_the_threads_or_the_batch_size(threads):
    """A table deals the same hands alone, in a small (one-thread) batch and in a large batch split
    into chunks over several threads; reshuffles included."""
    rules = Rules(decks=1)  # short shoes: several reshuffles within the 90 hands
    before = parallel.get_num_threads()
    parallel.set_num_threads(threads)
    try:
        small = engine.init(rules, 8, seed=[1] * 8)
        large = engine.init(rules, 3 * engine.DEAL_MIN_TABLES + 1, seed=1)
        alone = engine.init(rules, 1, seed=[1])
        reference = engine.init(rules, 3 * engine.DEAL_MIN_TABLES + 1, seed=1)
        for _ in range(90):
            _, a = engine.deal(rules, small)
            _, b = engine.deal(rules, alone)
            assert np.array_equal(a.player_cards[0], b.player_cards[0])
            _, c = engine.deal(rules, large)
            parallel.set_num_threads(1)
            _, d = engine.deal(rules, reference)
            parallel.set_num_threads(threads)
            assert np.array_equal(c.player_cards, d.player_cards)
            assert np.array_equal(c.banker_cards, d.banker_cards)
        assert np.array_equal(large.unseen, reference.unseen)
        assert large.shoes_started.min() > 1
    finally:
        parallel.set_num_threads(before)


def test_no_numba_threading_layer_is_ever_started():
    """pb-gym runs its kernels on a standard thread pool (pb_gym.parallel), never on numba's parallel
    runtime: GNU OpenMP would spin on a busy machine and abort a later fork()."""
    code = (
        "import numba, numpy as np\n"
        "from pb_gym import Rules, engine, exact, rules\n"
        "import gymnasium as gym, pb_gym\n"
        "s = engine.init(Rules(), 20000, seed=0)\n"
        "for _ in range(3): engine.deal(Rules(), s)\n"
        "exact.expected_values(s.unseen); exact.outcome_counts(rules.full_shoe(1))\n"
        "v = gym.make_vec('pb_gym/PuntoBanco-v0', num_envs=20000); v.reset(seed=0)\n"
        "v.step(v.action_space.sample())\n"
        "try:\n"
        "    print(numba.threading_layer())\n"
        "except ValueError as e:\n"
        "    print('none:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("none:"), out.stdout


def test_fork_after_dealing_is_safe():
    """A child forked after the engine ran on several threads deals the same hands as its parent
    (SubprocVecEnv and AsyncVectorEnv fork after the parent has stepped its envs)."""
    code = (
        "import os, numpy as np\n"
        "from pb_gym import Rules, engine, parallel\n"
        "parallel.set_num_threads(2)\n"
        "s = engine.init(Rules(), 20000, seed=0); engine.deal(Rules(), s)\n"
        "import threading\n"
        "assert any(t.name.startswith('pb-gym') for t in threading.enumerate())  # the pool ran\n"
        "pid = os.fork()\n"
        "_, h = engine.deal(Rules(), s)\n"
        "if pid == 0:\n"
        "    np.save(os.environ['OUT'], h.player_cards)\n"
        "    os._exit(0)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "assert status == 0, status\n"
        "assert np.array_equal(np.load(os.environ['OUT'] + '.npy'), h.player_cards)\n"
        "print('ok')\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "OUT": os.path.join(tmp, "child")}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
        )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize(
    "rules",
    [
        Rules(decks=1, cut_card=16, hand_after_cut=True),
        Rules(decks=8, cut_card=14),
        Rules(decks=2, cut_card=0.5),
    ],
)
def test_shoe_over_is_the_next_deal_reshuffling_and_no_shoe_deals_more_than_its_bound(rules):
    state = engine.init(rules, 64, seed=11)
    in_shoe = np.zeros(64, dtype=np.int64)
    longest = 0
    for _ in range(3 * rules.most_hands_per_shoe):
        over = engine.shoe_over(rules, state)
        _, hand = engine.deal(rules, state)
        assert np.array_equal(hand.shuffled, over)  # it says exactly which tables reshuffle now
        in_shoe = np.where(hand.shuffled, 1, in_shoe + 1)
        longest = max(longest, int(in_shoe.max()))
    assert longest <= rules.most_hands_per_shoe
    assert longest >= 0.7 * rules.most_hands_per_shoe  # a bound, and not a loose one


def test_the_hand_table_is_the_reference_loop_for_every_two_totals_and_next_two_values():
    """Every entry of the engine's packed hand table (two-card totals, values of the 5th and 6th card)
    against the plain reference loop dealing a shoe with those totals and values."""
    code_of_value = [10, 1, 2, 3, 4, 5, 6, 7, 8, 9]  # a card code of each value 0..9
    for pt in range(10):
        for bt in range(10):
            for v5 in range(10):
                for v6 in range(10):
                    shoe = [
                        code_of_value[pt],
                        code_of_value[bt],
                        10,
                        13,
                        code_of_value[v5],
                        code_of_value[v6],
                    ]
                    ref, used = deal_hand(shoe, 0)
                    e = int(engine.HAND_TABLE[((pt * 10 + bt) * 10 + v5) * 10 + v6])
                    pd, bd = (e >> 11) & 1, (e >> 12) & 1
                    assert (e & 15, (e >> 4) & 15) == (ref.player_total, ref.banker_total)
                    assert (len(ref.player), len(ref.banker), used) == (2 + pd, 2 + bd, 4 + pd + bd)
                    assert (e >> 8) & 7 == ref.outcome
                    assert (e >> 14) & 3 == R.OUTCOME_WINNER[ref.outcome]
                    assert (e >> 13) & 1 == (pt >= R.NATURAL_MIN or bt >= R.NATURAL_MIN)


@pytest.mark.parametrize("rules", [Rules(decks=1, hand_after_cut=True), Rules(decks=6, burn=False)])
def test_the_numpy_lockstep_dealer_deals_every_shoe_as_the_reference_loop(rules):
    """The benchmark's comparison (pb_gym.reference.LockstepDealer) deals by the same rules: each
    table's hand is the reference loop's from the shoe and position before it."""
    from pb_gym.reference import LockstepDealer

    dealer = LockstepDealer(rules, 40, seed=3)
    reshuffles = 0
    for _ in range(150):
        shoes, positions = dealer.shoe.copy(), dealer.position.copy()
        player, banker, player_total, banker_total, outcome = dealer.deal()
        for t in range(40):
            if dealer.shoe[t].tolist() != shoes[t].tolist():  # reshuffled: a new shoe, burned
                reshuffles += 1
                shoes[t], positions[t] = (
                    dealer.shoe[t],
                    1 + R.BURN_COUNTS[dealer.shoe[t, 0] - 1] if rules.burn else 0,
                )
            ref, _ = deal_hand(list(shoes[t]), int(positions[t]))
            assert tuple(c for c in player[t] if c) == ref.player
            assert tuple(c for c in banker[t] if c) == ref.banker
            assert (player_total[t], banker_total[t], outcome[t]) == (
                ref.player_total,
                ref.banker_total,
                ref.outcome,
            )
    assert reshuffles > 40  # every table went through several shoes


def test_array_replacements_are_counted_per_object_and_per_session():
    """Replacing an array moves that object's version and its session's, not another session's;
    the session's structs and the object's view then hold the new array."""
    from pb_gym.session import Limits, Session

    one, two = (
        Session(Rules(), Limits(bankroll=100.0, table_min=1.0, table_max=10.0), 4, seed=s) for s in (0, 1)
    )
    before_one, before_two = one.version, two.version
    _, _, shoe_view, _ = one.structs()
    fresh = np.zeros(4, dtype=np.int32)
    one.shoe.hands_in_shoe = fresh
    assert one.shoe.version == 1 and one.version == before_one + 1 and two.version == before_two
    assert one.structs()[2] is not shoe_view and one.structs()[2] is one.shoe.view
    one.seats.hands = np.zeros_like(one.seats.hands)
    assert one.version == before_one + 2 and two.version == before_two
    one.shoe = engine.init(Rules(), 4, seed=5)  # a shoe state handed in, and its arrays after it
    assert one.version == before_one + 3
    one.shoe.position = one.shoe.position.copy()
    assert one.version == before_one + 4 and two.version == before_two


def test_parallel_calls_from_several_python_threads_deal_the_same_hands():
    """Two Python threads dealing large batches at once (their chunks share the pool) deal exactly the
    hands of one thread alone."""
    import threading

    rules = Rules(decks=1)
    n = 2 * engine.DEAL_MIN_TABLES
    before = parallel.get_num_threads()
    parallel.set_num_threads(2)
    try:
        states = [engine.init(rules, n, seed=s) for s in (1, 2)]
        expected = [engine.init(rules, n, seed=s) for s in (1, 2)]
        cards = [[], []]

        def play(i: int) -> None:
            for _ in range(30):
                cards[i].append(engine.deal(rules, states[i])[1].player_cards.copy())

        workers = [threading.Thread(target=play, args=(i,)) for i in (0, 1)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        parallel.set_num_threads(1)
        for i in (0, 1):
            for k in range(30):
                assert np.array_equal(cards[i][k], engine.deal(rules, expected[i])[1].player_cards)
    finally:
        parallel.set_num_threads(before)


def _reference_shuffle(seed: int, n_cards: int) -> np.ndarray:
    """The shuffle of :func:`pb_gym.engine.shuffle_row` from a full shoe, in Python integers: draw
    ``k`` (splitmix64 of the counter ``seed + (k + 1) * gamma``, its top 53 bits as a fraction
    ``u``) swaps position ``n - 1 - k`` with ``floor(u * (n - k))``."""
    mask, gamma = (1 << 64) - 1, 0x9E3779B97F4A7C15
    cards = np.repeat(np.arange(1, R.N_RANKS + 1), n_cards // R.N_RANKS).astype(np.uint8)
    for k in range(n_cards - 1):
        z = (seed + (k + 1) * gamma) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        j = int(float(z >> 11) * 2.0**-53 * (n_cards - k))
        i = n_cards - 1 - k
        cards[i], cards[j] = cards[j], cards[i]
    return cards


def test_every_shuffle_is_the_reference_fisher_yates_for_any_shoe_length():
    """A new engine's shuffle and the deal's reshuffle (both with their scratch space on the kernel's
    stack) are the reference Fisher-Yates over each table's stream; so is the reshuffle of a longer
    shoe than any the rules deal (10 decks, a state built by hand), whose scratch space is allocated
    instead: too long for the stack's, it would write past it."""
    rules = Rules(decks=8, burn=False)
    seeds = engine.table_seeds(3, 4)
    state = engine.init(rules, 4, seed=3)
    for t in range(4):
        assert np.array_equal(state.shoe[t], _reference_shuffle(int(seeds[t]), rules.n_cards))
    per_rank = 40  # 10 decks
    n, n_cards = 3, per_rank * R.N_RANKS
    full = np.full((n, R.N_RANKS), per_rank, dtype=np.int16)
    long_state = engine.ShoeState(
        shoe=np.ones((n, n_cards), dtype=np.uint8),
        suits=np.zeros((n, 0), dtype=np.uint8),
        position=np.full(n, n_cards - 14, dtype=np.int32),  # the cut card is out: reshuffle first
        counts=np.zeros((n, R.N_RANKS), dtype=np.int16) + np.array([14] + [0] * 12, dtype=np.int16),
        unseen=full.copy(),
        hands_in_shoe=np.zeros(n, dtype=np.int32),
        shoes_started=np.ones(n, dtype=np.int64),
        cut_hands=np.zeros(n, dtype=np.int8),
        rng=np.array([7, 2**63 + 5, 12345], dtype=np.uint64),
        cut_position=n_cards - 14,
    )
    seeds = long_state.rng.copy()
    hand = engine.HandResult.empty(n)
    found = engine.deal_checked_rows(
        0, n, np.ones(n, dtype=bool), long_state.view, hand.view, False, False, per_rank
    )
    assert found == (-1, 0) and hand.shuffled.all()
    for t in range(n):
        shoe = _reference_shuffle(int(seeds[t]), n_cards)
        assert np.array_equal(long_state.shoe[t], shoe)
        assert tuple(c for c in hand.player_cards[t] if c)[:2] == (shoe[0], shoe[2])
        assert long_state.rng[t] == (int(seeds[t]) + (n_cards - 1) * 0x9E3779B97F4A7C15) % 2**64
