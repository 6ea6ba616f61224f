"""Gambler's ruin at the baccarat table: flat betting until a target or ruin, exactly and simulated.

``pb-gym experiment ruin CONFIG [--json] [--out DIR] [--backend serial|processes|dask]
[--scheduler ADDRESS] [--workers N]``

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

Exact answers:

* +1/-1 walk (player, fair coin): the classical closed form. With ties removed, p = P(player) /
  (P(player) + P(banker)), q = 1 - p, r = q/p: P(target before ruin from i) = (1 - r^i) / (1 - r^N),
  expected decisions = i/(q-p) - N/(q-p) P (fair: i/N and i(N-i)); expected hands = decisions /
  (1 - P(tie)).
* Any bet: a Markov chain on the lattice of 1/L units (L = 20 for the banker's 0.95: a win is +19, a
  loss -20 lattice steps; L = 1 for +1/-1). The transient states are the bankrolls L .. N L - 1; the
  absorbing probability and the expected number of hands solve (I - Q) x = b, a banded linear system
  (bandwidth = the largest step), solved exactly by banded Gaussian elimination below. On the +1/-1
  walk it agrees with the closed form to ~1e-12 (tested).

The chain assumes independent hands with the full-shoe probabilities; the simulation deals real shoes
with the engine (each session is one engine table: burn, cut card, reshuffles), so it also checks that
the shoe's small dependence between hands does not matter at this scale.

Scale-out: the simulated sessions of all points, listed point after point, are cut into chunks of
``chunk_sessions`` (:mod:`experiments.scale`; chunk ``i`` seeded with ``SeedSequence(seed).spawn(n)[i]``).
A chunk returns, per bet and point, counts (successes, ruins, unfinished) and the sums of the hands and of
their squares; the merge adds them in chunk order, and the estimates and CIs come from the merged sums,
so the result is the same to the last bit on every backend (serial, local processes, Dask).
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Literal

import numba
import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from experiments import chunk_store, outputs, scale
from experiments.config import ConfigError, RulesConfig, Strict, load
from pb_gym import engine, exact, strict_json
from pb_gym import rules as R

Z95 = 1.959963984540054
Bet = Literal["player", "banker", "fair_coin"]
ENGINE_BETS = ("player", "banker")
MARTINGALE_SECTION = "<!-- martingale-illusion: disabled in this config (martingale: null) -->"
"""Left in ``report.md`` where the Martingale section goes when the config switches it off."""


# --------------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------------
class VsStart(Strict):
    """Curves against the starting bankroll, for one target."""

    target: int = Field(20, ge=2, le=1000)
    simulate: tuple[int, ...] = (2, 5, 10, 15, 18)

    @field_validator("simulate")
    @classmethod
    def _inside(cls, simulate: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        target = info.data.get("target")
        bad = [s for s in simulate if target is not None and not 1 <= s < target]
        if bad:
            raise ValueError(f"every starting bankroll must be in 1..{target - 1} (below the "
                             f"target {target}); {bad[0]} is not")
        return simulate


class VsTarget(Strict):
    """Curves against the target, for one starting bankroll."""

    start: int = Field(10, ge=1, le=1000)
    max_target: int = Field(100, ge=2, le=1000)
    simulate: tuple[int, ...] = (12, 15, 20, 40, 70, 100)

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
            raise ValueError(f"every target must be in {start + 1}..{top} (above start, at most "
                             f"max_target); {bad[0]} is not")
        return simulate


class MartingaleIllusion(Strict):
    """The Martingale illusion: a banker Martingale aiming at a small win under table limits."""

    bankroll: int = Field(1000, ge=2, description="starting bankroll, in units (the base stake)")
    goal: int = Field(10, ge=1, description="stop as soon as up this many units")
    table_max: tuple[int, ...] = (8, 32, 128, 512)
    sessions: int = Field(10_000, ge=10)
    hands: int = Field(1000, ge=10, description="hands per session at most")

    @field_validator("table_max")
    @classmethod
    def _above_base(cls, table_max: tuple[int, ...]) -> tuple[int, ...]:
        if not table_max or any(m < 2 for m in table_max):
            raise ValueError("one or more table maximums of at least 2 units")
        return table_max


class RuinConfig(Strict):
    """``configs/experiments/ruin.yaml``."""

    martingale: MartingaleIllusion | None = MartingaleIllusion()

    rules: RulesConfig = RulesConfig()
    bets: tuple[Bet, ...] = ("player", "banker", "fair_coin")
    vs_start: VsStart = VsStart()
    vs_target: VsTarget = VsTarget()
    sessions: int = Field(2000, ge=10, description="simulated sessions per (start, target) point")
    chunk_sessions: int = Field(5000, ge=1, description="simulated sessions per chunk (the unit of "
                                                       "work of a backend; changes the dealt hands)")
    seed: int = Field(1, ge=0)
    max_hands: int = Field(1_000_000, ge=100, description="safety cap on a session's length")

    @field_validator("bets")
    @classmethod
    def _distinct(cls, bets: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(bets)) != len(bets) or not bets:
            raise ValueError("one or more of player, banker, fair_coin, each at most once")
        return bets


# --------------------------------------------------------------------------------------------------
# One hand of each bet: the step distribution on a lattice of 1/L units
# --------------------------------------------------------------------------------------------------
def step_distribution(bet: str, rules: R.Rules) -> dict:
    """The net win of one hand, on the lattice of 1/L units: ``{"lattice": L, "steps": [...],
    "probabilities": [...], "p_win", "p_lose", "p_push"}`` (steps are ints, 1 unit = L)."""
    if bet == "fair_coin":
        payoff, prob = np.array([1.0, -1.0]), np.array([0.5, 0.5])
    else:
        prob = exact.outcome_probabilities(R.full_shoe(rules.decks))
        payoff = rules.paytable()[:, R.BETS.index(bet)]
    lattice = next((L for L in range(1, 1001) if np.allclose(payoff * L, np.round(payoff * L),
                                                               atol=1e-9)), None)
    if lattice is None:
        raise ConfigError(f"the {bet} payouts {sorted(set(payoff))} are not on a lattice of 1/L "
                          f"units for any L <= 1000")
    steps = np.round(payoff * lattice).astype(np.int64)
    values = np.unique(steps)
    probabilities = np.array([prob[steps == v].sum() for v in values])
    return {"lattice": lattice, "steps": values.tolist(), "probabilities": probabilities.tolist(),
            "p_win": float(probabilities[values > 0].sum()),
            "p_lose": float(probabilities[values < 0].sum()),
            "p_push": float(probabilities[values == 0].sum())}


# --------------------------------------------------------------------------------------------------
# Exact: the classical closed form and the Markov chain
# --------------------------------------------------------------------------------------------------
def closed_form(p_win: float, p_lose: float, start: np.ndarray, target: int | np.ndarray) -> dict:
    """Classical gambler's ruin for the +1/-1 walk with pushes: P(target before 0), expected hands."""
    i = np.asarray(start, dtype=np.float64)
    n = np.asarray(target, dtype=np.float64)
    decided = p_win + p_lose
    p, q = p_win / decided, p_lose / decided
    if math.isclose(p, q, rel_tol=0.0, abs_tol=1e-15):
        success = i / n
        decisions = i * (n - i)
    else:
        r = q / p
        success = (1.0 - r ** i) / (1.0 - r ** n)
        decisions = i / (q - p) - n / (q - p) * success
    return {"p_win": success, "hands": decisions / decided}


