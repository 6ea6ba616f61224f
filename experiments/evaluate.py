"""Evaluate betting systems side by side from a YAML study config (``pb-gym evaluate CONFIG``).

Read top to bottom: the config schema, the session loop, the statistics, the report and plots.

Every system plays the same dealt hands (common random numbers): session ``s`` is table ``s`` of one
engine state, and each system keeps its own bankroll over those hands. Differences between systems
are therefore differences of staking, not of luck. A session ends at the hand limit, at ruin (bankroll
below the table minimum), at the stop-loss, or at the win goal; an ended session stops betting.

Statistics are computed over sessions (independent shoes): EV per unit wagered is the ratio
``sum(net) / sum(wagered)`` with a 95% confidence interval by the delta method, and it is set against
the exact house edge of the bets the system placed (stake-weighted; for a counting system, the exact
EV of the composition before each hand it bet on).
"""

from __future__ import annotations

import csv
import functools
import math
import os
import time
from pathlib import Path
from typing import Annotated, Literal, Union

import numpy as np
from pydantic import Field, field_validator, model_validator

from agents import systems as S
from experiments import chunk_store, outputs, scale
from experiments.config import ConfigError, RulesConfig, Strict, TableConfig, load
from pb_gym import engine, exact, strict_json
from pb_gym import progress as progress_display
from pb_gym import rules as R

Z95 = 1.959963984540054
Bet = Literal["banker", "player", "tie", "player_pair", "banker_pair", "dragon7", "panda8"]


# ---------------------------------------------------------------------------------------- config
class SystemConfig(Strict):
    """Fields every system takes."""

    name: str | None = None
    bet: Bet = "banker"
    base: float = Field(1.0, gt=0, description="base stake in betting units")
    on_cap: Literal["cap", "reset"] = "cap"


class FlatConfig(SystemConfig):
    type: Literal["flat"]


class MartingaleConfig(SystemConfig):
    type: Literal["martingale"]
    recovering: bool = False


class GrandMartingaleConfig(SystemConfig):
    type: Literal["grand_martingale"]
    recovering: bool = False


class ParoliConfig(SystemConfig):
    type: Literal["paroli"]
    wins_to_reset: int = Field(3, ge=1)


class ReverseMartingaleConfig(SystemConfig):
    type: Literal["reverse_martingale"]


class DAlembertConfig(SystemConfig):
    type: Literal["dalembert"]


class FibonacciConfig(SystemConfig):
    type: Literal["fibonacci"]


class LabouchereConfig(SystemConfig):
    type: Literal["labouchere"]
    line: list[Annotated[float, Field(gt=0)]] = Field(default_factory=lambda: [1, 2, 3, 4],
                                                     min_length=1)


class OneThreeTwoSixConfig(SystemConfig):
    type: Literal["one_three_two_six"]


class OscarsGrindConfig(SystemConfig):
    type: Literal["oscars_grind"]


class FollowWinnerConfig(SystemConfig):
    type: Literal["follow_winner"]


class ChopConfig(SystemConfig):
    type: Literal["chop"]


class RandomConfig(SystemConfig):
    type: Literal["random"]
    bets: list[Bet] = Field(default_factory=lambda: ["banker", "player"], min_length=1)
    p_bet: float = Field(1.0, gt=0, le=1)


class KellyConfig(SystemConfig):
    type: Literal["kelly"]
    bets: list[Bet] = Field(default_factory=lambda: ["banker"], min_length=1)
    fraction: float = Field(1.0, gt=0, le=1)


class Sb3Config(SystemConfig):
    """A learned policy saved by ``pb-gym train`` (agents/learned.py; needs the ``rl`` extra)."""

    type: Literal["sb3"]
    model: str = Field(description="model.zip written by pb-gym train, or its folder")
    deterministic: bool = True

    @field_validator("model")
    @classmethod
    def _model_exists(cls, model: str) -> str:
        path = Path(model)
        zip_path = path / "model.zip" if path.is_dir() else path
        if not zip_path.is_file() and not zip_path.with_suffix(".zip").is_file():
            raise ValueError(f"no saved model at {model!r} (a model.zip written by pb-gym train, "
                             "or its folder)")
        if not (zip_path.parent / "env.json").is_file():
            raise ValueError(f"{str(zip_path.parent / 'env.json')!r} is missing (pb-gym train saves the "
                             "environment settings of the model there)")
        return model


class NeverConfig(SystemConfig):
    """The abstaining baseline: never bets."""

    type: Literal["never"]


class PerfectConfig(SystemConfig):
    """Flat perfect-information bettor: ``base`` units on the best of ``bets`` when its exact EV > 0."""

    type: Literal["perfect"]
    bets: list[Bet] = Field(default_factory=lambda: ["dragon7", "panda8"], min_length=1)


AnySystem = Annotated[Union[
    FlatConfig, MartingaleConfig, GrandMartingaleConfig, ParoliConfig, ReverseMartingaleConfig,
    DAlembertConfig, FibonacciConfig, LabouchereConfig, OneThreeTwoSixConfig, OscarsGrindConfig,
    FollowWinnerConfig, ChopConfig, RandomConfig, KellyConfig, Sb3Config, NeverConfig, PerfectConfig,
], Field(discriminator="type")]


