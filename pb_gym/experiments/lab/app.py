"""The lab's web page on Dash: the callbacks that turn the controls into the lessons' numbers.

Each callback reads its lesson's controls and the seed, calls the lesson's computation
(:mod:`pb_gym.experiments.lab`) and draws what it returns (:mod:`pb_gym.experiments.lab.figures`); none
computes a probability or deals a card itself. The exact figures are redrawn as soon as a control
moves; a simulation is dealt at once (the computations cache their results) and then shown growing,
a few sessions per tick of a clock (``*-tick``), so that the class sees the tally converge.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
from dash import Dash, Input, Output, Patch, State, ctx, dcc, html, no_update

from pb_gym import rules as R
from pb_gym.experiments.lab import bold, figures, gamblers_ruin, hand, layout, progression, shoe
from pb_gym.experiments.lab.common import DEFAULT_SEED, MAX_SEED

TICKS = 20
"""Clock ticks over which a simulation is revealed (about three seconds)."""
DEALING = "dealing..."
"""The simulated figure while a new deal starts."""
DECKS = 8
"""The shoe of lessons 2 to 6."""


def _seed(value) -> int:
    """The seed box's value; an empty or out-of-range box (the browser's None) is the demo seed."""
    return DEFAULT_SEED if value is None else int(min(max(int(value), 0), MAX_SEED))


def revealed(tick: int | None, total: int) -> int:
    """How many of ``total`` sessions are shown after ``tick`` ticks: one at a time at first, faster
    later, all of them after :data:`TICKS` ticks."""
    step = min(int(tick or 0) + 1, TICKS)
    return min(total, max(step, round(total * (step / TICKS) ** 2)))


def _p(value: float) -> str:
    return f"{value:.4f}"


# ------------------------------------------------------------------------------------ global
def _global(app: Dash) -> None:
    @app.callback(Output("tabs", "value"), Input("url", "search"))
    def open_lesson(search):
        wanted = parse_qs((search or "").lstrip("?")).get("lesson", [None])[0]
        return wanted if wanted in {key for key, _, _ in layout.LESSONS} else no_update

    @app.callback(
        Output("seed", "value", allow_duplicate=True),
        Input("new-seed", "n_clicks"),
        prevent_initial_call=True,
    )
    def new_seed(_):
        return secrets.randbelow(MAX_SEED + 1)

    ids = list(layout.DEFAULTS)

    @app.callback(
        [Output("seed", "value", allow_duplicate=True), Output("hand-count", "data", allow_duplicate=True)]
        + [Output(i, "value", allow_duplicate=True) for i in ids],
        Input("reset", "n_clicks"),
        prevent_initial_call=True,
    )
    def reset(_):
        return [DEFAULT_SEED, 1, *layout.DEFAULTS.values()]


# ------------------------------------------------------------------------------------ lesson 1
def _card_row(name: str, codes: np.ndarray) -> html.Div:
    cards = [
        html.Div(R.RANKS[int(c) - 1], className="card third" if k == 2 else "card")
        for k, c in enumerate(codes)
        if c
    ]
    return html.Div([html.Div(name, className="hand-name"), *cards], className="hand-row")


def _odds_table(rows: list[dict]) -> html.Table:
    head = html.Tr([html.Th(t) for t in ("bet", "pays", "P(win)", "P(push)", "house edge")])
    body = [
        html.Tr(
            [
                html.Td(r["bet"]),
                html.Td(f"{r['pays']:g} to 1"),
                html.Td(_p(r["p_win"])),
                html.Td(_p(r["p_push"])),
                html.Td(f"{100 * r['house_edge']:.2f}%"),
            ]
        )
        for r in rows
    ]
    return html.Table([head, *body])


def _hand_lesson(app: Dash) -> None:
    @app.callback(
        Output("hand-count", "data"),
        Output("hand-step-tick", "n_intervals"),
        Output("hand-step-tick", "disabled"),
        Input("hand-deal-1", "n_clicks"),
        Input("hand-deal-100", "n_clicks"),
        Input("hand-deal-1000", "n_clicks"),
        State("hand-count", "data"),
        prevent_initial_call=True,
    )
    def deal(_one, _hundred, _thousand, count):
        more = {"hand-deal-1": 1, "hand-deal-100": 100, "hand-deal-1000": 1000}[ctx.triggered_id]
        count = min(int(count or 0) + more, hand.MAX_HANDS)
        return count, (0 if more == 1 else 99), more != 1

    @app.callback(
        Output("hand-odds", "children"),
        Output("hand-freq", "figure"),
        Output("hand-summary", "children"),
        Input("hand-count", "data"),
        Input("hand-decks", "value"),
        Input("hand-side", "value"),
        Input("seed", "value"),
    )
    def odds(count, decks, side, seed):
        rows = hand.bet_odds(int(decks), side)
        dealt = hand.deal_hands(int(decks), max(int(count or 1), 1), _seed(seed))
        running = hand.running_frequencies(dealt, side)
        exact = {r["bet"]: r["p_win"] for r in rows}
        n = len(dealt["winner"])
        summary = f"{n:,} hand{'s' if n > 1 else ''} dealt from one {decks}-deck shoe: " + ", ".join(
            f"{bet} won {share[-1]:.3f} (exact {exact[bet]:.4f})" for bet, share in running.items()
        )
        return _odds_table(rows), figures.frequencies(running, exact), summary

    @app.callback(
        Output("hand-cards", "children"),
        Output("hand-steps", "children"),
        Output("hand-step-tick", "disabled", allow_duplicate=True),
        Input("hand-count", "data"),
        Input("hand-step-tick", "n_intervals"),
        Input("hand-decks", "value"),
        Input("seed", "value"),
        prevent_initial_call="initial_duplicate",
    )
    def show_hand(count, tick, decks, seed):
        dealt = hand.deal_hands(int(decks), max(int(count or 1), 1), _seed(seed))
        player, banker = dealt["player_cards"][-1], dealt["banker_cards"][-1]
        steps = hand.narrate(player, banker)
        shown = min(int(tick or 0) + 1, len(steps))
        cards = [_card_row("Player", player), _card_row("Banker", banker)]
        return cards, [html.Li(s) for s in steps[:shown]], shown >= len(steps)


# ------------------------------------------------------------------------------------ lessons 2 to 4
def _snap(values: list, stake: int) -> tuple[int, int]:
    """The range slider's (start, target) moved onto multiples of ``stake``, start below target."""
    top = gamblers_ruin.MAX_UNITS
    start = min(max(stake, round(int(values[0]) / stake) * stake), top - stake)
    target = min(max(start + stake, round(int(values[1]) / stake) * stake), top)
    return start, target


