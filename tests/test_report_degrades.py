"""A finished evaluate run never loses its report over a figure matplotlib cannot draw: the figure
becomes a placeholder with a NOTE naming it and the reason, and every other output is written. The
fan figure, drawn aside by a forked copy, is the same file as one drawn in turn."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
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
    """The fan figure drawn by a forked copy while the others are drawn here (Linux), its grid made
    ahead or not, is the file drawn in turn, byte for byte; so are the others."""
    for folder in ("in_turn", "aside", "made_ahead"):
        (tmp_path / folder).mkdir()
    monkeypatch.setattr(plotting, "FORK", False)
    ER.plot(report, tmp_path / "in_turn")
    monkeypatch.setattr(plotting, "FORK", sys.platform.startswith("linux"))
    ER.plot(report, tmp_path / "aside")
    figures = ER.figures_aside(len(report["systems"]))
    ER.plot(report, tmp_path / "made_ahead", ER.draw_figures(report, tmp_path / "made_ahead", figures))
    for name in ("bankroll_paths.png", "final_bankrolls.png", "ev_per_unit_wagered.png"):
        drawn = (tmp_path / "in_turn" / name).read_bytes()
        assert (tmp_path / "aside" / name).read_bytes() == drawn
        assert (tmp_path / "made_ahead" / name).read_bytes() == drawn


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="drawn aside on Linux only")


@linux_only
def test_a_figure_the_copy_could_not_draw_is_drawn_here_or_its_error_raised_here(tmp_path):
    parent = os.getpid()
    figure = tmp_path / "figure.txt"

    def draw_here_only(_prepared, data):  # fails in the forked copy, works in this process
        if os.getpid() != parent:
            raise ValueError("not in the copy")
        figure.write_text(f"{data} {os.getpid()}")

    aside = plotting.Aside(draw_here_only)
    assert aside.pid is not None and aside.pid != parent
    aside.draw("sent")
    aside.join()
    assert figure.read_text() == f"sent {parent}"

    def never(_prepared, _data):
        raise ValueError("degenerate data")

    aside = plotting.Aside(never)
    aside.draw()
    with pytest.raises(ValueError, match="degenerate data"):  # raised here, with its message
        aside.join()


@linux_only
def test_the_copy_prepares_before_the_data_come_and_finishes_with_what_it_prepared(tmp_path):
    ready = tmp_path / "prepared.txt"
    figure = tmp_path / "figure.txt"

    def prepare():
        ready.write_text(str(os.getpid()))
        return "grid"

    aside = plotting.Aside(lambda prepared, data: figure.write_text(f"{prepared} {data}"), prepare)
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:  # (before any data is sent)
        time.sleep(0.01)
    assert ready.read_text() == str(aside.pid)
    aside.draw({"fans": [1, 2]})
    aside.join()
    assert figure.read_text() == "grid {'fans': [1, 2]}"


@linux_only
def test_data_that_cannot_be_sent_to_the_copy_is_drawn_here(tmp_path):
    figure = tmp_path / "figure.txt"
    aside = plotting.Aside(lambda _prepared, data: figure.write_text(data()))
    aside.draw(lambda: "drawn")  # (a lambda does not pickle)
    assert aside.pid is None and not figure.exists()
    aside.join()
    assert figure.read_text() == "drawn"


@linux_only
def test_the_copy_gets_its_data_while_another_process_holds_the_pipe_open(tmp_path):
    """A process forked later (a worker, a user's own fork) inherits the pipe's writing end: the copy
    still knows when it has all of its data (it comes with its length), and draws."""
    parent = os.getpid()
    figure = tmp_path / "figure.txt"
    aside = plotting.Aside(lambda _prepared, data: figure.write_text(f"{data} {os.getpid()}"))
    holder = os.fork()
    if holder == 0:  # (holds every descriptor of the test process, the pipe's writing end with them)
        time.sleep(60)
        os._exit(0)
    try:
        copy = aside.pid
        aside.draw("sent")
        aside.join(timeout=30)
        assert figure.read_text() == f"sent {copy}" and copy != parent
    finally:
        os.kill(holder, 9)
        os.waitpid(holder, 0)


@linux_only
def test_a_copy_whose_maker_died_before_sending_leaves(tmp_path):
    """A process killed before it sent the data (the copy's pipe held open by another of its forks)
    leaves no copy waiting: the copy checks that its maker is there."""
    code = (
        "import os, sys, time\n"
        "from pb_gym.experiments import plotting\n"
        "aside = plotting.Aside(lambda prepared, data: None)\n"
        "holder = os.fork()\n"
        "if holder == 0:\n"
        "    os.close(1), os.close(2)\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        "print(aside.pid, holder, flush=True)\n"
        "os._exit(0)\n"
    )
    copy, holder = (int(pid) for pid in _printed_by_a_fresh_process(code))
    try:
        deadline = time.monotonic() + 30 * plotting.PARENT_CHECK_S
        while time.monotonic() < deadline and _running(copy):
            time.sleep(0.1)
        assert not _running(copy)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(holder, 9)


def _printed_by_a_fresh_process(code: str) -> list[str]:
    """The words ``python -c code`` prints (it must exit with status 0)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _figure_aside(figure) -> str:
    """Script lines: ``aside``, a figure drawn aside into ``figure`` (its grid made by the copy), sent
    its title; ``plotting`` is imported."""
    return (
        "from pb_gym.experiments import plotting\n"
        "def draw(prepared, title):\n"
        "    fig, ax = prepared\n"
        "    ax.set_title(title)\n"
        f"    plotting.save(fig, {str(figure)!r})\n"
        "aside = plotting.Aside(draw, lambda: plotting.pyplot().subplots())\n"
        "aside.draw('sent')\n"
    )


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (one nobody reaped still has a pid)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@linux_only
def test_a_cancelled_figure_is_never_written(tmp_path):
    figure = tmp_path / "figure.txt"

    def slow(_prepared, _data):
        time.sleep(2)
        figure.write_text("late")

    aside = plotting.Aside(slow)
    aside.draw()
    aside.cancel()
    assert aside.pid is None
    time.sleep(2.5)
    assert not figure.exists()


@linux_only
def test_matplotlib_is_imported_by_the_copy_that_draws_not_by_this_process(tmp_path):
    """A fresh process that draws a figure aside never imports matplotlib itself (its import, some
    0.3 s, is the copy's)."""
    figure = tmp_path / "figure.png"
    code = (
        "import sys\n"
        + _figure_aside(figure)
        + "aside.join()\n"
        + "print(aside.pid, 'matplotlib' in sys.modules)\n"
    )
    assert _printed_by_a_fresh_process(code) == ["None", "False"]
    assert figure.read_bytes()[:4] == b"\x89PNG"


@linux_only
def test_a_figure_made_aside_while_matplotlib_is_being_imported_is_drawn_by_the_copy(tmp_path):
    """A fresh process whose other thread is importing matplotlib when it makes a figure aside: the
    copy is not forked mid-import (it would wait forever on the import's lock, until the join's
    timeout drew the figure in the process)."""
    figure = tmp_path / "figure.png"
    code = (
        "import os, threading, time\n"
        "from pb_gym.experiments import plotting\n"
        "threading.Thread(target=plotting.pyplot).start()\n"
        "time.sleep(0.02)\n"
        + _figure_aside(figure)
        + "copy = aside.pid\n"
        + "started = time.monotonic()\n"
        + "aside.join(timeout=60)\n"
        + "print(copy is not None and copy != os.getpid(), time.monotonic() - started < 60)\n"
    )
    assert _printed_by_a_fresh_process(code) == ["True", "True"]
    assert figure.read_bytes()[:4] == b"\x89PNG"


@linux_only
def test_a_figure_is_drawn_in_turn_where_no_process_can_be_forked(tmp_path, monkeypatch):
    """A fork refused (a limit on processes or memory) costs the figure nothing: it is drawn here."""
    figure = tmp_path / "figure.txt"

    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    aside = plotting.Aside(lambda prepared, data: figure.write_text(f"{prepared} {data}"), lambda: "grid")
    assert aside.pid is None and aside.pipe is None
    aside.draw("drawn")
    assert not figure.exists()
    aside.join()
    assert figure.read_text() == "grid drawn"


@linux_only
def test_a_copy_that_does_not_finish_in_time_is_stopped_and_the_figure_drawn_here(tmp_path):
    parent = os.getpid()
    figure = tmp_path / "figure.txt"

    def stuck_in_the_copy(_prepared, _data):
        if os.getpid() != parent:
            time.sleep(60)  # (as a copy waiting on a lock no thread of it will let go)
        figure.write_text(str(os.getpid()))

    aside = plotting.Aside(stuck_in_the_copy)
    copy = aside.pid
    aside.draw()
    started = time.monotonic()
    aside.join(timeout=0.5)
    assert time.monotonic() - started < 30 and figure.read_text() == str(parent)
    with pytest.raises(ChildProcessError):  # stopped and reaped
        os.waitpid(copy, os.WNOHANG)


@linux_only
def test_a_run_that_fails_leaves_no_copy_drawing_behind(tmp_path, monkeypatch):
    """``pb-gym evaluate`` forks the fan figure's copy before the run: a run that fails stops it."""
    path = tmp_path / "c.yaml"
    path.write_text("sessions: 4\nhands: 10\nsystems: [{type: flat}]\n")
    copies, running = [], []
    made = ER.figures_aside

    def figures_aside(systems):
        copies.append(made(systems))
        return copies[-1]

    def fails(*_args, **_kwargs):
        assert copies and copies[0].pid is not None  # (the copy runs during the run)
        running.append(copies[0].pid)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(E, "figures_aside", figures_aside)
    monkeypatch.setattr(E, "run_study", fails)
    with pytest.raises(OSError, match="No space left"):
        E.main(str(path), str(tmp_path / "out"), as_json=True)
    assert copies[0].pid is None and copies[0].pipe is None
    with pytest.raises(ChildProcessError):  # stopped and reaped
        os.waitpid(running[0], os.WNOHANG)
    assert not (tmp_path / "out" / "bankroll_paths.png").exists()


@linux_only
def test_the_figures_beside_are_drawn_by_copies_of_the_copy(tmp_path):
    """Each figure beside is drawn by a process forked by the copy (its matplotlib shared, not
    imported again), while the copy draws its own."""
    parent = os.getpid()
    figure, other = tmp_path / "figure.txt", tmp_path / "other.txt"
    aside = plotting.Aside(
        lambda prepared, data: figure.write_text(f"{data} {os.getpid()}"),
        beside=[lambda data: other.write_text(f"{data} {os.getpid()} {os.getppid()}")],
    )
    copy = aside.pid
    aside.draw("sent")
    aside.join(timeout=60)
    assert figure.read_text() == f"sent {copy}"
    sent, drawer, its_maker = other.read_text().split()
    assert sent == "sent" and int(its_maker) == copy and int(drawer) not in (copy, parent)


@linux_only
def test_a_figure_beside_that_its_copy_could_not_draw_is_drawn_here_or_its_error_raised_here(tmp_path):
    parent = os.getpid()
    figure, other = tmp_path / "figure.txt", tmp_path / "other.txt"

    def here_only(data):
        if os.getpid() != parent:
            raise ValueError("not in a copy")
        other.write_text(f"{data} {os.getpid()}")

    aside = plotting.Aside(lambda prepared, data: figure.write_text(data), beside=[here_only])
    aside.draw("sent")
    aside.join(timeout=60)
    assert other.read_text() == f"sent {parent}" and figure.read_text() == "sent"

    def never(_data):
        raise ValueError("degenerate data")

    figure.unlink()
    aside = plotting.Aside(lambda prepared, data: figure.write_text(data), beside=[never])
    aside.draw("again")
    with pytest.raises(ValueError, match="degenerate data"):  # raised here, with its message
        aside.join(timeout=60)
    assert figure.read_text() == "again"  # (the copy's own figure first)


@linux_only
def test_a_figure_beside_is_drawn_by_the_copy_where_it_cannot_fork(tmp_path):
    figure, other = tmp_path / "figure.txt", tmp_path / "other.txt"

    def refuse_forks():  # (prepare runs in the copy alone)
        def refused():
            raise BlockingIOError(11, "Resource temporarily unavailable")

        os.fork = refused

    aside = plotting.Aside(
        lambda prepared, data: figure.write_text(str(os.getpid())),
        refuse_forks,
        beside=[lambda data: other.write_text(str(os.getpid()))],
    )
    copy = aside.pid
    aside.draw()
    aside.join(timeout=60)
    assert figure.read_text() == other.read_text() == str(copy)


@linux_only
def test_a_cancelled_copy_takes_its_figures_beside_along(tmp_path):
    started, late = tmp_path / "started.txt", tmp_path / "late.txt"

    def slow(_data):
        started.write_text(str(os.getpid()))
        time.sleep(2)
        late.write_text("late")

    aside = plotting.Aside(lambda prepared, data: None, beside=[slow])
    aside.draw()
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # (the pid is written before the file is closed)
    drawer = int(started.read_text())
    aside.cancel()
    deadline = time.monotonic() + 10
    while _running(drawer) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _running(drawer)
    time.sleep(2.5)
    assert not late.exists()
