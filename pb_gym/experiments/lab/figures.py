"""The lab's figures: Plotly figures drawn from the lessons' results, for a projector.

Every figure takes numbers the lessons computed (:mod:`pb_gym.experiments.lab`) and computes none. The
palette is Okabe and Ito's, safe for the common colour-vision deficiencies; banker, player and tie
keep one colour each on every page, the exact answer is always a black dashed line, and where colour
tells two things apart a marker or a line style tells them apart too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from pb_gym import roads as road_rules

BANKER = "#D55E00"
"""Vermillion: banker (and a derived road's red)."""
PLAYER = "#0072B2"
"""Blue: player (and a derived road's blue)."""
TIE = "#009E73"
"""Bluish green: tie."""
SIDE = "#CC79A7"
"""Reddish purple: the side bet."""
SIMULATED = "#E69F00"
"""Orange: a simulated figure."""
EXACT = "#000000"
"""Black (dashed): an exact figure."""
BET_COLOURS = {"banker": BANKER, "player": PLAYER, "tie": TIE, "fair_coin": "#555555"}
POLICY_COLOURS = {"optimal": TIE, "bold": BANKER, "timid": PLAYER}
POLICY_DASH = {"optimal": "solid", "bold": "dash", "timid": "dot"}
LETTERED_CELLS = 600
"""The stake map writes each cell's bet (B, P, T) up to this many cells (beyond, the letters would not
be legible)."""
FONT = 18
"""The figures' base font size (points): legible from the back of a classroom."""


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 460) -> go.Figure:
    fig.update_layout(
        title={"text": title, "font": {"size": FONT + 4}, "y": 0.98, "yanchor": "top"},
        xaxis_title=x,
        yaxis_title=y,
        font={"size": FONT, "family": "Atkinson Hyperlegible, Verdana, sans-serif"},
        template="simple_white",
        height=height,
        margin={"l": 80, "r": 30, "t": 115, "b": 70},
        legend={
            "orientation": "h",
            "yanchor": "bottom",
            "y": 1.01,
            "xanchor": "left",
            "x": 0.0,
            "font": {"size": FONT - 2},
        },
        hovermode="closest",
    )
    fig.update_xaxes(showgrid=True, gridcolor="#e5e5e5")
    fig.update_yaxes(showgrid=True, gridcolor="#e5e5e5")
    return fig


def exact_line(fig: go.Figure, y: float, label: str) -> None:
    """A black dashed horizontal line at ``y``, labelled at its right end."""
    fig.add_hline(
        y=y,
        line={"color": EXACT, "dash": "dash", "width": 2},
        annotation={"text": label, "font": {"size": FONT - 2}},
        annotation_position="top right",
    )


# ------------------------------------------------------------------------------------ lesson 1
def frequencies(running: dict[str, np.ndarray], exact: dict[str, float]) -> go.Figure:
    """The share of hands that paid each bet, after each hand, converging to its exact probability."""
    fig = go.Figure()
    for bet, share in running.items():
        colour = BET_COLOURS.get(bet, SIDE)
        hands = np.arange(1, share.size + 1)
        fig.add_trace(
            go.Scatter(x=hands, y=share, name=bet, mode="lines", line={"color": colour, "width": 3})
        )
        fig.add_trace(
            go.Scatter(
                x=[1, max(share.size, 2)],
                y=[exact[bet]] * 2,
                mode="lines",
                line={"color": colour, "dash": "dash", "width": 2},
                name=f"{bet} exact",
                showlegend=False,
                hovertemplate=f"exact P({bet}) {exact[bet]:.4f}<extra></extra>",
            )
        )
    fig.update_xaxes(type="log")
    return _layout(
        fig, "Running share of hands each bet won (dashed: exact)", "hands dealt (log scale)", "share"
    )