def _ruin_lesson(app: Dash) -> None:
    @app.callback(
        Output("ruin-range", "step"),
        Output("ruin-range", "min"),
        Output("ruin-range", "pushable"),
        Output("ruin-range", "value", allow_duplicate=True),
        Input("ruin-stake", "value"),
        State("ruin-range", "value"),
        prevent_initial_call="initial_duplicate",
    )
    def stake_changed(stake, values):
        return stake, stake, stake, list(_snap(values, stake))

    @app.callback(
        Output("ruin-p-target", "children"),
        Output("ruin-p-ruin", "children"),
        Output("ruin-hands", "children"),
        Output("ruin-formula", "children"),
        Output("ruin-curve", "figure"),
        Input("ruin-bet", "value"),
        Input("ruin-stake", "value"),
        Input("ruin-range", "value"),
    )
    def exact(bet, stake, values):
        start, target = _snap(values, stake)
        result = gamblers_ruin.ruin_exact(bet, start, target, stake, DECKS)
        step = result["step"]
        if "closed_form" in result:
            p = step["p_win"] / (step["p_win"] + step["p_lose"])
            formula = dcc.Markdown(
                f"Ties aside, a hand is won with $p = {p:.4f}$, lost with $q = {1 - p:.4f}$. "
                f"With $r = q/p$, $i = {start // stake}$ and $N = {target // stake}$ stakes: "
                f"$P = \\frac{{1 - r^i}}{{1 - r^N}} = {result['closed_form']:.4f}$.",
                mathjax=True,
            )
        else:
            formula = dcc.Markdown(
                "+0.95 / -1 has no closed form: the exact Markov chain on the lattice of 1/20 stake "
                "solves it (pb_gym.experiments.ruin.model)."
            )
        curve = figures.ruin_curve(result, start, target, bet)
        return _p(result["p_target"]), _p(result["p_ruin"]), f"{result['hands']:.1f}", formula, curve

    @app.callback(
        Output("ruin-run", "data"),
        Output("ruin-tick", "n_intervals"),
        Output("ruin-tick", "disabled"),
        Output("ruin-paths", "figure"),
        Output("ruin-tally", "figure"),
        Output("ruin-tally-text", "children"),
        Input("ruin-bet", "value"),
        Input("ruin-stake", "value"),
        Input("ruin-range", "value"),
        Input("ruin-sessions", "value"),
        Input("seed", "value"),
        Input("ruin-deal", "n_clicks"),
    )
    def start(bet, stake, values, sessions, seed, _):
        begin, target = _snap(values, stake)
        run = {
            "bet": bet,
            "start": begin,
            "target": target,
            "stake": stake,
            "sessions": int(sessions),
            "seed": _seed(seed),
        }
        dealt = gamblers_ruin.ruin_sessions(**run, decks=DECKS)  # dealt now: the ticks only reveal it
        exact = gamblers_ruin.ruin_exact(bet, begin, target, stake, DECKS)
        paths = figures.ruin_paths(dealt["paths"], begin, target, stake)
        board = figures.tally(dealt["running"], exact["p_target"], "reached the target")
        return run, 0, False, paths, board, DEALING

    @app.callback(
        Output("ruin-paths", "figure", allow_duplicate=True),
        Output("ruin-tally", "figure", allow_duplicate=True),
        Output("ruin-tally-text", "children", allow_duplicate=True),
        Output("ruin-tick", "disabled", allow_duplicate=True),
        Input("ruin-tick", "n_intervals"),
        State("ruin-run", "data"),
        prevent_initial_call=True,
    )
    def tick(n, run):
        dealt = gamblers_ruin.ruin_sessions(**run, decks=DECKS)
        shown = revealed(n, run["sessions"])
        wins = int(dealt["success"][:shown].sum())
        paths, board = Patch(), Patch()
        figures.reveal_paths(paths, len(dealt["paths"]), shown)
        figures.reveal(board, dealt["running"], shown)
        text = f"{wins / shown:.4f} ({wins:,} of {shown:,} sessions)"
        return paths, board, text, shown >= run["sessions"]


