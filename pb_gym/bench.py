"""Throughput benchmarks: the engine at several batch sizes against the plain Python loop, the exact
calculator, and the native vector environment against Gymnasium's SyncVectorEnv. Speed is checked here (figures and ratios printed side by side in one run), never by
timed unit tests."""

from __future__ import annotations

import time

import numpy as np

from pb_gym import engine, exact
from pb_gym import rules as R
from pb_gym.reference import ReferenceTable


def _rate(step, units_per_call: int, seconds: float, min_calls: int = 3) -> float:
    """Units per second of ``step()`` over at least ``seconds`` (after one warm-up call)."""
    step()
    calls = 0
    start = time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < seconds:
        step()
        calls += 1
    return units_per_call * calls / (time.perf_counter() - start)


def engine_hands_per_s(rules: R.Rules, n_tables: int, seconds: float = 1.0) -> float:
    """Hands per second of :func:`pb_gym.engine.deal` over ``n_tables`` tables (reshuffles included)."""
    state = engine.init(rules, n_tables, seed=0)
    out = engine.HandResult.empty(n_tables)
    return _rate(lambda: engine.deal(rules, state, out), n_tables, seconds)


def python_loop_hands_per_s(rules: R.Rules, seconds: float = 1.0) -> float:
    """Hands per second of the plain one-table Python loop (:class:`pb_gym.reference.ReferenceTable`)."""
    table = ReferenceTable(rules, seed=0)

    def thousand_hands() -> None:
        for _ in range(1000):
            table.deal()

    return _rate(thousand_hands, 1000, seconds)


def exact_compositions_per_s(n: int = 20000, seconds: float = 1.0) -> float:
    """Compositions per second of :func:`pb_gym.exact.expected_values` on mid- and late-shoe
    compositions of an 8-deck shoe."""
    state = engine.init(R.Rules(), n, seed=0)
    compositions = []
    for _ in range(60):  # 60 hands into the shoe: about 300 cards dealt
        engine.deal(R.Rules(), state)
        compositions.append(state.unseen.copy())
    sample = np.concatenate(compositions)[np.random.default_rng(0).permutation(60 * n)[:n]]
    return _rate(lambda: exact.expected_values(sample), n, seconds)


def run(quick: bool = False, batch_sizes: tuple[int, ...] = (1, 256, 4096, 16384, 65536)) -> dict:
    """Run every benchmark and return the figures (``quick`` shortens each timing for smoke tests)."""
    seconds = 0.2 if quick else 1.5
    rules = R.Rules()
    by_batch = {str(n): engine_hands_per_s(rules, n, seconds) for n in batch_sizes}
    best = max(by_batch.values())
    python_loop = python_loop_hands_per_s(rules, seconds)
    figures = {
        "engine_hands_per_s": best,
        "engine_best_batch": int(max(by_batch, key=by_batch.get)),
        "engine_hands_per_s_by_batch": by_batch,
        "python_loop_hands_per_s": python_loop,
        "engine_vs_python_loop": best / python_loop,
        "exact_compositions_per_s": exact_compositions_per_s(2000 if quick else 20000, seconds),
    }
    from pb_gym.envs.bench import vector_env_throughput

    figures.update(vector_env_throughput(n_envs=4096, seconds=seconds,
                                         sync_n_envs=64 if quick else 256))
    return figures
