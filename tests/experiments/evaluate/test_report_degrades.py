"""A finished evaluate run never loses its report over a figure matplotlib cannot draw: the figure
becomes a placeholder with a NOTE naming it and the reason, and every other output is written. The
figures are drawn by the process that ran the study, after the run."""

from __future__ import annotations

import json
import os

import pytest

from pb_gym.experiments import evaluate
from pb_gym.experiments.common import plotting
from pb_gym.experiments.evaluate import figures as evaluate_figures


@pytest.mark.parametrize(
    "config,figures",
    [
        # one session: the EV panel's error bars are degenerate (LinAlgError: Singular matrix)
        (
            "sessions: 1\nhands: 200\nsystems: [{type: flat}, {type: martingale}, {type: never}]\n",
            ["ev_per_unit_wagered.png"],
        ),
        # a bankroll and a table maximum of 1e308: no axis ticks can be computed (arange error)
        (
            "sessions: 20\nhands: 20\nbankroll: 1.0e+308\ntable: {maximum: 1.0e+308}\n"
            "systems: [{type: flat}]\n",
            ["bankroll_paths.png"],
        ),
    ],
)
def test_a_figure_that_cannot_be_drawn_is_noted_and_the_rest_written(tmp_path, capsys, config, figures):
    path = tmp_path / "c.yaml"
    path.write_text(config)
    out = tmp_path / "out"
    result = evaluate.main(str(path), str(out), as_json=True)
    assert sorted(p.name for p in out.iterdir()) == sorted(evaluate.OUTPUT_NAMES)
    assert json.loads((out / "report.json").read_text())["systems"]
    err = capsys.readouterr().err
    note = [line for line in err.splitlines() if line.startswith("NOTE: ") and "could not be drawn" in line]
    assert len(note) == 1 and all(name in note[0] for name in figures), err
    assert "placeholders written, the report and its tables are complete" in note[0]
    assert result["systems"]
    for name in evaluate.OUTPUT_NAMES:
        if name.endswith(".png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_figure_that_fails_leaves_the_others_drawn(tmp_path, capsys, monkeypatch):
    """The figures are drawn one after the other, each on its own: the one matplotlib cannot draw is a
    placeholder, the ones after it are the real figures."""
    path = tmp_path / "c.yaml"
    path.write_text("sessions: 20\nhands: 30\nsystems: [{type: flat}, {type: martingale}]\n")

    def fails(_report, _path):
        raise ValueError("degenerate fans")

    monkeypatch.setattr(evaluate_figures, "plot_fans", fails)
    out = tmp_path / "out"
    evaluate.main(str(path), str(out), as_json=True)
    note = [line for line in capsys.readouterr().err.splitlines() if "could not be drawn" in line]
    assert len(note) == 1 and "bankroll_paths.png" in note[0] and "degenerate fans" in note[0]
    assert "final_bankrolls.png" not in note[0] and "ev_per_unit_wagered.png" not in note[0]
    placeholder = _png_size(out / "bankroll_paths.png")
    assert placeholder == (6 * plotting.DPI, round(1.6 * plotting.DPI))
    for name in ("final_bankrolls.png", "ev_per_unit_wagered.png"):
        assert _png_size(out / name)[1] > placeholder[1]


def test_the_figures_are_drawn_in_the_process_that_runs_the_study(tmp_path, monkeypatch):
    """No process is forked to draw them: each is written by this process after the run."""
    path = tmp_path / "c.yaml"
    path.write_text("sessions: 20\nhands: 30\nsystems: [{type: flat}, {type: kelly}]\n")

    def forked():
        raise AssertionError("a process was forked")

    monkeypatch.setattr(os, "fork", forked)
    out = tmp_path / "out"
    evaluate.main(str(path), str(out), as_json=True)
    for name in evaluate.OUTPUT_NAMES[3:]:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _png_size(path) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its header."""
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def test_ctrl_c_while_the_figures_are_drawn_keeps_every_finished_chunk(tmp_path, monkeypatch, capsys):
    """Ctrl-C once the run is over, while this process draws the figures: status 130, no output
    written but the finished chunks, and a rerun draws the figures from them without dealing again."""
    from pb_gym.experiments import cli

    path = tmp_path / "c.yaml"
    path.write_text(
        "sessions: 40\nhands: 30\nchunk_sessions: 20\nsystems: [{type: flat}, {type: martingale}]\n"
    )
    out = tmp_path / "out"

    def interrupted(_report, _path):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate_figures, "plot_final_bankrolls", interrupted)
    assert cli.main(["evaluate", str(path), "--out", str(out)]) == 130
    assert sorted(p.name for p in out.iterdir()) == [".partial"]
    kept = sorted(p.name for p in (out / ".partial").iterdir() if p.name.startswith("chunk-"))
    assert kept == ["chunk-000000.json.gz", "chunk-000001.json.gz"]
    monkeypatch.undo()
    capsys.readouterr()
    assert cli.main(["evaluate", str(path), "--out", str(out), "--json"]) == 0
    assert "resuming: 2 of 2 chunks already finished" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == sorted(evaluate.OUTPUT_NAMES)
