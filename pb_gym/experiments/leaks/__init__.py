"""The information-leak study: what a known card, an edge-sorted card or a shown burn card is worth.

For each leak (a card known at dealing position 1-6, the first card edge-sorted into high {6,7,8,9} and
low, four cards sorted with that split, four cards sorted with the best split of the values, the burned
cards shown, the bottom card known from a ribbon-spread cut) the study gives

* the exact edge per leak event where one exists (:mod:`pb_gym.known_cards`: a fresh shoe, betting the
  best of banker / player / tie when its exact EV given the leak is positive, the published convention),
  beside the published figure;
* a simulation of the same bettor on hands dealt by the engine (:mod:`pb_gym.engine`), the exact EV
  being its decision rule, with a 95% CI;
* how often the leak occurs (every hand for the exposed-card and sorting leaks; once per shoe for the
  burn card and the bottom card, whose per-hand figure divides by the measured hands per shoe) and the
  edge per hand and per 100 hands.

The hand-level leaks are simulated on the first hand of a freshly shuffled shoe without a burn, where
the exact figure is the expectation of the simulated mean (so the CI covers it); the burn leak needs
the burn, the bottom card is simulated without one, matching its exact figure.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from pb_gym import engine, exact, known_cards
from pb_gym import rules as R
from pb_gym.experiments.common import stats, study
from pb_gym.experiments.common.yaml_config import Strict

Leak = Literal[
    "known_card_1",
    "known_card_2",
    "known_card_3",
    "known_card_4",
    "known_card_5",
    "known_card_6",
    "edge_sorted_first_card",
    "four_sorted_cards",
    "four_sorted_best_split",
    "burn_card_shown",
    "bottom_card_known",
]
LEAKS: tuple[Leak, ...] = typing.get_args(Leak)
HIGH_VALUES = (6, 7, 8, 9)
"""The edge sorter's "high" class in the published analyses (Ivey sorted 7s, 8s and 9s; Jacobson's
figures use 6-9)."""
PER_SHOE = ("burn_card_shown", "bottom_card_known")
"""Leaks that occur once per shoe (on its first hand), not on every hand."""
MAIN = [R.BETS.index(b) for b in known_cards.MAIN_BET_NAMES]
PUBLISHED_SOURCE = (
    'Eliot Jacobson, "The Known Card" and his edge-sorting analyses (8 decks, the best '
    "of banker / player / tie when positive); the best split searched by Fred Roach"
)
PUBLISHED_PCT = {
    "known_card_1": 6.765,
    "known_card_2": 6.406,
    "known_card_3": 6.765,
    "known_card_4": 6.406,
    "known_card_5": 8.973,
    "known_card_6": 9.098,
    "edge_sorted_first_card": 6.765,
    "four_sorted_cards": 20.928,
    "four_sorted_best_split": 30.291,
}
"""The published edges in % (8 decks), shown beside the exact figures for 8-deck runs."""


class LeaksConfig(Strict):
    """``configs/experiments/leaks.yaml``."""

    decks: int = Field(8, ge=1, le=8, description="decks in the shoe")
    hands: int = Field(200_000, ge=100, description="simulated leak events per leak")
    chunk_hands: int = Field(50_000, ge=100, description="tables dealt at once (bounds the memory)")
    seed: int = Field(1, ge=0, description="seed of the simulated deals and of the frequency shoes")
    frequency_shoes: int = Field(200, ge=10, description="shoes dealt to measure the hands per shoe")
    leaks: tuple[Leak, ...] = Field(LEAKS, min_length=1, description="the leaks studied (one or more)")


# --------------------------------------------------------------------------------------------------
# The bettor's rule: which main bet (or none, -1) for each leaked key, from the exact EVs
# --------------------------------------------------------------------------------------------------
def _decisions(sums: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """Per key: the best main bet's index into :data:`MAIN` when its EV sum is positive, else -1; and
    the edge (summed best positive EV) and the chance of a bet."""
    best = sums.argmax(axis=-1)
    positive = sums.max(axis=-1) > 0
    return np.where(positive, best, -1), float(np.maximum(sums.max(axis=-1), 0).sum()), positive


def table_leak_rule(leak: str, table: np.ndarray, probabilities: np.ndarray, composition: np.ndarray) -> dict:
    """The exact rule of a hand-level leak: the key of each dealt hand's leak (a function of its first
    six values), the bet chosen for each key, the exact edge and the chance of betting."""
    if leak.startswith("known_card_"):
        position = int(leak[-1])
        if position <= 4:
            axes = tuple(a for a in range(4) if a != position - 1)
            sums = table.sum(axis=axes)
            chance = probabilities.sum(axis=axes)
        else:  # positions 5-6 are not in the prefix table: price each rank given the card
            detail = known_cards.known_card_edge(composition, position)
            sums = np.zeros((10, 3))
            chance = np.zeros(10)
            for name, entry in detail["by_rank"].items():
                value = int(R.RANK_VALUES[R.RANKS.index(name)])
                sums[value] += entry["probability"] * np.array(list(entry["ev"].values()))
                chance[value] += entry["probability"]
        decision, edge, positive = _decisions(sums)
        return {
            "positions": (position,),
            "high": None,
            "decision": decision,
            "edge": edge,
            "bet_frequency": float(chance[positive].sum()),
        }
    positions = (1,) if leak == "edge_sorted_first_card" else (1, 2, 3, 4)
    high: tuple[int, ...] = HIGH_VALUES
    if leak == "four_sorted_best_split":
        high, _ = known_cards.best_split(table, positions)
    mask = np.zeros(10, dtype=bool)
    mask[list(high)] = True
    summed = known_cards.sorted_classes(table, mask, positions)
    chance = known_cards.sorted_classes(probabilities, mask, positions)
    decision, edge, positive = _decisions(summed.reshape(-1, 3))
    return {
        "positions": positions,
        "high": tuple(int(v) for v in high),
        "decision": decision,
        "edge": edge,
        "bet_frequency": float(chance.reshape(-1)[positive].sum()),
    }


def _leak_keys(rule: dict, values: np.ndarray) -> np.ndarray:
    """The key of each hand's leak from its first six card values ``(n, 6)``."""
    if rule["high"] is None:
        return values[:, rule["positions"][0] - 1]
    mask = np.zeros(10, dtype=bool)
    mask[list(rule["high"])] = True
    key = np.zeros(len(values), dtype=np.int64)
    for position in rule["positions"]:
        key = key * 2 + mask[values[:, position - 1]]
    return key


