"""The report of ``pb-gym evaluate``: per-system figures, the terminal table, report.json, the CSV, the plots.

Read after ``experiments/evaluate.py`` (the loop that produces the merged statistics this module turns
into figures). Statistics are over sessions (independent shoes): EV per unit wagered is the ratio
``sum(net) / sum(wagered)`` with a 95% confidence interval by the delta method, set against the exact
house edge of the bets the system placed (stake-weighted; for a counting system, the exact EV of the
composition before each hand it bet on).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from pb_gym import strict_json
from pb_gym.experiments import evaluate_summary as summaries
from pb_gym.experiments import plotting
from pb_gym.experiments.evaluate_config import StudyConfig
from pb_gym.experiments.stats import holm, two_sided_p
from pb_gym.experiments.stats import ratio_ci_from_moments as ratio_ci

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
    (:data:`experiments.evaluate_summary.QUANTILES`) of the bankroll, exact where the chunks kept every
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


def print_report(report: dict) -> None:
    """The human-readable table, its footnotes, and a statistical note on the intervals that miss their
    exact edge: a WARNING only for the misses that Holm's family-wise check at 5% finds significant."""
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
        from pb_gym.experiments.exact_systems import print_exact

        print_exact(report)
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


OUTPUT_NAMES = (
    "report.json",
    "systems.csv",
    "paths.json",
    "bankroll_paths.png",
    "final_bankrolls.png",
    "ev_per_unit_wagered.png",
)
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


def write_outputs(report: dict, out: Path, figures: plotting.Aside | None = None) -> list[Path]:
    """Write report.json, systems.csv and the plots under ``out``; return the paths written. (``pb-gym
    evaluate`` writes them into a staging folder moved into place whole: see pb_gym.experiments.outputs.)
    ``figures``: the figures made ahead (:func:`figures_aside`)."""
    out.mkdir(parents=True, exist_ok=True)
    # first: the copies draw the figures while the tables are written
    figures = draw_figures(report, out, figures)
    try:
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
                [k for k in SCALARS if k != "ci95"]
                + ["ci95_low", "ci95_high"]
                + [f"exact_{k}" for k in exact]
            )
            for s in report["systems"]:
                row = [s[k] for k in SCALARS if k != "ci95"] + list(s["ci95"])
                writer.writerow(row + [s.get("exact", {}).get(k, "") for k in exact])
        written += plotting.drawn_or_noted(lambda: plot(report, out, figures), out, OUTPUT_NAMES[3:])
    except BaseException:
        figures.cancel()  # (at once: the folder they would draw into is about to be removed)
        raise
    if any("p_target" in s.get("exact", {}) for s in report["systems"]):
        from pb_gym.experiments import exact_systems

        figure = EXACT_OUTPUT_NAMES[0]

        def goal_against_final() -> list[Path]:
            exact_systems.plot_goal_against_final(report, out / figure)
            return [out / figure]

        written += plotting.drawn_or_noted(goal_against_final, out, [figure])
    return written


BULKY = ("final_bankrolls", "session_hands", "final_summaries", "paths")
"""The report's entries that are not in report.json: every session's final bankroll (only when asked
for), the final bankroll distributions (drawn in final_bankrolls.png) and the fans (paths.json)."""


def json_report(report: dict) -> dict:
    """The report without the bulky arrays (what ``--json`` prints and report.json holds)."""
    return {k: v for k, v in report.items() if k not in BULKY}


def _ev_axis(
    ev: np.ndarray, lo: np.ndarray, hi: np.ndarray, edge: np.ndarray
) -> tuple[float | None, float | None]:
    """The x range of the EV plot: the intervals of ordinary width (at most 4x the median half-width)
    and every exact edge, padded; None when nothing is wider than that (matplotlib's own range)."""
    half = (hi - lo) / 2
    ok = np.isfinite(half)
    if ok.sum() < 2:
        return None, None
    ordinary = ok & (half <= 4 * np.median(half[ok]))
    if ordinary.all() and np.isfinite(ev).all():
        return None, None
    values = np.concatenate([lo[ordinary], hi[ordinary], edge[np.isfinite(edge)], [0.0]])
    left, right = float(values.min()), float(values.max())
    pad = 0.15 * (right - left or 1.0)
    return left - pad, right + pad


