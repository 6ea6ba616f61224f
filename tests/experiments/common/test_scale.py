"""Scale-out: chunk seeding, backends (serial, threads, processes, a local Dask cluster on loopback) giving
identical results, retries, and the error of a chunk that fails twice."""

import json
import re

import numpy as np
import pytest
import yaml

from pb_gym import parallel
from pb_gym.experiments import cli
from pb_gym.experiments.common import scale

import chunk_tasks

BACKENDS = [("serial", None), ("threads", 2), ("processes", 2), ("dask", 2)]


def test_plan_cuts_items_and_seeds_each_chunk_by_its_index():
    chunks = scale.plan(10, 3, 42)
    assert [(c.start, c.size) for c in chunks] == [(0, 3), (3, 3), (6, 3), (9, 1)]
    assert [tuple(c.seed.spawn_key) for c in chunks] == [(0,), (1,), (2,), (3,)]
    # chunk i's seed does not depend on how many chunks there are
    other = scale.plan(100, 3, 42)
    assert np.array_equal(chunks[2].seed.generate_state(4), other[2].seed.generate_state(4))
    # child seeds are the same at every call (a retried chunk deals the same hands)
    first = [s.generate_state(2) for s in chunks[1].child_seeds(3)]
    again = [s.generate_state(2) for s in chunks[1].child_seeds(3)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert "chunk 2/4 (items 3-5, seed entropy 42, spawn key (1,))" == chunks[1].describe()
    with pytest.raises(ValueError, match="chunk_size=0"):
        scale.plan(10, 0, 1)


@pytest.mark.parametrize("backend, workers", BACKENDS)
def test_backends_return_the_same_results_in_chunk_order(backend, workers):
    chunks = scale.plan(10, 3, 42)
    seen = []
    results = scale.run(
        chunk_tasks.sum_of_draws,
        chunks,
        backend,
        workers=workers,
        progress=lambda chunk: seen.append(chunk.index),
    )
    assert results == scale.run(chunk_tasks.sum_of_draws, chunks)
    assert [index for _, index in results] == [0, 1, 2, 3] and sorted(seen) == [0, 1, 2, 3]


@pytest.mark.parametrize("backend, workers", BACKENDS[:3])
def test_a_failing_chunk_is_retried(backend, workers, tmp_path, monkeypatch):
    monkeypatch.setenv("PB_GYM_TEST_DIR", str(tmp_path))
    assert scale.run(chunk_tasks.fails_once, scale.plan(4, 1, 0), backend, workers=workers) == [0, 1, 2, 3]
    assert len(list(tmp_path.iterdir())) == 4  # every chunk failed once, then succeeded


@pytest.mark.parametrize("backend, workers", BACKENDS)
def test_a_chunk_failing_twice_stops_the_run_naming_the_chunk_and_its_seed(backend, workers):
    with pytest.raises(
        scale.ChunkError,
        match=r"chunk 3/4 \(items 6-8, seed entropy 42, spawn key "
        r"\(2,\)\) failed twice.*ValueError: injected failure",
    ):
        scale.run(chunk_tasks.fails_on_chunk_two, scale.plan(10, 3, 42), backend, workers=workers)


def test_threads_keep_the_chunks_running_beside_one_that_fails_twice(tmp_path, capsys):
    """On the threads backend a chunk failing twice starts no other chunk, but the one running beside
    it finishes and is kept for a rerun, as the serial backend keeps the chunks it finished."""
    from pb_gym.experiments.common import chunk_store

    store = chunk_store.ChunkStore(tmp_path / ".partial", {"study": "test"})
    chunks = scale.plan(4, 1, 0)
    with pytest.raises(scale.ChunkError, match=r"chunk 2/4 .* failed twice.*injected failure"):
        scale.run(chunk_tasks.fails_beside_a_slower_chunk, chunks, "threads", workers=2, store=store)
    assert "waiting for the 1 chunk(s) still running, to keep them for a rerun" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / ".partial").iterdir()) == ["chunk-000000.json.gz", "run.json"]


def test_threads_stop_the_running_chunks_at_ctrl_c():
    """Ctrl-C on the threads backend (here: raised where a finished chunk is handed back) stops a chunk
    still running at its next ``stop_requested()`` check, instead of a minute later."""

    def interrupted(chunk):
        raise KeyboardInterrupt

    chunk_tasks.RUNNING.clear()
    chunk_tasks.STOPPED.clear()
    with pytest.raises(KeyboardInterrupt):
        scale.run(
            chunk_tasks.waits_for_the_stop, scale.plan(2, 1, 0), "threads", workers=2, progress=interrupted
        )
    assert chunk_tasks.STOPPED.wait(60)  # the chunk stopped at its next check (set by nothing else)
    assert not scale.stop_requested()  # (this thread runs no chunk)


def test_threads_share_the_cores_among_the_chunks_running(monkeypatch):
    """Each chunk thread's kernels get the cores shared out among the chunks running at once: with
    two threads for two chunks, a kernel runs on its caller's thread alone."""
    seen = []

    def task(chunk):
        seen.append(parallel._local.limit)
        return chunk.index

    monkeypatch.setattr(parallel, "_threads", 2)
    assert scale.run(task, scale.plan(2, 1, 0), "threads", workers=2) == [0, 1]
    assert seen == [1, 1]
    assert scale.run(task, scale.plan(1, 1, 0), "threads", workers=2) == [0]  # one chunk: both threads
    assert seen[-1] == 2 and getattr(parallel._local, "limit", None) is None