def _progression_lesson(app: Dash) -> None:
    controls = [Input(f"prog-{k}", "value") for k in ("system", "bankroll", "goal", "max", "hands")]

    @app.callback(
        Output("prog-p-goal", "children"),
        Output("prog-p-loss", "children"),
        Output("prog-loss", "children"),
        Output("prog-result", "children"),
        Output("prog-note", "children"),
        *controls,
    )
    def exact(system, bankroll, goal, table_max, hands):
        result = progression.progression_exact(system, bankroll, goal, table_max, hands)
        if "reason" in result:
            return "n/a", "n/a", "n/a", "n/a", f"No exact chain for this setting: {result['reason']}."
        edge = progression.bet_edge(DECKS)
        note = (
            f"Exact chain ({result['states']:,} states): the session ends at +{goal} with probability "
            f"{_p(result['p_goal'])}, at ruin with {_p(result['p_ruin'])}, at the hand limit with "
            f"{_p(result['p_hand_limit'])}; the largest loss is {result['largest_loss']:.0f} units, "
            f"{result['expected_hands']:.1f} hands are played on average, and the player bet keeps its "
            f"house edge of {100 * edge:.2f}% on every one of them."
        )
        return (
            _p(result["p_goal"]),
            _p(result["p_loss"]),
            f"{result['mean_loss_when_lost']:.1f} units",
            f"{result['expected_result']:+.2f} units",
            note,
        )

    @app.callback(
        Output("prog-run", "data"),
        Output("prog-tick", "n_intervals"),
        Output("prog-tick", "disabled"),
        Output("prog-dist", "figure"),
        Output("prog-tally", "figure"),
        Output("prog-tally-text", "children"),
        *controls,
        Input("prog-sessions", "value"),
        Input("seed", "value"),
        Input("prog-deal", "n_clicks"),
    )
    def start(system, bankroll, goal, table_max, hands, sessions, seed, _):
        settings = {
            "system": system,
            "bankroll": int(bankroll),
            "goal": int(goal),
            "table_max": int(table_max),
        }
        settings["hands"] = int(hands)
        run = settings | {"sessions": int(sessions), "seed": _seed(seed)}
        dealt = progression.progression_sessions(**run)
        exact = progression.progression_exact(**settings)
        if "reason" in exact:  # (no exact chain: the simulation alone, against its own share)
            board = figures.tally(dealt["running"], float(dealt["reached"].mean()), f"won +{goal}")
            return run, 0, False, figures.empty(f"No exact chain: {exact['reason']}"), board, DEALING
        board = figures.tally(dealt["running"], exact["p_goal"], f"won +{goal}")
        return run, 0, False, figures.result_distribution(exact), board, DEALING

    @app.callback(
        Output("prog-dist", "figure", allow_duplicate=True),
        Output("prog-tally", "figure", allow_duplicate=True),
        Output("prog-tally-text", "children", allow_duplicate=True),
        Output("prog-tick", "disabled", allow_duplicate=True),
        Input("prog-tick", "n_intervals"),
        State("prog-run", "data"),
        prevent_initial_call=True,
    )
    def tick(n, run):
        dealt = progression.progression_sessions(**run)
        shown = revealed(n, run["sessions"])
        wins = int(dealt["reached"][:shown].sum())
        dist, board = Patch(), Patch()
        figures.reveal_results(dist, dealt["result"], shown)
        figures.reveal(board, dealt["running"], shown)
        text = f"{wins / shown:.4f} ({wins:,} of {shown:,} sessions)"
        return dist, board, text, shown >= run["sessions"]


