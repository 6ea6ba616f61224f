"""Which convention reproduces a published count's figures: one deal, every convention replayed on it.

A published count gives its tags and a trigger ("bet when the true count is at least +2"), but the
figures it reports (the share of hands bet, the average edge on them, the win per 100 hands dealt)
also depend on conventions its source may not state: the true count's divisor (decks unseen, half
decks, whole decks rounded), the trigger's comparison (>= or >), the rounding of the true count, the
running count's start, whether the burned cards are counted, and the shoe's cut. This module deals
one set of shoes with the exact EV of the bet before every hand (:func:`pb_gym.experiments.atlas.deal_hands`)
and replays the count under each convention on the same hands, so the conventions differ by their
rule alone; a different cut or burn rule is a deal of its own.

``pb-gym experiment`` does not run it; it is a script:
``python -m pb_gym.experiments.atlas.conventions [--shoes N] [--json PATH]`` prints the tables of
docs/guides/advantage.md (Jacobson's 3 Giving 8): every convention at the published trigger, then each
way of counting with its trigger moved to the published share of hands (:func:`at_frequency`), beside
perfect information.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pb_gym import engine
from pb_gym import rules as R
from pb_gym.experiments import atlas
from pb_gym.experiments.atlas.published import PUBLISHED, PUBLISHED_RULES, Published
from pb_gym.experiments.counting.advantage import jacobson_di
from pb_gym.experiments.counting.counts import tags_by_rank


def deal(rules: R.Rules, bet: str, n_shoes: int, seed: int) -> dict[str, np.ndarray]:
    """Every hand of the first shoe of ``n_shoes`` tables: ``seen`` (hands, 13; the cards a player has
    seen before the hand, the face-up burn card included), ``burn_up`` (the face-up burn card's
    rank, or -1), ``burn_down`` (hands, 13; the cards burned face down), ``unseen`` (cards unseen),
    ``ev`` (the bet's exact EV before the hand), ``payoff`` (the dealt net win of one unit) and
    ``shoe`` (the table)."""
    book = atlas.bet_book(rules, (bet,))
    state = engine.init(rules, n_shoes, seed=seed)
    full = R.full_shoe(rules.decks)[None, :]
    shown = full - state.unseen.astype(np.int64)  # before any hand: the face-up burn card only
    up = np.where(shown.sum(axis=1) > 0, shown.argmax(axis=1), -1)
    down = state.unseen.astype(np.int64) - state.counts.astype(np.int64)
    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("unseen", "ev", "payoff", "shoe")}
    for tables, unseen, ev, payoff, _ in atlas.deal_hands(rules, book, n_shoes, seed, state=state):
        rows["unseen"].append(unseen.astype(np.int16))
        rows["ev"].append(ev[:, 0])
        rows["payoff"].append(payoff[:, 0])
        rows["shoe"].append(tables)
    out = {k: np.concatenate(v) for k, v in rows.items()}
    out["seen"] = full - out["unseen"].astype(np.int64)
    out["burn_up"] = up[out["shoe"]]
    out["burn_down"] = down[out["shoe"]]
    return out


Convention = Callable[[dict[str, np.ndarray], np.ndarray, float], np.ndarray]
"""``(deal, tags by rank, trigger) -> hands bet`` (a boolean per hand of the deal)."""


def _running(hands: dict, tags: np.ndarray, up: bool = True, down: bool = False, start: float = 0.0):
    seen = hands["seen"].astype(np.float64)
    if not up:  # the face-up burn card not counted
        has = hands["burn_up"] >= 0
        seen[np.flatnonzero(has), hands["burn_up"][has]] -= 1
    if down:  # the face-down burned cards counted too (a simulation's view, not a player's)
        seen = seen + hands["burn_down"]
    return start + seen @ tags


def _decks(hands: dict, seen_down: bool = False) -> np.ndarray:
    """Decks unseen (or, with ``seen_down``, decks left in the shoe)."""
    cards = hands["unseen"].sum(axis=1).astype(np.float64)
    if seen_down:
        cards = cards - hands["burn_down"].sum(axis=1)
    return cards / R.CARDS_PER_DECK


def conventions() -> dict[str, Convention]:
    """The conventions tried, by a one-line description: the baseline (running count over decks
    unseen, >= the trigger) first, then one change each."""
    rc, decks = _running, _decks
    return {
        "running / decks unseen, >= trigger (baseline)": lambda h, t, x: rc(h, t) / decks(h) >= x,
        "comparison >: true count > trigger": lambda h, t, x: rc(h, t) / decks(h) > x,
        "divisor half-decks unseen": lambda h, t, x: rc(h, t) / (2 * decks(h)) >= x,
        "divisor cards unseen": lambda h, t, x: rc(h, t) / (R.CARDS_PER_DECK * decks(h)) >= x,
        "divisor decks rounded to the nearest half deck": lambda h, t, x: (
            rc(h, t) / np.maximum(np.round(2 * decks(h)) / 2, 0.5) >= x
        ),
        "divisor decks rounded to the nearest deck": lambda h, t, x: (
            rc(h, t) / np.maximum(np.round(decks(h)), 1) >= x
        ),
        "divisor decks rounded up (whole decks)": lambda h, t, x: rc(h, t) / np.ceil(decks(h)) >= x,
        "divisor decks rounded down (at least 1)": lambda h, t, x: (
            rc(h, t) / np.maximum(np.floor(decks(h)), 1) >= x
        ),
        "divisor decks dealt (cards seen / 52)": lambda h, t, x: (
            rc(h, t) / np.maximum(h["seen"].sum(axis=1) / 52, 1 / 52) >= x
        ),
        "divisor the shoe's 8 decks (running count / 8)": lambda h, t, x: rc(h, t) / 8 >= x,
        "divisor the shoe's 8 decks, > trigger": lambda h, t, x: rc(h, t) / 8 > x,
        "true count truncated to an integer, >= trigger": lambda h, t, x: np.trunc(rc(h, t) / decks(h)) >= x,
        "true count rounded to the nearest integer": lambda h, t, x: np.round(rc(h, t) / decks(h)) >= x,
        "true count floored, > trigger": lambda h, t, x: np.floor(rc(h, t) / decks(h)) > x,
        "running count starts at -4": lambda h, t, x: rc(h, t, start=-4.0) / decks(h) >= x,
        "running count starts at +4": lambda h, t, x: rc(h, t, start=4.0) / decks(h) >= x,
        "face-up burn card not counted": lambda h, t, x: rc(h, t, up=False) / decks(h) >= x,
        "face-down burned cards counted (shoe's own decks)": lambda h, t, x: (
            rc(h, t, down=True) / decks(h, seen_down=True) >= x
        ),
        "running count >= trigger (no divisor)": lambda h, t, x: rc(h, t) >= x,
        "running count >= 4 x trigger": lambda h, t, x: rc(h, t) >= 4 * x,
    }


def figures(hands: dict, bet: np.ndarray, published: Published, house_edge: float) -> dict:
    """Bet frequency, average edge (exact EV on the hands bet), units per 100 hands dealt and
    Jacobson's DI, each with a 95% CI from the shoes' sums (shoes are independent; hands in a
    shoe are not)."""
    n_shoes = int(hands["shoe"].max()) + 1
    per = {
        "dealt": np.bincount(hands["shoe"], minlength=n_shoes).astype(np.float64),
        "bet": np.bincount(hands["shoe"], weights=bet.astype(np.float64), minlength=n_shoes),
        "ev": np.bincount(hands["shoe"], weights=np.where(bet, hands["ev"], 0.0), minlength=n_shoes),
    }

    def ratio(top: np.ndarray, bottom: np.ndarray) -> tuple[float, float]:
        if not bottom.sum():
            return float("nan"), float("nan")
        r = top.sum() / bottom.sum()
        residual = top - r * bottom
        se = math.sqrt(n_shoes / max(n_shoes - 1, 1) * float((residual**2).sum())) / bottom.sum()
        return float(r), 1.96 * se

    frequency, f_half = ratio(per["bet"], per["dealt"])
    edge, e_half = ratio(per["ev"], per["bet"])
    win, w_half = ratio(100 * per["ev"], per["dealt"])
    pays = float(published.pays.split(":")[0])
    return {
        "bet_frequency": frequency,
        "bet_frequency_ci": [frequency - f_half, frequency + f_half],
        "average_edge": edge,
        "average_edge_ci": [edge - e_half, edge + e_half],
        "units_per_100_hands": win,
        "units_per_100_hands_ci": [win - w_half, win + w_half],
        "desirability_index": jacobson_di(frequency, win, house_edge, pays) if frequency > 0 else None,
        "desirability_index_ci": (
            [jacobson_di(frequency, w, house_edge, pays) for w in (win - w_half, win + w_half)]
            if frequency > 0
            else None
        ),
    }


def count_families(hands: dict, tags: np.ndarray) -> dict[str, np.ndarray]:
    """The values a bettor thresholds, per family: the true count per deck unseen (the baseline's), the
    running count over the shoe's 8 decks (the closest convention), and the exact EV itself (perfect
    information: the most edge any rule can have at a given share of hands)."""
    running = _running(hands, tags)
    return {
        "true count per deck unseen": running / _decks(hands),
        "running count / the shoe's 8 decks": running / 8,
        "perfect information (the exact EV)": np.asarray(hands["ev"], dtype=np.float64),
    }


def at_frequency(values: np.ndarray, frequency: float) -> tuple[float, np.ndarray]:
    """The trigger ``x`` whose share of hands with ``values >= x`` is nearest ``frequency`` (the
    values' own levels: a count moves in steps), and the hands bet."""
    levels, counts = np.unique(values, return_counts=True)
    shares = np.cumsum(counts[::-1])[::-1] / values.size  # share of values >= each level
    x = float(levels[int(np.argmin(np.abs(shares - frequency)))])
    return x, values >= x


def _rules(change: dict[str, Any]) -> R.Rules:
    """The published conditions (:data:`pb_gym.experiments.atlas.published.PUBLISHED_RULES`), changed."""
    setting: dict[str, Any] = {**PUBLISHED_RULES, **change}
    return R.Rules(**setting)


def study(bet: str = "three_giving_eight", n_shoes: int = 3000, seed: int = 7) -> dict:
    """Every convention on one deal under the published rules, and the cuts and burns as deals of
    their own (baseline convention)."""
    published = next(p for p in PUBLISHED if p.bet == bet)
    if published.tags is None or published.trigger is None:
        raise ValueError(f"no published count with tags and a trigger for {bet!r}")
    tags = tags_by_rank(published.tags)
    rules = _rules({})
    house_edge = -float(
        atlas.bet_book(rules, (bet,)).expected_values(R.full_shoe(rules.decks)[None, :])[0, 0]
    )
    hands = deal(rules, bet, n_shoes, seed)
    rows = [
        {"convention": name, **figures(hands, rule(hands, tags, published.trigger), published, house_edge)}
        for name, rule in conventions().items()
    ]
    baseline = conventions()["running / decks unseen, >= trigger (baseline)"]
    for name, change in (
        ("cut card 16 cards from the end", {"cut_card": 16}),
        ("cut card 26 cards from the end (half a deck)", {"cut_card": 26}),
        ("cut card 52 cards from the end (one deck)", {"cut_card": 52}),
        ("no hand after the cut card", {"hand_after_cut": False}),
        ("no burn", {"burn": False}),
    ):
        other = deal(_rules(change), bet, n_shoes, seed)
        rows.append(
            {
                "convention": name,
                **figures(other, baseline(other, tags, published.trigger), published, house_edge),
            }
        )
    # each family at the published share of hands bet (its trigger moved there): the edge it then has
    same_share = []
    if published.bet_frequency is not None:
        for family, values in count_families(hands, tags).items():
            trigger, bet_on = at_frequency(values, published.bet_frequency)
            same_share.append(
                {"family": family, "trigger": trigger, **figures(hands, bet_on, published, house_edge)}
            )
    target = {
        "bet_frequency": published.bet_frequency,
        "average_edge": published.average_edge,
        "units_per_100_hands": published.units_per_100_hands,
    }
    for row in rows:
        row["reproduces"] = all(
            row[f"{k}_ci"][0] <= v <= row[f"{k}_ci"][1] for k, v in target.items() if v is not None
        )
    return {
        "bet": bet,
        "source": published.source,
        "published": {**target, "desirability_index": published.desirability_index},
        "tags": list(published.tags),
        "trigger": published.trigger,
        "shoes": n_shoes,
        "seed": seed,
        "rows": rows,
        "at_published_frequency": same_share,
    }


def _table(header: str, published: list[str], rows: list[list[str]]) -> str:
    """A markdown table: ``header`` (cells joined by " | "), the published row in bold, then ``rows``."""
    cells = header.split(" | ")
    lines = [f"| {header} |", "|" + "---|" * len(cells), "| " + " | ".join(published) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def markdown(report: dict) -> str:
    """The study as a markdown table (published first)."""
    p = report["published"]
    published = [
        "**published**",
        f"{100 * p['bet_frequency']:.2f}%",
        f"{100 * p['average_edge']:.2f}%",
        f"{p['units_per_100_hands']:.3f}",
        f"{p['desirability_index']:.2f}",
        "",
    ]
    rows = []
    for r in report["rows"]:
        lo, hi = r["units_per_100_hands_ci"]
        rows.append(
            [
                r["convention"],
                f"{100 * r['bet_frequency']:.2f}%",
                f"{100 * r['average_edge']:.2f}%",
                f"{r['units_per_100_hands']:.3f} [{lo:.3f}, {hi:.3f}]",
                "n/a" if r["desirability_index"] is None else f"{r['desirability_index']:.2f}",
                "yes" if r["reproduces"] else "no",
            ]
        )
    header = "convention | hands bet | edge when betting | units / 100 hands [95% CI] | DI | reproduces"
    table = _table(header, published, rows)
    if not report.get("at_published_frequency"):
        return table
    same = []
    for r in report["at_published_frequency"]:
        lo, hi = r["average_edge_ci"]
        w_lo, w_hi = r["units_per_100_hands_ci"]
        same.append(
            [
                r["family"],
                f"{r['trigger']:.4g}",
                f"{100 * r['bet_frequency']:.2f}%",
                f"{100 * r['average_edge']:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}]",
                f"{r['units_per_100_hands']:.3f} [{w_lo:.3f}, {w_hi:.3f}]",
            ]
        )
    header = "at the published share of hands | trigger | hands bet | edge when betting [95% CI] | "
    header += "units / 100 hands"
    first = ["**published**", "", published[1], published[2], published[3]]
    return table + "\n\n" + _table(header, first, same)


def ruin_study(shoes: int = 20_000, seed: int = 1, sessions: int = 10_000) -> dict:
    """Stephen How's Dragon 7 count (:data:`pb_gym.experiments.counting.advantage.HOW_DRAGON7`): its risk of
    ruin
    under each convention of the count (bet at >= 0 or > 0), of the deal (the cut, one more hand
    after it) and of the barrier (ruin below one bet or at zero, checked within the shoe or at its
    end; the goal read as +1,000 or as a bankroll of 1,000), every other figure beside it. Each
    row's shoes are recentred on the exact EV of the hands bet, as
    :func:`pb_gym.experiments.counting.advantage.barrier_with_ci` does (its CI: the simulation's and the win
    rate's)."""
    from pb_gym.experiments.counting import advantage

    how: dict = advantage.HOW_DRAGON7
    risk = advantage.RiskConfig(**how["risk"], sessions=sessions, seed=0)
    deals = {
        (trigger, cut, after): advantage.replay_count(
            R.Rules(**{**how["rules"], "cut_card": cut, "hand_after_cut": after}),
            dataclasses.replace(how["count"], trigger=trigger),
            shoes,
            seed,
        )
        for trigger, cut, after in ((1.0, 16, True), (0.0, 16, True), (1.0, 16, False), (1.0, 14, True))
    }
    ours = {"goal": risk.goal, "stake": 1.0, "bankroll": risk.bankroll}
    barriers: dict[
        str, tuple[str, str, dict[str, float]]
    ] = {  # name: (the shoe's low and high points the barrier sees, its other settings)
        "ruin below one bet, within the shoe (ours)": ("low", "high", {}),
        "ruin at zero (bankroll <= 0), within the shoe": ("low", "high", {"stake": 1e-9}),
        "ruin below one bet, at the shoe's end only": ("payoff", "high", {}),
        "ruin and goal at the shoe's end only": ("payoff", "payoff", {}),
        "goal read as a bankroll of 1,000 (+500)": ("low", "high", {"goal": 500.0}),
        "for scale: a bankroll of 565 units": ("low", "high", {"bankroll": 565.0}),
    }
    rows = []
    for (trigger, cut, after), d in deals.items():
        for name, barrier in barriers.items():
            if (trigger, cut, after) != (1.0, 16, True) and not name.endswith("(ours)"):
                continue
            low, high, change = barrier
            setting = {**ours, **change}
            stake = setting.pop("stake")
            r = advantage.barrier_with_ci(
                d["payoff"], d[low], d[high], d["bets"], d["ev"], risk.model_copy(update=setting), stake
            )
            rows.append(
                {
                    "count": "bet at > 0" if trigger else "bet at >= 0 (as stated)",
                    "deal": f"cut {cut}" + (", one more hand after it" if after else ", no hand after it"),
                    "barrier": name,
                    "bets_per_shoe": float(d["bets"].mean()),
                    "units_per_shoe": float(d["ev"].mean()),
                    **{k: r[k] for k in ("p_ruin", "p_ruin_ci95", "p_behind", "p_behind_ci95", "mean_win")},
                }
            )
    published = {k: how[k] for k in ("bets_per_shoe", "win_per_shoe", "p_ruin", "p_behind", "mean_win")}
    return {"source": how["source"], "published": published, "shoes": shoes, "seed": seed, "rows": rows}


def ruin_markdown(report: dict) -> str:
    """The risk-of-ruin study as a markdown table (published first)."""
    p = report["published"]
    published = ["**published**", "cut 16", "", f"{p['bets_per_shoe']:.1f}", f"{p['win_per_shoe']:+.2f}"]
    published += [f"{100 * p['p_ruin']:.1f}%", f"{100 * p['p_behind']:.0f}%", f"{p['mean_win']:+.0f}"]
    rows = []
    for r in report["rows"]:
        lo, hi = r["p_ruin_ci95"]
        rows.append(
            [r["count"], r["deal"], r["barrier"], f"{r['bets_per_shoe']:.2f}", f"{r['units_per_shoe']:+.3f}"]
            + [f"{100 * r['p_ruin']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]", f"{100 * r['p_behind']:.1f}%"]
            + [f"{r['mean_win']:+.0f}"]
        )
    header = "count | deal | barrier | bets / shoe | units / shoe | risk of ruin [95% CI] | behind | mean win"
    return _table(header, published, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bet", default="three_giving_eight")
    parser.add_argument("--shoes", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="also write the study as JSON here")
    parser.add_argument("--ruin", action="store_true", help="How's Dragon 7 risk of ruin instead")
    args = parser.parse_args(argv)
    if args.ruin:
        report = ruin_study(args.shoes, args.seed)
        print(ruin_markdown(report))
    else:
        report = study(args.bet, args.shoes, args.seed)
        print(markdown(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