class StudyConfig(Strict):
    """A study: rules, table, sessions and the systems to compare."""

    name: str = "study"
    rules: RulesConfig = RulesConfig()
    table: TableConfig = TableConfig()
    bankroll: float = Field(1000.0, gt=0, description="starting bankroll, in money")
    sessions: int = Field(10_000, ge=1)
    hands: int = Field(1_000, ge=1, description="hands per session at most")
    stop_loss: float | None = Field(None, gt=0, description="stop when down by this much money")
    win_goal: float | None = Field(None, gt=0, description="stop when up by this much money")
    seed: int = Field(0, ge=0)
    sample_paths: int = Field(5, ge=0, le=50)
    chunk_sessions: int = Field(5000, ge=1, description="sessions per chunk (scale-out unit)")
    exact_conditional: bool = Field(False, description="also compute, for every system, the exact EV "
                                    "of each bet from the cards unseen before it (slower)")
    systems: list[AnySystem] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> "StudyConfig":
        rules = self.rules.to_rules()
        names = set()
        for i, system in enumerate(self.systems):
            bets = [system.bet] + list(getattr(system, "bets", []))
            for bet in bets:
                if bet not in rules.offered_bets:
                    raise ValueError(f"systems.{i}: bet {bet!r} is not offered by these rules; "
                                     f"offered: {', '.join(rules.offered_bets)}")
            if system.type != "kelly" and system.base * self.table.unit < self.table.minimum - 1e-9:
                raise ValueError(f"systems.{i}.base: {system.base:g} unit(s) of {self.table.unit:g} is "
                                 f"below the table minimum {self.table.minimum:g}")
            if system.type == "sb3":  # refuse a model trained for other rules now, not mid-run
                from agents.learned import training_config, training_mismatch

                problem = training_mismatch(training_config(system.model), rules,
                                            self.table.minimum / self.table.unit,
                                            self.table.maximum / self.table.unit)
                if problem:
                    raise ValueError(f"systems.{i} (model {system.model}): {problem}")
            name = system.name or default_name(system)
            if name in names:
                raise ValueError(f"systems.{i}: two systems are named {name!r}; give one a `name`")
            names.add(name)
        if self.bankroll < self.table.minimum:
            raise ValueError(f"bankroll {self.bankroll:g} is below the table minimum "
                             f"{self.table.minimum:g}")
        return self


def default_name(system: SystemConfig) -> str:
    """A display name: the type, and the bet when it is not banker."""
    suffix = "" if system.bet == "banker" or system.type in ("follow_winner", "chop", "random",
                                                             "kelly") else f" ({system.bet})"
    return f"{system.type}{suffix}"


def make_system(config: SystemConfig) -> S.BettingSystem:
    """The betting system a config entry describes."""
    params = config.model_dump(exclude={"type"})
    params["name"] = config.name or default_name(config)
    if config.type in ("random", "kelly", "perfect"):
        params.pop("bet")
    if config.type in ("sb3", "never", "perfect"):  # lazily: evaluate runs without torch otherwise
        from agents import learned

        return {"sb3": learned.Sb3Policy, "never": learned.NeverBet,
                "perfect": learned.PerfectInformation}[config.type](**params)
    return S.SYSTEMS[config.type](**params)


# ------------------------------------------------------------------------------------- the loop
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
FAN_BINS = 400
FAN_EXACT_VALUES = 256
"""A chunk keeps every distinct bankroll of a checkpoint, with its count, when there are at most this
many (e.g. a system that seldom bets, or the first hands); the quantiles are then exact."""
FAN_EXACT_VALUES_MERGED = 4096
"""The merged table of a checkpoint stays exact up to this many distinct bankrolls."""
STATES = ("playing", "ruin", "target", "stop_loss")
"""Where each session stands at a checkpoint: still playing, or ended by ruin, goal or stop-loss."""


def fan_range(config: StudyConfig) -> float:
    """Upper edge of the bankroll histograms behind the fan plots (values above it fall in the top bin)."""
    return max(config.bankroll + (config.win_goal or 0.0), 2.0 * config.bankroll)