def _bold_settings(bankroll, goal, hands, table_max, bet) -> dict:
    goal = int(goal)
    return {
        "bankroll": min(int(bankroll), goal - 1),
        "goal": goal,
        "hands": int(hands),
        "table_max": int(table_max),
        "bet": bet,
    }


def _bold_lesson(app: Dash) -> None:
    controls = [Input(f"bold-{k}", "value") for k in ("bankroll", "goal", "hands", "max", "bet")]

    @app.callback(
        Output("bold-p-optimal", "children"),
        Output("bold-p-bold", "children"),
        Output("bold-p-timid", "children"),
        Output("bold-start", "children"),
        Output("bold-curves", "figure"),
        Output("bold-map", "figure"),
        *controls,
    )
    def exact(bankroll, goal, hands, table_max, bet):
        settings = _bold_settings(bankroll, goal, hands, table_max, bet)
        result = bold.bold_exact(**settings, decks=DECKS)
        first = result["start"]
        start = (
            f"From {settings['bankroll']} units with {settings['hands']} hands to reach {settings['goal']}, "
            + (
                "the optimal player sits out."
                if first is None
                else f"the optimal first bet is {first['stake']} on {first['bet']}."
            )
            + f" Bold play stakes what reaching the goal needs, on {bet}; timid play one unit a hand."
        )
        p = result["p_goal"]
        curves = figures.policy_curves(result, settings["bankroll"])
        return _p(p["optimal"]), _p(p["bold"]), _p(p["timid"]), start, curves, figures.stake_map(result)

    @app.callback(
        Output("bold-run", "data"),
        Output("bold-tick", "n_intervals"),
        Output("bold-tick", "disabled"),
        Output("bold-tally", "figure"),
        Output("bold-tally-text", "children"),
        *controls,
        Input("bold-sessions", "value"),
        Input("seed", "value"),
        Input("bold-deal", "n_clicks"),
    )
    def start(bankroll, goal, hands, table_max, bet, sessions, seed, _):
        settings = _bold_settings(bankroll, goal, hands, table_max, bet)
        run = settings | {"sessions": int(sessions), "seed": _seed(seed)}
        bold.bold_sessions(**run, decks=DECKS)
        exact = bold.bold_exact(**settings, decks=DECKS)
        return run, 0, False, figures.policy_tally(exact, run["sessions"]), DEALING

    @app.callback(
        Output("bold-tally", "figure", allow_duplicate=True),
        Output("bold-tally-text", "children", allow_duplicate=True),
        Output("bold-tick", "disabled", allow_duplicate=True),
        Input("bold-tick", "n_intervals"),
        State("bold-run", "data"),
        prevent_initial_call=True,
    )
    def tick(n, run):
        dealt = bold.bold_sessions(**run, decks=DECKS)
        shown = revealed(n, run["sessions"])
        board = Patch()
        for trace, name in enumerate(bold.POLICIES):
            figures.reveal(board, dealt[name]["running"], shown, trace)
        text = ", ".join(f"{name} {dealt[name]['running'][shown - 1]:.3f}" for name in bold.POLICIES)
        return board, f"{text} ({shown:,} sessions)", shown >= run["sessions"]


