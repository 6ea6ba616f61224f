"""The counting and ruin studies in chunks: the same JSON on every backend (serial, threads, local
processes, a local Dask cluster on loopback), seeds that depend on the chunk's index only, and a failing chunk
retried, then reported with nothing written."""

import json

import numpy as np
import pytest

from pb_gym import rules as R
from pb_gym.experiments import counting, ruin
from pb_gym.experiments.common import scale

import chunk_tasks
from repo_paths import ROOT  # noqa: E402

COUNTING = ROOT / "configs" / "experiments" / "counting-smoke.yaml"  # 200 shoes in 4 chunks
RUIN = ROOT / "configs" / "experiments" / "ruin-smoke.yaml"  # 1,600 sessions in 6 chunks
STUDIES = {"counting": (counting, COUNTING), "ruin": (ruin, RUIN)}


def _comparable(result: dict) -> str:
    """The result as JSON without the wall-clock times (the only part that differs between runs)."""
    return json.dumps({k: v for k, v in result.items() if k != "timings"}, sort_keys=True)


@pytest.fixture(scope="module")
def serial() -> dict:
    return {name: module.main(str(path), None, as_json=True) for name, (module, path) in STUDIES.items()}


@pytest.fixture(scope="module")
def dask_scheduler():
    """One local Dask cluster (two worker processes, loopback only) for the whole module."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


@pytest.mark.parametrize("backend", ["threads", "processes"])
@pytest.mark.parametrize("study", sorted(STUDIES))
def test_threads_and_processes_give_the_serial_json(study, backend, serial):
    module, path = STUDIES[study]
    result = module.main(str(path), None, as_json=True, backend=backend, workers=2)
    assert result["chunks"] > 1 and "timings" in result
    assert _comparable(result) == _comparable(serial[study])


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_a_dask_cluster_gives_the_serial_json(study, serial, dask_scheduler):
    assert dask_scheduler.startswith("tcp://127.0.0.1:")
    module, path = STUDIES[study]
    result = module.main(str(path), None, as_json=True, backend="dask", scheduler=dask_scheduler)
    assert _comparable(result) == _comparable(serial[study])


def test_the_json_names_no_backend(serial):
    for result in serial.values():
        text = _comparable(result)
        assert "serial" not in text and "backend" not in text


def _counting_task(config: counting.CountingConfig):
    rules = config.rules.to_rules()
    tags = np.zeros((1, R.N_RANKS))
    tags[0, R.RANKS.index("8")] = 1.0  # any count will do here
    return lambda chunk: counting.deal_chunk(
        chunk, rules, tags, [counting.STUDIED.index("dragon7")], [0.5], config.depth_bin_cards
    )


def test_a_counting_chunk_depends_on_its_index_only():
    """Chunk 1 of 60 shoes deals the same shoes whether the study has 200 shoes or 130."""
    task = _counting_task(counting.CountingConfig(chunk_shoes=60))
    a, b = task(scale.plan(200, 60, 3)[1]), task(scale.plan(130, 60, 3)[1])
    assert a["hands"].sum() > 60 * 70
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    # a different index, or a different root seed, deals other shoes
    assert not np.array_equal(a["ev"], task(scale.plan(200, 60, 3)[2])["ev"])
    assert not np.array_equal(a["ev"], task(scale.plan(200, 60, 4)[1])["ev"])


def test_the_first_chunk_deals_the_first_shoes_of_a_single_chunk():
    """An engine table's shoe depends only on its index under the seed, so the shoes of chunk 0 (60
    shoes) are the first 60 of the single chunk 0 holding all 200 (the other chunks differ)."""
    task = _counting_task(counting.CountingConfig())
    part, whole = task(scale.plan(200, 60, 3)[0]), task(scale.plan(200, 200, 3)[0])
    for key in counting.PER_SHOE:
        np.testing.assert_array_equal(part[key], whole[key][:60], err_msg=key)


def test_merged_chunks_equal_the_chunks_run_one_by_one():
    """The merge of a study equals the chunks run on their own, one at a time, then merged; and the
    run's statistics are those of the merged sums."""
    config = counting.CountingConfig(shoes=90, chunk_shoes=40, training_shoes=20)
    task = _counting_task(config)
    chunks = scale.plan(90, 40, config.seed)
    merged = counting.merge(scale.run(task, chunks))
    alone = counting.merge([task(c) for c in reversed(chunks)][::-1])
    for key in merged:
        np.testing.assert_array_equal(merged[key], alone[key], err_msg=key)
    assert merged["hands"].shape == (90,)


