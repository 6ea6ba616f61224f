"""Throughput benchmarks, printed as figures and side-by-side ratios (speed is checked here, never by
timed unit tests: machines are shared and noisy, and a ratio measured in one run cancels most of it).

What is measured, under each condition (``idle``; with ``load=True`` also ``busy``: one busy process
per core running beside the benchmark, as SB3's torch threads or a user's other jobs do):

* the engine at several batch sizes (1 table to 65,536), on all threads and on one thread, beside a
  plain numpy dealer of the same batch in lockstep (:class:`pb_gym.reference.LockstepDealer`) and
  the plain one-table Python loop;
* the exact calculator (compositions per second);
* the single environment (``gym.make``, one table) against Gymnasium's ``Blackjack-v1``;
* the single environment of ``Discover-v0`` and ``DiscoverAll-v0`` under a random policy, its
  ``reward="expected"`` (the exact EV of every bet placed) beside ``reward="realized"``;
* the native vector environment (4,096 tables) on all threads and on one thread, against Gymnasium's
  ``SyncVectorEnv`` over single environments.

The reinforcement-learning figures (SB3 PPO on this environment against PPO on ``CartPole-v1``) need
torch, which the core never imports: they live in :mod:`pb_gym.experiments.train.ppo_speed` (``pb-gym bench
--rl``).

The figures of a run can be saved (:func:`save_baseline`, ``pb-gym bench --save-baseline FILE``) and
a later run, of other code on the same machine, printed with its ratio to them (``--baseline FILE``):
the code before a change against the code after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import numpy as np

from pb_gym import engine, exact, parallel
from pb_gym import rules as R
from pb_gym.reference import LockstepDealer, ReferenceTable

BATCH_SIZES: tuple[int, ...] = (1, 256, 4096, 65536)


def _rate(step: Callable[[], object], units_per_call: int, seconds: float, min_calls: int = 3) -> float:
    """Units per second of ``step()`` over at least ``seconds`` (after one warm-up call)."""
    step()
    calls = 0
    start = time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < seconds:
        step()
        calls += 1
    return units_per_call * calls / (time.perf_counter() - start)


@contextlib.contextmanager
def busy_cores(n: int | None = None) -> Iterator[int]:
    """Run ``n`` busy processes (default: one per core this process may use) for the duration."""
    count = n if n is not None else parallel.get_num_threads()
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.3)  # let them start spinning
        yield count
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def with_busy(figures: dict, measure: Callable[[], dict], load: bool) -> dict:
    """``figures`` and, with ``load``, ``measure()`` again beside one busy process per core, under
    ``"busy"`` (with ``busy_processes``, their count)."""
    if load:
        with busy_cores() as count:
            figures["busy"] = {**measure(), "busy_processes": count}
    return figures


@contextlib.contextmanager
def thread_count(n: int) -> Iterator[None]:
    """Run the block with ``n`` engine threads (:func:`pb_gym.parallel.set_num_threads`)."""
    before = parallel.get_num_threads()
    parallel.set_num_threads(n)
    try:
        yield
    finally:
        parallel.set_num_threads(before)


def engine_hands_per_s(rules: R.Rules, n_tables: int, seconds: float = 1.0) -> float:
    """Hands per second of :func:`pb_gym.engine.deal` over ``n_tables`` tables (reshuffles included)."""
    state = engine.init(rules, n_tables, seed=0)
    out = engine.HandResult.empty(n_tables)
    return _rate(lambda: engine.deal(rules, state, out), n_tables, seconds)


def lockstep_hands_per_s(rules: R.Rules, n_tables: int, seconds: float = 1.0) -> float:
    """Hands per second of the plain numpy dealer in lockstep (:class:`pb_gym.reference.LockstepDealer`)
    over ``n_tables`` tables."""
    dealer = LockstepDealer(rules, n_tables, seed=0)
    return _rate(dealer.deal, n_tables, seconds)


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


_FIRST_USE = """
import json, resource, sys, time
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
wall, cpu0 = time.perf_counter(), cpu()
if sys.argv[1] == "env":
    import gymnasium
    import pb_gym
    env = gymnasium.make("pb_gym/PuntoBanco-v0")
    env.reset(seed=0)
    for _ in range(100):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
else:
    from pb_gym import engine
    from pb_gym.rules import Rules
    engine.deal(Rules(), engine.init(Rules(), 1, seed=0))
