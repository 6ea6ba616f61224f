"""The dealing-procedures study on its smoke config: a CSM with no delay leaves nothing to count."""

import struct

import pytest

from pb_gym.experiments import procedures as study

from repo_paths import ROOT  # noqa: E402

CONFIG = ROOT / "configs" / "experiments" / "procedures-smoke.yaml"


@pytest.fixture(scope="module")
def result():
    return study.run(study.ProceduresConfig.model_validate(__import__("yaml").safe_load(CONFIG.read_text())))


def test_a_csm_without_delay_deals_every_hand_from_the_full_shoe(result):
    by_name = {p["name"]: p for p in result["procedures"]}
    csm = by_name["csm-delay-0"]
    assert csm["hands"] == 20 * 40
    for bet, entry in csm["bets"].items():
        # every composition is the full shoe, where no bet of the book is positive: exactly 0
        assert entry["perfect_gain_per_hand"]["estimate"] == 0.0, bet
        assert entry["count_bet_rate"]["estimate"] == 0.0, bet


def test_the_hand_shuffled_shoe_gives_dragon7_a_perfect_information_gain(result):
    shoe = {p["name"]: p for p in result["procedures"]}["hand-shuffled"]
    assert shoe["bets"]["dragon7"]["perfect_gain_per_hand"]["ci95"][0] > 0
    # the count never gains more than perfect information on the same hands
    for entry in shoe["bets"].values():
        assert entry["count_gain_per_hand"]["estimate"] <= entry["perfect_gain_per_hand"]["estimate"] + 1e-12
    assert "csm-delay-5" in study.markdown(result)


def test_a_bad_procedure_is_named():
    with pytest.raises(ValueError, match="shuffle"):
        study.ProceduresConfig(procedures=[{"name": "x", "shuffle": "machine"}])


def test_the_random_cut_and_burn_rows_are_dealt(result):
    by_name = {p["name"]: p for p in result["procedures"]}
    assert by_name["cut-random"]["dealing"]["cut_range"] == [7, 104]
    assert by_name["burn-one-up"]["dealing"]["burn"] == "one_up"
    # a random cut 7..104 deals fewer hands a shoe than the fixed cut of 14, more than a cut of 104
    assert by_name["cut-random"]["hands"] < by_name["hand-shuffled"]["hands"]
    assert by_name["cut-random"]["hands"] > by_name["cut-104"]["hands"]


def test_a_bad_cut_range_is_named():
    with pytest.raises(ValueError, match="cut_range"):
        study.ProceduresConfig(procedures=[{"name": "x", "cut_range": [3, 10]}])


def test_the_study_draws_its_figure(result, tmp_path):
    """procedures.png is written beside the tables: a PNG of a docs page's width and weight, its
    panels the page's side bets the run dealt, then its bets of largest gain."""
    written = study.write_outputs(result, tmp_path)
    assert sorted(p.name for p in written) == sorted(study.OUTPUT_NAMES)
    data = (tmp_path / "procedures.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk, first after the signature
    # (a placeholder, written where matplotlib could not draw the data, is some 660 x 180 pixels)
    assert 1000 <= width <= 1400 and 500 <= height <= 1200, (width, height)
    assert 20_000 < len(data) < 300_000
    bets = study.figure_bets(result)
    assert bets[:2] == ["dragon7", "panda8"] and sorted(bets[2:]) == ["banker", "tie"]
