"""Evaluate betting systems side by side from a YAML study config (``pb-gym evaluate CONFIG``): the study.

Every system plays the same dealt hands (common random numbers): the systems are the seats of one
table session (:class:`pb_gym.session.Session`), session ``s`` is its table ``s``, and each system keeps
its own bankroll over those hands. Differences between systems are therefore differences of staking,
not of luck. The session applies the table's stake rules, settles, and ends a system's session at
ruin (bankroll below the table minimum), at the stop-loss or at the win goal; an ended session stops
betting; the study's hand limit ends them all. A chunk whose sessions have all ended deals no more
hands: what it reports is what those hands would have left it (:meth:`ChunkPlay.finish`).

The study is cut into chunks of sessions (:mod:`pb_gym.experiments.common.scale`); a chunk returns mergeable
statistics (sums, counts, histograms, the bounded summaries of :mod:`pb_gym.experiments.evaluate.summary`),
and the chunks are merged a batch at a time in chunk order, so that a study needs the memory of a few
chunks however many sessions it has. The files, one job each:

* ``pb_gym/experiments/evaluate/settings.py``: the YAML schema (derived from ``Rules`` and the systems'
  constructors);
* ``pb_gym/experiments/evaluate/chunk_play.py``: the session loop of one chunk (:class:`ChunkPlay`,
  :func:`run_chunk`), the hand's compiled pass in ``hand.py`` and the seats' running statistics in
  ``ledger.py``;
* ``pb_gym/experiments/evaluate/__init__.py`` (this file): the merge, :func:`run_study` and ``main``;
* ``pb_gym/experiments/evaluate/summary.py``: the mergeable summaries of the bankrolls and their quantiles;
* ``pb_gym/experiments/evaluate/report.py``: the per-system figures, the terminal table, JSON and CSV;
  ``figures.py``: the plots.
"""

from __future__ import annotations

import functools
import os
import time

import numpy as np

from pb_gym import engine, memory
from pb_gym import progress as progress_display
from pb_gym import rules as R
from pb_gym.experiments.common import chunk_store, outputs, plotting, scale
from pb_gym.experiments.common.yaml_config import ConfigError, load
from pb_gym.experiments.evaluate import exact_chain
from pb_gym.experiments.evaluate import summary as summaries
from pb_gym.experiments.evaluate.chunk_play import (
    FAN_BINS,
    STATE_CODES,
    STATES,
    ChunkPlay,
    checkpoint_hands,
    fan_range,
    run_chunk,
)
from pb_gym.experiments.evaluate.report import (
    EXACT_OUTPUT_NAMES,
    OUTPUT_NAMES,
    fan_summary,
    json_report,
    print_report,
    system_summary,
    write_outputs,
)
from pb_gym.experiments.evaluate.settings import TOLERANCE, StudyConfig, make_system
from pb_gym.experiments.evaluate.summary import FAN_EXACT_VALUES, QUANTILES
from pb_gym.parallel import cores


# ------------------------------------------------------------------------------------- the merge
def sample_lists(samples: np.ndarray, length: int) -> list:
    """A system's sample paths ``(paths, hands recorded)`` as the report's lists of ``length``
    bankrolls (hand 0 to the last): a path recorded to fewer hands (a chunk that stopped when its
    sessions had ended, :meth:`ChunkPlay.finish`) keeps its last bankroll for the rest. The bankroll
    a path ends on, often for most of its hands, is one float object repeated, not one a hand (8
    bytes a hand rather than 32); the values are those of ``tolist()`` of the whole path."""
    if samples.ndim < 2:
        return samples.tolist()  # (no sample paths)
    paths = []
    for path in samples:
        bits = path.view(np.int64)  # (equal bits: -0.0 is not 0.0, and a NaN is itself)
        changes = np.flatnonzero(bits[1:] != bits[:-1])
        last = int(changes[-1]) + 1 if changes.size else 0  # where the last value starts
        values = [float(path[last])] * length
        values[:last] = path[:last].tolist()  # (in place: no second list of the whole path)
        paths.append(values)
    return paths


SUMMED = (
    "sessions",
    "hands_dealt",
    "sum_net",
    "sum_wagered",
    "sum_net2",
    "sum_wagered2",
    "sum_net_wagered",
    "bets",
    "sum_max_drawdown",
    "wagered_by_spot",
    "exact_ev_wagered",
    "table_capped",
    "bankroll_capped",
    "fan",
    "states",
)
"""The statistics of a system that the merge adds up."""


