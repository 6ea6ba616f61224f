"""Ctrl-C and SIGTERM end every command, at any moment, with one line on stderr and status 130 (143),
never a traceback and never a missed signal; the finished work of a study is kept and said so.

The commands run as users run them, through the ``pb-gym`` console script. A moment is counted from
when pb-gym's own code runs: its entry point takes SIGTERM first thing, which the interpreter alone
does not (``/proc/PID/status``, ``SigCgt``), so the moments are the same whatever the machine's load;
a signal during the interpreter's own start-up, before any of pb-gym runs, is Python's. The moments
are drawn from a seeded generator; the ``slow`` variant draws many more.
"""

import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repo_paths import run_python  # noqa: E402

PB_GYM = str(Path(sys.executable).parent / "pb-gym")
CONFIG = "sessions: 20000\nhands: 200\nchunk_sessions: 2000\nseed: 3\nsystems: [{type: flat}]\n"
WINDOW_S = 3.0
"""The moments are drawn from the first seconds of pb-gym's code: imports, loading (or compiling) the
kernels, then dealing."""
MISSED_S = 60.0
"""A command still running this long after its signal has missed it (they end within a second)."""

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")


def _runs_our_code(pid: int) -> bool:
    """Whether the process has entered pb-gym's entry point: it catches SIGTERM."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:  # (it has ended)
        return True
    caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)$", status, re.MULTILINE).group(1), 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def _signalled(argv: list[str], delay: float, signum: int) -> subprocess.CompletedProcess:
    child = subprocess.Popen([PB_GYM, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not _runs_our_code(child.pid):
            time.sleep(0.0005)
        time.sleep(delay)
        child.send_signal(signum)
        out, err = child.communicate(timeout=MISSED_S)
    finally:  # (a missed signal: the command must not run on beside the other tests)
        if child.poll() is None:
            child.kill()
            child.communicate()
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


def _check(done: subprocess.CompletedProcess, signum: int, finished: str | None, delay: float) -> None:
    """One line says how it ended, and nothing else on stderr but progress and compile notes."""
    where = f"{' '.join(done.args)} at {delay:.3f} s: status {done.returncode}, stderr {done.stderr!r}"
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, where
    if done.returncode in (0, -signum) and finished is not None and finished in done.stdout:
        return  # it had finished before the signal came (a shell reports -SIGINT as 130 too)
    word = "interrupted" if signum == signal.SIGINT else r"terminated \(SIGTERM\)"
    assert done.returncode == (130 if signum == signal.SIGINT else 143), where
    last = done.stderr.splitlines()[-1]
    assert re.fullmatch(rf"pb-gym: {word}(; .+)?", last), where
    others = done.stderr.splitlines()[:-1]
    assert all(line.startswith(("pb-gym: compiling", "simulate: ", "study: ")) for line in others), where


def _moments(seed: int, n: int) -> list[float]:
    rng = random.Random(seed)
    return [0.0] + [rng.uniform(0.0, WINDOW_S) for _ in range(n - 1)]


def _commands(tmp_path: Path) -> dict[str, tuple[list[str], str | None]]:
    config = tmp_path / "study.yaml"
    config.write_text(CONFIG)
    return {
        "simulate": (["simulate", "--hands", "10000000000", "--tables", "64"], None),
        "evaluate": (["evaluate", str(config), "--out", str(tmp_path / "out")], "wrote "),
        "odds": (["odds", "--decks", "8"], "house edge"),
    }


def _interrupt_each(tmp_path: Path, command: str, moments: list[float], signum: int) -> None:
    argv, finished = _commands(tmp_path)[command]
    for i, delay in enumerate(moments):
        if command == "evaluate":  # each run in a folder of its own: the kept chunks are counted
            argv = [*argv[:-1], str(tmp_path / f"out-{i}")]
        done = _signalled(argv, delay, signum)
        _check(done, signum, finished, delay)
        kept = re.search(r"(\d+) finished chunk\(s\) are kept in (\S+);", done.stderr)
        if kept:
            assert len(list(Path(kept.group(2)).glob("chunk-*"))) == int(kept.group(1)), done.stderr


@pytest.mark.parametrize("command", ["simulate", "evaluate", "odds"])
def test_ctrl_c_at_random_moments_ends_the_command_with_one_line(tmp_path, command):
    _interrupt_each(tmp_path, command, _moments(seed=len(command), n=4), signal.SIGINT)


@pytest.mark.parametrize("command", ["simulate", "evaluate"])
def test_sigterm_at_random_moments_ends_the_command_with_one_line(tmp_path, command):
    _interrupt_each(tmp_path, command, _moments(seed=7 * len(command), n=2), signal.SIGTERM)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["simulate", "evaluate", "odds"])
def test_ctrl_c_at_many_random_moments_ends_the_command_with_one_line(tmp_path, command):
    _interrupt_each(tmp_path, command, _moments(seed=100 + len(command), n=40), signal.SIGINT)


def _status_and_stderr(code: str) -> tuple[int, str]:
    child = run_python("-c", code)
    return child.returncode, child.stderr


def test_ctrl_c_inside_a_c_callback_is_not_dropped():
    """A KeyboardInterrupt raised in a C callback (llvmlite's object cache calls back into Python while
    numba loads or compiles a kernel) is printed by Python as "Exception ignored" and dropped; the
    command then ran on. It is one line and status 130 like any other Ctrl-C."""
    code = (
        "import ctypes, sys, pb_gym.experiments.cli as cli\n"
        "def interrupt():\n    raise KeyboardInterrupt\n"
        "callback = ctypes.CFUNCTYPE(None)(interrupt)\n"
        "run = cli._run\n"
        "def interrupted_run(argv):\n    callback()\n    return run(argv)\n"
        "cli._run = interrupted_run\n"
        "sys.exit(cli.main(['odds', '--decks', '1']))\n"
    )
    assert _status_and_stderr(code) == (130, "pb-gym: interrupted\n")


def test_an_error_caused_by_a_dropped_interrupt_is_reported_as_the_interruption():
    """Once a signal came, whatever error ends the command is the interruption's doing (numba, its
    compile interrupted inside a callback, later fails with ``RuntimeError: no compiled object``):
    one line and status 130, not that error's traceback."""
    code = (
        "import os, signal, sys, pb_gym.experiments.cli as cli\n"
        "def broken(argv):\n"
        "    signal.signal(signal.SIGINT, lambda *a: None)\n"  # (the signal's exception dropped)
        "    from pb_gym import interrupts\n"
        "    interrupts._received = signal.SIGINT\n"
        "    raise RuntimeError('no compiled object yet')\n"
        "cli._run = broken\n"
        "sys.exit(cli.main(['odds']))\n"
    )
    assert _status_and_stderr(code) == (130, "pb-gym: interrupted\n")


def test_a_signal_dropped_while_a_command_runs_stops_it_at_its_next_progress_update():
    """A signal whose exception was dropped is raised again at the next progress update: ``simulate``
    stops instead of dealing on."""
    code = (
        "import signal, sys, pb_gym.experiments.cli as cli\n"
        "from pb_gym import interrupts, progress\n"
        "update = progress.Progress.update\n"
        "def dropped_once(self, n, chunk=None):\n"
        "    if interrupts.received() is None:\n"
        "        interrupts._received = signal.SIGINT\n"  # (as if its exception had been dropped)
        "    return update(self, n, chunk)\n"
        "progress.Progress.update = dropped_once\n"
        "sys.exit(cli.main(['simulate', '--hands', '10000000000', '--tables', '64']))\n"
    )
    assert _status_and_stderr(code) == (130, "pb-gym: interrupted\n")
