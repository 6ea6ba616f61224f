"""The report of ``pb-gym evaluate``: per-system figures, the terminal table, report.json, the CSV.

Read after ``pb_gym/experiments/evaluate/__init__.py`` (the study that produces the merged statistics
this module turns into figures); the plots are drawn by :mod:`pb_gym.experiments.evaluate.figures`.
Statistics are over sessions (independent shoes): EV per unit wagered is the ratio
``sum(net) / sum(wagered)`` with a 95% confidence interval by the delta method, set against the exact
house edge of the bets the system placed (stake-weighted; for a counting system, the exact EV of the
composition before each hand it bet on).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from pb_gym import strict_json
from pb_gym.experiments.common import plotting
from pb_gym.experiments.common.stats import holm, two_sided_p
from pb_gym.experiments.common.stats import ratio_ci_from_moments as ratio_ci
from pb_gym.experiments.evaluate import exact_chain
from pb_gym.experiments.evaluate import summary as summaries
from pb_gym.experiments.evaluate.figures import FIGURE_NAMES, plot
from pb_gym.experiments.evaluate.settings import StudyConfig
from pb_gym.progress import printable

# ------------------------------------------------------------------------------ per system
MIN_BETS_FOR_INTERVAL = 30
"""Below this many bets a system's report gives no confidence interval ("too few bets for an
interval"): the delta-method interval rests on a normal approximation that a few bets do not support
(four losing bets give an interval of width zero)."""


def system_summary(stats: dict, config: StudyConfig, full_ev: np.ndarray) -> dict:
    """The report line of one system from its merged statistics (``full_ev``: the exact EV of each
    bet off a full shoe)."""
    wagered = stats["sum_wagered"]
    bets = stats["bets"]
    n = stats["sessions"]
    ev, lo, hi = ratio_ci(
        stats["sum_net"], wagered, stats["sum_net2"], stats["sum_wagered2"], stats["sum_net_wagered"], n
    )
    conditional: float | None = (
        (stats["exact_ev_wagered"] / wagered if wagered > 0 else math.nan) if stats["conditional"] else None
    )
    exact_edge: float | None
    if stats["counting"]:
        exact_edge = conditional
    else:
        exact_edge = float(stats["wagered_by_spot"] @ full_ev / wagered) if wagered > 0 else math.nan
    # the CI is checked against the exact EV of the shoes the bets were really placed on, when known
    reference = conditional if conditional is not None else exact_edge
    within = bool(lo <= reference <= hi) if wagered > 0 and reference is not None else None
    note = None
    if wagered <= 0:
        note = "no bet placed"
    elif bets < MIN_BETS_FOR_INTERVAL:  # a handful of bets can give a zero-width interval
        note = "too few bets for an interval"
        lo, hi, within = math.nan, math.nan, None
    bet_spots = [config.table_bets().columns[i] for i in np.flatnonzero(stats["wagered_by_spot"] > 0)]
    final = stats["final"]
    return {
        "name": stats["name"],
        "type": stats["type"],
        "bet": "/".join(bet_spots) if bet_spots else stats["bet"],
        "hands": bets,
        "hands_dealt": stats["hands_dealt"],
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
        "mean_final_bankroll": summaries.final_mean(final),
        "median_final_bankroll": summaries.final_median(final),
        "mean_max_drawdown": stats["sum_max_drawdown"] / n,
        "max_drawdown": stats["max_drawdown"],
        "average_stake": wagered / bets if bets else math.nan,
        "largest_stake": stats["max_stake"],
        "table_max_binds": stats["table_capped"] / bets if bets else 0.0,
        "all_in_share": stats["bankroll_capped"] / bets if bets else 0.0,
    }


def fan_summary(stats: dict, edges: np.ndarray, states: tuple[str, ...]) -> dict:
    """The fan of one system at every checkpoint: the quantiles
    (:data:`pb_gym.experiments.evaluate.summary.QUANTILES`) of the bankroll, exact where the chunks kept every
    distinct bankroll (``quantiles_exact``), else read from the histogram and kept inside the exact
    range; and the share of sessions in each of ``states``."""
    quantiles, exact_flags = [], []
    for k, row in enumerate(stats["fan"]):
        table = stats["fan_values"][k]
        if table is not None:
            quantiles.append(summaries.exact_quantiles(*table))
        else:
            low, high = stats["fan_min"][k], stats["fan_max"][k]
            quantiles.append([float(min(max(x, low), high)) for x in summaries.binned_quantiles(row, edges)])
        exact_flags.append(table is not None)
    sessions = stats["states"].sum(axis=1, keepdims=True)
    shares = stats["states"] / np.maximum(sessions, 1)
    return {
        "quantiles": quantiles,
        "quantiles_exact": exact_flags,
        "states": {state: shares[:, i].tolist() for i, state in enumerate(states)},
    }


# ---------------------------------------------------------------------------------------- output
SCALARS = [
    "name",
    "bet",
    "hands",
    "wagered",
    "net",
    "ev_per_hand",
    "ev_per_unit_wagered",
    "ci95",
    "exact_edge",
    "edge_within_ci",
    "p_ruin",
    "p_target",
    "p_stop_loss",
    "mean_final_bankroll",
    "median_final_bankroll",
    "mean_max_drawdown",
    "max_drawdown",
    "average_stake",
    "largest_stake",
    "table_max_binds",
    "all_in_share",
]


TABLE_WIDTH = 120
"""The terminal table fits this many characters (with system names up to 30 characters long); the
figures it leaves out (wagered, mean final bankroll, drawdown, stakes) are in report.json and the CSV."""


def _terminal_names(report: dict) -> dict:
    """``report`` with the study's and the systems' names escaped for a terminal
    (:func:`pb_gym.progress.printable`); the files keep them exact."""
    systems = [{**s, "name": printable(s["name"])} for s in report["systems"]]
    return {**report, "name": printable(report["name"]), "systems": systems}


def print_report(report: dict) -> None:
    """The human-readable table, its footnotes, and a statistical note on the intervals that miss their
    exact edge: a WARNING only for the misses that Holm's family-wise check at 5% finds significant."""
    report = _terminal_names(report)
    length = (
        f"one shoe ({report['hands_dealt'] / report['sessions']:.1f} hands on average)"
        if report.get("one_shoe")
        else f"up to {report['hands_per_session']:,} hands"
    )
    print(
        f"{report['name']}: {report['sessions']:,} sessions x {length}, "
        f"bankroll {report['bankroll']:g}, table {report['table']['minimum']:g}-"
        f"{report['table']['maximum']:g} (unit {report['table']['unit']:g}), "
        f"{report['chunks']} chunk(s), {report['timings']['seconds']:.1f} s"
    )
    width = max([len("system")] + [len(s["name"]) for s in report["systems"]])  # names in full
    print(
        f"{'system':<{width}} {'bets':>10} {'EV/unit wagered [95% CI]':>26} {'exact':>8} "
        f"{'P(ruin)':>7} {'P(stop)':>7} {'P(goal)':>7} {'median':>7} {'at max':>7}"
    )
    for s in report["systems"]:
        lo, hi = s["ci95"]
        interval = (
            "(too few bets)"
            if s.get("interval_note") == "too few bets for an interval"
            else "[n/a]"
            if not np.isfinite(lo)
            else f"[{100 * lo:+.3f}, {100 * hi:+.3f}]"
        )
        ev = f"{_pct(s['ev_per_unit_wagered'])} {interval}"
        print(
            f"{s['name']:<{width}} {s['hands']:>10,} {ev:>26} "
            f"{_pct(_reference(s)):>8} {s['p_ruin']:>7.3f} {s['p_stop_loss']:>7.3f} "
            f"{s['p_target']:>7.3f} {s['median_final_bankroll']:>7.0f} {s['table_max_binds']:>7.2%}"
        )
    conditional = [s["name"] for s in report["systems"] if s["exact_edge_conditional"] is not None]
    if conditional and len(conditional) == len(report["systems"]):
        print(
            "exact: the exact EV of the cards unseen before each bet, stake-weighted (what the CI is "
            "checked against; the full-shoe edge is exact_edge in report.json)"
        )
    elif conditional:
        print(
            f"exact: the full-shoe house edge of the bets placed, stake-weighted; for "
            f"{', '.join(conditional)}, the exact EV of the cards unseen before each bet"
        )
    print(
        "at max: the share of bets the table maximum bound; wagered, mean final bankroll, drawdowns and "
        "stakes: report.json, systems.csv"
    )
    if any("exact" in s for s in report["systems"]):
        exact_chain.print_exact(report)
    for s in report["systems"]:
        if s.get("interval_note") == "too few bets for an interval":
            print(
                f"NOTE: {s['name']}: {s['hands']} bet(s), too few bets for an interval (at least "
                f"{MIN_BETS_FOR_INTERVAL}); its EV per unit wagered is not compared with the exact "
                "edge."
            )
        elif s["edge_within_ci"] is None:
            why = (
                " (it stakes only where the exact EV is positive, and a stake below the table "
                "minimum is not placed)"
                if s["type"] in ("kelly", "perfect")
                else ""
            )
            print(f"NOTE: {s['name']} placed no bet{why}.")
    _note_misses(report["systems"])