# ------------------------------------------------------------------------------------ lesson 2
def ruin_curve(exact: dict, start: int, target: int, bet: str) -> go.Figure:
    """P(reach the target) against the start, exact, with the chosen start marked and the fair
    coin's straight line ``start / target`` for contrast."""
    curve = exact["curve"]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, target],
            y=[0, 1],
            mode="lines",
            name="fair game: start / target",
            line={"color": "#777777", "dash": "dot", "width": 2},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=curve["start"],
            y=curve["p_target"],
            mode="lines+markers",
            name=f"{bet} (exact)",
            line={"color": BET_COLOURS[bet], "width": 3},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[start],
            y=[exact["p_target"]],
            mode="markers+text",
            marker={"size": 18, "color": EXACT, "symbol": "diamond"},
            text=[f"{exact['p_target']:.4f}"],
            textposition="top left",
            textfont={"size": FONT + 2},
            name="your start",
        )
    )
    fig.update_yaxes(range=[0, 1.05])
    return _layout(
        fig, f"Exact P(reach {target} before ruin) against the start", "start (units)", "P(target)"
    )


def ruin_paths(paths: Sequence[np.ndarray], start: int, target: int, stake: int) -> go.Figure:
    """The bankroll of the first sessions hand by hand: reached the target (solid blue) or ruined
    (dotted vermillion); trace ``k`` is session ``k + 1``, hidden until :func:`reveal` shows it."""
    fig = go.Figure()
    for k, path in enumerate(paths):
        won = path[-1] >= target
        fig.add_trace(
            go.Scatter(
                y=path,
                mode="lines",
                line={"color": PLAYER if won else BANKER, "width": 2, "dash": "solid" if won else "dot"},
                opacity=0.75,
                showlegend=False,
                visible=False,
                hovertemplate=f"session {k + 1}: {'target' if won else 'ruin'}<extra></extra>",
            )
        )
    for y, text in ((target, "target"), (stake, "ruin below this")):
        fig.add_hline(
            y=y,
            line={"color": EXACT, "width": 1.5},
            annotation={"text": text},
            annotation_position="top left",
        )
    fig.add_trace(
        go.Scatter(
            x=[None], y=[None], mode="lines", line={"color": PLAYER, "width": 3}, name="reached the target"
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[None], y=[None], mode="lines", line={"color": BANKER, "width": 3, "dash": "dot"}, name="ruined"
        )
    )
    fig.update_yaxes(range=[0, target * 1.08])
    return _layout(fig, f"The first {len(paths)} sessions, hand by hand", "hand", "bankroll (units)")


def tally(running: np.ndarray, exact: float, what: str) -> go.Figure:
    """The share of the first ``k`` sessions that reached the goal (trace 2, filled in by
    :func:`reveal`), inside the 95% band of a binomial share around the exact value."""
    k = np.arange(1, max(len(running), 2) + 1)
    half = 1.96 * np.sqrt(exact * (1 - exact) / k)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=k,
            y=np.clip(exact + half, 0, 1),
            mode="lines",
            line={"width": 0},
            showlegend=False,
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=k,
            y=np.clip(exact - half, 0, 1),
            mode="lines",
            line={"width": 0},
            fill="tonexty",
            fillcolor="rgba(0,0,0,0.10)",
            name="95% of simulations fall here",
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(x=[], y=[], mode="lines", line={"color": SIMULATED, "width": 3}, name="simulated")
    )
    exact_line(fig, exact, f"exact {exact:.4f}")
    fig.update_xaxes(range=[0, len(running) + 1])
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, f"Tally: share of sessions that {what}", "sessions dealt", "share")


def reveal(patch, running: np.ndarray, shown: int, trace: int = 2) -> None:
    """Fill in, on a Dash ``Patch`` of a :func:`tally` (or :func:`policy_tally`) figure, the running
    share of the first ``shown`` sessions as trace ``trace``."""
    patch["data"][trace]["x"] = list(range(1, shown + 1))
    patch["data"][trace]["y"] = np.round(running[:shown], 5).tolist()


def reveal_paths(patch, count: int, shown: int) -> None:
    """Show, on a Dash ``Patch`` of a :func:`ruin_paths` figure of ``count`` paths, the first
    ``shown``."""
    for k in range(count):
        patch["data"][k]["visible"] = k < shown


