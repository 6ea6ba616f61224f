"""Exact odds of the suited side bets for a suit-level composition (counts by rank and suit).

The engine and :mod:`pb_gym.exact` track ranks only; a bet settled on suits needs the composition by
rank *and* suit, a ``(13, 4)`` array (rank index A..K by suit index), here. The perfect-pair bets depend
only on the first two cards of each hand (cards 1 and 3 for the player, 2 and 4 for the banker), so they
have a closed form by exchangeability: with ``n_c`` the count of card ``c`` (one rank, one suit) and
``N`` the cards left, ordered first-four-card deals number ``(N)_4``, those where the player's two cards
are identical ``S2 (N - 2)(N - 3)`` with ``S2 = sum_c n_c (n_c - 1)``, and those where both hands are
``S4 = sum_{c,d} n_c (n_c - 1)(n_d - 2[c=d])(n_d - 1 - 2[c=d])``.

The published combination counts (Wizard of Odds, "Perfect Pairs") are of the first four cards,
unordered within each hand: the ordered counts divided by 4.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from pb_gym import rules as R

N_SUITS = 4
SUITS = ("clubs", "diamonds", "hearts", "spades")

WOO_PERFECT_PAIRS = "Wizard of Odds, Perfect Pairs (wizardofodds.com/games/baccarat/side-bets/perfect-pairs/)"


@dataclasses.dataclass(frozen=True)
class PerfectPairBet:
    """A perfect-pair paytable: net win per unit when exactly one hand, and when both hands, hold a
    pair identical in rank and suit in their first two cards."""

    name: str
    title: str
    pays_one: float
    pays_both: float
    source: str


PERFECT_PAIR_BETS: dict[str, PerfectPairBet] = {
    bet.name: bet
    for bet in (
        PerfectPairBet(
            "perfect_pair",
            "Perfect Pair (Evolution; Wizard of Odds version 2): one 25:1, both 250:1",
            25,
            250,
            WOO_PERFECT_PAIRS,
        ),
        PerfectPairBet(
            "perfect_pair_v1",
            "Perfect Pair (Playtech, BetConstruct; Wizard of Odds version 1): either hand 25:1",
            25,
            25,
            WOO_PERFECT_PAIRS,
        ),
    )
}
"""The suited bets priced here, by name, each with its cited paytable."""


def suited_shoe(decks: int) -> np.ndarray:
    """Counts by rank and suit, ``(13, 4)``, of a fresh shoe of ``decks`` decks."""
    return np.full((R.N_RANKS, N_SUITS), int(decks), dtype=np.int64)


def validate_suited(composition: np.ndarray | Sequence) -> np.ndarray:
    """Check a suit-level composition (``(..., 13, 4)`` whole counts >= 0, at least 4 cards each)."""
    array = np.asarray(composition)
    if array.ndim < 2 or array.shape[-2:] != (R.N_RANKS, N_SUITS):
        raise ValueError(
            f"a suited composition has shape (..., {R.N_RANKS}, {N_SUITS}) (ranks "
            f"{', '.join(R.RANKS)} by suits {', '.join(SUITS)}); got {array.shape}"
        )
    if array.dtype.kind not in "iu" or np.any(array < 0):
        raise ValueError("suited composition counts must be whole numbers >= 0")
    if np.any(array.sum(axis=(-2, -1)) < 4):
        raise ValueError("a suited composition must hold at least 4 cards (both hands' first two)")
    return array.astype(np.int64)


def perfect_pair_counts(composition: np.ndarray | Sequence) -> dict[str, int]:
    """Exact counts of first-four-card deals (unordered within each hand) with two, one and no perfect
    pairs, and their total, for one suit-level composition. Python integers: exact for any size."""
    comp = validate_suited(composition)
    if comp.ndim != 2:
        raise ValueError("perfect_pair_counts takes one suited composition (13 x 4 counts)")
    counts = [int(x) for x in comp.ravel()]
    n = sum(counts)
    two_of = [c * (c - 1) for c in counts]
    s2 = sum(two_of)
    s4 = (
        s2 * s2
        - sum(t * t for t in two_of)
        + sum(t * (c - 2) * (c - 3) for t, c in zip(two_of, counts, strict=True))
    )
    total = n * (n - 1) * (n - 2) * (n - 3)
    player = s2 * (n - 2) * (n - 3)
    two = s4
    one = 2 * player - 2 * s4
    return {"two": two // 4, "one": one // 4, "none": (total - one - two) // 4, "total": total // 4}


def perfect_pair_probabilities(composition: np.ndarray | Sequence) -> np.ndarray:
    """P(no, exactly one, two perfect pairs), ``(..., 3)``, vectorized over leading axes."""
    comp = validate_suited(composition).astype(np.float64)
    flat = comp.reshape(comp.shape[:-2] + (-1,))
    n = flat.sum(axis=-1)
    two_of = flat * (flat - 1)
    s2 = two_of.sum(axis=-1)
    s4 = s2 * s2 - (two_of * two_of).sum(axis=-1) + (two_of * (flat - 2) * (flat - 3)).sum(axis=-1)
    total = n * (n - 1) * (n - 2) * (n - 3)
    two = s4 / total
    one = 2 * s2 * (n - 2) * (n - 3) / total - 2 * two
    return np.stack([1 - one - two, one, two], axis=-1)


def suit_class_probabilities(composition: np.ndarray | Sequence) -> np.ndarray:
    """P(each suit class) ``(..., 4)`` (:data:`pb_gym.rules.N_SUIT_CLASSES`: no perfect pair, the
    player's only, the banker's only, both): the player's and the banker's first two cards are
    exchangeable, so each hand alone holds half of the one-pair deals."""
    p = perfect_pair_probabilities(composition)
    return np.stack([p[..., 0], p[..., 1] / 2, p[..., 1] / 2, p[..., 2]], axis=-1)


def suit_class_counts(composition: np.ndarray | Sequence) -> list[int]:
    """Counts of first-four-card deals (unordered within each hand, the published convention) in each
    suit class, for one suited composition: ``[none, player's only, banker's only, both]``."""
    counts = perfect_pair_counts(composition)
    return [counts["none"], counts["one"] // 2, counts["one"] // 2, counts["two"]]


def catalog_definitions() -> tuple[dict, ...]:
    """The perfect-pair bets of :data:`PERFECT_PAIR_BETS` as catalog definitions (rows over the
    ``perfect_pairs`` field, for :func:`pb_gym.catalog.bet_from_dict`)."""
    out = []
    for bet in PERFECT_PAIR_BETS.values():
        if bet.pays_one == bet.pays_both:
            rows = [{"when": {"perfect_pairs": [1, 2]}, "pays": bet.pays_one, "label": "a perfect pair"}]
        else:
            rows = [
                {"when": {"perfect_pairs": 1}, "pays": bet.pays_one, "label": "one perfect pair"},
                {"when": {"perfect_pairs": 2}, "pays": bet.pays_both, "label": "two perfect pairs"},
            ]
        out.append({"name": bet.name, "title": bet.title, "source": bet.source, "rows": rows})
    return tuple(out)


def expected_values(composition: np.ndarray | Sequence, bets: Sequence[str] | None = None) -> np.ndarray:
    """Exact EV per unit of each suited bet (default: all of :data:`PERFECT_PAIR_BETS`), ``(..., k)``."""
    names = list(PERFECT_PAIR_BETS) if bets is None else list(bets)
    for name in names:
        if name not in PERFECT_PAIR_BETS:
            raise ValueError(f"unknown suited bet {name!r}; allowed: {', '.join(PERFECT_PAIR_BETS)}")
    p = perfect_pair_probabilities(composition)
    return np.stack(
        [
            p[..., 1] * PERFECT_PAIR_BETS[n].pays_one + p[..., 2] * PERFECT_PAIR_BETS[n].pays_both - p[..., 0]
            for n in names
        ],
        axis=-1,
    )


__all__ = [
    "N_SUITS",
    "PERFECT_PAIR_BETS",
    "SUITS",
    "PerfectPairBet",
    "catalog_definitions",
    "expected_values",
    "perfect_pair_counts",
    "perfect_pair_probabilities",
    "suit_class_counts",
    "suit_class_probabilities",
    "suited_shoe",
    "validate_suited",
]
