"""The counting atlas: exact figures against the exact calculator, per-shoe sums against a
per-hand recomputation from the engine's own settlement, statistical bounds, the published comparison,
and an end-to-end run of the quick config."""

import csv
import io
import json
import math
from fractions import Fraction

import numpy as np
import pytest
import yaml

from pb_gym import catalog, engine, exact
from pb_gym import rules as R
from pb_gym.experiments import atlas
from pb_gym.experiments.common import scale
from pb_gym.experiments.common.stats import z_value
from pb_gym.experiments.common.yaml_config import ConfigError, validate
from pb_gym.experiments.counting import counts

import chunk_tasks
from published_figures import edge8  # the published house edges (sources named in tests/data)
from repo_paths import ROOT  # noqa: E402

SMOKE = ROOT / "configs" / "experiments" / "atlas-smoke.yaml"
FULL = ROOT / "configs" / "experiments" / "atlas.yaml"
FAMILY_CONFIDENCE = 0.999
"""The statistical bounds below hold together, over every bet of the catalog, with this confidence
(Bonferroni): a correct implementation fails them for about one seed in a thousand. The seeds are
fixed, so the tests are deterministic."""


@pytest.fixture(scope="module")
def book():
    return atlas.bet_book(R.Rules())


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("atlas") / "out"
    return atlas.main(str(SMOKE), str(out), as_json=True), out


def _compositions():
    """Full shoes and depleted, unbalanced shoes from real deals, one with absent ranks."""
    comps = [R.full_shoe(8), R.full_shoe(1)]
    rules = R.Rules()
    state = engine.init(rules, 3, seed=11)
    for _ in range(60):
        engine.deal(rules, state)
    comps += [row.astype(np.int64) for row in state.unseen]
    comps.append(np.array([0, 1, 7, 0, 2, 9, 0, 3, 1, 5, 0, 2, 1]))
    return np.array(comps)


CATALOG_FIGURES = json.loads((ROOT / "tests" / "data" / "catalog_figures.json").read_text())
"""The catalog's published exact figures (each row names its source in that file)."""


def test_book_evs_are_the_exact_calculators(book):
    """The book covers the catalog's bets settled by rank (the suited ones are studied when named: the
    test below); its EVs equal the seven-spot calculator (a separate code path) on the seven spots, the
    integer-exact counts on a full shoe, and every published 8-deck return."""
    assert book.names == tuple(b.name for b in catalog.rank_bets(R.Rules())) and len(book.names) >= 50
    comps = _compositions()
    ev = book.expected_values(comps)
    np.testing.assert_allclose(ev[:, :7], exact.expected_values(comps, R.Rules()), rtol=0, atol=1e-13)
    counts = exact.hand_class_counts(R.full_shoe(8))  # int64, exact
    total = int(counts.sum())
    assert total == CATALOG_FIGURES["total_deals_8_decks"]
    exact_ev = np.array(
        [
            sum(
                int(c) * Fraction(p).limit_denominator(1000)
                for c, p in zip(counts, book.pay[:, j], strict=True)
                if c
            )
            / total
            for j in range(len(book.names))
        ],
        dtype=np.float64,
    )
    np.testing.assert_allclose(ev[0], exact_ev, rtol=1e-13, atol=1e-16)
    checked = 0
    for bet, decks, published, decimals, _ in CATALOG_FIGURES["returns"]["rows"]:
        if decks == 8 and bet in book.names:
            assert round(ev[0, book.names.index(bet)], decimals) == published, bet
            checked += 1
    assert checked >= 20
    for name in ("banker", "player", "tie", "player_pair", "dragon7", "panda8"):
        assert round(-100 * ev[0, book.names.index(name)], 4) == edge8(name), name


