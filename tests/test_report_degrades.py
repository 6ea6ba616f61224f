"""A finished evaluate run never loses its report over a figure matplotlib cannot draw: the figure
becomes a placeholder with a NOTE naming it and the reason, and every other output is written."""

from __future__ import annotations

import json

import pytest

from pb_gym.experiments import evaluate as E


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
    result = E.main(str(path), str(out), as_json=True)
    assert sorted(p.name for p in out.iterdir()) == sorted(E.OUTPUT_NAMES)
    assert json.loads((out / "report.json").read_text())["systems"]
    err = capsys.readouterr().err
    note = [line for line in err.splitlines() if line.startswith("NOTE: ") and "could not be drawn" in line]
    assert len(note) == 1 and all(name in note[0] for name in figures), err
    assert "placeholders written, the report and its tables are complete" in note[0]
    assert result["systems"]
    for name in E.OUTPUT_NAMES:
        if name.endswith(".png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