def merge_into(merged: list[dict] | None, chunk: dict, final_bankrolls: bool = True) -> list[dict]:
    """Add one chunk's statistics to the merged ones (None before the first chunk), system by system.
    Chunks must come in chunk order: the float sums are then the same, to the last bit, however the
    chunks are batched (sums, counts and histograms add; ranges take the min and max; the exact value
    tables and the final-bankroll summaries merge exactly; the sample paths are the first chunk's).
    ``final_bankrolls``: keep every session's final bankroll (a list of the chunks' arrays)."""
    if merged is None:
        merged = []
        for i, part in enumerate(chunk["systems"]):
            total = {key: 0 + part[key] for key in SUMMED}  # as sum() over chunks starts: 0 + first
            total.update(
                fan_min=part["fan_min"].copy(),
                fan_max=part["fan_max"].copy(),
                fan_values=[summaries.merge_value_counts([table]) for table in part["fan_values"]],
                ended=dict(part["ended"]),
                max_drawdown=part["max_drawdown"],
                max_stake=part["max_stake"],
                final=part["final"],
                samples=part["samples"],
            )
            if final_bankrolls:
                total["final_bankrolls"] = [part["final_bankrolls"]]
                total["session_hands"] = [part["session_hands"]]
            for key, name in (
                ("names", "name"),
                ("types", "type"),
                ("bets", "bet"),
                ("counting", "counting"),
                ("conditional", "conditional"),
            ):
                total[name] = chunk[key][i]
            merged.append(total)
        return merged
    for total, part in zip(merged, chunk["systems"], strict=True):
        for key in SUMMED:
            total[key] = total[key] + part[key]
        total["fan_min"] = np.minimum(total["fan_min"], part["fan_min"])
        total["fan_max"] = np.maximum(total["fan_max"], part["fan_max"])
        total["fan_values"] = [
            summaries.merge_value_counts([mine, theirs])
            for mine, theirs in zip(total["fan_values"], part["fan_values"], strict=True)
        ]
        total["ended"] = {reason: total["ended"][reason] + part["ended"][reason] for reason in total["ended"]}
        total["max_drawdown"] = max(total["max_drawdown"], part["max_drawdown"])
        total["max_stake"] = max(total["max_stake"], part["max_stake"])
        total["final"] = summaries.merge_final(total["final"], part["final"])
        if "final_bankrolls" in total:
            total["final_bankrolls"].append(part["final_bankrolls"])
            total["session_hands"].append(part["session_hands"])
    return merged


def merge(chunks: list[dict]) -> list[dict]:
    """The merged statistics of ``chunks`` (in chunk order), system by system (see :func:`merge_into`)."""
    merged = None
    for chunk in chunks:
        merged = merge_into(merged, chunk)
    if merged is None:
        raise ValueError("merge needs at least one chunk")
    for total in merged:
        if "final_bankrolls" in total:
            total["final_bankrolls"] = np.concatenate(total["final_bankrolls"])
            total["session_hands"] = np.concatenate(total["session_hands"])
    return merged


# ------------------------------------------------------------------------------------- the study
BATCH_BYTES = 256 << 20
"""Finished chunks are merged once their results reach about this much memory (a batch of chunks is
run, merged, and let go), so that memory is bounded whatever the number of chunks."""
WORKING_BYTES_PER_SESSION_AND_SYSTEM = 178
"""A running chunk's memory per session and system: the ledger's rows, the stakes, the outcome, and
its entry in the seats' lists of live tables (8 bytes)."""


def chunk_result_bytes(config: StudyConfig) -> int:
    """The memory one finished chunk's result holds until it is merged (an upper bound): per system,
    the fan (a histogram, an exact table and the states at each checkpoint), the final-bankroll summary
    (at most :data:`~pb_gym.experiments.evaluate.summary.FINAL_EXACT_VALUES` values, or its buckets), and
    every session's final bankroll (the merge keeps them only for ``run_study(final_bankrolls=True)``).
    It depends on the chunk size, never on the number of sessions of the study."""
    chunk = min(config.chunk_sessions, config.sessions)
    fan = len(checkpoint_hands(config.hands)) * (
        (FAN_BINS + 1) * 8 + FAN_EXACT_VALUES * 16 + (len(STATES) + 2) * 8
    )
    final = min(chunk, summaries.FINAL_EXACT_VALUES) * 16
    samples = min(config.sample_paths, chunk) * (config.hands + 1) * 8
    per_system = fan + final + samples + 8 * chunk + 1024
    return len(config.systems) * per_system


