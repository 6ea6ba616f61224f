"""Lessons 5 and 6, one shoe dealt hand by hand: the roads, and the exact odds of the cards left.

:func:`deal_shoe` deals one shoe of one engine table, from the shuffle to the cut card, and keeps
before every hand the cards the players have not seen (:func:`pb_gym.engine.next_hand_composition`).
From those compositions the exact calculator gives the next hand's odds (:func:`next_hand_odds`) and
any bet's EV (:func:`side_bet_ev`); :func:`road_reading` draws the scoreboard of the hands so far with
:func:`pb_gym.roads.read_roads` and says what a road reader would bet. :func:`counting_summary` deals
many shoes the same way: how often, and how far, a side bet turns positive late in a shoe.
"""

from __future__ import annotations

import functools

import numpy as np

from pb_gym import catalog, engine, exact, roads
from pb_gym import rules as R
from pb_gym.experiments.lab.common import check_choice, check_int, lab_rules

COUNTED_BETS = ("dragon7", "panda8", "player_pair", "banker_pair", "tie")
"""The bets the counting lesson follows through a shoe."""
MAX_SHOES = 400
"""The most shoes :func:`counting_summary` deals."""


def deal_shoe(decks: int, seed: int) -> dict[str, np.ndarray]:
    """Every hand of one shoe of one engine table seeded with ``seed``.

    Args:
        decks: decks in the shoe, 1 to 8.
        seed: the engine's root seed, an integer >= 0.

    Returns:
        Arrays with one row per hand: ``winner`` (:class:`pb_gym.rules.Outcome`), ``banker_pair``,
        ``player_pair``, ``player_total``, ``banker_total``, ``payoffs`` (per unit, each of
        :data:`pb_gym.rules.BETS`) and ``composition`` (the 13 counts by rank the players had not seen
        before the hand).
    """
    check_int("decks", decks, 1, R.MAX_DECKS)
    check_int("seed", seed, 0, None)
    return _deal_shoes(int(decks), int(seed), 1)[0]


@functools.lru_cache(maxsize=32)
def _deal_shoes(decks: int, seed: int, shoes: int) -> list[dict[str, np.ndarray]]:
    """One shoe at each of ``shoes`` tables (table ``t``'s is the shoe :func:`deal_shoe` deals from
    ``seed`` when ``shoes`` is 1 and ``t`` is 0)."""
    rules = lab_rules(decks)
    state = engine.init(rules, shoes, seed=seed)
    keys = ("winner", "banker_pair", "player_pair", "player_total", "banker_total")
    rows: list[dict[str, np.ndarray]] = []
    playing = np.ones(shoes, dtype=bool)
    while True:
        playing &= ~engine.shoe_over(rules, state)
        if not playing.any():
            break
        composition = engine.next_hand_composition(rules, state)
        _, hand = engine.deal(rules, state, active=playing.copy())
        row = {key: getattr(hand, key).copy() for key in keys}
        row["payoffs"] = hand.payoffs(rules)
        row["composition"] = composition
        row["dealt"] = playing.copy()
        rows.append(row)
    out = []
    for t in range(shoes):
        dealt = np.array([row["dealt"][t] for row in rows])
        out.append(
            {key: np.array([row[key][t] for row in rows])[dealt] for key in (*keys, "payoffs", "composition")}
        )
    return out


def next_hand_odds(composition: np.ndarray, decks: int = 8) -> dict[str, np.ndarray]:
    """The exact odds of the next hand dealt from each composition (``(..., 13)`` counts by rank).

    Returns:
        ``banker``, ``player``, ``tie`` (the probabilities of each winner) and ``banker_ev``,
        ``player_ev`` (per unit staked), each an array over the compositions.
    """
    check_int("decks", decks, 1, R.MAX_DECKS)
    composition = np.asarray(composition)
    p = exact.outcome_probabilities(composition)
    ev = catalog.expected_values(composition, ["banker", "player"], lab_rules(int(decks)))
    return {
        "banker": p[..., R.OUTCOME_WINNER == R.BANKER].sum(axis=-1),
        "player": p[..., R.OUTCOME_WINNER == R.PLAYER].sum(axis=-1),
        "tie": p[..., R.OUTCOME_WINNER == R.TIE].sum(axis=-1),
        "banker_ev": ev[..., 0],
        "player_ev": ev[..., 1],
    }