@numba.njit(cache=True)
def _banded_solve(band: np.ndarray, lower: int, upper: int, rhs: np.ndarray) -> np.ndarray:
    """Solve A x = rhs for a banded A given as ``band[i, j - i + lower] = A[i, j]``.

    Gaussian elimination without pivoting: I - Q of an absorbing chain is diagonally dominant, so no
    pivoting is needed and the fill-in stays inside the band. ``band`` and ``rhs`` are overwritten.
    """
    n = band.shape[0]
    for k in range(n):
        pivot = band[k, lower]
        for i in range(k + 1, min(n, k + lower + 1)):
            factor = band[i, k - i + lower] / pivot
            if factor != 0.0:
                for j in range(k, min(n, k + upper + 1)):
                    band[i, j - i + lower] -= factor * band[k, j - k + lower]
                for m in range(rhs.shape[1]):
                    rhs[i, m] -= factor * rhs[k, m]
    x = np.zeros_like(rhs)
    for i in range(n - 1, -1, -1):
        for m in range(rhs.shape[1]):
            s = rhs[i, m]
            for j in range(i + 1, min(n, i + upper + 1)):
                s -= band[i, j - i + lower] * x[j, m]
            x[i, m] = s / band[i, lower]
    return x


def markov_chain(steps: dict, target: int, dense: bool = False) -> dict:
    """Exact P(reach ``target`` units before ruin) and expected hands from every whole-unit start.

    States: bankrolls b = L .. target*L - 1 lattice units (L = ``steps["lattice"]``); from b the bankroll
    moves to b + s with probability p_s; b + s >= target*L is success, b + s < L is ruin (the stake
    cannot be covered), anything else is transient. Solves (I - Q) [P, E] = [r, 1] with r_b = P(success
    in one hand). ``dense=True`` uses numpy's dense solver instead (a cross-check).
    Returns ``starts`` (1 .. target-1), ``p_win`` and ``hands`` (arrays over starts).
    """
    L = steps["lattice"]
    moves = np.array(steps["steps"], dtype=np.int64)
    probs = np.array(steps["probabilities"])
    low, top = L, target * L  # transient: low <= b < top
    n = top - low
    lower, upper = max(0, -moves.min()), max(0, moves.max())
    band = np.zeros((n, lower + upper + 1))
    rhs = np.zeros((n, 2))
    rhs[:, 1] = 1.0
    b = np.arange(low, top)
    for s, p in zip(moves, probs):
        nxt = b + s
        inside = (nxt >= low) & (nxt < top)
        # A = I - Q: subtract p at (b, b + s) for transient successors
        band[np.flatnonzero(inside), s + lower] -= p
        rhs[nxt >= top, 0] += p
    band[:, lower] += 1.0
    if dense:
        matrix = np.zeros((n, n))
        for d in range(-lower, upper + 1):
            rows = np.arange(max(0, -d), min(n, n - d))
            matrix[rows, rows + d] = band[rows, d + lower]
        solution = np.linalg.solve(matrix, rhs)
    else:
        solution = _banded_solve(band, lower, upper, rhs.copy())
    starts = np.arange(1, target)
    index = starts * L - low
    return {"starts": starts, "p_win": solution[index, 0], "hands": solution[index, 1]}


