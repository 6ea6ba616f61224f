"""Large batches split into chunks over threads (pb_gym.parallel.run_rows), and borrowed arrays."""

from __future__ import annotations

import concurrent.futures
import threading
import warnings

import numba
import numpy as np
import pytest

from pb_gym import Rules, engine, parallel
from pb_gym.kernel_arrays import borrowed, stack_float64, stack_int32


@numba.njit(nogil=True)
def _count_rows(start, stop, counts, bad, raising):
    """Add one to each row; the lowest row of ``start..stop-1`` marked in ``bad`` is the problem. The
    chunk holding row ``raising`` raises."""
    if start <= raising < stop:
        raise ValueError("a kernel raised on its thread")
    found = (-1, 0)
    for t in range(start, stop):
        counts[t] += 1
        if bad[t] and found[0] < 0:
            found = (t, 4)
    return found


@pytest.fixture
def n_threads_of():
    before = parallel.get_num_threads()
    yield parallel.set_num_threads
    parallel.set_num_threads(before)


@pytest.mark.parametrize("n_threads", [1, 2, 3, 4])
def test_every_row_is_run_exactly_once(n_threads_of, n_threads):
    """Whatever thread takes which chunk (and however late a pool thread starts), every row of every
    call is run once, at sizes below, at and above the threshold."""
    n_threads_of(n_threads)
    for n in (1, 7, 2047, 2048, 2049, 4096, 10_001):
        counts = np.zeros(n, dtype=np.int64)
        bad = np.zeros(n, dtype=np.bool_)
        for _ in range(50):
            assert parallel.checked_rows(_count_rows, n, 2048, counts, bad, -1) == parallel.NO_PROBLEM
        assert (counts == 50).all(), (n, np.unique(counts))


def test_the_lowest_unusable_row_is_reported_whichever_thread_found_it(n_threads_of):
    n_threads_of(2)
    n = 8192
    counts = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=np.bool_)
    bad[[7000, 5000, 6001]] = True  # all in the second chunk
    for _ in range(20):
        assert parallel.checked_rows(_count_rows, n, 2048, counts, bad, -1) == (5000, 4)
    bad[100] = True  # in the first chunk
    assert parallel.checked_rows(_count_rows, n, 2048, counts, bad, -1) == (100, 4)


@pytest.mark.parametrize("raising", [100, 7000])
def test_a_kernel_that_raises_in_any_chunk_is_raised_by_the_caller_and_the_next_calls_go_on(
    n_threads_of, raising
):
    """The first or the second chunk raises (whichever thread runs it): the call raises the kernel's
    error, and the next calls run every row once."""
    n_threads_of(2)
    n = 8192
    counts = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=np.bool_)
    for _ in range(5):
        with pytest.raises(ValueError, match="a kernel raised on its thread"):
            parallel.checked_rows(_count_rows, n, 2048, counts, bad, raising)
    counts[:] = 0
    for _ in range(10):
        parallel.checked_rows(_count_rows, n, 2048, counts, bad, -1)
    assert (counts == 10).all()


def test_a_call_whose_pool_threads_are_all_taken_runs_on_its_caller_alone(n_threads_of):
    """A pool thread that never comes (every one busy elsewhere: a loaded machine, other callers)
    holds nothing up: the caller takes every chunk and the helpers it asked for are cancelled."""
    n_threads_of(2)
    release = threading.Event()
    pool = parallel._executor()
    blockers = [pool.submit(release.wait, 30) for _ in range(parallel.max_threads())]
    try:
        n = 8192
        counts = np.zeros(n, dtype=np.int64)
        for _ in range(5):
            parallel.checked_rows(_count_rows, n, 2048, counts, np.zeros(n, dtype=np.bool_), -1)
        assert (counts == 5).all()
    finally:
        release.set()
        concurrent.futures.wait(blockers)


def test_a_ctrl_c_in_the_caller_raises_only_once_no_chunk_is_running(n_threads_of):
    """A KeyboardInterrupt reaches the caller once its kernel has returned, maybe while a pool thread
    still runs a chunk that writes the caller's arrays: the call raises only after that chunk is
    done (a notebook user who goes on with the arrays never races a pool thread), and no chunk
    starts after it."""
    n_threads_of(2)
    main = threading.get_ident()
    running, started, finished = [0], [0], [0]
    lock = threading.Lock()

    def chunk(start, stop):
        with lock:
            running[0] += 1
            started[0] += 1
        if threading.get_ident() == main:
            with lock:
                running[0] -= 1
                finished[0] += 1
            raise KeyboardInterrupt
        threading.Event().wait(0.2)  # a helper's chunk, still running when the caller raises
        with lock:
            running[0] -= 1
            finished[0] += 1

    for _ in range(5):
        with pytest.raises(KeyboardInterrupt):
            parallel.run_rows(chunk, 8192, 2048)
        assert running[0] == 0 and started[0] == finished[0]