FINAL_BINS = 80
"""Bins of the final-bankroll figure's value axis (shared by every system)."""
VIOLIN_COLOUR = "#9ecae1"
PEAK_LABEL = 0.1
"""A bin of the final-bankroll figure holding at least this share of a system's sessions is labelled."""


def plot_final_bankrolls(report: dict, path: Path) -> Path:
    """Where the sessions end, per system: the share of sessions at each final bankroll as a violin
    (drawn from the bounded summaries: the distinct final bankrolls, or their buckets), with the mean
    and the median. A box plot would hide what matters here: a progression's sessions pile up at two
    peaks, the goal and ruin (or the stop-loss), and few end in between."""
    plt = plotting.pyplot()
    from matplotlib.collections import PolyCollection

    names = [s["name"] for s in report["systems"]]
    tables = [summaries.final_table(report["final_summaries"][n])[:2] for n in names]
    low = min(float(values.min()) for values, _ in tables)
    high = max(float(values.max()) for values, _ in tables)
    if not high > low:
        high = low + 1.0
    edges = np.linspace(low, high, FINAL_BINS + 1)
    centres = (edges[:-1] + edges[1:]) / 2
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(names)), 4.2))
    for i, (values, counts) in enumerate(tables):
        share = np.histogram(values, bins=edges, weights=counts)[0] / counts.sum()
        width = 0.42 * share / share.max()
        drawn = np.flatnonzero(share > 0)
        # a peak one bin tall (every ruined session ends below the table minimum) is drawn at least
        # 2% of the axis tall, so that it reads as the peak it is
        height = max(edges[1] - edges[0], 0.02 * (high - low))
        left = i + 1 - width[drawn]
        right = left + 2 * width[drawn]
        bottom = centres[drawn] - height / 2
        top = bottom + height
        # one collection of the violin's bars, each corner as barh's rectangle has it (a patch a bar
        # cost the figure about 0.2 s; the same pixels)
        ax.add_collection(
            PolyCollection(
                list(
                    np.stack(
                        [np.stack([left, right, right, left], 1), np.stack([bottom, bottom, top, top], 1)], 2
                    )
                ),
                facecolors=VIOLIN_COLOUR,
                linewidths=0,
            )
        )
        for k in np.flatnonzero(share >= PEAK_LABEL):  # the peaks, with their share of the sessions
            ax.text(i + 1 + width[k] + 0.04, centres[k], f"{share[k]:.0%}", fontsize=6, va="center")
        summary = report["final_summaries"][names[i]]
        ax.plot([i + 0.7, i + 1.3], [summaries.final_median(summary)] * 2, color="C1", lw=1.5)
        ax.scatter([i + 1], [summaries.final_mean(summary)], marker="D", s=18, color="black", zorder=3)
    ax.set_xticks(range(1, len(names) + 1), names, rotation=60, ha="right", fontsize=8)
    ax.set_xlim(0.4, len(names) + 0.6)
    ax.axhline(report["bankroll"], color="k", lw=0.5, ls=":")
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=VIOLIN_COLOUR),
        plt.Line2D([], [], color="C1", lw=1.5),
        plt.Line2D([], [], color="black", marker="D", ls="", markersize=4),
        plt.Line2D([], [], color="k", lw=0.5, ls=":"),
    ]
    ax.legend(
        handles,
        ["share of sessions ending there", "median", "mean", "starting bankroll"],
        fontsize=7,
        ncol=4,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.42 if max(len(n) for n in names) > 12 else -0.3),
        frameon=False,
    )
    ax.set_ylabel("final bankroll")
    ax.set_title("Where the sessions end: progressions pile up at the goal and at ruin", fontsize=10)
    return plotting.save(fig, path)


