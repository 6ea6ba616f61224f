"""The atlas's report (:mod:`pb_gym.experiments.atlas`): the ranked table as Markdown and CSV, the integer
counts, the published figures beside ours, the text report, the plot and the files ``--out`` receives."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from pb_gym import rules as R
from pb_gym import strict_json
from pb_gym.experiments.common import plotting
from pb_gym.experiments.counting.advantage import advantage_table

# --------------------------------------------------------------------------------------------------
# 6. Report: ranked table (Markdown, CSV), text, plot
# --------------------------------------------------------------------------------------------------
TABLE_COLUMNS = (
    ("rank", "rank"),
    ("bet", "bet"),
    ("house_edge_pct", "house edge %"),
    ("hands_ev_positive_pct", "hands EV>0 %"),
    ("perfect_units_per_100_hands", "perfect info: units/100 hands"),
    ("perfect_units_per_shoe", "perfect info: units/shoe"),
    ("eor_count_units_per_100_hands", "EoR count: units/100 hands"),
    ("eor_count_share_of_perfect_pct", "EoR count: % of perfect"),
    ("eor_count_bet_frequency_pct", "EoR count: hands bet %"),
    ("eor_count_average_edge_pct", "EoR count: edge when betting %"),
    ("eor_count_di", "EoR count: DI"),
    ("eor_count_risk_of_ruin_pct", "EoR count: risk of ruin %"),
    ("integer_count_units_per_100_hands", "integer count: units/100 hands"),
    ("integer_count_share_of_perfect_pct", "integer count: % of perfect"),
    ("cut_card_effect_pct", "cut-card effect %"),
)
"""The ranked table's columns: (CSV key, Markdown header)."""


def table_rows(result: dict) -> list[dict]:
    """One row per bet, in rank order, as numbers (CSV) with their CIs (``*_ci95``)."""
    rows = []
    for rank, name in enumerate(result["ranking"], 1):
        b = result["bets"][name]
        perfect, eor_count, integer = (b["perfect_information"], b["counts"]["eor"], b["counts"]["integer"])

        def pair(entry: dict, factor: float = 1.0) -> tuple:
            if entry["estimate"] is None:
                return None, None
            return entry["estimate"] * factor, [v * factor for v in entry["ci95"]]

        row: dict = {"rank": rank, "bet": name, "house_edge_pct": 100 * b["house_edge"]}
        for key, entry, factor in (
            ("hands_ev_positive_pct", b["share_positive"], 100.0),
            ("perfect_units_per_100_hands", perfect["units_per_100_hands"], 1.0),
            ("perfect_units_per_shoe", perfect["units_per_shoe"], 1.0),
            ("eor_count_units_per_100_hands", eor_count["units_per_100_hands"], 1.0),
            ("eor_count_bet_frequency_pct", eor_count["bet_frequency"], 100.0),
            ("eor_count_average_edge_pct", eor_count["average_edge"], 100.0),
            ("integer_count_units_per_100_hands", integer["units_per_100_hands"], 1.0),
            ("cut_card_effect_pct", b["cut_card_effect"], 100.0),
        ):
            row[key], row[f"{key}_ci95"] = pair(entry, factor)
        advantage = eor_count.get("advantage", {})
        row["eor_count_di"] = advantage.get("di")
        barrier = advantage.get("double_barrier")
        row["eor_count_risk_of_ruin_pct"] = None if barrier is None else 100 * barrier["p_ruin"]
        row["eor_count_risk_of_ruin_pct_ci95"] = (
            None if barrier is None else [100 * v for v in barrier["p_ruin_ci95"]]
        )
        for key, count in (
            ("eor_count_share_of_perfect_pct", eor_count),
            ("integer_count_share_of_perfect_pct", integer),
        ):
            share = count["share_of_perfect_information_gain"]
            row[key] = None if share is None else 100 * share
        rows.append(row)
    return rows


