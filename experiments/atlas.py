"""The counting atlas: every bet of the catalog, exact, and how far a counter can beat it.

``pb-gym experiment atlas CONFIG [--json] [--out DIR] [--backend serial|processes|dask]
[--scheduler ADDRESS] [--workers N] [--resume|--no-resume]``

The counting study (:mod:`experiments.counting`) asks where counting wins for today's ten bets; the
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
   ``chunk_shoes`` (chunk ``i`` seeded with ``SeedSequence(seed).spawn(n)[i]``, :mod:`experiments.scale`:
   serial, local processes or Dask give the same result; :mod:`experiments.chunk_store` resumes an
   interrupted run). Before every hand, the exact EV of every bet is computed from the cards not yet
   seen (the shoe plus the face-down burn). The perfect-information bettor stakes one unit on a bet
   whenever its EV > 0; each count stakes one unit when its true count reaches its threshold. Profit
   is counted two ways: *predicted* (the exact EV of the hands bet: the estimate with the least
   noise) and *realized* (the dealt payoff of the pay matrix's row of the dealt hand class).
5. Statistics over shoes. Hands of one shoe are correlated, shoes are independent: a chunk returns
   per-shoe sums only, and every figure is a ratio of per-shoe sums with its 95% CI over shoes (the
   ratio estimator of :func:`experiments.stats.ratio_ci`). The cut-card-effect check of the counting
   study is applied to every bet: the average exact EV per hand dealt minus the full-shoe EV; and the
   calibration check: the dealt payoffs minus the exact EVs, over every hand.
6. Report. A table ranked by the EoR count's gain per 100 hands (then the perfect-information gain),
   as JSON, CSV and Markdown; one plot (gain per 100 hands: perfect information vs the counts, one bar
   per bet); the published figures beside ours, with a verdict (inside our 95% CI or not).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from pb_gym import catalog, engine, exact, strict_json
from pb_gym import rules as R
from pb_gym.experiments import chunk_store, plotting, scale, study
from pb_gym.experiments.config import ConfigError, RulesConfig, Strict, check_custom_bets
from pb_gym.experiments.counting import best_threshold
from pb_gym.experiments.stats import ratio_ci, z_value

TEN_VALUE_RANKS = ("10", "J", "Q", "K")


# --------------------------------------------------------------------------------------------------
# 1. The bets: names, pay matrix over the hand classes, exact EV of all of them for many compositions
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class BetBook:
    """The bets the atlas studies.

    Attributes:
        names: the bets, in column order.
        pay: ``(N_HAND_CLASSES, k)`` net win per unit staked, row = :func:`pb_gym.rules.hand_class`.
        expected_values: compositions ``(n, 13)`` -> exact EV of every bet ``(n, k)``.
    """

    names: tuple[str, ...]
    pay: np.ndarray
    expected_values: Callable[[np.ndarray], np.ndarray]


def _book_evs(compositions: np.ndarray, pay: np.ndarray) -> np.ndarray:
    """Every bet's exact EV: hand-class probabilities (one walk per composition) times ``pay``, by
    :func:`pb_gym.exact.hand_class_expectations` (its product is row by row, no BLAS threads to wake:
    the last hands of a chunk have few live tables)."""
    return exact.hand_class_expectations(compositions, pay)


def available_bets(rules: R.Rules, custom: tuple[dict, ...] = ()) -> tuple[str, ...]:
    """Every bet the atlas can study under ``rules``: the whole catalog (:mod:`pb_gym.catalog`), then
    the user's bets ``custom`` (definitions for :func:`pb_gym.catalog.bet_from_dict`)."""
    return catalog.bet_names(rules) + tuple(d["name"] for d in custom)


def bet_book(rules: R.Rules, names: tuple[str, ...] | None = None, custom: tuple[dict, ...] = ()) -> BetBook:
    """The book of the bets ``names`` (default: the whole catalog and the user's bets ``custom``)."""
    available = available_bets(rules, custom)
    names = tuple(names) if names else available
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ValueError(f"unknown bet(s) {', '.join(unknown)}; allowed: {', '.join(available)}")
    user = {d["name"]: catalog.bet_from_dict(d) for d in custom}
    pay = np.ascontiguousarray(catalog.pay_matrix([user.get(n, n) for n in names], rules))
    return BetBook(names, pay, functools.partial(_book_evs, pay=pay))