class Ledger:
    """One system over the sessions of one chunk: bankrolls, and mergeable running statistics."""

    def __init__(self, system: S.BettingSystem, n: int, bankroll: float, n_checkpoints: int) -> None:
        self.system = system
        self.bankroll = np.full(n, bankroll)
        self.active = np.ones(n, dtype=bool)
        self.peak = self.bankroll.copy()
        self.max_drawdown = np.zeros(n)
        self.wagered = np.zeros(n)
        self.net = np.zeros(n)
        self.bets = np.zeros(n, dtype=np.int64)
        self.exact_ev_wagered = 0.0  # sum of stake x exact EV (for counting systems)
        self.wagered_by_spot = np.zeros(R.N_BETS)
        self.table_capped = 0
        self.bankroll_capped = 0
        self.max_stake = 0.0
        self.ended = {"ruin": np.zeros(n, dtype=bool), "target": np.zeros(n, dtype=bool),
                      "stop_loss": np.zeros(n, dtype=bool)}
        self.fan = np.zeros((n_checkpoints, FAN_BINS + 1), dtype=np.int64)
        # exact distinct bankrolls and counts per checkpoint (None where there are too many), the
        # exact range, and the sessions in each state (STATES)
        self.fan_values: list[tuple[np.ndarray, np.ndarray] | None] = [None] * n_checkpoints
        self.fan_min = np.zeros(n_checkpoints)
        self.fan_max = np.zeros(n_checkpoints)
        self.states = np.zeros((n_checkpoints, len(STATES)), dtype=np.int64)
        self.path_rows: list[np.ndarray] = []

    def statistics(self) -> dict:
        """What the merge needs: sums, counts, histograms, and the final bankroll of each session."""
        return {
            "sessions": len(self.net),
            "sum_net": float(self.net.sum()), "sum_wagered": float(self.wagered.sum()),
            "sum_net2": float(self.net @ self.net), "sum_wagered2": float(self.wagered @ self.wagered),
            "sum_net_wagered": float(self.net @ self.wagered), "bets": int(self.bets.sum()),
            "ended": {reason: int(hit.sum()) for reason, hit in self.ended.items()},
            "sum_max_drawdown": float(self.max_drawdown.sum()),
            "max_drawdown": float(self.max_drawdown.max()),
            "wagered_by_spot": self.wagered_by_spot, "exact_ev_wagered": self.exact_ev_wagered,
            "table_capped": self.table_capped, "bankroll_capped": self.bankroll_capped,
            "max_stake": self.max_stake, "fan": self.fan, "final": self.bankroll,
            "fan_values": self.fan_values, "fan_min": self.fan_min, "fan_max": self.fan_max,
            "states": self.states,
            "samples": np.array(self.path_rows).T,
        }


def run_chunk(config_data: dict, chunk: scale.Chunk,
              show_progress: "bool | progress_display.Progress" = False) -> dict:
    """Play every system over the hands of one chunk of sessions (the scale-out task).

    The chunk's seed deals its sessions and seeds its systems; everything returned merges exactly.
    ``show_progress``: the study's :class:`pb_gym.progress.Progress` to count the hands dealt in (the
    serial backend), or True for a display of this chunk alone.
    """
    config = StudyConfig.model_validate(config_data)
    rules = config.rules.to_rules()
    table = config.table
    n, hands = chunk.size, config.hands
    deal_seed, *system_seeds = chunk.child_seeds(1 + len(config.systems))
    state = engine.init(rules, n, seed=deal_seed)
    out = engine.HandResult.empty(n)
    checkpoints = checkpoint_hands(hands)
    fan_edges = np.linspace(0.0, fan_range(config), FAN_BINS + 1)
    samples = min(config.sample_paths, n) if chunk.index == 0 else 0
    ledgers = []
    for system_config, seed in zip(config.systems, system_seeds):
        system = make_system(system_config)
        system.reset(n, np.random.default_rng(seed))
        ledgers.append(Ledger(system, n, config.bankroll, len(checkpoints)))
    counting = config.exact_conditional or any(ledger.system.needs_composition for ledger in ledgers)
    last_winner = np.full(n, -1, dtype=np.int8)
    last_decision = np.full(n, -1, dtype=np.int8)
    rows = np.arange(n)
    max_units = table.maximum / table.unit
    target = config.bankroll + config.win_goal if config.win_goal else np.inf
    floor = config.bankroll - config.stop_loss if config.stop_loss else -np.inf

    def record(ledger: Ledger, hand: int) -> None:
        if samples:
            ledger.path_rows.append(ledger.bankroll[:samples].copy())
        at = np.searchsorted(checkpoints, hand)
        if at < len(checkpoints) and checkpoints[at] == hand:
            # bin i holds [edge_i, edge_i+1); the last bin also everything above the range
            where = np.clip(np.searchsorted(fan_edges, ledger.bankroll, side="right") - 1, 0, FAN_BINS)
            ledger.fan[at] += np.bincount(where, minlength=FAN_BINS + 1)
            values, counts = np.unique(ledger.bankroll, return_counts=True)
            ledger.fan_values[at] = (values, counts) if len(values) <= FAN_EXACT_VALUES else None
            ledger.fan_min[at], ledger.fan_max[at] = values[0], values[-1]
            ledger.states[at] = [ledger.active.sum()] + [ledger.ended[s].sum() for s in STATES[1:]]

    bar = show_progress if isinstance(show_progress, progress_display.Progress) else None
    if show_progress is True:
        bar = progress_display.Progress(f"{config.name} {chunk.index + 1}/{chunk.count}",
                                        total=n * hands)
    for ledger in ledgers:
        record(ledger, 0)
    for hand_index in range(hands):
        composition = engine.next_hand_composition(rules, state) if counting else None
        proposals = []
        for ledger in ledgers:
            view = S.TableView(ledger.bankroll / table.unit, max_units, rules, composition,
                               last_winner, last_decision, table.minimum / table.unit, hand_index,
                               state, out if hand_index else None)
            spot, units = ledger.system.propose(view)
            proposals.append((view, spot, units))
        engine.deal(rules, state, out)
        payoffs = out.payoffs(rules)
        for ledger, (view, spot, units) in zip(ledgers, proposals):
            view.hand = out  # systems learn from this hand's result arrays
            stake = np.minimum(units * table.unit, table.maximum)
            all_in = stake > ledger.bankroll
            stake = np.minimum(stake, ledger.bankroll)
            placed = ledger.active & (spot != S.NO_BET) & (stake >= table.minimum - 1e-9)
            stake = np.where(placed, stake, 0.0)
            spot_safe = np.where(placed, spot, 0)
            net = stake * payoffs[rows, spot_safe]
            ledger.bankroll += net
            ledger.net += net
            ledger.wagered += stake
            ledger.bets += placed
            np.add.at(ledger.wagered_by_spot, spot_safe[placed], stake[placed])
            if counting and placed.any() and (config.exact_conditional
                                              or ledger.system.needs_composition):
                ev = exact.expected_values(composition[placed], rules)
                ledger.exact_ev_wagered += float((stake[placed] * ev[np.arange(placed.sum()),
                                                                     spot_safe[placed]]).sum())
            capped = placed & getattr(ledger.system, "capped", np.zeros(n, dtype=bool))
            ledger.table_capped += int(capped.sum())
            ledger.bankroll_capped += int((placed & all_in).sum())
            if placed.any():
                ledger.max_stake = max(ledger.max_stake, float(stake.max()))
            np.maximum(ledger.peak, ledger.bankroll, out=ledger.peak)
            np.maximum(ledger.max_drawdown, ledger.peak - ledger.bankroll, out=ledger.max_drawdown)
            result = np.sign(net).astype(np.int8)
            ledger.system.update(view, S.HandOutcome(placed, result, stake / table.unit,
                                                     net / table.unit, capped))
            for reason, hit in (("ruin", ledger.bankroll < table.minimum - 1e-9),
                                ("target", ledger.bankroll >= target - 1e-9),
                                ("stop_loss", ledger.bankroll <= floor + 1e-9)):
                hit &= ledger.active
                ledger.ended[reason] |= hit
                ledger.active &= ~hit
            record(ledger, hand_index + 1)
        last_winner[:] = out.winner
        decided = out.winner != R.TIE
        last_decision[decided] = out.winner[decided]
        if bar is not None:
            bar.update(n)
    if show_progress is True:
        bar.close()
    return {"chunk": chunk.index, "systems": [ledger.statistics() for ledger in ledgers],
            "names": [ledger.system.name for ledger in ledgers],
            "types": [ledger.system.key for ledger in ledgers],
            "bets": [ledger.system.bet for ledger in ledgers],
            "counting": [ledger.system.needs_composition for ledger in ledgers],
            "conditional": [config.exact_conditional or ledger.system.needs_composition
                            for ledger in ledgers]}


