"""The roads study (pb-gym experiment roads, configs/experiments/roads-smoke.yaml): its files, figures
that must hold whatever the deal, and a second run giving the same result."""

import json
import math

import pytest

from pb_gym import roads
from pb_gym.experiments import cli
from pb_gym.experiments import roads as study

import chunk_tasks
from published_figures import MAIN_FIGURES
from repo_paths import ROOT  # noqa: E402

SMOKE = str(ROOT / "configs" / "experiments" / "roads-smoke.yaml")


def test_chi_square_upper_tail():
    # the 5% and 1% points of the chi-square law with 7 degrees of freedom: 14.067, 18.475
    assert study.chi_square_p(14.067, 7) == pytest.approx(0.05, abs=0.002)
    assert study.chi_square_p(18.475, 7) == pytest.approx(0.01, abs=0.001)
    assert math.isnan(study.chi_square_p(3.0, 0))


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("roads") / "out"
    assert cli.main(["experiment", "roads", SMOKE, "--out", str(out), "--json"]) == 0
    return out, json.loads((out / "roads.json").read_text())


def test_smoke_files_and_figures(smoke, capsys):
    out, result = smoke
    assert sorted(p.name for p in out.iterdir()) == sorted(study.OUTPUT_NAMES)
    assert result["shoes"] == 120 and 70 < result["hands_per_shoe"] < 85
    # the exact full-shoe probabilities, as published (tests/data/published_figures.json)
    p_banker, p_player, p_tie = MAIN_FIGURES[8][:3]
    assert result["p_full_shoe"]["banker"] == pytest.approx(p_banker, abs=5e-7)
    assert result["p_full_shoe"]["player"] == pytest.approx(p_player, abs=5e-7)
    assert result["p_full_shoe"]["tie"] == pytest.approx(p_tie, abs=5e-7)
    systems = {s["system"]: s for s in result["systems"]}
    assert set(systems) == set(study.SYSTEMS)
    for s in systems.values():
        # banker and player bets only: the exact EV of the bets made lies near the two house edges
        assert -0.0135 < s["exact_ev_of_bets_made"] < -0.0100, s
        low, high = s["profit_per_unit_wagered"]["ci95"]
        assert low < s["profit_per_unit_wagered"]["estimate"] < high
    # chop after one decision bets every hand but those before a shoe's first decision
    assert systems["chop"]["share_of_hands_bet"] > 0.97
    assert systems["chop"]["bets"] == systems["follow the winner"]["bets"]
    assert (
        systems["streak after 2"]["bets"]
        > systems["streak after 3"]["bets"]
        > systems["streak after 4"]["bets"]
    )
    # the perfect-information bettor bets rarely and gains a tiny exact amount
    perfect = result["perfect_information"]
    assert 0 < perfect["share_of_hands_bet"] < 0.02
    assert 0 < perfect["exact_gain_per_hand"]["estimate"] < 0.001
    # independent hands follow the geometric law of column lengths (4 standard errors)
    for side in ("banker", "player"):
        fit = result["independence"]["independent"]["columns"][side]
        columns = sum(fit["observed"])
        q = 1 - 1 / fit["mean_length_independent_law"]
        se = math.sqrt(q) / (1 - q) / math.sqrt(columns)
        assert abs(fit["mean_length"] - fit["mean_length_independent_law"]) < 4 * se
        test = result["independence"]["real"]["columns"][side]["against_independent"]
        assert test["dof"] == study.LENGTH_BINS - 1 and 0 <= test["p_value"] <= 1
    for family in ("big_road", "ask_road"):
        share = result["road_states"][family]["share_of_variance_explained"]
        assert 0 <= share < 0.05
    assert set(result["first_shoe"]) <= set("BPT") and len(result["first_shoe"]) > 60
    markdown = (out / "roads.md").read_text()
    assert "| ask road unanimous |" in markdown and "Perfect information" in markdown
    assert (out / "scoreboard.png").read_bytes()[:4] == b"\x89PNG"


def test_the_red_shares_stand_beside_their_exact_value_for_independent_hands(smoke):
    out, result = smoke
    independence = result["independence"]
    p = result["p_full_shoe"]
    exact = independence["red_share_exact_independent"]
    for road, k in roads.DERIVED_ROADS.items():
        assert exact[road] == pytest.approx(
            roads.red_share_independent(p["banker"], p["player"], k), rel=1e-12
        )
        for kind in ("real", "independent"):
            entry = independence[kind]
            low, high = entry["red_share_ci95"][road]
            assert low < entry["red_share"][road] < high and entry["marks"][road] > 1000
            z = (entry["red_share"][road] - exact[road]) / entry["red_share_se"][road]
            assert entry["red_share_z_against_exact"][road] == pytest.approx(z, rel=1e-12)
    assert round(100 * exact["big_eye_boy"], 4) == 50.0031 and round(100 * exact["small_road"], 4) == 50.0114
    assert "| big_eye_boy | 50.0031% |" in (out / "roads.md").read_text()


def test_a_second_run_gives_the_same_result(smoke, tmp_path, capsys):
    _, first = smoke
    out = tmp_path / "again"
    assert cli.main(["experiment", "roads", SMOKE, "--out", str(out), "--json"]) == 0
    again = json.loads((out / "roads.json").read_text())
    for result in (first, again):
        result.pop("timings")
        result.pop("files", None)
    assert again == first


def test_an_interrupted_run_resumes_bit_for_bit(smoke, tmp_path, monkeypatch):
    """Ctrl-C during the second chunk, then the same command: the finished chunk is loaded, only the
    other two run, and the result equals the uninterrupted run's."""
    _, uninterrupted = smoke
    out = tmp_path / "out"
    _, ran = chunk_tasks.interrupt_then_resume(
        monkeypatch, study, "deal_chunk", lambda: study.main(SMOKE, str(out), as_json=True), out, at=1
    )
    resumed = json.loads((out / "roads.json").read_text())
    assert ran == [1, 2]
    assert sorted(p.name for p in out.iterdir()) == sorted(study.OUTPUT_NAMES)
    first = {k: v for k, v in uninterrupted.items() if k not in ("timings", "files")}
    assert {k: v for k, v in resumed.items() if k not in ("timings", "files")} == first