# ------------------------------------------------------------------------------------ lessons 5 and 6
def _stepping(app: Dash, prefix: str) -> None:
    """A shoe lesson's hand slider: its range follows the shoe of the seed; Next hand and the clock
    deal one more hand, Play / pause starts and stops the clock."""

    @app.callback(
        Output(f"{prefix}-hand", "max"),
        Output(f"{prefix}-hand", "marks"),
        Output(f"{prefix}-hand", "value", allow_duplicate=True),
        Input("seed", "value"),
        State(f"{prefix}-hand", "value"),
        prevent_initial_call="initial_duplicate",
    )
    def shoe_changed(seed, value):
        hands = len(shoe.deal_shoe(DECKS, _seed(seed))["winner"])
        return hands, {0: "0", hands: str(hands)}, min(int(value or 0), hands)

    @app.callback(
        Output(f"{prefix}-hand", "value", allow_duplicate=True),
        Output(f"{prefix}-tick", "disabled", allow_duplicate=True),
        Input(f"{prefix}-next", "n_clicks"),
        Input(f"{prefix}-tick", "n_intervals"),
        State(f"{prefix}-hand", "value"),
        State(f"{prefix}-hand", "max"),
        prevent_initial_call=True,
    )
    def advance(_, __, value, top):
        value = min(int(value or 0) + 1, int(top))
        return value, no_update if value < int(top) else True

    @app.callback(
        Output(f"{prefix}-tick", "disabled", allow_duplicate=True),
        Input(f"{prefix}-play", "n_clicks"),
        State(f"{prefix}-tick", "disabled"),
        prevent_initial_call=True,
    )
    def play(_, disabled):
        return not disabled