def test_a_ruin_chunk_depends_on_its_index_only():
    """Chunk 2 (sessions 600-899: all of point 2) gives the same counts in a study of 4 points or of
    3; a chunk across two points counts each session once, at its own point."""
    points, rules = [(3, 10), (7, 10), (5, 8), (5, 20)], R.Rules()
    bets = ("player", "banker", "fair_coin")
    a = ruin.simulate_chunk(scale.plan(4 * 300, 300, 2)[2], rules, bets, points, 300, 10**6)
    b = ruin.simulate_chunk(scale.plan(3 * 300, 300, 2)[2], rules, bets, points[:3], 300, 10**6)
    for bet in bets:
        for key in a[bet]:
            np.testing.assert_array_equal(a[bet][key][:3], b[bet][key], err_msg=f"{bet} {key}")
        assert a[bet]["finished"].tolist() == [0, 0, 300, 0]
        assert a[bet]["successes"][2] + a[bet]["ruins"][2] == 300
    c = ruin.simulate_chunk(
        scale.Chunk(0, 1, 250, 100, np.random.SeedSequence(5)), rules, bets, points, 300, 10**6
    )
    assert c["banker"]["finished"].tolist() == [50, 50, 0, 0]


TASKS = {"counting": "deal_chunk", "ruin": "simulate_chunk"}
"""Each study's chunk task (patched to fail or to be interrupted)."""


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_a_chunk_failing_once_is_retried_with_the_same_result(study, serial, monkeypatch):
    module, path = STUDIES[study]
    failed = set()

    def fail_once(chunk):
        if chunk.index not in failed:
            failed.add(chunk.index)
            raise RuntimeError("transient failure")

    chunk_tasks.patch_chunks(monkeypatch, module, TASKS[study], fail_once)
    result = module.main(str(path), None, as_json=True)
    assert failed == set(range(result["chunks"]))
    assert _comparable(result) == _comparable(serial[study])


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_a_chunk_failing_twice_stops_the_study_and_writes_no_report(study, tmp_path, monkeypatch):
    module, path = STUDIES[study]

    def fail_chunk_two(chunk):
        if chunk.index == 1:
            raise ValueError("injected failure")

    chunk_tasks.patch_chunks(monkeypatch, module, TASKS[study], fail_chunk_two)
    with pytest.raises(
        scale.ChunkError,
        match=r"chunk 2/\d \(items \d+-\d+, seed entropy \d, spawn "
        r"key \(1,\)\) failed twice.*injected failure",
    ):
        module.main(str(path), str(tmp_path / "out"), as_json=True)
    # no report: only the first chunk, kept for a rerun to resume
    assert [p.name for p in (tmp_path / "out").iterdir()] == [".partial"]
    assert sorted(p.name for p in (tmp_path / "out" / ".partial").iterdir()) == [
        "chunk-000000.json.gz",
        "run.json",
    ]


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_an_interrupted_study_resumes_bit_for_bit(study, serial, tmp_path, monkeypatch):
    """Ctrl-C in the third chunk, then the same command: only the other chunks run, and the result
    (and its files) equal the uninterrupted run's."""
    module, path = STUDIES[study]
    out = tmp_path / "out"
    result, ran = chunk_tasks.interrupt_then_resume(
        monkeypatch, module, TASKS[study], lambda: module.main(str(path), str(out), as_json=True), out, at=2
    )
    assert ran == list(range(2, result["chunks"]))
    assert _comparable(result) == _comparable({**serial[study], "files": result["files"]})
    assert sorted(p.name for p in out.iterdir()) == sorted(module.OUTPUT_NAMES)
    saved = json.loads((out / f"{study}.json").read_text())
    assert _comparable(saved) == _comparable({k: v for k, v in serial[study].items()})
