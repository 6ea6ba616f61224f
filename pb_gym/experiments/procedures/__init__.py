"""The dealing-procedures study: what a continuous shuffler and the cut card's depth do to every edge.

``pb-gym experiment procedures CONFIG [--json] [--out DIR]``

For each procedure of the config (:class:`pb_gym.procedures.Dealing` with its cut card: the
hand-shuffled shoe, a continuous shuffling machine keeping the last 0, 1 or 5 hands' cards out, the
cut card 7 to 104 cards from the end) and each bet of the book (the atlas's, :mod:`pb_gym.experiments.atlas`),
hands are dealt by :class:`pb_gym.procedures.ProcedureDealer` (a hand-shuffled table deals its first
shoe; a CSM table ``csm_hands`` hands), and before every hand the exact EV of every bet is computed
from the cards unseen (every card seen counts). Two bettors per bet, as in the atlas:

* the perfect-information bettor, one unit whenever the exact EV is > 0: its gain per 100 hands
  ``100 x mean max(EV, 0)`` is the most any count can make of the procedure's compositions;
* the EoR count (tags from the effects of removal of the full shoe, :func:`counts.eor_tags`), its
  true-count threshold fitted on a separate training deal under the same procedure
  (:func:`counts.best_threshold`), scored by the exact EV of the hands it bets.

Figures per hand dealt with 95% CIs over tables (each table's hands are correlated, tables are
independent: :func:`pb_gym.ci.ratio_ci`).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from pb_gym import procedures
from pb_gym import rules as R
from pb_gym.ci import ratio_ci
from pb_gym.experiments import atlas
from pb_gym.experiments.common import study
from pb_gym.experiments.common.yaml_config import Strict
from pb_gym.experiments.counting import counts


class ProcedureConfig(Strict):
    """One procedure of the study."""

    name: str = Field(min_length=1, description="the procedure's row in the report")
    shuffle: Literal["hand", "csm"] = Field(
        "hand", description="hand: a shoe to the cut card; csm: a continuous shuffling machine"
    )
    csm_delay: int = Field(
        0,
        ge=0,
        le=procedures.MAX_CSM_DELAY,
        description="hands a dealt card waits before the CSM takes it back",
    )
    cut_card: int = Field(14, ge=6, description="cards behind the cut card (hand shuffle)")
    cut_range: tuple[int, int] | None = Field(
        None, description="(low, high): cards behind the cut drawn per shoe (hand shuffle); None: cut_card"
    )
    burn: Literal["rules", "value", "one_down", "one_up", "none"] = Field(
        "rules",
        description="after a shuffle: rules (the rules' burn), value (turn a card, burn its value), "
        "one_down, one_up (one card, shown) or none",
    )

    @model_validator(mode="after")
    def _valid(self) -> ProcedureConfig:
        self.dealing().check(R.Rules(cut_card=self.cut_card))  # the procedure's own errors, named
        return self

    def dealing(self) -> procedures.Dealing:
        """The :class:`pb_gym.procedures.Dealing` of this procedure."""
        return procedures.Dealing(
            shuffle=self.shuffle, csm_delay=self.csm_delay, cut_range=self.cut_range, burn=self.burn
        )


class ProceduresConfig(Strict):
    """``configs/experiments/procedures.yaml``."""

    decks: int = Field(8, ge=1, le=8, description="decks in the shoe")
    bets: Literal["all"] | tuple[str, ...] = Field(
        "all", description="all (the catalog) or a list of one or more names"
    )
    tables: int = Field(200, ge=2, description="tables dealt per procedure (the CIs' groups)")
    csm_hands: int = Field(80, ge=1, description="hands per CSM table (about a shoe's)")
    training_tables: int = Field(200, ge=2, description="tables of the deal that fits the thresholds")
    seed: int = Field(1, ge=0, description="seed of the main deal")
    training_seed: int = Field(1_000_001, ge=0, description="seed of the threshold deal (not seed)")
    max_tag: float = Field(10.0, gt=0, description="largest |tag| of the EoR count")
    procedures: tuple[ProcedureConfig, ...] = Field(
        (
            ProcedureConfig(name="hand-shuffled"),
            ProcedureConfig(name="csm-delay-0", shuffle="csm"),
            ProcedureConfig(name="csm-delay-1", shuffle="csm", csm_delay=1),
            ProcedureConfig(name="csm-delay-5", shuffle="csm", csm_delay=5),
        ),
        min_length=1,
        description="the dealing procedures compared, one row each",
    )

    @field_validator("bets")
    @classmethod
    def _some_bets(cls, bets: str | tuple[str, ...]) -> str | tuple[str, ...]:
        if not bets:  # (the bet book would read an empty list as every bet of the catalog)
            raise ValueError("an empty list is not allowed; allowed: all, or a list of one or more bet names")
        return bets


def deal(
    rules: R.Rules, dealing: procedures.Dealing, book: atlas.BetBook, tables: int, hands: int, seed: int
):
    """Yield ``(live tables, unseen, ev, payoff)`` hand by hand: a hand-shuffled table's first shoe, a
    CSM table's ``hands`` hands."""
    dealer = procedures.ProcedureDealer(rules, dealing, tables, seed)
    finished = np.zeros(tables, dtype=bool)
    for k in range(10**6):
        if dealing.shuffle == "csm" and k >= hands:
            return
        live = np.flatnonzero(~finished)
        if not live.size:
            return
        unseen = dealer.unseen()[live]
        ev = book.expected_values(unseen)
        hand = dealer.deal()
        yield live, unseen, ev, book.pay[hand["hand_class"][live]]
        finished |= dealer.shoe_over()