def exact_curves(config: RuinConfig, rules: R.Rules) -> dict:
    """P(success) and expected hands vs start (fixed target) and vs target (fixed start), per bet."""
    vs, vt = config.vs_start, config.vs_target
    out: dict = {}
    for bet in config.bets:
        steps = step_distribution(bet, rules)
        chain = markov_chain(steps, vs.target)
        targets = np.arange(vt.start + 1, vt.max_target + 1)
        by_target = [markov_chain(steps, int(t)) for t in targets]
        entry = {
            "steps": steps,
            "vs_start": {"target": vs.target, "starts": chain["starts"].tolist(),
                         "p_win": chain["p_win"].tolist(), "hands": chain["hands"].tolist()},
            "vs_target": {"start": vt.start, "targets": targets.tolist(),
                          "p_win": [float(c["p_win"][vt.start - 1]) for c in by_target],
                          "hands": [float(c["hands"][vt.start - 1]) for c in by_target]},
        }
        if steps["steps"] in ([-1, 0, 1], [-1, 1]):  # the +1/-1 walk: compare with the closed form
            cf_start = closed_form(steps["p_win"], steps["p_lose"], chain["starts"], vs.target)
            cf_target = closed_form(steps["p_win"], steps["p_lose"], vt.start, targets)
            entry["closed_form_max_abs_diff"] = {
                "p_win": float(max(np.max(np.abs(cf_start["p_win"] - chain["p_win"])),
                                   np.max(np.abs(cf_target["p_win"] - entry["vs_target"]["p_win"])))),
                "hands_relative": float(max(
                    np.max(np.abs(cf_start["hands"] / chain["hands"] - 1)),
                    np.max(np.abs(cf_target["hands"] / np.array(entry["vs_target"]["hands"]) - 1)))),
            }
        out[bet] = entry
    return out


# --------------------------------------------------------------------------------------------------
# Simulation: every session is one engine table (real shoes), all sessions of a chunk in parallel
# --------------------------------------------------------------------------------------------------
def simulate_engine(rules: R.Rules, bets: list[str], starts: np.ndarray, targets: np.ndarray,
                    seed: int | np.random.SeedSequence, max_hands: int) -> dict:
    """One session per entry of ``starts`` / ``targets`` (units), for each bet on the same dealt hands.

    Returns per bet ``success`` (bool), ``hands`` (int) and ``finished`` (bool), one entry per session.
    """
    n = len(starts)
    lattice = {bet: step_distribution(bet, rules)["lattice"] for bet in bets}
    start = np.asarray(starts, dtype=np.int64)
    target = np.asarray(targets, dtype=np.int64)
    bankroll = {bet: start * lattice[bet] for bet in bets}
    done = {bet: np.zeros(n, dtype=bool) for bet in bets}
    success = {bet: np.zeros(n, dtype=bool) for bet in bets}
    hands = {bet: np.zeros(n, dtype=np.int64) for bet in bets}
    state = engine.init(rules, n, seed=seed)
    table = np.arange(n)  # the session of each engine table (tables are dropped as sessions end)
    played = 0
    while played < max_hands:
        live = ~np.all([done[b][table] for b in bets], axis=0)
        if not live.any():
            break
        if live.sum() < 0.5 * len(table):  # compact: keep dealing only where a session is open
            keep = np.flatnonzero(live)
            state = engine.ShoeState(**{k: (v[keep] if isinstance(v, np.ndarray) else v)
                                        for k, v in vars(state).items()})
            table = table[keep]
        _, hand = engine.deal(rules, state)
        payoffs = hand.payoffs(rules)
        played += 1
        for bet in bets:
            open_ = ~done[bet][table]
            t = table[open_]
            step = np.round(payoffs[open_, R.BETS.index(bet)] * lattice[bet]).astype(np.int64)
            bankroll[bet][t] += step
            hands[bet][t] += 1
            won = bankroll[bet][t] >= target[t] * lattice[bet]
            ruined = bankroll[bet][t] < lattice[bet]
            success[bet][t] = won
            done[bet][t] = won | ruined
    return {bet: {"success": success[bet], "hands": hands[bet], "finished": done[bet]} for bet in bets}


def simulate_coin(starts: np.ndarray, targets: np.ndarray, seed: int | np.random.SeedSequence,
                  max_hands: int) -> dict:
    """The fair coin: +1/-1 with probability 1/2, numpy random numbers, the same stopping rule."""
    rng = np.random.default_rng(seed)
    bankroll = np.array(starts, dtype=np.int64)
    target = np.asarray(targets, dtype=np.int64)
    n = len(bankroll)
    hands = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    success = np.zeros(n, dtype=bool)
    live = np.arange(n)
    for _ in range(max_hands):
        if live.size == 0:
            break
        bankroll[live] += np.where(rng.random(live.size) < 0.5, 1, -1)
        hands[live] += 1
        won = bankroll[live] >= target[live]
        ended = won | (bankroll[live] < 1)
        success[live[won]] = True
        done[live[ended]] = True
        live = live[~ended]
    return {"success": success, "hands": hands, "finished": done}


def session_counts(sim: dict, point: np.ndarray, n_points: int) -> dict[str, np.ndarray]:
    """Per point (``point`` gives each session's): sessions ``finished``, ``successes``, ``ruins``,
    ``unfinished``, and the sums of the hands and of their squares over the finished sessions. Integers,
    so that merging chunks is exact in any order."""
    finished = sim["finished"]
    hands = np.where(finished, sim["hands"], 0).astype(np.int64)

    def per_point(values: np.ndarray) -> np.ndarray:
        out = np.zeros(n_points, dtype=np.int64)
        np.add.at(out, point, values.astype(np.int64))
        return out
    successes = per_point(sim["success"] & finished)
    return {"finished": per_point(finished), "successes": successes,
            "ruins": per_point(finished) - successes, "unfinished": per_point(~finished),
            "hands": per_point(hands), "hands_sq": per_point(hands * hands)}


