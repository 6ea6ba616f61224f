"""The derived tables on disk (pb_gym.table_cache): loaded as the same bits, rebuilt when stale or
damaged, and built in memory where no folder is writable."""

import numpy as np
import pytest

from pb_gym import ev_bound, exact, table_cache
from pb_gym import rules as R


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    return tmp_path / "pb_gym"


def counting_builder():
    calls = []

    def build():
        calls.append(1)
        return {"weights": np.arange(12, dtype=np.int64).reshape(3, 4), "size": np.array(3)}

    return build, calls


def test_a_table_is_built_once_then_loaded_as_the_same_arrays(cache_dir):
    build, calls = counting_builder()
    first = table_cache.cached("demo", ("weights", "size"), build)
    second = table_cache.cached("demo", ("weights", "size"), build)
    assert len(calls) == 1
    assert [p.name for p in cache_dir.iterdir()] == [f"table-demo-{table_cache.stamp()}.npz"]
    for key in ("weights", "size"):
        assert second[key].dtype == first[key].dtype and np.array_equal(second[key], first[key])


@pytest.mark.parametrize("damage", ["truncated", "other keys", "not a zip"])
def test_a_damaged_file_is_built_again_and_replaced(cache_dir, damage):
    build, calls = counting_builder()
    table_cache.cached("demo", ("weights", "size"), build)
    path = cache_dir / f"table-demo-{table_cache.stamp()}.npz"
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "other keys":
        np.savez(path, weights=np.zeros(2))
    else:
        path.write_text("not a table")
    again = table_cache.cached("demo", ("weights", "size"), build)
    assert len(calls) == 2 and np.array_equal(again["weights"], np.arange(12).reshape(3, 4))
    assert np.array_equal(table_cache.cached("demo", ("weights", "size"), build)["weights"], again["weights"])
    assert len(calls) == 2  # the rebuilt file was stored


def test_a_new_stamp_builds_afresh_and_removes_the_stale_file(cache_dir, monkeypatch):
    build, calls = counting_builder()
    table_cache.cached("demo", ("weights", "size"), build)
    other, _ = counting_builder()
    table_cache.cached("other", ("weights", "size"), other)
    monkeypatch.setattr(table_cache, "stamp", lambda: "edited-sources")
    table_cache.cached("demo", ("weights", "size"), build)
    assert len(calls) == 2
    names = sorted(p.name for p in cache_dir.iterdir())
    assert "table-demo-edited-sources.npz" in names and len(names) == 2  # the other table's file stays


def test_no_writable_folder_builds_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("a cache folder cannot be made under a file")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker))
    assert table_cache.folder() is None
    build, calls = counting_builder()
    table_cache.cached("demo", ("weights", "size"), build)
    table_cache.cached("demo", ("weights", "size"), build)
    assert len(calls) == 2


def test_the_stamp_follows_the_package_sources(monkeypatch):
    before = table_cache.stamp()
    monkeypatch.setattr(table_cache.kernel_cache, "package_stamp", lambda: "another source tree")
    assert table_cache.stamp() != before


def test_the_exact_tables_load_as_the_bits_they_are_built_with():
    """What the exact calculator and the EV bound read from the cache equals a fresh build."""
    built = exact._deal_sequences()
    loaded = exact._sequence_table()
    for key in ("index", "outcome", "key"):
        assert loaded[key].dtype == built[key].dtype and np.array_equal(loaded[key], built[key])
    assert loaded["n_multisets"] == int(built["n_multisets"]) == 5005
    exponents, coefficients = ev_bound.taylor_coefficients()
    assert np.array_equal(coefficients, ev_bound._walk(exponents))


def test_a_failed_write_leaves_no_file_and_the_table_in_memory(cache_dir, monkeypatch):
    """A full disk (the write fails halfway): the built table is returned, nothing is left behind, and
    the next call builds again."""

    def full_disk(out, **arrays):
        out.write(b"PK half a table")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(table_cache.np, "savez", full_disk)
    build, calls = counting_builder()
    first = table_cache.cached("demo", ("weights", "size"), build)
    assert np.array_equal(first["weights"], np.arange(12).reshape(3, 4))
    assert list(cache_dir.iterdir()) == []
    table_cache.cached("demo", ("weights", "size"), build)
    assert len(calls) == 2


def test_ctrl_c_while_writing_leaves_no_file(cache_dir, monkeypatch):
    def interrupted(out, **arrays):
        out.write(b"PK half a table")
        raise KeyboardInterrupt

    monkeypatch.setattr(table_cache.np, "savez", interrupted)
    build, _ = counting_builder()
    with pytest.raises(KeyboardInterrupt):
        table_cache.cached("demo", ("weights", "size"), build)
    assert list(cache_dir.iterdir()) == []


def test_an_ev_bound_loaded_from_disk_is_the_bound_built_in_memory(cache_dir):
    """Each bet's EV bound (its Taylor terms and per-count tables) is kept on disk, one file a bet,
    and loads as the same bits: the same bounds, to the last bit, on real compositions."""
    payoffs = R.Rules().paytable()[:, 1]
    built = ev_bound._bound_tables(payoffs)
    stored = ev_bound.EVBound(payoffs)  # (builds and stores)
    loaded = ev_bound.EVBound(payoffs)
    assert len([p for p in cache_dir.iterdir() if p.name.startswith("table-ev_bound-")]) == 1
    for bound in (stored, loaded):
        arrays = (
            *bound.terms,
            bound.pair_coef,
            bound.triple_coef,
            bound.cubic_by_pair,
            bound.quartic_by_pairs,
        )
        for key, array in zip(ev_bound.BOUND_TABLES, arrays + bound.tables, strict=True):
            assert array.dtype == built[key].dtype and np.array_equal(array, built[key]), key
    compositions = np.array([R.full_shoe(1), [4, 4, 4, 4, 4, 0, 0, 0, 0, 4, 4, 4, 4]], dtype=np.int64)
    assert np.array_equal(loaded.upper(compositions), stored.upper(compositions))