def road_reading(shoe: dict[str, np.ndarray], hands: int) -> dict:
    """The roads after the first ``hands`` hands of ``shoe`` and what a road reader would bet next.

    Args:
        shoe: a shoe from :func:`deal_shoe`.
        hands: how many of its hands have been dealt, 0 to all.

    Returns:
        ``roads`` (:class:`pb_gym.roads.Roads`), ``streak`` (the last Big Road column's winner, ``B``
        or ``P``, and its length; None before the first decision) and ``says``: the road readers'
        claims as sentences (follow the streak, the chop, the ask road).
    """
    check_int("hands", hands, 0, len(shoe["winner"]))
    letters = [R.OUTCOME_LETTERS[int(w)] for w in shoe["winner"][:hands]]
    board = roads.read_roads(
        letters, shoe["banker_pair"][:hands].tolist(), shoe["player_pair"][:hands].tolist()
    )
    if not board.big_road:
        return {"roads": board, "streak": None, "says": ["No decision yet: the roads are empty."]}
    column = board.big_road[-1]
    winner, length = column[-1].winner, len(column)
    name = {"B": "banker", "P": "player"}
    other = "P" if winner == "B" else "B"
    says = [
        f"Big Road: {length} {name[winner]} win{'s' if length > 1 else ''} in a row. "
        f"'Follow the streak' says bet {name[winner]}; 'the chop is due' says {name[other]}.",
    ]
    for letter in ("B", "P"):
        marks = ", ".join(
            f"{road.replace('_', ' ')} {mark or '-'}" for road, mark in board.ask[letter].items()
        )
        says.append(f"Ask road, if {name[letter]} wins next: {marks}.")
    return {"roads": board, "streak": (winner, length), "says": says}


def side_bet_ev(shoe: dict[str, np.ndarray], bet: str, decks: int = 8) -> np.ndarray:
    """The exact EV per unit of ``bet`` (one of :data:`COUNTED_BETS`) before every hand of ``shoe``."""
    check_choice("bet", bet, COUNTED_BETS)
    check_int("decks", decks, 1, R.MAX_DECKS)
    return catalog.expected_values(shoe["composition"], [bet], lab_rules(int(decks)))[:, 0]


def counting_summary(decks: int, seed: int, bet: str, shoes: int = 200) -> dict:
    """``shoes`` shoes dealt from ``seed`` (one per engine table) and the exact EV of ``bet`` before
    each of their hands.

    Args:
        decks: decks in the shoe, 1 to 8.
        seed: the engine's root seed, an integer >= 0.
        bet: one of :data:`COUNTED_BETS`.
        shoes: how many shoes, 1 to :data:`MAX_SHOES`.

    Returns:
        ``full_shoe_ev`` (the EV before the first hand), ``hands``, ``positive_hands`` (hands whose EV
        is above 0), ``shoes_with_positive`` (shoes with at least one), ``mean_positive_ev`` (the mean
        EV of the positive hands; None without any), ``gain_per_shoe`` (the mean net win per shoe of
        one unit on ``bet`` exactly when its EV is positive, from the real hands) and ``by_depth``:
        ``cards_dealt`` bins and the share of hands positive in each.
    """
    check_int("decks", decks, 1, R.MAX_DECKS)
    check_int("seed", seed, 0, None)
    check_choice("bet", bet, COUNTED_BETS)
    check_int("shoes", shoes, 1, MAX_SHOES)
    return _counting_summary(int(decks), int(seed), bet, int(shoes))


@functools.lru_cache(maxsize=32)
def _counting_summary(decks: int, seed: int, bet: str, shoes: int) -> dict:
    dealt = _deal_shoes(decks, seed, shoes)
    composition = np.concatenate([shoe["composition"] for shoe in dealt])
    paid = np.concatenate([shoe["payoffs"][:, R.BETS.index(bet)] for shoe in dealt])
    ev = catalog.expected_values(composition, [bet], lab_rules(decks))[:, 0]
    positive = ev > 0
    first = np.cumsum([0] + [len(shoe["winner"]) for shoe in dealt])
    per_shoe = [positive[a:b].any() for a, b in zip(first[:-1], first[1:], strict=True)]
    cards_dealt = R.full_shoe(decks).sum() - composition.sum(axis=1)
    edges = np.linspace(0, R.full_shoe(decks).sum(), 9)
    where = np.clip(np.digitize(cards_dealt, edges) - 1, 0, len(edges) - 2)
    share = [float(positive[where == k].mean()) if (where == k).any() else 0.0 for k in range(len(edges) - 1)]
    return {
        "full_shoe_ev": float(catalog.expected_values(R.full_shoe(decks), [bet], lab_rules(decks))[0]),
        "hands": int(ev.size),
        "positive_hands": int(positive.sum()),
        "shoes_with_positive": int(sum(per_shoe)),
        "mean_positive_ev": float(ev[positive].mean()) if positive.any() else None,
        "gain_per_shoe": float(paid[positive].sum() / shoes),
        "by_depth": {"cards_dealt": edges.tolist(), "share_positive": share},
    }


__all__ = [
    "COUNTED_BETS",
    "MAX_SHOES",
    "deal_shoe",
    "next_hand_odds",
    "road_reading",
    "side_bet_ev",
    "counting_summary",
]