def _note_misses(systems: list[dict], alpha: float = 0.05) -> None:
    """The intervals that miss their exact edge, as a statistical note: with many systems at 95% a few
    misses are expected, so a WARNING names only those that Holm's family-wise check rejects."""
    tested = [s for s in systems if s["edge_within_ci"] is not None]
    misses = [s for s in tested if s["edge_within_ci"] is False]
    if not misses:
        return
    p_values = [
        two_sided_p(s["ev_per_unit_wagered"], s["ci95"][0], s["ci95"][1], _reference(s)) for s in tested
    ]
    rejected = holm(p_values, alpha)
    names = ", ".join(f"{s['name']} (p = {p_values[tested.index(s)]:.3f})" for s in misses)
    print(
        f"Statistical note: {len(misses)} of {len(tested)} 95% intervals miss their exact edge: "
        f"{names}. About {0.05 * len(tested):.1f} misses are expected by chance, and systems that play "
        f"the same hands miss together. Holm's family-wise check at {alpha:.0%}: "
        + ("none is significant." if not any(rejected) else "significant misses below.")
    )
    for s, reject in zip(tested, rejected, strict=True):
        if reject:
            print(
                f"WARNING: {s['name']}: its 95% CI [{_pct(s['ci95'][0])}, {_pct(s['ci95'][1])}] misses "
                f"the exact {_pct(_reference(s))} beyond chance (Holm, family-wise {alpha:.0%}); a miss "
                "that persists across seeds is a bug."
            )
    if any(s["exact_edge_conditional"] is None for s in misses):
        print(
            "`exact_conditional: true` compares each system with the exact EV of the cards unseen "
            "before its bets instead of the full-shoe edge (slower: an exact EV before every bet)."
        )