def test_pay_matrix_settles_like_the_engine(book):
    """The book's pay matrix, indexed by the dealt hand class, equals the engine's settlement on the
    seven spots, and the dealt cards' own reading for 3 Giving 8 and 88/89/98/99."""
    rules = R.Rules()
    state = engine.init(rules, 2000, seed=2)
    g8, e89 = book.names.index("three_giving_eight"), book.names.index("eights_and_nines")
    wins = 0
    for _ in range(3):
        _, hand = engine.deal(rules, state)
        classes = R.hand_class(
            hand.player_total,
            hand.banker_total,
            hand.player_ncards,
            hand.banker_ncards,
            hand.player_pair,
            hand.banker_pair,
        )
        pay = book.pay[classes]
        np.testing.assert_array_equal(pay[:, :7], hand.payoffs(rules))
        value = R.CARD_VALUES[hand.banker_cards.astype(np.intp)]
        banker_two = (value[:, 0] + value[:, 1]) % 10
        third = R.CARD_VALUES[hand.player_cards[:, 2].astype(np.intp)]
        won = (banker_two == 3) & (hand.player_ncards == 3) & (third == 8) & (hand.player_cards[:, 2] > 0)
        np.testing.assert_array_equal(pay[:, g8], np.where(won, 200.0, -1.0))
        both = np.isin(hand.player_total, (8, 9)) & np.isin(hand.banker_total, (8, 9))
        np.testing.assert_array_equal(pay[:, e89], np.where(both, 20.0, -1.0))
        wins += int(won.sum())
    assert wins > 0


def test_unknown_bets_are_refused():
    with pytest.raises(ValueError, match=r"unknown bet\(s\) dragon8; allowed: banker, player, tie"):
        atlas.bet_book(R.Rules(), ("dragon8",))
    assert atlas.AtlasConfig().shoes == 10_000


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"bets": ["dragon8"]}, r"config: bets: unknown bet\(s\) dragon8; allowed: all, or any of banker"),
        ({"bets": ["banker", "banker"]}, r"bets: each bet at most once"),
        ({"seed": 7, "training_seed": 7}, r"training_seed: must differ from seed \(7\)"),
        ({"bets": "al"}, r"bets: 'al' is not allowed; allowed: all, or a list of bet names"),
        ({"custom_bets": {"name": "x"}}, r"custom_bets: allowed: a list of bet definitions"),
        ({"integer_max_tag": 0}, r"integer_max_tag: Input should be greater than or equal to 1"),
    ],
)
def test_config_errors_name_the_key(data, message):
    with pytest.raises(ConfigError, match=message):
        validate(data, atlas.AtlasConfig)


def test_full_config_is_the_documented_one():
    full = validate(yaml.safe_load(FULL.read_text()), atlas.AtlasConfig)
    assert full.shoes == 10_000 and full.bets == "all"
    assert (full.rules.decks, full.rules.cut_card, full.rules.burn) == (8, 14, True)
    assert full.rules.hand_after_cut is True  # the published figures' conditions (atlas.PUBLISHED_RULES)
    assert all(getattr(full.rules, k) == v for k, v in atlas.PUBLISHED_RULES.items())


@pytest.mark.parametrize("index", range(6))
def test_exchangeability_and_balanced_tags(book, index):
    """The count-weighted average of the EVs after one removal is the EV before (every bet, 1e-12),
    so tags proportional to the EoR are balanced."""
    comp = _compositions()[index]
    removal = counts.effects_of_removal(comp, book.expected_values)
    present = comp > 0
    np.testing.assert_allclose(
        comp[present] @ removal["ev_removed"][present] / comp.sum(), removal["ev"], rtol=0, atol=1e-12
    )
    for j in range(len(book.names)):
        tags = counts.eor_tags(removal["eor"][:, j], 10)
        # the tags magnify the EVs' rounding (1e-16) by 10 / max |EoR| (up to 1e6) and the cards
        assert abs(comp @ np.nan_to_num(tags)) < 1e-9 * comp.sum() * 10


