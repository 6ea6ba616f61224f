"""Do the roads predict? The road pattern systems, the information bound and the streaks of real shoes.

``pb-gym experiment roads configs/experiments/roads.yaml`` deals real shoes (one engine table each,
first shoe to the cut card) and, before every hand, computes the exact probabilities of banker,
player and tie from the cards not yet seen (:func:`pb_gym.exact.outcome_probabilities`). Alongside it
follows the roads (:class:`pb_gym.roads.RoadTracker`) and every pattern of
:mod:`pb_gym.agents.patterns` (flat one unit), and reports:

1. **Pattern systems**: per system, profit per hand dealt and per unit wagered with 95% CIs over shoes
   (ratio estimator, :func:`pb_gym.experiments.common.stats.ratio_ci`), beside the exact EV of the very bets
   it made
   (the mean, over its bets, of the exact EV given the unseen cards), and the share of hands it bets.
2. **Information bound**: the perfect-information bettor (bets banker or player whenever the exact
   EV given the unseen cards is positive) gains what the whole card history can give. The roads carry
   at most what their state says about the next hand: for two road states (the Big Road's last side
   and current column length; the ask road) the realized share of banker wins and the mean exact
   P(banker | composition) per state, against the unconditional full-shoe P(banker), and the share of
   the variance of the exact P(banker | composition) that the road state explains (between states /
   total).
3. **Streaks against independent hands**: the same number of hands per shoe drawn independently with
   the full-shoe probabilities (a simulation of the same size, from the chunk's own seed) and fed to
   the same roads: completed Big Road column lengths per side (chi-square goodness of fit against the
   geometric law of independent hands), the longest streak per shoe, and each derived road's red
   share with its 95% CI over shoes, beside its exact long-run value for independent hands
   (:func:`pb_gym.roads.red_share_independent`: 50.003% for Big Eye Boy and Cockroach Pig, 50.011% for
   Small Road at the full shoe's odds; the z of each share against it and of real against simulated).

Output: ``roads.json``, ``roads.csv`` (the systems), ``roads.md`` (tables), ``systems.png``,
``streaks.png`` and ``scoreboard.png`` (the first dealt shoe of the first chunk). Chunked and resumable
like the other studies (:mod:`pb_gym.experiments.common.study`).
"""

from __future__ import annotations

import csv
import functools
import math
import time
from pathlib import Path

import numpy as np
from pydantic import Field

from pb_gym import engine, exact, roads, strict_json
from pb_gym import rules as R
from pb_gym.agents import patterns
from pb_gym.experiments.common import chunk_store, plotting, scale, stats, study
from pb_gym.experiments.common.yaml_config import RulesConfig, Strict

SYSTEMS: dict[str, tuple[str, int]] = {
    "follow the winner": ("streak", 1),
    "streak after 2": ("streak", 2),
    "streak after 3": ("streak", 3),
    "streak after 4": ("streak", 4),
    "chop": ("chop", 1),
    "chop after 3": ("chop", 3),
    "copy the previous column": ("copy_column", 3),
    "double (BB-PP)": ("double", 3),
    "ask road majority": ("ask_majority", 3),
    "ask road unanimous": ("ask_unanimous", 3),
}
"""The pattern systems studied (flat one unit): display name -> (pattern, after)."""
LONGEST = 40
"""Longest streaks and column lengths are counted up to this (the last bin holds longer ones)."""
LENGTH_BINS = 8
"""Column lengths 1..7 and 8+ in the goodness-of-fit test."""
OUTPUT_NAMES = ("roads.json", "roads.csv", "roads.md", "systems.png", "streaks.png", "scoreboard.png")


class RoadsConfig(Strict):
    """``configs/experiments/roads.yaml``."""

    rules: RulesConfig = Field(RulesConfig(), description="the rules of the shoes dealt")
    shoes: int = Field(10_000, ge=2, description="shoes dealt (one engine table each, to the cut card)")
    seed: int = Field(23, ge=0, description="seed of the deal (chunk i: SeedSequence(seed).spawn(n)[i])")
    chunk_shoes: int = Field(
        2_500, ge=1, description="shoes per chunk (the unit of work; changes the dealt hands)"
    )