# --------------------------------------------------------------------------------------------------
# Published counts (8 decks, cut card 14, standard burn), kept here with their sources
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Published:
    """A count figure from the advantage-play literature, for one bet.

    ``tags`` are given for A, 2, ..., 9, ten-value (the ten-value tag applies to 10, J, Q, K);
    ``trigger``: bet when the true count (running count / decks unseen) is at least this.
    Fractions (not %) for ``bet_frequency`` and ``average_edge``; units of one stake for the rest.
    """

    bet: str
    source: str
    pays: str
    house_edge: float | None = None
    tags: tuple[int, ...] | None = None
    trigger: float | None = None
    bet_frequency: float | None = None
    average_edge: float | None = None
    units_per_100_hands: float | None = None
    units_per_shoe: float | None = None
    conditions: str = (
        "8 decks, cut card 14 cards from the end, standard burn, one more hand after the cut card"
    )


_JACOBSON_SIDE_BETS = (
    "Eliot Jacobson, 'Baccarat Side Bets', advancedadvantageplay.com/side-bets/"
    "baccarat-side-bets/ (8 decks, cut card at 14, standard burn and cut-card "
    "rules; simulations)"
)
PUBLISHED: tuple[Published, ...] = (
    Published(
        "three_giving_eight",
        _JACOBSON_SIDE_BETS,
        "200:1",
        house_edge=0.08682,
        tags=(1, 1, -3, 1, 1, 1, 1, -8, 1, 1),
        trigger=2,
        bet_frequency=0.23207,
        average_edge=0.16926,
        units_per_100_hands=3.928,
    ),
    Published(
        "eights_and_nines",
        _JACOBSON_SIDE_BETS,
        "20:1",
        house_edge=0.07372,
        tags=(1, 1, 0, 0, 0, 0, 0, -3, -3, 1),
        trigger=4,
        bet_frequency=0.1361,
        average_edge=0.0891,
        units_per_100_hands=1.213,
    ),
    Published(
        "nine_over_seven",
        _JACOBSON_SIDE_BETS,
        "50:1",
        house_edge=0.08103,
        tags=(0, 1, 1, 1, 1, 1, -5, 1, -5, 1),
        trigger=6,
        bet_frequency=0.1433,
        average_edge=0.1085,
        units_per_100_hands=1.56,
    ),
    Published(
        "bad_beat",
        _JACOBSON_SIDE_BETS,
        "50:1",
        house_edge=0.08459,
        tags=(0, 1, 1, 1, 1, 1, 1, -5, -5, 1),
        trigger=6,
        bet_frequency=0.1431,
        average_edge=0.1054,
        units_per_100_hands=1.51,
    ),
    Published(
        "big_tiger",
        "Eliot Jacobson, 'Card Counting the Big Tiger Baccarat Side Bet', "
        "advancedadvantageplay.com, July 2024 (100 million 8-deck shoes, cut card at 14)",
        "50:1",
        house_edge=0.152533,
        tags=(0, 0, -1, -1, -1, -2, 1, 2, 2, 0),
        trigger=8,
        bet_frequency=0.03536,
        average_edge=0.07227,
        units_per_100_hands=0.256,
    ),
    Published(
        "dragon_bonus_player",
        "Eliot Jacobson, 'Shoe-Shopping the Dragon Bonus Baccarat Side "
        "Bet', 888casino.com blog (his Dragon Bonus count: cut card at 14, normal burn)",
        "natural win 1:1, natural tie push, win by 9/8/7/6/5/4: 30/10/6/4/2/1",
        house_edge=0.026517,
        units_per_shoe=0.1231,
        units_per_100_hands=0.1515,
    ),
    Published(
        "dragon_bonus_player",
        "Stephen How, 'Player Dragon Bonus Tracking Sheet', "
        "discountgambling.net, October 2011 (running-count thresholds by hand, not a true "
        "count; shoe rules of his casino)",
        "natural win 1:1, natural tie push, win by 9/8/7/6/5/4: 30/10/6/4/2/1",
        units_per_shoe=0.112,
        bet_frequency=0.048,
        conditions="8 decks (his casino's cut card and burn; not stated)",
    ),
)
"""The published count figures the atlas puts beside its own (bets absent from the book are skipped)."""
PUBLISHED_RULES = {"decks": 8, "cut_card": 14, "burn": True, "hand_after_cut": True}
"""The conditions of the published simulations ("standard burn card and cut card rules": when the cut
card comes out, the hand is finished and one more is dealt); under other rules the figures are shown,
not judged. With ``hand_after_cut: false`` the replayed counts earn about 8% less than published (one
hand fewer per shoe, the deepest and most profitable one)."""


