"""A finished evaluate run never loses its report over a figure matplotlib cannot draw: the figure
becomes a placeholder with a NOTE naming it and the reason, and every other output is written. The
fan figure, drawn aside by a forked copy, is the same file as one drawn in turn."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from pb_gym.experiments import evaluate as E
from pb_gym.experiments import evaluate_report as ER
from pb_gym.experiments import plotting


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


@pytest.fixture
def report(tmp_path):
    """A small evaluate report, with its figures drawn one after the other (no fork)."""
    path = tmp_path / "c.yaml"
    path.write_text("sessions: 40\nhands: 60\nsystems: [{type: flat}, {type: martingale}]\n")
    return E.run_study(E.load(str(path), E.StudyConfig))


def test_the_fans_drawn_aside_are_the_same_bytes(tmp_path, monkeypatch, report):
    """The fan figure drawn by a forked copy while the others are drawn here (Linux) is the file
    drawn in turn, byte for byte; so are the others."""
    for folder in ("in_turn", "aside"):
        (tmp_path / folder).mkdir()
    monkeypatch.setattr(plotting, "FORK", False)
    ER.plot(report, tmp_path / "in_turn")
    monkeypatch.setattr(plotting, "FORK", sys.platform.startswith("linux"))
    ER.plot(report, tmp_path / "aside")
    for name in ("bankroll_paths.png", "final_bankrolls.png", "ev_per_unit_wagered.png"):
        assert (tmp_path / "aside" / name).read_bytes() == (tmp_path / "in_turn" / name).read_bytes()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a figure is drawn aside on Linux only")
def test_a_figure_the_copy_could_not_draw_is_drawn_here_or_its_error_raised_here(tmp_path):
    parent = os.getpid()
    figure = tmp_path / "figure.txt"

    def draw_here_only():  # fails in the forked copy, works in this process
        if os.getpid() != parent:
            raise ValueError("not in the copy")
        figure.write_text(str(os.getpid()))

    aside = plotting.Aside(draw_here_only)
    assert aside.pid is not None and aside.pid != parent
    aside.join()
    assert figure.read_text() == str(parent)

    def never():
        raise ValueError("degenerate data")

    aside = plotting.Aside(never)
    with pytest.raises(ValueError, match="degenerate data"):  # raised here, with its message
        aside.join()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a figure is drawn aside on Linux only")
def test_a_cancelled_figure_is_never_written(tmp_path):
    figure = tmp_path / "figure.txt"

    def slow():
        time.sleep(2)
        figure.write_text("late")

    aside = plotting.Aside(slow)
    aside.cancel()
    assert aside.pid is None
    time.sleep(2.5)
    assert not figure.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a figure is drawn aside on Linux only")
def test_a_figure_drawn_aside_while_matplotlib_is_still_being_imported_finishes(tmp_path):
    """A fresh process that starts matplotlib's import on a thread (``preload``) and at once draws a
    figure aside: the copy must not be forked mid-import (it would wait forever on the import's lock)."""
    import subprocess

    figure = tmp_path / "figure.png"
    code = (
        "from pb_gym.experiments import plotting\n"
        "plotting.preload()\n"
        "def draw():\n"
        "    plt = plotting.pyplot()\n"
        "    fig, ax = plt.subplots()\n"
        f"    plotting.save(fig, {str(figure)!r})\n"
        "aside = plotting.Aside(draw)\n"
        "aside.join()\n"
        "print(aside.pid)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None" and figure.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a figure is drawn aside on Linux only")
def test_a_figure_is_drawn_in_turn_where_no_process_can_be_forked(tmp_path, monkeypatch):
    """A fork refused (a limit on processes or memory) costs the figure nothing: it is drawn here."""
    figure = tmp_path / "figure.txt"

    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    aside = plotting.Aside(lambda: figure.write_text("drawn"))
    assert aside.pid is None and not figure.exists()
    aside.join()
    assert figure.read_text() == "drawn"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a figure is drawn aside on Linux only")
def test_a_copy_that_does_not_finish_in_time_is_stopped_and_the_figure_drawn_here(tmp_path):
    parent = os.getpid()
    figure = tmp_path / "figure.txt"

    def stuck_in_the_copy():
        if os.getpid() != parent:
            time.sleep(60)  # (as a copy waiting on a lock no thread of it will let go)
        figure.write_text(str(os.getpid()))

    aside = plotting.Aside(stuck_in_the_copy)
    copy = aside.pid
    started = time.monotonic()
    aside.join(timeout=0.5)
    assert time.monotonic() - started < 30 and figure.read_text() == str(parent)
    with pytest.raises(ChildProcessError):  # stopped and reaped
        os.waitpid(copy, os.WNOHANG)