print(json.dumps({"wall_s": time.perf_counter() - wall, "cpu_s": cpu() - cpu0}))
"""
FIRST_USES = {
    "env": "first gym.make + reset + 100 steps",
    "deal": "the engine's first init + deal",
}
"""What :func:`compile_cost` times, each in a new process, from its imports on."""


def compile_cost(uses: tuple[str, ...] = tuple(FIRST_USES), cold: bool = True) -> dict:
    """Wall and CPU seconds (user + sys of the process) of each of :data:`FIRST_USES` in a new Python
    process: ``cold`` with an empty numba cache (a temporary ``NUMBA_CACHE_DIR``: every kernel it
    needs compiled, as on a new machine), then ``warm`` again with the cache that run left (kernels
    loaded, as on every later run). Without ``cold``, ``warm`` uses the machine's own cache as it is.
    Also the load average (1 minute) before the first run: a busy machine stretches the wall time."""
    import tempfile

    for use in uses:
        if use not in FIRST_USES:
            raise ValueError(f"compile_cost: unknown use {use!r}; allowed: {', '.join(FIRST_USES)}")
    figures: dict = {"load_average": os.getloadavg()[0]}
    for use in uses:  # each use its own empty cache: the kernels they share compiled in each
        with tempfile.TemporaryDirectory(prefix="pb-gym-numba-cache-") as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache) if cold else dict(os.environ)
            for run in ("cold", "warm") if cold else ("warm",):
                done = subprocess.run(
                    [sys.executable, "-c", _FIRST_USE, use],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    raise RuntimeError(f"compile_cost ({use}, {run}) failed: {done.stderr.strip()}")
                times = json.loads(done.stdout.splitlines()[-1])
                figures[f"{use}_{run}_wall_s"] = times["wall_s"]
                figures[f"{use}_{run}_cpu_s"] = times["cpu_s"]
    return figures


def print_compile_cost(figures: dict) -> None:
    """The figures of :func:`compile_cost`, one line per use and run."""
    print(f"compile cost (a new process each; load average {figures['load_average']:.1f} before)")
    for use, text in FIRST_USES.items():
        for run, cache in (("cold", "empty numba cache"), ("warm", "warm cache")):
            if f"{use}_{run}_wall_s" in figures:
                label = f"  {text}, {cache}"
                print(
                    f"{label:<60}{figures[f'{use}_{run}_wall_s']:>7.2f} s wall"
                    f"{figures[f'{use}_{run}_cpu_s']:>7.2f} s CPU"
                )


TASK_TABLES = 512
"""Tables of the task throughput (:func:`task_reward_throughput`): ``configs/train/discover-fast.yaml``'s."""


def task_reward_throughput(
    task: str = "pb_gym/Discover-v0", n_envs: int = TASK_TABLES, seconds: float = 1.5
) -> dict:
    """Steps (hands) per second of the native vector env with a benchmark task's settings
    (:mod:`pb_gym.envs.tasks`), its training reward ``reward="expected"`` beside ``"realized"``, in the
    same run: with random actions (a bet at 5 tables in 6) and with a bet at 1 table in 8 (a random
    bet kept with probability 1/8: about a trained agent's bet rate, 13% for the perfect bettor).

    Returns ``task``, ``task_n_envs`` and, for ``random`` and ``one_in_8`` actions,
    ``task_{reward}_{actions}_steps_per_s`` and ``task_expected_vs_realized_{actions}``."""
    from pb_gym.envs.tasks import get_task
    from pb_gym.envs.throughput import _steps_per_s
    from pb_gym.envs.vector import PuntoBancoVectorEnv

    spec = get_task(task)
    out: dict = {"task": spec.id, "task_n_envs": n_envs}
    rng = np.random.default_rng(0)
    n_actions = len(spec.bets) * len(spec.kwargs["stake_levels"]) + 1
    random = [rng.integers(0, n_actions, n_envs) for _ in range(16)]
    sparse = [np.where(rng.random(n_envs) < 1 / 8, rng.integers(1, n_actions, n_envs), 0) for _ in range(16)]
    for name, actions in (("random", random), ("one_in_8", sparse)):
        for reward in ("realized", "expected"):
            venv = PuntoBancoVectorEnv(n_envs, **dict(spec.kwargs, reward=reward))
            out[f"task_{reward}_{name}_steps_per_s"] = _steps_per_s(venv, actions, n_envs, seconds)
            venv.close()
        out[f"task_expected_vs_realized_{name}"] = (
            out[f"task_expected_{name}_steps_per_s"] / out[f"task_realized_{name}_steps_per_s"]
        )
    return out