def _simulate(config: LeaksConfig, seed: int, burn: bool, choose) -> dict:
    """Deal the first hand of ``config.hands`` fresh shoes with the engine, ``config.chunk_hands`` at a
    time; ``choose(state, n)`` reads the shoes before the deal and returns, per table, the main bet
    staked one unit (an index into :data:`MAIN`; -1: none). The mean payoff per leak event with its
    95% CI, and the share of events with a bet placed."""
    rules = R.Rules(decks=config.decks, burn=burn)
    payoff = np.zeros(config.hands)
    placed = np.zeros(config.hands, dtype=bool)
    for start in range(0, config.hands, config.chunk_hands):
        n = min(config.chunk_hands, config.hands - start)
        state = engine.init(rules, n, seed=np.random.SeedSequence([seed, start]))
        bet = choose(state, n)
        _, hand = engine.deal(rules, state)
        pays = hand.payoffs(rules)[:, MAIN]
        payoff[start : start + n] = np.where(bet >= 0, pays[np.arange(n), np.maximum(bet, 0)], 0.0)
        placed[start : start + n] = bet >= 0
    mean, se = stats.mean_se(payoff)
    return {"mean": mean, "ci95": stats.normal_ci(mean, se), "share_bet": float(np.mean(placed))}


def simulate_table_leak(rule: dict, config: LeaksConfig, seed: int) -> dict:
    """Deal the first hand of fresh shoes (no burn) with the engine; the bettor reads the leak from the
    shoe before the deal and bets one unit as ``rule`` says. Mean payoff per hand with its 95% CI."""

    def choose(state, n: int) -> np.ndarray:
        values = R.CARD_VALUES[state.shoe[:, :6]].astype(np.intp)
        return rule["decision"][_leak_keys(rule, values)]

    return _simulate(config, seed, False, choose)


