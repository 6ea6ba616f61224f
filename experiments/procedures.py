"""The dealing-procedures study: what a continuous shuffler and the cut card's depth do to every edge.

``pb-gym experiment procedures CONFIG [--json] [--out DIR]``

For each procedure of the config (:class:`pb_gym.procedures.Dealing` with its cut card: the
hand-shuffled shoe, a continuous shuffling machine keeping the last 0, 1 or 5 hands' cards out, the
cut card 7 to 104 cards from the end) and each bet of the book (the atlas's, :mod:`experiments.atlas`),
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
import os
import sys
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from pb_gym import procedures
from pb_gym import rules as R
from pb_gym.ci import ratio_ci
from pb_gym.experiments import atlas, counts, study
from pb_gym.experiments.config import Strict


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


def run(
    config: ProceduresConfig,
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    store: object = None,
) -> dict:
    """Every procedure of ``config`` (runs serially; the shell's other arguments are accepted)."""
    del scheduler, workers, store
    if backend != "serial":
        raise ValueError(f"backend={backend!r}: the procedures study runs serially; allowed: serial")
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


OUTPUT_NAMES = ("procedures.json", "procedures.csv", "procedures.md")


def write_outputs(result: dict, folder: Path) -> list[Path]:
    """``procedures.json``, ``procedures.csv`` (a row per procedure and bet) and ``procedures.md``."""
    figures = ["perfect_gain_per_hand", "perfect_bet_rate", "count_gain_per_hand", "count_bet_rate"]
    rows = [
        {"procedure": proc["name"], "bet": bet, **{f: entry[f]["estimate"] for f in figures}}
        for proc in result["procedures"]
        for bet, entry in proc["bets"].items()
    ]
    fields = ["procedure", "bet", *figures]
    return study.write_table_files("procedures", result, folder, fields, rows, markdown(result))


main = study.command("procedures", ProceduresConfig, OUTPUT_NAMES, run, write_outputs, report)
"""``pb-gym experiment procedures CONFIG``: the study's entry point (:func:`experiments.study.command`)."""

__all__ = ["ProceduresConfig", "best_bets", "deal", "main", "markdown", "report", "run", "write_outputs"]

if __name__ == "__main__":  # python -m pb_gym.experiments.procedures CONFIG [OUT]
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, as_json=bool(os.environ.get("PB_GYM_JSON")))