def check_memory(config: StudyConfig, parallel: int, final_bankrolls: bool = False) -> int:
    """Refuse (:class:`pb_gym.memory.TooLarge`) a study this machine cannot hold, before anything
    runs; return the number of chunks merged at a time. The memory is that of the chunks running at
    once (``parallel`` of ``chunk_sessions`` sessions), of a batch of finished chunks and of the merged
    statistics: it does not grow with the number of sessions, except by every session's final bankroll
    when a caller asks for them (``final_bankrolls``, not ``pb-gym evaluate``)."""
    n_systems = len(config.systems)
    chunk = min(config.chunk_sessions, config.sessions)
    count = -(-config.sessions // config.chunk_sessions)
    per_chunk = chunk_result_bytes(config) + scale.CHUNK_OVERHEAD
    batch = min(count, max(parallel, BATCH_BYTES // per_chunk))
    # a table's shoe state, each system's ledger row and stakes, the exact odds if computed
    per_session = (
        engine.table_bytes(config.rules.to_rules()) + WORKING_BYTES_PER_SESSION_AND_SYSTEM * n_systems + 200
    )
    working = parallel * chunk * per_session
    kept = (batch + 1) * per_chunk  # a batch of results, and the merged statistics
    kept_finals = config.sessions * 16 * n_systems if final_bankrolls else 0  # bankroll and hands
    if kept_finals > working:
        advice = (
            f"lower `sessions` (every session's final bankroll is kept for the caller, "
            f"{memory.describe(16 * n_systems)} a session)"
        )
    else:
        advice = (
            f"lower `chunk_sessions` (a running chunk needs about "
            f"{memory.describe(per_session)} per session"
            + (f", {parallel} chunks at once" if parallel > 1 else "")
            + ")"
        )
    memory.require(
        working + kept + kept_finals,
        f"the study {config.name!r} ({config.sessions:,} sessions in chunks of {config.chunk_sessions:,})",
        advice,
    )
    return batch


def run_study(
    config: StudyConfig,
    progress: bool = False,
    backend: str = "threads",
    scheduler: str | None = None,
    workers: int | None = None,
    store: chunk_store.ChunkStore | None = None,
    final_bankrolls: bool = True,
) -> dict:
    """Play every system over the same dealt hands and return the report (JSON-ready but for the
    entries :func:`pb_gym.experiments.evaluate.report.json_report` leaves out).

    The sessions are cut into chunks of ``config.chunk_sessions`` (see
    :mod:`pb_gym.experiments.common.scale`); the
    report is identical whatever the backend that ran them. On ``threads`` (the default) the chunks
    run side by side on this process's cores, but serially for a study with a learned policy (it
    seeds torch's process-wide random state). The chunks are planned, run and merged a
    batch at a time (:func:`check_memory`), so the memory is bounded by the chunk size. With a ``store``
    (see :func:`pb_gym.experiments.common.outputs.chunk_store`) finished chunks are kept and an interrupted
    run
    resumes. ``final_bankrolls``: the report also holds every session's final bankroll
    (``report["final_bankrolls"][name]``) and hands dealt (``report["session_hands"]``: fewer than
    ``hands`` in a ``one_shoe`` study), 16 bytes a session and system: for callers that pair sessions
    across systems; ``pb-gym evaluate`` does without.
    """
    started = time.perf_counter()
    count = -(-config.sessions // config.chunk_sessions)
    if backend == "threads" and any(system.type == "sb3" for system in config.systems):
        # a learned policy seeds torch's process-wide random state: chunks side by side would
        # interleave its draws (and the report would depend on the threads' timing)
        backend = "serial"
    parallel = 1 if backend == "serial" else workers or os.cpu_count() or 1
    if backend == "threads":  # (as many chunks at once as scale.run runs: the cores, at most)
        parallel = min(workers or cores(), count)
    batch = check_memory(config, parallel, final_bankrolls)
    # hands dealt: counted hand by hand when the chunks run here, chunk by chunk otherwise
    tracker = progress_display.Progress(
        config.name,
        total=config.sessions * config.hands,
        chunks=count,
        per_item=config.hands,
        enabled=progress,
    )
    task = functools.partial(
        run_chunk,
        config.model_dump(mode="json"),
        show_progress=tracker if progress and backend in ("serial", "threads") else False,
    )
    merged = None
    with tracker:
        for first in range(0, count, batch):
            chunks = scale.plan(
                config.sessions, config.chunk_sessions, config.seed, range(first, min(first + batch, count))
            )
            for result in scale.run(
                task, chunks, backend, scheduler, workers, progress=tracker if progress else None, store=store
            ):
                merged = merge_into(merged, result, final_bankrolls)
    if merged is None:
        raise ValueError(f"the study {config.name!r} ran no chunk")
    systems = merged
    for stats in systems:
        if "final_bankrolls" in stats:
            stats["final_bankrolls"] = np.concatenate(stats["final_bankrolls"])
            stats["session_hands"] = np.concatenate(stats["session_hands"])
    rules = config.rules.to_rules()
    full_ev = config.table_bets().expected_values(R.full_shoe(rules.decks))
    checkpoints = checkpoint_hands(config.hands)
    edges = np.linspace(0.0, fan_range(config), FAN_BINS + 1)
    report = {
        "name": config.name,
        "sessions": config.sessions,
        "hands_per_session": config.hands,
        "one_shoe": config.one_shoe,
        "hands_dealt": systems[0]["hands_dealt"],
        "bankroll": config.bankroll,
        "table": config.table.model_dump(),
        "rules": config.rules.model_dump(),
        "seed": config.seed,
        "chunks": count,
        "chunk_sessions": config.chunk_sessions,
        "systems": [system_summary(stats, config, full_ev) for stats in systems],
        "checkpoints": checkpoints.tolist(),
        "timings": {"seconds": time.perf_counter() - started},
    }
    if config.exact:
        exact_chain.attach(report, config)
    report["paths"] = {
        stats["name"]: fan_summary(stats, edges, STATES)
        | {"samples": sample_lists(stats["samples"], config.hands + 1)}
        for stats in systems
    }
    report["final_summaries"] = {stats["name"]: stats["final"] for stats in systems}
    if final_bankrolls:
        report["final_bankrolls"] = {stats["name"]: stats["final_bankrolls"] for stats in systems}
        report["session_hands"] = systems[0]["session_hands"]  # the table's: the same for every seat
    return report


def _model_checksums(config: StudyConfig) -> dict:
    """The recorded SHA-256 of each learned model's files (a model retrained in the same folder makes
    another run: its finished chunks must not be resumed)."""
    import json

    from pb_gym.agents.learned import model_files

    return {
        system.model: json.loads(model_files(system.model)[1].read_text()).get("sha256")
        for system in config.systems
        if system.type == "sb3"
    }


def main(
    config_path: str,
    out: str | None = None,
    as_json: bool = False,
    backend: str = "threads",
    scheduler: str | None = None,
    workers: int | None = None,
    resume: bool | None = None,
) -> dict:
    """``pb-gym evaluate``: load and validate the config, run (on the backend), print, write outputs.

    ``out`` is checked before anything is computed; finished chunks are kept in ``out/.partial`` and a
    rerun resumes from them (``resume``: None resumes a matching unfinished run, False discards it);
    outputs are written only after every chunk has finished and been merged, into a staging folder
    moved into place whole (:mod:`pb_gym.experiments.common.outputs`). The report is the same on every
    backend, and
    resumed or not, except its ``timings``.
    """
    config = load(config_path, StudyConfig)
    destination = outputs.prepare(out, OUTPUT_NAMES + EXACT_OUTPUT_NAMES)
    if destination is not None:
        plotting.preload()  # (the figures are drawn after the run: matplotlib's import overlaps it)
    store = outputs.chunk_store(
        destination,
        {
            "study": "evaluate",
            "config": config.model_dump(mode="json"),
            "models": _model_checksums(config),
        },
        resume,
    )
    report = run_study(
        config,
        progress=not as_json,
        backend=backend,
        scheduler=scheduler,
        workers=workers,
        store=store,
        final_bankrolls=False,
    )
    if destination is not None:
        with destination.staging() as staged:
            written = write_outputs(report, staged)
        report["written"] = [str(destination.final_path(p, staged)) for p in written]
    if not as_json:
        print_report(report)
        if out is not None:
            print(outputs.wrote_line(report["written"]))
    return json_report(report)


__all__ = [
    "StudyConfig",
    "ConfigError",
    "run_study",
    "run_chunk",
    "ChunkPlay",
    "STATES",
    "STATE_CODES",
    "FAN_BINS",
    "checkpoint_hands",
    "fan_range",
    "merge",
    "merge_into",
    "main",
    "make_system",
    "check_memory",
    "chunk_result_bytes",
    "json_report",
    "print_report",
    "QUANTILES",
    "TOLERANCE",
]