def checkpoint_hands(hands: int) -> np.ndarray:
    """The hands (0 = the start) at which the bankroll fans are recorded: at most 101."""
    return np.unique(np.linspace(0, hands, min(hands, 100) + 1).astype(int))


def merge(chunks: list[dict]) -> list[dict]:
    """Add up the chunks' statistics system by system, in chunk order (exact: sums, counts,
    histograms; the final bankrolls and the sample paths are concatenated)."""
    merged = []
    for i in range(len(chunks[0]["systems"])):
        parts = [chunk["systems"][i] for chunk in chunks]
        total = {key: sum(part[key] for part in parts)
                 for key in ("sessions", "sum_net", "sum_wagered", "sum_net2", "sum_wagered2",
                             "sum_net_wagered", "bets", "sum_max_drawdown", "wagered_by_spot",
                             "exact_ev_wagered", "table_capped", "bankroll_capped", "fan",
                             "states")}
        total["fan_min"] = np.min([part["fan_min"] for part in parts], axis=0)
        total["fan_max"] = np.max([part["fan_max"] for part in parts], axis=0)
        total["fan_values"] = [merge_value_counts([part["fan_values"][k] for part in parts])
                               for k in range(len(parts[0]["fan_values"]))]
        total["ended"] = {reason: sum(part["ended"][reason] for part in parts)
                          for reason in parts[0]["ended"]}
        total["max_drawdown"] = max(part["max_drawdown"] for part in parts)
        total["max_stake"] = max(part["max_stake"] for part in parts)
        total["final"] = np.concatenate([part["final"] for part in parts])
        total["samples"] = parts[0]["samples"]
        for key, name in (("names", "name"), ("types", "type"), ("bets", "bet"),
                          ("counting", "counting"), ("conditional", "conditional")):
            total[name] = chunks[0][key][i]
        merged.append(total)
    return merged


