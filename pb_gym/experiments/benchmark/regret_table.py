"""``pb-gym experiment benchmark``: the regret table of RL algorithms on a benchmark task, over seeds.

Each algorithm of the config is trained from its own ``pb-gym train`` config (its settings as they
are, with the keys of ``set:`` replaced) once per training seed, then scored by
:func:`pb_gym.benchmark.score` on the benchmark's held-out hands beside the perfect-information bettor
(the known optimum). Across the seeds of an algorithm the figures are aggregated as rliable recommends
(Agarwal et al., "Deep RL at the edge of the statistical precipice", 2021): the interquartile mean
(IQM) of the runs' normalized scores and regrets, with the 95% stratified bootstrap interval
(:func:`pb_gym.experiments.common.stats.iqm`,
:func:`pb_gym.experiments.common.stats.stratified_bootstrap_ci`), beside each run's
own figure and its training wall time. During each training the exact learning curve is scored on a
small held-out deal (``curve``) with the training seconds elapsed at each point, so the curves are
plotted against wall time::

    pb-gym experiment benchmark configs/benchmark/discover.yaml --out out/benchmark/discover

Each (algorithm, seed) run is one chunk of :mod:`pb_gym.experiments.common.scale`: kept in ``OUT/.partial``
as soon
as it finishes, so an interrupted study resumes where it stopped (the identity of the kept runs covers
the train configs' contents too); ``--backend processes`` trains several runs at once (their wall
times then share the machine). Outputs: ``benchmark.json`` (every run and the aggregates),
``benchmark.md`` (the table), ``benchmark.csv`` (one row per run), ``benchmark.txt`` and
``curves.png`` (exact profit per hand against training seconds).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from pb_gym import strict_json
from pb_gym.envs.tasks import SCORE_HANDS, SCORE_SEED, SCORE_TABLES, get_task
from pb_gym.experiments.common import plotting, scale, stats, study
from pb_gym.experiments.common.yaml_config import ConfigError, Strict, parse_yaml, read_config_text, validate

OUTPUT_NAMES = ("benchmark.json", "benchmark.md", "benchmark.csv", "benchmark.txt", "curves.png")
FIGURES = ("normalized_score", "regret_per_hand", "exact_profit_per_hand", "bet_rate")
"""The scorer's figures aggregated over seeds (each run's estimate)."""


class AlgorithmRun(Strict):
    """One algorithm of the table: a ``pb-gym train`` config and what the benchmark changes in it."""

    name: str = Field(min_length=1, max_length=40, description="the algorithm's row in the table")
    train: str = Field(
        min_length=1,
        description="its pb-gym train config (a path, from the current folder); its seed and "
        "name are the benchmark's, its discovery section is the benchmark's curve",
    )
    set: dict[str, Any] = Field(
        default_factory=dict,
        description="keys of the train config replaced (a mapping is merged key by key), "
        "e.g. {total_timesteps: 500000, n_envs: 512}",
    )


class CurveConfig(Strict):
    """The exact learning curve scored during each training (on its own held-out deal)."""

    points: int = Field(8, ge=0, le=100, description="points after the initial policy (0: no curve)")
    tables: int = Field(64, ge=2, description="held-out tables of each point")
    hands: int = Field(250, ge=1, description="hands per table of each point")
    seed: int = Field(3_000_017, ge=0, description="held-out seed of the curve's deal")


class BenchmarkConfig(Strict):
    """``configs/benchmark/*.yaml``."""

    task: str = Field("pb_gym/Discover-v0", description="the benchmark task every model is scored on")
    seeds: list[int] = Field(
        default_factory=lambda: [0, 1, 2, 3, 4], min_length=1, description="training seeds of every algorithm"
    )
    algorithms: list[AlgorithmRun] = Field(
        min_length=1,
        description="the table's rows, each {name: its row, train: its pb-gym train config (a path "
        "from the current folder), set: keys of that config replaced (a mapping merged key by "
        "key)}; the seed, name and discovery curve are the benchmark's",
    )
    tables: int = Field(SCORE_TABLES, ge=2, description="held-out tables of the final score")
    hands: int = Field(SCORE_HANDS, ge=1, description="hands per held-out table")
    seed: int = Field(SCORE_SEED, ge=0, description="held-out seed: table i is seeded seed + i")
    curve: CurveConfig = Field(CurveConfig(), description="the exact learning curve of every run")
    bootstrap_reps: int = Field(50_000, ge=100, le=1_000_000, description="stratified bootstrap replicates")
    bootstrap_seed: int = Field(0, ge=0, description="seed of the bootstrap replicates")
    confidence: float = Field(0.95, gt=0, lt=1, description="coverage of the bootstrap intervals")
    recorded: list[str] = Field(
        default_factory=list,
        description="benchmark.csv files of earlier studies (paths from the current folder): a run of "
        "this config whose algorithm and seed are in one is taken from its row instead of trained "
        "(that it had this config's settings and held-out deal is the user's to vouch for; a row "
        "scored against another perfect-bettor profit is refused); such runs have no learning curve",
    )

    @field_validator("task")
    @classmethod
    def _a_task(cls, task: str) -> str:
        return get_task(task).id

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds) or min(seeds) < 0:
            raise ValueError(f"{seeds} is not allowed; allowed: distinct integers >= 0")
        return seeds

    @field_validator("algorithms")
    @classmethod
    def _distinct_names(cls, algorithms: list[AlgorithmRun]) -> list[AlgorithmRun]:
        names = [a.name for a in algorithms]
        if len(set(names)) != len(names):
            raise ValueError(f"the names {names} are not allowed; allowed: distinct names")
        return algorithms


# ------------------------------------------------------------------------------------ the runs
def _merged(base: dict, changes: dict) -> dict:
    out = dict(base)
    for key, value in changes.items():
        out[key] = (
            _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def train_config(config: BenchmarkConfig, algorithm: AlgorithmRun, seed: int):
    """The validated :class:`pb_gym.experiments.train.TrainConfig` of ``algorithm``'s run with ``seed``.

    Raises:
        ConfigError: the train config cannot be read or is invalid (its path named), or its table is
            not the task's (a model of it could not be scored on the task).
    """
    from pb_gym.experiments import train as train_study
    from pb_gym.experiments.benchmark import score as score_command

    where = f"algorithms: {algorithm.name}: {algorithm.train}"
    try:
        data = parse_yaml(read_config_text(algorithm.train), algorithm.train)
    except ConfigError as error:  # (it names the file)
        raise ConfigError(f"algorithms: {algorithm.name}: {error}") from None
    except OSError as error:
        raise ConfigError(f"{where}: cannot be read ({error.strerror or error})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: is not a mapping of train settings")
    spec = get_task(config.task)
    curve = config.curve
    data = _merged(data, algorithm.set)
    data.update(
        seed=seed,
        name=f"{algorithm.name}-seed{seed}",
        curve_points=max(2, curve.points),
        discovery=(
            {
                "bets": list(spec.bets),
                "curve_points": curve.points,
                "curve_tables": curve.tables,
                "curve_hands": curve.hands,
                "curve_seed": curve.seed,
            }
            if curve.points
            else None
        ),
    )
    trained = validate(data, train_study.TrainConfig, where)
    try:
        score_command.check_same_table(trained.env.kwargs(), spec)
    except ValueError as error:
        raise ConfigError(f"{where}: {error}") from None
    return trained


def plan_runs(config: BenchmarkConfig) -> list[dict]:
    """Every (algorithm, seed) run, algorithm-major, with its validated train config (JSON) and the
    name its result is kept under: a digest of what it depends on (its algorithm's name and train
    config), so that a study given more seeds, or another algorithm, reuses the runs it kept."""
    runs = []
    for algorithm in config.algorithms:
        for seed in config.seeds:
            train = train_config(config, algorithm, seed).model_dump(mode="json")
            text = json.dumps([algorithm.name, train], sort_keys=True, separators=(",", ":"))
            step = "run_" + hashlib.sha256(text.encode()).hexdigest()[:24]
            runs.append({"algorithm": algorithm.name, "seed": seed, "train": train, "step": step})
    return runs


def _number(text: str | None) -> float | None:
    return None if text is None or text.strip() == "" else float(text)


def recorded_runs(paths: list[str]) -> dict[tuple[str, int], dict]:
    """The runs of the ``benchmark.csv`` files ``paths``, keyed by (algorithm, seed), each shaped as a
    trained run of :func:`run` (the score's estimates; no learning curve; ``recorded``: its file).

    Raises:
        ConfigError: a file cannot be read, lacks a column of :data:`RECORDED_FIELDS`, has a value
            that is not a number, or two rows (in any of the files) are the same algorithm and seed.
    """
    out: dict[tuple[str, int], dict] = {}
    for path in paths:
        where = f"recorded: {path}"
        try:
            with open(path, newline="") as handle:
                rows = list(csv.DictReader(handle))
                header = rows[0].keys() if rows else []
        except OSError as error:
            raise ConfigError(f"{where}: cannot be read ({error.strerror or error})") from None
        missing = [f for f in RECORDED_FIELDS if f not in header]
        if missing:
            raise ConfigError(f"{where}: has no column {', '.join(missing)} (a benchmark.csv has them)")
        for line, row in enumerate(rows, start=2):
            try:
                key = (row["algorithm"], int(row["seed"]))
                values = {f: _number(row.get(f)) for f in CSV_FIELDS if f not in ("algorithm", "seed")}
            except ValueError as error:
                raise ConfigError(f"{where}: line {line}: {error}") from None
            if key in out:
                raise ConfigError(
                    f"{where}: line {line}: {key[0]} seed {key[1]} is recorded twice "
                    f"(also in {out[key]['recorded']})"
                )
            score: dict[str, Any] = {
                f: {"estimate": values[f]} for f in FIGURES + RECORDED_EXTRA if values.get(f) is not None
            }
            score["normalized_score"]["ci95"] = [values["normalized_score_lo"], values["normalized_score_hi"]]
            out[key] = {
                "algorithm": key[0],
                "seed": key[1],
                "timesteps": int(values["timesteps"] or 0),
                "training_seconds": values["training_seconds"],
                "training_cpu_seconds": values.get("training_cpu_seconds"),
                "score": score,
                "curve": [],
                "recorded": str(path),
            }
    return out


def _check_same_deal(runs: list[dict]) -> None:
    """Every run was scored against the same perfect bettor's profit (the same held-out hands)."""
    first = runs[0]["score"]["perfect_profit_per_hand"]["estimate"]
    for r in runs:
        other = r["score"]["perfect_profit_per_hand"]["estimate"]
        if not math.isclose(other, first, rel_tol=1e-9, abs_tol=1e-15):
            where = r.get("recorded", "trained here")
            raise ConfigError(
                f"recorded: {r['algorithm']} seed {r['seed']} ({where}) was scored where the perfect "
                f"bettor earns {other!r} per hand, {runs[0]['algorithm']} seed {runs[0]['seed']} where it "
                f"earns {first!r}: other held-out hands, not allowed in one table"
            )


def train_and_score(
    chunk: scale.Chunk, runs: list[dict], task: str, tables: int, hands: int, seed: int
) -> dict:
    """The task of one chunk: train run ``chunk.index`` of ``runs`` (in a temporary folder: the model
    is not kept) and score it on ``task``'s held-out hands. Module level, so processes can run it."""
    from pb_gym import benchmark
    from pb_gym.experiments import train as train_study
    from pb_gym.experiments.benchmark import score as score_command

    run = runs[chunk.index]
    config = validate(run["train"], train_study.TrainConfig, f"{run['algorithm']} seed {run['seed']}")
    _warm_up(config)
    cpu = time.process_time()
    with tempfile.TemporaryDirectory(prefix="pb-gym-benchmark-") as folder:
        trained = train_study.train(config, Path(folder))
    cpu = time.process_time() - cpu
    policy = score_command.ModelPolicy(
        trained["model_object"],
        config.algorithm,
        config.env.kwargs(),
        config.obs_transform,
        trained["normalizer"],
        task,
    )
    started = time.perf_counter()
    result = benchmark.score(policy, task, tables=tables, hands=hands, seed=seed, reset=policy.reset)
    return {
        "algorithm": run["algorithm"],
        "seed": run["seed"],
        "sb3_algorithm": config.algorithm,
        "timesteps": trained["timesteps"],
        "training_seconds": trained["seconds"],
        "curve_scoring_seconds": trained["curve_scoring_seconds"],
        # CPU time of the process over the training and its curve (every thread): what a busy
        # machine's wall time hides
        "training_cpu_seconds": cpu,
        "scoring_seconds": time.perf_counter() - started,
        "score": result,
        "curve": trained["exact_curve"],
    }


_WARM: set[str] = set()
"""The env settings whose kernels this process has compiled already (:func:`_warm_up`)."""


def _warm_up(config) -> None:
    """Step the training env of ``config`` a few hands before its first run in this process, so that
    the engine's and the exact reward's compilation (numba, seconds) is not counted in that run's
    training wall time."""
    from pb_gym.experiments import train as train_study

    key = repr(sorted(config.env.kwargs().items()))
    if key in _WARM:
        return
    env = train_study.make_env(config.model_copy(update={"n_envs": 2}))
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(3):
        env.step(rng.integers(0, env.action_space.n, size=env.num_envs))
    env.close()
    _WARM.add(key)


# ------------------------------------------------------------------------------- aggregation
def aggregate(values: list[float], reps: int, confidence: float, seed: int) -> dict:
    """rliable's summary of one figure over an algorithm's runs: the IQM with its stratified bootstrap
    interval (one stratum: the task), beside the mean, median, extremes and the runs' own values."""
    array = np.asarray(values, dtype=np.float64)
    return {
        "iqm": stats.iqm(array),
        "ci": stats.stratified_bootstrap_ci(array, reps=reps, confidence=confidence, seed=seed),
        **_spread(array),
    }


def _spread(array: np.ndarray) -> dict:
    return {
        "mean": float(array.mean()),
        "median": float(np.median(array)),
        "min": float(array.min()),
        "max": float(array.max()),
        "values": [float(v) for v in array],
    }


PROFILE_TAUS = (0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0)
"""The normalized scores at which each algorithm's performance profile is read (the share of its runs
above each)."""


def improvements(config: BenchmarkConfig, algorithms: dict) -> dict:
    """rliable's probability of improvement of every algorithm over every other, on the normalized
    score: ``{"A > B": {"estimate", "ci"}}`` (0.5: neither is better)."""
    scores = {name: np.array(a["normalized_score"]["values"]) for name, a in algorithms.items()}
    return {
        f"{a} > {b}": stats.probability_of_improvement(
            scores[a], scores[b], confidence=config.confidence, seed=config.bootstrap_seed
        )
        for a in scores
        for b in scores
        if a != b
    }


def summarize(config: BenchmarkConfig, runs: list[dict]) -> dict:
    """Per algorithm, every figure of :data:`FIGURES` and the training seconds aggregated over seeds."""
    out = {}
    for algorithm in config.algorithms:
        mine = [r for r in runs if r["algorithm"] == algorithm.name]
        entry: dict[str, Any] = {"runs": len(mine), "sb3_algorithm": mine[0]["sb3_algorithm"]}
        for figure in FIGURES:
            entry[figure] = aggregate(
                [r["score"][figure]["estimate"] for r in mine],
                config.bootstrap_reps,
                config.confidence,
                config.bootstrap_seed,
            )
        scores = np.array(entry["normalized_score"]["values"])
        entry["optimality_gap"] = {
            "estimate": stats.optimality_gap(scores),
            "ci": stats.stratified_bootstrap_ci(
                scores,
                stats.optimality_gap,
                reps=config.bootstrap_reps,
                confidence=config.confidence,
                seed=config.bootstrap_seed,
            ),
        }
        shares = stats.performance_profile(scores, PROFILE_TAUS)
        entry["performance_profile"] = {"taus": list(PROFILE_TAUS), "share_above": shares}
        entry["training_seconds"] = _spread(np.array([r["training_seconds"] for r in mine], dtype=np.float64))
        cpu = [r.get("training_cpu_seconds") for r in mine]  # (None: a run kept before it was recorded)
        measured = [c for c in cpu if c is not None]
        entry["training_cpu_seconds"] = {
            "median": float(np.median(measured)) if measured else None,
            "values": cpu,
        }
        entry["timesteps"] = sorted({r["timesteps"] for r in mine})
        out[algorithm.name] = entry
    return out


def run(
    config: BenchmarkConfig,
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    store=None,
) -> dict:
    """Train and score every run, then aggregate. With a ``store``, the runs it holds are loaded
    instead of trained, and each run is kept there as soon as it finishes (with ``processes`` or
    ``dask``, ``workers`` runs at a time)."""
    started = time.perf_counter()
    runs = plan_runs(config)
    results: dict[str, dict] = {}
    recorded = recorded_runs(config.recorded)
    for r in runs:
        kept_row = recorded.get((r["algorithm"], r["seed"]))
        if kept_row is not None:
            results[r["step"]] = {**kept_row, "sb3_algorithm": r["train"]["algorithm"]}
            continue
        found, kept = store.load_step(r["step"]) if store is not None else (False, None)
        if found and isinstance(kept, dict):
            results[r["step"]] = kept
    # seed-major: every algorithm's first seed before any second one, so that an interrupted study
    # has kept whole seeds (a config with the seeds finished then reuses them all)
    todo = sorted((r for r in runs if r["step"] not in results), key=lambda r: config.seeds.index(r["seed"]))
    if store is not None and results:
        print(
            f"resuming: {len(results)} of {len(runs)} runs already finished in {store.directory}; "
            f"training the other {len(todo)}",
            file=sys.stderr,
            flush=True,
        )

    def keep(chunk: scale.Chunk, result: dict) -> None:  # (run chunk.index of todo, as it finishes)
        results[todo[chunk.index]["step"]] = result
        if store is not None:
            store.save_step(todo[chunk.index]["step"], result)

    task = functools.partial(
        train_and_score,
        runs=todo,
        task=config.task,
        tables=config.tables,
        hands=config.hands,
        seed=config.seed,
    )
    with scale.progress_printer("benchmark: training runs", progress, len(todo)) as printer:
        if todo:
            scale.run(task, scale.plan(len(todo), 1, 0), backend, scheduler, workers, printer, keep=keep)
    ordered = [results[r["step"]] for r in runs]
    _check_same_deal(ordered)
    # a trained run has the deal's counts; recorded rows only the estimates
    first = next((r["score"] for r in ordered if "recorded" not in r), ordered[0]["score"])
    return {
        "task": config.task,
        "seeds": list(config.seeds),
        "held_out": {"tables": config.tables, "hands_per_table": config.hands, "seed": config.seed},
        "hands": first.get("hands", config.tables * config.hands),
        "shoes": first.get("shoes"),
        "perfect_profit_per_hand": first["perfect_profit_per_hand"],
        "perfect_bet_rate": next(
            (r["score"]["perfect_bet_rate"] for r in ordered if "perfect_bet_rate" in r["score"]), None
        ),
        "recorded": sorted({r["recorded"] for r in ordered if "recorded" in r}),
        "aggregation": {
            "estimate": "interquartile mean over the runs (rliable's IQM)",
            "interval": f"{config.confidence:.0%} stratified bootstrap, percentile (one stratum: the task)",
            "reps": config.bootstrap_reps,
            "seed": config.bootstrap_seed,
        },
        "algorithms": (algorithms := summarize(config, ordered)),
        "probability_of_improvement": improvements(config, algorithms),
        "runs": ordered,
        "timings": {
            "total_s": time.perf_counter() - started,
            "runs_trained": len(todo),
            "runs_recorded": sum("recorded" in r for r in ordered),
        },
    }


# ------------------------------------------------------------------------------------ outputs
def _interval(entry: dict | None, scale_by: float = 1.0, digits: int = 3, key: str = "iqm") -> str:
    """``entry[key]`` and its interval ``entry["ci"]``; "n/a" for no entry (the optimality gap of a
    result written before it was reported)."""
    if entry is None:
        return "n/a"
    low, high = entry["ci"]
    return f"{entry[key] * scale_by:.{digits}f} [{low * scale_by:.{digits}f}, {high * scale_by:.{digits}f}]"


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} s"


def _cpu(entry: dict, runs: int) -> str:
    """The median CPU time, with how many runs it is of where some (recorded rows) lack theirs."""
    measured = sum(v is not None for v in entry["values"])
    return _seconds(entry["median"]) + (f" ({measured} of {runs} runs)" if 0 < measured < runs else "")


def table(result: dict) -> str:
    """The regret table as Markdown: one row per algorithm."""
    perfect = result["perfect_profit_per_hand"]["estimate"]
    lines = [
        "| algorithm | runs | normalized score, IQM [95% CI] | optimality gap [95% CI] "
        "| regret per 1,000 hands, IQM [95% CI] "
        "| normalized score of each seed | bet rate (IQM) | training wall time, median [min, max] "
        "| training CPU time, median | timesteps |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, a in result["algorithms"].items():
        seconds = a["training_seconds"]
        lines.append(
            f"| {name} | {a['runs']} | {_interval(a['normalized_score'])} | "
            f"{_interval(a.get('optimality_gap'), key='estimate')} | "
            f"{_interval(a['regret_per_hand'], 1000, 2)} | "
            f"{', '.join(f'{v:.3f}' for v in a['normalized_score']['values'])} | "
            f"{a['bet_rate']['iqm']:.1%} | "
            f"{seconds['median']:.0f} s [{seconds['min']:.0f}, {seconds['max']:.0f}] | "
            f"{_cpu(a['training_cpu_seconds'], a['runs'])} | "
            f"{', '.join(f'{t:,}' for t in a['timesteps'])} |"
        )
    rate = result.get("perfect_bet_rate")
    shown = f"{rate['estimate']:.1%}" if rate else "n/a"
    lines.append(f"| perfect bettor (the optimum) | | 1 | 0 | 0 | | {shown} | | | |")
    note = (
        f"{result['task']}, scored on {result['hands']:,} held-out hands ({result['held_out']['tables']} "
        f"tables x {result['held_out']['hands_per_table']:,}, seed {result['held_out']['seed']}); the "
        f"perfect bettor earns {perfect * 1000:+.2f} units per 1,000 hands there."
    )
    taken = sum("recorded" in r for r in result["runs"])
    if taken:
        note += (
            f" {taken} of the {len(result['runs'])} runs are recorded rows ({', '.join(result['recorded'])})."
        )
    better = [
        f"P({pair}) {_interval(p, digits=2, key='estimate')}"
        for pair, p in result.get("probability_of_improvement", {}).items()
    ]
    if better:
        lines += [
            "",
            "Probability of improvement (rliable; 0.5: neither is better): " + "; ".join(better) + ".",
        ]
    return "\n".join([note, "", *lines])


def report(result: dict) -> str:
    """The study as text: the table and the time it took."""
    return f"{table(result)}\n\n{result['timings']['total_s']:.0f} s in all (training, curves and scoring)"


CSV_FIELDS = (
    "algorithm",
    "seed",
    "timesteps",
    "training_seconds",
    "normalized_score",
    "normalized_score_lo",
    "normalized_score_hi",
    "regret_per_hand",
    "exact_profit_per_hand",
    "perfect_profit_per_hand",
    "realized_profit_per_hand",
    "bet_rate",
    "training_cpu_seconds",
    "perfect_bet_rate",
)
OPTIONAL_RECORDED = ("realized_profit_per_hand", "training_cpu_seconds", "perfect_bet_rate")
RECORDED_FIELDS = tuple(f for f in CSV_FIELDS if f not in OPTIONAL_RECORDED)
"""The columns a recorded run's row needs (:func:`recorded_runs`); ``realized_profit_per_hand``,
``training_cpu_seconds`` and ``perfect_bet_rate`` are read where present."""
RECORDED_EXTRA = ("perfect_profit_per_hand", "realized_profit_per_hand", "perfect_bet_rate")
"""The score's figures a recorded row carries besides :data:`FIGURES`."""


def write_csv(runs: list[dict], path: Path) -> Path:
    """``benchmark.csv``: one row per run (a recorded run's row as it was read)."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CSV_FIELDS))
        writer.writeheader()
        for r in runs:
            s = r["score"]
            row = {k: s[k]["estimate"] for k in CSV_FIELDS if k in s and isinstance(s[k], dict)}
            writer.writerow(
                {
                    **row,
                    "algorithm": r["algorithm"],
                    "seed": r["seed"],
                    "timesteps": r["timesteps"],
                    "training_seconds": r["training_seconds"],
                    "training_cpu_seconds": r.get("training_cpu_seconds"),
                    "normalized_score_lo": s["normalized_score"]["ci95"][0],
                    "normalized_score_hi": s["normalized_score"]["ci95"][1],
                }
            )
    return path


def write_outputs(result: dict, folder: Path) -> list[Path]:
    """The files of :data:`OUTPUT_NAMES` under ``folder``."""
    (folder / "benchmark.json").write_text(strict_json.dumps(result, indent=1))
    (folder / "benchmark.md").write_text(table(result) + "\n")
    (folder / "benchmark.txt").write_text(report(result) + "\n")
    write_csv(result["runs"], folder / "benchmark.csv")
    plot_curves(result, folder / "curves.png")
    return [folder / n for n in OUTPUT_NAMES]


def plot_curves(result: dict, path: Path) -> Path:
    """Exact profit per 1,000 hands of the greedy policy against training seconds (left) and hands of
    training (right, which the machine's load does not stretch): one colour per algorithm, one line
    per seed, the perfect bettor's level (on the curve's hands) dashed."""
    plt = plotting.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    perfect = math.nan
    for k, name in enumerate(result["algorithms"]):
        labelled = False  # (a recorded run has no curve: the label goes on the first drawn line)
        for r in (x for x in result["runs"] if x["algorithm"] == name):
            rows = [p for p in r["curve"] if p.get("training_seconds") is not None]
            if not rows:
                continue
            perfect = rows[0]["perfect_exact"]
            y = [1000 * p["learned_exact"] for p in rows]
            style = {"color": f"C{k}", "lw": 1.2, "ms": 3, "alpha": 0.75}
            axes[0].plot(
                [p["training_seconds"] for p in rows], y, "o-", label=None if labelled else name, **style
            )
            labelled = True
            axes[1].plot([p["timesteps"] / 1e6 for p in rows], y, "o-", **style)
    for ax in axes:
        if math.isfinite(perfect):
            ax.axhline(1000 * perfect, color="k", ls="--", lw=1, label="perfect bettor (the optimum)")
            ax.axhline(950 * perfect, color="k", ls=":", lw=0.8, label="95% of the optimum")
        if math.isfinite(perfect) and perfect > 0:
            # (an initial policy that bets at random loses far below: off the axis)
            ax.set_ylim(-0.3 * 1000 * perfect, 1.15 * 1000 * perfect)
        ax.axhline(0.0, color="grey", lw=0.6, label="never bet")
    axes[0].set_xlabel("training wall time (s; the curve's own scoring left out)")
    axes[1].set_xlabel("hands of training (millions)")
    axes[0].set_ylabel("exact profit per 1,000 hands (units)")
    fig.suptitle(f"{result['task']}: exact learning curves, one line per training seed", fontsize=9)
    axes[0].legend(fontsize=7, loc="lower right")
    return plotting.save(fig, path)


def _identity(config: BenchmarkConfig) -> dict:
    """What every kept run depends on besides its own train config (in its name): the task and the
    held-out deals. The seeds, the algorithms and the bootstrap are left out, so that a study given
    more seeds or another algorithm trains only the runs it lacks."""
    return {"config": config.model_dump(mode="json", include={"task", "tables", "hands", "seed", "curve"})}


main = study.command(
    "benchmark", BenchmarkConfig, OUTPUT_NAMES, run, write_outputs, report, identity=_identity
)
"""``pb-gym experiment benchmark CONFIG``: train and score every run (resuming the runs an interrupted
study kept in ``out/.partial``), print the table, write ``out``
(:func:`pb_gym.experiments.common.study.command`)."""


__all__ = [
    "AlgorithmRun",
    "BenchmarkConfig",
    "CurveConfig",
    "aggregate",
    "main",
    "plan_runs",
    "recorded_runs",
    "run",
    "summarize",
    "table",
    "train_and_score",
    "train_config",
    "write_csv",
    "write_outputs",
]
