"""The figures of ``pb-gym evaluate``: bankroll_paths.png, final_bankrolls.png and ev_per_unit_wagered.png.

Drawn from the report that :mod:`pb_gym.experiments.evaluate.report` builds (its bankroll fans, its
final-bankroll summaries and each system's EV per unit wagered with its interval), after the run, in the
process that ran it; a figure matplotlib cannot draw does not stop the others (:func:`plot`). The systems
are grouped by kind (:data:`KINDS`), in colours told apart with every common colour-vision deficiency.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from pb_gym.experiments.common import plotting
from pb_gym.experiments.evaluate import summary as summaries

FIGURE_NAMES = ("bankroll_paths.png", "final_bankrolls.png", "ev_per_unit_wagered.png")
"""The figures :func:`plot` draws, in its order."""


KINDS = (
    ("Flat stakes: the same stake every hand", ("flat", "follow_winner", "chop", "random")),
    (
        "Negative progressions: the stake grows after a loss",
        ("martingale", "grand_martingale", "dalembert", "fibonacci", "labouchere"),
    ),
    (
        "Positive progressions: the stake grows after a win",
        ("reverse_martingale", "paroli", "one_three_two_six", "oscars_grind"),
    ),
)
"""The kinds of system the figures group, each with its heading and its systems' config ``type``;
every other type (Kelly, learned policies, road patterns) is under :data:`OTHER_KIND`. A group's
systems share a bankroll scale."""
OTHER_KIND = "Other systems"

OKABE_ITO = {
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "blue": "#0072B2",
    "vermilion": "#D55E00",
    "reddish purple": "#CC79A7",
}
"""The colours of Okabe and Ito's palette the figures use: told apart with every common colour-vision
deficiency."""
STATE_COLOURS = {
    "ruin": OKABE_ITO["vermilion"],
    "stop_loss": OKABE_ITO["reddish purple"],
    "playing": "#DDDDDD",
    "one_shoe": OKABE_ITO["sky blue"],
    "target": OKABE_ITO["bluish green"],
}
SAMPLE_COLOUR = "0.6"
"""The sample sessions' grey (a colour would read as one of the states')."""
STATE_LABELS = {
    "ruin": "ruined",
    "stop_loss": "stopped by the stop-loss",
    "playing": "still playing",
    "one_shoe": "shoe over",
    "target": "at the goal",
}
STATE_ORDER = ("ruin", "stop_loss", "playing", "one_shoe", "target")
"""Bottom to top in the strips of bankroll_paths.png: the losing ends below, the goal above."""
SELDOM = 0.01
"""A system that bets on fewer than this share of the hands dealt is said to seldom bet (a Kelly
bettor stakes only where the cards left give an edge worth the table minimum)."""


def system_groups(systems: list[dict]) -> list[tuple[str, list[int]]]:
    """The systems (their indices, in the config's order) by kind, with each kind's heading; kinds
    with no system are left out."""
    kind_of = {kind: heading for heading, kinds in KINDS for kind in kinds}
    groups: dict[str, list[int]] = {heading: [] for heading in [*(h for h, _ in KINDS), OTHER_KIND]}
    for i, system in enumerate(systems):
        groups[kind_of.get(system["type"], OTHER_KIND)].append(i)
    return [(heading, members) for heading, members in groups.items() if members]


def _share(x: float) -> str:
    """A share of the sessions as a reader wants it: whole percents, one decimal below 1%."""
    if x >= 0.01:
        return f"{x:.0%}"
    return f"{x:.1%}" if x >= 0.0005 else "<0.1%"


def _shares(system: dict, goal: str) -> list[str]:
    """The shares of a system's sessions that ended at the goal (called ``goal``), ruined and stopped,
    those that occurred."""
    ends = (("p_target", goal), ("p_ruin", "ruined"), ("p_stop_loss", "stopped"))
    return [f"{_share(system[key])} {words}" for key, words in ends if system[key] > 0]


TITLE_CHARACTERS = 48
"""The longest outcome line of a bankroll_paths.png panel (7.5 pt, a panel 2.8 in wide); a name is cut
at :data:`NAME_CHARACTERS` (8 pt, bold)."""
NAME_CHARACTERS = 42


def outcome(system: dict, sessions: int) -> str:
    """What one system's sessions came to, in a few words: the shares at the goal, ruined and
    stopped, and the median final bankroll where that fits; or how seldom it bets."""
    if system["hands"] == 0:
        return "no bet placed: the bankroll never moves"
    if system["hands"] < SELDOM * system["hands_dealt"]:
        return f"{system['hands']:,} bets in {sessions:,} sessions: it seldom bets"
    parts = _shares(system, "reach the goal")
    median = f"median {system['median_final_bankroll']:,.0f}"
    line = ", ".join([*parts, median])
    return line if len(line) <= TITLE_CHARACTERS or not parts else ", ".join(parts)


def _group_limits(report: dict, names: list[str]) -> tuple[float, float]:
    """The bankroll axis that a group of systems shares: every quantile and sample path drawn and the
    starting bankroll, padded; at least 10% of the bankroll tall, so that a bankroll that barely
    moves (a seldom-betting Kelly bettor) looks flat, not dramatic."""
    bankroll = report["bankroll"]
    low, high = bankroll, bankroll
    for name in names:
        fan = report["paths"][name]
        q = np.asarray(fan["quantiles"], dtype=float)
        drawn = [q[:, 0], q[:, -1], *[np.asarray(s, dtype=float) for s in fan["samples"]]]
        low = min(low, *(float(np.min(v)) for v in drawn if len(v)))
        high = max(high, *(float(np.max(v)) for v in drawn if len(v)))
    span = max(high - low, 0.1 * abs(bankroll))
    middle = (low + high) / 2 if high - low >= 0.1 * abs(bankroll) else bankroll
    low, high = middle - span / 2, middle + span / 2
    return low - 0.04 * span, high + 0.04 * span


# bankroll_paths.png's grid, in inches: a panel is its two-line title, the fan, and below it a strip
PANEL_WIDTH, FAN_HEIGHT, STRIP_HEIGHT = 2.8, 1.45, 0.3
TITLE_HEIGHT, STRIP_GAP, TICKS_HEIGHT, ROW_GAP, COLUMN_GAP = 0.36, 0.03, 0.2, 0.12, 0.3
LEFT, RIGHT, BOTTOM, HEADING, LEGEND_ROW = 0.65, 0.15, 0.35, 0.3, 0.2
MIN_WIDTH = 7.0
PATH_COLUMNS = 4
"""Panels a row of bankroll_paths.png; a group with more goes on to the next row."""
HAND_TICKS = 5
"""Tick marks on each panel's hand axis (labelled below its strip)."""


def plot_fans(report: dict, path: Path) -> Path:
    """Each system's bankroll over the session (the median, the quartiles, the 5% and 95% quantiles
    and a few sample sessions) and below it the share of its sessions ruined, still playing and at
    the goal, hand by hand; grouped by kind (:data:`KINDS`), each group on one bankroll scale, each
    panel titled with what its sessions came to (:func:`outcome`).

    Quantile lines rather than shaded bands: a progression's sessions split between ruin and the
    goal, and a band between its quantiles would fill the whole panel. The grid is laid out in
    inches (no measuring of every tick label), every title placed where it goes."""
    plt = plotting.pyplot()
    from matplotlib.ticker import MaxNLocator

    systems = report["systems"]
    groups = system_groups(systems)
    columns = min(PATH_COLUMNS, max(len(members) for _, members in groups))
    rows = [math.ceil(len(members) / columns) for _, members in groups]
    cell = TITLE_HEIGHT + FAN_HEIGHT + STRIP_GAP + STRIP_HEIGHT + TICKS_HEIGHT + ROW_GAP
    width = max(MIN_WIDTH, LEFT + columns * PANEL_WIDTH + (columns - 1) * COLUMN_GAP + RIGHT)
    legend = _fan_legend(plt, report, width)
    top_margin = 0.45 + LEGEND_ROW * math.ceil(len(legend[0]) / legend[2])
    height = top_margin + len(groups) * HEADING + sum(rows) * cell + BOTTOM
    fig = plt.figure(figsize=(width, height))
    x = np.asarray(report["checkpoints"], dtype=float)
    hand_ticks = np.linspace(x[0], x[-1], HAND_TICKS)
    hand_labels = [f"{t:.0f}" for t in hand_ticks]
    outline = OKABE_ITO["blue"]
    top = height - top_margin  # inches from the bottom, going down
    for (heading, members), group_rows in zip(groups, rows, strict=True):
        fig.text(LEFT / width, (top - HEADING / 2) / height, heading, fontsize=9, weight="bold", va="center")
        top -= HEADING
        limits = _group_limits(report, [systems[i]["name"] for i in members])
        for k, i in enumerate(members):
            row, column = divmod(k, columns)
            left = LEFT + column * (PANEL_WIDTH + COLUMN_GAP)
            fan_bottom = top - row * cell - TITLE_HEIGHT - FAN_HEIGHT
            ax = fig.add_axes((left / width, fan_bottom / height, PANEL_WIDTH / width, FAN_HEIGHT / height))
            name = systems[i]["name"]
            fan = report["paths"][name]
            q = np.asarray(fan["quantiles"], dtype=float)
            for sample in fan["samples"]:
                ax.plot(np.arange(len(sample)), sample, lw=0.5, color=SAMPLE_COLOUR, alpha=0.8)
            ax.plot(x, q[:, [0, -1]], color=outline, lw=0.8, ls=(0, (3, 2)))
            ax.plot(x, q[:, [1, 3]], color=outline, lw=1.0)
            ax.plot(x, q[:, 2], color="black", lw=1.6)
            ax.axhline(report["bankroll"], color="black", lw=0.6, ls=":")
            ax.set_xlim(x[0], x[-1])
            ax.set_ylim(*limits)
            ax.yaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
            ax.grid(axis="y", color="0.9", lw=0.5)
            ax.tick_params(labelsize=7, labelleft=column == 0)
            if column == 0:
                ax.set_ylabel("bankroll", fontsize=7.5)
            if len(name) > NAME_CHARACTERS:
                name = name[: NAME_CHARACTERS - 1] + "…"
            # (placed, not measured: y given, matplotlib does not look for tick labels above the axes)
            ax.set_title(name, loc="left", fontsize=8, weight="bold", y=1.0, pad=11)
            ax.text(0, 1.02, outcome(systems[i], report["sessions"]), transform=ax.transAxes, fontsize=7.5)
            _seldom_note(ax, systems[i])
            _state_strip(ax, x, fan["states"])
            ax.set_xticks(hand_ticks, hand_labels)
            # the hands' labels below the strip
            ax.tick_params(axis="x", direction="in", length=3, pad=(STRIP_GAP + STRIP_HEIGHT) * 72 + 2)
        top -= group_rows * cell
    fig.text(0.5, BOTTOM / 2 / height, "hand of the session", ha="center", va="center", fontsize=8)
    fig.text(
        LEFT / width,
        1 - 0.1 / height,
        f"Bankroll over the session, {report['sessions']:,} sessions a system; below each, where its "
        "sessions stand",
        fontsize=10,
        va="top",
    )
    fig.legend(
        *legend[:2],
        loc="upper left",
        bbox_to_anchor=(LEFT / width - 0.01, 1 - 0.36 / height),
        ncol=legend[2],
        fontsize=7.5,
        frameon=False,
        handlelength=2.2,
        columnspacing=1.4,
        borderaxespad=0,
    )
    return plotting.save(fig, path, tight=False)


def _state_strip(ax, x: np.ndarray, states: dict) -> None:
    """Below ``ax`` (a fan, its x axis the hands), the share of a system's sessions in each state at
    the checkpoints ``x``, stacked, the states that never occur left out: a strip of its own, not
    an axes (one axes a panel: half the tick marks to make and draw)."""
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Rectangle

    order = [s for s in STATE_ORDER if s in states and (s == "playing" or np.any(np.asarray(states[s]) > 0))]
    shares = np.cumsum([np.zeros(len(x))] + [np.asarray(states[s], dtype=float) for s in order], axis=0)
    shares /= np.maximum(shares[-1], 1e-300)  # (the states' shares add up to 1 but for rounding)
    bottom, tall = -(STRIP_GAP + STRIP_HEIGHT) / FAN_HEIGHT, STRIP_HEIGHT / FAN_HEIGHT
    polygons = [
        np.column_stack([np.concatenate([x, x[::-1]]), bottom + tall * np.concatenate([low, high[::-1]])])
        for low, high in zip(shares[:-1], shares[1:], strict=True)
    ]
    strip = ax.get_xaxis_transform()  # (x: the hands; y: a fraction of the fan's height)
    ax.add_collection(
        PolyCollection(
            polygons,
            facecolors=[STATE_COLOURS[s] for s in order],
            linewidths=0,
            transform=strip,
            clip_on=False,
        ),
        autolim=False,
    )
    ax.add_patch(Rectangle((0, bottom), 1, tall, transform=ax.transAxes, fill=False, lw=0.8, clip_on=False))


def _seldom_note(ax, system: dict) -> None:
    """For a system that seldom or never bets (:data:`SELDOM`), a note inside its panel of how little
    it moved (its fan is a flat line at the starting bankroll)."""
    if system["hands"] >= SELDOM * system["hands_dealt"]:
        return
    text = (
        "no bet placed"
        if system["hands"] == 0
        else f"a bet on {system['hands'] / system['hands_dealt']:.3%} of the hands dealt\n"
        f"mean final bankroll {system['mean_final_bankroll']:,.1f}"
    )
    ax.text(0.5, 0.25, text, transform=ax.transAxes, ha="center", va="center", fontsize=7, color="0.25")


def _fan_legend(plt, report: dict, width: float) -> tuple[list, list[str], int]:
    """bankroll_paths.png's legend: its handles, labels and columns (as many as fit ``width``)."""
    seen = {
        s
        for fan in report["paths"].values()
        for s, shares in fan["states"].items()
        if s == "playing" or np.any(np.asarray(shares) > 0)
    }
    line = plt.Line2D
    handles = [
        line([], [], color="black", lw=1.6),
        line([], [], color=OKABE_ITO["blue"], lw=1.0),
        line([], [], color=OKABE_ITO["blue"], lw=0.8, ls=(0, (3, 2))),
        line([], [], color=SAMPLE_COLOUR, lw=0.5),
        line([], [], color="black", lw=0.6, ls=":"),
    ] + [plt.Rectangle((0, 0), 1, 1, color=STATE_COLOURS[s]) for s in STATE_ORDER if s in seen]
    labels = ["median", "quartiles (25%, 75%)", "5% and 95%", "sample sessions", "starting bankroll"] + [
        f"sessions {STATE_LABELS[s]}" for s in STATE_ORDER if s in seen
    ]
    return handles, labels, max(1, min(len(labels), int((width - LEFT) / 1.45)))


FINAL_BINS = 80
"""Bins of the final-bankroll figure's value axis (shared by every system)."""
FINAL_SHOWN = 0.995
"""final_bankrolls.png's value axis ends at the largest of the systems' quantile at this level (the
sessions beyond are in its last bin, the label says up to where), where the largest final bankroll is
more than :data:`FINAL_SQUEEZE` times that."""
FINAL_SQUEEZE = 1.5
ROW_INCHES, HEADING_ROWS, BAR_HEIGHT = 0.3, 0.8, 0.62
"""final_bankrolls.png: a system's row, in inches; a heading's, in rows; the tallest bar, in rows."""


def ends(system: dict) -> str:
    """How a system's sessions ended, in a few words: the shares at the goal, ruined and stopped (the
    rest played to the hand limit, or to the end of their shoe)."""
    return ", ".join(_shares(system, "at the goal")) or "none at the goal or ruined"


def plot_final_bankrolls(report: dict, path: Path) -> Path:
    """Where the sessions end, per system, a row each, grouped by kind (:data:`KINDS`): the share of
    sessions at each final bankroll (drawn from the bounded summaries: the distinct final bankrolls,
    or their buckets; the tallest bar of each row as tall as every row's), the median and the mean,
    and at the end of the row the shares that ended at the goal, ruined or stopped (:func:`ends`). A
    box plot would hide what matters here: a progression's sessions pile up at two peaks, the goal
    and ruin (or the stop-loss), and few end in between."""
    plt = plotting.pyplot()
    from matplotlib.collections import PolyCollection

    systems = report["systems"]
    finals = [report["final_summaries"][s["name"]] for s in systems]
    tables = [summaries.final_table(summary)[:2] for summary in finals]
    low = min(float(values.min()) for values, _ in tables)
    largest = max(float(values.max()) for values, _ in tables)
    # a few sessions far above the rest (a lucky run of doubled tie bets) would squeeze every row
    # into a corner: the axis then ends where FINAL_SHOWN of each system's sessions end, the last bin
    # holding those beyond
    high = max([report["bankroll"], *(summaries.final_quantiles(f, (FINAL_SHOWN,))[0] for f in finals)])
    high = high if largest > FINAL_SQUEEZE * high else largest
    if not high > low:  # (every session ends where it began)
        high = low + max(1.0, 1e-6 * abs(low))
    edges = np.linspace(low, high, FINAL_BINS + 1)
    groups = system_groups(systems)
    rows = len(systems) + HEADING_ROWS * len(groups)
    fig, ax = plt.subplots(figsize=(8.6, ROW_INCHES * rows + 1.3))
    order = [i for _, members in groups for i in members]
    bars, spans = [], []
    bases = np.zeros(len(systems))  # the bottom of each system's row
    y = rows  # the top of the next row; rows go down
    ends_heading = ax.text(1.01, y - HEADING_ROWS / 2, "how they ended", transform=ax.get_yaxis_transform())
    ends_heading.set(fontsize=7.5, weight="bold", va="center")
    for heading, members in groups:
        ax.axhline(y, color="0.75", lw=0.6)
        y -= HEADING_ROWS
        text = ax.text(0.005, y + HEADING_ROWS / 2, heading, transform=ax.get_yaxis_transform())
        text.set(fontsize=7.5, weight="bold", va="center")
        spans.append((y - len(members), y))
        for i in members:
            y -= 1
            bases[i] = y + 0.12
            values, counts = tables[i]
            share = np.histogram(np.minimum(values, high), bins=edges, weights=counts)[0] / counts.sum()
            drawn = np.flatnonzero(share > 0)
            left, right = edges[drawn], edges[drawn + 1]
            bottom, top = np.full(len(drawn), bases[i]), bases[i] + BAR_HEIGHT * share[drawn] / share.max()
            bars += list(
                np.stack(
                    [np.stack([left, right, right, left], 1), np.stack([bottom, bottom, top, top], 1)], 2
                )
            )
            ax.text(
                1.01,
                bases[i] + BAR_HEIGHT / 2,
                ends(systems[i]),
                transform=ax.get_yaxis_transform(),
                fontsize=7,
                va="center",
            )
    ax.add_collection(PolyCollection(bars, facecolors=OKABE_ITO["blue"], linewidths=0, alpha=0.75))
    medians = np.minimum([summaries.final_median(summary) for summary in finals], high)
    means = np.minimum([summaries.final_mean(summary) for summary in finals], high)
    ax.vlines(medians, bases, bases + BAR_HEIGHT, color=OKABE_ITO["vermilion"], lw=1.4)
    ax.plot(means, bases + BAR_HEIGHT / 2, marker="D", ms=3.5, color="black", ls="")
    # the starting bankroll through each group's rows (not through its heading)
    ax.vlines([report["bankroll"]] * len(spans), *np.array(spans).T, color="black", lw=0.6, ls=":")
    ax.set_yticks(bases[order] + BAR_HEIGHT / 2, [systems[i]["name"] for i in order])
    ax.tick_params(axis="y", length=0, labelsize=7.5)
    ax.set_ylim(0, rows)
    pad = 0.01 * (high - low)
    ax.set_xlim(low - pad, high + pad)
    ax.tick_params(axis="x", labelsize=7.5)
    beyond = f" (the last bin: every session ending above {high:,.0f}, up to {largest:,.0f})"
    ax.set_xlabel("final bankroll" + (beyond if largest > high else ""), fontsize=8)
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=OKABE_ITO["blue"], alpha=0.75),
        plt.Line2D([], [], color=OKABE_ITO["vermilion"], lw=1.4),
        plt.Line2D([], [], color="black", marker="D", ls="", ms=3.5),
        plt.Line2D([], [], color="black", lw=0.6, ls=":"),
    ]
    ax.legend(
        handles,
        ["share of the system's sessions ending there", "median", "mean", "starting bankroll"],
        fontsize=7,
        ncol=4,
        loc="lower left",
        bbox_to_anchor=(0, 1),
        frameon=False,
        handlelength=1.6,
        borderaxespad=0.2,
    )
    ax.set_title(
        f"Where the {report['sessions']:,} sessions of each system end: progressions pile up at the goal "
        "and at ruin",
        fontsize=9,
        loc="left",
        pad=16,
    )
    return plotting.save(fig, path)


def plot(report: dict, out: Path) -> list[Path]:
    """Bankroll paths, final-bankroll distributions, and EV per unit wagered against the exact edge,
    under ``out``. A figure that matplotlib cannot draw from the data does not stop the others: the
    first such error is raised once they are drawn."""
    failed: BaseException | None = None
    for name, draw in zip(FIGURE_NAMES, (plot_fans, plot_final_bankrolls, plot_ev), strict=True):
        try:
            draw(report, out / name)
        except plotting.DRAWING_ERRORS as error:
            failed = failed or error
            plotting.pyplot().close("all")  # (the figure that failed)
    if failed is not None:
        raise failed
    return [out / name for name in FIGURE_NAMES]


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


__all__ = [
    "plot",
    "plot_fans",
    "plot_final_bankrolls",
    "plot_ev",
    "system_groups",
    "outcome",
    "ends",
    "KINDS",
    "OTHER_KIND",
    "FIGURE_NAMES",
]
