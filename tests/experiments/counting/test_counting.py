"""The counting experiment: effects of removal, exchangeability, counts, statistics, an end-to-end run."""

import functools
import math

import numpy as np
import pytest

from pb_gym import engine, exact
from pb_gym import rules as R
from pb_gym.experiments import counting
from pb_gym.experiments.common import scale
from pb_gym.experiments.common.yaml_config import ConfigError, validate
from pb_gym.experiments.counting import counts

from published_figures import edge8  # the published house edges (sources named in tests/data)
from repo_paths import ROOT  # noqa: E402

SMOKE = ROOT / "configs" / "experiments" / "counting-smoke.yaml"
FULL = ROOT / "configs" / "experiments" / "counting.yaml"


def _compositions():
    """Full shoes of 1 and 8 decks and depleted, unbalanced shoes from real deals."""
    comps = [R.full_shoe(1), R.full_shoe(8)]
    for decks, hands in ((8, 60), (1, 6), (2, 15)):
        rules = R.Rules(decks=decks, cut_card=6 if decks == 1 else 14)
        state = engine.init(rules, 3, seed=decks)
        for _ in range(hands):
            engine.deal(rules, state)
        comps += [row.astype(np.int64) for row in state.unseen]
    comps.append(np.array([0, 1, 7, 0, 2, 9, 0, 3, 1, 5, 0, 2, 1]))  # absent ranks
    return comps


@pytest.mark.parametrize("index", range(12))
def test_exchangeability_every_bet(index):
    """The count-weighted average of the EVs after removing one card equals the EV before, for every
    studied bet (the variants too), to 1e-12."""
    comp = _compositions()[index]
    bets = counting.studied_rules(R.Rules())
    removal = counts.effects_of_removal(comp, functools.partial(counting.studied_evs, bets=bets))
    present = comp > 0
    average = comp[present] @ removal["ev_removed"][present] / comp.sum()
    assert average.shape == (len(counting.STUDIED),)
    np.testing.assert_allclose(average, removal["ev"], rtol=0, atol=1e-12)
    # hence the EoR-weighted sum vanishes: a count with tags proportional to EoR is balanced
    np.testing.assert_allclose(comp[present] @ removal["eor"][present], 0.0, atol=1e-9)


def test_studied_evs_match_the_exact_calculator_for_every_variant():
    comps = np.array(_compositions())
    bets = counting.studied_rules(R.Rules(commission=0.04, dragon7_pays=30))
    ev = counting.studied_evs(comps, bets)
    for k, (rules, column) in enumerate(bets.values()):
        np.testing.assert_allclose(
            ev[:, k], exact.expected_values(comps, rules)[:, column], rtol=0, atol=1e-13
        )
    full = counting.studied_evs(R.full_shoe(8)[None], counting.studied_rules(R.Rules()))[0]
    published = {
        "banker": edge8("banker"),
        "player": edge8("player"),
        "tie_8to1": edge8("tie"),
        "tie_9to1": edge8("tie", tie_pays=9),
        "player_pair": edge8("player_pair"),
        "dragon7": edge8("dragon7"),
        "panda8": edge8("panda8"),
        "banker_no_commission": edge8("banker", banker_variant="no-commission"),
        "banker_ez": edge8("banker", banker_variant="ez"),
    }
    for name, edge in published.items():
        assert round(100 * full[counting.STUDIED.index(name)], 4) == -edge, name


def test_effects_of_removal_and_tags():
    bets = counting.studied_rules(R.Rules())
    full = R.full_shoe(8)
    eor = counts.effects_of_removal(full, functools.partial(counting.studied_evs, bets=bets))["eor"]
    k = {name: counting.STUDIED.index(name) for name in counting.STUDIED}
    # pairs: every rank is equally common, so every EoR is equal, hence zero: no linear count
    assert np.max(np.abs(eor[:, k["player_pair"]])) < 1e-15
    assert not np.any(counts.eor_tags(eor[:, k["banker_pair"]], 10, True))
    # Dragon 7: removing 8s and 9s (fewer naturals) helps, removing 4-7 hurts
    d7 = counts.eor_tags(eor[:, k["dragon7"]], 10, True)
    assert d7[R.RANKS.index("8")] == 10 and d7[R.RANKS.index("9")] > 0
    assert all(d7[R.RANKS.index(r)] < 0 for r in "4567")
    # whole-number tags are the nearest balanced ones: plain rounding would unbalance the count
    assert full @ d7 == 0 and full @ np.round(eor[:, k["dragon7"]] / eor[:, k["dragon7"]].max() * 10) != 0
    # Panda 8: removing 9s helps most
    p8 = counts.eor_tags(eor[:, k["panda8"]], 10, False)
    assert p8[R.RANKS.index("9")] == 10 and abs(full @ p8) < 1e-6
    # the 10-value ranks are interchangeable
    assert np.all(eor[9:, :] == eor[9, :])


