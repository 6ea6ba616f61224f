"""The lab page's layout: the header (seed, new seed, reset), one tab per lesson, each lesson's
controls bounded to the ranges its computation accepts, and its "what to notice".

Every control's starting value is in :data:`DEFAULTS` (the reset button puts them back); the
callbacks that fill the page are in :mod:`pb_gym.experiments.lab.app`.
"""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from pb_gym.experiments.lab import bold, gamblers_ruin, hand, progression, shoe
from pb_gym.experiments.lab.common import DEFAULT_SEED, MAX_SEED, MAX_SESSIONS

DEFAULTS: dict[str, Any] = {
    "hand-decks": 8,
    "hand-side": "dragon7",
    "ruin-bet": "player",
    "ruin-stake": 1,
    "ruin-range": [10, 20],
    "ruin-sessions": MAX_SESSIONS,
    "prog-system": "martingale",
    "prog-bankroll": 100,
    "prog-goal": 10,
    "prog-max": 64,
    "prog-hands": 200,
    "prog-sessions": MAX_SESSIONS,
    "bold-bankroll": 10,
    "bold-goal": 20,
    "bold-hands": 100,
    "bold-max": 2,
    "bold-bet": "player",
    "bold-sessions": MAX_SESSIONS,
    "roads-hand": 20,
    "count-bet": "dragon7",
    "count-hand": 75,
}
"""Every control's value after a reset (the seed's is :data:`pb_gym.experiments.lab.common.DEFAULT_SEED`)."""

NOTICE = {
    "hand": "Every bet loses in the long run: the banker wins more often but pays 0.95, the player pays "
    "1 but wins less, and the tie pays 8 to 1 for a 9.5% chance. Watch the running shares: noisy "
    "after ten hands, pinned to the exact dashed lines after thousands. The cards never decide "
    "anything the tableau did not already say.",
    "ruin": "From 10 units to 20 the player reaches the target 43 times in 100, not 50: a 1.24% house "
    "edge, repeated over about 110 hands, costs 7 points of probability. Move the start: the "
    "curve sags below the fair game's straight line. A bigger stake means fewer hands, and so "
    "a better chance: in a game against you, play short.",
    "prog": "The Martingale wins its small goal in most sessions, and the rare loss is most of the "
    "bankroll. Multiply them out: the expected result is below zero for every progression, about "
    "the house edge times the money wagered. No progression changes the odds of a single hand.",
    "bold": "To reach a goal against the house, bet boldly: stake what the goal needs in as few hands as "
    "possible. Timid one-unit betting gives the edge hundreds of hands to work. A table maximum "
    "forces more hands; the exact optimum then beats plain bold play, but still wins less than "
    "half of the sessions.",
    "roads": "The roads record the past; the cards left in the shoe decide the next hand. The exact "
    "P(banker) moves by a fraction of a percent through the shoe, and never by what a streak or "
    "the ask road suggests: the banker bet loses about 1% of the stake whatever the roads show.",
    "count": "A side bet's EV follows the cards left. Dragon 7 pays when the banker wins with a three-card "
    "7: late in a shoe whose 8s and 9s have come out (fewer naturals, more third cards), its EV can "
    "turn positive. That is the only edge in baccarat: rare, late, and a few hands per shoe.",
}
"""Two or three sentences per lesson: what the class should notice."""


def _control(label: str, widget, note: str = "") -> html.Div:
    children = [html.Label(label, className="control-label"), widget]
    if note:
        children.append(html.Div(note, className="control-note"))
    return html.Div(children, className="control")


def _slider(component_id: str, low: int, high: int, step: int, marks: dict | None = None) -> dcc.Slider:
    return dcc.Slider(
        id=component_id,
        min=low,
        max=high,
        step=step,
        value=DEFAULTS[component_id],
        marks=marks or {low: str(low), high: str(high)},
        updatemode="mouseup",
        tooltip={"always_visible": False, "placement": "bottom"},
    )


def _radio(component_id: str, options: list) -> dcc.RadioItems:
    return dcc.RadioItems(
        id=component_id, options=options, value=DEFAULTS[component_id], inline=True, className="radio"
    )


def _dropdown(component_id: str, options: list) -> dcc.Dropdown:
    return dcc.Dropdown(id=component_id, options=options, value=DEFAULTS[component_id], clearable=False)


def _figure(component_id: str) -> dcc.Graph:
    return dcc.Graph(id=component_id, config={"displaylogo": False}, className="figure")


def _big(label: str, component_id: str, kind: str = "exact") -> html.Div:
    return html.Div(
        [html.Div(label, className="big-label"), html.Div("", id=component_id, className="big-value")],
        className=f"big {kind}",
    )