def run_procedure(
    config: ProceduresConfig, proc: ProcedureConfig, book: atlas.BetBook, tags: np.ndarray
) -> dict:
    """One procedure: the thresholds fitted on the training deal, then the main deal's figures."""
    rules = R.Rules(decks=config.decks, cut_card=proc.cut_card)
    dealing = proc.dealing()
    k = len(book.names)
    training_unseen, training_ev = [], []
    for _, unseen, ev, _ in deal(
        rules, dealing, book, config.training_tables, config.csm_hands, config.training_seed
    ):
        training_unseen.append(unseen)
        training_ev.append(ev)
    tu, te = np.concatenate(training_unseen), np.concatenate(training_ev)
    tc_training = counts.true_counts(tu, tags, rules.decks)
    thresholds = np.array([counts.best_threshold(tc_training[:, j], te[:, j])[0] for j in range(k)])
    n = config.tables
    sums = {key: np.zeros((n, k)) for key in ("gain", "positive", "count_ev", "count_bets", "payoff", "ev")}
    hands = np.zeros(n)
    for live, unseen, ev, payoff in deal(rules, dealing, book, n, config.csm_hands, config.seed):
        hands[live] += 1
        sums["gain"][live] += np.maximum(ev, 0.0)
        sums["positive"][live] += ev > 0
        bet = counts.true_counts(unseen, tags, rules.decks) >= thresholds[None, :]
        sums["count_ev"][live] += np.where(bet, ev, 0.0)
        sums["count_bets"][live] += bet
        sums["ev"][live] += ev
        sums["payoff"][live] += payoff
    per_bet = {}
    for j, name in enumerate(book.names):
        per_bet[name] = {
            "perfect_gain_per_hand": ratio_ci(sums["gain"][:, j], hands),
            "perfect_bet_rate": ratio_ci(sums["positive"][:, j], hands),
            "count_gain_per_hand": ratio_ci(sums["count_ev"][:, j], hands),
            "count_bet_rate": ratio_ci(sums["count_bets"][:, j], hands),
            "count_threshold": None if math.isinf(thresholds[j]) else float(thresholds[j]),
            "mean_ev_per_hand": ratio_ci(sums["ev"][:, j], hands),
            "payoff_minus_ev_per_hand": ratio_ci(sums["payoff"][:, j] - sums["ev"][:, j], hands),
        }
    return {
        "name": proc.name,
        "dealing": {
            "shuffle": proc.shuffle,
            "csm_delay": proc.csm_delay,
            "cut_card": proc.cut_card,
            "cut_range": None if proc.cut_range is None else list(proc.cut_range),
            "burn": proc.burn,
        },
        "tables": n,
        "hands": int(hands.sum()),
        "bets": per_bet,
    }