def _fan_layout(fig, axes: np.ndarray, used: int) -> None:
    """Lay the fan grid out as ``fig.tight_layout()`` would, from two measured axes instead of all.

    tight_layout measures every tick label of every axes (0.9-1.2 s of the figure's 3 s for 15
    systems). In this grid each fan axes (even columns) has the same title, x ticks and y label as
    the first one, and each share axes (odd columns) the same decorations as the first one, so only
    the fans' y tick labels differ: they are measured as text, and every margin and gap follows
    tight_layout's own rule (its padding, its equal-width split for ``wspace``). ``used``: the
    axes drawn on (those after it are off)."""
    renderer = fig.canvas.get_renderer()
    width, height = fig.get_size_inches()
    dpi = fig.dpi

    def overhang(ax) -> tuple[float, float, float, float]:  # inches beyond the axes: l, r, t, b
        box, frame = ax.get_tightbbox(renderer), ax.get_window_extent(renderer)
        return (
            (frame.x0 - box.x0) / dpi,
            (box.x1 - frame.x1) / dpi,
            (box.y1 - frame.y1) / dpi,
            (frame.y0 - box.y0) / dpi,
        )

    def label_width(ax) -> float:  # the widest y tick label drawn (inside the view), inches
        low, high = sorted(ax.get_ylim())
        ticks = [t for t in ax.yaxis.get_major_locator()() if low <= t <= high]
        texts = ax.yaxis.get_major_formatter().format_ticks(ticks)
        font = ax.yaxis.get_major_ticks(1)[0].label1.get_fontproperties() if ticks else None
        sizes = [renderer.get_text_width_height_descent(t, font, ismath=False)[0] for t in texts]
        return max(sizes, default=0.0) / dpi

    fan_axes = [axes.flat[k] for k in range(0, used, 2)]
    label_widths = [label_width(ax) for ax in fan_axes]  # (formatting the ticks sets any offset)
    titles = [ax.title.get_window_extent(renderer) for ax in fan_axes]
    frame_width = fan_axes[0].get_window_extent(renderer).width
    offset = any(ax.yaxis.get_major_formatter().get_offset() for ax in fan_axes)  # (above the axes)
    # (one line of the same font: heights equal but for rounding, a hundredth of a pixel at most)
    taller = any(abs(t.height - titles[0].height) > 0.5 for t in titles)
    if offset or taller or any(t.width > frame_width for t in titles):
        fig.tight_layout()  # a name wider than its axes or of more lines, an offset: measure all
        return
    fan_l, fan_r, fan_t, fan_b = overhang(fan_axes[0])
    widest = {column: 0.0 for column in range(0, axes.shape[1], 2)}
    for k, width_k in zip(range(0, used, 2), label_widths, strict=True):
        column = k % axes.shape[1]
        widest[column] = max(widest[column], fan_l - label_widths[0] + width_k)
    share_l, share_r, share_t, share_b = overhang(axes.flat[1])
    pad = 1.08 * plotting.pyplot().rcParams["font.size"] / 72  # tight_layout's pad, inches
    cols, rows = axes.shape[1], axes.shape[0]
    left = (widest[0] + pad) / width
    right = (share_r + pad) / width
    top = (max(fan_t, share_t) + pad) / height
    supxlabel = fig.get_supxlabel()
    bottom = (max(fan_b, share_b) + pad) / height
    if supxlabel:
        bottom += fig._supxlabel.get_window_extent(renderer).height / dpi / height + pad / height
    gaps = [fan_r + share_l if column % 2 else share_r + widest[column] for column in range(1, cols)]
    gap = (max(gaps) + pad) / width
    vgap = (max(fan_t, share_t) + max(fan_b, share_b) + pad) / height
    fig.subplots_adjust(
        left=left,
        right=1 - right,
        top=1 - top,
        bottom=bottom,
        wspace=gap / ((1 - right - left - gap * (cols - 1)) / cols),
        hspace=vgap / ((1 - top - bottom - vgap * (rows - 1)) / rows),
    )


def plot(report: dict, out: Path, figures: plotting.Aside | None = None) -> list[Path]:
    """Bankroll fans, final-bankroll distributions, and EV per unit wagered against the exact edge,
    drawn aside (``figures``: the figures sent their data already, by :func:`draw_figures`; sent
    here without it)."""
    (figures or draw_figures(report, out)).join()
    return [out / name for name in OUTPUT_NAMES[3:6]]


FIGURE_ENTRIES = ("systems", "checkpoints", "paths", "bankroll", "final_summaries")
"""The report's entries the figures are drawn from (what is sent to the copy that draws them)."""