def run_study(config: StudyConfig, progress: bool = False, backend: str = "serial",
              scheduler: str | None = None, workers: int | None = None,
              store: chunk_store.ChunkStore | None = None) -> dict:
    """Play every system over the same dealt hands and return the report (JSON-ready).

    The sessions are cut into chunks of ``config.chunk_sessions`` (see :mod:`experiments.scale`); the
    report is identical whatever the backend that ran them. With a ``store`` (see
    :func:`experiments.outputs.chunk_store`) finished chunks are kept and an interrupted run resumes.
    """
    started = time.perf_counter()
    n_systems = len(config.systems)
    scale.require_memory(
        f"the study {config.name!r}", config.sessions, config.chunk_sessions, item="session",
        items_key="sessions", chunk_key="chunk_sessions",
        # a table's shoe state, each system's ledger row and stakes, the exact odds if computed
        working_per_item=engine.table_bytes(config.rules.to_rules()) + 170 * n_systems + 200,
        kept_per_item=3 * 8 * n_systems,  # every session's final bankroll, merged and reported
        kept_per_chunk=n_systems * (len(checkpoint_hands(config.hands)) * (
            (FAN_BINS + 1) * 8 + FAN_EXACT_VALUES * 16 + (len(STATES) + 2) * 8) + 1024),
        parallel=1 if backend == "serial" else workers or os.cpu_count() or 1)
    chunks = scale.plan(config.sessions, config.chunk_sessions, config.seed)
    # hands dealt: counted hand by hand when the chunks run here, chunk by chunk otherwise
    tracker = progress_display.Progress(config.name, total=config.sessions * config.hands,
                                        chunks=len(chunks), per_item=config.hands, enabled=progress)
    task = functools.partial(run_chunk, config.model_dump(mode="json"),
                             show_progress=tracker if progress and backend == "serial" else False)
    with tracker:
        results = scale.run(task, chunks, backend, scheduler, workers,
                            progress=tracker if progress else None, store=store)
    systems = merge(results)
    rules = config.rules.to_rules()
    full_ev = exact.expected_values(R.full_shoe(rules.decks), rules)
    checkpoints = checkpoint_hands(config.hands)
    edges = np.linspace(0.0, fan_range(config), FAN_BINS + 1)
    report = {
        "name": config.name,
        "sessions": config.sessions,
        "hands_per_session": config.hands,
        "bankroll": config.bankroll,
        "table": config.table.model_dump(),
        "rules": config.rules.model_dump(),
        "seed": config.seed,
        "chunks": len(chunks),
        "chunk_sessions": config.chunk_sessions,
        "systems": [_summary(stats, config, full_ev) for stats in systems],
        "checkpoints": checkpoints.tolist(),
        "timings": {"seconds": time.perf_counter() - started},
    }
    report["paths"] = {stats["name"]: fan_summary(stats, edges) | {
                           "samples": stats["samples"].tolist()} for stats in systems}
    report["final_bankrolls"] = {stats["name"]: stats["final"] for stats in systems}
    return report


