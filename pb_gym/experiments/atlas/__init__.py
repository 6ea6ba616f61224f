"""The counting atlas: every bet of the catalog, exact, and how far a counter can beat it.

``pb-gym experiment atlas CONFIG [--json] [--out DIR] [--backend serial|processes|dask]
[--scheduler ADDRESS] [--workers N] [--resume|--no-resume]``

The counting study (:mod:`pb_gym.experiments.counting`) asks where counting wins for the ten bets of its
config; the
atlas asks the same of every bet of the catalog and ranks them. One readable file, top to bottom:

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

import dataclasses
import functools
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from pb_gym import catalog, engine, exact
from pb_gym import rules as R
from pb_gym.experiments.atlas.published import PUBLISHED, PUBLISHED_RULES, Published, compare_published
from pb_gym.experiments.atlas.ranking import OUTPUT_NAMES, report, write_outputs
from pb_gym.experiments.common import chunk_store, scale, study
from pb_gym.experiments.common.stats import ratio_ci, z_value
from pb_gym.experiments.common.yaml_config import ConfigError, RulesConfig, Strict, check_custom_bets
from pb_gym.experiments.counting import counts
from pb_gym.experiments.counting.advantage import RiskConfig, bettor_report
from pb_gym.experiments.counting.counts import best_threshold, eor_tags, true_counts


# --------------------------------------------------------------------------------------------------
# 1. The bets: names, pay matrix over the hand classes, exact EV of all of them for many compositions
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class BetBook:
    """The bets the atlas studies.

    Attributes:
        names: the bets, in column order.
        pay: ``(N_HAND_CLASSES, k)`` net win per unit staked, row = :func:`pb_gym.rules.hand_class`.
        expected_values: compositions ``(n, 13)`` -> exact EV of every bet ``(n, k)``; a suited book's
            takes compositions by rank and suit ``(n, 13, 4)``.
        suited: a bet of the book is settled on suits (:attr:`pb_gym.catalog.Bet.suited`): ``pay`` is
            by suited hand class (:data:`pb_gym.rules.N_SUITED_CLASSES` rows), the deal tracks suits and
            prices every hand from the unseen cards by rank and suit (the perfect-information bettor
            knows the suits), while the counts stay counts by rank. A perfect pair is as likely for
            every rank, so its effects of removal by rank vanish and no rank count can see it (as for
            the rank pairs): its counts never bet.
        suited_bets: which of ``names`` are suited bets (each also gets a pair count, by
            :func:`pair_share`).
    """

    names: tuple[str, ...]
    pay: np.ndarray
    expected_values: Callable[[np.ndarray], np.ndarray]
    suited: bool = False
    suited_bets: tuple[bool, ...] = ()


def _book_evs(compositions: np.ndarray, pay: np.ndarray) -> np.ndarray:
    """Every bet's exact EV: hand-class probabilities (one walk per composition) times ``pay``, by
    :func:`pb_gym.exact.hand_class_expectations` (its product is row by row, no BLAS threads to wake:
    the last hands of a chunk have few live tables)."""
    return exact.hand_class_expectations(compositions, pay)


def available_bets(rules: R.Rules, custom: tuple[dict, ...] = ()) -> tuple[str, ...]:
    """Every bet the atlas can study under ``rules``: the whole catalog (:mod:`pb_gym.catalog`), then
    the user's bets ``custom`` (definitions for :func:`pb_gym.catalog.bet_from_dict`)."""
    return catalog.bet_names(rules) + tuple(d["name"] for d in custom)


def default_bets(rules: R.Rules, custom: tuple[dict, ...] = ()) -> tuple[str, ...]:
    """``bets: all``: the catalog's bets settled by rank (:func:`pb_gym.catalog.rank_bets`) and the
    user's bets; the suited bets are studied when named (their deal tracks suits)."""
    return tuple(bet.name for bet in catalog.rank_bets(rules)) + tuple(d["name"] for d in custom)