def published_tags(tags: tuple[int, ...]) -> np.ndarray:
    """Tags by rank (13) from tags given for A, 2, ..., 9 and the ten-value cards."""
    return np.array(list(tags[:9]) + [tags[9]] * len(TEN_VALUE_RANKS), dtype=np.float64)


# --------------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------------
class AtlasConfig(Strict):
    """``configs/experiments/atlas.yaml``."""

    rules: RulesConfig = RulesConfig()
    custom_bets: tuple[dict, ...] = Field(
        (),
        description="the user's own bets: {name, source, title, rows: [{when: {...}, pays}]} each, "
        "as pb_gym.catalog.bet_from_dict reads them",
    )
    bets: Literal["all"] | tuple[str, ...] = Field(
        "all", description="the bets studied: all (the whole catalog and the custom bets) or a list of names"
    )
    shoes: int = Field(10_000, ge=2, description="shoes dealt (one engine table each, first shoe only)")
    seed: int = Field(1, ge=0)
    chunk_shoes: int = Field(1_000, ge=1, description="shoes per chunk of the main deal")
    training_shoes: int = Field(2_000, ge=2, description="shoes of the deal that fits the thresholds")
    training_seed: int = Field(1_000_001, ge=0)
    max_tag: float = Field(10.0, gt=0, description="largest |tag| of the EoR count")
    integer_max_tag: int = Field(6, ge=1, le=20, description="integer counts tried: largest tag 1..N")
    published: bool = Field(True, description="replay and compare the published counts")

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
# 2-3. Effects of removal and counts
# --------------------------------------------------------------------------------------------------
def effects_of_removal(composition: np.ndarray, book: BetBook) -> dict[str, np.ndarray]:
    """EV of every bet for ``composition`` (``ev``, (k,)), after removing one card of each rank
    (``ev_removed``, (13, k), NaN where the rank is absent) and their difference (``eor``)."""
    composition = np.asarray(composition, dtype=np.int64)
    removed = composition[None, :] - np.eye(R.N_RANKS, dtype=np.int64)
    present = composition > 0
    ev = book.expected_values(composition[None, :])[0]
    ev_removed = np.full((R.N_RANKS, len(book.names)), np.nan)
    ev_removed[present] = book.expected_values(removed[present])
    return {"ev": ev, "ev_removed": ev_removed, "eor": ev_removed - ev[None, :]}


def eor_tags(eor: np.ndarray, largest: float, integer: bool = False) -> np.ndarray:
    """Tags proportional to one bet's effects of removal, largest |tag| = ``largest``; all zeros when
    the EoR vanish (a bet no linear count can see, e.g. the pairs).

    With ``integer``, the nearest *balanced* whole-number tags (:func:`balanced_integer_tags`): plain
    rounding would unbalance the count, and the true count of an unbalanced count drifts with the depth
    of the shoe, so that no single threshold fits it."""
    size = np.max(np.abs(eor))
    if not np.isfinite(size) or size < 1e-15:
        return np.zeros(R.N_RANKS)
    tags = eor / size * largest
    return balanced_integer_tags(tags) if integer else tags


_TEN_GROUP = [R.RANKS.index(r) for r in TEN_VALUE_RANKS]
_VALUE_WEIGHTS = np.array([1] * 9 + [len(TEN_VALUE_RANKS)])  # ranks per baccarat value A..9, 0
_CHOICES = (np.arange(2**10)[:, None] >> np.arange(10)[None, :]) & 1  # floor or ceiling, per value


