"""The roads drawn as a baccarat table's scoreboard (PNG, matplotlib).

The layout of a casino display: the bead plate (filled discs with the letter, pair dots) on the left,
the Big Road (hollow rings, a green slash and count for ties) across the top right, and below it the
Big Eye Boy (hollow rings), the Small Road (filled dots) and the Cockroach Pig (slashes), red and blue,
with the ask road in the corner. Cells and their order come from :mod:`pb_gym.roads` (the same code as
the text scoreboard).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pb_gym import roads as road_rules
from pb_gym.experiments.common import plotting

COLOURS = {
    "B": "#d62728",
    "P": "#1f5fbf",
    "T": "#2ca02c",
    road_rules.RED: "#d62728",
    road_rules.BLUE: "#1f5fbf",
}
"""Banker red, player blue, tie green; a derived road's red and blue."""


def _board(ax: Any, x0: float, y0: float, width: int, rows: int, size: float) -> None:
    """A grid of ``width`` x ``rows`` cells of ``size``, top-left at (x0, y0)."""
    for i in range(width + 1):
        ax.plot([x0 + i * size] * 2, [y0, y0 - rows * size], color="#cccccc", lw=0.5)
    for j in range(rows + 1):
        ax.plot([x0, x0 + width * size], [y0 - j * size] * 2, color="#cccccc", lw=0.5)


def draw_scoreboard(
    roads: road_rules.Roads,
    path: str | Path,
    title: str | None = None,
    bead_columns: int = 12,
    road_columns: int = 30,
) -> Path:
    """Draw ``roads`` as a casino scoreboard and write it to ``path`` (PNG). The last ``bead_columns``
    columns of the bead plate and ``road_columns`` display columns of the Big Road are shown (the
    derived roads at half size, twice as many columns)."""
    plt = plotting.pyplot()

    cell = 1.0
    small = 0.5
    fig, ax = plt.subplots(figsize=((bead_columns + road_columns + 1) / 3.0, 4.6))
    ax.set_aspect("equal")
    ax.axis("off")
    _draw_bead_plate(ax, roads.bead_plate, bead_columns, cell)
    x_road = bead_columns + 0.6
    _draw_road(ax, road_rules.layout(roads.big_road), x_road, 0, cell, road_columns, "ring")
    tie_note = f" ({roads.leading_ties} tie(s) before the first decision)" if roads.leading_ties else ""
    ax.text(x_road, 0.35, "Big Road" + tie_note, fontsize=9)
    y_derived = -road_rules.ROWS * cell - 0.8
    per_road = road_columns / 3.0
    for j, (name, marks) in enumerate(roads.derived.items()):
        x0 = x_road + j * per_road
        cells = road_rules.layout(road_rules.mark_columns(marks))
        _draw_road(ax, cells, x0, y_derived, small, int(2 * per_road) - 1, _STYLES[name])
        reds = sum(mark == road_rules.RED for mark in marks)
        ax.text(
            x0, y_derived + 0.25, f"{name.replace('_', ' ').title()} ({reds}/{len(marks)} red)", fontsize=8
        )
    _draw_ask_road(ax, roads, y_derived - 0.4)
    ax.set_xlim(-0.3, x_road + road_columns + 0.3)
    ax.set_ylim(y_derived - road_rules.ROWS * small - 0.4, 0.9)
    if title:
        ax.set_title(title, fontsize=10)
    return plotting.save(fig, path)


_STYLES = {"big_eye_boy": "ring", "small_road": "dot", "cockroach_pig": "slash"}
"""How each derived road marks a cell: hollow rings, filled dots, slashes."""