def _column_lengths(lengths: np.ndarray, counts: np.ndarray, side: np.ndarray) -> None:
    """Add completed columns (``lengths`` > 0, of ``side`` 0/1) to ``counts`` ``(2, LONGEST + 1)``."""
    done = lengths > 0
    np.add.at(counts, (side[done], np.minimum(lengths[done], LONGEST)), 1)


def deal_chunk(chunk: scale.Chunk, rules: R.Rules) -> dict:
    """One chunk: ``chunk.size`` shoes dealt from the chunk's seed, reduced to mergeable sums. Module
    level with plain arguments, so that processes and Dask workers can run it."""
    n = chunk.size
    deal_seed, iid_seed = chunk.child_seeds(2)
    state = engine.init(rules, n, seed=deal_seed)
    hand = engine.HandResult.empty(n)
    iid_rng = np.random.default_rng(iid_seed)
    p_full = _winner_probabilities(R.full_shoe(rules.decks)[None, :])[0]
    paytable = rules.paytable()[:, [R.BETS.index("banker"), R.BETS.index("player")]]
    real, iid = roads.RoadTracker(n), roads.RoadTracker(n)
    k = len(SYSTEMS)
    sums = {name: np.zeros((n, k)) for name in ("bets", "net", "exact_ev")}
    per_shoe = {
        "hands": np.zeros(n),
        "perfect_gain": np.zeros(n),
        "perfect_exact": np.zeros(n),
        "perfect_bets": np.zeros(n),
    }
    states = {"big_road": 13, "ask_road": 27}
    state_sums = {name: np.zeros((size, 4)) for name, size in states.items()}  # n, banker, p, p^2
    columns = {"real": np.zeros((2, LONGEST + 1)), "independent": np.zeros((2, LONGEST + 1))}
    streak = {"real": np.zeros(n, dtype=np.int64), "independent": np.zeros(n, dtype=np.int64)}
    # per shoe and derived road: red marks, marks
    red = {"real": np.zeros((n, 3, 2)), "independent": np.zeros((n, 3, 2))}
    first_shoe: list[int] = []
    pairs: list[tuple[bool, bool]] = []
    tables = np.arange(n)
    while True:
        due = state.position >= state.cut_position
        if rules.hand_after_cut:
            due &= state.cut_hands == 1
        live = (state.shoes_started == 1) & ~due
        if not live.any():
            break
        unseen = state.unseen.astype(np.int64)
        rows = np.flatnonzero(live)
        p = np.zeros((n, 3))
        ev = np.zeros((n, 2))
        p[rows] = _winner_probabilities(unseen[rows])
        ev[rows] = exact.expectations(unseen[rows], paytable)
        # the road states before the hand
        last = np.where(real.last >= 0, real.last, 0)
        big_state = np.where(real.columns > 0, 1 + last * 6 + np.minimum(real.lengths[:, 0], 6) - 1, 0)
        ask = real.ask()[:, 0, :] + 1  # the marks after a banker, 0..2 each
        ask_state = ask[:, 0] * 9 + ask[:, 1] * 3 + ask[:, 2]
        sides = np.stack(
            [patterns.decide(pattern, real, after) for pattern, after in SYSTEMS.values()], axis=1
        )
        engine.deal(rules, state, hand)
        winner = np.where(live, hand.winner.astype(np.int64), -1)
        payoff = hand.payoffs(rules)[:, [R.BETS.index("banker"), R.BETS.index("player")]]
        bet = (sides >= 0) & live[:, None]
        chosen = np.clip(sides, 0, 1)
        sums["bets"] += bet
        sums["net"] += np.where(bet, np.take_along_axis(payoff, chosen, axis=1), 0.0)
        sums["exact_ev"] += np.where(bet, np.take_along_axis(ev, chosen, axis=1), 0.0)
        per_shoe["hands"] += live
        best = ev.max(axis=1)
        perfect = live & (best > 0)
        per_shoe["perfect_bets"] += perfect
        per_shoe["perfect_exact"] += np.where(perfect, best, 0.0)
        per_shoe["perfect_gain"] += np.where(perfect, payoff[tables, ev.argmax(axis=1)], 0.0)
        banker = (winner == R.BANKER).astype(float)
        for name, code in (("big_road", big_state), ("ask_road", ask_state)):
            np.add.at(
                state_sums[name],
                code[rows],
                np.stack([np.ones(rows.size), banker[rows], p[rows, 0], p[rows, 0] ** 2], axis=1),
            )
        if live[0]:
            first_shoe.append(int(winner[0]))
            pairs.append((bool(hand.banker_pair[0]), bool(hand.player_pair[0])))
        # independent hands with the full-shoe probabilities, as many as the real shoe deals
        draw = iid_rng.choice(3, size=n, p=p_full)
        for kind, tracker, result in (("real", real, winner), ("independent", iid, np.where(live, draw, -1))):
            new_column = ((result == 0) | (result == 1)) & (result != tracker.last) & (tracker.last >= 0)
            _column_lengths(
                np.where(new_column, tracker.lengths[:, 0], 0),
                columns[kind],
                np.where(tracker.last >= 0, tracker.last, 0),
            )
            tracker.record(result)
            np.maximum(streak[kind], tracker.lengths[:, 0], out=streak[kind])
            red[kind][:, :, 0] += tracker.made == 1
            red[kind][:, :, 1] += tracker.made != 0
    return {
        "sums": sums,
        "per_shoe": per_shoe,
        "state_sums": state_sums,
        "columns": columns,
        "longest": {
            kind: np.bincount(np.minimum(s, LONGEST), minlength=LONGEST + 1) for kind, s in streak.items()
        },
        "red": red,
        "first_shoe": first_shoe if chunk.index == 0 else [],
        "first_pairs": pairs if chunk.index == 0 else [],
    }