def bet_book(rules: R.Rules, names: tuple[str, ...] | None = None, custom: tuple[dict, ...] = ()) -> BetBook:
    """The book of the bets ``names`` (default: :func:`default_bets`)."""
    available = available_bets(rules, custom)
    names = tuple(names) if names else default_bets(rules, custom)
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ValueError(f"unknown bet(s) {', '.join(unknown)}; allowed: {', '.join(available)}")
    user = {d["name"]: catalog.bet_from_dict(d) for d in custom}
    bets = catalog.resolve([user.get(n, n) for n in names], rules)
    pay = np.ascontiguousarray(catalog.pay_matrix(bets, rules))
    if any(bet.suited for bet in bets):
        evs = functools.partial(catalog.expected_values, bets=bets, rules=rules)
        return BetBook(names, pay, evs, True, tuple(bool(bet.suited) for bet in bets))
    return BetBook(names, pay, functools.partial(_book_evs, pay=pay))


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

    @field_validator("training_seed")
    @classmethod
    def _separate_seeds(cls, training_seed: int, info: ValidationInfo) -> int:
        if training_seed == info.data.get("seed"):
            raise ValueError(
                f"must differ from seed ({training_seed}): thresholds are chosen on a separate deal"
            )
        return training_seed

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
# 4. Deal: the first shoe of n tables, hand by hand
# --------------------------------------------------------------------------------------------------
def deal_hands(rules: R.Rules, book: BetBook, n_shoes: int, seed: int | np.random.SeedSequence, state=None):
    """Deal the first shoe of ``n_shoes`` tables; yield, hand by hand, ``(tables, unseen, ev, payoff,
    by_suit)``: the live tables' indexes, their unseen compositions before the hand, the exact EV of
    every bet before the hand ``(m, k)``, the dealt hand's net win per unit on every bet ``(m, k)``,
    and for a book with suited bets the unseen cards by rank and suit before the hand ``(m, 13, 4)``
    (None otherwise).
    ``state``: the engine state to deal (``engine.init(rules, n_shoes, seed)``, tracking suits when
    the book has suited bets, if None), for a caller that reads more of it before each hand (the
    cards left in the shoe, the burned card)."""
    state = engine.init(rules, n_shoes, seed=seed, suited=book.suited) if state is None else state
    hand = engine.HandResult.empty(n_shoes)
    while True:
        live = counts.live_tables(rules, state)
        if not live.any():
            return
        tables = np.flatnonzero(live)
        unseen = state.unseen[tables].astype(np.int64)
        by_suit = engine.unseen_by_suit(rules, state)[tables] if book.suited else None
        ev = book.expected_values(unseen if by_suit is None else by_suit)
        engine.deal(rules, state, hand)
        if hand.shuffled[tables].any():
            raise AssertionError("a live table reshuffled: the first-shoe bookkeeping is wrong")
        classes = R.hand_class(
            hand.player_total[tables],
            hand.banker_total[tables],
            hand.player_ncards[tables],
            hand.banker_ncards[tables],
            hand.player_pair[tables],
            hand.banker_pair[tables],
        )
        if book.suited:  # the suited hand class: + N_HAND_CLASSES x the suit class
            perfect = hand.perfect_pairs()[tables].astype(np.int64)
            classes = classes + R.N_HAND_CLASSES * (perfect[:, 0] + 2 * perfect[:, 1])
        yield tables, unseen, ev, book.pay[classes], by_suit


def pair_share(by_suit: np.ndarray) -> np.ndarray:
    """The chance that two cards drawn from each composition ``(n, 13, 4)`` by rank and suit are the
    same card (rank and suit): ``sum n_i (n_i - 1) / (N (N - 1))`` over the 52 cards ``i``. The suited
    bets' statistic: every card is alike for a perfect pair, so each card's effect of removal is the
    same and no linear count moves; what moves their EV is how unevenly the cards are left."""
    n = by_suit.reshape(by_suit.shape[0], -1).astype(np.float64)
    total = n.sum(axis=1)
    return (n * (n - 1.0)).sum(axis=1) / np.maximum(total * (total - 1.0), 1.0)


def training_deal(rules: R.Rules, book: BetBook, n_shoes: int, seed: int) -> dict[str, np.ndarray]:
    """Every hand of the training deal: ``unseen`` (hands, 13) and ``ev`` (hands, k), and for a book
    with suited bets ``pair_share`` (hands,)."""
    unseen, ev, shares = [], [], []
    for _, u, e, _, by_suit in deal_hands(rules, book, n_shoes, seed):
        unseen.append(u.astype(np.int16))
        ev.append(e)
        if by_suit is not None:
            shares.append(pair_share(by_suit))
    deal = {"unseen": np.concatenate(unseen), "ev": np.concatenate(ev)}
    if shares:
        deal["pair_share"] = np.concatenate(shares)
    return deal


