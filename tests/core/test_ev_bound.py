"""The proven EV bound (pb_gym/ev_bound.py): its polynomial is the exact EV, and it is never below the
exact EV on random, extreme and adversarially chosen compositions, for every bet and banker variant."""

import numpy as np
import pytest

from pb_gym import engine, ev_bound, exact
from pb_gym import rules as R
from pb_gym.rules import Rules

OUTCOME_BETS = ("banker", "player", "tie", "dragon7", "panda8")  # the bets priced by outcome class
VARIANTS = [Rules(), Rules(banker_variant="no-commission"), Rules(banker_variant="ez"), Rules(tie_pays=9)]


def random_compositions(rng: np.random.Generator, n: int) -> np.ndarray:
    """Compositions from 6 to 416 cards, each rank count drawn from a random profile (some nearly
    full shoes, some with whole ranks gone, some lopsided)."""
    out = np.zeros((n, R.N_RANKS), dtype=np.int64)
    for i in range(n):
        cards = int(rng.integers(6, 417))
        profile = rng.dirichlet(np.full(R.N_RANKS, rng.choice([0.3, 3.0, 100.0])))
        counts = np.minimum(rng.multinomial(cards, profile), 32)
        while counts.sum() < 6:
            counts[rng.integers(R.N_RANKS)] += 1
        out[i] = counts
    return out


def polynomial_probabilities(composition: np.ndarray) -> np.ndarray:
    """kappa(N) * G_o(delta, 1/N) from the Taylor coefficients, evaluated term by term."""
    exponents, coefficients = ev_bound.taylor_coefficients()
    counts = exact.value_counts(composition).astype(np.float64)
    cards = counts.sum(axis=1)
    variables = np.concatenate(
        [(counts / cards[:, None] - ev_bound.FULL_SHOE_PROPORTIONS)[:, 1:], 1.0 / cards[:, None]], axis=1
    )
    monomials = np.prod(variables[:, None, :] ** exponents[None], axis=2)
    kappa = cards**6 / np.array([float(exact.deals_of_six(c)) for c in cards])
    return kappa[:, None] * (monomials @ coefficients)


def test_the_polynomial_is_the_exact_outcome_distribution():
    rng = np.random.default_rng(1)
    comps = np.concatenate([random_compositions(rng, 60), R.full_shoe(8)[None], R.full_shoe(1)[None]])
    np.testing.assert_allclose(
        polynomial_probabilities(comps), exact.outcome_probabilities(comps), rtol=0, atol=1e-12
    )


@pytest.mark.parametrize("rules", VARIANTS, ids=["standard", "no-commission", "ez", "tie 9:1"])
def test_the_bound_is_exact_for_a_full_shoe(rules):
    table = rules.paytable()
    for decks in (1, 6, 8):
        shoe = R.full_shoe(decks)
        ev = exact.expected_values(shoe, rules)
        for bet in OUTCOME_BETS:
            column = R.BETS.index(bet)
            bound = ev_bound.bet_bound(table[:, column]).upper(shoe)
            assert bound == pytest.approx(ev[column], abs=1e-13)  # delta = 0: no remainder at all


@pytest.mark.parametrize("rules", VARIANTS, ids=["standard", "no-commission", "ez", "tie 9:1"])
def test_the_bound_holds_on_random_and_extreme_compositions(rules):
    rng = np.random.default_rng(2026)
    extreme = [np.eye(R.N_RANKS, dtype=np.int64)[r] * 6 for r in range(R.N_RANKS)]  # one rank only
    extreme += [np.where(np.arange(R.N_RANKS) == r, 0, 32) for r in range(R.N_RANKS)]  # a rank gone
    extreme += [
        np.array([32, 0, 0, 0, 0, 0, 0, 0, 0, 32, 32, 32, 32]),  # aces and tens
        np.array([0, 0, 0, 3, 0, 0, 0, 0, 0, 1, 1, 1, 0]),  # six cards: 4s and tens
        np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
    ]
    comps = np.concatenate([random_compositions(rng, 1500), np.array(extreme)])
    ev = exact.expected_values(comps, rules)
    table = rules.paytable()
    for bet in OUTCOME_BETS:
        column = R.BETS.index(bet)
        bound = ev_bound.bet_bound(table[:, column])
        for refine in (False, True):  # both stages are upper bounds on their own
            upper = bound.upper(comps, refine=refine)
            assert np.all(upper >= ev[:, column] - 1e-12), (bet, refine)


def test_the_bound_holds_along_adversarial_removals():
    """Remove, one card at a time, the rank that raises the bet's exact EV most (greedy adversary),
    from a full shoe down to 10 cards: the bound stays above the EV at every step."""
    rules = Rules()
    table = rules.paytable()
    for bet in ("banker", "player", "tie"):
        column = R.BETS.index(bet)
        bound = ev_bound.bet_bound(table[:, column])
        for decks in (1, 2):
            comp = R.full_shoe(decks)
            path = [comp]
            while comp.sum() > 10:
                candidates = comp[None] - np.eye(R.N_RANKS, dtype=np.int64)[comp > 0]
                best = candidates[np.argmax(exact.expected_values(candidates, rules)[:, column])]
                comp = best
                path.append(comp)
            path = np.array(path)
            ev = exact.expected_values(path, rules)[:, column]
            assert ev.max() > 0  # the adversary does make the bet positive
            assert np.all(bound.upper(path) >= ev - 1e-12)


