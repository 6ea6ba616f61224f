"""Resume state (``OUT/.partial``) is trusted only when this run can vouch for it: sealed with the
user's key kept outside the output folder, owned by the user and writable by no one else, every path
inside the folder, every chunk of the expected structure and identity, and bounded in size."""

import gzip
import json
import os
import pickle
import stat
from pathlib import Path

import pytest
import yaml

from pb_gym.experiments import train
from pb_gym.experiments.common import chunk_store, scale
from pb_gym.experiments.train import checkpoint

import chunk_tasks  # noqa: E402
from repo_paths import ROOT  # noqa: E402

CONFIGS = ROOT / "configs" / "train"
IDENTITY = {"study": "test", "n": 10}


@pytest.fixture(autouse=True)
def private_key(tmp_path, monkeypatch):
    """Each test with a key of its own (a fresh cache folder)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(chunk_store, "_KEYS", {})


def _store(tmp_path) -> chunk_store.ChunkStore:
    return chunk_store.ChunkStore(tmp_path / ".partial", IDENTITY)


def _finished(tmp_path) -> list:
    """Five chunks computed and kept; returns their results."""
    chunks = scale.plan(10, 2, 7)
    return scale.run(chunk_tasks.sum_of_draws, chunks, store=_store(tmp_path))


def _rerun(tmp_path) -> tuple[list, list[int]]:
    ran: list[int] = []
    chunks = scale.plan(10, 2, 7)
    results = scale.run(
        chunk_tasks.sum_of_draws, chunks, progress=lambda c: ran.append(c.index), store=_store(tmp_path)
    )
    return results, ran


def _sealed_chunk(tmp_path, index: int, data) -> None:
    """A chunk file holding ``data`` with a valid seal (as if this user's pb-gym had a bug)."""
    path = tmp_path / ".partial" / f"chunk-{index:06d}.json.gz"
    path.write_bytes(chunk_store.seal(gzip.compress(json.dumps(data).encode())))


def _chunk(tmp_path, index: int) -> dict:
    raw = chunk_store.unseal(tmp_path / ".partial" / f"chunk-{index:06d}.json.gz")
    return json.loads(gzip.decompress(raw))


def test_the_key_lives_outside_the_output_folder_and_is_private(tmp_path):
    _finished(tmp_path)
    key = chunk_store.key_path()
    assert key == tmp_path / "cache" / "pb-gym" / "resume.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / ".partial").stat().st_mode) == 0o700
    assert len(key.read_bytes()) == 32


def test_an_edited_chunk_value_is_refused_not_merged(tmp_path, capsys):
    """Editing a value (and fixing any checksum) cannot be sealed again without the key: the chunk is
    computed again, never merged (it once made a report's net 1.1e12 instead of -10,138)."""
    expected = _finished(tmp_path)
    path = tmp_path / ".partial" / "chunk-000002.json.gz"
    data = _chunk(tmp_path, 2)
    data["result"] = 10**12
    path.write_bytes(gzip.compress(json.dumps(data).encode()))  # unsealed
    results, ran = _rerun(tmp_path)
    assert results == expected and ran == [2]
    assert "not using " in capsys.readouterr().err
    # a seal copied from another file does not match the edited bytes either
    other = (tmp_path / ".partial" / "chunk-000001.json.gz").read_bytes()
    path.write_bytes(other[: len(chunk_store.SEAL) + 32] + gzip.compress(json.dumps(data).encode()))
    assert _rerun(tmp_path) == (expected, [2])
    assert "not sealed by this user's pb-gym" in capsys.readouterr().err


@pytest.mark.parametrize(
    "payload,reason",
    [
        ({"key": "x", "chunk": 2}, "not the structure of a kept result"),
        ([1, 2], "not the structure of a kept result"),
        ({"$scalar": "<f8", "data": ""}, "not the structure of a kept result"),
    ],
)
def test_a_chunk_of_the_wrong_structure_is_refused_with_the_reason(tmp_path, capsys, payload, reason):
    expected = _finished(tmp_path)
    _sealed_chunk(tmp_path, 2, payload)
    assert _rerun(tmp_path) == (expected, [2])
    assert reason in capsys.readouterr().err


@pytest.mark.parametrize(
    "result,reason",
    [
        ({"$scalar": "<f8", "data": ""}, "0 bytes of data for 1 value(s) of dtype <f8"),
        ({"$array": "|O", "shape": [1], "data": ""}, "dtype '|O'"),
        ({"$array": "<i8", "shape": [-1], "data": ""}, "an array of shape [-1]"),
        ({"$array": "<i8", "shape": [3], "data": "AAAA"}, "3 bytes of data for 3 value(s)"),
        ({"$dict": [[1]]}, "not a [key, value] pair"),
        ({"$float": 1.5}, "unknown encoded value"),
        (1.5, "a bare float"),
        ({"$evil": 1}, "unknown encoded value"),
    ],
)
def test_a_chunk_whose_result_is_not_a_stored_value_is_refused(tmp_path, capsys, result, reason):
    expected = _finished(tmp_path)
    data = _chunk(tmp_path, 2)
    data["result"] = result
    _sealed_chunk(tmp_path, 2, data)
    assert _rerun(tmp_path) == (expected, [2])
    assert reason in capsys.readouterr().err


def test_a_chunk_of_another_identity_is_refused(tmp_path, capsys):
    expected = _finished(tmp_path)
    data = _chunk(tmp_path, 3)
    _sealed_chunk(tmp_path, 2, data)  # chunk 3's result in chunk 2's place
    assert _rerun(tmp_path) == (expected, [2])
    assert "its chunk is '3', not this run's" in capsys.readouterr().err


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path, capsys):
    expected = _finished(tmp_path)
    path = tmp_path / ".partial" / "chunk-000002.json.gz"
    deep = b"[" * 200_000 + b"]" * 200_000
    path.write_bytes(chunk_store.seal(gzip.compress(deep)))
    assert _rerun(tmp_path) == (expected, [2])
    assert "nested too deep" in capsys.readouterr().err
    data = _chunk(tmp_path, 2)
    nested: object = 1
    for _ in range(200):
        nested = [nested]
    data["result"] = nested
    _sealed_chunk(tmp_path, 2, data)
    assert _rerun(tmp_path) == (expected, [2])
    assert f"nested deeper than {chunk_store.MAX_DEPTH} levels" in capsys.readouterr().err