def balanced_integer_tags(tags: np.ndarray) -> np.ndarray:
    """The whole-number tags nearest to ``tags`` (least squares over the cards of a full shoe) among
    those that are balanced (sum over a full shoe 0) and give 10, J, Q, K one tag, each tag the floor
    or the ceiling of its target; all zeros when no such rounding exists."""
    target = np.append(np.asarray(tags, dtype=np.float64)[:9], np.mean(np.asarray(tags)[_TEN_GROUP]))
    candidates = np.floor(target)[None, :] + _CHOICES
    balanced = candidates @ _VALUE_WEIGHTS == 0
    if not balanced.any():
        return np.zeros(R.N_RANKS)
    error = ((candidates - target[None, :]) ** 2) @ _VALUE_WEIGHTS
    best = candidates[np.flatnonzero(balanced)[np.argmin(error[balanced])]]
    return np.append(best[:9], [best[9]] * len(TEN_VALUE_RANKS)).astype(np.float64)


def true_counts(unseen: np.ndarray, tags: np.ndarray, decks: int) -> np.ndarray:
    """True counts ``(n, c)`` of ``c`` counts (``tags`` ``(c, 13)``) for compositions ``unseen``
    ``(n, 13)``: the tags of the cards seen, summed, per deck unseen."""
    unseen = np.asarray(unseen, dtype=np.float64)
    seen = R.full_shoe(decks)[None, :] - unseen
    return (seen @ np.asarray(tags, dtype=np.float64).T) / (unseen.sum(axis=1) / R.CARDS_PER_DECK)[:, None]


# --------------------------------------------------------------------------------------------------
# 4. Deal: the first shoe of n tables, hand by hand
# --------------------------------------------------------------------------------------------------
def _live_tables(rules: R.Rules, state: engine.ShoeState) -> np.ndarray:
    """Tables whose next hand is still a hand of their first shoe."""
    due = state.position >= state.cut_position
    if rules.hand_after_cut:
        due &= state.cut_hands == 1
    return (state.shoes_started == 1) & ~due


def deal_hands(rules: R.Rules, book: BetBook, n_shoes: int, seed: int | np.random.SeedSequence):
    """Deal the first shoe of ``n_shoes`` tables; yield, hand by hand, ``(tables, unseen, ev, payoff)``:
    the live tables' indexes, their unseen compositions before the hand, the exact EV of every bet
    before the hand ``(m, k)``, and the dealt hand's net win per unit on every bet ``(m, k)``."""
    state = engine.init(rules, n_shoes, seed=seed)
    hand = engine.HandResult.empty(n_shoes)
    while True:
        live = _live_tables(rules, state)
        if not live.any():
            return
        tables = np.flatnonzero(live)
        unseen = state.unseen[tables].astype(np.int64)
        ev = book.expected_values(unseen)
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
        yield tables, unseen, ev, book.pay[classes]


def training_deal(rules: R.Rules, book: BetBook, n_shoes: int, seed: int) -> dict[str, np.ndarray]:
    """Every hand of the training deal: ``unseen`` (hands, 13) and ``ev`` (hands, k)."""
    unseen, ev = [], []
    for _, u, e, _ in deal_hands(rules, book, n_shoes, seed):
        unseen.append(u.astype(np.int16))
        ev.append(e)
    return {"unseen": np.concatenate(unseen), "ev": np.concatenate(ev)}


PER_SHOE = ("hands", "ev", "payoff", "positive", "gain", "realized", "count_bets", "count_ev", "count_payoff")
"""The chunk's sums, one row per shoe (the merge concatenates them in chunk order)."""


