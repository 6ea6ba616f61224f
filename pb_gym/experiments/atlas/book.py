"""The atlas's bet book: the studied bets, their pay matrix over the hand classes, and the exact EV of
every one of them for many compositions at once.

The bets are the catalog's (:mod:`pb_gym.catalog`) and the user's own (``custom_bets:``). The exact
calculator evaluates every bet of a composition in one pass over the card multisets (the class
probabilities times the pay matrix), so the cost of a hand grows with the number of hand classes, not
with the number of bets.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np

from pb_gym import catalog, exact
from pb_gym import rules as R


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
            :func:`pb_gym.experiments.atlas.deal.pair_share`).
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


__all__ = ["BetBook", "available_bets", "default_bets", "bet_book"]
