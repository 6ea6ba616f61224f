"""Hostile config text and environment: every command answers with one line and exit 2, never a
traceback (a recursive alias, YAML 1.1's base-60/hex/octal numbers, bad thread counts)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pb_gym.experiments import cli
from pb_gym.experiments.common.yaml_config import ConfigError, parse_yaml

import chunk_tasks
from repo_paths import ROOT, run_python  # noqa: E402


@pytest.mark.parametrize(
    "argv",
    [["evaluate"], ["train"], ["experiment", "counting"], ["experiment", "ruin"], ["experiment", "atlas"]],
)
def test_a_recursive_alias_is_a_config_error_in_every_command(tmp_path, capsys, argv):
    path = tmp_path / "c.yaml"
    path.write_text("systems: &a [*a]\n")
    with pytest.raises(SystemExit) as caught:
        cli.main([*argv, str(path), "--out", str(tmp_path / "out")])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert (
        "line 1: the alias *a is inside the list or mapping &a names (a recursive alias: it would never end)"
    ) in err


@pytest.mark.parametrize(
    "text,value",
    [
        ("seed: 1:30", "'1:30'"),
        ("seed: 0x1F", "'0x1F'"),
        ("seed: 017", "'017'"),
        ("seed: 0b11", "'0b11'"),
        ("bankroll: 1:30.5", "'1:30.5'"),
        ("systems: [0x10]", "'0x10'"),
    ],
)
def test_yaml_numbers_a_config_never_means_are_refused_naming_the_key(text, value):
    with pytest.raises(ConfigError) as caught:
        parse_yaml(text + "\n", "c.yaml")
    message = str(caught.value)
    assert message.startswith(
        f"c.yaml: line 1: {value} is read by YAML as a base-60, hex, octal or "
        "binary number; write it in decimal, or quote it for a string"
    )
    if not text.startswith("systems"):
        assert message.endswith(f"(key {text.split(':')[0]!r})")


def test_decimal_numbers_and_aliases_still_load():
    assert parse_yaml("seed: 12\nn: 1_000\nx: -3\ny: 0\nz: 1.5e+3\na: &b [1]\nc: *b\n") == {
        "seed": 12,
        "n": 1000,
        "x": -3,
        "y": 0,
        "z": 1500.0,
        "a": [1],
        "c": [1],
    }


@pytest.mark.parametrize(
    "name,value",
    [
        ("PB_GYM_NUM_THREADS", "abc"),
        ("PB_GYM_NUM_THREADS", "0"),
        ("NUMBA_NUM_THREADS", "0"),
        ("NUMBA_NUM_THREADS", "abc"),
        ("PB_GYM_NUM_THREADS", "100000"),
    ],
)
def test_a_bad_thread_count_in_the_environment_is_one_line_exit_2(name, value):
    done = run_python("-m", "pb_gym.experiments.cli", "odds", "--json", env={name: value})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        f"pb-gym: error: {name}={value!r} is not allowed; allowed: an integer from 1 to "
    )
    assert done.stderr.count("\n") == 1 and not done.stdout


@pytest.mark.parametrize(
    "name,value", [("PB_GYM_NUM_THREADS", "0"), ("PB_GYM_NUM_THREADS", "abc"), ("NUMBA_NUM_THREADS", "abc")]
)
def test_a_bad_thread_count_is_named_where_the_library_reads_it(name, value):
    """The library reads the thread count when a batch is large enough to split: a bad value is then a
    ValueError naming the variable and what it takes. (numba itself refuses a NUMBA_NUM_THREADS
    below 1 when it is imported, with its own one-line ValueError.)"""
    done = run_python(
        "-c", "from pb_gym import Rules, engine; engine.init(Rules(), 4096, seed=0)", env={name: value}
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ValueError: {name}={value!r} is not allowed; allowed: an integer from 1 to ")
    assert "per core of this machine's" in last


@pytest.mark.parametrize("counts", [[2**62] * 13, [1e300] * 13, [float("inf")] * 13, [10**9 + 1] + [4] * 12])
def test_exact_odds_refuse_counts_that_overflow_int64(counts):
    import numpy as np

    from pb_gym import exact

    with pytest.raises(
        ValueError,
        match=r"^composition counts must be at most 1,000,000,000 cards of a "
        r"rank \(larger counts overflow",
    ):
        exact.expected_values(np.array(counts))
    assert exact.expected_values(np.full(13, 10**9))[0] == pytest.approx(-0.0106, abs=1e-4)


def test_sigterm_exits_143_with_the_rerun_hint_and_the_run_resumes(tmp_path):
    import signal
    import time

    path = tmp_path / "long.yaml"
    path.write_text("sessions: 200000\nhands: 200\nchunk_sessions: 2000\nsystems: [{type: flat}]\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # (its chunks after the first held: it is still running when the signal comes, on any machine)
    held = [sys.executable, "-c", chunk_tasks.HELD_EVALUATION, str(ROOT / "tests")]
    process = subprocess.Popen(
        [*held, "evaluate", str(path), "--out", str(out), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600  # (a cold kernel cache compiles first: minutes on a busy machine)
    while not list(out.glob(".partial/chunk-*.json.gz")) and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143, err
    assert re.fullmatch(
        r"pb-gym: terminated \(SIGTERM\); 1 finished chunk\(s\) are kept in .*\.partial; rerun the same "
        r"command to compute only the others",
        err.splitlines()[-1],
    )
    assert "Traceback" not in err and err.count("finished chunk(s)") == 1


def test_a_closed_stdout_and_an_ascii_stdout_are_not_tracebacks(tmp_path):
    closed = subprocess.run(
        f"{shlex.quote(sys.executable)} -m pb_gym.experiments.cli odds >&-",  # (a clone path with spaces)
        shell=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert closed.returncode == 0 and closed.stderr == "", closed.stderr
    path = tmp_path / "u.yaml"
    path.write_text(
        'sessions: 20\nhands: 20\nsystems: [{type: flat, name: "syst\u00e8me"}]\n', encoding="utf-8"
    )
    ascii_ = run_python(
        "-m", "pb_gym.experiments.cli", "evaluate", str(path), env={"PYTHONIOENCODING": "ascii"}, cwd=tmp_path
    )
    assert ascii_.returncode == 0, ascii_.stderr
    assert "syst\\xe8me" in ascii_.stdout and "Traceback" not in ascii_.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pool_workers_exit_when_the_parent_is_killed_9(tmp_path):
    """``--backend processes``: kill -9 of the main process; its workers and the resource tracker
    exit within seconds instead of computing on for nobody."""
    import signal
    import time

    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import chunk_tasks; "
        "from pb_gym.experiments.common import scale; "
        "scale.run(chunk_tasks.sleeps, scale.plan(4, 1, 0), backend='processes', workers=2)"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code, str(ROOT / "tests")],
        env={**os.environ, "PYTHONPATH": str(ROOT), "PB_GYM_TEST_DIR": str(tmp_path)},
    )

    def descendants(pid: int) -> set[int]:
        found, todo = set(), [pid]
        while todo:
            one = todo.pop()
            try:
                children = Path(f"/proc/{one}/task/{one}/children").read_text().split()
            except OSError:
                continue
            found.update(int(c) for c in children)
            todo.extend(int(c) for c in children)
        return found

    deadline = time.monotonic() + 120
    children: set[int] = set()
    while len(children) < 3 and time.monotonic() < deadline:  # two workers and the resource tracker
        time.sleep(0.5)
        children = descendants(parent.pid)
    assert len(children) >= 3, children
    while len(list(tmp_path.glob("started-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)  # (until both workers run a chunk: their initializers have run)
    assert len(list(tmp_path.glob("started-*"))) == 2
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 30
    alive = children
    while alive and time.monotonic() < deadline:
        time.sleep(0.5)
        alive = {
            pid
            for pid in children
            if Path(f"/proc/{pid}").exists()
            and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
        }
    assert not alive, alive


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the lock is Linux's abstract socket")
def test_an_output_folder_is_held_until_the_outputs_are_in_place(tmp_path):
    from pb_gym.experiments.common import outputs

    out = tmp_path / "out"
    code = (
        "import sys; from pb_gym.experiments.common import outputs\n"
        "try:\n    outputs.prepare(sys.argv[1], ['report.json'])\n"
        "except outputs.OutputError as e:\n    print(e)\nelse:\n    print('free')"
    )

    def other_process() -> str:
        return run_python("-c", code, str(out), timeout=120).stdout.strip()

    destination = outputs.prepare(out, ["report.json"])
    assert other_process() == (
        f"--out {out}: another pb-gym run is writing to this folder now; wait "
        "for it to finish, or choose another folder"
    )
    assert outputs.prepare(out, ["report.json"]) is not None  # (re-entrant within the process)
    with destination.staging() as staged:
        (staged / "report.json").write_text("{}")
    assert other_process() == "free"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the lock is Linux's abstract socket")
def test_a_second_run_into_a_running_runs_folder_is_refused_and_a_dead_runs_is_taken_over(tmp_path):
    import signal
    import time

    path = tmp_path / "long.yaml"
    path.write_text("sessions: 200000\nhands: 200\nchunk_sessions: 2000\nsystems: [{type: flat}]\n")
    small = tmp_path / "small.yaml"
    small.write_text("sessions: 20\nhands: 20\nsystems: [{type: flat}]\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pb_gym.experiments.cli", "evaluate"]
    held = [sys.executable, "-c", chunk_tasks.HELD_EVALUATION, str(ROOT / "tests"), "evaluate"]
    first = subprocess.Popen(  # (its chunks after the first held: still running when the others come)
        [*held, str(path), "--out", str(out), "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 600  # (a cold kernel cache compiles first)
        while not list(out.glob(".partial/chunk-*.json.gz")) and time.monotonic() < deadline:
            time.sleep(0.2)
        for extra in ([], ["--no-resume"]):
            second = subprocess.run(
                [*command, str(path), "--out", str(out), "--json", *extra],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert second.returncode == 2, second.stderr
            assert second.stderr == (
                f"pb-gym evaluate: error: --out {out}: another pb-gym run is "
                "writing to this folder now; wait for it to finish, or choose "
                "another folder\n"
            )
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    third = subprocess.run(
        [*command, str(small), "--out", str(out), "--json", "--no-resume"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert third.returncode == 0, third.stderr
    assert (out / "report.json").is_file()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_config_that_is_a_named_pipe_nobody_writes_is_refused_not_waited_for(tmp_path, monkeypatch):
    import threading

    from pb_gym.experiments.common import yaml_config as config

    monkeypatch.setattr(config, "PIPE_SECONDS", 0.5)
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"a named pipe that nothing wrote a config to within 0.5 s"):
        config.read_config_text(fifo)

    def write() -> None:
        with open(fifo, "w") as handle:
            handle.write("seed: 3\n")

    monkeypatch.setattr(config, "PIPE_SECONDS", 120.0)  # (the writer may wait long for a core)
    writer = threading.Thread(target=write)
    writer.start()
    assert config.read_config_text(fifo) == "seed: 3\n"  # (as with <(...)): read what is written
    writer.join()