def test_the_bound_proves_most_dealt_hands_negative():
    """On the compositions a real 8-deck shoe passes through, the bound decides most hands for the
    banker bet, and it never calls a positive hand negative."""
    rules = Rules()
    state = engine.init(rules, 400, seed=7)
    out = engine.HandResult.empty(400)
    comps = []
    for _ in range(90):  # a shoe of 8 decks is about 80 hands: every depth of the shoe
        comps.append(engine.next_hand_composition(rules, state))
        engine.deal(rules, state, out)
    comps = np.concatenate(comps)
    banker = rules.paytable()[:, [R.BETS.index("banker")]]
    proven = ev_bound.proven_negative(comps, banker)
    ev = exact.expected_values(comps, rules)[:, R.BETS.index("banker")]
    assert not np.any(proven & (ev >= 0))
    # the 2-norm group bounds decide about 97% (the 1-norm bounds alone: about 93%) and every hand
    # with more than 100 cards left (alone: more than 200)
    assert proven.mean() > 0.96
    cards = comps.sum(axis=1)
    assert proven[cards > 100].all()
    first_stage = ev_bound.bet_bound(banker[:, 0]).upper(comps, refine=False) < -ev_bound.MARGIN
    assert first_stage.mean() > 0.85 and not np.any(first_stage & ~proven)


def test_bad_payoffs_are_refused():
    with pytest.raises(
        ValueError,
        match=r"payoffs must have one entry per outcome class \(6\); got "
        r"shape \(7,\)",
    ):
        ev_bound.EVBound(np.zeros(7))


def test_a_shoe_beyond_the_tables_is_bounded_as_one_within_them():
    """The sums over the powers of eps are tabled for up to 8 decks; a larger composition has them
    computed for its own row, with the same bits (here: tables cut to 60 cards, against the full
    ones), and its bound is still above the exact EV (up to 20 decks) and exact for a full shoe."""
    rules = Rules()
    bound = ev_bound.bet_bound(rules.paytable()[:, R.BETS.index("banker")])
    rng = np.random.default_rng(5)
    comps = random_compositions(rng, 300)
    big = np.array([rng.multinomial(cards, np.full(R.N_RANKS, 1 / 13)) for cards in range(420, 1041, 20)])
    full = bound.upper(comps)
    tables = bound.tables
    try:
        bound.tables = tuple(table[:61].copy() for table in tables)
        cut = bound.upper(comps)
    finally:
        bound.tables = tables
    assert (comps.sum(axis=1) > 60).mean() > 0.8  # most rows took the untabled path
    np.testing.assert_array_equal(cut, full)
    ev = exact.expected_values(big, rules)[:, R.BETS.index("banker")]
    assert np.all(bound.upper(big) >= ev - 1e-12)
    sixteen_decks = R.full_shoe(8) * 2
    exact_ev = exact.expected_values(sixteen_decks, rules)[R.BETS.index("banker")]
    assert bound.upper(sixteen_decks) == pytest.approx(exact_ev, abs=1e-13)  # delta = 0: exact


def test_the_pair_forms_are_the_sums_over_the_monomials():
    """The second and third stages evaluate the cubic and quartic groups as forms over the pairs
    delta_i delta_j (ev_bound._pair_layout): each monomial has exactly one slot, and the forms equal
    the sums over the monomials, term by term."""
    import itertools

    bound = ev_bound.bet_bound(Rules().paytable()[:, R.BETS.index("banker")])
    for slots in (ev_bound.TRIPLE_SLOT, ev_bound.QUARTIC_SLOT):
        assert len(np.unique(slots)) == len(slots)
    delta = np.random.default_rng(11).normal(scale=0.05, size=ev_bound.N_DELTA)
    pairs = np.array(
        [delta[i] * delta[j] for i, j in itertools.combinations_with_replacement(range(ev_bound.N_DELTA), 2)]
    )
    triples = list(itertools.combinations_with_replacement(range(ev_bound.N_DELTA), 3))
    cubic = sum(
        c * delta[i] * delta[j] * delta[k] for c, (i, j, k) in zip(bound.triple_coef[0], triples, strict=True)
    )
    assert pairs @ (bound.cubic_by_pair.T @ delta) == pytest.approx(cubic, rel=1e-12, abs=1e-18)
    quartics = itertools.combinations_with_replacement(range(ev_bound.N_DELTA), 4)
    exponents, coefficients = ev_bound.taylor_coefficients()
    coef = coefficients @ Rules().paytable()[:, R.BETS.index("banker")]
    degree4 = [(e, c) for e, c in zip(exponents, coef, strict=True) if e[:9].sum() == 4 and e[9] == 0]
    quartic = sum(c * np.prod(delta ** e[:9]) for e, c in degree4)
    assert len(degree4) == len(list(quartics))
    for p, start in enumerate(ev_bound.PAIR_START):  # each row is zero before its start
        assert not np.any(bound.quartic_by_pairs[p, :start])
    assert pairs @ bound.quartic_by_pairs @ pairs == pytest.approx(quartic, rel=1e-12, abs=1e-18)