def to_csv(result: dict) -> str:
    """The ranked table as CSV (numbers; 95% CI bounds in ``*_lo`` / ``*_hi`` columns)."""
    rows = table_rows(result)
    keys = [k for k, _ in TABLE_COLUMNS]
    header = []
    for key in keys:
        header.append(key)
        if f"{key}_ci95" in rows[0]:
            header += [f"{key}_lo", f"{key}_hi"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        line = []
        for key in keys:
            line.append("" if row[key] is None else row[key])
            if f"{key}_ci95" in row:
                ci = row[f"{key}_ci95"]
                line += ["", ""] if ci is None else ci
        writer.writerow(line)
    return buffer.getvalue()


def _cell(value: float | None, ci: list | None = None, digits: int = 2, signed: bool = True) -> str:
    if value is None:
        return "n/a"
    fmt = f"{{:{'+' if signed else ''}.{digits}f}}"
    text = fmt.format(value)
    if ci is not None:
        text += f" [{fmt.format(ci[0])}, {fmt.format(ci[1])}]"
    return text


def to_markdown(result: dict) -> str:
    """The ranked table as Markdown (95% CIs over shoes in brackets)."""
    rows = table_rows(result)
    headers = [h for _, h in TABLE_COLUMNS]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        cells = [
            str(row["rank"]),
            f"`{row['bet']}`",
            _cell(row["house_edge_pct"], digits=4, signed=False),
            _cell(row["hands_ev_positive_pct"], digits=2, signed=False),
            _cell(row["perfect_units_per_100_hands"], row["perfect_units_per_100_hands_ci95"], digits=3),
            _cell(row["perfect_units_per_shoe"], digits=3),
            _cell(row["eor_count_units_per_100_hands"], row["eor_count_units_per_100_hands_ci95"], digits=3),
            _cell(row["eor_count_share_of_perfect_pct"], digits=0, signed=False),
            _cell(row["eor_count_bet_frequency_pct"], digits=2, signed=False),
            _cell(row["eor_count_average_edge_pct"], digits=2),
            _cell(row["eor_count_di"], digits=2, signed=False),
            _cell(
                row["eor_count_risk_of_ruin_pct"],
                row["eor_count_risk_of_ruin_pct_ci95"],
                digits=1,
                signed=False,
            ),
            _cell(row["integer_count_units_per_100_hands"], digits=3),
            _cell(row["integer_count_share_of_perfect_pct"], digits=0, signed=False),
            _cell(row["cut_card_effect_pct"], row["cut_card_effect_pct_ci95"], digits=4),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def counts_markdown(result: dict) -> str:
    """The integer counts a player can use, in rank order: tags for A, 2, ..., 9 and the ten-value
    cards, the true count to bet at (running count / decks unseen), and what the count earns."""
    values = [*R.RANKS[:9], "T"]
    lines = [
        "| bet | " + " | ".join(values) + " | bet at true count >= | hands bet | units/100 hands |",
        "|---|" + "---|" * (len(values) + 3),
    ]
    for name in result["ranking"]:
        count = result["bets"][name]["counts"]["integer"]
        if count["threshold"] is None:
            continue
        tags = [count["tags"][rank] for rank in R.RANKS[:10]]
        lines.append(
            f"| `{name}` | "
            + " | ".join(f"{t:+.0f}" if t else "0" for t in tags)
            + f" | {count['threshold']:.2f} | {100 * count['bet_frequency']['estimate']:.2f}% | "
            f"{count['units_per_100_hands']['estimate']:+.3f} |"
        )
    return "\n".join(lines)


def _any_integer_count(result: dict) -> bool:
    return any(result["bets"][n]["counts"]["integer"]["threshold"] is not None for n in result["ranking"])


def pair_counts_markdown(result: dict) -> str:
    """The suited bets' pair counts (bet when the :func:`pb_gym.experiments.atlas.pair_share` of the unseen
    cards is at least the threshold), in rank order; empty without a suited bet."""
    lines = [
        "| bet | bet at pair share >= | hands bet | units/100 hands [95% CI] | share of perfect |",
        "|---|---|---|---|---|",
    ]
    for name in result["ranking"]:
        count = result["bets"][name]["counts"].get("pair")
        if count is None:
            continue
        gain, share = count["units_per_100_hands"], count["share_of_perfect_information_gain"]
        threshold = "never" if count["threshold"] is None else f"{count['threshold']:.6f}"
        lines.append(
            f"| `{name}` | {threshold} | {100 * count['bet_frequency']['estimate']:.2f}% | "
            f"{_cell(gain['estimate'], gain['ci95'], 3)} | "
            f"{'n/a' if share is None else f'{100 * share:.0f}%'} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def published_markdown(result: dict) -> str:
    """The published figures beside ours (Markdown), one row per figure."""
    lines = [
        "| bet | source | figure | published | ours [95% CI] | compared with | agrees |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in result["ranking"]:
        for p in result["bets"][name]["published"]:
            source = (
                p["source"].split(",")[0] + ", " + p["source"].split("'")[1]
                if "'" in p["source"]
                else p["source"]
            )
            if p["house_edge"] is not None:
                h = p["house_edge"]
                lines.append(
                    f"| `{name}` | {source} | house edge % | {100 * h['published']:.3f} | "
                    f"{100 * h['ours']:.4f} (exact) | full shoe | "
                    f"{'yes' if h['agrees'] else 'NO'} |"
                )
            for key, f in p["figures"].items():
                pct = key in ("bet_frequency", "average_edge")
                factor = 100.0 if pct else 1.0
                ours = (
                    "n/a"
                    if f["ours"] is None
                    else (
                        f"{factor * f['ours']:.3f} [{factor * f['ci95'][0]:.3f}, {factor * f['ci95'][1]:.3f}]"
                    )
                )
                verdict = (
                    f.get("note") or "not judged (other rules)"
                    if f["agrees"] is None
                    else "yes"
                    if f["agrees"]
                    else "no" + (f" ({f['note']})" if f.get("note") else "")
                )
                label = key.replace("_", " ") + (" %" if pct else "")
                lines.append(
                    f"| `{name}` | {source} | {label} | {factor * f['published']:.3f} | "
                    f"{ours} | {p['compared_with']} | {verdict} |"
                )
    return "\n".join(lines) if len(lines) > 2 else ""


def advantage_markdown(result: dict) -> str:
    """:func:`pb_gym.experiments.counting.advantage.advantage_table` of every count that bets, in rank
    order."""
    rows = []
    for name in result["ranking"]:
        entry = result["bets"][name]["counts"]
        for kind, count in (
            [("EoR", entry["eor"]), ("integer", entry["integer"])]
            + [("pair", c) for c in [entry.get("pair")] if c is not None]
            + [("published", c) for c in entry.get("published", [])]
        ):
            if "note" not in count.get("advantage", {"note": ""}):
                rows.append((f"`{name}` {kind} count", count["advantage"]))
    return advantage_table(rows, result["advantage"]) if rows else "(no count bets)"


def report(result: dict) -> str:
    """The human-readable report."""
    r = result["rules"]
    lines = [
        f"Counting atlas: {len(result['ranking'])} bets, {result['shoes']:,} shoes, "
        f"{result['hands']:,} hands ({result['hands_per_shoe']:.2f} per shoe); {r['decks']} decks, "
        f"burn {r['burn']}, cut card {r['cut_card']}; thresholds fitted on a separate deal of "
        f"{result['training']['shoes']:,} shoes",
        f"time: main deal {result['timings']['main_deal_s']:.1f} s, total "
        f"{result['timings']['total_s']:.1f} s; exchangeability check max error "
        f"{result['exchangeability_max_error']:.1e}",
        "",
        "Ranked by the EoR count's gain (units per 100 hands dealt, one unit per bet; [95% CI over shoes]):",
        "",
        to_markdown(result),
    ]
    published = published_markdown(result)
    if published:
        lines += ["", "Published count figures beside ours:", "", published]
    lines += [
        "",
        "The integer counts (balanced; tags of the cards seen, summed, per deck unseen):",
        "",
        counts_markdown(result),
    ]
    pairs = pair_counts_markdown(result)
    if pairs:
        lines += [
            "",
            "The suited bets' pair counts (the pair share of the unseen cards by rank and suit):",
            "",
            pairs,
        ]
    lines += [
        "",
        "The advantage player's figures of every count that bets, in rank order (one unit a bet; win "
        "rate = exact EV per hand bet, SD from the dealt payoffs; the double barrier resamples the "
        "dealt shoes; [95% CI]):",
        "",
        advantage_markdown(result),
    ]
    significant = [n for n in result["ranking"] if result["bets"][n]["cut_card_effect_significant"]]
    together = [n for n in result["ranking"] if result["bets"][n]["cut_card_effect_significant_all_bets"]]
    lines += [
        "",
        "Cut-card effect (average exact EV per hand dealt minus the full-shoe EV): significant "
        f"at 95% bet by bet for {', '.join(significant) if significant else 'none'} "
        f"({len(significant)} of {len(result['ranking'])}); at 95% for all bets together "
        f"(Bonferroni): {', '.join(together) if together else 'none'}",
    ]
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    """Gain per 100 hands, perfect information vs the counts, one group of bars per bet, in rank order
    (log scale: the gains span four orders of magnitude; a bet no count beats has no count bar)."""
    plt = plotting.pyplot()
    names = result["ranking"]
    y = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(9, 1.4 + 0.24 * len(names)))
    floor = 1e-3  # units per 100 hands: the left edge of the log axis

    def figures(get):
        est, lo, hi = [], [], []
        for n in names:
            e = get(result["bets"][n])["units_per_100_hands"]
            value = e["estimate"] or 0.0
            est.append(value)
            lo.append(value - max(e["ci95"][0], floor) if e["ci95"] and value > floor else 0.0)
            hi.append(e["ci95"][1] - value if e["ci95"] and value > floor else 0.0)
        return np.array(est), np.array([lo, hi])

    perfect, _ = figures(lambda b: b["perfect_information"])
    ax.barh(
        y,
        np.where(perfect > floor, perfect, 0),
        height=0.85,
        left=0,
        color="#c6dbef",
        label="perfect information (the bound)",
    )
    series = (
        ("EoR count (tags from the effects of removal)", lambda b: b["counts"]["eor"], "#2171b5", -0.18),
        ("balanced integer count", lambda b: b["counts"]["integer"], "#fd8d3c", 0.18),
    )
    for label, get, color, offset in series:
        value, err = figures(get)
        shown = value > floor
        ax.barh(
            y[shown] + offset,
            value[shown],
            height=0.32,
            color=color,
            label=label,
            xerr=err[:, shown],
            error_kw={"elinewidth": 0.6, "capsize": 1.5},
        )
    first = True
    for i, n in enumerate(names):
        for p in result["bets"][n]["published"]:
            figure = p["figures"].get("units_per_100_hands")
            if figure is not None:
                ax.plot(
                    figure["published"],
                    i,
                    marker="x",
                    color="black",
                    markersize=6,
                    linestyle="none",
                    label="published count" if first else None,
                )
                first = False
    ax.set_yticks(y, names, fontsize=7)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xscale("log")
    ax.set_xlim(left=floor)
    ax.set_xlabel("units won per 100 hands dealt, one unit per bet (log scale; bars: 95% CI over shoes)")
    ax.grid(axis="x", which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="lower right")
    r = result["rules"]
    ax.set_title(
        f"The counting atlas: {len(names)} bets, {r['decks']} decks, cut card {r['cut_card']}, "
        f"{result['shoes']:,} shoes",
        fontsize=10,
    )
    plotting.save(fig, path)


OUTPUT_NAMES = ("atlas.json", "atlas.csv", "atlas.md", "atlas.txt", "atlas.png")
"""The files ``--out`` receives (a reused ``--out`` folder may hold only these)."""


def write_outputs(result: dict, folder: Path) -> list[Path]:
    """The atlas's files, written into ``folder`` (:data:`OUTPUT_NAMES`)."""
    (folder / "atlas.json").write_text(strict_json.dumps(result, indent=1))
    (folder / "atlas.csv").write_text(to_csv(result))
    sections = [
        (
            "Ranked by the EoR count's gain (units per 100 hands dealt; 95% CIs over shoes)",
            to_markdown(result),
        ),
        ("Published count figures beside ours", published_markdown(result)),
        ("The integer counts", counts_markdown(result) if _any_integer_count(result) else ""),
        ("The suited bets' pair counts", pair_counts_markdown(result)),
        ("The advantage player's figures", advantage_markdown(result)),
    ]
    # a section with nothing to show (no published count, no count that bets) is left out
    (folder / "atlas.md").write_text(
        "\n\n".join(f"## {title}\n\n{body}" for title, body in sections if body) + "\n"
    )
    (folder / "atlas.txt").write_text(report(result) + "\n")
    plot(result, folder / "atlas.png")
    return [folder / n for n in OUTPUT_NAMES]


__all__ = [
    "OUTPUT_NAMES",
    "TABLE_COLUMNS",
    "advantage_markdown",
    "counts_markdown",
    "pair_counts_markdown",
    "plot",
    "published_markdown",
    "report",
    "table_rows",
    "to_csv",
    "to_markdown",
    "write_outputs",
]