def _per_hand_ratio(numerator, denominator, shoe, n_shoes):
    """The ratio estimator computed from per-hand rows (the pre-chunking code), for comparison."""
    x = np.bincount(shoe, weights=numerator, minlength=n_shoes)
    n = np.bincount(shoe, weights=denominator, minlength=n_shoes)
    estimate = x.sum() / n.sum()
    se = np.sqrt(n_shoes / (n_shoes - 1) * np.sum((x - estimate * n) ** 2)) / n.sum()
    return estimate, se


def test_shoe_sums_give_the_per_hand_statistics():
    """Every figure computed from a chunk's sums equals the one computed from its per-hand rows."""
    rules = R.Rules()
    bets = counting.studied_rules(rules)
    eor = counts.effects_of_removal(R.full_shoe(8), functools.partial(counting.studied_evs, bets=bets))["eor"]
    count_index = [counting.STUDIED.index("dragon7"), counting.STUDIED.index("panda8")]
    tags = np.array([counts.eor_tags(eor[:, k], 10, False) for k in count_index])
    thresholds = [15.0, math.inf]
    dealt = counting.deal_shoes(rules, bets, 30, seed=9, tags=tags)
    sums = counting.shoe_sums(dealt, 30, count_index, thresholds, rules.n_cards // 52 + 1, 52)
    shoe, ev, payoff = dealt["shoe"], dealt["ev"], dealt["payoff"].astype(np.float64)
    one = np.ones(len(shoe))
    for k in range(len(counting.STUDIED)):
        positive = ev[:, k] > 0
        pairs = [
            (sums["positive"][:, k], positive),
            (sums["gain"][:, k], np.maximum(ev[:, k], 0)),
            (sums["realized"][:, k], np.where(positive, payoff[:, k], 0.0)),
            (sums["ev"][:, k], ev[:, k]),
        ]
        for per_shoe, per_hand in pairs:
            ci = counting.ratio_ci(per_shoe, sums["hands"])
            estimate, se = _per_hand_ratio(per_hand, one, shoe, 30)
            assert ci["estimate"] == pytest.approx(estimate, rel=1e-12, abs=1e-15)
            assert ci["se"] == pytest.approx(se, rel=1e-9, abs=1e-15)
        depth_bin = dealt["depth"] // 52
        np.testing.assert_allclose(
            sums["depth_ev"][:, k], np.bincount(depth_bin, weights=ev[:, k], minlength=9), rtol=1e-12
        )
    assert sums["hands"].sum() == len(shoe) == sums["depth_hands"].sum()
    tc = dealt["true_count"].astype(np.float64)
    bet = tc[:, 0] >= 15.0
    assert bet.any() and not np.any(sums["count_bet"][:, 1])  # an infinite threshold never bets
    assert sums["count_bet"][:, 0].sum() == bet.sum()
    assert sums["count_payoff"][:, 0].sum() == pytest.approx(payoff[bet, count_index[0]].sum())
    for j, k in enumerate(count_index):
        assert counting.correlation(sums["moments"][j]) == pytest.approx(
            np.corrcoef(tc[:, j], ev[:, k])[0, 1], rel=1e-9
        )


def test_merge_concatenates_shoes_and_adds_the_rest():
    rules = R.Rules()
    chunks = scale.plan(25, 10, 5)
    tags = np.zeros((1, 13))
    parts = [counting.deal_chunk(c, rules, tags, [0], [0.0], 26) for c in chunks]
    merged = counting.merge(parts)
    assert merged["hands"].shape == (25,) and merged["ev"].shape == (25, len(counting.STUDIED))
    np.testing.assert_array_equal(merged["ev"][10:20], parts[1]["ev"])
    assert merged["depth_hands"].sum() == merged["hands"].sum()
    np.testing.assert_array_equal(
        merged["moments"], parts[0]["moments"] + parts[1]["moments"] + parts[2]["moments"]
    )


def test_best_threshold_is_the_exact_optimum():
    rng = np.random.default_rng(0)
    tc = np.round(rng.normal(size=500), 1)
    ev = 0.05 * tc - 0.04 + rng.normal(scale=0.01, size=500)
    threshold, total = counts.best_threshold(tc, ev)
    brute = {t: ev[tc >= t].sum() for t in np.unique(tc)}
    best = max(brute, key=brute.get)
    assert threshold == best and total == pytest.approx(brute[best])
    assert counts.best_threshold(tc, -np.abs(ev)) == (np.inf, 0.0)


@pytest.mark.parametrize("hand_after_cut", [False, True])
def test_deal_shoes_counts_the_first_shoe_only(hand_after_cut):
    rules = R.Rules(hand_after_cut=hand_after_cut)
    bets = counting.studied_rules(rules)
    tags = np.zeros((1, 13))
    hands = counting.deal_shoes(rules, bets, 40, seed=5, tags=tags)
    cut = rules.n_cards - rules.cards_behind_cut
    per_shoe = np.bincount(hands["shoe"], minlength=40)
    assert per_shoe.min() >= 70 and per_shoe.max() <= 90
    for s in range(40):
        depth = hands["depth"][hands["shoe"] == s].astype(int)
        assert np.all(np.diff(depth) >= 4)  # the engine deals in order, 4 to 6 cards a hand
        late = np.sum(depth >= cut)
        assert late == (1 if hand_after_cut else 0)  # the hand after the cut card, if dealt
    # the dealt payoffs are settled by each variant's rules on the same hands
    k = counting.STUDIED.index
    assert set(np.unique(hands["payoff"][:, k("banker_no_commission")])) <= {-1.0, 0.0, 0.5, 1.0}
    tie = hands["payoff"][:, k("tie_8to1")] > 0
    assert np.all(hands["payoff"][tie, k("tie_9to1")] == 9)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"shoez": 10}, r"x\.yaml: shoez: unknown key; allowed keys here: rules, shoes, seed"),
        (
            {"seed": 7, "training_seed": 7},
            r"training_seed: must differ from seed \(7\): thresholds are chosen on a separate deal",
        ),
        ({"count_bets": ["dragon8"]}, r"count_bets\.0: Input should be 'banker'"),
        ({"shoes": 1}, r"shoes: Input should be greater than or equal to 2"),
        # the rules section is checked by Rules itself (one source for the rules:
        # pb_gym/experiments/common/yaml_config.py)
        (
            {"rules": {"decks": 9}},
            r"^x\.yaml: rules: Rules\.decks=9 is not allowed; allowed: an integer from 1 to 8$",
        ),
    ],
)
def test_config_errors_name_the_key(data, message):
    with pytest.raises(ConfigError, match=message):
        validate(data, counting.CountingConfig, "x.yaml")