def simulate_chunk(chunk: scale.Chunk, rules: R.Rules, bets: tuple[str, ...],
                   points: list[tuple[int, int]], sessions: int, max_hands: int) -> dict:
    """The task of one chunk: sessions ``chunk.start ..`` of the list of all points' sessions (point
    ``k`` owns sessions ``k * sessions .. (k + 1) * sessions - 1``), reduced to :func:`session_counts`
    per bet. The engine deals from the chunk's seed itself and the coin draws from its first child:
    the Martingale section's chunks (pb-gym evaluate, the same root seed) deal from *their* first
    child, so the two sections never deal the same shoes."""
    point = np.arange(chunk.start, chunk.start + chunk.size) // sessions
    starts = np.array([p[0] for p in points])[point]
    targets = np.array([p[1] for p in points])[point]
    counts = {}
    engine_bets = [b for b in bets if b in ENGINE_BETS]
    if engine_bets:
        sims = simulate_engine(rules, engine_bets, starts, targets, chunk.seed, max_hands)
        counts.update({bet: session_counts(sims[bet], point, len(points)) for bet in engine_bets})
    if "fair_coin" in bets:
        coin = simulate_coin(starts, targets, chunk.child_seeds(1)[0], max_hands)
        counts["fair_coin"] = session_counts(coin, point, len(points))
    return counts


def merge(parts: list[dict]) -> dict:
    """Add the chunks' counts, per bet and key (integers: exact)."""
    return {bet: {key: sum(p[bet][key] for p in parts) for key in parts[0][bet]} for bet in parts[0]}