def test_tags_and_true_counts():
    eor = np.array([1, 2, -4, 0, 0, 0, 0, 0, 0, 0.25, 0.25, 0.25, 0.25]) * 1e-4  # balanced
    np.testing.assert_allclose(counts.eor_tags(eor, 10), eor / 4e-4 * 10)
    # 0.75, 1.5, -3, 0 x 6, 0.1875 (x 4 ranks): the nearest balanced whole numbers
    np.testing.assert_array_equal(
        counts.eor_tags(eor, 3, integer=True), [1, 2, -3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    )
    # plain rounding of 1.45, 1.35, -3.2, 0.1 (x 4 ranks) gives 1, 1, -3, 0: one out of balance; the
    # cheapest balanced fix raises the ace to 2 (squared error +0.1; the 2: +0.3; a zero to 1: +1)
    target = np.array([1.45, 1.35, -3.2, 0, 0, 0, 0, 0, 0, 0.1, 0.1, 0.1, 0.1])
    np.testing.assert_array_equal(
        counts.balanced_integer_tags(target), [2, 1, -3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    )
    assert not np.any(counts.eor_tags(np.zeros(13), 10, integer=True))
    np.testing.assert_array_equal(
        counts.tags_by_rank((1, 1, -3, 1, 1, 1, 1, -8, 1, 1)), [1, 1, -3, 1, 1, 1, 1, -8, 1, 1, 1, 1, 1]
    )
    # one deck with two 8s and a 3 seen: running count -8 - 8 - 3 = -19 over 49/52 decks unseen
    unseen = R.full_shoe(1).copy()
    unseen[R.RANKS.index("8")] -= 2
    unseen[R.RANKS.index("3")] -= 1
    tags = counts.tags_by_rank((1, 1, -3, 1, 1, 1, 1, -8, 1, 1))[None]
    assert counts.true_counts(unseen[None], tags, 1)[0, 0] == pytest.approx(-19 / (49 / 52))


def test_chunk_sums_match_a_per_hand_recomputation(book):
    """deal_chunk's per-shoe sums equal those rebuilt hand by hand from the engine (its own
    settlement, hand.payoffs) and the exact calculator, for the bettors and a count."""
    rules = R.Rules()
    chunk = scale.plan(24, 24, 5)[0]
    eor = counts.effects_of_removal(R.full_shoe(8), book.expected_values)["eor"]
    d7 = book.names.index("dragon7")
    tags = np.array([counts.eor_tags(eor[:, d7], 10), counts.eor_tags(eor[:, d7], 10)])
    thresholds = np.array([5.0, math.inf])
    sums = atlas.deal_chunk(chunk, rules, book.names, tags, thresholds, np.array([d7, d7]))

    state = engine.init(rules, 24, seed=chunk.seed)
    hands, gain, realized, bets, count_ev, count_pay = (np.zeros(24) for _ in range(6))
    while True:
        live = (state.shoes_started == 1) & (state.position < state.cut_position)
        if not live.any():
            break
        unseen = state.unseen.astype(np.int64)
        ev = exact.expected_values(unseen, rules)[:, d7]
        seen = R.full_shoe(8) - unseen
        tc = seen @ tags[0] / (unseen.sum(axis=1) / 52)
        _, hand = engine.deal(rules, state)
        pay = hand.payoffs(rules)[:, d7]
        hands += live
        gain += live * np.maximum(ev, 0)
        realized += live * (ev > 0) * pay
        bet = live & (tc >= 5.0)
        bets += bet
        count_ev += bet * ev
        count_pay += bet * pay
    np.testing.assert_array_equal(sums["hands"], hands)
    np.testing.assert_allclose(sums["gain"][:, d7], gain, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(sums["realized"][:, d7], realized)
    np.testing.assert_array_equal(sums["count_bets"][:, 0], bets)
    np.testing.assert_allclose(sums["count_ev"][:, 0], count_ev, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(sums["count_payoff"][:, 0], count_pay)
    assert bets.sum() > 0 and not sums["count_bets"][:, 1].any()  # an infinite threshold never bets
    assert 70 <= hands.min() and hands.max() <= 90


def test_bettor_figures_from_per_shoe_sums():
    bets, ev = np.array([2.0, 0.0, 4.0]), np.array([0.1, 0.0, 0.3])
    hands = np.array([80.0, 78.0, 82.0])
    f = atlas.bettor_figures(bets, ev, ev, hands)
    assert f["bet_frequency"]["estimate"] == pytest.approx(6 / 240)
    assert f["average_edge"]["estimate"] == pytest.approx(0.4 / 6)
    assert f["units_per_100_hands"]["estimate"] == pytest.approx(100 * 0.4 / 240)
    assert f["units_per_shoe"]["estimate"] == pytest.approx(0.4 / 3)
    # units per 100 hands = 100 x frequency x average edge, exactly
    assert f["units_per_100_hands"]["estimate"] == pytest.approx(
        100 * f["bet_frequency"]["estimate"] * f["average_edge"]["estimate"]
    )
    lo, hi = f["units_per_100_hands"]["ci95"]
    assert lo < f["units_per_100_hands"]["estimate"] < hi


def test_compare_published_judges_by_our_interval():
    published = atlas.Published(
        "x",
        "a source",
        "20:1",
        house_edge=0.07372,
        bet_frequency=0.1361,
        units_per_100_hands=1.213,
        tags=(1,) * 10,
        trigger=4,
    )
    replay = {
        "bet_frequency": {"estimate": 0.135, "ci95": [0.13, 0.14]},
        "units_per_100_hands": {"estimate": 1.0, "ci95": [0.9, 1.1]},
    }
    row = atlas.compare_published(published, replay, {}, 0.073721, comparable=True)
    assert row["figures"]["bet_frequency"]["agrees"] is True
    assert row["figures"]["units_per_100_hands"]["agrees"] is False
    assert row["house_edge"]["agrees"] is True
    assert "replayed" in row["compared_with"]
    assert "desirability_index" not in row["figures"]  # none published for this one
    # Jacobson's DI: his own figures, replayed exactly, give his published 7.62
    jacobson = atlas.Published(
        "x", "a source", "20:1", house_edge=0.07372, desirability_index=7.62, tags=(1,) * 10, trigger=4
    )
    his = {
        "bet_frequency": {"estimate": 0.1361, "ci95": [0.13, 0.14]},
        "units_per_100_hands": {"estimate": 1.213, "ci95": [1.1, 1.3]},
    }
    di = atlas.compare_published(jacobson, his, {}, 0.07372, comparable=True)["figures"]["desirability_index"]
    assert round(di["ours"], 2) == 7.62 and di["agrees"] is True
    other = atlas.compare_published(published, replay, {}, 0.0737, comparable=False)
    assert other["figures"]["bet_frequency"]["agrees"] is None and other["judged"] is False


def test_published_figures_name_their_source():
    assert {p.bet for p in atlas.PUBLISHED} >= {
        "three_giving_eight",
        "eights_and_nines",
        "dragon_bonus_player",
    }
    for p in atlas.PUBLISHED:
        assert p.source and p.conditions
        assert p.tags is None or (len(p.tags) == 10 and p.trigger is not None)
        if p.bet_frequency is not None and p.average_edge is not None:
            # the published figures are consistent: units/100 = 100 x frequency x average edge
            assert 100 * p.bet_frequency * p.average_edge == pytest.approx(p.units_per_100_hands, rel=0.01)


def test_smoke_run_end_to_end(smoke, book):
    result, out = smoke
    assert result["shoes"] == 300 and result["chunks"] == 3 and 75 < result["hands_per_shoe"] < 85
    assert result["exchangeability_max_error"] < 1e-12
    assert sorted(result["ranking"]) == sorted(book.names) == sorted(result["bets"])
    full = book.expected_values(R.full_shoe(8)[None])[0]
    z = z_value(1 - (1 - FAMILY_CONFIDENCE) / (2 * len(book.names)))  # two bounds per bet
    for j, name in enumerate(book.names):
        b = result["bets"][name]
        assert b["house_edge"] == pytest.approx(-full[j], abs=1e-15)
        perfect = b["perfect_information"]
        for kind in ("eor", "integer"):
            c = b["counts"][kind]
            # no bettor predicts more than the perfect-information bettor (per hand, exactly)
            assert c["units_per_100_hands"]["estimate"] <= perfect["units_per_100_hands"]["estimate"] + 1e-12
            if c["threshold"] is None:
                assert c["bet_frequency"]["estimate"] == 0
        integer_tags = np.array(list(b["counts"]["integer"]["tags"].values()))
        assert np.all(integer_tags == np.round(integer_tags)) and np.max(np.abs(integer_tags)) <= 4
        # calibration: the dealt payoffs average the exact EVs, over every hand dealt. (Over the few
        # hands the perfect-information bettor stakes on a 50:1 bet, a handful of wins, the interval
        # from the observed payoffs is not yet normal at 300 shoes: that figure is reported, not tested.)
        calibration = b["realized_minus_predicted_per_hand"]
        assert abs(calibration["estimate"]) <= z * calibration["se"], name
        # the cut-card effect at 300 shoes: no bet's is detectable
        cut = b["cut_card_effect"]
        assert abs(cut["estimate"]) <= z * cut["se"] + 1e-12, name
    gains = [result["bets"][n]["counts"]["eor"]["units_per_100_hands"]["estimate"] for n in result["ranking"]]
    assert gains == sorted(gains, reverse=True)  # ranked by the EoR count's gain
    # the published top: 3 Giving 8; of the seven spots of the rules, Dragon 7 ranks first
    assert result["ranking"][0] == "three_giving_eight"
    assert min(result["ranking"].index(b) for b in R.BETS) == result["ranking"].index("dragon7")
    d7 = result["bets"]["dragon7"]
    assert d7["counts"]["eor"]["share_of_perfect_information_gain"] > 0.7
    assert "no linear count" in result["bets"]["player_pair"]["counts"]["eor"]["note"]
    for name in atlas.OUTPUT_NAMES:
        assert (out / name).stat().st_size > 0
    rows = list(csv.DictReader(io.StringIO((out / "atlas.csv").read_text())))
    assert [r["bet"] for r in rows] == result["ranking"]
    assert float(rows[0]["eor_count_units_per_100_hands_lo"]) < float(
        rows[0]["eor_count_units_per_100_hands"]
    )
    # the published figures, beside ours: the bet definitions agree (house edges), and the published
    # counts replayed on our shoes earn what their authors published, within our 95% CI (3 Giving 8
    # excepted: its published figures are not reproduced at 10,000 shoes, see the README)
    published = {
        n: result["bets"][n]["published"] for n in result["ranking"] if result["bets"][n]["published"]
    }
    assert set(published) == {p.bet for p in atlas.PUBLISHED}
    for name, entries in published.items():
        for p in entries:
            assert p["judged"] and p["source"]
            assert p["house_edge"] is None or p["house_edge"]["agrees"], name
            if p["tags"] is not None and name != "three_giving_eight":
                for figure in ("bet_frequency", "average_edge", "units_per_100_hands"):
                    assert p["figures"][figure]["agrees"], (name, figure)
    markdown = (out / "atlas.md").read_text()
    table = markdown.split("## Published")[0].split("\n\n", 1)[1]
    assert table.count("\n| ") == len(book.names) and "`dragon7`" in table  # one row per bet
    assert "Jacobson" in markdown  # the published comparison
    # the integer counts, ready to use: one row per bet that a count bets, its ten tags balanced
    counts = markdown.split("## The integer counts")[1].split("## The advantage")[0].strip().splitlines()[2:]
    assert len(counts) == sum(
        result["bets"][n]["counts"]["integer"]["threshold"] is not None for n in result["ranking"]
    )
    for line in counts:
        tags = [int(cell) for cell in line.split("|")[2:12]]
        assert sum(tags[:9]) + 4 * tags[9] == 0, line  # balanced over a full shoe
    # the advantage player's figures of every count that bets: DI and the risk of ruin in the table
    eor = d7["counts"]["eor"]["advantage"]
    assert eor["di"] == pytest.approx(
        1000 * eor["win_per_100_dealt"] / 100 / (eor["sd_per_100_dealt"] / 10), rel=1e-12
    )
    assert eor["win_per_100_dealt"] == pytest.approx(d7["counts"]["eor"]["units_per_100_hands"]["estimate"])
    assert (
        eor["double_barrier"]["sessions"] == 1000
        and "double_barrier" not in d7["perfect_information"]["advantage"]
    )
    assert float(rows[0]["eor_count_di"]) == pytest.approx(
        result["bets"][rows[0]["bet"]]["counts"]["eor"]["advantage"]["di"]
    )
    assert "## The advantage player's figures" in markdown and "`dragon7` EoR count" in markdown
    # Jacobson's desirability index beside the replay's, computed his way
    for p in result["bets"]["eights_and_nines"]["published"]:
        if p["tags"] is not None:
            di = p["figures"]["desirability_index"]
            assert di["published"] == 7.62 and di["ci95"][0] < di["ours"] < di["ci95"][1]


TINY = {
    "rules": {"decks": 8, "cut_card": 14, "hand_after_cut": True},
    "shoes": 60,
    "seed": 5,
    "chunk_shoes": 20,
    "training_shoes": 30,
    "training_seed": 6,
    "integer_max_tag": 2,
    "advantage": {"sessions": 1000},  # the double barrier's sessions: most of the time of a tiny study
}


def _comparable(result: dict) -> str:
    """The result as JSON without the wall-clock times and the file list."""
    return json.dumps({k: v for k, v in result.items() if k not in ("timings", "files")}, sort_keys=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    config = tmp_path_factory.mktemp("tiny") / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    return config, atlas.main(str(config), None, as_json=True)


@pytest.mark.slow  # two spawned processes import the stack: about a minute on a busy machine
def test_processes_give_the_serial_result(tiny):
    config, serial = tiny
    assert serial["chunks"] == 3
    assert _comparable(
        atlas.main(str(config), None, as_json=True, backend="processes", workers=2)
    ) == _comparable(serial)


def test_an_interrupted_run_resumes_bit_for_bit(tiny, tmp_path, monkeypatch):
    """Ctrl-C during the second chunk, then the same command: the finished chunk is loaded, only the
    other two run, and the result equals the uninterrupted run's."""
    config, serial = tiny
    out = tmp_path / "out"
    resumed, ran = chunk_tasks.interrupt_then_resume(
        monkeypatch, atlas, "deal_chunk", lambda: atlas.main(str(config), str(out), as_json=True), out, at=1
    )
    assert ran == [1, 2] and _comparable(resumed) == _comparable(serial)
    assert sorted(p.name for p in out.iterdir()) == sorted(atlas.OUTPUT_NAMES)


TIE_ON_7 = {
    "name": "my_tie_on_7",
    "source": "a test",
    "rows": [{"when": {"winner": "tie", "player_total": 7}, "pays": 45}],
}


def test_custom_bets_are_studied_like_catalog_bets(tmp_path):
    """A user's bet in the config (here Egalite 7 again, under another name) is priced, counted and
    ranked like the catalog's: the same figures as egalite_7, to the last bit."""
    config = tmp_path / "custom.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                **TINY,
                "shoes": 20,
                "chunk_shoes": 20,
                "custom_bets": [TIE_ON_7],
                "bets": ["egalite_7", "my_tie_on_7", "dragon7"],
            }
        )
    )
    result = atlas.main(str(config), None, as_json=True)
    ours, catalogs = result["bets"]["my_tie_on_7"], result["bets"]["egalite_7"]
    assert json.dumps(ours, sort_keys=True) == json.dumps(catalogs, sort_keys=True)
    assert len(result["ranking"]) == 3
    with pytest.raises(
        ConfigError,
        match=r"custom_bets: bet 'x', row 1: player_total=11 does not "
        r"exist; allowed: 0\.\.9",
    ):
        validate(
            {
                "custom_bets": [
                    {"name": "x", "rows": [{"when": {"winner": "tie", "player_total": 11}, "pays": 45}]}
                ]
            },
            atlas.AtlasConfig,
        )
    with pytest.raises(ConfigError, match=r"custom_bets: bet 'lucky6': the name is taken"):
        validate({"custom_bets": [{**TIE_ON_7, "name": "lucky6"}]}, atlas.AtlasConfig)
    with pytest.raises(ConfigError, match=r"bets: unknown bet\(s\) my_tie_on_8"):
        validate({"custom_bets": [TIE_ON_7], "bets": ["my_tie_on_8"]}, atlas.AtlasConfig)


def test_smoke_run_covers_the_suited_bets(tmp_path):
    """The suited bets, named: the perfect-information bettor knows the unseen cards by rank and suit
    (and finds positive hands late in the shoe); a count by rank cannot see a perfect pair (every
    effect of removal is zero, as for the rank pairs), so its counts never bet."""
    config = tmp_path / "suited.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                **TINY,
                "shoes": 200,
                "chunk_shoes": 100,
                "bets": ["perfect_pair", "perfect_pair_v1", "player_pair"],
            }
        )
    )
    result = atlas.main(str(config), None, as_json=True)
    assert sorted(result["ranking"]) == ["perfect_pair", "perfect_pair_v1", "player_pair"]
    published = json.loads((ROOT / "tests" / "data" / "known_cards_figures.json").read_text())
    edges = {
        "perfect_pair": published["perfect_pair_v2"]["house_edge_pct"],
        "perfect_pair_v1": published["perfect_pair_v1"]["8_decks_25"]["house_edge_pct"],
    }
    z = z_value(1 - (1 - FAMILY_CONFIDENCE) / 2)
    for name, edge in edges.items():
        b = result["bets"][name]
        assert round(100 * b["house_edge"], 4) == edge
        assert all(abs(v) < 1e-12 for v in b["eor"].values())
        for kind in ("eor", "integer"):
            assert b["counts"][kind]["threshold"] is None
            assert b["counts"][kind]["bet_frequency"]["estimate"] == 0
        perfect = b["perfect_information"]
        assert perfect["bet_frequency"]["estimate"] > 0 and perfect["units_per_100_hands"]["estimate"] > 0
        calibration = b["realized_minus_predicted_per_hand"]
        assert abs(calibration["estimate"]) < z * calibration["se"]
        # the pair count sees what the rank counts cannot: most of the perfect-information gain, never
        # more than it (it bets a subset of hands at their exact EV), and not on the rank pair bet
        pair, bound = b["counts"]["pair"], perfect["units_per_100_hands"]["estimate"]
        assert 0.9 * bound <= pair["units_per_100_hands"]["estimate"] <= bound + 1e-12
    assert "pair" not in result["bets"]["player_pair"]["counts"]


def test_the_pair_share_is_the_chance_that_two_cards_are_the_same_card():
    rng = np.random.default_rng(5)
    by_suit = rng.integers(0, 4, size=(6, 13, 4))
    by_suit[0] = 8  # a full 8-deck shoe: 52 x 8 x 7 of 416 x 415 ordered pairs
    cards = [np.repeat(np.arange(52), composition.ravel()) for composition in by_suit]
    brute = [np.mean([a == b for i, a in enumerate(c) for j, b in enumerate(c) if i != j]) for c in cards]
    np.testing.assert_allclose(atlas.pair_share(by_suit), brute, rtol=1e-12)
    assert atlas.pair_share(by_suit[:1])[0] == 52 * 8 * 7 / (416 * 415)