def run(config: ProceduresConfig, progress: bool = False) -> dict:
    """Every procedure of ``config`` (serially; with ``progress``, a line on stderr as each begins)."""
    rules = R.Rules(decks=config.decks)
    book = atlas.bet_book(rules, None if config.bets == "all" else tuple(config.bets))
    full = R.full_shoe(config.decks)
    eor = counts.effects_of_removal(full, book.expected_values)["eor"]
    tags = np.array([counts.eor_tags(eor[:, j], config.max_tag) for j in range(len(book.names))])
    rows = []
    for proc in config.procedures:
        if progress:
            print(f"procedures: {proc.name} ...", file=sys.stderr, flush=True)
        rows.append(run_procedure(config, proc, book, tags))
    return {"decks": config.decks, "bets": list(book.names), "procedures": rows}


def _per100(entry: dict) -> str:
    if entry["estimate"] is None:
        return "-"
    low, high = entry["ci95"]
    return f"{100 * entry['estimate']:.3f} [{100 * low:.3f}, {100 * high:.3f}]"


def best_bets(result: dict, top: int = 5) -> list[str]:
    """The bets with the largest perfect-information gain under the first procedure."""
    first = result["procedures"][0]["bets"]
    return sorted(first, key=lambda b: -first[b]["perfect_gain_per_hand"]["estimate"])[:top]


def markdown(result: dict, top: int = 5) -> str:
    """Per procedure: hands, and for the bets with the most to gain the two bettors' gain per 100 hands."""
    bets = best_bets(result, top)
    lines = [
        f"{result['decks']} decks; units per 100 hands dealt, 95% CIs over tables; the {top} bets with "
        "the largest perfect-information gain under the first procedure, then the best of every bet",
        "",
        "| procedure | hands | bet | perfect information | EoR count |",
        "|---|---|---|---|---|",
    ]
    for proc in result["procedures"]:
        for bet in bets:
            entry = proc["bets"][bet]
            lines.append(
                f"| {proc['name']} | {proc['hands']:,} | {bet} | {_per100(entry['perfect_gain_per_hand'])} "
                f"| {_per100(entry['count_gain_per_hand'])} |"
            )
        best = max(proc["bets"], key=lambda b: proc["bets"][b]["perfect_gain_per_hand"]["estimate"])
        count = max(proc["bets"], key=lambda b: proc["bets"][b]["count_gain_per_hand"]["estimate"])
        lines.append(
            f"| {proc['name']} | | best perfect: {best}; best count: {count} "
            f"| {_per100(proc['bets'][best]['perfect_gain_per_hand'])} "
            f"| {_per100(proc['bets'][count]['count_gain_per_hand'])} |"
        )
    return "\n".join(lines)


def report(result: dict) -> str:
    return "Dealing procedures: the most a count can gain, and the EoR count's gain\n" + markdown(result)


FIGURE_BETS = ("three_giving_eight", "dragon7", "panda8", "player_pair")
"""The bets of ``procedures.png`` where the config deals them: the side bets the results page reports
(3 Giving 8 and Dragon 7, the counted bets with the most to gain; Panda 8; a pair bet, which needs the
shoe's very end). Other configs fill the panels with their bets of largest perfect-information gain."""
FIGURE_PANELS = 4
OKABE_ITO = {"blue": "#0072B2", "vermilion": "#D55E00", "grey": "#999999"}
"""Okabe and Ito's colours, told apart with every common colour-vision deficiency (the markers and
line styles tell the bettors apart in grey print too)."""
BETTORS = (
    ("perfect_gain_per_hand", "perfect information (bets when the exact EV > 0)", "blue", "o", "-"),
    ("count_gain_per_hand", "EoR count (threshold fitted on another deal)", "vermilion", "s", "--"),
)
"""The two bettors of the figure: the result's key, legend label, colour, marker and line style."""


def figure_bets(result: dict) -> list[str]:
    """The bets drawn in ``procedures.png``: those of :data:`FIGURE_BETS` the run dealt, then the
    others by perfect-information gain under the first procedure; :data:`FIGURE_PANELS` at most."""
    chosen = [b for b in FIGURE_BETS if b in result["bets"]]
    ranked = best_bets(result, len(result["bets"]))
    return (chosen + [b for b in ranked if b not in chosen])[:FIGURE_PANELS]


def _bet_title(name: str, decks: int) -> str:
    from pb_gym import catalog

    bet = catalog.catalog(R.Rules(decks=decks)).get(name)
    return bet.title if bet is not None and bet.title else name


