"""Gambler's ruin at the baccarat table: flat betting until a target or ruin, exactly and simulated.

``pb-gym experiment ruin CONFIG [--json] [--out DIR] [--resume|--no-resume] [--backend
serial|processes|dask] [--scheduler ADDRESS] [--workers N]``

A session starts with a bankroll of ``start`` units and stakes one unit on the same bet every hand:

* ``player``: +1 on a player win, -1 on a banker win, 0 on a tie (a push);
* ``banker``: +0.95 on a banker win (5% commission; the rules' banker variant is used), -1 on a player
  win, 0 on a tie;
* ``fair_coin``: +1 / -1 with probability 1/2 each, for contrast (simulated with numpy, not cards).

**Stopping rule** (the same in the Markov chain and in the simulation): the session stops as a *success*
as soon as the bankroll is >= ``target`` units, and as a *ruin* as soon as the bankroll is < 1 unit
(it can no longer cover the one-unit stake; with +1/-1 steps that is exactly 0). A banker win that
would carry the bankroll past the target is taken in full (the overshoot is kept; the session is a
success). Hands are counted including ties.

This file is the study's runner: its config schema, :func:`run` and the command's :func:`main`. Each
part of the study has its own file:

* :mod:`pb_gym.experiments.ruin.model`: the exact answer (the classical closed form of the +1/-1 walk and a
  banded Markov chain for any bet);
* :mod:`pb_gym.experiments.ruin.simulation`: sessions dealt from real shoes by the engine (and the fair coin),
  in chunks that merge to the same bits on every backend;
* :mod:`pb_gym.experiments.ruin.martingale`: the Martingale illusion (a banker Martingale under table limits,
  through ``pb-gym evaluate``'s machinery);
* :mod:`pb_gym.experiments.ruin.lesson`: the text report, the teaching page ``report.md`` and the
figures.

The names of those modules that the tests, the notebook and older code use are importable from here.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from pb_gym import engine, strict_json
from pb_gym.experiments.common import chunk_store, scale, study
from pb_gym.experiments.common.yaml_config import ConfigError, RulesConfig, Strict
from pb_gym.experiments.ruin.lesson import (
    MARTINGALE_SECTION,
    plot,
    plot_martingale,
    report,
    teaching_page,
    write_outputs,
)
from pb_gym.experiments.ruin.martingale import MartingaleIllusion, martingale_illusion
from pb_gym.experiments.ruin.martingale import check_memory as check_martingale_memory
from pb_gym.experiments.ruin.model import (
    closed_form,
    exact_curves,
    exact_lookup,
    markov_chain,
    step_distribution,
)
from pb_gym.experiments.ruin.simulation import (
    merge,
    session_counts,
    simulate_chunk,
    simulate_coin,
    simulate_engine,
    summarize,
)

Bet = Literal["player", "banker", "fair_coin"]


# --------------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------------
class VsStart(Strict):
    """Curves against the starting bankroll, for one target."""

    target: int = Field(20, ge=2, le=1000, description="the target bankroll, in units")
    simulate: tuple[int, ...] = Field(
        (2, 5, 10, 15, 18), min_length=1, description="starting bankrolls also simulated (below target)"
    )

    @field_validator("simulate")
    @classmethod
    def _inside(cls, simulate: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        target = info.data.get("target")
        bad = [s for s in simulate if target is not None and not 1 <= s < target]
        if bad and target is not None:
            raise ValueError(
                f"every starting bankroll must be in 1..{target - 1} (below the "
                f"target {target}); {bad[0]} is not{_default_note(cls, 'simulate', simulate)}"
            )
        return simulate


def _default_note(model: type[Strict], key: str, value: tuple[int, ...]) -> str:
    """Where ``value`` is ``key``'s default, say so: the user did not write it, and must now."""
    if value != model.model_fields[key].default:
        return ""
    return f" ({key} was not given, and its default {list(value)} does not fit: give {key} too)"


