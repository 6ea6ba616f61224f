"""The counting atlas: every bet of the catalog, exact, and how far a counter can beat it.

``pb-gym experiment atlas CONFIG [--json] [--out DIR] [--backend serial|processes|dask]
[--scheduler ADDRESS] [--workers N] [--resume|--no-resume]``

The counting study (:mod:`pb_gym.experiments.counting`) asks where counting wins for the ten bets of its
config; the
atlas asks the same of every bet of the catalog and ranks them. Read top to bottom, with the bet book in
:mod:`pb_gym.experiments.atlas.book`, the deal in :mod:`pb_gym.experiments.atlas.deal` and the report
in :mod:`pb_gym.experiments.atlas.ranking`:

1. The bets. A *bet book* is the list of studied bets (the catalog's, :mod:`pb_gym.catalog`, and the
   user's own, ``custom_bets:``), their pay matrix over the hand classes
   (:func:`pb_gym.rules.hand_class`: row = class, column = bet, net win per unit) and a function giving
   the exact EV of every bet for many compositions at once. The exact calculator evaluates every bet of
   a composition in one pass over the card multisets (the class probabilities times the pay matrix),
   so the cost of a hand grows with the number of hand classes, not with the number of bets.
2. Effects of removal. EoR(r) = EV(full shoe minus one card of rank r) - EV(full shoe), per bet.
3. Counts, three per bet. (a) *EoR count*: tags proportional to the effects of removal (the
   first-order expansion of the EV in the composition, the classic construction; not always the best
   thresholded count: the integer count sometimes beats it); (b) *integer
   count*: the balanced whole-number tags nearest to the same tags scaled so the largest is ``m``,
   ``m`` in 1..``integer_max_tag``;
   (c) where the literature publishes a count for the bet (:data:`PUBLISHED`), that count with its
   published trigger, replayed on our shoes. True count = running count / decks unseen. The true-count
   threshold of (a) and the (scale, threshold) of (b) are chosen on a separate *training* deal
   (``training_seed``) as those maximizing the summed exact EV of the hands bet, then evaluated on the
   main deal (``seed``): no threshold is fitted on the hands it is scored on.
4. Deal. ``shoes`` shoes, one engine table per shoe, first shoe only (burn, cut card), in chunks of
   ``chunk_shoes`` (chunk ``i`` seeded with ``SeedSequence(seed).spawn(n)[i]``,
   :mod:`pb_gym.experiments.common.scale`:
   serial, local processes or Dask give the same result; :mod:`pb_gym.experiments.common.chunk_store` resumes
   an
   interrupted run). Before every hand, the exact EV of every bet is computed from the cards not yet
   seen (the shoe plus the face-down burn). The perfect-information bettor stakes one unit on a bet
   whenever its EV > 0; each count stakes one unit when its true count reaches its threshold. Profit
   is counted two ways: *predicted* (the exact EV of the hands bet: the estimate with the least
   noise) and *realized* (the dealt payoff of the pay matrix's row of the dealt hand class).
5. Statistics over shoes. Hands of one shoe are correlated, shoes are independent: a chunk returns
   per-shoe sums only, and every figure is a ratio of per-shoe sums with its 95% CI over shoes (the
   ratio estimator of :func:`pb_gym.experiments.common.stats.ratio_ci`). The cut-card-effect check of the
   counting
   study is applied to every bet: the average exact EV per hand dealt minus the full-shoe EV; and the
   calibration check: the dealt payoffs minus the exact EVs, over every hand.
6. Report. A table ranked by the EoR count's gain per 100 hands (then the perfect-information gain),
   as JSON, CSV and Markdown; one plot (gain per 100 hands: perfect information vs the counts, one bar
   per bet); the published figures beside ours, with a verdict (inside our 95% CI or not).
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from typing import Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from pb_gym import engine
from pb_gym import rules as R
from pb_gym.experiments.atlas.book import BetBook, available_bets, bet_book
from pb_gym.experiments.atlas.deal import deal_chunk, deal_hands, merge, pair_share, training_deal
from pb_gym.experiments.atlas.published import PUBLISHED, PUBLISHED_RULES, Published, compare_published
from pb_gym.experiments.atlas.ranking import OUTPUT_NAMES, report, write_outputs
from pb_gym.experiments.common import chunk_store, scale, study
from pb_gym.experiments.common.stats import ratio_ci, z_value
from pb_gym.experiments.common.yaml_config import ConfigError, RulesConfig, Strict, check_custom_bets
from pb_gym.experiments.counting import counts, separate_seeds
from pb_gym.experiments.counting.advantage import RiskConfig, bettor_report
from pb_gym.experiments.counting.counts import best_threshold, eor_tags, true_counts


# --------------------------------------------------------------------------------------------------
# 2. Effects of removal of a book with suited bets: its compositions by rank and suit
# --------------------------------------------------------------------------------------------------
def _by_suit_of_removal(compositions: np.ndarray, decks: int) -> np.ndarray:
    """Compositions by rank ``(n, 13)`` of a full shoe less at most ``decks`` cards of a rank, by rank
    and suit ``(n, 13, 4)``: the cards taken from the first suit. Exact for the effects of removal (a
    full shoe's suits are alike: which suit a removed card has changes no EV)."""
    full = np.full((R.N_RANKS, R.CARDS_PER_RANK_PER_DECK), decks, dtype=np.int64)
    out = np.broadcast_to(full, compositions.shape + (R.CARDS_PER_RANK_PER_DECK,)).copy()
    out[..., 0] -= decks * R.CARDS_PER_RANK_PER_DECK - compositions
    return out


# --------------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------------
class AtlasConfig(Strict):
    """``configs/experiments/atlas.yaml``."""

    rules: RulesConfig = Field(RulesConfig(), description="the rules of the shoes dealt")
    custom_bets: tuple[dict, ...] = Field(
        (),
        description="the user's own bets: {name, source, title, rows: [{when: {...}, pays}]} each, "
        "as pb_gym.catalog.bet_from_dict reads them",
    )
    bets: Literal["all"] | tuple[str, ...] = Field(
        "all",
        description="the bets studied: all (the catalog's bets settled by rank and the custom bets) or a "
        "list of names (the suited bets too: perfect_pair, perfect_pair_v1)",
    )
    shoes: int = Field(10_000, ge=2, description="shoes dealt (one engine table each, first shoe only)")
    seed: int = Field(1, ge=0, description="seed of the main deal (chunk i: SeedSequence(seed).spawn(n)[i])")
    chunk_shoes: int = Field(1_000, ge=1, description="shoes per chunk of the main deal")
    training_shoes: int = Field(2_000, ge=2, description="shoes of the deal that fits the thresholds")
    training_seed: int = Field(1_000_001, ge=0, description="seed of the threshold deal (not seed)")
    max_tag: float = Field(10.0, gt=0, description="largest |tag| of the EoR count")
    integer_max_tag: int = Field(6, ge=1, le=20, description="integer counts tried: largest tag 1..N")
    published: bool = Field(True, description="replay and compare the published counts")
    advantage: RiskConfig = Field(RiskConfig(), description="the advantage player's figures (below)")

    _separate_seeds = field_validator("training_seed")(separate_seeds)

    @field_validator("bets", "custom_bets", mode="before")
    @classmethod
    def _lists(cls, value: object, info: ValidationInfo) -> object:
        if info.field_name == "bets" and isinstance(value, str) and value != "all":
            raise ValueError(f"{value!r} is not allowed; allowed: all, or a list of bet names")
        if info.field_name == "custom_bets":
            return check_custom_bets(value)
        return value

    @field_validator("bets")
    @classmethod
    def _known_bets(cls, bets: str | tuple[str, ...], info: ValidationInfo) -> str | tuple[str, ...]:
        if isinstance(bets, str):
            return bets
        if not bets:
            raise ValueError("at least one bet (or: all)")
        if len(set(bets)) != len(bets):
            raise ValueError("each bet at most once")
        rules_config = info.data.get("rules")
        if "custom_bets" not in info.data:
            return bets  # the custom bets are invalid: that is the error to report
        available = available_bets(
            rules_config.to_rules() if rules_config else R.Rules(), info.data["custom_bets"]
        )
        unknown = [b for b in bets if b not in available]
        if unknown:
            raise ValueError(
                f"unknown bet(s) {', '.join(unknown)}; allowed: all, or any of {', '.join(available)}"
            )
        return bets

    def book(self) -> BetBook:
        """The bet book this config studies."""
        return bet_book(
            self.rules.to_rules(), None if self.bets == "all" else tuple(self.bets), self.custom_bets
        )


# --------------------------------------------------------------------------------------------------
# 5. Statistics over shoes
# --------------------------------------------------------------------------------------------------
def _scaled(entry: dict, factor: float) -> dict:
    """A :func:`ratio_ci` entry multiplied by ``factor`` (e.g. 100 for per 100 hands)."""
    if entry["estimate"] is None:
        return entry
    return {
        **entry,
        "estimate": entry["estimate"] * factor,
        "se": entry["se"] * factor,
        "ci95": [v * factor for v in entry["ci95"]],
    }


def bettor_figures(bets: np.ndarray, ev: np.ndarray, payoff: np.ndarray, hands: np.ndarray) -> dict:
    """A one-unit bettor's figures from per-shoe sums: hands bet, EV and payoff on them; CIs over shoes.

    ``bet_frequency`` (share of hands dealt that are bet), ``average_edge`` (mean exact EV per hand
    bet), ``units_per_100_hands`` (predicted: exact EV; and ``realized_units_per_100_hands``: dealt
    payoffs) and ``units_per_shoe``.
    """
    ones = np.ones_like(hands)
    return {
        "bet_frequency": ratio_ci(bets, hands),
        "average_edge": ratio_ci(ev, bets),
        "units_per_100_hands": _scaled(ratio_ci(ev, hands), 100.0),
        "realized_units_per_100_hands": _scaled(ratio_ci(payoff, hands), 100.0),
        "units_per_shoe": ratio_ci(ev, ones),
        "bets_per_shoe": ratio_ci(bets, ones),
    }


# --------------------------------------------------------------------------------------------------
# The experiment
# --------------------------------------------------------------------------------------------------
def _fit_integer_count(
    eor: np.ndarray, training: dict, k: int, decks: int, largest: int
) -> tuple[np.ndarray, float, int, float]:
    """The integer count of one bet: for each scale m in 1..``largest``, the balanced whole-number tags
    nearest to the EoR scaled to largest |tag| m, and the best threshold on the training deal; the
    (m, threshold) with the most summed EV. Returns (tags, threshold, m, summed EV); threshold inf:
    never bets."""
    best = (np.zeros(R.N_RANKS), math.inf, 0, 0.0)
    seen_tags: set[bytes] = set()
    for m in range(1, largest + 1):
        tags = eor_tags(eor, m, integer=True)
        if not np.any(tags) or tags.tobytes() in seen_tags:
            continue
        seen_tags.add(tags.tobytes())
        tc = true_counts(training["unseen"], tags[None, :], decks)[:, 0]
        threshold, total = best_threshold(tc, training["ev"][:, k])
        if total > best[3]:
            best = (tags, threshold, m, total)
    return best


def _count_rule(count: dict, full: np.ndarray) -> dict:
    """What a fitted count bets on: its tags (with their sum over a full shoe) or, for a pair count,
    its statistic; and its threshold (None: it never bets)."""
    threshold = None if math.isinf(count["threshold"]) else count["threshold"]
    if count["kind"] == "pair":
        statistic = "the pair share of the unseen cards by rank and suit (atlas.pair_share)"
        return {"statistic": statistic, "threshold": threshold}
    rule: dict = {
        "tags": {rank: float(v) for rank, v in zip(R.RANKS, count["tags"], strict=True)},
        "balance": float(full @ count["tags"]),
        "threshold": threshold,
    }
    if not np.any(count["tags"]):
        rule["note"] = (
            "no linear count: every effect of removal is zero (e.g. the pair bets: "
            "all ranks are equally common in a full shoe)"
        )
    return rule


def _fit_pair_counts(book: BetBook, training: dict[str, np.ndarray]) -> list[dict]:
    """A pair count for each suited bet of ``book``: its threshold on the :func:`pair_share`, the one
    that maximizes the exact EV summed over the training deal's hands it bets."""
    return [
        {
            "kind": "pair",
            "bet": j,
            "tags": np.zeros(R.N_RANKS),
            "threshold": best_threshold(training["pair_share"], training["ev"][:, j])[0],
        }
        for j, suited in enumerate(book.suited_bets)
        if suited
    ]


def run(
    config: AtlasConfig,
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    store: chunk_store.ChunkStore | None = None,
) -> dict:
    """Run the atlas; the JSON-ready result (identical on every backend except ``timings``)."""
    rules = config.rules.to_rules()
    book = config.book()
    names, k = book.names, len(book.names)
    full = R.full_shoe(rules.decks)
    timings: dict[str, float] = {}
    hands_per_shoe = (rules.n_cards - rules.cards_behind_cut) / 4.9
    scale.require_memory(
        "the atlas's training deal (one piece)",
        config.training_shoes,
        config.training_shoes,
        item="shoe",
        chunk_key="training_shoes",
        items_key="training_shoes",
        working_per_item=engine.table_bytes(rules) + hands_per_shoe * 2 * (26 + 8 * k),
    )
    scale.require_memory(
        "the atlas",
        config.shoes,
        config.chunk_shoes,
        item="shoe",
        chunk_key="chunk_shoes",
        items_key="shoes",
        working_per_item=engine.table_bytes(rules) + 8 * (1 + 9 * k + 7 * 3 * k),
        kept_per_item=8 * (1 + 8 * k + 6 * 3 * k),
        parallel=1 if backend == "serial" else workers or os.cpu_count() or 1,
    )

    # 2. effects of removal, full-shoe EVs
    t0 = time.perf_counter()
    evs = book.expected_values
    if book.suited:
        evs = lambda by_rank: book.expected_values(_by_suit_of_removal(by_rank, rules.decks))  # noqa: E731
    removal = counts.effects_of_removal(full, evs)
    ev_full, eor = removal["ev"], removal["eor"]
    exchangeability = float(np.max(np.abs(full @ removal["ev_removed"] / full.sum() - ev_full)))
    timings["effects_of_removal_s"] = time.perf_counter() - t0

    # 3. counts: EoR tags and integer tags fitted on the training deal; published counts as given
    t0 = time.perf_counter()
    if progress:
        print(
            f"atlas: training deal ({config.training_shoes:,} shoes, {k} bets) ...",
            file=sys.stderr,
            flush=True,
        )
    training = training_deal(rules, book, config.training_shoes, config.training_seed)
    timings["training_deal_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    fitted: list[dict] = []  # one per count: kind, bet, tags, threshold
    for j in range(k):
        tags = eor_tags(eor[:, j], config.max_tag)
        threshold = math.inf
        if np.any(tags):
            tc = true_counts(training["unseen"], tags[None, :], rules.decks)[:, 0]
            threshold = best_threshold(tc, training["ev"][:, j])[0]
        fitted.append({"kind": "eor", "bet": j, "tags": tags, "threshold": threshold})
    for j in range(k):
        tags, threshold, m, _ = _fit_integer_count(
            eor[:, j], training, j, rules.decks, config.integer_max_tag
        )
        fitted.append({"kind": "integer", "bet": j, "tags": tags, "threshold": threshold, "largest_tag": m})
    fitted += _fit_pair_counts(book, training)
    published = [p for p in PUBLISHED if p.bet in names] if config.published else []
    for p in published:
        if p.tags is not None and p.trigger is not None:
            fitted.append(
                {
                    "kind": "published",
                    "bet": names.index(p.bet),
                    "tags": counts.tags_by_rank(p.tags),
                    "threshold": float(p.trigger),
                    "source": p.source,
                }
            )
    timings["count_fitting_s"] = time.perf_counter() - t0
    training_hands = int(training["ev"].shape[0])
    del training

    # 4. main deal, in chunks
    t0 = time.perf_counter()
    tags = np.array([c["tags"] for c in fitted]).reshape(len(fitted), R.N_RANKS)
    thresholds = np.array([c["threshold"] for c in fitted], dtype=np.float64)
    count_bet = np.array([c["bet"] for c in fitted], dtype=np.int64)
    chunks = scale.plan(config.shoes, config.chunk_shoes, config.seed)
    task = functools.partial(
        deal_chunk,
        rules=rules,
        bets=names,
        tags=tags,
        thresholds=thresholds,
        count_bet=count_bet,
        custom=config.custom_bets,
        pair=np.array([c["kind"] == "pair" for c in fitted], dtype=np.bool_),
    )
    with scale.progress_printer("atlas: main deal", progress, len(chunks)) as printer:
        main = merge(scale.run(task, chunks, backend, scheduler, workers, printer, store=store))
    timings["main_deal_s"] = time.perf_counter() - t0

    # 5. statistics
    n = main["hands"]
    S, hands = config.shoes, int(n.sum())
    comparable = all(getattr(rules, key) == value for key, value in PUBLISHED_RULES.items())
    per_bet: dict[str, dict] = {}
    familywise_z = z_value(1 - 0.05 / k)
    for j, name in enumerate(names):
        perfect = bettor_figures(main["positive"][:, j], main["gain"][:, j], main["realized"][:, j], n)
        perfect["advantage"] = bettor_report(
            n,
            main["positive"][:, j],
            main["gain"][:, j],
            main["realized"][:, j],
            main["realized_sq"][:, j],
            main["perfect_low"][:, j],
            main["perfect_high"][:, j],
            config.advantage,
            barrier=False,  # the double barrier is the counts' (a bettor who sees every card is a bound)
        )
        cut = ratio_ci(main["ev"][:, j] - ev_full[j] * n, n)
        calibration = ratio_ci(main["payoff"][:, j] - main["ev"][:, j], n)
        entry: dict = {
            "house_edge": float(-ev_full[j]),
            "ev_full_shoe": float(ev_full[j]),
            "share_positive": perfect["bet_frequency"],
            "perfect_information": perfect,
            "cut_card_effect": cut,
            "cut_card_effect_significant": bool(cut["ci95"][0] > 0 or cut["ci95"][1] < 0),
            # the same at 95% for the whole catalog together (Bonferroni over the k bets)
            "cut_card_effect_significant_all_bets": bool(
                cut["se"] is not None and abs(cut["estimate"]) > familywise_z * cut["se"]
            ),
            "realized_minus_predicted_per_hand": calibration,
            "eor": {rank: float(eor[r, j]) for r, rank in enumerate(R.RANKS)},
            "counts": {},
            "published": [],
        }
        per_bet[name] = entry
    for c, count in enumerate(fitted):
        name = names[count["bet"]]
        figures = _count_rule(count, full)
        figures.update(
            bettor_figures(main["count_bets"][:, c], main["count_ev"][:, c], main["count_payoff"][:, c], n)
        )
        figures["advantage"] = bettor_report(
            n,
            main["count_bets"][:, c],
            main["count_ev"][:, c],
            main["count_payoff"][:, c],
            main["count_payoff_sq"][:, c],
            main["count_low"][:, c],
            main["count_high"][:, c],
            config.advantage,
        )
        perfect = per_bet[name]["perfect_information"]["units_per_100_hands"]["estimate"]
        mine = figures["units_per_100_hands"]["estimate"]
        figures["share_of_perfect_information_gain"] = (mine / perfect) if perfect else None
        if count["kind"] == "integer":
            figures["largest_tag"] = count["largest_tag"]
        if count["kind"] == "published":
            figures["source"] = count["source"]
            per_bet[name]["counts"].setdefault("published", []).append(figures)
        else:
            per_bet[name]["counts"][count["kind"]] = figures
    for p in published:
        entry = per_bet[p.bet]
        replay = (
            next((f for f in entry["counts"].get("published", []) if f["source"] == p.source), None)
            if p.tags is not None
            else None
        )
        entry["published"].append(
            compare_published(p, replay, entry["counts"]["eor"], entry["house_edge"], comparable)
        )

    def rank_key(bet: str) -> tuple[float, float, int]:
        # rounded to 12 significant digits: bets with equal gains (the two pair bets) tie exactly,
        # whatever their last bits, and keep the book's order
        gains = (
            per_bet[bet]["counts"]["eor"]["units_per_100_hands"]["estimate"] or 0.0,
            per_bet[bet]["perfect_information"]["units_per_100_hands"]["estimate"] or 0.0,
        )
        return (-float(f"{gains[0]:.12g}"), -float(f"{gains[1]:.12g}"), names.index(bet))

    ranking = sorted(names, key=rank_key)
    timings["total_s"] = sum(timings.values())
    return {
        "experiment": "atlas",
        "rules": config.rules.model_dump(),
        "shoes": S,
        "hands": hands,
        "hands_per_shoe": hands / S,
        "seed": config.seed,
        "chunk_shoes": config.chunk_shoes,
        "chunks": len(chunks),
        "training": {"seed": config.training_seed, "shoes": config.training_shoes, "hands": training_hands},
        "published_conditions_met": comparable,
        "exchangeability_max_error": exchangeability,
        "advantage": config.advantage.model_dump(),
        "ranking": ranking,
        "bets": per_bet,
        "timings": timings,
    }


main = study.command("atlas", AtlasConfig, OUTPUT_NAMES, run, write_outputs, report)
"""``pb-gym experiment atlas CONFIG``: the study's entry point
(:func:`pb_gym.experiments.common.study.command`)."""


__all__ = [
    "AtlasConfig",
    "BetBook",
    "ConfigError",
    "PUBLISHED",
    "PUBLISHED_RULES",
    "Published",
    "available_bets",
    "bet_book",
    "bettor_figures",
    "compare_published",
    "deal_chunk",
    "deal_hands",
    "main",
    "pair_share",
    "merge",
    "report",
    "run",
    "write_outputs",
]
