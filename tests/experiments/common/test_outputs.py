"""Output folders and resume: --out checked before computing, a run's files moved into place together
(never a report without its plots, never a mix with the previous run's), finished chunks kept in
OUT/.partial so that an interrupted study resumes, bit for bit, and refuses to mix another config's."""

import json
import os
import sys

import numpy as np
import pytest
import yaml

from pb_gym.experiments import cli, evaluate
from pb_gym.experiments.common import chunk_store, outputs, scale

import chunk_tasks

STUDY = {
    "name": "resume",
    "rules": {"decks": 8},
    "table": {"unit": 10, "minimum": 10, "maximum": 640},
    "bankroll": 1000,
    "sessions": 300,
    "hands": 40,
    "win_goal": 300,
    "seed": 9,
    "chunk_sessions": 100,
    "sample_paths": 2,
    "systems": [{"type": "flat"}, {"type": "martingale", "on_cap": "reset"}, {"type": "paroli"}],
}


@pytest.fixture
def study(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(STUDY))
    return path


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def _without_timings(path):
    data = json.loads(path.read_text())
    data.pop("timings")
    return data


# --------------------------------------------------------------------------------- the destination
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: "", r"--out '' is not allowed; allowed: a folder path"),
        (lambda tmp: "   ", r"--out '   ' is not allowed; allowed: a folder path"),
        (
            lambda tmp: (tmp / "file.txt").write_text("x") and str(tmp / "file.txt"),
            r"file.txt: exists and is not a folder",
        ),
        (
            lambda tmp: (tmp / "file.txt").write_text("x") and str(tmp / "file.txt" / "out"),
            r"file.txt/out: .*file.txt is not a folder",
        ),
        (
            lambda tmp: (
                (tmp / "mine").mkdir() or (tmp / "mine" / "notes.md").write_text("x") and str(tmp / "mine")
            ),
            r"the folder holds files this command does not write \(notes.md\); a new run "
            r"replaces its output folder as a whole",
        ),
    ],
)
def test_a_bad_out_is_refused_before_anything_is_computed(
    make, message, study, tmp_path, monkeypatch, capsys
):
    def never(*args, **kwargs):
        raise AssertionError("the study ran")

    monkeypatch.setattr(evaluate, "run_study", never)
    out = make(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["evaluate", str(study), "--out", out])
    assert exit_info.value.code == 2
    assert __import__("re").search(message, capsys.readouterr().err)
    if (tmp_path / "mine").exists():
        assert _names(tmp_path / "mine") == ["notes.md"]  # untouched


@pytest.mark.parametrize("out", [".", "..", "./"])
def test_the_current_folder_is_refused(out, study, tmp_path, monkeypatch):
    here = tmp_path / "empty" / "here"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    with pytest.raises(
        outputs.OutputError,
        match=r"is the current folder or one above it, which a run "
        r"replaces as a whole; allowed: a folder inside it",
    ):
        evaluate.main(str(study), out, as_json=True)


def test_a_link_to_a_folder_elsewhere_is_filled_through_the_link(study, tmp_path):
    scratch = tmp_path / "scratch" / "run"
    scratch.mkdir(parents=True)
    (tmp_path / "link").symlink_to(scratch)
    evaluate.main(str(study), str(tmp_path / "link"), as_json=True)
    assert (tmp_path / "link").is_symlink() and _names(scratch) == sorted(evaluate.OUTPUT_NAMES)


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2-exchange", "two-renames"])
def test_outputs_are_written_together_and_a_rerun_replaces_them_all(exchange, study, tmp_path, monkeypatch):
    swaps = []
    real = outputs._exchange

    def swap(a, b):
        swaps.append(real(a, b) if exchange else False)
        return swaps[-1]

    monkeypatch.setattr(outputs, "_exchange", swap)
    out = tmp_path / "out"
    evaluate.main(str(study), str(out), as_json=True)
    assert _names(out) == sorted(evaluate.OUTPUT_NAMES)
    umask = os.umask(0o022)
    os.umask(umask)
    # not mkdtemp's private mode: a folder's usual mode (0700 too under a umask of 077)
    assert oct(out.stat().st_mode & 0o777) == oct(0o777 & ~umask)
    first = (out / "systems.csv").read_text()
    # an earlier run of the same command may be overwritten: every file is replaced, none is left
    (out / "paths.json").write_text("from an earlier run")
    (out / "bankroll_paths.png").unlink()
    evaluate.main(str(study), str(out), as_json=True)
    assert _names(out) == sorted(evaluate.OUTPUT_NAMES)
    assert (out / "systems.csv").read_text() == first
    assert (out / "paths.json").read_text() != "from an earlier run"
    assert _names(tmp_path) == ["out", "study.yaml"]  # no staging or old folder left beside it
    if sys.platform.startswith("linux"):
        # both runs swapped atomically (or renamed twice) the folder holding their finished chunks
        assert swaps == [exchange, exchange]