class VsTarget(Strict):
    """Curves against the target, for one starting bankroll."""

    start: int = Field(10, ge=1, le=1000, description="the starting bankroll, in units")
    max_target: int = Field(100, ge=2, le=1000, description="the curve's largest target, in units")
    simulate: tuple[int, ...] = Field(
        (12, 15, 20, 40, 70, 100), min_length=1, description="targets also simulated (above start)"
    )

    @field_validator("max_target")
    @classmethod
    def _above_start(cls, max_target: int, info: ValidationInfo) -> int:
        start = info.data.get("start")
        if start is not None and max_target <= start:
            raise ValueError(f"must be above start ({start})")
        return max_target

    @field_validator("simulate")
    @classmethod
    def _inside(cls, simulate: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        start, top = info.data.get("start"), info.data.get("max_target")
        if start is None or top is None:
            return simulate
        bad = [t for t in simulate if not start < t <= top]
        if bad:
            raise ValueError(
                f"every target must be in {start + 1}..{top} (above start, at most "
                f"max_target); {bad[0]} is not{_default_note(cls, 'simulate', simulate)}"
            )
        return simulate


class RuinConfig(Strict):
    """``configs/experiments/ruin.yaml``."""

    martingale: MartingaleIllusion | None = Field(
        MartingaleIllusion(), description="the Martingale illusion under table maximums (null: left out)"
    )

    rules: RulesConfig = Field(RulesConfig(), description="the rules of the shoes dealt")
    bets: tuple[Bet, ...] = Field(("player", "banker", "fair_coin"), description="the bets studied")
    vs_start: VsStart = Field(VsStart(), description="curves against the starting bankroll")
    vs_target: VsTarget = Field(VsTarget(), description="curves against the target")
    sessions: int = Field(2000, ge=10, description="simulated sessions per (start, target) point")
    chunk_sessions: int = Field(
        5000,
        ge=1,
        description="simulated sessions per chunk (the unit of work of a backend; changes the dealt hands)",
    )
    seed: int = Field(1, ge=0, description="seed of the deal (chunk i: SeedSequence(seed).spawn(n)[i])")
    max_hands: int = Field(1_000_000, ge=100, description="safety cap on a session's length")

    @field_validator("bets")
    @classmethod
    def _distinct(cls, bets: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(bets)) != len(bets) or not bets:
            raise ValueError("one or more of player, banker, fair_coin, each at most once")
        return bets


# --------------------------------------------------------------------------------------------------
# The study
# --------------------------------------------------------------------------------------------------
def run(
    config: RuinConfig,
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    store: chunk_store.ChunkStore | None = None,
) -> dict:
    """Exact curves, simulations at the configured points, and their comparison (JSON-ready).

    The simulation runs in chunks on ``backend`` (see :func:`pb_gym.experiments.common.scale.run`); the
    result is the
    same, to the last bit, on every backend, except the wall-clock times under ``"timings"``. The
    Martingale section runs in this process through :func:`pb_gym.experiments.evaluate.run_study` (its
    chunks side by side on threads). With a ``store``
    both the simulation and the Martingale section keep their finished chunks, and a rerun of an
    interrupted study computes only the missing ones (:mod:`pb_gym.experiments.ruin.martingale`).
    """
    rules = config.rules.to_rules()
    vs, vt = config.vs_start, config.vs_target
    points = [(s, vs.target) for s in vs.simulate] + [(vt.start, t) for t in vt.simulate]
    points = list(dict.fromkeys(points))  # the same point may appear on both curves
    n_bets = len(config.bets)
    scale.require_memory(
        "the ruin study",
        len(points) * config.sessions,
        config.chunk_sessions,
        item="session",
        items_key="sessions",
        chunk_key="chunk_sessions",
        working_per_item=engine.table_bytes(rules) + 64 * n_bets,  # a table, each bet's bankroll
        kept_per_chunk=len(points) * n_bets * 6 * 8 + 1024,  # integer counts per point and bet
        parallel=1 if backend == "serial" else workers or os.cpu_count() or 1,
    )
    if config.martingale is not None:  # refused now, not after the simulation
        check_martingale_memory(config.martingale, config.rules, config.seed)

    t0 = time.perf_counter()
    curves = exact_curves(rules, config.bets, vs.target, vt.start, vt.max_target)
    exact_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    chunks = scale.plan(len(points) * config.sessions, config.chunk_sessions, config.seed)
    task = functools.partial(
        simulate_chunk,
        rules=rules,
        bets=config.bets,
        points=points,
        sessions=config.sessions,
        max_hands=config.max_hands,
    )
    with scale.progress_printer("ruin: simulation", progress, len(chunks)) as printer:
        counts = merge(scale.run(task, chunks, backend, scheduler, workers, printer, store=store))
    simulated = {
        bet: summarize(counts[bet], points, exact_lookup(curves[bet]["steps"])) for bet in config.bets
    }
    simulate_s = time.perf_counter() - t0

    z = [abs(r[key]) for rows in simulated.values() for r in rows for key in ("p_win_z", "hands_z")]
    t0 = time.perf_counter()
    illusion = (
        martingale_illusion(config.martingale, config.rules, config.seed, store)
        if config.martingale is not None
        else None
    )
    martingale_s = time.perf_counter() - t0
    return {
        "experiment": "ruin",
        "rules": config.rules.model_dump(),
        "stopping_rule": "success when bankroll >= target units; ruin when bankroll < 1 unit (the "
        "one-unit stake cannot be covered); a winning overshoot is kept; ties push "
        "and count as hands",
        "sessions_per_point": config.sessions,
        "seed": config.seed,
        "chunk_sessions": config.chunk_sessions,
        "chunks": len(chunks),
        "exact": curves,
        "simulated": simulated,
        "max_abs_z": float(max(z)) if z else None,
        "martingale": illusion,
        "timings": {"exact_s": exact_s, "simulate_s": simulate_s, "martingale_s": martingale_s},
    }


OUTPUT_NAMES = ("report.md", "ruin.png", "ruin.json", "martingale.png")
"""The files ``--out`` receives (a reused ``--out`` folder may hold only these)."""


def _plain_json(result: dict, config: RuinConfig) -> dict:
    """The result in plain JSON types: what ruin.json holds is what :func:`main` returns."""
    return json.loads(strict_json.dumps(result))


main = study.command("ruin", RuinConfig, OUTPUT_NAMES, run, write_outputs, report, complete=_plain_json)
"""``pb-gym experiment ruin CONFIG``: the study's entry point
(:func:`pb_gym.experiments.common.study.command`)."""


__all__ = [
    "RuinConfig",
    "MartingaleIllusion",
    "ConfigError",
    "main",
    "run",
    "OUTPUT_NAMES",
    "closed_form",
    "markov_chain",
    "step_distribution",
    "exact_curves",
    "simulate_engine",
    "simulate_coin",
    "session_counts",
    "simulate_chunk",
    "merge",
    "summarize",
    "report",
    "teaching_page",
    "plot",
    "plot_martingale",
    "write_outputs",
    "martingale_illusion",
    "MARTINGALE_SECTION",
]