def _reference(system: dict) -> float:
    """The exact figure a system's CI is checked against: the exact EV of the cards unseen before its
    bets where computed (``exact_edge_conditional``), else the full-shoe edge of its bets."""
    conditional = system["exact_edge_conditional"]
    return conditional if conditional is not None else system["exact_edge"]


def _pct(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.3f}%"


OUTPUT_NAMES = ("report.json", "systems.csv", "paths.json", *FIGURE_NAMES)
"""The files :func:`write_outputs` always writes (a reused ``--out`` folder may hold only these and
:data:`EXACT_OUTPUT_NAMES`)."""
EXACT_OUTPUT_NAMES = ("exact_goal_vs_final.png",)
"""The files :func:`write_outputs` adds when the study has ``exact: true`` and a finite system."""


EXACT_COLUMNS = (
    "p_target",
    "p_ruin",
    "p_stop_loss",
    "p_hand_limit",
    "expected_hands",
    "mean_final_bankroll",
    "reason",
)
"""The exact session outcome's figures that systems.csv gives as ``exact_*`` columns (``exact: true``;
``reason`` where a system has no finite chain; the distribution of the final bankroll is in report.json)."""


def write_outputs(report: dict, out: Path) -> list[Path]:
    """Write report.json, systems.csv and the plots under ``out``; return the paths written. (``pb-gym
    evaluate`` writes them into a staging folder moved into place whole: see
    pb_gym.experiments.common.outputs.)"""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.json", out / "systems.csv", out / "paths.json"]
    (out / "report.json").write_text(strict_json.dumps(json_report(report), indent=2))
    # bankroll quantiles at the checkpoints and the sample paths, to redraw the fan plots
    (out / "paths.json").write_text(
        strict_json.dumps({"checkpoints": report["checkpoints"], "paths": report["paths"]})
    )
    # with exact: true, the exact session outcome of each system (or why it has none) as columns too
    exact = list(EXACT_COLUMNS) if any("exact" in s for s in report["systems"]) else []
    with open(out / "systems.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [k for k in SCALARS if k != "ci95"] + ["ci95_low", "ci95_high"] + [f"exact_{k}" for k in exact]
        )
        for s in report["systems"]:
            row = [s[k] for k in SCALARS if k != "ci95"] + list(s["ci95"])
            writer.writerow(row + [s.get("exact", {}).get(k, "") for k in exact])
    written += plotting.drawn_or_noted(lambda: plot(report, out), out, FIGURE_NAMES)
    if any("p_target" in s.get("exact", {}) for s in report["systems"]):
        figure = EXACT_OUTPUT_NAMES[0]

        def goal_against_final() -> list[Path]:
            exact_chain.plot_goal_against_final(report, out / figure)
            return [out / figure]

        written += plotting.drawn_or_noted(goal_against_final, out, [figure])
    return written


BULKY = ("final_bankrolls", "session_hands", "final_summaries", "paths")
"""The report's entries that are not in report.json: every session's final bankroll (only when asked
for), the final bankroll distributions (drawn in final_bankrolls.png) and the fans (paths.json)."""


def json_report(report: dict) -> dict:
    """The report without the bulky arrays (what ``--json`` prints and report.json holds)."""
    return {k: v for k, v in report.items() if k not in BULKY}


__all__ = [
    "system_summary",
    "fan_summary",
    "ratio_ci",
    "MIN_BETS_FOR_INTERVAL",
    "print_report",
    "json_report",
    "write_outputs",
    "plot",
    "OUTPUT_NAMES",
    "EXACT_OUTPUT_NAMES",
    "SCALARS",
    "BULKY",
]