# ------------------------------------------------------------------------------------ lesson 3
def result_distribution(exact: dict) -> go.Figure:
    """The exact probability of every session result (bars, log scale); trace 1, filled in by
    :func:`reveal_results`, is the share of the simulated sessions that ended there (diamonds)."""
    values = np.array(exact["result"]["values"])
    probabilities = np.array(exact["result"]["probabilities"])
    keep = probabilities > 1e-9
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=values[keep],
            y=probabilities[keep],
            name="exact",
            marker={"color": "#444444"},
            width=0.8,
            hovertemplate="result %{x:+.0f}: P %{y:.2e}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[],
            y=[],
            mode="markers",
            marker={
                "symbol": "diamond",
                "size": 13,
                "color": SIMULATED,
                "line": {"color": EXACT, "width": 1},
            },
            name="simulated",
        )
    )
    fig.update_yaxes(type="log", exponentformat="power")
    return _layout(
        fig,
        "Every possible session result: the small win, and the rare large loss",
        "session result (units)",
        "probability (log scale)",
    )


def reveal_results(patch, result: np.ndarray, shown: int) -> None:
    """Fill in, on a Dash ``Patch`` of a :func:`result_distribution` figure, the share of the first
    ``shown`` simulated sessions ending at each result."""
    found, counts = np.unique(np.round(result[:shown]), return_counts=True)
    patch["data"][1]["x"] = found.tolist()
    patch["data"][1]["y"] = (counts / shown).tolist()


# ------------------------------------------------------------------------------------ lesson 4
def policy_curves(exact: dict, bankroll: int) -> go.Figure:
    """P(reach the goal) from every starting bankroll, for the optimal, bold and timid policies."""
    curve = exact["curve"]
    fig = go.Figure()
    for name in ("optimal", "bold", "timid"):
        fig.add_trace(
            go.Scatter(
                x=curve["bankrolls"],
                y=curve[name],
                mode="lines+markers",
                name=name,
                line={"color": POLICY_COLOURS[name], "dash": POLICY_DASH[name], "width": 3},
            )
        )
    fig.add_vline(x=bankroll, line={"color": EXACT, "width": 1.5}, annotation={"text": "your bankroll"})
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, "Exact P(reach the goal) from each bankroll", "starting bankroll (units)", "P(goal)")


def stake_map(exact: dict) -> go.Figure:
    """The optimal stake at every whole bankroll and number of hands left (colour, viridis), with its
    bet on hover and in the cell (B, P, T)."""
    stake = np.array(exact["stake"], dtype=float)
    bets = np.array(exact["bet"], dtype=object)
    letters = [["" if b is None else str(b)[0].upper() for b in row] for row in bets]
    stake[np.array([[b is None for b in row] for row in bets], dtype=bool)] = np.nan
    hands = np.arange(1, stake.shape[0] + 1)
    fig = go.Figure(
        go.Heatmap(
            z=stake,
            x=np.arange(stake.shape[1]),
            y=hands,
            colorscale="Viridis",
            colorbar={"title": "stake"},
            customdata=bets,
            text=letters if stake.size <= LETTERED_CELLS else None,
            texttemplate="%{text}" if stake.size <= LETTERED_CELLS else None,
            textfont={"size": FONT - 6},
            hovertemplate="bankroll %{x}, %{y} hands left: %{z} on %{customdata}<extra></extra>",
        )
    )
    lettered = " (B banker, P player, T tie)" if stake.size <= LETTERED_CELLS else " (hover: the bet)"
    _layout(
        fig,
        "The optimal stake; blank: sit out" + lettered,
        "bankroll (units)",
        "hands left",
    )
    fig.update_xaxes(showgrid=False)
    fig.update_yaxes(showgrid=False)
    return fig


def policy_tally(exact: dict, sessions: int) -> go.Figure:
    """Each policy's running share of sessions that reached the goal (traces 0 to 2, optimal, bold,
    timid, filled in by :func:`reveal`), beside its exact value (dashed)."""
    fig = go.Figure()
    for name in ("optimal", "bold", "timid"):
        fig.add_trace(
            go.Scatter(
                x=[],
                y=[],
                mode="lines",
                name=f"{name} (simulated)",
                line={"color": POLICY_COLOURS[name], "dash": POLICY_DASH[name], "width": 3},
            )
        )
        fig.add_hline(y=exact["p_goal"][name], line={"color": EXACT, "dash": "dash", "width": 1.5})
    fig.update_yaxes(range=[0, 1])
    fig.update_xaxes(range=[0, sessions + 1])
    return _layout(
        fig, "Sessions dealt from real shoes (dashed: exact)", "sessions dealt", "share that reached the goal"
    )