def figures_aside(systems: int) -> plotting.Aside:
    """The report's three figures for ``systems`` systems, drawn by a forked copy
    (:class:`experiments.plotting.Aside`): the fans, the largest by far, by the copy itself, which
    builds their grid at once (made before a run, beside the run), and the other two by a copy of
    it once the data came. :func:`draw_figures` sends them the report."""
    return plotting.Aside(
        lambda grid, sent: plot_fans(sent[0], sent[1] / OUTPUT_NAMES[3], grid),
        lambda: fan_grid(systems),
        beside=[_final_and_ev],
    )


def _final_and_ev(sent: tuple[dict, Path]) -> None:
    """The final-bankroll and EV figures of the report entries ``sent[0]``, under ``sent[1]``."""
    report, out = sent
    plot_final_bankrolls(report, out / OUTPUT_NAMES[4])
    plot_ev(report, out / OUTPUT_NAMES[5])


def draw_figures(report: dict, out: Path, figures: plotting.Aside | None = None) -> plotting.Aside:
    """Send the figures (``figures``, from :func:`figures_aside`; made now without it) the report:
    their copies draw them under ``out`` while this process goes on, until :meth:`~Aside.join`."""
    figures = figures or figures_aside(len(report["systems"]))
    figures.draw(({k: report[k] for k in FIGURE_ENTRIES}, out))
    return figures


def fan_grid(systems: int) -> tuple[Any, np.ndarray]:
    """The fan figure's empty grid for ``systems`` systems: the figure and its axes, two a system
    (its fan, and beside it where its sessions stand: a fan alone hides the two peaks of a
    progression, sessions at the goal and ruined ones), with the tick marks most of them will draw
    made ahead (ticks are made on demand, the same whenever they are made)."""
    plt = plotting.pyplot()
    pairs = min(2, systems)
    rows_ = math.ceil(systems / pairs)
    fig, axes = plt.subplots(
        rows_,
        2 * pairs,
        figsize=(8.5 * pairs, 2.8 * rows_),
        squeeze=False,
        gridspec_kw={"width_ratios": [3, 2] * pairs},
    )
    for ax in axes.flat[: 2 * systems]:
        ax.xaxis.get_major_ticks(FAN_TICKS)
        ax.yaxis.get_major_ticks(FAN_TICKS)
    return fig, axes


FAN_TICKS = 6
"""Tick marks made ahead on each axis of the fan figure (:func:`fan_grid`): the fewest its axes draw."""


def plot_fans(report: dict, path: Path, grid: tuple[Any, np.ndarray] | None = None) -> Path:
    """Each system's bankroll fan (quantiles and sample sessions), and beside it the share of its
    sessions playing, at the goal, stopped and ruined, hand by hand. ``grid``: the empty grid from
    :func:`fan_grid` (made here without it)."""
    plt = plotting.pyplot()
    names = [s["name"] for s in report["systems"]]
    fig, axes = grid or fan_grid(len(names))
    pairs = axes.shape[1] // 2
    x = np.array(report["checkpoints"])
    colors = {"playing": "0.8", "target": "C2", "stop_loss": "C1", "ruin": "C3", "one_shoe": "C0"}
    labels = {
        "playing": "still playing",
        "target": "at the goal",
        "stop_loss": "stop-loss",
        "ruin": "ruined",
        "one_shoe": "shoe over",
    }
    for i, name in enumerate(names):
        ax, share_ax = axes[i // pairs, 2 * (i % pairs)], axes[i // pairs, 2 * (i % pairs) + 1]
        fan = report["paths"][name]
        q = np.array(fan["quantiles"])
        ax.fill_between(x, q[:, 0], q[:, 4], alpha=0.2, color="C0", label="5-95%")
        ax.fill_between(x, q[:, 1], q[:, 3], alpha=0.35, color="C0", label="25-75%")
        ax.plot(x, q[:, 2], color="C0", label="median")
        for k, sample in enumerate(np.array(fan["samples"])):  # grey: a sample path is no state
            ax.plot(
                np.arange(len(sample)),
                sample,
                lw=0.5,
                alpha=0.6,
                color="0.35",
                label="sample sessions" if k == 0 else None,
            )
        ax.axhline(report["bankroll"], color="k", lw=0.5, ls=":")
        # at least +-5% of the bankroll: a fan that barely moves (a seldom-betting Kelly bettor) should
        # look flat, not dramatic
        low, high = ax.get_ylim()
        span = max(high - low, 0.1 * report["bankroll"])
        middle = (max(high, report["bankroll"]) + min(low, report["bankroll"])) / 2
        ax.set_ylim(min(low, middle - span / 2), max(high, middle + span / 2))
        ax.set_title(name, fontsize=9)
        ax.set_ylabel("bankroll", fontsize=7)
        ax.tick_params(labelsize=7)
        states = fan["states"]
        order = [
            k
            for k in ["ruin", "stop_loss", "playing", "one_shoe", "target"]
            if k in states and (k == "playing" or np.any(np.array(states[k]) > 0))
        ]
        share_ax.stackplot(
            x,
            *[np.array(states[k]) for k in order],
            colors=[colors[k] for k in order],
            labels=[labels[k] for k in order],
        )
        share_ax.set_ylim(0, 1)
        share_ax.set_xlim(x[0], x[-1])
        share_ax.set_title("share of sessions", fontsize=8)
        share_ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[2 * len(names) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=7)
    # the legend of the states that occur in any system (one that cannot happen is not listed)
    seen = [
        k
        for k in ["ruin", "stop_loss", "playing", "one_shoe", "target"]
        if any(
            k in report["paths"][n]["states"]
            and (k == "playing" or np.any(np.array(report["paths"][n]["states"][k]) > 0))
            for n in names
        )
    ]
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in seen]
    axes[0, 1].legend(handles, [labels[k] for k in seen], fontsize=6, loc="center left")
    fig.supxlabel("hand")
    _fan_layout(fig, axes, 2 * len(names))
    return plotting.save(fig, path, tight=False)


