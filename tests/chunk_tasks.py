"""Chunk tasks for tests/experiments/common/test_scale.py (module level, so processes and Dask workers can
import them), the lost evaluation chunk that the scale, output and train tests inject, and a study's chunk
task patched (a chunk failing, interrupted, or counted)."""

import os
import signal
import threading
import time

import numpy as np


def sum_of_draws(chunk):
    """A deterministic chunk result: the sum of 1,000 draws from the chunk's own seed."""
    return float(np.random.default_rng(chunk.seed).random(1000).sum()), chunk.index


def fails_on_chunk_two(chunk):
    """Raises on chunk index 2, every time."""
    if chunk.index == 2:
        raise ValueError("injected failure")
    return chunk.index


def fails_once(chunk):
    """Raises the first time each chunk runs (a marker file per chunk under $PB_GYM_TEST_DIR)."""
    marker = os.path.join(os.environ["PB_GYM_TEST_DIR"], f"chunk-{chunk.index}")
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("transient failure")
    return chunk.index


def kills_its_worker_once(chunk):
    """Chunk 1 kills its own worker process (SIGKILL, as ``kill -9`` or the OOM killer would) the first
    time it runs (a marker file under $PB_GYM_TEST_DIR); then the same result as :func:`sum_of_draws`."""
    marker = os.path.join(os.environ["PB_GYM_TEST_DIR"], "killed-once")
    if chunk.index == 1 and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return sum_of_draws(chunk)


def kills_its_worker_always(chunk):
    """Chunk 1 kills its own worker process every time it runs."""
    if chunk.index == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return chunk.index


def kills_its_worker_beside_a_slow_chunk(chunk):
    """Chunk 1 kills its worker every time, 0.2 s in; chunk 0 takes 1.5 s, so it is running beside
    chunk 1 when the pool breaks (a bystander that must not be blamed)."""
    if chunk.index == 0:
        time.sleep(1.5)
    if chunk.index == 1:
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)
    return chunk.index


def interrupted_after(chunk):
    """:func:`sum_of_draws`, but chunk $PB_GYM_INTERRUPT_AT raises KeyboardInterrupt (Ctrl-C)."""
    if chunk.index == int(os.environ.get("PB_GYM_INTERRUPT_AT", "-1")):
        raise KeyboardInterrupt
    return sum_of_draws(chunk)


def lose_evaluate_chunk(monkeypatch, index: int = 1):
    """Patch :func:`pb_gym.experiments.evaluate.run_chunk` so that chunk ``index`` raises
    ``RuntimeError("worker lost")`` every time it runs (so it fails twice) while the others run as
    before; seen by the backends that run the chunks in this process. Run it with ``--backend serial``
    where the chunks kept matter: on ``threads``, whether a chunk after it starts (and is kept) before
    the failure stops the run depends on the threads' timing and on the cores. Returns the real one."""
    from pb_gym.experiments import evaluate

    real = evaluate.run_chunk

    def lost(config_data, chunk, *args, **kwargs):
        if chunk.index == index:
            raise RuntimeError("worker lost")
        return real(config_data, chunk, *args, **kwargs)

    monkeypatch.setattr(evaluate, "run_chunk", lost)
    return real


def sleeps(chunk):
    """Sleeps a minute (a worker still computing when its parent is killed), once it has said that it
    started (a file ``started-INDEX`` under $PB_GYM_TEST_DIR, when set)."""
    if os.environ.get("PB_GYM_TEST_DIR"):
        open(os.path.join(os.environ["PB_GYM_TEST_DIR"], f"started-{chunk.index}"), "w").close()
    time.sleep(60)
    return chunk.index


HELD_EVALUATION = (
    "import sys; sys.path.insert(0, sys.argv[1]); import chunk_tasks; "
    "from pb_gym.experiments import cli; chunk_tasks.hold_evaluate_chunks_after_the_first(); "
    "sys.exit(cli.main(sys.argv[2:]))"
)
"""``python -c HELD_EVALUATION TESTS_FOLDER evaluate ...``: the command line, its evaluation chunks held
by :func:`hold_evaluate_chunks_after_the_first`."""


def hold_evaluate_chunks_after_the_first():
    """Patch :func:`pb_gym.experiments.evaluate.run_chunk` (in a process a test starts) so that chunk 0 runs
    as before and every other chunk waits (up to ten minutes) until the run stops (the threads
    backend, the default, tells it: :func:`pb_gym.experiments.common.scale.stop_requested`): however fast the
    machine, the run is still running when a test signals it once chunk 0 is kept."""
    from pb_gym.experiments import evaluate
    from pb_gym.experiments.common import scale

    real = evaluate.run_chunk

    def held(config_data, chunk, *args, **kwargs):
        deadline = time.monotonic() + 600
        while chunk.index and time.monotonic() < deadline:
            if scale.stop_requested():
                raise scale.ChunkStopped(chunk.describe())
            time.sleep(0.01)
        return real(config_data, chunk, *args, **kwargs)

    evaluate.run_chunk = held


RUNNING, STOPPED = threading.Event(), threading.Event()
"""Set by :func:`waits_for_the_stop` when its chunk 1 runs, and when it stops (a test clears them)."""


def waits_for_the_stop(chunk):
    """Chunk 0 returns once chunk 1 runs (on two threads); every other chunk waits (up to a minute)
    until the run stops, as a long chunk on the threads backend checks
    :func:`pb_gym.experiments.common.scale.stop_requested`, and then sets :data:`STOPPED`."""
    from pb_gym.experiments.common import scale

    deadline = time.monotonic() + 60
    if chunk.index == 0:
        RUNNING.wait(60)
    elif chunk.index == 1:
        RUNNING.set()
    while chunk.index and time.monotonic() < deadline:
        if scale.stop_requested():
            STOPPED.set()
            raise scale.ChunkStopped(chunk.describe())
        time.sleep(0.01)
    return chunk.index


def fails_beside_a_slower_chunk(chunk):
    """Chunk 1 raises at once, every time; the others (threads backend) run until the run has said
    that it waits for the chunks still running (on stderr, captured by pytest), so chunk 0 is running
    when chunk 1 fails whatever the threads' timing (up to a minute)."""
    import sys

    if chunk.index == 1:
        raise ValueError("injected failure")
    deadline = time.monotonic() + 60
    while "chunk(s) still running" not in sys.stderr.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    return chunk.index


def patch_chunks(monkeypatch, module, name, before):
    """Patch a study's chunk task ``module.name`` so that ``before(chunk)`` runs first (it may raise,
    or note the chunk), then the task; returns the task."""
    task = getattr(module, name)

    def patched(chunk, **kwargs):
        before(chunk)
        return task(chunk, **kwargs)

    monkeypatch.setattr(module, name, patched)
    return task


def interrupt_then_resume(monkeypatch, module, name, main, out, at):
    """Ctrl-C in chunk ``at`` of ``main()`` (the study's chunk task ``module.name``), which leaves only
    ``out/.partial``; then ``main()`` again: its result and the chunks that rerun computed."""
    import pytest

    def interrupt(chunk):
        if chunk.index == at:
            raise KeyboardInterrupt

    task = patch_chunks(monkeypatch, module, name, interrupt)
    with pytest.raises(KeyboardInterrupt):
        main()
    assert [p.name for p in out.iterdir()] == [".partial"]
    monkeypatch.setattr(module, name, task)
    ran: list[int] = []
    patch_chunks(monkeypatch, module, name, lambda chunk: ran.append(chunk.index))
    return main(), ran