PER_SHOE = (
    "hands",
    "ev",
    "payoff",
    "positive",
    "gain",
    "realized",
    "realized_sq",
    "perfect_low",
    "perfect_high",
    "count_bets",
    "count_ev",
    "count_payoff",
    "count_payoff_sq",
    "count_low",
    "count_high",
)
"""The chunk's sums, one row per shoe (the merge concatenates them in chunk order)."""


def deal_chunk(
    chunk: scale.Chunk,
    rules: R.Rules,
    bets: tuple[str, ...],
    tags: np.ndarray,
    thresholds: np.ndarray,
    count_bet: np.ndarray,
    custom: tuple[dict, ...] = (),
    pair: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The task of one chunk: deal its shoes and return per-shoe sums.

    Per shoe: ``hands``; per bet (columns of ``bets``) the sums of the exact EV and of the dealt payoff
    over every hand (``ev``, ``payoff``: the calibration check), the hands with EV > 0,
    the sum of max(EV, 0) (the perfect-information bettor's predicted profit) and of the dealt payoff
    on those hands (and its square, and the running win's lowest and highest point); per count (rows
    of ``tags``, betting on bet ``count_bet[j]`` when the true count is at least ``thresholds[j]``)
    the hands bet, the sums of the EV and of the dealt payoff on them, its square and the running
    win's extremes (what :func:`pb_gym.experiments.counting.advantage.bettor_report` reads). A count where
    ``pair[j]`` compares the :func:`pair_share` of the unseen cards with its threshold instead of a
    true count (a suited bet's pair count).
    Module level with plain arguments, so processes and Dask workers can run it.
    """
    book = bet_book(rules, bets, custom)
    k, c, n = len(bets), len(count_bet), chunk.size
    sums = {"hands": np.zeros(n)}
    sums.update({key: np.zeros((n, k)) for key in ("ev", "payoff", "positive", "gain", "realized")})
    sums.update({key: np.zeros((n, k)) for key in ("realized_sq", "perfect_low", "perfect_high")})
    sums.update({key: np.zeros((n, c)) for key in ("count_bets", "count_ev", "count_payoff")})
    sums.update({key: np.zeros((n, c)) for key in ("count_payoff_sq", "count_low", "count_high")})
    perfect_win, count_win = np.zeros((n, k)), np.zeros((n, c))  # the running wins of this shoe
    pair = np.zeros(c, dtype=np.bool_) if pair is None else pair
    for tables, unseen, ev, payoff, by_suit in deal_hands(rules, book, n, chunk.seed):
        positive, gain, realized = counts.perfect_bettor(ev, payoff)
        sums["hands"][tables] += 1
        sums["ev"][tables] += ev
        sums["payoff"][tables] += payoff
        sums["positive"][tables] += positive
        sums["gain"][tables] += gain
        sums["realized"][tables] += realized
        _track(sums, "perfect", perfect_win, tables, realized)
        sums["realized_sq"][tables] += realized * realized
        if c:
            statistic = true_counts(unseen, tags, rules.decks)
            if by_suit is not None and pair.any():
                statistic[:, pair] = pair_share(by_suit)[:, None]
            bet = statistic >= thresholds[None, :]
            won = np.where(bet, payoff[:, count_bet], 0.0)
            sums["count_bets"][tables] += bet
            sums["count_ev"][tables] += np.where(bet, ev[:, count_bet], 0.0)
            sums["count_payoff"][tables] += won
            sums["count_payoff_sq"][tables] += won * won
            _track(sums, "count", count_win, tables, won)
    return sums


def _track(sums: dict, who: str, running: np.ndarray, tables: np.ndarray, won: np.ndarray) -> None:
    """Add this hand's wins ``won`` to the shoes' running wins; keep their lowest and highest point."""
    running[tables] += won
    sums[f"{who}_low"][tables] = np.minimum(sums[f"{who}_low"][tables], running[tables])
    sums[f"{who}_high"][tables] = np.maximum(sums[f"{who}_high"][tables], running[tables])


def merge(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The chunks' per-shoe rows, concatenated in chunk order."""
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


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