def test_a_missing_config_is_refused_and_the_full_config_loads(tmp_path):
    with pytest.raises(ConfigError, match=r"no such config file"):
        counting.main(str(tmp_path / "missing.yaml"))
    assert counting.CountingConfig().shoes == 10_000  # the documented defaults
    full = validate(__import__("yaml").safe_load(FULL.read_text()), counting.CountingConfig)
    assert full.shoes == 10_000 and full.rules.decks == 8 and full.rules.cut_card == 14


def test_smoke_run_end_to_end(tmp_path, capsys):
    result = counting.main(str(SMOKE), str(tmp_path), as_json=True)
    assert capsys.readouterr().out == ""
    assert {"bets", "counts", "by_depth", "timings", "hands", "shoes", "training"} <= set(result)
    assert result["shoes"] == 200 and 75 < result["hands_per_shoe"] < 85
    assert result["chunk_shoes"] == 60 and result["chunks"] == 4
    assert result["exchangeability_max_error"] < 1e-12
    assert set(result["bets"]) == set(counting.STUDIED)
    for name, b in result["bets"].items():
        for key in (
            "share_positive",
            "gain_per_hand_predicted",
            "gain_per_hand_realized",
            "average_ev_per_hand_dealt",
            "cut_card_effect",
        ):
            lo, hi = b[key]["ci95"]
            assert lo <= b[key]["estimate"] <= hi, (name, key)
        assert 0 <= b["share_positive"]["estimate"] <= 1
        if b["share_positive"]["estimate"] > 0:
            assert b["mean_ev_when_positive"]["estimate"] > 0
        # gain per hand = share positive x mean EV when positive
        if b["mean_ev_when_positive"]["estimate"] is not None:
            assert b["gain_per_hand_predicted"]["estimate"] == pytest.approx(
                b["share_positive"]["estimate"] * b["mean_ev_when_positive"]["estimate"]
            )
        # realized (engine payoffs) vs predicted (exact EVs): within 4 standard errors
        diff = b["realized_minus_predicted"]
        assert abs(diff["estimate"]) < 4 * diff["se"] + 1e-12, name
    assert result["bets"]["player_pair"]["share_positive"] == result["bets"]["banker_pair"]["share_positive"]
    # Dragon 7 is the most often positive bet; the main bets almost never are
    share = {n: b["share_positive"]["estimate"] for n, b in result["bets"].items()}
    assert share["dragon7"] > 0.05 and share["banker"] < 0.01 and share["player"] < 0.01
    d7 = result["counts"]["dragon7"]
    assert d7["threshold"] is not None and d7["correlation_true_count_ev"] > 0.7
    assert 0 < d7["share_of_hands_bet"]["estimate"] < 0.3
    assert d7["profit_per_hand_predicted"]["estimate"] <= d7["perfect_info_profit_per_hand_predicted"]
    assert "no linear count" in result["counts"]["player_pair"]["note"]
    assert len(result["by_depth"]["bin_start_cards"]) == len(
        result["by_depth"]["bets"]["dragon7"]["share_positive"]
    )
    for name in ("counting.json", "counting.txt", "depth.png"):
        assert (tmp_path / name).stat().st_size > 0
    text = counting.report(result)
    assert "Cut-card effect" in text and "dragon7" in text
    # the advantage player's figures: every count that bets and every perfect-information bettor
    a = d7["advantage"]
    assert a["win_rate_per_bet"] == pytest.approx(
        d7["profit_per_hand_predicted"]["estimate"] / d7["share_of_hands_bet"]["estimate"], rel=1e-12
    )
    assert a["win_per_100_dealt"] == pytest.approx(
        100 * d7["profit_per_hand_predicted"]["estimate"], rel=1e-12
    )
    assert a["di"] == pytest.approx(
        1000 * a["win_per_100_dealt"] / 100 / (a["sd_per_100_dealt"] / 10), rel=1e-12
    )
    assert 5 < a["sd_per_bet"] < 8  # a 40:1 bet: SD about sqrt(41)
    barrier = a["double_barrier"]
    assert barrier["sessions"] == 1000 and barrier["bankroll"] == 500 and barrier["shoes_resampled"] == 200
    for key in ("p_ruin", "p_goal", "p_behind", "mean_win"):
        lo, hi = barrier[f"{key}_ci95"]
        assert lo <= barrier[key] <= hi, key
    assert all("advantage" in b for b in result["bets"].values())
    assert "The advantage player's figures" in text and "| count: how_dragon7 |" in text