def _winner_probabilities(composition: np.ndarray) -> np.ndarray:
    """``(n, 3)`` exact P(banker), P(player), P(tie) of the next hand."""
    winners = np.zeros((R.N_OUTCOMES, 3))
    winners[np.arange(R.N_OUTCOMES), R.OUTCOME_WINNER] = 1.0
    return exact.expectations(composition, winners)


def merge(parts: list[dict]) -> dict:
    """Join the chunks in order: per-shoe rows concatenated, counts added."""
    first = parts[0]
    return {
        "sums": {k: np.concatenate([p["sums"][k] for p in parts]) for k in first["sums"]},
        "per_shoe": {k: np.concatenate([p["per_shoe"][k] for p in parts]) for k in first["per_shoe"]},
        "state_sums": {k: sum(p["state_sums"][k] for p in parts) for k in first["state_sums"]},
        "columns": {k: sum(p["columns"][k] for p in parts) for k in first["columns"]},
        "longest": {k: sum(p["longest"][k] for p in parts) for k in first["longest"]},
        "red": {k: np.concatenate([p["red"][k] for p in parts]) for k in first["red"]},
        "first_shoe": first["first_shoe"],
        "first_pairs": first["first_pairs"],
    }


def chi_square_p(statistic: float, dof: int) -> float:
    """Upper tail of the chi-square law (Wilson-Hilferty cube-root normal approximation: within about
    0.01 of the exact p-value for the degrees of freedom used here)."""
    if dof <= 0:
        return math.nan
    z = ((statistic / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


def _goodness_of_fit(counts: np.ndarray, q: float) -> dict:
    """Completed column lengths (``counts[L]``, L >= 1) against the geometric law ``q^(L-1) (1-q)``
    (lengths 1..7 and 8+)."""
    observed = np.append(counts[1:LENGTH_BINS], counts[LENGTH_BINS:].sum())
    total = observed.sum()
    law = np.array([q ** (L - 1) * (1 - q) for L in range(1, LENGTH_BINS)] + [q ** (LENGTH_BINS - 1)])
    expected = total * law
    statistic = float(((observed - expected) ** 2 / np.where(expected > 0, expected, 1)).sum())
    return {
        "observed": observed.astype(int).tolist(),
        "expected": expected.round(1).tolist(),
        "chi_square": statistic,
        "dof": LENGTH_BINS - 1,
        "p_value": chi_square_p(statistic, LENGTH_BINS - 1),
        "mean_length": float((np.arange(1, LONGEST + 1) * counts[1:]).sum() / max(total, 1)),
        "mean_length_independent_law": 1 / (1 - q),
    }


def run(
    config: RoadsConfig,
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    store: chunk_store.ChunkStore | None = None,
) -> dict:
    """Run the study; the JSON-ready result (identical on every backend but ``"timings"``)."""
    rules = config.rules.to_rules()
    t0 = time.perf_counter()
    chunks = scale.plan(config.shoes, config.chunk_shoes, config.seed)
    task = functools.partial(deal_chunk, rules=rules)
    with scale.progress_printer("roads", progress, len(chunks)) as printer:
        main = merge(scale.run(task, chunks, backend, scheduler, workers, printer, store=store))
    elapsed = time.perf_counter() - t0
    hands = main["per_shoe"]["hands"]
    p_full = _winner_probabilities(R.full_shoe(rules.decks)[None, :])[0]
    systems = []
    for j, name in enumerate(SYSTEMS):
        bets, net, ev = (main["sums"][k][:, j] for k in ("bets", "net", "exact_ev"))
        per_unit = stats.ratio_ci(net, bets)
        systems.append(
            {
                "system": name,
                "pattern": SYSTEMS[name][0],
                "after": SYSTEMS[name][1],
                "bets": int(bets.sum()),
                "share_of_hands_bet": float(bets.sum() / hands.sum()),
                "profit_per_hand": stats.ratio_ci(net, hands),
                "profit_per_unit_wagered": per_unit,
                "exact_ev_of_bets_made": float(ev.sum() / max(bets.sum(), 1)),
                "difference_from_exact": float(per_unit["estimate"] - ev.sum() / max(bets.sum(), 1))
                if per_unit["estimate"] is not None
                else None,
            }
        )
    perfect = {
        "gain_per_hand": stats.ratio_ci(main["per_shoe"]["perfect_gain"], hands),
        "exact_gain_per_hand": stats.ratio_ci(main["per_shoe"]["perfect_exact"], hands),
        "share_of_hands_bet": float(main["per_shoe"]["perfect_bets"].sum() / hands.sum()),
    }
    road_states = {}
    for name, table in main["state_sums"].items():
        count, banker, p_sum, p2_sum = table.T
        total = count.sum()
        mean_p = p_sum.sum() / total
        variance = p2_sum.sum() / total - mean_p**2
        used = count > 0
        between = float((count[used] * (p_sum[used] / count[used] - mean_p) ** 2).sum() / total)
        road_states[name] = {
            "states": [
                {
                    "state": _state_name(name, int(s)),
                    "hands": int(count[s]),
                    "banker_share": float(banker[s] / count[s]),
                    "banker_share_ci95": stats.wilson(int(banker[s]), int(count[s])),
                    "mean_exact_p_banker": float(p_sum[s] / count[s]),
                }
                for s in np.flatnonzero(count >= 1)
            ],
            "variance_of_exact_p_banker": float(variance),
            "share_of_variance_explained": between / variance if variance > 0 else math.nan,
        }
    # each derived road's red share, per shoe summed (a ratio over shoes: the marks of a shoe are
    # correlated), and its exact long-run value for independent hands at the full shoe's odds
    exact_red = {
        road: roads.red_share_independent(p_full[0], p_full[1], k) for road, k in roads.DERIVED_ROADS.items()
    }
    red_shares = {
        kind: {
            road: stats.ratio_ci(main["red"][kind][:, i, 0], main["red"][kind][:, i, 1])
            for i, road in enumerate(roads.DERIVED_ROADS)
        }
        for kind in ("real", "independent")
    }
    independence: dict = {"red_share_exact_independent": exact_red}
    for kind in ("real", "independent"):
        columns = main["columns"][kind]
        q = {"banker": p_full[0] / (p_full[0] + p_full[1]), "player": p_full[1] / (p_full[0] + p_full[1])}
        longest = main["longest"][kind]
        independence[kind] = {
            "columns": {side: _goodness_of_fit(columns[i], q[side]) for i, side in enumerate(q)},
            "longest_streak_mean": float((np.arange(LONGEST + 1) * longest).sum() / longest.sum()),
            "longest_streak_counts": longest.astype(int).tolist(),
            "red_share": {road: red_shares[kind][road]["estimate"] for road in roads.DERIVED_ROADS},
            "red_share_ci95": {road: red_shares[kind][road]["ci95"] for road in roads.DERIVED_ROADS},
            "red_share_se": {road: red_shares[kind][road]["se"] for road in roads.DERIVED_ROADS},
            "marks": {road: red_shares[kind][road]["n"] for road in roads.DERIVED_ROADS},
            "red_share_z_against_exact": {
                road: _z(red_shares[kind][road], exact_red[road]) for road in roads.DERIVED_ROADS
            },
        }
    # the column lengths, real against independent (the same hands per shoe): a chi-square test of
    # homogeneity; the geometric law alone is not the reference (a column cut by the shoe's end is not
    # counted, and long columns are cut more often, so completed columns are shorter than the law)
    for side in ("banker", "player"):
        observed = np.array(
            [independence[kind]["columns"][side]["observed"] for kind in ("real", "independent")], dtype=float
        )
        expected = observed.sum(axis=1, keepdims=True) * observed.sum(axis=0, keepdims=True) / observed.sum()
        used = expected.sum(axis=0) > 0
        statistic = float(((observed - expected)[:, used] ** 2 / expected[:, used]).sum())
        dof = int(used.sum()) - 1
        independence["real"]["columns"][side]["against_independent"] = {
            "chi_square": statistic,
            "dof": dof,
            "p_value": chi_square_p(statistic, dof),
        }
    # the red shares, real against the simulated independent hands: the difference over its SE (each
    # share's SE over shoes; the two deals are independent)
    for road in roads.DERIVED_ROADS:
        a, b = independence["real"], independence["independent"]
        difference = {
            "estimate": None if a["red_share"][road] is None else a["red_share"][road] - b["red_share"][road],
            "se": None
            if a["red_share"][road] is None
            else math.hypot(a["red_share_se"][road], b["red_share_se"][road]),
        }
        a.setdefault("red_share_z_against_independent", {})[road] = _z(difference, 0.0)
    letters = "BPT"
    return {
        "shoes": config.shoes,
        "hands": int(hands.sum()),
        "hands_per_shoe": float(hands.mean()),
        "p_full_shoe": {"banker": float(p_full[0]), "player": float(p_full[1]), "tie": float(p_full[2])},
        "systems": systems,
        "perfect_information": perfect,
        "road_states": road_states,
        "independence": independence,
        "first_shoe": "".join(letters[w] for w in main["first_shoe"]),
        "first_shoe_pairs": main["first_pairs"],
        "timings": {"deal_s": elapsed},
    }


def _z(share: dict, reference: float) -> float | None:
    """(estimate - reference) / SE of a :func:`pb_gym.experiments.common.stats.ratio_ci` entry; None without
    a finite
    SE (no marks, or a single shoe)."""
    estimate, se = share["estimate"], share["se"]
    if estimate is None or se is None or not 0 < se < math.inf:
        return None
    return (estimate - reference) / se


def _state_name(family: str, code: int) -> str:
    if family == "big_road":
        if code == 0:
            return "no decision yet"
        side, length = divmod(code - 1, 6)
        return f"{'BP'[side]} x {length + 1}{'+' if length == 5 else ''}"
    marks = [(code // 9) % 3, (code // 3) % 3, code % 3]
    return "after B: " + " ".join({0: "blue", 1: "-", 2: "red"}[m] for m in marks)


def _pct(entry: dict, digits: int = 3) -> str:
    low, high = entry["ci95"]
    return f"{100 * entry['estimate']:+.{digits}f}% [{100 * low:+.{digits}f}, {100 * high:+.{digits}f}]"


def markdown(result: dict) -> str:
    """The Markdown tables of the result (``roads.md``)."""
    lines = [
        f"# Do the roads predict? {result['shoes']:,} shoes, {result['hands']:,} hands",
        "",
        "| system | share of hands bet | profit per hand (95% CI) | per unit wagered (95% CI) | "
        "exact EV of the bets made |",
        "|---|---|---|---|---|",
    ]
    for s in result["systems"]:
        lines.append(
            f"| {s['system']} | {100 * s['share_of_hands_bet']:.1f}% | {_pct(s['profit_per_hand'])} "
            f"| {_pct(s['profit_per_unit_wagered'])} | {100 * s['exact_ev_of_bets_made']:+.3f}% |"
        )
    perfect = result["perfect_information"]
    lines += [
        "",
        f"Perfect information (the exact EV given the unseen cards; bet banker or player when "
        f"positive): exact expected gain {_pct(perfect['exact_gain_per_hand'], 5)} per hand "
        f"(dealt: {_pct(perfect['gain_per_hand'], 4)}), "
        f"{100 * perfect['share_of_hands_bet']:.2f}% of hands bet.",
        "",
    ]
    for family, entry in result["road_states"].items():
        lines.append(
            f"Road state `{family}`: explains {100 * entry['share_of_variance_explained']:.3f}% "
            f"of the variance of the exact P(banker | unseen cards) (full shoe P(banker) = "
            f"{100 * result['p_full_shoe']['banker']:.3f}%)."
        )
    lines += [
        "",
        "| road state | hands | banker share (95% CI) | mean exact P(banker) |",
        "|---|---|---|---|",
    ]
    for st in result["road_states"]["big_road"]["states"]:
        lo, hi = st["banker_share_ci95"]
        lines.append(
            f"| {st['state']} | {st['hands']:,} | {100 * st['banker_share']:.2f}% "
            f"[{100 * lo:.2f}, {100 * hi:.2f}] | {100 * st['mean_exact_p_banker']:.3f}% |"
        )
    lines += ["", "| | real shoes | independent hands |", "|---|---|---|"]
    real, iid = result["independence"]["real"], result["independence"]["independent"]
    for side in ("banker", "player"):
        r, i = real["columns"][side], iid["columns"][side]
        test = r["against_independent"]
        lines.append(
            f"| {side} columns (completed), mean length | {r['mean_length']:.4f} (against "
            f"independent: chi2 {test['chi_square']:.1f}, {test['dof']} dof, p "
            f"{test['p_value']:.3f}) | {i['mean_length']:.4f} (uncut geometric law: "
            f"{r['mean_length_independent_law']:.4f}) |"
        )
    lines.append(
        f"| longest streak per shoe, mean | {real['longest_streak_mean']:.3f} | "
        f"{iid['longest_streak_mean']:.3f} |"
    )
    exact_red = result["independence"]["red_share_exact_independent"]
    lines += [
        "",
        "| derived road | red share: exact, independent hands (long run) | real shoes [95% CI] (z against "
        "exact) | independent hands, simulated [95% CI] (z against exact) | real against simulated (z) |",
        "|---|---|---|---|---|",
    ]
    for road in roads.DERIVED_ROADS:
        lines.append(
            f"| {road} | {100 * exact_red[road]:.4f}% | {_share(real, road)} | {_share(iid, road)} | "
            f"{_signed(real['red_share_z_against_independent'][road])} |"
        )
    return "\n".join(lines) + "\n"


def _signed(z: float | None) -> str:
    return "n/a" if z is None else f"{z:+.2f}"


def _share(entry: dict, road: str) -> str:
    """A red share with its 95% CI over shoes and its z against the exact value."""
    share, interval = entry["red_share"][road], entry["red_share_ci95"][road]
    if share is None:
        return "no marks"
    return (
        f"{100 * share:.3f}% [{100 * interval[0]:.3f}, {100 * interval[1]:.3f}] "
        f"(z {_signed(entry['red_share_z_against_exact'][road])})"
    )


def report(result: dict) -> str:
    """The text report (the Markdown tables)."""
    return markdown(result)


def plot_systems(result: dict, path: Path) -> None:
    plt = plotting.pyplot()
    systems = result["systems"]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    y = np.arange(len(systems))
    est = [100 * s["profit_per_unit_wagered"]["estimate"] for s in systems]
    low = [100 * s["profit_per_unit_wagered"]["ci95"][0] for s in systems]
    high = [100 * s["profit_per_unit_wagered"]["ci95"][1] for s in systems]
    ax.errorbar(
        est,
        y,
        xerr=[np.subtract(est, low), np.subtract(high, est)],
        fmt="o",
        color="#1f5fbf",
        label="realized per unit wagered (95% CI)",
    )
    ax.scatter(
        [100 * s["exact_ev_of_bets_made"] for s in systems],
        y,
        marker="x",
        color="#d62728",
        label="exact EV of the bets made",
        zorder=3,
    )
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(y, [s["system"] for s in systems])
    ax.invert_yaxis()
    ax.set_xlabel("% of the amount wagered")
    ax.set_title(f"Road pattern systems over {result['shoes']:,} shoes")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    plotting.save(fig, path)


def plot_streaks(result: dict, path: Path) -> None:
    plt = plotting.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for kind, colour in (("real", "#1f5fbf"), ("independent", "#999999")):
        fit = result["independence"][kind]["columns"]["banker"]
        axes[0].plot(
            range(1, LENGTH_BINS + 1),
            fit["observed"],
            "o-" if kind == "real" else "s--",
            color=colour,
            label=f"{kind} banker columns",
        )
        counts = np.array(result["independence"][kind]["longest_streak_counts"], dtype=float)
        axes[1].plot(
            np.arange(len(counts)),
            counts / counts.sum(),
            "o-" if kind == "real" else "s--",
            color=colour,
            label=kind,
        )
    fit = result["independence"]["real"]["columns"]["banker"]
    axes[0].plot(range(1, LENGTH_BINS + 1), fit["expected"], "x", color="#d62728", label="geometric law")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("Big Road column length (8 = 8 or more)")
    axes[0].legend(fontsize=8)
    axes[1].set_xlim(0, 20)
    axes[1].set_xlabel("longest streak in the shoe")
    axes[1].legend(fontsize=8)
    plotting.save(fig, path)


def write_outputs(result: dict, folder: Path) -> list[Path]:
    """Every file of :data:`OUTPUT_NAMES` under ``folder``."""
    from pb_gym.experiments.roads import plot as roads_plot

    (folder / "roads.json").write_text(strict_json.dumps(result, indent=1))
    with open(folder / "roads.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "system",
                "bets",
                "share_of_hands_bet",
                "profit_per_hand",
                "per_hand_low",
                "per_hand_high",
                "per_unit_wagered",
                "per_unit_low",
                "per_unit_high",
                "exact_ev_of_bets_made",
            ]
        )
        for s in result["systems"]:
            writer.writerow(
                [
                    s["system"],
                    s["bets"],
                    s["share_of_hands_bet"],
                    s["profit_per_hand"]["estimate"],
                    *s["profit_per_hand"]["ci95"],
                    s["profit_per_unit_wagered"]["estimate"],
                    *s["profit_per_unit_wagered"]["ci95"],
                    s["exact_ev_of_bets_made"],
                ]
            )
    (folder / "roads.md").write_text(markdown(result))
    plot_systems(result, folder / "systems.png")
    plot_streaks(result, folder / "streaks.png")
    pairs = result["first_shoe_pairs"]
    board = roads.read_roads(result["first_shoe"], [b for b, _ in pairs], [p for _, p in pairs])
    width = max(24, max([x + 1 for x, _ in roads.layout(board.big_road)], default=0))
    roads_plot.draw_scoreboard(
        board,
        folder / "scoreboard.png",
        title="A dealt shoe (8 decks, cut card 14)",
        bead_columns=15,
        road_columns=width,
    )
    return [folder / n for n in OUTPUT_NAMES]


main = study.command("roads", RoadsConfig, OUTPUT_NAMES, run, write_outputs, report)
"""``pb-gym experiment roads CONFIG``: the study's entry point
(:func:`pb_gym.experiments.common.study.command`)."""


__all__ = [
    "RoadsConfig",
    "SYSTEMS",
    "deal_chunk",
    "merge",
    "run",
    "markdown",
    "write_outputs",
    "main",
    "chi_square_p",
]