def _lesson(key: str, controls: list, exact: list, figures: list) -> html.Div:
    return html.Div(
        [
            html.Div(
                [*controls, html.Div([html.H3("What to notice"), html.P(NOTICE[key])], className="notice")],
                className="controls",
            ),
            html.Div([html.Div(exact, className="exact-row"), *figures], className="results"),
        ],
        className="lesson",
        id=f"lesson-{key}",
    )


def _live(prefix: str) -> list:
    """A lesson's live simulation: its Deal again button, its run (the settings dealt) and the clock
    that reveals it."""
    return [
        html.Div(
            [html.Button("Deal again", id=f"{prefix}-deal", className="button primary")], className="buttons"
        ),
        dcc.Store(id=f"{prefix}-run"),
        dcc.Interval(id=f"{prefix}-tick", interval=150, disabled=True),
    ]


def hand_lesson() -> html.Div:
    controls = [
        _control("Decks in the shoe", _slider("hand-decks", 1, 8, 1, {k: str(k) for k in range(1, 9)})),
        _control(
            "Side bet",
            _dropdown("hand-side", list(hand.SIDE_BETS)),
        ),
        html.Div(
            [
                html.Button("Deal a hand", id="hand-deal-1", className="button primary"),
                html.Button("Deal 100", id="hand-deal-100", className="button"),
                html.Button("Deal 1,000", id="hand-deal-1000", className="button"),
            ],
            className="buttons",
        ),
        dcc.Store(id="hand-count", data=1),
        dcc.Interval(id="hand-step-tick", interval=700, disabled=True, n_intervals=99),
    ]
    exact = [html.Div(id="hand-odds", className="odds-table")]
    figures = [
        html.Div(
            [html.Div(id="hand-cards", className="cards"), html.Ol(id="hand-steps", className="steps")],
            className="table-felt",
        ),
        html.Div(id="hand-summary", className="summary"),
        _figure("hand-freq"),
    ]
    return _lesson("hand", controls, exact, figures)


def ruin_lesson() -> html.Div:
    controls = [
        _control(
            "Bet",
            _radio(
                "ruin-bet",
                [
                    {"label": "Player", "value": "player"},
                    {"label": "Banker", "value": "banker"},
                    {"label": "Fair coin", "value": "fair_coin"},
                ],
            ),
        ),
        _control(
            "Stake (units)",
            _radio("ruin-stake", [{"label": str(s), "value": s} for s in gamblers_ruin.STAKES]),
        ),
        _control(
            "Start and target (units)",
            dcc.RangeSlider(
                id="ruin-range",
                min=1,
                max=gamblers_ruin.MAX_UNITS,
                step=1,
                value=DEFAULTS["ruin-range"],
                pushable=1,
                allowCross=False,
                updatemode="mouseup",
                marks={1: "1", 20: "20", 40: "40", 60: "60"},
            ),
            "left handle: the start; right handle: the target",
        ),
        _control("Sessions to deal", _slider("ruin-sessions", 100, MAX_SESSIONS, 100)),
        *_live("ruin"),
    ]
    exact = [
        _big("P(reach the target)", "ruin-p-target"),
        _big("P(ruin)", "ruin-p-ruin"),
        _big("Expected hands", "ruin-hands"),
        _big("Simulated", "ruin-tally-text", "simulated"),
    ]
    figures = [
        html.Div(id="ruin-formula", className="formula"),
        _figure("ruin-curve"),
        html.Div([_figure("ruin-paths"), _figure("ruin-tally")], className="pair"),
    ]
    return _lesson("ruin", controls, exact, figures)


def progression_lesson() -> html.Div:
    controls = [
        _control(
            "Progression (on the player bet)",
            _dropdown(
                "prog-system",
                [{"label": text, "value": key} for key, text in progression.PROGRESSIONS.items()],
            ),
        ),
        _control("Bankroll (units)", _slider("prog-bankroll", 10, progression.MAX_BANKROLL, 10)),
        _control("Goal: stop when up (units)", _slider("prog-goal", 1, progression.MAX_GOAL, 1)),
        _control(
            "Table maximum (units)",
            _radio("prog-max", [{"label": str(m), "value": m} for m in progression.TABLE_MAXIMUMS]),
        ),
        _control("Hands at most", _slider("prog-hands", 10, progression.MAX_HANDS, 10)),
        _control("Sessions to deal", _slider("prog-sessions", 100, MAX_SESSIONS, 100)),
        *_live("prog"),
    ]
    exact = [
        _big("P(small win)", "prog-p-goal"),
        _big("P(lose money)", "prog-p-loss"),
        _big("Average loss when it loses", "prog-loss"),
        _big("Expected result", "prog-result"),
        _big("Simulated P(small win)", "prog-tally-text", "simulated"),
    ]
    figures = [html.Div(id="prog-note", className="formula"), _figure("prog-dist"), _figure("prog-tally")]
    return _lesson("prog", controls, exact, figures)


