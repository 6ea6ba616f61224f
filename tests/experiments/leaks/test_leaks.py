"""The information-leak study: exact edges beside the published ones, the simulation's CI, the files."""

import json
import subprocess
import sys

import pytest

from pb_gym.experiments import leaks

from repo_paths import ROOT  # noqa: E402

SMOKE = ROOT / "configs" / "experiments" / "leaks-smoke.yaml"
FULL = ROOT / "configs" / "experiments" / "leaks.yaml"
# Jacobson's figures (tests/data/known_cards_figures.json names the source)
FIGURES = json.loads((ROOT / "tests" / "data" / "known_cards_figures.json").read_text())


def test_the_study_constants_are_the_published_figures():
    published = {f"known_card_{p}": v for p, v in FIGURES["known_card_edge_pct"].items()}
    sorting = FIGURES["edge_sorting_pct"]
    published |= {
        "edge_sorted_first_card": sorting["one_card_6789"],
        "four_sorted_cards": sorting["four_cards_6789"],
        "four_sorted_best_split": sorting["four_cards_best_split"],
    }
    assert leaks.PUBLISHED_PCT == published


def test_smoke_run_reproduces_the_figures_and_the_simulation_covers_them(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pb_gym.experiments.cli",
            "experiment",
            "leaks",
            str(SMOKE),
            "--out",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    rows = {row["leak"]: row for row in result["leaks"]}
    assert set(rows) == {"known_card_1", "four_sorted_best_split", "burn_card_shown", "bottom_card_known"}
    for name in ("known_card_1", "four_sorted_best_split"):
        row = rows[name]
        assert round(100 * row["exact_edge_per_event"], 3) == row["published_pct"]
        low, high = row["simulated_ci95"]  # a 95% interval; the seed is fixed, so this is reproducible
        assert low <= row["exact_edge_per_event"] <= high
        assert row["frequency_per_hand"] == 1.0
        assert row["units_per_100_hands"] == pytest.approx(100 * row["exact_edge_per_event"])
    assert rows["four_sorted_best_split"]["split_high"] == [4, 5, 6, 7, 8, 9]
    # one card less (or the burned cards known) never makes a main bet positive off an 8-deck shoe
    assert rows["bottom_card_known"]["exact_edge_per_event"] == 0.0
    assert rows["burn_card_shown"]["simulated_edge_per_event"] == 0.0
    assert 70 < result["hands_per_shoe"] < 90
    assert rows["burn_card_shown"]["frequency_per_hand"] == pytest.approx(1 / result["hands_per_shoe"])
    assert sorted(p.name for p in out.iterdir()) == ["leaks.csv", "leaks.json", "leaks.md"]
    assert "| known_card_1 | 1.0000 | 6.765 | 6.765 |" in (out / "leaks.md").read_text()


def test_configs_validate_and_name_bad_keys(tmp_path):
    from pb_gym.experiments.common.yaml_config import ConfigError, load

    assert load(str(FULL), leaks.LeaksConfig).leaks == leaks.LEAKS
    bad = tmp_path / "bad.yaml"
    bad.write_text("leaks: [known_card_7]\n")
    with pytest.raises(ConfigError, match="leaks"):
        load(str(bad), leaks.LeaksConfig)


def test_the_simulated_share_of_hands_bet_matches_the_exact_chance():
    config = leaks.LeaksConfig(
        hands=4_000, chunk_hands=2_000, seed=5, frequency_shoes=10, leaks=("four_sorted_cards",)
    )
    row = leaks.run(config)["leaks"][0]
    p, n = row["exact_bet_frequency"], config.hands
    assert round(p, 6) == 0.771759  # P(the best main bet is positive given the four classes)
    assert abs(row["simulated_share_bet"] - p) < 4 * (p * (1 - p) / n) ** 0.5  # a 4-sigma bound