# ------------------------------------------------------------------------------------ lessons 5 and 6
def _cells(fig: go.Figure, cells: dict, x0: float, y0: float, size: float, style: str, columns: int) -> None:
    """Draw road cells ``{(column, row): mark}`` from display column ``x0`` (the last ``columns``)."""
    first = max(0, max((c for c, _ in cells), default=0) - columns + 1)
    groups: dict[str, list[tuple[float, float, str]]] = {}
    for (c, r), mark in cells.items():
        if c < first:
            continue
        winner = mark.winner if isinstance(mark, road_rules.BigRoadEntry) else mark
        ties = mark.ties if isinstance(mark, road_rules.BigRoadEntry) else 0
        groups.setdefault(winner, []).append(
            (x0 + (c - first + 0.5) * size, y0 - (r + 0.5) * size, str(ties or ""))
        )
    colour = {"B": BANKER, "P": PLAYER, road_rules.RED: BANKER, road_rules.BLUE: PLAYER}
    symbol = {"ring": "circle-open", "dot": "circle", "slash": "line-ne"}[style]
    for mark, points in groups.items():
        x, y, text = zip(*points, strict=True)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="markers+text" if style == "ring" else "markers",
                marker={
                    "symbol": symbol,
                    "size": 22 * size,
                    "color": colour[mark],
                    "line": {"width": 4 * size, "color": colour[mark]},
                },
                text=text,
                textfont={"color": TIE, "size": FONT - 2},
                showlegend=False,
                hoverinfo="skip",
            )
        )


def _board(fig: go.Figure, x0: float, y0: float, width: int, size: float, label: str) -> None:
    """A grid of ``width`` x 6 cells of ``size``, top-left at (x0, y0), as one line trace."""
    rows = road_rules.ROWS
    x: list[float | None] = []
    y: list[float | None] = []
    for i in range(width + 1):
        x += [x0 + i * size, x0 + i * size, None]
        y += [y0, y0 - rows * size, None]
    for j in range(rows + 1):
        x += [x0, x0 + width * size, None]
        y += [y0 - j * size, y0 - j * size, None]
    fig.add_trace(
        go.Scatter(
            x=x, y=y, mode="lines", line={"color": "#cccccc", "width": 1}, showlegend=False, hoverinfo="skip"
        )
    )
    fig.add_annotation(
        x=x0,
        y=y0 + 0.05,
        text=label,
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
        font={"size": FONT - 2},
    )


def scoreboard(board: road_rules.Roads, bead_columns: int = 10, road_columns: int = 24) -> go.Figure:
    """The casino scoreboard of :func:`pb_gym.roads.read_roads`' roads: the bead plate (discs with
    their letter), the Big Road (rings; a green number counts the ties on a cell) and the three derived
    roads (Big Eye Boy rings, Small Road dots, Cockroach Pig slashes; vermillion = red, blue = blue)."""
    fig = go.Figure()
    beads = road_rules.bead_columns(board.bead_plate)[-bead_columns:]
    _board(fig, 0, 0, bead_columns, 1.0, "Bead plate")
    letters = {"B": BANKER, "P": PLAYER, "T": TIE}
    x, y, text, colour = [], [], [], []
    for c, column in enumerate(beads):
        for r, bead in enumerate(column):
            x.append(c + 0.5)
            y.append(-r - 0.5)
            text.append(bead.outcome)
            colour.append(letters[bead.outcome])
    if x:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="markers+text",
                marker={"size": 30, "color": colour},
                text=text,
                textfont={"color": "white", "size": FONT},
                showlegend=False,
                hoverinfo="skip",
            )
        )
    x0 = bead_columns + 0.6
    _board(fig, x0, 0, road_columns, 1.0, "Big Road")
    _cells(fig, road_rules.layout(board.big_road), x0, 0, 1.0, "ring", road_columns)
    half = road_columns / 3
    for k, (name, style) in enumerate(
        (("big_eye_boy", "ring"), ("small_road", "dot"), ("cockroach_pig", "slash"))
    ):
        xk = x0 + k * half
        _board(fig, xk, -6.9, int(half * 2), 0.5, name.replace("_", " ").title())
        marks = road_rules.mark_columns(board.derived[name])
        _cells(fig, road_rules.layout(marks), xk, -6.9, 0.5, style, int(half * 2))
    fig.update_xaxes(visible=False, range=[-0.2, x0 + road_columns + 0.2])
    fig.update_yaxes(visible=False, range=[-10.3, 0.9], scaleanchor="x")
    fig.update_layout(
        template="simple_white", height=470, margin={"l": 10, "r": 10, "t": 10, "b": 10}, font={"size": FONT}
    )
    return fig