def _condition(quick: bool, seconds: float) -> dict:
    """Every figure of one condition (idle or busy)."""
    from pb_gym.envs.throughput import (
        expected_reward_throughput,
        native_vector_steps_per_s,
        single_env_throughput,
        task_single_env_throughput,
        vector_env_throughput,
    )

    rules = R.Rules()
    by_batch = {str(n): engine_hands_per_s(rules, n, seconds) for n in BATCH_SIZES}
    with thread_count(1):
        one_thread = {str(n): engine_hands_per_s(rules, n, seconds) for n in BATCH_SIZES}
    lockstep = {str(n): lockstep_hands_per_s(rules, n, seconds) for n in BATCH_SIZES}
    best = max(by_batch, key=lambda k: by_batch[k])
    python_loop = python_loop_hands_per_s(rules, seconds)
    figures: dict = {
        "engine_hands_per_s": by_batch[best],
        "engine_best_batch": int(best),
        "engine_hands_per_s_by_batch": by_batch,
        "engine_one_thread_hands_per_s_by_batch": one_thread,
        "engine_vs_one_thread_by_batch": {k: by_batch[k] / one_thread[k] for k in by_batch},
        "lockstep_hands_per_s_by_batch": lockstep,
        "engine_vs_lockstep_by_batch": {k: by_batch[k] / lockstep[k] for k in by_batch},
        "python_loop_hands_per_s": python_loop,
        "engine_vs_python_loop": by_batch[best] / python_loop,
        "exact_compositions_per_s": exact_compositions_per_s(2000 if quick else 20000, seconds),
    }
    figures.update(single_env_throughput(seconds))
    figures.update(task_single_env_throughput(seconds=seconds))
    figures.update(vector_env_throughput(n_envs=4096, seconds=seconds, sync_n_envs=64 if quick else 256))
    with thread_count(1):  # the same env and actions as vector_env_throughput's native run
        one, _ = native_vector_steps_per_s(4096, seconds, np.random.default_rng(0), visible_discards=True)
    figures["vector_env_one_thread_steps_per_s"] = one
    figures["vector_env_vs_one_thread"] = figures["vector_env_steps_per_s"] / one
    figures.update(expected_reward_throughput(n_envs=256, seconds=seconds))
    figures.update(task_reward_throughput(seconds=seconds))
    return figures


def run(quick: bool = False, load: bool = False) -> dict:
    """Run every benchmark and return the figures.

    The idle figures are at the top level (``engine_hands_per_s``, ...); with ``load`` the same figures
    measured beside one busy process per core are under ``"busy"``, and ``"busy_vs_idle"`` gives the
    ratios of the main ones. ``quick`` shortens each timing (smoke tests)."""
    seconds = 0.2 if quick else 1.5
    figures = {"threads": parallel.get_num_threads(), "cores": os.cpu_count(), **_condition(quick, seconds)}
    with_busy(figures, lambda: _condition(quick, seconds), load)
    if load:
        figures["busy_vs_idle"] = {
            key: figures["busy"][key] / figures[key]
            for key in (
                "engine_hands_per_s",
                "exact_compositions_per_s",
                "single_env_steps_per_s",
                "vector_env_steps_per_s",
            )
        }
    return figures


def save_baseline(figures: dict, path: str | os.PathLike) -> None:
    """Write the figures of :func:`run` as JSON, for a later run's ``baseline`` (:func:`print_figures`)."""
    with open(path, "w", encoding="utf-8") as file:
        json.dump(figures, file, indent=1)
        file.write("\n")


def load_baseline(path: str | os.PathLike) -> dict:
    """The figures :func:`save_baseline` wrote (ValueError naming the file if it holds none)."""
    with open(path, encoding="utf-8") as file:
        try:
            figures = json.load(file)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not a saved bench (pb-gym bench --save-baseline): {error}") from None
    if not isinstance(figures, dict) or "engine_hands_per_s_by_batch" not in figures:
        raise ValueError(f"{path}: not a saved bench (pb-gym bench --save-baseline)")
    return figures


_RATIO = "{:>15.2f}x"


def _single_task_rows(figures: dict, row: Callable[..., None]) -> None:
    """The rows of :func:`pb_gym.envs.throughput.task_single_env_throughput` (a run that has them)."""
    for name in ("Discover-v0", "DiscoverAll-v0"):
        key = f"single_{name}_"
        if f"{key}expected_steps_per_s" in figures:
            row(f"single env, {name}, random bets (steps/s)", lambda f, k=key: f[f"{k}expected_steps_per_s"])
            row("  reward='realized' (steps/s)", lambda f, k=key: f[f"{k}realized_steps_per_s"])
            row("  expected / realized", lambda f, k=key: f[f"{k}expected_vs_realized"], _RATIO)