def deal_chunk(
    chunk: scale.Chunk,
    rules: R.Rules,
    bets: tuple[str, ...],
    tags: np.ndarray,
    thresholds: np.ndarray,
    count_bet: np.ndarray,
    custom: tuple[dict, ...] = (),
) -> dict[str, np.ndarray]:
    """The task of one chunk: deal its shoes and return per-shoe sums.

    Per shoe: ``hands``; per bet (columns of ``bets``) the sums of the exact EV and of the dealt payoff
    over every hand (``ev``, ``payoff``: the calibration check), the hands with EV > 0,
    the sum of max(EV, 0) (the perfect-information bettor's predicted profit) and of the dealt payoff
    on those hands; per count (rows of ``tags``, betting on bet ``count_bet[j]`` when the true count is
    at least ``thresholds[j]``) the hands bet and the sums of the EV and of the dealt payoff on them.
    Module level with plain arguments, so processes and Dask workers can run it.
    """
    book = bet_book(rules, bets, custom)
    k, c, n = len(bets), len(count_bet), chunk.size
    sums = {"hands": np.zeros(n)}
    sums.update({key: np.zeros((n, k)) for key in ("ev", "payoff", "positive", "gain", "realized")})
    sums.update({key: np.zeros((n, c)) for key in ("count_bets", "count_ev", "count_payoff")})
    for tables, unseen, ev, payoff in deal_hands(rules, book, n, chunk.seed):
        positive = ev > 0
        sums["hands"][tables] += 1
        sums["ev"][tables] += ev
        sums["payoff"][tables] += payoff
        sums["positive"][tables] += positive
        sums["gain"][tables] += np.where(positive, ev, 0.0)
        sums["realized"][tables] += np.where(positive, payoff, 0.0)
        if c:
            bet = true_counts(unseen, tags, rules.decks) >= thresholds[None, :]
            sums["count_bets"][tables] += bet
            sums["count_ev"][tables] += np.where(bet, ev[:, count_bet], 0.0)
            sums["count_payoff"][tables] += np.where(bet, payoff[:, count_bet], 0.0)
    return sums


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


def _inside(value: float, entry: dict) -> bool | None:
    if entry["estimate"] is None:
        return None
    lo, hi = entry["ci95"]
    return bool(lo <= value <= hi)