@pytest.mark.parametrize("backend, workers", [("processes", 2), ("dask", 2)])
def test_a_lost_worker_is_replaced_and_its_chunks_rerun(backend, workers, tmp_path, monkeypatch):
    """A worker killed with SIGKILL mid-chunk (as kill -9 or the OOM killer would): processes recreate
    the pool and rerun the unfinished chunks, Dask reruns them on a new worker; same results."""
    monkeypatch.setenv("PB_GYM_TEST_DIR", str(tmp_path))
    chunks = scale.plan(10, 3, 42)
    results = scale.run(chunk_tasks.kills_its_worker_once, chunks, backend, workers=workers)
    assert (tmp_path / "killed-once").exists()  # the worker really died once
    assert results == scale.run(chunk_tasks.sum_of_draws, chunks)


def test_a_chunk_whose_worker_dies_twice_stops_the_run(capsys):
    with pytest.raises(
        scale.ChunkError,
        match=r"chunk 2/4 \(items 3-5, seed entropy 42, spawn key "
        r"\(1,\)\) failed twice: a worker process died while it "
        r"ran \(killed, out of memory",
    ):
        scale.run(chunk_tasks.kills_its_worker_always, scale.plan(10, 3, 42), "processes", workers=2)
    assert re.search(
        r"a worker process died \([12] chunk\(s\) were running\); restarting the pool",
        capsys.readouterr().err,
    )


def test_a_chunk_running_beside_the_one_that_kills_its_worker_is_not_blamed(capsys):
    """Chunk 1/4 is running when chunk 2/4 kills the pool, on both attempts: the suspects rerun one at
    a time, so the error names the culprit, never the bystander."""
    with pytest.raises(
        scale.ChunkError,
        match=r"chunk 2/4 \(items 3-5, .*\) failed twice: a worker "
        r"process died",
    ):
        scale.run(
            chunk_tasks.kills_its_worker_beside_a_slow_chunk, scale.plan(10, 3, 42), "processes", workers=2
        )
    # (2 chunks were running when the pool broke unless the pool's second worker started too late
    # to take chunk 1/4: then chunk 2/4 ran after it, alone)
    assert re.search(r"a worker process died \([12] chunk\(s\) were running\)", capsys.readouterr().err)


@pytest.mark.parametrize(
    "address", ["not an address", "tcp://10.0.0.5", "tcp://host:99999", "http://host:8786", ""]
)
def test_a_malformed_scheduler_address_is_refused_at_once(address, capsys):
    with pytest.raises(
        ValueError,
        match=r"--scheduler .* is not a scheduler address; allowed: "
        r"PROTOCOL://HOST:PORT",
    ):
        scale.run(chunk_tasks.sum_of_draws, scale.plan(2, 1, 0), "dask", scheduler=address)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(
            ["evaluate", "configs/systems/smoke.yaml", "--backend", "dask", "--scheduler", address or " "]
        )
    assert exit_info.value.code == 2
    assert "is not a scheduler address" in capsys.readouterr().err


def test_an_unreachable_scheduler_is_a_clear_error_within_the_timeout(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(scale, "CONNECT_TIMEOUT_S", 1.0)
    with pytest.raises(
        scale.SchedulerError,
        match=r"--scheduler tcp://127.0.0.1:1: no Dask scheduler "
        r"answered within 1 s",
    ):
        scale.run(chunk_tasks.sum_of_draws, scale.plan(2, 1, 0), "dask", scheduler="tcp://127.0.0.1:1")


def test_bad_backend_arguments():
    chunks = scale.plan(2, 1, 0)
    with pytest.raises(
        ValueError, match="backend='cloud' is not allowed; allowed: serial, threads, processes, dask"
    ):
        scale.run(chunk_tasks.sum_of_draws, chunks, "cloud")
    with pytest.raises(ValueError, match="--scheduler is only for the dask backend"):
        scale.run(chunk_tasks.sum_of_draws, chunks, "processes", scheduler="tcp://127.0.0.1:8786")


def _without_timings(report: dict) -> str:
    report = {k: v for k, v in report.items() if k not in ("timings", "written")}
    return json.dumps(report, sort_keys=True)


def test_evaluate_is_bit_identical_on_every_backend(tmp_path, capsys):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(chunk_tasks.SCALE_STUDY))
    printed = {}
    for backend, workers in BACKENDS:
        argv = ["evaluate", str(path), "--json", "--backend", backend]
        assert cli.main(argv + (["--workers", str(workers)] if workers else [])) == 0
        printed[backend] = json.loads(capsys.readouterr().out)
    assert printed["serial"]["chunks"] == 3
    assert _without_timings(printed["serial"]) == _without_timings(printed["threads"])
    assert _without_timings(printed["serial"]) == _without_timings(printed["processes"])
    assert _without_timings(printed["serial"]) == _without_timings(printed["dask"])


def test_no_report_is_written_when_a_chunk_fails(tmp_path, monkeypatch):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(chunk_tasks.SCALE_STUDY))
    chunk_tasks.lose_evaluate_chunk(monkeypatch)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:  # (serially: the chunks kept do not depend on timing)
        cli.main(["evaluate", str(path), "--out", str(out), "--backend", "serial"])
    assert exit_info.value.code == 1
    # no report, only the finished chunk kept for a rerun to resume (tests/experiments/common/test_outputs.py)
    assert sorted(p.name for p in out.iterdir()) == [".partial"]
    assert sorted(p.name for p in (out / ".partial").iterdir()) == ["chunk-000000.json.gz", "run.json"]


def test_scheduler_needs_the_dask_backend(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["evaluate", "configs/systems/smoke.yaml", "--scheduler", "tcp://127.0.0.1:8786"])
    assert exit_info.value.code == 2
    assert "--scheduler needs --backend dask" in capsys.readouterr().err