def test_a_gzip_bomb_is_refused_within_bounded_memory(tmp_path, capsys, monkeypatch):
    """A 1 MB gzip that inflates to 1 GB: refused at the bound (lowered here to keep the test quick:
    the decompressor never returns more than the bound plus one byte)."""
    import tracemalloc

    expected = _finished(tmp_path)
    bomb = gzip.compress(b"0" * (1 << 30), compresslevel=9)
    assert len(bomb) < 1.1e6
    (tmp_path / ".partial" / "chunk-000002.json.gz").write_bytes(chunk_store.seal(bomb))
    monkeypatch.setattr(chunk_store, "MAX_DECOMPRESSED", 1 << 24)
    monkeypatch.setattr(chunk_store._inflate, "__defaults__", (1 << 24,))
    monkeypatch.setattr(chunk_store.unseal, "__defaults__", (1 << 24,))
    tracemalloc.start()
    try:
        results, ran = _rerun(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (results, ran) == (expected, [2])
    assert peak < 200e6
    assert f"decompresses to more than {1 << 24:,} bytes" in capsys.readouterr().err


def test_run_json_that_is_not_an_identity_is_refused_naming_it(tmp_path):
    _finished(tmp_path)
    (tmp_path / ".partial" / "run.json").write_bytes(chunk_store.seal(b"[]"))
    with pytest.raises(chunk_store.ResumeError, match=r"an unusable run.json: it holds a list"):
        _store(tmp_path)
    (tmp_path / ".partial" / "run.json").write_text("[]")
    with pytest.raises(chunk_store.ResumeError, match=r"an unusable run.json: not sealed by this user"):
        _store(tmp_path)


def test_a_missing_run_json_does_not_silently_delete_the_kept_chunks(tmp_path):
    _finished(tmp_path)
    (tmp_path / ".partial" / "run.json").unlink()
    with pytest.raises(
        chunk_store.ResumeError,
        match=r"holds 5 finished chunk\(s\) but no run.json "
        r"saying which run they belong to; they are kept",
    ):
        _store(tmp_path)
    assert len(list((tmp_path / ".partial").glob("chunk-*"))) == 5
    chunk_store.ChunkStore(tmp_path / ".partial", IDENTITY, resume=False)  # --no-resume discards them
    assert not (tmp_path / ".partial").exists()


def test_state_others_could_write_is_refused_saying_so(tmp_path):
    _finished(tmp_path)
    partial = tmp_path / ".partial"
    partial.chmod(0o777)
    with pytest.raises(
        chunk_store.ResumeError,
        match=r"the resume folder .* can be written by other "
        r"users \(mode 777\)",
    ):
        _store(tmp_path)
    partial.chmod(0o700)
    (partial / "chunk-000001.json.gz").chmod(0o666)
    with pytest.raises(
        chunk_store.ResumeError,
        match=r"the kept file .*chunk-000001.json.gz can be "
        r"written by other users",
    ):
        _rerun(tmp_path)


def test_state_of_another_user_is_refused(tmp_path, monkeypatch):
    _finished(tmp_path)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(chunk_store.ResumeError, match=r"belongs to another user"):
        _store(tmp_path)


def test_a_symlinked_resume_folder_or_chunk_is_refused(tmp_path):
    _finished(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / ".partial" / "chunk-000004.json.gz").rename(tmp_path / "elsewhere" / "c.gz")
    (tmp_path / ".partial" / "chunk-000004.json.gz").symlink_to(tmp_path / "elsewhere" / "c.gz")
    with pytest.raises(chunk_store.ResumeError, match=r"is a symbolic link"):
        _rerun(tmp_path)
    (tmp_path / ".partial").rename(tmp_path / "real")
    (tmp_path / ".partial").symlink_to(tmp_path / "real")
    with pytest.raises(chunk_store.ResumeError, match=r"the resume folder .* is a symbolic link"):
        _store(tmp_path)


def test_a_loose_key_file_is_refused(tmp_path):
    _finished(tmp_path)
    chunk_store.key_path().chmod(0o644)
    chunk_store._KEYS.clear()
    with pytest.raises(chunk_store.ResumeError, match=r"the resume key .* can be read by other users"):
        _store(tmp_path).load(scale.plan(10, 2, 7)[0])


@pytest.mark.parametrize("name", ["../victim", "/tmp/x", "a/../../b", "", "train\x00", 3])
def test_paths_read_from_resume_state_stay_inside_the_folder(tmp_path, name):
    store = _store(tmp_path)
    with pytest.raises(chunk_store.Refused):
        store.inside(name)


# ------------------------------------------------------------------------ training checkpoints
def _checkpointed(tmp_path, monkeypatch) -> chunk_store.ChunkStore:
    """The tiny PPO config stopped right after its first checkpoint; the store that keeps it."""
    data = yaml.safe_load((CONFIGS / "ppo-smoke.yaml").read_text())
    data.update(total_timesteps=512, n_envs=8, curve_points=2)
    data["hyperparameters"].update(n_steps=32, batch_size=64, n_epochs=1)
    config = train.validate(data, train.TrainConfig, "tiny.yaml")
    store = chunk_store.ChunkStore(tmp_path / ".partial", {"test": "trust"})
    save = checkpoint.save

    def save_then_stop(*args, **kwargs):
        save(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint, "save", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        train.train(config, tmp_path / "stopped", store=store, checkpoint_minutes=1e-9)
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return store


class _Payload:
    """Unpickling this writes a marker file: the proof that a pickle ran code."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path(self.marker).write_text, ("code ran",))


def _forge(store: chunk_store.ChunkStore, record: dict) -> None:
    """What an attacker who can write the folder (not read the key) can do: a step file in the
    unsealed layout, with checksums that match the files."""
    path = store.directory / f"step-{checkpoint.STEP}.json.gz"
    path.write_bytes(
        gzip.compress(
            json.dumps(
                {"key": store.key, "step": checkpoint.STEP, "result": chunk_store.encode(record)}
            ).encode()
        )
    )


def test_a_malicious_checkpoint_pickle_is_never_unpickled(tmp_path, monkeypatch, capsys):
    from pb_gym.agents import learned

    store = _checkpointed(tmp_path, monkeypatch)
    kept = checkpoint.latest(store)
    assert kept is not None
    marker = tmp_path / "marker.txt"
    state = kept["path"] / checkpoint.STATE_FILE
    state.write_bytes(pickle.dumps(_Payload(str(marker))))
    record = {k: v for k, v in kept.items() if k != "path"}
    record["files"] = [[name, learned.file_sha256(kept["path"] / name)] for name, _ in record["files"]]
    _forge(store, record)
    assert checkpoint.latest(store) is None
    assert "not sealed by this user's pb-gym" in capsys.readouterr().err
    assert not marker.exists()


@pytest.mark.parametrize("folder", ["../../victim", "/tmp/victim", "checkpoint_000000000001/../.."])
def test_a_checkpoint_record_cannot_name_a_folder_outside_the_run(tmp_path, monkeypatch, capsys, folder):
    """Even a sealed record (as if this user's pb-gym were buggy) is checked: a folder outside
    ``.partial`` is neither loaded nor removed by the next checkpoint."""
    store = _checkpointed(tmp_path, monkeypatch)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    kept = checkpoint.latest(store)
    store.save_step(checkpoint.STEP, {**{k: v for k, v in kept.items() if k != "path"}, "folder": folder})
    assert checkpoint.latest(store) is None
    assert "is not a checkpoint's" in capsys.readouterr().err
    assert (victim / "keep.txt").read_text() == "mine"


def test_a_kept_file_entry_cannot_leave_the_step_folder(tmp_path):
    store = _store(tmp_path)
    (tmp_path / "payload.txt").write_text("x")
    store.folder(train.TRAIN_STEP)
    problem = train._kept_files(store, train.TRAIN_STEP, [["../payload.txt", "0" * 64]])
    assert problem == "the kept path '../payload.txt' leaves the run's folder"
    assert train._kept_files(store, train.TRAIN_STEP, "x") == "its record has no list of files"