def print_figures(figures: dict, baseline: dict | None = None) -> None:
    """The figures of :func:`run` as a readable report (idle and, if measured, busy side by side);
    with ``baseline`` (the figures of an earlier run, :func:`load_baseline`), each throughput beside
    its ratio to the baseline's in the same condition."""
    columns = [("idle", figures)] + ([("busy", figures["busy"])] if "busy" in figures else [])
    before: dict[str, dict] = {}
    if baseline is not None:
        before = {"idle": baseline, **({"busy": baseline["busy"]} if "busy" in baseline else {})}
    width = 27 if before else 16
    head = "".join(f"{name + (' (x before)' if before else ''):>{width}}" for name, _ in columns)
    print(
        f"{figures['threads']} engine threads on {figures['cores']} cores"
        + (f"; busy = beside {figures['busy']['busy_processes']} busy processes" if "busy" in figures else "")
    )
    print(f"{'':<52}{head}")

    def row(label: str, key: Callable[[dict], float], fmt: str = "{:>16,.0f}") -> None:
        cells = []
        for name, f in columns:
            cell = fmt.format(key(f))
            if before:
                ratio_text = ""
                if fmt != _RATIO and name in before:
                    with contextlib.suppress(KeyError, TypeError, ZeroDivisionError):
                        ratio_text = f"({key(f) / key(before[name]):.2f}x)"
                cell += f"{ratio_text:>11}"
            cells.append(cell)
        print(f"{label:<52}" + "".join(cells))

    def per_batch(key: str, batch: str) -> Callable[[dict], float]:
        return lambda f: f[key][batch]

    def per_key(key: str) -> Callable[[dict], float]:
        return lambda f: f[key]

    for batch in figures["engine_hands_per_s_by_batch"]:
        row(f"engine, {int(batch):,} tables (hands/s)", per_batch("engine_hands_per_s_by_batch", batch))
        row("  one thread", per_batch("engine_one_thread_hands_per_s_by_batch", batch))
        row("  all threads / one thread", per_batch("engine_vs_one_thread_by_batch", batch), _RATIO)
        if "lockstep_hands_per_s_by_batch" in figures:
            row("  numpy dealer in lockstep", per_batch("lockstep_hands_per_s_by_batch", batch))
            row("  engine / numpy lockstep", per_batch("engine_vs_lockstep_by_batch", batch), _RATIO)
    row("plain one-table Python loop (hands/s)", lambda f: f["python_loop_hands_per_s"])
    row("  engine (best batch) / Python loop", lambda f: f["engine_vs_python_loop"], _RATIO)
    row("exact odds (compositions/s)", lambda f: f["exact_compositions_per_s"])
    row("single env, gym.make, 1 table (steps/s)", lambda f: f["single_env_steps_per_s"])
    row("  Blackjack-v1, gym.make (steps/s)", lambda f: f["blackjack_steps_per_s"])
    row("  single env / Blackjack-v1", lambda f: f["single_env_vs_blackjack"], _RATIO)
    _single_task_rows(figures, row)
    row(
        f"native vector env, {figures['vector_env_n_envs']:,} tables (steps/s)",
        lambda f: f["vector_env_steps_per_s"],
    )
    row("  one thread", lambda f: f["vector_env_one_thread_steps_per_s"])
    row("  all threads / one thread", lambda f: f["vector_env_vs_one_thread"], _RATIO)
    row(
        f"  SyncVectorEnv of single envs ({figures['sync_vector_env_n_envs']})",
        lambda f: f["sync_vector_env_steps_per_s"],
    )
    row("  native / SyncVectorEnv", lambda f: f["vector_vs_sync_ratio"], _RATIO)
    if "expected_reward_steps_per_s" in figures:
        row("native vector env, reward='expected' (steps/s)", lambda f: f["expected_reward_steps_per_s"])
        row("  expected / realized (256 tables, random bets)", lambda f: f["expected_vs_realized"], _RATIO)
    if "task" in figures:
        n = figures["task_n_envs"]
        for name, label in (("random", "random bets"), ("one_in_8", "a bet at 1 table in 8")):
            print(f"{figures['task']}, {n} tables, {label}")
            for key, text, fmt in (
                (f"task_realized_{name}_steps_per_s", "reward='realized' (steps/s)", "{:>16,.0f}"),
                (f"task_expected_{name}_steps_per_s", "reward='expected' (steps/s)", "{:>16,.0f}"),
                (f"task_expected_vs_realized_{name}", "expected / realized", _RATIO),
            ):
                row(f"  {text}", per_key(key), fmt)
