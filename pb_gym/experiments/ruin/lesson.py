"""The ruin study's report: the text report, the teaching page (Markdown) and the two figures.

The job of this file is to show a result of :func:`pb_gym.experiments.ruin.run` (a JSON-ready dict); it
computes nothing. Each table is built once, as rows of formatted cells (:func:`point_rows`,
:func:`martingale_rows`), and laid out twice: aligned columns for the text report printed by
``pb-gym experiment ruin``, a Markdown table for ``report.md``, the page a teacher can hand out.
Figures go through :mod:`pb_gym.experiments.common.plotting` (the Agg backend, 110 dpi).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from pb_gym import strict_json
from pb_gym.experiments.common import plotting

NAMES = {
    "player": "Player (+1/-1, ties push)",
    "banker": "Banker (+0.95/-1, ties push)",
    "fair_coin": "Fair coin (+1/-1)",
}
COLORS = {"player": "tab:blue", "banker": "tab:red", "fair_coin": "tab:gray"}
MARTINGALE_SECTION = "<!-- martingale-illusion: disabled in this config (martingale: null) -->"
"""Left in ``report.md`` where the Martingale section goes when the config switches it off."""

TEXT = {"probability": 4, "percent": 3, "result_sign": ""}
"""The Martingale table's precision in the text report (decimals of probabilities and of percentages;
the sign of the average result only when negative)."""
PAGE = {"probability": 3, "percent": 2, "result_sign": "+"}
"""The same on the teaching page: fewer decimals, every result signed."""


# --------------------------------------------------------------------------------------------------
# The tables' rows: formatted once, laid out as text or Markdown
# --------------------------------------------------------------------------------------------------
def _cell(value: float | None, spec: str) -> str:
    """``value`` formatted with ``spec``; ``n/a`` for a statistic the data does not define (null in
    the JSON, e.g. P(success) at a point where no session finished)."""
    return "n/a" if value is None or value != value else format(value, spec)


def _interval(bounds: list | None, spec: str, scale: float = 1.0) -> str:
    """``[low, high]`` formatted with ``spec`` (after multiplying by ``scale``)."""
    low, high = bounds if bounds is not None else (None, None)
    return (
        f"[{_cell(None if low is None else scale * low, spec)}, "
        f"{_cell(None if high is None else scale * high, spec)}]"
    )


def point_rows(result: dict) -> list[dict[str, str]]:
    """One row of cells per simulated point and bet: ``bet``, ``start``, ``target``, ``p_win`` and its
    ``p_win_ci``, ``p_win_exact``, ``hands`` and its ``hands_ci``, ``hands_exact``."""
    rows = []
    for bet, points in result["simulated"].items():
        for r in points:
            rows.append(
                {
                    "bet": bet,
                    "start": str(r["start"]),
                    "target": str(r["target"]),
                    "p_win": _cell(r["p_win"], ".4f"),
                    "p_win_ci": _interval(r["p_win_ci95"], ".4f"),
                    "p_win_exact": _cell(r["p_win_exact"], ".4f"),
                    "hands": _cell(r["hands"], ".1f"),
                    "hands_ci": _interval(r["hands_ci95"], ".1f"),
                    "hands_exact": _cell(r["hands_exact"], ".1f"),
                }
            )
    return rows


def martingale_rows(illusion: dict, style: dict) -> list[dict[str, str]]:
    """One row of cells per table maximum and system of the Martingale section, with the precision of
    ``style`` (:data:`TEXT` or :data:`PAGE`): ``system``, ``table_max``, ``p_goal``, ``p_loss``,
    ``loss`` (average, when it loses), ``result`` (average), ``ev`` and its ``ev_ci`` (per unit
    wagered, %), ``exact`` (the exact edge, %)."""
    p, pct, sign = style["probability"], style["percent"], style["result_sign"]
    rows = []
    for r in illusion["rows"]:
        ev = r["ev_per_unit_wagered"]
        rows.append(
            {
                "system": r["system"],
                "table_max": str(r["table_max"]),
                "p_goal": _cell(r["p_goal"], f".{p}f"),
                "p_loss": _cell(r["p_loss"], f".{p}f"),
                "loss": _cell(r["mean_loss_when_lost"], ".1f"),
                "result": _cell(r["mean_result"], f"{sign}.2f"),
                "ev": _cell(None if ev is None else 100 * ev, f"+.{pct}f") + "%",
                "ev_ci": _interval(r["ci95"], f"+.{pct}f", 100.0),
                "exact": f"{100 * r['exact_edge']:+.3f}%",
            }
        )
    return rows


# --------------------------------------------------------------------------------------------------
# Text report
# --------------------------------------------------------------------------------------------------
def report(result: dict) -> str:
    """The text report: the step distributions and the simulated-vs-exact table."""
    lines = [
        f"Gambler's ruin, {result['rules']['decks']} decks; {result['stopping_rule']}",
        f"exact chain {result['timings']['exact_s']:.1f} s, simulation "
        f"{result['timings']['simulate_s']:.1f} s ({result['sessions_per_point']} sessions per "
        f"point)",
    ]
    for bet, entry in result["exact"].items():
        s = entry["steps"]
        lines.append(
            f"  {bet}: P(win) {s['p_win']:.6f} P(lose) {s['p_lose']:.6f} P(push) "
            f"{s['p_push']:.6f}; lattice 1/{s['lattice']} unit"
        )
        if "closed_form_max_abs_diff" in entry:
            d = entry["closed_form_max_abs_diff"]
            lines.append(
                f"    Markov chain vs closed form: max |dP| {d['p_win']:.1e}, max relative "
                f"d(hands) {d['hands_relative']:.1e}"
            )
    lines += [
        "",
        f"{'bet':<10}{'start':>6}{'target':>7}  {'P(target) sim [95% CI]':<28}"
        f"{'exact':>9}  {'hands sim [95% CI]':<28}{'exact':>10}",
    ]
    for c in point_rows(result):
        lines.append(
            f"{c['bet']:<10}{c['start']:>6}{c['target']:>7}  {c['p_win']} {c['p_win_ci']}"
            f"{'':<6}{c['p_win_exact']:>9}  {c['hands']:>8} {c['hands_ci']}{'':<6}"
            f"{c['hands_exact']:>10}"
        )
    lines.append(f"largest |z| (simulation vs exact): {_cell(result['max_abs_z'], '.2f')}")
    illusion = result.get("martingale")
    if illusion:
        lines += [
            "",
            f"Martingale illusion: banker, 1, 2, 4, ... units, stop at +{illusion['goal']} "
            f"from {illusion['bankroll']} units ({illusion['sessions']:,} sessions, "
            f"{result['timings']['martingale_s']:.1f} s)",
            f"{'system':<12}{'max':>5}{'P(small win)':>14}{'P(loss)':>9}{'avg loss':>10}"
            f"{'avg result':>12}  {'EV/unit wagered [95% CI]':<30}{'exact':>9}",
        ]
        for c in martingale_rows(illusion, TEXT):
            lines.append(
                f"{c['system']:<12}{c['table_max']:>5}{c['p_goal']:>14}{c['p_loss']:>9}"
                f"{c['loss']:>10}{c['result']:>12}  {c['ev']} {c['ev_ci']}{'':<4}{c['exact']}"
            )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Teaching page (Markdown)
# --------------------------------------------------------------------------------------------------
def teaching_page(result: dict, plot_name: str = "ruin.png") -> str:
    """A Markdown page a teacher can hand out."""
    ex = result["exact"]
    vs_target = next(iter(ex.values()))["vs_start"]["target"]
    start = next(iter(ex.values()))["vs_target"]["start"]
    lines = [
        "# Gambler's ruin at the baccarat table",
        "",
        "A player sits down with a bankroll of *i* units, bets one unit on the same spot every "
        "hand, and leaves when the bankroll reaches a target of *N* units (a win) or when it "
        "falls below one unit, the stake (ruin). How likely is the win, and how long does it "
        "take?",
        "",
        "## The bets",
        "",
        "| bet | P(win a hand) | P(lose) | P(push: tie) | net win | EV per hand |",
        "|---|---|---|---|---|---|",
    ]
    for bet, entry in ex.items():
        s = entry["steps"]
        wins = [f"{v / s['lattice']:+g}" for v in s["steps"] if v != 0]
        edge = sum(v / s["lattice"] * p for v, p in zip(s["steps"], s["probabilities"], strict=True))
        lines.append(
            f"| {NAMES[bet]} | {s['p_win']:.4f} | {s['p_lose']:.4f} | {s['p_push']:.4f} | "
            f"{' / '.join(wins)} | {100 * edge:+.3f}% |"
        )
    lines += [
        "",
        f"The cards are {result['rules']['decks']}-deck shoes dealt by the engine (burn, cut "
        "card, reshuffles). Rule of the session: **stop as soon as the bankroll is at least the "
        "target, or below one unit**. A banker win that jumps past the target is kept.",
        "",
        "## Results",
        "",
        f"![ruin]({plot_name})",
        "",
        f"Top: target {vs_target} units, against the starting bankroll. Bottom: start "
        f"{start} units, against the target. Lines are exact; dots are simulated sessions "
        f"({result['sessions_per_point']} per dot) with 95% confidence intervals.",
        "",
        "| bet | start | target | P(target) exact | simulated [95% CI] | hands exact | simulated [95% CI] |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in point_rows(result):
        lines.append(
            f"| {c['bet']} | {c['start']} | {c['target']} | {c['p_win_exact']} | "
            f"{c['p_win']} {c['p_win_ci']} | {c['hands_exact']} | {c['hands']} {c['hands_ci']} |"
        )
    fair = ex.get("fair_coin", {}).get("vs_target")
    lines += [
        "",
        "## What to notice",
        "",
        "* **A fair game is already a bad bet on reaching a target far away:** with a fair coin "
        "the chance of reaching *N* from *i* is exactly *i/N*. Doubling a bankroll succeeds "
        "half the time, no more.",
        "* **A small edge compounds.** Per hand the house edge is about 1%, but the chance of "
        "reaching a distant target falls much faster than *i/N*: the more hands the session "
        "needs, the more the edge counts.",
    ]
    if fair is not None and "player" in ex:
        k = len(fair["targets"]) - 1
        lines.append(
            f"  From {start} units to {fair['targets'][k]}: fair coin "
            f"{fair['p_win'][k]:.4f}, player {ex['player']['vs_target']['p_win'][k]:.4f}"
            + (f", banker {ex['banker']['vs_target']['p_win'][k]:.4f}" if "banker" in ex else "")
            + "."
        )
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
            f"{pl['vs_target']['p_win'][-1]:.4f}."
        )
    lines += [
        "* **Long sessions.** The expected number of hands is largest for a start in the "
        "middle; ties (about 9.5% of hands) lengthen every session without changing its "
        "outcome.",
        "",
        "## How the exact numbers are computed",
        "",
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
        "confidence intervals.",
        "",
        (martingale_section(result["martingale"]) if result.get("martingale") else MARTINGALE_SECTION),
        "",
    ]
    return "\n".join(lines)


def martingale_section(illusion: dict, plot_name: str = "martingale.png") -> str:
    """The teaching page's Martingale section (Markdown)."""
    lines = [
        "## The Martingale illusion",
        "",
        f"A Martingale on banker doubles its stake after each loss (1, 2, 4, ... units) and stops "
        f"as soon as it is {illusion['goal']} units up, starting with {illusion['bankroll']} "
        f"units. When the next doubling would pass the table maximum, the series is abandoned "
        f"and its losses stay lost. {illusion['sessions']:,} sessions per table maximum, next to "
        f"flat one-unit banker bets on the same hands.",
        "",
        f"![martingale]({plot_name})",
        "",
        "| system | table max | P(small win) | P(loss) | average loss when it loses | "
        "average result | EV per unit wagered [95% CI] | exact edge |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in martingale_rows(illusion, PAGE):
        lines.append(
            f"| {c['system']} | {c['table_max']} | {c['p_goal']} | {c['p_loss']} | "
            f"{c['loss']} | {c['result']} | {c['ev']} {c['ev_ci']} | {c['exact']} |"
        )
    mart = [r for r in illusion["rows"] if r["system"] == "martingale"]
    best = max(mart, key=lambda r: r["p_goal"])
    lines += [
        "",
        "## What to notice",
        "",
        f"* **It usually wins, a little.** With a table maximum of {best['table_max']} units the "
        f"Martingale reaches +{illusion['goal']} in {100 * best['p_goal']:.1f}% of sessions.",
        f"* **It sometimes loses, a lot.** The other sessions lose {best['mean_loss_when_lost']:.0f} "
        f"units on average: many small wins pay for one large loss, and the table maximum (or the "
        f"bankroll) decides how large.",
        "* **The edge does not move.** Every line's EV per unit wagered agrees with the exact "
        "banker edge within its confidence interval: doubling changes the *shape* of the "
        "session results (a tall spike of small wins and a long tail of big losses), not the "
        "house's share of the money wagered. The average result of a session is that edge "
        "times the money wagered, whatever the staking plan.",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Figures and files
# --------------------------------------------------------------------------------------------------
def _numbers(*values: float | None) -> list[float]:
    """The values to plot, a null statistic (no finished session) as NaN, which is not drawn."""
    return [math.nan if v is None else v for v in values]


def plot(result: dict, path: Path) -> None:
    """P(target before ruin) and expected hands, vs start and vs target: exact lines, simulated bars."""
    plt = plotting.pyplot()
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
                p, lo, hi = _numbers(r["p_win"], *r["p_win_ci95"])
                axes[row, 0].errorbar(
                    x, p, yerr=[[p - lo], [hi - p]], fmt="o", ms=4, capsize=3, color=COLORS[bet]
                )
                h, hlo, hhi = _numbers(r["hands"], *r["hands_ci95"])
                axes[row, 1].errorbar(
                    x, h, yerr=[[h - hlo], [hhi - h]], fmt="o", ms=4, capsize=3, color=COLORS[bet]
                )
    any_entry = next(iter(result["exact"].values()))
    target, start = any_entry["vs_start"]["target"], any_entry["vs_target"]["start"]
    axes[0, 0].set(
        xlabel="starting bankroll (units)",
        ylabel="P(reach target before ruin)",
        title=f"target {target} units",
    )
    axes[0, 1].set(
        xlabel="starting bankroll (units)",
        ylabel="expected hands (ties included)",
        title=f"target {target} units",
    )
    axes[1, 0].set(
        xlabel="target (units)",
        ylabel="P(reach target before ruin)",
        title=f"start {start} units",
        yscale="log",
    )
    axes[1, 1].set(
        xlabel="target (units)", ylabel="expected hands (ties included)", title=f"start {start} units"
    )
    for ax in axes.flat:
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, title="lines exact; dots simulated, 95% CI", title_fontsize=8)
    plotting.save(fig, path)


def plot_martingale(illusion: dict, path: Path) -> None:
    """P(small win) and the average loss against the table maximum; histograms of session results."""
    plt = plotting.pyplot()
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
    twin.plot(
        x, [r["mean_loss_when_lost"] for r in mart], "o-", color="tab:red", label="average loss when it loses"
    )
    twin.set_ylabel("average loss when it loses (units)")
    left.set_title("Small wins often, large losses sometimes")
    # one legend below the axes: inside, it covered the bars of the largest table maxima
    handles = left.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    left.legend(
        handles,
        [h.get_label() for h in handles],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=2,
        fontsize=8,
        frameon=False,
    )
    edges = np.asarray(illusion["bin_edges"])
    for key, counts in illusion["histograms"].items():
        name, table_max = key.split("@")
        counts = np.asarray(counts, dtype=float)
        right.stairs(
            counts / (counts.sum() * np.diff(edges)),
            edges,
            label=f"{name}" + (f", max {table_max}" if name == "martingale" else ""),
        )
    right.set_yscale("log")
    right.set_xlabel("session result (units)")
    right.set_ylabel("density (log)")
    right.set_title("Distribution of session results")
    right.legend(fontsize=8)
    plotting.save(fig, path)


def write_outputs(result: dict, out: str | Path) -> list[str]:
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


__all__ = [
    "NAMES",
    "COLORS",
    "MARTINGALE_SECTION",
    "point_rows",
    "martingale_rows",
    "report",
    "teaching_page",
    "martingale_section",
    "plot",
    "plot_martingale",
    "write_outputs",
]