@pytest.mark.parametrize("fails_in", ["plot", "write_outputs"])
def test_a_failure_while_writing_leaves_the_previous_outputs_whole(fails_in, study, tmp_path, monkeypatch):
    out = tmp_path / "out"
    evaluate.main(str(study), str(out), as_json=True)
    before = {name: (out / name).read_bytes() for name in _names(out)}
    # main calls write_outputs, which calls plot: each is patched where its caller looks it up
    module = evaluate if fails_in == "write_outputs" else sys.modules[evaluate.write_outputs.__module__]
    real = getattr(module, fails_in)

    def broken(report, folder, *fans):
        if fails_in == "write_outputs":
            real(report, folder, *fans)  # every file written, then the failure
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(module, fails_in, broken)
    data = dict(STUDY, seed=10)
    study.write_text(yaml.safe_dump(data))
    with pytest.raises(OSError, match="No space left"):
        evaluate.main(str(study), str(out), as_json=True)
    assert {name: (out / name).read_bytes() for name in _names(out) if name != ".partial"} == before
    assert len(list((out / ".partial").glob("chunk-*.json.gz"))) == 3  # a rerun only writes the files
    assert _names(tmp_path) == ["out", "study.yaml"]
    # and in a new folder: no report without its plots, only the finished chunks
    with pytest.raises(OSError, match="No space left"):
        evaluate.main(str(study), str(tmp_path / "new"), as_json=True)
    assert _names(tmp_path / "new") == [".partial"]


def test_folders_left_by_a_run_killed_while_writing_are_removed_by_the_next(study, tmp_path):
    import socket

    # a pid no process has: above the largest Linux allows (2**22; a freed pid may be taken again,
    # by any process or thread of a busy machine, while the test runs)
    dead = 2**22 + 1
    host = socket.gethostname()
    left = [tmp_path / f".out.staging-{host}-{dead}-abc", tmp_path / f".out.old-{host}-{dead}-x"]
    alive = [
        tmp_path / f".out.staging-{host}-{os.getpid()}-abc",  # a running process's
        tmp_path / f".out.staging-otherhost-{dead}-abc",
    ]  # another host's: not judged here
    for folder in left + alive:
        folder.mkdir()
        (folder / "report.json").write_text("{}")
    evaluate.main(str(study), str(tmp_path / "out"), as_json=True)
    assert not any(folder.exists() for folder in left) and all(folder.exists() for folder in alive)


def test_files_that_appear_during_the_run_are_not_lost(study, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    real = evaluate.run_study

    def meanwhile(*args, **kwargs):
        (out / "notes.md").write_text("mine")
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluate, "run_study", meanwhile)
    with pytest.raises(
        outputs.OutputError,
        match=r"files this command does not write appeared there "
        r"\(notes.md\); nothing was replaced, and this run's "
        r"outputs are in .*out.new",
    ):
        evaluate.main(str(study), str(out), as_json=True)
    assert _names(out) == [".partial", "notes.md"]
    assert _names(tmp_path / "out.new") == sorted(evaluate.OUTPUT_NAMES)


# ------------------------------------------------------------------------------------------ resume
def test_the_chunk_codec_is_exact():
    value = {
        "a": np.arange(6, dtype=np.int64).reshape(2, 3),
        3: (np.float64(0.1), 1 / 3),
        "nan": float("nan"),
        "f32": np.array([1.5, np.inf], dtype=np.float32),
        "list": [True, None, "x", np.bool_(True), np.int32(-7)],
        "empty": np.zeros((0, 4)),
    }
    back = chunk_store.decode(json.loads(json.dumps(chunk_store.encode(value))))
    assert back.keys() == value.keys() and isinstance(back[3], tuple)
    for key in ("a", "f32", "empty"):
        assert back[key].dtype == value[key].dtype and back[key].shape == value[key].shape
        assert back[key].tobytes() == value[key].tobytes()
    assert type(back[3][0]) is np.float64 and back[3][0] == 0.1 and back[3][1] == 1 / 3
    assert np.isnan(back["nan"]) and back["list"][:3] == [True, None, "x"]
    assert type(back["list"][4]) is np.int32 and back["list"][4] == -7
    with pytest.raises(TypeError, match="holds a set"):
        chunk_store.encode({1, 2})