def _roads_lesson(app: Dash) -> None:
    _stepping(app, "roads")

    @app.callback(
        Output("roads-board", "figure"),
        Output("roads-p-banker", "children"),
        Output("roads-p-player", "children"),
        Output("roads-p-tie", "children"),
        Output("roads-ev", "children"),
        Output("roads-says", "children"),
        Output("roads-series", "figure"),
        Input("roads-hand", "value"),
        Input("seed", "value"),
    )
    def show(hands, seed):
        dealt = shoe.deal_shoe(DECKS, _seed(seed))
        hands = min(int(hands or 0), len(dealt["winner"]))
        reading = shoe.road_reading(dealt, hands)
        odds = shoe.next_hand_odds(dealt["composition"], DECKS)
        full = shoe.next_hand_odds(R.full_shoe(DECKS), DECKS)
        k = min(hands, len(dealt["winner"]) - 1)
        says = [html.Li(s) for s in reading["says"]]
        says.append(
            html.Li(
                f"The cards left say: P(banker) {_p(odds['banker'][k])}, P(player) {_p(odds['player'][k])}; "
                f"the banker bet returns {figures.percent(odds['banker_ev'][k])} of the stake."
            )
        )
        series = figures.shoe_series(
            odds["banker"],
            hands,
            float(full["banker"]),
            "Exact P(banker) of each hand of this shoe",
            "P(banker)",
        )
        return (
            figures.scoreboard(reading["roads"]),
            _p(odds["banker"][k]),
            _p(odds["player"][k]),
            _p(odds["tie"][k]),
            figures.percent(odds["banker_ev"][k]),
            says,
            series,
        )


def _counting_lesson(app: Dash) -> None:
    _stepping(app, "count")

    @app.callback(
        Output("count-ev-now", "children"),
        Output("count-ev-full", "children"),
        Output("count-series", "figure"),
        Input("count-hand", "value"),
        Input("count-bet", "value"),
        Input("seed", "value"),
    )
    def show(hands, bet, seed):
        dealt = shoe.deal_shoe(DECKS, _seed(seed))
        ev = shoe.side_bet_ev(dealt, bet, DECKS)
        summary = shoe.counting_summary(DECKS, _seed(seed), bet)
        hands = min(int(hands or 0), ev.size)
        k = min(hands, ev.size - 1)
        title = f"Exact EV of {bet} before each hand of this shoe"
        series = figures.shoe_series(ev, hands, summary["full_shoe_ev"], title, "EV per unit", zero=True)
        return figures.percent(ev[k]), figures.percent(summary["full_shoe_ev"]), series

    @app.callback(
        Output("count-summary", "children"),
        Output("count-depth", "figure"),
        Input("count-bet", "value"),
        Input("seed", "value"),
    )
    def many(bet, seed):
        summary = shoe.counting_summary(DECKS, _seed(seed), bet)
        positive = summary["positive_hands"]
        text = (
            f"Over 200 shoes from this seed: {positive:,} of {summary['hands']:,} hands "
            f"({positive / summary['hands']:.1%}) had a positive exact EV, in "
            f"{summary['shoes_with_positive']} shoes; betting one unit on {bet} exactly then won "
            f"{summary['gain_per_shoe']:+.2f} units per shoe."
        )
        return text, figures.depth_bars(summary)


def create_app() -> Dash:
    """The lab's Dash app: the page of :func:`pb_gym.experiments.lab.layout.page` and its callbacks.
    Its scripts are served by the app itself (nothing is fetched from the internet), its style sheet
    from this package's ``assets/lab.css`` (Dash's assets folder)."""
    app = Dash(
        __name__,
        title="pb-gym lab",
        serve_locally=True,
        assets_folder=str(Path(__file__).with_name("assets")),
        update_title=None,  # type: ignore[arg-type]  # (None: the tab's title stays still)
        suppress_callback_exceptions=False,
    )
    app.layout = layout.page()
    for register in (
        _global,
        _hand_lesson,
        _ruin_lesson,
        _progression_lesson,
        _bold_lesson,
        _roads_lesson,
        _counting_lesson,
    ):
        register(app)
    return app


__all__ = ["TICKS", "DECKS", "create_app", "revealed"]