def plot_ev(report: dict, path: Path) -> Path:
    """Each system's EV per unit wagered with its 95% CI, beside the exact edge of the bets it placed."""
    plt = plotting.pyplot()
    systems = report["systems"]
    names = [s["name"] for s in systems]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(names) + 2))  # the legend goes below the axis
    y = np.arange(len(names))
    ev = np.array([s["ev_per_unit_wagered"] for s in systems], dtype=float) * 100
    lo = np.array([s["ci95"][0] for s in systems], dtype=float) * 100  # nan: too few bets
    hi = np.array([s["ci95"][1] for s in systems], dtype=float) * 100
    edge = np.array([s["exact_edge"] for s in systems], dtype=float) * 100
    ax.errorbar(
        ev,
        y,
        xerr=np.nan_to_num([ev - lo, hi - ev]),
        fmt="o",
        capsize=3,
        label="simulated, 95% CI (none: too few bets)",
    )
    ax.scatter(edge, y, marker="|", s=200, color="C3", label="exact edge of the bets placed")
    left, right = _ev_axis(ev, lo, hi, edge)
    if left is not None:  # a very wide interval (a Kelly bettor's few bets) is cut at the axis' end
        ax.set_xlim(left, right)
        for k in range(len(names)):
            if not (left <= ev[k] <= right) or (np.isfinite(lo[k]) and (lo[k] < left or hi[k] > right)):
                ax.annotate(
                    f"{ev[k]:+.2f}% [{lo[k]:+.1f}, {hi[k]:+.1f}]"
                    if np.isfinite(lo[k])
                    else f"{ev[k]:+.2f}% (too few bets)",
                    (right if ev[k] > 0 else left, y[k]),
                    xytext=(-4 if ev[k] > 0 else 4, 6),
                    textcoords="offset points",
                    fontsize=7,
                    ha="right" if ev[k] > 0 else "left",
                    color="C0",
                )
    ax.set_yticks(y, names, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="k", lw=0.5)
    ax.set_xlabel("EV per unit wagered (%)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    ax.set_title("Staking changes the shape of the outcome, not the edge")
    return plotting.save(fig, path)


__all__ = [
    "system_summary",
    "fan_summary",
    "ratio_ci",
    "MIN_BETS_FOR_INTERVAL",
    "print_report",
    "json_report",
    "write_outputs",
    "plot",
    "plot_fans",
    "plot_ev",
    "OUTPUT_NAMES",
    "EXACT_OUTPUT_NAMES",
    "SCALARS",
    "BULKY",
]