def _figure_rows(result: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """The procedures the figure draws, each group sorted along its axis: the hand-shuffled shoe at
    each cut card's depth (with the rules' burn only: one point per depth), the cuts drawn per shoe,
    and the continuous shufflers. The other burns are in the tables only."""
    hand = [p for p in result["procedures"] if p["dealing"]["shuffle"] == "hand"]
    depths = [p for p in hand if p["dealing"]["cut_range"] is None and p["dealing"]["burn"] == "rules"]
    ranges = [p for p in hand if p["dealing"]["cut_range"] is not None]
    csm = [p for p in result["procedures"] if p["dealing"]["shuffle"] == "csm"]
    depths.sort(key=lambda p: p["dealing"]["cut_card"])
    csm.sort(key=lambda p: p["dealing"]["csm_delay"])
    return depths, ranges, csm


def _gains(rows: list[dict], bet: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Per 100 hands: the estimates and their CI's distances below and above (for ``errorbar``)."""
    entries = [row["bets"][bet][key] for row in rows]
    est = np.array([100 * (e["estimate"] or 0.0) for e in entries])
    low = np.array([100 * e["ci95"][0] if e["ci95"] else 100 * (e["estimate"] or 0.0) for e in entries])
    high = np.array([100 * e["ci95"][1] if e["ci95"] else 100 * (e["estimate"] or 0.0) for e in entries])
    return est, np.vstack([np.maximum(est - low, 0.0), np.maximum(high - est, 0.0)])


def _draw_csm(ax, csm: list[dict], bet: str) -> None:
    """The continuous shufflers, one column per delay: every gain 0 or within a hair of it."""
    x = np.arange(len(csm))
    for (key, _, colour, marker, _), shift in zip(BETTORS, (-0.12, 0.12), strict=True):
        est, err = _gains(csm, bet, key)
        ax.errorbar(x + shift, est, yerr=err, fmt=marker, color=OKABE_ITO[colour], ms=6, capsize=3)
    ax.set_xticks(x, [str(p["dealing"]["csm_delay"]) for p in csm])
    # (the gains are too small to see at the shoe's scale: their size is written out)
    top = max(100 * (p["bets"][bet][key]["estimate"] or 0.0) for p in csm for key, *_ in BETTORS)
    note = "every gain\nexactly 0" if top == 0 else f"largest gain\n{top:.2g}"
    ax.text(0.5, 0.5, note, transform=ax.transAxes, ha="center", va="center", fontsize=9, color="0.25")
    ax.set_xlim(-0.6, len(csm) - 0.4)
    ax.set_xlabel("hands kept out")
    ax.set_title("continuous shuffler", fontsize=9.5)
    ax.set_facecolor("#F2F2F2")  # (a panel of another kind of dealing, not a continuation of the axis)


def _draw_depths(ax, depths: list[dict], ranges: list[dict], bet: str) -> None:
    """The hand-shuffled shoe against the cut card's depth (a log axis where the depths span a factor
    of 4 or more: each halving of the cut then takes the same width), and the cuts drawn per shoe as
    a segment over their range."""
    cuts = np.array([p["dealing"]["cut_card"] for p in depths], dtype=float)
    log = cuts.size > 1 and cuts.max() >= 4 * cuts.min()
    for (key, _, colour, marker, style), shift in zip(BETTORS, (0.96, 1.04), strict=True):
        est, err = _gains(depths, bet, key)
        x = cuts * shift if log else cuts + (shift - 1) * 25
        ax.errorbar(x, est, yerr=err, fmt=marker + style, color=OKABE_ITO[colour], ms=6, capsize=3, lw=1.6)
    for row in ranges:  # (the perfect-information gain: a count's is within a few percent of it)
        low, high = row["dealing"]["cut_range"]
        gain = 100 * (row["bets"][bet]["perfect_gain_per_hand"]["estimate"] or 0.0)
        ax.plot([low, high], [gain, gain], ":", color=OKABE_ITO["grey"], lw=2.2)
    if all(row["bets"][bet]["count_threshold"] is None for row in depths):
        ax.text(
            0.97,
            0.93,
            "the EoR count never bets it: no\nthreshold paid on the training deal",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=9,
            color=OKABE_ITO["vermilion"],
        )
    if log:
        ax.set_xscale("log")
        ax.set_xticks(cuts, [f"{c:.0f}" for c in cuts])
        ax.minorticks_off()
    ax.set_xlabel("cards behind the cut card" + (" (log scale)" if log else ""))
    ax.set_title("hand-shuffled shoe, dealt to the cut card", fontsize=9.5)


def _draw_bet(panel, result: dict, bet: str, rows: tuple[list[dict], list[dict], list[dict]]) -> None:
    depths, ranges, csm = rows
    groups = [g for g in (csm, depths) if g]
    axes = panel.subplots(1, len(groups), sharey=True, width_ratios=[1, 3.6][-len(groups) :] if csm else None)
    axes = list(np.atleast_1d(axes))
    if csm:
        _draw_csm(axes[0], csm, bet)
    if depths:
        _draw_depths(axes[-1], depths, ranges, bet)
    for ax in axes:
        ax.axhline(0, color="black", lw=0.8)
        ax.grid(axis="y", color="#DDDDDD", lw=0.6)
        ax.set_axisbelow(True)
    axes[0].set_ylabel("units won per 100 hands dealt")
    axes[0].set_ylim(bottom=min(0.0, axes[0].get_ylim()[0]))
    panel.suptitle(
        f"{_bet_title(bet, result['decks'])}: gain per 100 hands dealt",
        fontsize=11.5,
        weight="bold",
    )


def plot(result: dict, path: Path) -> Path:
    """``procedures.png``: for each of :func:`figure_bets`, the two bettors' gain per 100 hands with
    their 95% CIs, the continuous shufflers beside the hand-shuffled shoe's cut card depths."""
    from matplotlib.lines import Line2D

    from pb_gym.experiments.common import plotting

    plt = plotting.pyplot()
    bets = figure_bets(result)
    rows = _figure_rows(result)
    ncols = 2 if len(bets) > 1 else 1
    nrows = -(-len(bets) // ncols)
    fig = plt.figure(figsize=(6 * ncols, 0.6 + 3.7 * nrows), layout="constrained")
    panels = np.atleast_1d(fig.subfigures(nrows, ncols, wspace=0.03, hspace=0.05)).ravel()
    for panel, bet in zip(panels, bets, strict=False):
        _draw_bet(panel, result, bet, rows)
    handles = [
        Line2D([], [], color=OKABE_ITO[colour], marker=marker, ls=style, label=label)
        for _, label, colour, marker, style in BETTORS
    ]
    if rows[1]:
        spans = sorted({tuple(row["dealing"]["cut_range"]) for row in rows[1]})
        label = (
            f"cut drawn per shoe, {', '.join(f'{lo}-{hi}' for lo, hi in spans)} cards (perfect information)"
        )
        handles.append(Line2D([], [], color=OKABE_ITO["grey"], ls=":", lw=2.2, label=label))
    tables = {p["tables"] for p in result["procedures"]}
    fig.suptitle(
        f"What the dealing procedure leaves a counter: {result['decks']} decks, units per 100 hands dealt, "
        f"95% CIs over {'/'.join(map(str, sorted(tables)))} tables",
        fontsize=12,
    )
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=9, frameon=False)
    return plotting.save(fig, path, tight=False)


OUTPUT_NAMES = ("procedures.json", "procedures.csv", "procedures.md", "procedures.png")


def write_outputs(result: dict, folder: Path) -> list[Path]:
    """``procedures.json``, ``procedures.csv`` (a row per procedure and bet), ``procedures.md`` and
    ``procedures.png`` (:func:`plot`)."""
    from pb_gym.experiments.common import plotting

    figures = ["perfect_gain_per_hand", "perfect_bet_rate", "count_gain_per_hand", "count_bet_rate"]
    rows = [
        {"procedure": proc["name"], "bet": bet, **{f: entry[f]["estimate"] for f in figures}}
        for proc in result["procedures"]
        for bet, entry in proc["bets"].items()
    ]
    fields = ["procedure", "bet", *figures]
    written = study.write_table_files("procedures", result, folder, fields, rows, markdown(result))
    png = folder / "procedures.png"
    return written + plotting.drawn_or_noted(lambda: [plot(result, png)], folder, [png.name])


main = study.command("procedures", ProceduresConfig, OUTPUT_NAMES, run, write_outputs, report, serial=True)
"""``pb-gym experiment procedures CONFIG``: the study's entry point
(:func:`pb_gym.experiments.common.study.command`)."""

__all__ = [
    "ProceduresConfig",
    "best_bets",
    "deal",
    "figure_bets",
    "main",
    "markdown",
    "plot",
    "report",
    "run",
    "write_outputs",
]