def bold_lesson() -> html.Div:
    controls = [
        _control("Bankroll (units)", _slider("bold-bankroll", 1, bold.MAX_GOAL - 1, 1)),
        _control("Goal (units)", _slider("bold-goal", 2, bold.MAX_GOAL, 1)),
        _control(
            "Hands at most",
            _slider("bold-hands", 1, bold.MAX_HANDS, 1, {1: "1", 50: "50", 100: "100", 200: "200"}),
        ),
        _control(
            "Table maximum (units)",
            _radio("bold-max", [{"label": str(m) if m else "none", "value": m} for m in bold.TABLE_MAXIMUMS]),
        ),
        _control(
            "Bold and timid play bet on",
            _radio("bold-bet", [{"label": b.title(), "value": b} for b in bold.PLAIN_BETS]),
        ),
        _control("Sessions to deal", _slider("bold-sessions", 100, MAX_SESSIONS, 100)),
        *_live("bold"),
    ]
    exact = [
        _big("Optimal", "bold-p-optimal"),
        _big("Bold", "bold-p-bold"),
        _big("Timid (1 unit)", "bold-p-timid"),
        _big("Simulated", "bold-tally-text", "simulated"),
    ]
    figures = [
        html.Div(id="bold-start", className="formula"),
        html.Div([_figure("bold-curves"), _figure("bold-tally")], className="pair"),
        _figure("bold-map"),
    ]
    return _lesson("bold", controls, exact, figures)


def _shoe_controls(prefix: str) -> list:
    return [
        _control("Hands dealt", _slider(f"{prefix}-hand", 0, 90, 1, {0: "0", 90: "90"})),
        html.Div(
            [
                html.Button("Next hand", id=f"{prefix}-next", className="button primary"),
                html.Button("Play / pause", id=f"{prefix}-play", className="button"),
            ],
            className="buttons",
        ),
        html.Div("A new seed deals a new shoe.", className="control-note"),
        dcc.Interval(id=f"{prefix}-tick", interval=900, disabled=True),
    ]


def roads_lesson() -> html.Div:
    exact = [
        _big("Next hand: P(banker)", "roads-p-banker"),
        _big("P(player)", "roads-p-player"),
        _big("P(tie)", "roads-p-tie"),
        _big("Banker bet EV", "roads-ev"),
    ]
    figures = [
        _figure("roads-board"),
        html.Div([html.H3("What the roads say"), html.Ul(id="roads-says")], className="says"),
        _figure("roads-series"),
    ]
    return _lesson("roads", _shoe_controls("roads"), exact, figures)


def counting_lesson() -> html.Div:
    controls = [
        _control(
            "Bet",
            _dropdown("count-bet", list(shoe.COUNTED_BETS)),
        ),
        *_shoe_controls("count"),
    ]
    exact = [_big("Next hand: exact EV", "count-ev-now"), _big("Full shoe EV", "count-ev-full")]
    figures = [
        _figure("count-series"),
        html.Div(id="count-summary", className="summary"),
        _figure("count-depth"),
    ]
    return _lesson("count", controls, exact, figures)


LESSONS = (
    ("hand", "1 One hand", hand_lesson),
    ("ruin", "2 Gambler's ruin", ruin_lesson),
    ("prog", "3 The Martingale illusion", progression_lesson),
    ("bold", "4 How to bet if you must", bold_lesson),
    ("roads", "5 The roads", roads_lesson),
    ("count", "6 Counting", counting_lesson),
)
"""Each lesson's key (its tab's value and its ids' prefix), title and layout."""


def page() -> html.Div:
    """The whole page: the header and a tab per lesson (``?lesson=KEY`` in the address opens that
    lesson's tab)."""
    header = html.Div(
        [
            html.H1("pb-gym lab"),
            html.Div("Baccarat, exactly: every simulation beside its exact answer", className="subtitle"),
            html.Div(
                [
                    html.Label("Seed", htmlFor="seed", className="control-label"),
                    dcc.Input(
                        id="seed",
                        type="number",
                        min=0,
                        max=MAX_SEED,
                        step=1,
                        value=DEFAULT_SEED,
                        debounce=True,
                    ),
                    html.Button("New seed", id="new-seed", className="button"),
                    html.Button("Reset", id="reset", className="button"),
                ],
                className="seed",
            ),
        ],
        className="header",
    )
    tabs = dcc.Tabs(
        id="tabs",
        value=LESSONS[0][0],
        children=[dcc.Tab(label=title, value=key, children=make()) for key, title, make in LESSONS],
        className="tabs",
    )
    return html.Div([dcc.Location(id="url", refresh=False), header, tabs], className="page")


__all__ = ["DEFAULTS", "NOTICE", "LESSONS", "page"]
