"""``optimum.png``: each way of playing as a share of the optimum's P(reach the goal), against the goal,
one panel per hand limit and table maximum: bold play, timid play and the best classic system on each
bet (the optimum is the line at 1, its P(goal) written above each point)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from pb_gym.experiments.optimum import best_system

OKABE_ITO = {
    "black": "#000000",
    "blue": "#0072B2",
    "sky": "#56B4E9",
    "vermilion": "#D55E00",
    "orange": "#E69F00",
    "grey": "#999999",
}
"""Okabe and Ito's colours, told apart with every common colour-vision deficiency (each line also has
its own marker and style, for grey print)."""
TIE_MARK = 0.05
"""Expected tie bets per session from which the optimum's point is ringed (it uses the tie)."""


Series = tuple[str, str, str, object, Callable[[dict], "float | None"]]
"""A line of the figure: label, colour (a key of :data:`OKABE_ITO`), marker, line style, value of a cell."""


def _series(result: dict) -> list[Series]:
    """The lines: (label, colour, marker, style, value of a cell or None)."""

    def best(bet: str):
        return lambda cell: found[1] if (found := best_system(cell, bet)) is not None else None

    lines: list[Series] = [
        ("optimum (its P(goal) written above)", "black", "o", "-", lambda cell: cell["p_goal"]),
        ("bold play on player", "blue", "s", "--", lambda cell: cell["bold"].get("player")),
        ("bold play on banker", "sky", "^", ":", lambda cell: cell["bold"].get("banker")),
    ]
    if any(cell["systems"] for cell in result["cells"]):
        lines += [
            ("best classic system on player", "vermilion", "D", "-.", best("player")),
            (
                "best classic system on banker (where finite)",
                "orange",
                "v",
                (0, (5, 1, 1, 1)),
                best("banker"),
            ),
        ]
    unit = "1 unit" if result["table_min"] == 1 else f"{result['table_min']} units"
    lines.append((f"timid play ({unit} on player)", "grey", "x", "-", lambda cell: cell["timid"]))
    return lines


def _panel(ax, cells: list[dict], goals: list[int], series) -> None:
    """One panel: every line as a share of the optimum's P(goal) (a cell whose optimum is 0 is left
    out), the optimum's value above each point, a ring where the optimum bets the tie."""
    x = np.arange(len(goals))
    by_goal = {cell["goal"]: cell for cell in cells}
    optimum = np.array([by_goal[g]["p_goal"] if g in by_goal else np.nan for g in goals])
    scale = np.where(optimum > 0, optimum, np.nan)
    for k, (label, colour, marker, style, value) in enumerate(series):
        y = [value(by_goal[g]) if g in by_goal else None for g in goals]
        share = np.array([np.nan if v is None else v for v in y], dtype=float) / scale
        ax.plot(
            x,
            share,
            marker=marker,
            ls=style,
            color=OKABE_ITO[colour],
            ms=5,
            lw=1.5,
            label=label,
            zorder=2 + 0.1 * k,
        )
    for i, goal in enumerate(goals):
        cell = by_goal.get(goal)
        if cell is None:
            continue
        ax.annotate(
            f"{cell['p_goal']:.3f}",
            (x[i], 1.0),
            xytext=(0, 7),
            textcoords="offset points",
            ha="center",
            fontsize=7.5,
        )
        if cell["expected_hands"].get("tie", 0.0) >= TIE_MARK:
            ax.plot(x[i], 1.0, "o", ms=11, mfc="none", mec=OKABE_ITO["vermilion"], mew=1.4, zorder=4)
    ax.set_xticks(x, [str(g) for g in goals])
    ax.set_xlim(-0.4, len(goals) - 0.6)
    ax.set_ylim(-0.04, 1.16)
    ax.grid(color="#DDDDDD", lw=0.6)
    ax.set_axisbelow(True)


def plot(result: dict, path: Path) -> Path:
    """Draw the figure into ``path`` (rows: hand limits; columns: table maxima; x: the goal)."""
    from matplotlib.lines import Line2D

    from pb_gym.experiments.common import plotting

    plt = plotting.pyplot()
    cells = result["cells"]
    goals = sorted({c["goal"] for c in cells})
    maxima = list(dict.fromkeys(c["table_max"] for c in cells))
    limits = sorted({c["hands"] for c in cells})
    series = _series(result)
    fig, axes = plt.subplots(
        len(limits),
        len(maxima),
        figsize=(2.9 * len(maxima) + 1.0, 2.5 * len(limits) + 1.6),
        sharex=True,
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for r, hands in enumerate(limits):
        for c, top in enumerate(maxima):
            ax = axes[r, c]
            _panel(ax, [x for x in cells if x["hands"] == hands and x["table_max"] == top], goals, series)
            if r == 0:
                ax.set_title("no table maximum" if top is None else f"table maximum {top}", fontsize=10)
            if c == 0:
                ax.set_ylabel(f"{hands} hands\nP(goal) / optimum's")
            if r == len(limits) - 1:
                ax.set_xlabel("goal (units)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles.append(
        Line2D([], [], ls="none", marker="o", ms=11, mfc="none", mec=OKABE_ITO["vermilion"], mew=1.4)
    )
    labels.append(f"the optimum bets the tie (>= {TIE_MARK:g} tie bets per session)")
    ncol = 3 if len(maxima) >= 3 else 2
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=8.5, frameon=False)
    fig.suptitle(
        f"From {result['bankroll']} units to the goal: each way of playing as a share of the exact optimum\n"
        f"whole-unit stakes, table minimum {result['table_min']}; independent hands, {result['decks']} decks",
        fontsize=10.5,
    )
    return plotting.save(fig, path, tight=False)


__all__ = ["plot"]