def _best_positive(composition: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ev = exact.expected_values(composition)[..., MAIN]
    return ev.argmax(axis=-1), ev.max(axis=-1)


def simulate_shoe_leak(leak: str, config: LeaksConfig, seed: int) -> dict:
    """The first hand of fresh shoes, the bettor knowing the burned cards (``burn_card_shown``: the
    composition is the real shoe, not the unseen cards) or the bottom card (removed from the unseen
    composition); one unit on the best main bet when its exact EV is positive."""

    def choose(state, n: int) -> np.ndarray:
        if leak == "burn_card_shown":
            composition = state.counts.astype(np.int64)
        else:
            composition = state.unseen.astype(np.int64)
            composition[np.arange(n), state.shoe[:, -1].astype(np.intp) - 1] -= 1
        bet, best = _best_positive(composition)
        return np.where(best > 0, bet, -1)

    return _simulate(config, seed, leak == "burn_card_shown", choose)


def bottom_card_exact(decks: int) -> dict:
    """Exact: the bottom card of a fresh shoe known (no burn), the first hand's best positive bet."""
    full = R.full_shoe(decks)
    compositions = full[None, :] - np.eye(R.N_RANKS, dtype=np.int64)
    _, best = _best_positive(compositions)
    chance = full / full.sum()
    return {
        "edge": float((chance * np.maximum(best, 0)).sum()),
        "bet_frequency": float(chance[best > 0].sum()),
    }


def hands_per_shoe(config: LeaksConfig, seed: int) -> float:
    """Mean hands dealt per shoe under the default rules (burn, cut card) and ``config.decks``."""
    rules = R.Rules(decks=config.decks)
    state = engine.init(rules, config.frequency_shoes, seed=seed)
    hands = np.zeros(config.frequency_shoes, dtype=np.int64)
    finished = np.zeros(config.frequency_shoes, dtype=bool)
    while not finished.all():
        active = ~finished
        engine.deal(rules, state, active=active)
        hands += active
        finished |= engine.shoe_over(rules, state)
    return float(hands.mean())


def run(config: LeaksConfig, progress: bool = False) -> dict:
    """Every leak of ``config``: exact edge, simulated edge with its CI, frequency, per 100 hands
    (serially; ``progress`` is accepted for the study shell, and unused)."""
    del progress
    composition = R.full_shoe(config.decks)
    table = known_cards.value_prefix_table(composition)
    probabilities = known_cards.value_prefix_probabilities(composition)
    per_shoe = hands_per_shoe(config, config.seed + 1_000_003)
    rows = []
    for index, leak in enumerate(config.leaks):
        seed = config.seed * 1_000 + index
        row: dict = {"leak": leak}
        if leak in PER_SHOE:
            exact_figure = bottom_card_exact(config.decks) if leak == "bottom_card_known" else None
            simulated = simulate_shoe_leak(leak, config, seed)
            row["frequency_per_hand"] = 1.0 / per_shoe
            row["split_high"] = None
        else:
            rule = table_leak_rule(leak, table, probabilities, composition)
            exact_figure = {"edge": rule["edge"], "bet_frequency": rule["bet_frequency"]}
            simulated = simulate_table_leak(rule, config, seed)
            row["frequency_per_hand"] = 1.0
            row["split_high"] = list(rule["high"]) if rule["high"] is not None else None
        row["exact_edge_per_event"] = None if exact_figure is None else exact_figure["edge"]
        row["exact_bet_frequency"] = None if exact_figure is None else exact_figure["bet_frequency"]
        row["simulated_edge_per_event"] = simulated["mean"]
        row["simulated_ci95"] = simulated["ci95"]
        row["simulated_share_bet"] = simulated["share_bet"]
        reference = row["exact_edge_per_event"] if exact_figure is not None else simulated["mean"]
        row["edge_per_hand"] = reference * row["frequency_per_hand"]
        row["units_per_100_hands"] = 100 * row["edge_per_hand"]
        row["published_pct"] = PUBLISHED_PCT.get(leak) if config.decks == 8 else None
        rows.append(row)
    return {
        "decks": config.decks,
        "hands_per_leak": config.hands,
        "hands_per_shoe": per_shoe,
        "published_source": PUBLISHED_SOURCE,
        "leaks": rows,
    }


def _pct(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}"


def markdown(result: dict) -> str:
    """The table of edges, the published figure beside ours."""
    lines = [
        f"{result['decks']} decks; {result['hands_per_leak']:,} simulated leak events each; "
        f"{result['hands_per_shoe']:.2f} hands per shoe (measured)",
        "",
        "| leak | frequency per hand | exact edge per event (%) | published (%) | simulated (%) "
        "[95% CI] | edge per 100 hands (units) |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["leaks"]:
        low, high = row["simulated_ci95"]
        name = row["leak"] + (
            f" (high = {row['split_high']})" if row["leak"] == "four_sorted_best_split" else ""
        )
        published = "-" if row["published_pct"] is None else f"{row['published_pct']:.3f}"
        lines.append(
            f"| {name} | {row['frequency_per_hand']:.4f} | {_pct(row['exact_edge_per_event'])} "
            f"| {published} | {_pct(row['simulated_edge_per_event'])} [{_pct(low)}, "
            f"{_pct(high)}] | {row['units_per_100_hands']:.3f} |"
        )
    return "\n".join(lines)


def report(result: dict) -> str:
    """The text report (the Markdown table)."""
    return "Information leaks: the best of banker / player / tie when its exact EV is positive\n" + markdown(
        result
    )


OUTPUT_NAMES = ("leaks.json", "leaks.csv", "leaks.md")
"""The files ``--out`` receives."""


def write_outputs(result: dict, folder: Path) -> list[Path]:
    """``leaks.json``, ``leaks.csv`` (one row per leak) and ``leaks.md`` under ``folder``."""
    fields = [
        "leak",
        "frequency_per_hand",
        "exact_edge_per_event",
        "exact_bet_frequency",
        "published_pct",
        "simulated_edge_per_event",
        "simulated_ci95_low",
        "simulated_ci95_high",
        "simulated_share_bet",
        "edge_per_hand",
        "units_per_100_hands",
        "split_high",
    ]
    rows = []
    for row in result["leaks"]:
        flat = {k: v for k, v in row.items() if k != "simulated_ci95"}
        flat["simulated_ci95_low"], flat["simulated_ci95_high"] = row["simulated_ci95"]
        flat["split_high"] = "" if row["split_high"] is None else "".join(map(str, row["split_high"]))
        rows.append(flat)
    return study.write_table_files("leaks", result, folder, fields, rows, markdown(result))


main = study.command("leaks", LeaksConfig, OUTPUT_NAMES, run, write_outputs, report, serial=True)
"""``pb-gym experiment leaks CONFIG``: the study's entry point
(:func:`pb_gym.experiments.common.study.command`)."""


__all__ = [
    "LEAKS",
    "LeaksConfig",
    "bottom_card_exact",
    "hands_per_shoe",
    "main",
    "markdown",
    "report",
    "run",
    "simulate_shoe_leak",
    "simulate_table_leak",
    "table_leak_rule",
    "write_outputs",
]