def test_limit_caps_the_threads_of_this_python_thread_alone(n_threads_of):
    n_threads_of(2)
    seen = []

    def chunk(start, stop):
        seen.append((start, stop))

    with parallel.limit(1):
        parallel.run_rows(chunk, 8192, 2048)
        assert seen == [(0, 8192)]
        done = []
        helper = threading.Thread(target=lambda: done.append(parallel.run_rows(chunk, 8192, 2048)))
        helper.start()
        helper.join()
        assert len(done[0]) == 2  # (another Python thread: not limited)
    seen.clear()
    parallel.run_rows(chunk, 8192, 2048)
    assert sorted(seen) == [(0, 4096), (4096, 8192)]


def test_the_old_module_name_still_works_with_a_deprecation_warning():
    import importlib
    import sys

    sys.modules.pop("pb_gym.threads", None)
    with pytest.warns(DeprecationWarning, match="pb_gym.parallel"):
        threads = importlib.import_module("pb_gym.threads")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before = threads.get_num_threads()
        threads.set_num_threads(1)
        assert parallel.get_num_threads() == 1
        threads.set_num_threads(before)
        counts = np.zeros(10, dtype=np.int64)
        bad = np.zeros(10, dtype=np.bool_)
        assert threads.claim_rows(_count_rows, None, 10, 2048, counts, bad, -1) == threads.NO_PROBLEM
        with threads.sharing():
            threads.parallel_for(10, lambda start, stop: counts.__setitem__(slice(start, stop), 7), 1)
        assert (counts == 7).all()


def test_the_engine_names_the_lowest_inconsistent_table_on_two_threads(n_threads_of):
    n_threads_of(2)
    rules = Rules()
    state = engine.init(rules, 3 * engine.DEAL_MIN_TABLES, seed=0)
    lowest = 2 * engine.DEAL_MIN_TABLES + 3
    state.position[[3 * engine.DEAL_MIN_TABLES - 5, lowest]] = 10_000
    with pytest.raises(ValueError, match=f"the state of table {lowest} is inconsistent"):
        engine.deal(rules, state)


@numba.njit
def _borrowed_double(array):
    view = borrowed(array)
    for i in range(view.shape[0]):
        for j in range(view.shape[1]):
            view[i, j] *= 2.0
    return view.shape[0], view.shape[1], view.strides[0], view.strides[1]


def test_a_borrowed_array_is_the_same_data_shape_and_strides():
    base = np.arange(24.0).reshape(4, 6)
    strided = base[:, ::2]  # not contiguous: the strides must come along
    shape_strides = _borrowed_double(strided)
    assert shape_strides == (*strided.shape, *strided.strides)
    assert np.array_equal(base[:, ::2], 2.0 * np.arange(24.0).reshape(4, 6)[:, ::2])
    assert np.array_equal(base[:, 1::2], np.arange(24.0).reshape(4, 6)[:, 1::2])


@numba.njit
def _stack_scratch(values):
    scratch = stack_int32(8)
    for i in range(scratch.shape[0]):
        scratch[i] = values[i] * 3
    total = 0
    for i in range(scratch.shape[0]):
        total += scratch[i]
    return total, scratch.shape[0], scratch.strides[0]


@numba.njit
def _stack_scratch_of(n):
    return stack_int32(n).shape[0]


@numba.njit
def _stack_float_scratch(values):
    scratch = stack_float64(5)
    for i in range(scratch.shape[0]):
        scratch[i] = values[i] / 4.0
    return scratch.copy(), scratch.strides[0]


def test_a_stack_array_holds_its_constant_size_and_refuses_a_variable_one():
    """The engine's shuffle scratch: a constant size on the kernel's stack, written and read back
    (calls in a row each get their own frame); a size known only at run time is a typing error."""
    for values in (np.arange(8, dtype=np.int32), np.arange(8, 16, dtype=np.int32)):
        assert _stack_scratch(values) == (3 * int(values.sum()), 8, 4)
    with pytest.raises(numba.core.errors.TypingError, match="stack_int32"):
        _stack_scratch_of(8)
    values = np.array([1.0, -3.0, 0.5, 1e300, 7.0])
    scratch, stride = _stack_float_scratch(values)
    assert stride == 8
    np.testing.assert_array_equal(scratch, values / 4.0)


def test_a_shuffle_that_lists_a_table_twice_shuffles_it_twice_in_order_on_any_threads(n_threads_of):
    """engine.shuffle runs on several threads from RESHUFFLE_MIN_TABLES tables, but a list that
    repeats a table runs on one thread: the same shoes as one thread would deal, repeats included."""
    rules = Rules()
    index = np.concatenate([np.arange(200), np.arange(50)])  # tables 0..49 listed twice
    states = []
    for n_threads in (1, 2):
        n_threads_of(n_threads)
        state = engine.init(rules, 256, seed=3)
        engine.shuffle(rules, state, index)
        engine.shuffle(rules, state, np.arange(256))  # (no repeat: on two threads)
        states.append(state)
    assert np.array_equal(states[0].shoe, states[1].shoe)
    assert np.array_equal(states[0].rng, states[1].rng)
    assert np.array_equal(states[0].shoes_started[:50], np.full(50, 4))