# ------------------------------------------------------------------------------------ statistics
def merge_value_counts(parts: list[tuple[np.ndarray, np.ndarray] | None]
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """Add up the exact (distinct bankrolls, counts) tables of one checkpoint over chunks: None as soon
    as one chunk had too many values, or the union has more than :data:`FAN_EXACT_VALUES_MERGED`.
    The result is sorted by value, so it does not depend on the order of the chunks."""
    if any(part is None for part in parts):
        return None
    values, where = np.unique(np.concatenate([part[0] for part in parts]), return_inverse=True)
    if len(values) > FAN_EXACT_VALUES_MERGED:
        return None
    counts = np.bincount(where, weights=np.concatenate([part[1] for part in parts]),
                         minlength=len(values)).astype(np.int64)
    return values, counts


def exact_quantiles(values: np.ndarray, counts: np.ndarray) -> list[float]:
    """:data:`QUANTILES` of the sessions from their distinct bankrolls and counts, as
    ``numpy.quantile`` (linear interpolation between order statistics) of the full array gives them."""
    cumulative = np.cumsum(counts)
    total = int(cumulative[-1])
    out = []
    for q in QUANTILES:
        position = q * (total - 1)
        below = int(math.floor(position))
        a = values[np.searchsorted(cumulative, below, side="right")]
        b = values[np.searchsorted(cumulative, min(below + 1, total - 1), side="right")]
        out.append(float(a + (position - below) * (b - a)))
    return out


def fan_summary(stats: dict, edges: np.ndarray) -> dict:
    """The fan of one system at every checkpoint: the :data:`QUANTILES` of the bankroll, exact where
    the chunks kept every distinct bankroll (``quantiles_exact``), else read from the histogram and
    kept inside the exact range; and the share of sessions in each of :data:`STATES`."""
    quantiles, exact_flags = [], []
    for k, row in enumerate(stats["fan"]):
        table = stats["fan_values"][k]
        if table is not None:
            quantiles.append(exact_quantiles(*table))
        else:
            low, high = stats["fan_min"][k], stats["fan_max"][k]
            quantiles.append([float(min(max(x, low), high)) for x in binned_quantiles(row, edges)])
        exact_flags.append(table is not None)
    sessions = stats["states"].sum(axis=1, keepdims=True)
    shares = stats["states"] / np.maximum(sessions, 1)
    return {"quantiles": quantiles, "quantiles_exact": exact_flags,
            "states": {state: shares[:, i].tolist() for i, state in enumerate(STATES)}}


def binned_quantiles(counts: np.ndarray, edges: np.ndarray) -> list[float]:
    """:data:`QUANTILES` of a histogram (``counts`` over ``edges``, plus a top bin for everything above
    the range), interpolated linearly within a bin: exact to one bin's width."""
    cumulative = np.cumsum(counts)
    total = cumulative[-1]
    widths = np.append(np.diff(edges), 0.0)  # the overflow bin is read at the range's top edge
    out = []
    for q in QUANTILES:
        rank = q * total
        b = int(np.searchsorted(cumulative, rank, side="left"))
        before = cumulative[b - 1] if b else 0
        inside = (rank - before) / counts[b] if counts[b] else 0.0
        out.append(float(min(edges[min(b, len(edges) - 1)] + inside * widths[b], edges[-1])))
    return out


def ratio_ci(sum_net: float, sum_wagered: float, sum_net2: float, sum_wagered2: float,
             sum_net_wagered: float, n: int) -> tuple[float, float, float]:
    """``sum(net) / sum(wagered)`` over sessions with its 95% CI (delta method, sessions i.i.d.),
    from sums: the residuals ``net - R wagered`` have mean 0 and sum of squares
    ``sum net^2 - 2 R sum net*wagered + R^2 sum wagered^2``."""
    if sum_wagered <= 0:
        return math.nan, math.nan, math.nan
    ratio = sum_net / sum_wagered
    if n < 2:
        return float(ratio), -math.inf, math.inf
    squares = max(sum_net2 - 2 * ratio * sum_net_wagered + ratio * ratio * sum_wagered2, 0.0)
    se = math.sqrt(squares / (n - 1) / n) / (sum_wagered / n)
    return float(ratio), float(ratio - Z95 * se), float(ratio + Z95 * se)


MIN_BETS_FOR_INTERVAL = 30
"""Below this many bets a system's report gives no confidence interval ("too few bets for an
interval"): the delta-method interval rests on a normal approximation that a few bets do not support
(four losing bets give an interval of width zero)."""


def _summary(stats: dict, config: StudyConfig, full_ev: np.ndarray) -> dict:
    wagered = stats["sum_wagered"]
    bets = stats["bets"]
    n = stats["sessions"]
    ev, lo, hi = ratio_ci(stats["sum_net"], wagered, stats["sum_net2"], stats["sum_wagered2"],
                          stats["sum_net_wagered"], n)
    conditional = (stats["exact_ev_wagered"] / wagered if wagered > 0 else math.nan
                   ) if stats["conditional"] else None
    if stats["counting"]:
        exact_edge = conditional
    else:
        exact_edge = float(stats["wagered_by_spot"] @ full_ev / wagered) if wagered > 0 else math.nan
    # the CI is checked against the exact EV of the shoes the bets were really placed on, when known
    reference = conditional if conditional is not None else exact_edge
    within = bool(lo <= reference <= hi) if wagered > 0 else None
    note = None
    if wagered <= 0:
        note = "no bet placed"
    elif bets < MIN_BETS_FOR_INTERVAL:  # a handful of bets can give a zero-width interval
        note = "too few bets for an interval"
        lo, hi, within = math.nan, math.nan, None
    bet_spots = [R.BETS[i] for i in np.flatnonzero(stats["wagered_by_spot"] > 0)]
    final = stats["final"]
    return {
        "name": stats["name"],
        "type": stats["type"],
        "bet": "/".join(bet_spots) if bet_spots else stats["bet"],
        "hands": bets,
        "hands_dealt": config.sessions * config.hands,
        "wagered": wagered,
        "net": stats["sum_net"],
        "ev_per_hand": stats["sum_net"] / bets if bets else math.nan,
        "ev_per_unit_wagered": ev,
        "ci95": [lo, hi],
        "exact_edge": exact_edge,
        "exact_edge_conditional": conditional,
        "edge_within_ci": within,
        "interval_note": note,
        "p_ruin": stats["ended"]["ruin"] / n,
        "p_target": stats["ended"]["target"] / n,
        "p_stop_loss": stats["ended"]["stop_loss"] / n,
        "mean_final_bankroll": float(final.mean()),
        "median_final_bankroll": float(np.median(final)),
        "mean_max_drawdown": stats["sum_max_drawdown"] / n,
        "max_drawdown": stats["max_drawdown"],
        "average_stake": wagered / bets if bets else math.nan,
        "largest_stake": stats["max_stake"],
        "table_max_binds": stats["table_capped"] / bets if bets else 0.0,
        "all_in_share": stats["bankroll_capped"] / bets if bets else 0.0,
    }


# ---------------------------------------------------------------------------------------- report
SCALARS = ["name", "bet", "hands", "wagered", "net", "ev_per_hand", "ev_per_unit_wagered", "ci95",
           "exact_edge", "edge_within_ci", "p_ruin", "p_target", "p_stop_loss", "mean_final_bankroll",
           "median_final_bankroll", "mean_max_drawdown", "max_drawdown", "average_stake",
           "largest_stake", "table_max_binds", "all_in_share"]


def print_report(report: dict) -> None:
    """The human-readable table, and a loud line for every CI that misses its exact edge."""
    print(f"{report['name']}: {report['sessions']:,} sessions x up to {report['hands_per_session']:,} "
          f"hands, bankroll {report['bankroll']:g}, table {report['table']['minimum']:g}-"
          f"{report['table']['maximum']:g} (unit {report['table']['unit']:g}), "
          f"{report['chunks']} chunk(s), {report['timings']['seconds']:.1f} s")
    width = max([len("system")] + [len(s["name"]) for s in report["systems"]])  # names in full
    header = (f"{'system':<{width}} {'bets':>10} {'wagered':>13} {'EV/unit wagered':>16} {'95% CI':>20} "
              f"{'exact':>8} {'P(ruin)':>8} {'P(goal)':>8} {'mean end':>9} {'median':>8} "
              f"{'max DD':>8} {'avg stake':>9} {'max stake':>9} {'max binds':>9}")
    print(header)
    for s in report["systems"]:
        lo, hi = s["ci95"]
        interval = ("too few bets" if s.get("interval_note") == "too few bets for an interval"
                    else f"[{_pct(lo)}, {_pct(hi)}]")
        print(f"{s['name']:<{width}} {s['hands']:>10,} {s['wagered']:>13,.0f} "
              f"{_pct(s['ev_per_unit_wagered']):>16} {interval:>20} "
              f"{_pct(s['exact_edge']):>8} {s['p_ruin']:>8.4f} {s['p_target']:>8.4f} "
              f"{s['mean_final_bankroll']:>9.1f} {s['median_final_bankroll']:>8.1f} "
              f"{s['max_drawdown']:>8.0f} {s['average_stake']:>9.2f} {s['largest_stake']:>9.0f} "
              f"{s['table_max_binds']:>9.2%}")
    misses = 0
    for s in report["systems"]:
        if s["edge_within_ci"] is False:
            misses += 1
            reference = s["exact_edge_conditional"]
            which = ("the exact EV of the shoes it bet on" if reference is not None
                     else "the exact edge")
            print(f"WARNING: {s['name']}: the 95% CI of EV per unit wagered "
                  f"[{_pct(s['ci95'][0])}, {_pct(s['ci95'][1])}] does not contain {which} "
                  f"{_pct(reference if reference is not None else s['exact_edge'])}.")
        elif s.get("interval_note") == "too few bets for an interval":
            print(f"NOTE: {s['name']}: {s['hands']} bet(s), too few bets for an interval (at least "
                  f"{MIN_BETS_FOR_INTERVAL}); its EV per unit wagered is not compared with the exact "
                  "edge.")
        elif s["edge_within_ci"] is None:
            print(f"NOTE: {s['name']} placed no bet.")
    if misses:
        print(f"{misses} of {len(report['systems'])} intervals miss. At 95% one in twenty misses by "
              "chance, and systems that play the same hands miss together (progressions that raise "
              "after losses share their luck). A miss that persists across seeds would be a bug; "
              "`exact_conditional: true` compares with the exact EV of the cards unseen before each "
              "bet instead of the full-shoe edge.")


def _pct(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.3f}%"


OUTPUT_NAMES = ("report.json", "systems.csv", "paths.json", "bankroll_paths.png",
                "final_bankrolls.png", "ev_per_unit_wagered.png")
"""The files :func:`write_outputs` writes (a reused ``--out`` folder may hold only these)."""


def write_outputs(report: dict, out: Path) -> list[Path]:
    """Write report.json, systems.csv and the plots under ``out``; return the paths written. (``pb-gym
    evaluate`` writes them into a staging folder moved into place whole: see experiments.outputs.)"""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.json", out / "systems.csv", out / "paths.json"]
    (out / "report.json").write_text(strict_json.dumps(json_report(report), indent=2))
    # bankroll quantiles at the checkpoints and the sample paths, to redraw the fan plots
    (out / "paths.json").write_text(strict_json.dumps({"checkpoints": report["checkpoints"],
                                                "paths": report["paths"]}))
    with open(out / "systems.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([k for k in SCALARS if k != "ci95"] + ["ci95_low", "ci95_high"])
        for s in report["systems"]:
            writer.writerow([s[k] for k in SCALARS if k != "ci95"] + list(s["ci95"]))
    written += plot(report, out)
    return written


def json_report(report: dict) -> dict:
    """The report without the bulky arrays (what ``--json`` prints and report.json holds)."""
    return {k: v for k, v in report.items() if k not in ("final_bankrolls", "paths")}


def plot(report: dict, out: Path) -> list[Path]:
    """Bankroll fans, final-bankroll distributions, and EV per unit wagered against the exact edge."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = report["systems"]
    names = [s["name"] for s in systems]
    # each system: its bankroll fan, and beside it where the sessions stand (a fan alone hides the
    # two peaks of a progression: sessions at the goal and ruined ones)
    pairs = min(2, len(names))
    rows_ = math.ceil(len(names) / pairs)
    fig, axes = plt.subplots(rows_, 2 * pairs, figsize=(8.5 * pairs, 2.8 * rows_), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 2] * pairs})
    x = np.array(report["checkpoints"])
    colors = {"playing": "0.8", "target": "C2", "stop_loss": "C1", "ruin": "C3"}
    labels = {"playing": "still playing", "target": "at the goal", "stop_loss": "stop-loss",
              "ruin": "ruined"}
    for i, name in enumerate(names):
        ax, share_ax = axes[i // pairs, 2 * (i % pairs)], axes[i // pairs, 2 * (i % pairs) + 1]
        fan = report["paths"][name]
        q = np.array(fan["quantiles"])
        ax.fill_between(x, q[:, 0], q[:, 4], alpha=0.2, color="C0", label="5-95%")
        ax.fill_between(x, q[:, 1], q[:, 3], alpha=0.35, color="C0", label="25-75%")
        ax.plot(x, q[:, 2], color="C0", label="median")
        for path in np.array(fan["samples"]):
            ax.plot(np.arange(len(path)), path, lw=0.6, alpha=0.8)
        ax.axhline(report["bankroll"], color="k", lw=0.5, ls=":")
        ax.set_title(name, fontsize=9)
        states = fan["states"]
        order = ["ruin", "stop_loss", "playing", "target"]
        share_ax.stackplot(x, *[np.array(states[k]) for k in order], colors=[colors[k] for k in order],
                           labels=[labels[k] for k in order])
        share_ax.set_ylim(0, 1)
        share_ax.set_xlim(x[0], x[-1])
        share_ax.set_title("share of sessions", fontsize=8)
        share_ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[2 * len(names):]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=7)
    axes[0, 1].legend(fontsize=6, loc="center left")
    fig.supxlabel("hand")
    fig.supylabel("bankroll (fan); share of sessions (beside it)")
    fig.tight_layout()
    paths = [out / "bankroll_paths.png"]
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(names)), 4))
    finals = [np.asarray(report["final_bankrolls"][n]) for n in names]
    ax.boxplot(finals, showfliers=True, flierprops={"markersize": 2})
    ax.set_xticks(range(1, len(names) + 1), names, rotation=60, ha="right", fontsize=8)
    ax.axhline(report["bankroll"], color="k", lw=0.5, ls=":")
    ax.set_ylabel("final bankroll")
    ax.set_title("Distribution of final bankrolls per system")
    fig.tight_layout()
    paths.append(out / "final_bankrolls.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 0.35 * len(names) + 1.5))
    y = np.arange(len(names))
    ev = np.array([s["ev_per_unit_wagered"] for s in systems], dtype=float) * 100
    lo = np.array([s["ci95"][0] for s in systems], dtype=float) * 100  # nan: too few bets
    hi = np.array([s["ci95"][1] for s in systems], dtype=float) * 100
    edge = np.array([s["exact_edge"] for s in systems], dtype=float) * 100
    ax.errorbar(ev, y, xerr=np.nan_to_num([ev - lo, hi - ev]), fmt="o", capsize=3,
                label="simulated, 95% CI (none: too few bets)")
    ax.scatter(edge, y, marker="|", s=200, color="C3", label="exact edge of the bets placed")
    ax.set_yticks(y, names, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="k", lw=0.5)
    ax.set_xlabel("EV per unit wagered (%)")
    ax.legend(fontsize=8)
    ax.set_title("Staking changes the shape of the outcome, not the edge")
    fig.tight_layout()
    paths.append(out / "ev_per_unit_wagered.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def _model_checksums(config: StudyConfig) -> dict:
    """The recorded SHA-256 of each learned model's files (a model retrained in the same folder makes
    another run: its finished chunks must not be resumed)."""
    import json

    from agents.learned import model_files

    return {system.model: json.loads(model_files(system.model)[1].read_text()).get("sha256")
            for system in config.systems if system.type == "sb3"}


def main(config_path: str, out: str | None = None, as_json: bool = False, backend: str = "serial",
         scheduler: str | None = None, workers: int | None = None,
         resume: bool | None = None) -> dict:
    """``pb-gym evaluate``: load and validate the config, run (on the backend), print, write outputs.

    ``out`` is checked before anything is computed; finished chunks are kept in ``out/.partial`` and a
    rerun resumes from them (``resume``: None resumes a matching unfinished run, False discards it);
    outputs are written only after every chunk has finished and been merged, into a staging folder
    moved into place whole (:mod:`experiments.outputs`). The report is the same on every backend, and
    resumed or not, except its ``timings``.
    """
    config = load(config_path, StudyConfig)
    destination = outputs.prepare(out, OUTPUT_NAMES)
    store = outputs.chunk_store(destination, {"study": "evaluate", "config": config.model_dump(
        mode="json"), "models": _model_checksums(config)}, resume)
    report = run_study(config, progress=not as_json, backend=backend,
                       scheduler=scheduler, workers=workers, store=store)
    if destination is not None:
        with destination.staging() as staged:
            written = write_outputs(report, staged)
        report["written"] = [str(destination.final_path(p, staged)) for p in written]
    if not as_json:
        print_report(report)
        if out is not None:
            print(f"wrote {', '.join(report['written'])}")
    return json_report(report)


__all__ = ["StudyConfig", "ConfigError", "run_study", "run_chunk", "merge", "main", "make_system",
           "ratio_ci"]