def shoe_series(
    values: np.ndarray, current: int, reference: float, title: str, y: str, zero: bool = False
) -> go.Figure:
    """A figure through the shoe, hand by hand (the hands dealt so far solid, the rest faint), the
    full shoe's value dashed, the next hand marked; with ``zero`` a line at 0 and the positive hands
    marked (up-triangles)."""
    hands = np.arange(1, values.size + 1)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=hands,
            y=values,
            mode="lines",
            line={"color": "#bbbbbb", "width": 2},
            name="the rest of the shoe",
            hoverinfo="skip",
        )
    )
    seen = hands <= current + 1
    fig.add_trace(
        go.Scatter(
            x=hands[seen],
            y=values[seen],
            mode="lines",
            line={"color": PLAYER, "width": 3},
            name="dealt so far",
        )
    )
    if zero:
        fig.add_hline(
            y=0,
            line={"color": "#444444", "width": 1.5},
            annotation={"text": "break even"},
            annotation_position="bottom left",
        )
        up = seen & (values > 0)
        fig.add_trace(
            go.Scatter(
                x=hands[up],
                y=values[up],
                mode="markers",
                marker={
                    "symbol": "triangle-up",
                    "size": 14,
                    "color": TIE,
                    "line": {"color": EXACT, "width": 1},
                },
                name="positive: bet it",
            )
        )
    exact_line(fig, reference, "full shoe")
    if current < values.size:
        fig.add_trace(
            go.Scatter(
                x=[current + 1],
                y=[values[current]],
                mode="markers",
                marker={"symbol": "diamond", "size": 18, "color": EXACT},
                name="next hand",
            )
        )
    return _layout(fig, title, "hand of the shoe", y, height=380)


def depth_bars(summary: dict) -> go.Figure:
    """The share of hands with a positive EV by how many cards had been dealt."""
    edges = summary["by_depth"]["cards_dealt"]
    share = summary["by_depth"]["share_positive"]
    labels = [f"{int(a)}-{int(b)}" for a, b in zip(edges[:-1], edges[1:], strict=True)]
    fig = go.Figure(
        go.Bar(
            x=labels, y=share, marker={"color": TIE}, text=[f"{s:.0%}" for s in share], textposition="outside"
        )
    )
    fig.update_yaxes(range=[0, max(max(share) * 1.25, 0.05)], tickformat=".0%")
    return _layout(
        fig,
        "Where the edge lives: hands with a positive EV, by depth",
        "cards dealt before the hand",
        "share of hands",
        height=380,
    )


def empty(text: str) -> go.Figure:
    """A figure with nothing but ``text`` in its middle (what a lesson cannot draw, and why)."""
    fig = go.Figure()
    fig.add_annotation(
        text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font={"size": FONT}
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, "", "", "", height=200)


def percent(value: float, digits: int = 2) -> str:
    """``value`` as a signed percentage (``-1.24%``); ``n/a`` for a missing value."""
    return (
        "n/a"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{100 * value:+.{digits}f}%"
    )


__all__ = [
    "BANKER",
    "PLAYER",
    "TIE",
    "SIDE",
    "SIMULATED",
    "EXACT",
    "frequencies",
    "ruin_curve",
    "ruin_paths",
    "tally",
    "reveal",
    "reveal_paths",
    "reveal_results",
    "result_distribution",
    "policy_curves",
    "stake_map",
    "policy_tally",
    "scoreboard",
    "shoe_series",
    "depth_bars",
    "empty",
    "percent",
]