def compare_published(
    published: Published, replay: dict | None, ours: dict, house_edge: float, comparable: bool
) -> dict:
    """One published figure set beside ours, with a verdict per figure.

    ``replay``: the published count replayed on our shoes (None when no tags are published); ``ours``:
    our EoR count. A figure *agrees* when the published value lies inside our 95% CI (of the replay
    when there is one, else of our EoR count, which is at least as good as any linear count on
    average). Under rules other than the published conditions nothing is judged.
    """
    target = replay if replay is not None else ours
    rows = {}
    for key in ("bet_frequency", "average_edge", "units_per_100_hands", "units_per_shoe"):
        value = getattr(published, key)
        if value is None:
            continue
        entry = target[key]
        row = {
            "published": value,
            "ours": entry["estimate"],
            "ci95": entry["ci95"],
            "agrees": _inside(value, entry) if comparable else None,
        }
        if replay is None and key in ("bet_frequency", "average_edge"):
            row["agrees"] = None  # another count bets on other hands: only the gains compare
            row["note"] = "not comparable: the published count is not ours"
        elif (
            replay is None
            and comparable
            and not row["agrees"]
            and entry["estimate"] is not None
            and value < entry["ci95"][0]
        ):
            row["note"] = (
                "below ours: the published figure is of another count, and ours is fitted to the exact EVs"
            )
        rows[key] = row
    edge = None
    if published.house_edge is not None:
        edge = {
            "published": published.house_edge,
            "ours": house_edge,
            "agrees": abs(house_edge - published.house_edge) < 5e-5 + 1e-3 * published.house_edge,
        }
    return {
        "source": published.source,
        "conditions": published.conditions,
        "pays": published.pays,
        "compared_with": "the published count replayed on our shoes"
        if replay is not None
        else "our EoR count (no tags published)",
        "tags": None if published.tags is None else list(published.tags),
        "trigger": published.trigger,
        "house_edge": edge,
        "figures": rows,
        "judged": comparable,
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
        working_per_item=engine.table_bytes(rules) + 8 * (1 + 4 * k + 3 * 3 * k),
        kept_per_item=8 * (1 + 4 * k + 3 * 3 * k),
        parallel=1 if backend == "serial" else workers or os.cpu_count() or 1,
    )

    # 2. effects of removal, full-shoe EVs
    t0 = time.perf_counter()
    removal = effects_of_removal(full, book)
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
    counts: list[dict] = []  # one per count: kind, bet, tags, threshold
    for j in range(k):
        tags = eor_tags(eor[:, j], config.max_tag)
        threshold = math.inf
        if np.any(tags):
            tc = true_counts(training["unseen"], tags[None, :], rules.decks)[:, 0]
            threshold = best_threshold(tc, training["ev"][:, j])[0]
        counts.append({"kind": "eor", "bet": j, "tags": tags, "threshold": threshold})
    for j in range(k):
        tags, threshold, m, _ = _fit_integer_count(
            eor[:, j], training, j, rules.decks, config.integer_max_tag
        )
        counts.append({"kind": "integer", "bet": j, "tags": tags, "threshold": threshold, "largest_tag": m})
    published = [p for p in PUBLISHED if p.bet in names] if config.published else []
    for p in published:
        if p.tags is not None and p.trigger is not None:
            counts.append(
                {
                    "kind": "published",
                    "bet": names.index(p.bet),
                    "tags": published_tags(p.tags),
                    "threshold": float(p.trigger),
                    "source": p.source,
                }
            )
    timings["count_fitting_s"] = time.perf_counter() - t0
    training_hands = int(training["ev"].shape[0])
    del training

    # 4. main deal, in chunks
    t0 = time.perf_counter()
    tags = np.array([c["tags"] for c in counts]).reshape(len(counts), R.N_RANKS)
    thresholds = np.array([c["threshold"] for c in counts], dtype=np.float64)
    count_bet = np.array([c["bet"] for c in counts], dtype=np.int64)
    chunks = scale.plan(config.shoes, config.chunk_shoes, config.seed)
    task = functools.partial(
        deal_chunk,
        rules=rules,
        bets=names,
        tags=tags,
        thresholds=thresholds,
        count_bet=count_bet,
        custom=config.custom_bets,
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
    for c, count in enumerate(counts):
        name = names[count["bet"]]
        figures: dict = {
            "tags": {rank: float(v) for rank, v in zip(R.RANKS, count["tags"], strict=True)},
            "balance": float(full @ count["tags"]),
            "threshold": None if math.isinf(count["threshold"]) else count["threshold"],
        }
        if not np.any(count["tags"]):
            figures["note"] = (
                "no linear count: every effect of removal is zero (e.g. the pair bets: "
                "all ranks are equally common in a full shoe)"
            )
        figures.update(
            bettor_figures(main["count_bets"][:, c], main["count_ev"][:, c], main["count_payoff"][:, c], n)
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
        "ranking": ranking,
        "bets": per_bet,
        "timings": timings,
    }


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
    (folder / "atlas.md").write_text(
        "## Ranked by the EoR count's gain (units per 100 hands dealt; 95% CIs over shoes)\n\n"
        + to_markdown(result)
        + "\n\n## Published count figures beside ours\n\n"
        + published_markdown(result)
        + "\n\n## The integer counts\n\n"
        + counts_markdown(result)
        + "\n"
    )
    (folder / "atlas.txt").write_text(report(result) + "\n")
    plot(result, folder / "atlas.png")
    return [folder / n for n in OUTPUT_NAMES]


def main(
    config_path: str,
    out: str | None = None,
    as_json: bool = False,
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    resume: bool | None = None,
) -> dict:
    """Load and validate the config, run, print the report (unless ``as_json``), write ``out``.

    ``backend`` (``serial``, ``processes``, ``dask``), ``scheduler`` and ``workers`` choose where the
    main deal's chunks run; the result is the same on every backend except ``"timings"``. ``out`` is
    checked before the run, its files are moved into place together, and the finished chunks of an
    interrupted run are kept in ``out/.partial`` for a rerun to resume (``resume=False`` discards
    them): see :func:`experiments.study.main`.
    """
    return study.main(
        "atlas",
        config_path,
        AtlasConfig,
        OUTPUT_NAMES,
        run,
        write_outputs,
        report,
        out=out,
        as_json=as_json,
        backend=backend,
        scheduler=scheduler,
        workers=workers,
        resume=resume,
    )


__all__ = [
    "AtlasConfig",
    "BetBook",
    "ConfigError",
    "PUBLISHED",
    "Published",
    "bet_book",
    "counts_markdown",
    "available_bets",
    "effects_of_removal",
    "eor_tags",
    "true_counts",
    "deal_hands",
    "deal_chunk",
    "merge",
    "bettor_figures",
    "compare_published",
    "run",
    "main",
    "report",
    "to_csv",
    "to_markdown",
    "plot",
    "write_outputs",
]

if __name__ == "__main__":  # python -m pb_gym.experiments.atlas CONFIG [OUT]
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, as_json=bool(os.environ.get("PB_GYM_JSON")))