def test_a_given_count_replays_a_fitted_one_exactly():
    """A count given by its tags (``counts:``) with the fitted count's tags and threshold bets on the
    same hands, so every figure of the two is the same; How's count (``counting-smoke.yaml``) is
    unbalanced, a running count started at -32."""
    config = validate(__import__("yaml").safe_load(SMOKE.read_text()), counting.CountingConfig)
    first = counting.run(config)
    tags = first["counts"]["dragon7"]["tags"]
    given = {
        "name": "dragon7_again",
        "bet": "dragon7",
        "tags": [tags[r] for r in R.RANKS[:10]],
        "trigger": first["counts"]["dragon7"]["threshold"],
    }
    again = counting.run(config.model_copy(update={"counts": (counting.CountConfig(**given),)}))
    fitted, replayed = again["counts"]["dragon7"], again["counts"]["dragon7_again"]
    for key in ("share_of_hands_bet", "profit_per_hand_predicted", "profit_per_hand_realized"):
        assert replayed[key] == fitted[key], key
    assert replayed["advantage"]["di"] == fitted["advantage"]["di"]
    how = first["counts"]["how_dragon7"]
    assert how["balance"] == 32 and how["start"] == -32 and how["count"] == "running"
    assert 0.03 < how["share_of_hands_bet"]["estimate"] < 0.2
    # the other figures are those of the run without the given count, to the bit
    assert again["bets"] == first["bets"] and fitted == first["counts"]["dragon7"]


def test_a_given_count_is_checked():
    base = {"name": "c", "bet": "dragon7", "tags": [1] * 10, "trigger": 0}
    with pytest.raises(
        ConfigError, match=r"counts\.0\.tags: 10 finite numbers \(A, 2, \.\.\., 9, ten-value\); got 9"
    ):
        validate({"counts": [{**base, "tags": [1] * 9}]}, counting.CountingConfig)
    with pytest.raises(ConfigError, match=r"counts\.0\.count: Input should be 'running' or 'true'"):
        validate({"counts": [{**base, "count": "both"}]}, counting.CountingConfig)
    with pytest.raises(ConfigError, match=r"each count's name at most once"):
        validate({"counts": [base, base]}, counting.CountingConfig)


@pytest.mark.slow
def test_full_config_deals_every_hand_with_its_exact_ev():
    """The full config: 10,000 8-deck shoes with the exact EV of every hand (how long it takes is a
    benchmark's figure, not a test's: it varies with the machine and its load)."""
    result = counting.main(str(FULL), None, as_json=True)
    assert result["hands"] > 780_000
    assert result["timings"]["main_deal_s"] > 0
    assert result["exchangeability_max_error"] < 1e-12
