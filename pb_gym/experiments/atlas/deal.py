"""The atlas's deal: the first shoe of every table, hand by hand, every bet priced before each hand.

Each hand is dealt by the engine from the first shoe only (burn, cut card), its exact EV for every bet
of the book (:mod:`pb_gym.experiments.atlas.book`) computed first from the cards not yet seen, and
its payoff read from the pay matrix's row of the dealt hand class. The training deal keeps every hand
(:func:`training_deal`: the counts' thresholds are fitted on it); a chunk of the main deal keeps sums
per shoe only (:func:`deal_chunk`), concatenated in chunk order by :func:`merge`.
"""

from __future__ import annotations

import numpy as np

from pb_gym import engine
from pb_gym import rules as R
from pb_gym.experiments.atlas.book import BetBook, bet_book
from pb_gym.experiments.common import scale
from pb_gym.experiments.counting import counts
from pb_gym.experiments.counting.counts import true_counts


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


__all__ = ["deal_hands", "pair_share", "training_deal", "PER_SHOE", "deal_chunk", "merge"]