def _draw_bead_plate(ax: Any, beads: Any, bead_columns: int, cell: float) -> None:
    """The bead plate's last ``bead_columns`` columns: discs with the letter and the pair dots."""
    from matplotlib.patches import Circle

    n_columns = -(-len(beads) // road_rules.ROWS)
    first = max(0, n_columns - bead_columns)
    _board(ax, 0, 0, bead_columns, road_rules.ROWS, cell)
    for index, bead in enumerate(beads):
        x, y = index // road_rules.ROWS - first, index % road_rules.ROWS
        if x < 0:
            continue
        cx, cy = x + 0.5, -y - 0.5
        ax.add_patch(Circle((cx, cy), 0.42, color=COLOURS[bead.outcome]))
        ax.text(cx, cy, bead.outcome, ha="center", va="center", color="white", fontsize=8, weight="bold")
        if bead.banker_pair:
            ax.add_patch(Circle((cx - 0.3, cy + 0.3), 0.1, color=COLOURS["B"], ec="white", lw=0.5))
        if bead.player_pair:
            ax.add_patch(Circle((cx + 0.3, cy - 0.3), 0.1, color=COLOURS["P"], ec="white", lw=0.5))
    ax.text(0, 0.35, "Bead plate", fontsize=9)


def _draw_road(ax: Any, cells: dict, x0: float, y0: float, size: float, width: int, style: str) -> None:
    """A road's last ``width`` columns of cells at (x0, y0), marked in ``style``; a Big Road entry
    carries its ties (a green slash, and their count from two)."""
    _board(ax, x0, y0, width, road_rules.ROWS, size)
    shift = max(0, max([x + 1 for x, _ in cells], default=0) - width)
    for (x, y), item in cells.items():
        if x - shift < 0:
            continue
        cx, cy = x0 + (x - shift + 0.5) * size, y0 - (y + 0.5) * size
        key = item.winner if isinstance(item, road_rules.BigRoadEntry) else item
        _draw_mark(ax, cx, cy, size, COLOURS[key], style, ring=(0.36, 1.6 * size), dot=0.32, slash=0.3)
        if isinstance(item, road_rules.BigRoadEntry) and item.ties:
            _draw_ties(ax, cx, cy, size, item.ties)


def _draw_mark(
    ax: Any,
    cx: float,
    cy: float,
    size: float,
    colour: str,
    style: str,
    ring: tuple[float, float],
    dot: float,
    slash: float,
) -> None:
    """One mark centred at (cx, cy): a ring (radius and line width), a dot or a slash, scaled by size."""
    from matplotlib.patches import Circle

    if style == "ring":
        ax.add_patch(Circle((cx, cy), ring[0] * size, fill=False, ec=colour, lw=ring[1]))
    elif style == "dot":
        ax.add_patch(Circle((cx, cy), dot * size, color=colour))
    else:
        ax.plot(
            [cx - slash * size, cx + slash * size],
            [cy - slash * size, cy + slash * size],
            color=colour,
            lw=2.0,
        )


def _draw_ties(ax: Any, cx: float, cy: float, size: float, ties: int) -> None:
    ax.plot(
        [cx - 0.35 * size, cx + 0.35 * size],
        [cy + 0.35 * size, cy - 0.35 * size],
        color=COLOURS["T"],
        lw=1.4,
    )
    if ties > 1:
        ax.text(cx, cy, str(ties), ha="center", va="center", fontsize=6, color=COLOURS["T"], weight="bold")


def _draw_ask_road(ax: Any, roads: road_rules.Roads, y_ask: float) -> None:
    """The ask road in the bottom-left corner: the mark each derived road would add after a banker
    and after a player win ("-" where a road has none yet)."""
    from matplotlib.patches import Circle

    x_ask = 0.0
    ax.text(x_ask, y_ask + 0.5, "Ask road", fontsize=9)
    for i, (winner, label) in enumerate((("B", "Banker next"), ("P", "Player next"))):
        y = y_ask - 0.6 - 1.1 * i
        ax.add_patch(Circle((x_ask + 0.4, y), 0.35, color=COLOURS[winner]))
        ax.text(x_ask + 0.4, y, winner, ha="center", va="center", color="white", fontsize=7)
        ax.text(x_ask + 0.95, y, label, va="center", fontsize=7)
        for m, name in enumerate(road_rules.DERIVED_ROADS):
            mark = roads.ask[winner][name]
            cx = x_ask + 5.2 + m * 0.9
            if mark is None:
                ax.text(cx, y, "-", ha="center", va="center", fontsize=8)
                continue
            _draw_mark(ax, cx, y, 1.0, COLOURS[mark], _STYLES[name], ring=(0.25, 1.4), dot=0.22, slash=0.2)


__all__ = ["COLOURS", "draw_scoreboard"]
