"""The thread pool's claiming kernels (pb_gym.threads.claim_rows), its spin budget and borrowed arrays."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from pb_gym import Rules, engine, threads
from pb_gym.kernel_arrays import borrowed, stack_float64, stack_int32


@numba.njit(nogil=True)
def _count_rows(start, stop, counts, bad, raising):
    """Add one to each row; the lowest row of ``start..stop-1`` marked in ``bad`` is the problem."""
    found = (-1, 0)
    for t in range(start, stop):
        counts[t] += 1
        if bad[t] and found[0] < 0:
            found = (t, 4)
    return found


@numba.njit(nogil=True)
def _count_claimed(job, flags, thread, spins, counts, bad, raising):
    threads.job_start(job, flags, thread)
    while True:
        chunk = threads.job_claim(job, thread)
        if chunk < 0:
            return threads.job_end(job, flags, thread, spins)
        if thread == raising:
            raise ValueError("a kernel raised on its thread")
        start, stop = threads.job_rows(job, chunk)
        threads.job_done(job, chunk, _count_rows(start, stop, counts, bad, raising))


@pytest.fixture
def pool_threads():
    before = threads.get_num_threads()
    yield lambda n: threads.set_num_threads(n)
    threads.set_num_threads(before)


@pytest.mark.parametrize("n_threads", [1, 2, 3, 4])
def test_a_claiming_kernel_runs_every_row_exactly_once(pool_threads, n_threads):
    """Whatever thread claims which chunk (and however late a pool thread wakes), every row of every
    call is run once, call after call, at sizes below, at and above the threshold."""
    pool_threads(n_threads)
    for n in (1, 7, 2047, 2048, 2049, 4096, 10_001):
        counts = np.zeros(n, dtype=np.int64)
        bad = np.zeros(n, dtype=np.bool_)
        for _ in range(50):
            found = threads.claim_rows(_count_rows, _count_claimed, n, 2048, counts, bad, -1)
            assert found == threads.NO_PROBLEM
        assert (counts == 50).all(), (n, np.unique(counts))


def test_the_lowest_unusable_row_is_reported_whichever_thread_found_it(pool_threads):
    pool_threads(2)
    n = 8192
    counts = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=np.bool_)
    bad[[7000, 5000, 6001]] = True  # all in the second thread's segment and beyond its first chunk
    for _ in range(20):
        assert threads.claim_rows(_count_rows, _count_claimed, n, 2048, counts, bad, -1) == (5000, 4)
    bad[100] = True  # in the caller's first chunk
    assert threads.claim_rows(_count_rows, _count_claimed, n, 2048, counts, bad, -1) == (100, 4)


@pytest.mark.parametrize("raising", [0, 1])
def test_a_kernel_that_raises_on_any_thread_is_raised_by_the_caller_and_the_pool_goes_on(
    pool_threads, raising
):
    """Thread 0 is the caller, 1 the pool thread: either way the call raises the kernel's error (it
    does not hang waiting for the chunks that thread never finished), and the next calls run every
    row once."""
    pool_threads(2)
    n = 2_000_000  # (a millisecond a call: the pool thread wakes in time to claim a chunk)
    counts = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=np.bool_)
    for _ in range(5):  # (the pool thread is awake, spinning between calls, when the error comes)
        threads.claim_rows(_count_rows, _count_claimed, n, 2048, counts, bad, -1)
    raised = 0
    for _ in range(20):  # a thread that claims no chunk (the other took them all first) cannot
        try:  # raise, so it is tried several times
            threads.claim_rows(_count_rows, _count_claimed, n, 2048, counts, bad, raising)
        except ValueError as error:
            assert "a kernel raised on its thread" in str(error)
            raised += 1
    assert raised >= 1
    counts[:] = 0
    for _ in range(10):
        threads.claim_rows(_count_rows, _count_claimed, n, 2048, counts, bad, -1)
    assert (counts == 10).all()


def test_the_engine_names_the_lowest_inconsistent_table_on_two_threads(pool_threads):
    pool_threads(2)
    rules = Rules()
    state = engine.init(rules, 3 * engine.DEAL_MIN_TABLES, seed=0)
    lowest = 2 * engine.DEAL_MIN_TABLES + 3
    state.position[[3 * engine.DEAL_MIN_TABLES - 5, lowest]] = 10_000
    with pytest.raises(ValueError, match=f"the state of table {lowest} is inconsistent"):
        engine.deal(rules, state)


def test_a_spin_budget_halved_to_nothing_grows_back_once_waits_are_short():
    """The budget follows how long the waits really last: long waits halve it down to one spin, and
    short ones (a full spin would have caught them) bring it back within a few calls."""
    spin = threads._Spin(4096)
    for _ in range(20):
        spin.waited(threads.LONG_WAIT * threads.SPIN_SECONDS * 2)
    assert spin.spins == 1
    spin.waited(threads.SPIN_SECONDS / 2)
    assert spin.spins == 4096 // 16
    for _ in range(4):
        spin.waited(0.0)
    assert spin.spins == 4096
    spin.waited(threads.SPIN_SECONDS * 2)  # neither short nor long: kept
    assert spin.spins == 4096


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


@numba.njit(nogil=True)
def _who_rows(start, stop, who, slow):
    for t in range(start, stop):
        who[t] = -1  # the caller's thread alone (claim_rows' serial path)
    return -1, 0


@numba.njit(nogil=True)
def _who_claimed(job, flags, thread, spins, who, slow):
    threads.job_start(job, flags, thread)
    while True:
        chunk = threads.job_claim(job, thread)
        if chunk < 0:
            return threads.job_end(job, flags, thread, spins)
        start, stop = threads.job_rows(job, chunk)
        x = 0.0
        for i in range(slow if thread > 0 else 100_000):  # a pool thread kept off its core, as it were
            x += np.sqrt(float(i))
        for t in range(start, stop):
            who[t] = thread if x >= 0.0 else -2
        threads.job_done(job, chunk, (-1, 0))


def test_a_pool_thread_that_keeps_the_caller_waiting_sends_the_next_calls_to_one_thread(pool_threads):
    """A straggler (a pool thread that holds its chunk for longer than half the caller's own time: on
    a loaded machine, off its core) makes the next call run on the caller's thread alone, then 3,
    7, ... calls after stragglers in a row; a call without one runs on the threads again."""
    pool_threads(2)
    n = 8192
    who = np.zeros(n, dtype=np.int64)
    pool = threads._get_pool(1)
    threads.claim_rows(_who_rows, _who_claimed, n, 2048, who, 0)  # (compiled: a compile is no straggler)
    stragglers = 0
    for _ in range(20):  # (the pool thread must claim a chunk for the call to have a straggler)
        pool.serial_calls = pool.serial_left = 0
        threads.claim_rows(_who_rows, _who_claimed, n, 2048, who, 20_000_000)
        if (who == 1).any():
            stragglers += 1
            assert pool.serial_left == 1
            threads.claim_rows(_who_rows, _who_claimed, n, 2048, who, 0)
            assert (who == -1).all()  # run alone
            assert pool.serial_left == 0
            break
    assert stragglers == 1
    for _ in range(50):  # no straggler: back on both threads
        threads.claim_rows(_who_rows, _who_claimed, n, 2048, who, 0)
    assert pool.serial_calls == 0 and pool.serial_left == 0


def test_a_ctrl_c_in_the_caller_raises_only_once_the_chunks_being_run_are_written(pool_threads):
    """A KeyboardInterrupt reaches the caller once its kernel has returned, maybe while a pool thread
    still runs a chunk that writes the caller's arrays: the call raises only after that chunk is
    done (a notebook user who goes on with the arrays never races a pool thread)."""
    pool_threads(2)
    n = 8192
    who = np.zeros(n, dtype=np.int64)
    pool = threads._get_pool(1)
    threads.claim_rows(_who_rows, _who_claimed, n, 2048, who, 0)  # (compiled)

    def interrupted(job, flags, thread, spins, who, slow):
        result = _who_claimed(job, flags, thread, spins, who, slow)
        if thread == 0:
            raise KeyboardInterrupt
        return result

    for _ in range(20):  # (the pool thread must claim a chunk for one to be running)
        pool.serial_calls = pool.serial_left = 0
        who[:] = -5
        with pytest.raises(KeyboardInterrupt):
            threads.claim_rows(_who_rows, interrupted, n, 2048, who, 20_000_000)
        if (who == 1).any():
            break
    assert (who == 1).any()
    assert (who >= 0).all()  # every chunk written before the call raised
    for _ in range(5):  # and the pool goes on
        threads.claim_rows(_who_rows, _who_claimed, n, 2048, who, 0)


def test_a_claiming_kernel_uses_no_more_threads_than_cores(pool_threads):
    """Asked for more threads than cores (they would spin against each other), a claiming kernel runs
    on at most one thread per core, and still runs every row once."""
    pool_threads(threads.max_threads())
    n = 65_536
    who = np.full(n, -5, dtype=np.int64)
    for _ in range(20):
        threads.claim_rows(_who_rows, _who_claimed, n, 2048, who, 0)
        assert (who >= -1).all()
        assert who.max() < threads.cores()


def test_a_shuffle_that_lists_a_table_twice_shuffles_it_twice_in_order_on_any_threads(pool_threads):
    """engine.shuffle runs on several threads from RESHUFFLE_MIN_TABLES tables, but a list that
    repeats a table runs on one thread: the same shoes as one thread would deal, repeats included."""
    rules = Rules()
    index = np.concatenate([np.arange(200), np.arange(50)])  # tables 0..49 listed twice
    states = []
    for n_threads in (1, 2):
        pool_threads(n_threads)
        state = engine.init(rules, 256, seed=3)
        engine.shuffle(rules, state, index)
        engine.shuffle(rules, state, np.arange(256))  # (no repeat: on two threads)
        states.append(state)
    assert np.array_equal(states[0].shoe, states[1].shoe)
    assert np.array_equal(states[0].rng, states[1].rng)
    assert np.array_equal(states[0].shoes_started[:50], np.full(50, 4))