def test_an_interrupted_run_resumes_computing_only_the_missing_chunks(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PB_GYM_INTERRUPT_AT", "2")
    chunks = scale.plan(10, 2, 7)
    store = chunk_store.ChunkStore(tmp_path / ".partial", {"study": "test", "n": 10})
    with pytest.raises(KeyboardInterrupt, match=r"^2 finished chunk\(s\) are kept in .*\.partial; rerun"):
        scale.run(chunk_tasks.interrupted_after, chunks, store=store)
    assert _names(tmp_path / ".partial") == ["chunk-000000.json.gz", "chunk-000001.json.gz", "run.json"]
    monkeypatch.delenv("PB_GYM_INTERRUPT_AT")
    ran = []
    store = chunk_store.ChunkStore(tmp_path / ".partial", {"study": "test", "n": 10})
    resumed = scale.run(chunk_tasks.sum_of_draws, chunks, progress=lambda c: ran.append(c.index), store=store)
    assert ran == [2, 3, 4]
    assert resumed == scale.run(chunk_tasks.sum_of_draws, chunks)
    assert "resuming: 2 of 5 chunks already finished" in capsys.readouterr().err
    # damaged chunk files (not gzip, cut short) are computed again, not trusted
    (tmp_path / ".partial" / "chunk-000003.json.gz").write_text("{")
    whole = (tmp_path / ".partial" / "chunk-000001.json.gz").read_bytes()
    (tmp_path / ".partial" / "chunk-000001.json.gz").write_bytes(whole[: len(whole) // 2])
    ran.clear()
    assert (
        scale.run(
            chunk_tasks.sum_of_draws,
            chunks,
            progress=lambda c: ran.append(c.index),
            store=chunk_store.ChunkStore(tmp_path / ".partial", {"study": "test", "n": 10}),
        )
        == resumed
    )
    assert ran == [1, 3]


@pytest.mark.parametrize("backend", ["serial", "threads"])
def test_an_interrupted_study_resumes_bit_for_bit(study, tmp_path, monkeypatch, capsys, backend):
    """Ctrl-C in the third chunk: the chunks finished by then are kept (serially: the first two; on
    two threads, chunk 3 starts once one of them has finished, and the other is stopped), and a rerun
    computes only the others, to the same report."""
    reference = tmp_path / "reference"
    evaluate.main(str(study), str(reference), as_json=True)
    out = tmp_path / "out"
    real, ran = evaluate.run_chunk, []

    def interrupted(config_data, chunk, show_progress=False):
        if chunk.index == 2:
            raise KeyboardInterrupt  # Ctrl-C in the third chunk
        return real(config_data, chunk, show_progress)

    monkeypatch.setattr(evaluate, "run_chunk", interrupted)
    # (two threads whatever the cores: chunk 3 starts only once chunk 1 or 2 has finished)
    command = ["evaluate", str(study), "--out", str(out), "--backend", backend]
    command += ["--workers", "2"] if backend == "threads" else []
    assert cli.main(command) == 130  # Ctrl-C: status 130
    assert _names(out) == [".partial"]  # no report: only the finished chunks
    kept = [name for name in _names(out / ".partial") if name.startswith("chunk-")]
    if backend == "serial":
        assert kept == ["chunk-000000.json.gz", "chunk-000001.json.gz"]
    else:
        assert kept in (
            ["chunk-000000.json.gz"],
            ["chunk-000001.json.gz"],
            ["chunk-000000.json.gz", "chunk-000001.json.gz"],
        )

    def counted(config_data, chunk, show_progress=False):
        ran.append(chunk.index)
        return real(config_data, chunk, show_progress)

    monkeypatch.setattr(evaluate, "run_chunk", counted)
    capsys.readouterr()
    assert cli.main(command + ["--json"]) == 0
    assert sorted(ran) == [i for i in range(3) if f"chunk-{i:06d}.json.gz" not in kept]
    assert f"resuming: {len(kept)} of 3 chunks already finished" in capsys.readouterr().err
    assert _names(out) == sorted(evaluate.OUTPUT_NAMES)  # .partial is gone with the run finished
    assert _without_timings(out / "report.json") == _without_timings(reference / "report.json")
    for name in ("systems.csv", "paths.json"):
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


def test_a_resume_with_another_config_refuses_to_mix_the_chunks(study, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    real = chunk_tasks.lose_evaluate_chunk(monkeypatch)
    with pytest.raises(SystemExit) as exit_info:  # (serially: the chunks kept do not depend on timing)
        cli.main(["evaluate", str(study), "--out", str(out), "--backend", "serial"])
    assert exit_info.value.code == 1
    assert __import__("re").search(
        r"chunk 2/3 .* failed twice; the run is stopped and no report was written. Last error: "
        r"RuntimeError: worker lost. 1 finished chunk\(s\) are kept in .*out/.partial: rerun the same "
        r"command to compute only the others",
        capsys.readouterr().err,
    )
    monkeypatch.setattr(evaluate, "run_chunk", real)
    study.write_text(yaml.safe_dump(dict(STUDY, seed=10, hands=41)))
    for extra in ([], ["--resume"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["evaluate", str(study), "--out", str(out)] + extra)
        assert exit_info.value.code == 2
        assert __import__("re").search(
            r"out/.partial holds 1 finished chunk\(s\) of another run \(it differs in config.hands, "
            r"config.seed; .*\): they will not be mixed with this run's. Rerun with the config they "
            r"belong to to finish it, or pass --no-resume to discard them",
            capsys.readouterr().err,
        )
    assert _names(out / ".partial") == ["chunk-000000.json.gz", "run.json"]
    assert cli.main(["evaluate", str(study), "--out", str(out), "--no-resume", "--json"]) == 0
    assert "resuming" not in capsys.readouterr().err
    assert _names(out) == sorted(evaluate.OUTPUT_NAMES)


def test_resume_needs_an_out_folder(study, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["evaluate", str(study), "--resume"])
    assert exit_info.value.code == 2
    assert "--resume needs --out DIR: an unfinished run keeps its finished chunks in DIR/.partial" in (
        capsys.readouterr().err
    )