def wilson(successes: int, n: int) -> list[float]:
    """Wilson 95% interval of a binomial proportion."""
    if n == 0:
        return [math.nan, math.nan]
    p = successes / n
    centre = (p + Z95 ** 2 / (2 * n)) / (1 + Z95 ** 2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / (1 + Z95 ** 2 / n)
    return [centre - half, centre + half]


def summarize(counts: dict, points: list[tuple[int, int]], exact_lookup) -> list[dict]:
    """One row per point, from the merged :func:`session_counts`: simulated P(success) and mean hands
    with 95% CIs (over the finished sessions), the exact values, z."""
    rows = []
    for k, (start, target) in enumerate(points):
        n, wins = int(counts["finished"][k]), int(counts["successes"][k])
        total, squares = int(counts["hands"][k]), int(counts["hands_sq"][k])
        p_hat = wins / n if n else math.nan
        mean = total / n if n else math.nan
        # sample variance from the integer sums, exactly: (n sum h^2 - (sum h)^2) / (n (n - 1))
        sd = math.sqrt((n * squares - total * total) / (n * (n - 1))) if n > 1 else math.nan
        exact_p, exact_h = exact_lookup(start, target)
        se_p = math.sqrt(max(exact_p * (1 - exact_p), 1e-300) / n) if n else math.nan
        se_h = sd / math.sqrt(n) if n else math.nan
        rows.append({"start": start, "target": target, "sessions": n,
                     "unfinished": int(counts["unfinished"][k]), "ruins": int(counts["ruins"][k]),
                     "p_win": p_hat, "p_win_ci95": wilson(wins, n), "p_win_exact": exact_p,
                     "p_win_z": (p_hat - exact_p) / se_p,
                     "hands": mean, "hands_ci95": [mean - Z95 * se_h, mean + Z95 * se_h],
                     "hands_exact": exact_h, "hands_z": (mean - exact_h) / se_h})
    return rows


# --------------------------------------------------------------------------------------------------
# The experiment
# --------------------------------------------------------------------------------------------------
def run(config: RuinConfig, backend: str = "serial", scheduler: str | None = None,
        workers: int | None = None, progress: bool = False,
        store: chunk_store.ChunkStore | None = None) -> dict:
    """Exact curves, simulations at the configured points, and their comparison (JSON-ready).

    The simulation runs in chunks on ``backend`` (see :func:`experiments.scale.run`); the result is the
    same, to the last bit, on every backend, except the wall-clock times under ``"timings"``. The
    Martingale section runs serially through :func:`experiments.evaluate.run_study`.
    """
    rules = config.rules.to_rules()
    vs, vt = config.vs_start, config.vs_target
    points = ([(s, vs.target) for s in vs.simulate] + [(vt.start, t) for t in vt.simulate])
    points = list(dict.fromkeys(points))  # the same point may appear on both curves
    n_bets = len(config.bets)
    scale.require_memory(
        "the ruin study", len(points) * config.sessions, config.chunk_sessions, item="session",
        items_key="sessions", chunk_key="chunk_sessions",
        working_per_item=engine.table_bytes(rules) + 64 * n_bets,  # a table, each bet's bankroll
        kept_per_chunk=len(points) * n_bets * 6 * 8 + 1024,  # integer counts per point and bet
        parallel=1 if backend == "serial" else workers or os.cpu_count() or 1)

    t0 = time.perf_counter()
    curves = exact_curves(config, rules)
    exact_s = time.perf_counter() - t0

    def lookup(bet):
        cache: dict[int, dict] = {}
        steps = curves[bet]["steps"]

        def exact_at(start: int, target: int) -> tuple[float, float]:
            if target not in cache:
                cache[target] = markov_chain(steps, target)
            chain = cache[target]
            return float(chain["p_win"][start - 1]), float(chain["hands"][start - 1])
        return exact_at

    t0 = time.perf_counter()
    chunks = scale.plan(len(points) * config.sessions, config.chunk_sessions, config.seed)
    task = functools.partial(simulate_chunk, rules=rules, bets=config.bets, points=points,
                             sessions=config.sessions, max_hands=config.max_hands)
    with scale.progress_printer("ruin: simulation", progress, len(chunks)) as printer:
        counts = merge(scale.run(task, chunks, backend, scheduler, workers, printer, store=store))
    simulated = {bet: summarize(counts[bet], points, lookup(bet)) for bet in config.bets}
    simulate_s = time.perf_counter() - t0

    z = [abs(r[key]) for rows in simulated.values() for r in rows for key in ("p_win_z", "hands_z")]
    t0 = time.perf_counter()
    illusion = martingale_illusion(config) if config.martingale is not None else None
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


# --------------------------------------------------------------------------------------------------
# The Martingale illusion (on the betting systems of agents/, through pb-gym evaluate's machinery)
# --------------------------------------------------------------------------------------------------
def martingale_illusion(config: RuinConfig) -> dict:
    """A banker Martingale (1, 2, 4, ... units; the series restarts when the table maximum would be
    exceeded) stops at +``goal`` units or ruin, next to flat banker betting, over the same hands, for
    each table maximum. Returns, per maximum, P(small win), the loss of the other sessions, and the
    session results (for the histograms)."""
    from experiments.evaluate import StudyConfig, run_study
    from experiments.config import validate

    m = config.martingale
    rows = []
    results = {}
    for table_max in m.table_max:
        study = validate({
            "name": f"martingale-max-{table_max}", "rules": config.rules.model_dump(),
            "table": {"unit": 1, "minimum": 1, "maximum": table_max},
            "bankroll": m.bankroll, "sessions": m.sessions, "hands": m.hands, "win_goal": m.goal,
            "seed": config.seed, "sample_paths": 0,
            "systems": [{"type": "martingale", "bet": "banker", "on_cap": "reset",
                         "name": "martingale"}]
            # flat betting does not depend on the maximum: once, for contrast, on the same hands
            + ([{"type": "flat", "bet": "banker", "name": "flat"}] if not rows else []),
        }, StudyConfig, "ruin.martingale")
        report_ = run_study(study)
        for system in report_["systems"]:
            result = np.asarray(report_["final_bankrolls"][system["name"]]) - m.bankroll
            won = result >= m.goal - 1e-9
            lost = result < 0
            rows.append({
                "system": system["name"], "table_max": table_max,
                "p_goal": float(won.mean()), "p_goal_ci95": wilson(int(won.sum()), len(result)),
                "p_loss": float(lost.mean()),
                "mean_loss_when_lost": float(-result[lost].mean()) if lost.any() else 0.0,
                "largest_loss": float(-result.min()) if lost.any() else 0.0,
                "p_ruin": system["p_ruin"], "mean_result": float(result.mean()),
                "ev_per_unit_wagered": system["ev_per_unit_wagered"], "ci95": system["ci95"],
                "exact_edge": system["exact_edge"], "table_max_binds": system["table_max_binds"],
            })
            results[f"{system['name']}@{table_max}"] = result
    everything = np.concatenate(list(results.values()))
    edges = np.linspace(everything.min(), everything.max(), 61)
    histograms = {key: np.histogram(result, bins=edges)[0].tolist() for key, result in results.items()}
    return {"bankroll": m.bankroll, "goal": m.goal, "sessions": m.sessions, "hands": m.hands,
            "rows": rows, "bin_edges": edges.tolist(), "histograms": histograms}


def martingale_section(illusion: dict, plot_name: str = "martingale.png") -> str:
    """The teaching page's Martingale section (Markdown)."""
    lines = ["## The Martingale illusion", "",
             f"A Martingale on banker doubles its stake after each loss (1, 2, 4, ... units) and stops "
             f"as soon as it is {illusion['goal']} units up, starting with {illusion['bankroll']} "
             f"units. When the next doubling would pass the table maximum, the series is abandoned "
             f"and its losses stay lost. {illusion['sessions']:,} sessions per table maximum, next to "
             f"flat one-unit banker bets on the same hands.", "",
             f"![martingale]({plot_name})", "",
             "| system | table max | P(small win) | P(loss) | average loss when it loses | "
             "average result | EV per unit wagered [95% CI] | exact edge |",
             "|---|---|---|---|---|---|---|---|"]
    for r in illusion["rows"]:
        lo, hi = r["ci95"]
        lines.append(f"| {r['system']} | {r['table_max']} | {r['p_goal']:.3f} | {r['p_loss']:.3f} | "
                     f"{r['mean_loss_when_lost']:.1f} | {r['mean_result']:+.2f} | "
                     f"{100 * r['ev_per_unit_wagered']:+.2f}% [{100 * lo:+.2f}, {100 * hi:+.2f}] | "
                     f"{100 * r['exact_edge']:+.3f}% |")
    mart = [r for r in illusion["rows"] if r["system"] == "martingale"]
    best = max(mart, key=lambda r: r["p_goal"])
    lines += ["", "## What to notice", "",
              f"* **It usually wins, a little.** With a table maximum of {best['table_max']} units the "
              f"Martingale reaches +{illusion['goal']} in {100 * best['p_goal']:.1f}% of sessions.",
              f"* **It sometimes loses, a lot.** The other sessions lose {best['mean_loss_when_lost']:.0f} "
              f"units on average: many small wins pay for one large loss, and the table maximum (or the "
              f"bankroll) decides how large.",
              "* **The edge does not move.** Every line's EV per unit wagered agrees with the exact "
              "banker edge within its confidence interval: doubling changes the *shape* of the "
              "session results (a tall spike of small wins and a long tail of big losses), not the "
              "house's share of the money wagered. The average result of a session is that edge "
              "times the money wagered, whatever the staking plan.", ""]
    return "\n".join(lines)


def plot_martingale(illusion: dict, path: Path) -> None:
    """P(small win) and the average loss against the table maximum; histograms of session results."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mart = [r for r in illusion["rows"] if r["system"] == "martingale"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    maxima = [r["table_max"] for r in mart]
    x = np.arange(len(maxima))
    left.bar(x, [r["p_goal"] for r in mart], color="tab:green", label="P(small win)")
    left.set_xticks(x, [str(m) for m in maxima])
    left.set_xlabel("table maximum (units)")
    left.set_ylabel(f"P(reach +{illusion['goal']} units)")
    left.set_ylim(0, 1)
    twin = left.twinx()
    twin.plot(x, [r["mean_loss_when_lost"] for r in mart], "o-", color="tab:red",
              label="average loss when it loses")
    twin.set_ylabel("average loss when it loses (units)")
    left.set_title("Small wins often, large losses sometimes")
    left.legend(loc="upper left", fontsize=8)
    twin.legend(loc="upper right", fontsize=8)
    edges = np.asarray(illusion["bin_edges"])
    for key, counts in illusion["histograms"].items():
        name, table_max = key.split("@")
        counts = np.asarray(counts, dtype=float)
        right.stairs(counts / (counts.sum() * np.diff(edges)), edges,
                     label=f"{name}" + (f", max {table_max}" if name == "martingale" else ""))
    right.set_yscale("log")
    right.set_xlabel("session result (units)")
    right.set_ylabel("density (log)")
    right.set_title("Distribution of session results")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------------------------------
# Report: text, plots, teaching page
# --------------------------------------------------------------------------------------------------
NAMES = {"player": "Player (+1/-1, ties push)", "banker": "Banker (+0.95/-1, ties push)",
         "fair_coin": "Fair coin (+1/-1)"}
COLORS = {"player": "tab:blue", "banker": "tab:red", "fair_coin": "tab:gray"}


def report(result: dict) -> str:
    """The text report: the step distributions and the simulated-vs-exact table."""
    lines = [f"Gambler's ruin, {result['rules']['decks']} decks; {result['stopping_rule']}",
             f"exact chain {result['timings']['exact_s']:.1f} s, simulation "
             f"{result['timings']['simulate_s']:.1f} s ({result['sessions_per_point']} sessions per "
             f"point)"]
    for bet, entry in result["exact"].items():
        s = entry["steps"]
        lines.append(f"  {bet}: P(win) {s['p_win']:.6f} P(lose) {s['p_lose']:.6f} P(push) "
                     f"{s['p_push']:.6f}; lattice 1/{s['lattice']} unit")
        if "closed_form_max_abs_diff" in entry:
            d = entry["closed_form_max_abs_diff"]
            lines.append(f"    Markov chain vs closed form: max |dP| {d['p_win']:.1e}, max relative "
                         f"d(hands) {d['hands_relative']:.1e}")
    lines += ["", f"{'bet':<10}{'start':>6}{'target':>7}  {'P(target) sim [95% CI]':<28}"
                  f"{'exact':>9}  {'hands sim [95% CI]':<28}{'exact':>10}"]
    for bet, rows in result["simulated"].items():
        for r in rows:
            lo, hi = r["p_win_ci95"]
            hlo, hhi = r["hands_ci95"]
            lines.append(f"{bet:<10}{r['start']:>6}{r['target']:>7}  "
                         f"{r['p_win']:.4f} [{lo:.4f}, {hi:.4f}]{'':<6}{r['p_win_exact']:>9.4f}  "
                         f"{r['hands']:>8.1f} [{hlo:.1f}, {hhi:.1f}]{'':<6}{r['hands_exact']:>10.1f}")
    lines.append(f"largest |z| (simulation vs exact): {result['max_abs_z']:.2f}")
    illusion = result.get("martingale")
    if illusion:
        lines += ["", f"Martingale illusion: banker, 1, 2, 4, ... units, stop at +{illusion['goal']} "
                      f"from {illusion['bankroll']} units ({illusion['sessions']:,} sessions, "
                      f"{result['timings']['martingale_s']:.1f} s)",
                  f"{'system':<12}{'max':>5}{'P(small win)':>14}{'P(loss)':>9}{'avg loss':>10}"
                  f"{'avg result':>12}  {'EV/unit wagered [95% CI]':<30}{'exact':>9}"]
        for r in illusion["rows"]:
            lo, hi = r["ci95"]
            lines.append(f"{r['system']:<12}{r['table_max']:>5}{r['p_goal']:>14.4f}{r['p_loss']:>9.4f}"
                         f"{r['mean_loss_when_lost']:>10.1f}{r['mean_result']:>12.2f}  "
                         f"{100 * r['ev_per_unit_wagered']:+.3f}% [{100 * lo:+.3f}, {100 * hi:+.3f}]"
                         f"{'':<4}{100 * r['exact_edge']:+.3f}%")
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    """P(target before ruin) and expected hands, vs start and vs target: exact lines, simulated bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
    for bet, entry in result["exact"].items():
        vs, vt = entry["vs_start"], entry["vs_target"]
        kw = {"color": COLORS[bet], "label": f"{NAMES[bet]}, exact"}
        axes[0, 0].plot(vs["starts"], vs["p_win"], **kw)
        axes[0, 1].plot(vs["starts"], vs["hands"], **kw)
        axes[1, 0].plot(vt["targets"], vt["p_win"], **kw)
        axes[1, 1].plot(vt["targets"], vt["hands"], **kw)
        for r in result["simulated"].get(bet, []):
            on_start = r["target"] == vs["target"]
            on_target = r["start"] == vt["start"]
            for flag, row, x in ((on_start, 0, r["start"]), (on_target, 1, r["target"])):
                if not flag:
                    continue
                lo, hi = r["p_win_ci95"]
                axes[row, 0].errorbar(x, r["p_win"], yerr=[[r["p_win"] - lo], [hi - r["p_win"]]],
                                      fmt="o", ms=4, capsize=3, color=COLORS[bet])
                hlo, hhi = r["hands_ci95"]
                axes[row, 1].errorbar(x, r["hands"], yerr=[[r["hands"] - hlo], [hhi - r["hands"]]],
                                      fmt="o", ms=4, capsize=3, color=COLORS[bet])
    any_entry = next(iter(result["exact"].values()))
    target, start = any_entry["vs_start"]["target"], any_entry["vs_target"]["start"]
    axes[0, 0].set(xlabel="starting bankroll (units)", ylabel="P(reach target before ruin)",
                   title=f"target {target} units")
    axes[0, 1].set(xlabel="starting bankroll (units)", ylabel="expected hands (ties included)",
                   title=f"target {target} units")
    axes[1, 0].set(xlabel="target (units)", ylabel="P(reach target before ruin)",
                   title=f"start {start} units", yscale="log")
    axes[1, 1].set(xlabel="target (units)", ylabel="expected hands (ties included)",
                   title=f"start {start} units")
    for ax in axes.flat:
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, title="lines exact; dots simulated, 95% CI", title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def teaching_page(result: dict, plot_name: str = "ruin.png") -> str:
    """A Markdown page a teacher can hand out."""
    ex = result["exact"]
    vs_target = next(iter(ex.values()))["vs_start"]["target"]
    start = next(iter(ex.values()))["vs_target"]["start"]
    lines = ["# Gambler's ruin at the baccarat table", "",
             "A player sits down with a bankroll of *i* units, bets one unit on the same spot every "
             f"hand, and leaves when the bankroll reaches a target of *N* units (a win) or when it "
             "falls below one unit, the stake (ruin). How likely is the win, and how long does it "
             "take?", "",
             "## The bets", "",
             "| bet | P(win a hand) | P(lose) | P(push: tie) | net win | EV per hand |",
             "|---|---|---|---|---|---|"]
    for bet, entry in ex.items():
        s = entry["steps"]
        wins = [f"{v / s['lattice']:+g}" for v in s["steps"] if v != 0]
        edge = sum(v / s["lattice"] * p for v, p in zip(s["steps"], s["probabilities"]))
        lines.append(f"| {NAMES[bet]} | {s['p_win']:.4f} | {s['p_lose']:.4f} | {s['p_push']:.4f} | "
                     f"{' / '.join(wins)} | {100 * edge:+.3f}% |")
    lines += ["", f"The cards are {result['rules']['decks']}-deck shoes dealt by the engine (burn, cut "
              "card, reshuffles). Rule of the session: **stop as soon as the bankroll is at least the "
              "target, or below one unit**. A banker win that jumps past the target is kept.", "",
              "## Results", "", f"![ruin]({plot_name})", "",
              f"Top: target {vs_target} units, against the starting bankroll. Bottom: start "
              f"{start} units, against the target. Lines are exact; dots are simulated sessions "
              f"({result['sessions_per_point']} per dot) with 95% confidence intervals.", "",
              "| bet | start | target | P(target) exact | simulated [95% CI] | hands exact | "
              "simulated [95% CI] |", "|---|---|---|---|---|---|---|"]
    for bet, rows in result["simulated"].items():
        for r in rows:
            lo, hi = r["p_win_ci95"]
            hlo, hhi = r["hands_ci95"]
            lines.append(f"| {bet} | {r['start']} | {r['target']} | {r['p_win_exact']:.4f} | "
                         f"{r['p_win']:.4f} [{lo:.4f}, {hi:.4f}] | {r['hands_exact']:.1f} | "
                         f"{r['hands']:.1f} [{hlo:.1f}, {hhi:.1f}] |")
    fair = ex.get("fair_coin", {}).get("vs_target")
    lines += ["", "## What to notice", "",
              "* **A fair game is already a bad bet on reaching a target far away:** with a fair coin "
              "the chance of reaching *N* from *i* is exactly *i/N*. Doubling a bankroll succeeds "
              "half the time, no more.",
              "* **A small edge compounds.** Per hand the house edge is about 1%, but the chance of "
              "reaching a distant target falls much faster than *i/N*: the more hands the session "
              "needs, the more the edge counts."]
    if fair is not None and "player" in ex:
        k = len(fair["targets"]) - 1
        lines.append(f"  From {start} units to {fair['targets'][k]}: fair coin "
                     f"{fair['p_win'][k]:.4f}, player {ex['player']['vs_target']['p_win'][k]:.4f}"
                     + (f", banker {ex['banker']['vs_target']['p_win'][k]:.4f}" if "banker" in ex
                        else "") + ".")
    if "banker" in ex and "player" in ex:
        b, pl = ex["banker"], ex["player"]
        short = 1  # the smallest start on the vs-start curve, and the largest target on the other
        lines.append(
            "* **Banker versus player.** The banker wins more often but pays 0.95, and a banker "
            "bankroll can be stranded between 0 and 1 unit (e.g. 0.95), which the rule counts as "
            "ruin. Its edge is smaller (1.06% against 1.24%), which counts more the longer the "
            "session; the 0.95 payout and the stranded change count more in short ones. "
            f"from {short} unit to {vs_target}: banker {b['vs_start']['p_win'][short - 1]:.4f}, "
            f"player {pl['vs_start']['p_win'][short - 1]:.4f}; from {start} to "
            f"{b['vs_target']['targets'][-1]}: banker {b['vs_target']['p_win'][-1]:.4f}, player "
            f"{pl['vs_target']['p_win'][-1]:.4f}.")
    lines += ["* **Long sessions.** The expected number of hands is largest for a start in the "
              "middle; ties (about 9.5% of hands) lengthen every session without changing its "
              "outcome.", "",
              "## How the exact numbers are computed", "",
              "* **Player and coin (+1/-1 steps):** the classical formula. Drop the ties; with *p* and "
              "*q* the chances of winning and losing a decided hand and *r = q/p*, "
              "P(reach N before 0 from i) = (1 - r^i) / (1 - r^N) (fair: i/N); expected decisions "
              "= i/(q-p) - N/(q-p) P (fair: i(N-i)); divide by 1 - P(tie) to count hands.",
              "* **Banker (+0.95/-1):** the formula does not apply (steps are uneven). Measure the "
              "bankroll in twentieths of a unit: a win is +19, a loss -20, a tie 0. Each bankroll is "
              "a state of a Markov chain; P(win) and the expected hands satisfy one linear equation "
              "per state (value here = chance of each move x value there), solved exactly.",
              "* The chain agrees with the classical formula on the +1/-1 walk to about 1e-12, and "
              "the simulated sessions, dealt from real shoes, agree with it within their "
              "confidence intervals.", "",
              (martingale_section(result["martingale"]) if result.get("martingale")
               else MARTINGALE_SECTION), ""]
    return "\n".join(lines)


def write_outputs(result: dict, out: str) -> list[str]:
    """``ruin.json``, ``ruin.png`` and the teaching page ``report.md`` under ``out``."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    plot(result, directory / "ruin.png")
    names = ["report.md", "ruin.png", "ruin.json"]
    if result.get("martingale"):
        plot_martingale(result["martingale"], directory / "martingale.png")
        names.append("martingale.png")
    (directory / "report.md").write_text(teaching_page(result, "ruin.png"))
    (directory / "ruin.json").write_text(strict_json.dumps(result, indent=1))
    return [str(directory / n) for n in names]


def _json_default(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


OUTPUT_NAMES = ("report.md", "ruin.png", "ruin.json", "martingale.png")
"""The files ``--out`` receives (a reused ``--out`` folder may hold only these)."""


def main(config_path: str, out: str | None = None, as_json: bool = False, backend: str = "serial",
         scheduler: str | None = None, workers: int | None = None,
         resume: bool | None = None) -> dict:
    """Load and validate the config, run, print the report (unless ``as_json``), write ``out``.

    ``backend`` (``serial``, ``processes``, ``dask``), ``scheduler`` (a Dask address; None: a local
    cluster) and ``workers`` choose where the simulation's chunks run. The result is identical on every
    backend except the wall-clock times, all under the one key ``"timings"``. A chunk that fails twice
    raises :class:`experiments.scale.ChunkError` before anything is written. ``out`` is checked before
    the run, its files are moved into place together, and the finished chunks of an interrupted
    simulation are kept in ``out/.partial`` for a rerun to resume (``resume=False`` discards them): see
    :mod:`experiments.outputs`.
    """
    config = load(config_path, RuinConfig)
    destination = outputs.prepare(out, OUTPUT_NAMES)
    store = outputs.chunk_store(destination, {"study": "ruin",
                                              "config": config.model_dump(mode="json")}, resume)
    result = run(config, backend, scheduler, workers, progress=not as_json,
                 store=store)
    result = json.loads(json.dumps(result, default=_json_default))  # plain JSON types
    result["config"] = str(config_path)
    if destination is not None:
        with destination.staging() as staged:
            written = write_outputs(result, str(staged))
        result["files"] = [str(destination.final_path(p, staged)) for p in written]
    if not as_json:
        print(report(result))
    return result


__all__ = ["RuinConfig", "ConfigError", "main", "run", "closed_form", "markov_chain",
           "step_distribution", "simulate_engine", "simulate_coin", "session_counts", "simulate_chunk",
           "merge", "summarize", "teaching_page", "plot", "MARTINGALE_SECTION"]

if __name__ == "__main__":  # python -m experiments.ruin CONFIG [OUT]
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None,
         as_json=bool(os.environ.get("PB_GYM_JSON")))
