"""The terminal report of ``pb-gym evaluate``: the table fits 120 characters with a P(stop) column, and
intervals that miss their exact edge are a statistical note with Holm's family-wise check."""

from __future__ import annotations

import math

import pytest

from pb_gym.experiments.common import stats
from pb_gym.experiments.evaluate import report as evaluate_report

from evaluate_reports import report as _report
from evaluate_reports import system_row as _system


def test_two_sided_p_is_005_at_the_ends_of_a_95_interval():
    assert stats.two_sided_p(0.0, -1.0, 1.0, 1.0) == pytest.approx(0.05, abs=1e-9)
    assert stats.two_sided_p(0.0, -1.0, 1.0, 0.0) == 1.0
    assert stats.two_sided_p(0.0, -1.0, 1.0, 2.0) == pytest.approx(
        math.erfc(2 * 1.959964 / math.sqrt(2)), rel=1e-5
    )


def test_holm_steps_down_and_stops_at_the_first_kept_hypothesis():
    # m = 4: thresholds 0.0125, 0.01667, 0.025, 0.05 for the sorted p-values
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    assert stats.holm([0.03, 0.001, 0.9]) == [False, True, False]  # 0.03 > 0.05 / 2
    assert stats.holm([0.049]) == [True] and stats.holm([0.051]) == [False]
    assert stats.holm([]) == []


def test_the_table_fits_120_characters_and_shows_p_stop(capsys):
    systems = [
        _system("kelly (banker, exact shoe EV)", -0.01067, [-0.01125, -0.01009], -0.01058),
        _system("d'alembert", -0.00838, [-0.01025, -0.00650], -0.01058),
    ]
    evaluate_report.print_report(_report(systems))
    lines = capsys.readouterr().out.splitlines()
    table = lines[1:4]
    assert "P(stop)" in table[0] and "0.530" in table[2]
    assert "-1.067% [-1.125, -1.009]" in table[1]
    assert max(len(line) for line in table) <= evaluate_report.TABLE_WIDTH, [len(line) for line in table]


def test_chance_misses_are_a_note_and_only_holm_rejections_warn(capsys):
    # three misses at about 2 standard errors (p about 0.03-0.05) among 15 systems: chance, no WARNING
    se = 0.001
    edge = -0.01058
    chance = [_system(f"s{i}", edge + 2.1 * se, [edge + 0.14 * se, edge + 4.06 * se], edge) for i in range(3)]
    fine = [_system(f"ok{i}", -0.0106, [-0.0116, -0.0096], -0.01058) for i in range(12)]
    evaluate_report.print_report(_report(chance + fine))
    out = capsys.readouterr().out
    assert "Statistical note: 3 of 15 95% intervals miss their exact edge" in out
    assert "none is significant" in out and "WARNING" not in out
    # one miss at 6 standard errors: Holm rejects it, and it alone gets a WARNING
    far = _system("broken", edge + 6 * se, [edge + 4.04 * se, edge + 7.96 * se], edge)
    evaluate_report.print_report(_report(chance + fine + [far]))
    out = capsys.readouterr().out
    warned = [line.split(":")[1].strip() for line in out.splitlines() if line.startswith("WARNING")]
    assert warned == ["broken"]


def test_a_kelly_bettor_that_never_bets_says_why(capsys):
    kelly = _system("kelly", math.nan, [math.nan, math.nan], math.nan, type="kelly", note="no bet placed")
    kelly["edge_within_ci"] = None
    evaluate_report.print_report(_report([kelly]))
    assert (
        "NOTE: kelly placed no bet (it stakes only where the exact EV is positive, and a stake below "
        "the table minimum is not placed)."
    ) in capsys.readouterr().out


def test_the_wrote_line_names_the_folder_once():
    import os

    from pb_gym.experiments.common import outputs

    line = outputs.wrote_line(
        ["out/classic/report.json", "out/classic/systems.csv", "out/classic/evaluation/paths.json"]
    )
    assert line == f"wrote out/classic{os.sep}: report.json, systems.csv, evaluation/paths.json"
    assert outputs.wrote_line([]) == "wrote nothing"
