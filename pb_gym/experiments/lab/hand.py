"""Lesson 1, one hand: the exact odds of each bet, hands dealt from a real shoe, the tableau read aloud.

Every figure comes from the project's own calculators: the probabilities and the house edge of each
bet from :func:`pb_gym.exact.hand_class_probabilities` and the catalog's paytables
(:func:`bet_odds`), the hands from the shoe engine (:func:`deal_hands`). :func:`narrate` reads the
rule tables of :mod:`pb_gym.rules` (the player's rule, the banker's tableau) to say why each card was
drawn; the cards themselves are the engine's.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from pb_gym import catalog, engine, exact
from pb_gym import rules as R
from pb_gym.experiments.lab.common import check_choice, check_int, lab_rules

MAIN_BETS = ("banker", "player", "tie")
"""The three main bets, in the order the lesson shows them."""
SIDE_BETS = ("dragon7", "panda8", "player_pair", "banker_pair")
"""The side bets the lesson offers beside the main bets."""
MAX_HANDS = 10_000
"""The most hands the lesson deals from one seed."""
_BLOCK = 500


def bet_odds(decks: int, side_bet: str) -> list[dict]:
    """The exact odds of the main bets and one side bet for the first hand of a full shoe.

    Args:
        decks: decks in the shoe, 1 to 8.
        side_bet: one of :data:`SIDE_BETS`.

    Returns:
        One row per bet: ``bet``, ``p_win`` (the bet is paid), ``p_push`` (the stake comes back),
        ``p_lose``, ``pays`` (the largest payout per unit) and ``house_edge`` (minus the EV per unit).
    """
    check_int("decks", decks, 1, R.MAX_DECKS)
    check_choice("side_bet", side_bet, SIDE_BETS)
    return _bet_odds(int(decks), side_bet)


@functools.lru_cache(maxsize=64)
def _bet_odds(decks: int, side_bet: str) -> list[dict]:
    rules = lab_rules(decks)
    p = exact.hand_class_probabilities(R.full_shoe(decks))
    rows = []
    for name in (*MAIN_BETS, side_bet):
        column = catalog.get_bet(name, rules).column()
        rows.append(
            {
                "bet": name,
                "p_win": float(p[column > 0].sum()),
                "p_push": float(p[column == 0].sum()),
                "p_lose": float(p[column < 0].sum()),
                "pays": float(column.max()),
                "house_edge": -float(p @ column),
            }
        )
    return rows


class _Stream:
    """The hands of one table dealt from one seed, kept as they are dealt (the first ``n`` hands are
    the same whatever was asked before)."""

    def __init__(self, decks: int, seed: int) -> None:
        self.rules = lab_rules(decks)
        self.state = engine.init(self.rules, 1, seed=seed)
        self.parts: list[dict[str, np.ndarray]] = []
        self.size = 0
        self.lock = threading.Lock()

    def first(self, n: int) -> dict[str, np.ndarray]:
        with self.lock:
            while self.size < n:
                self._deal(_BLOCK)
            joined = {key: np.concatenate([part[key] for part in self.parts]) for key in self.parts[0]}
        return {key: value[:n] for key, value in joined.items()}

    def _deal(self, count: int) -> None:
        keys = (
            "player_cards",
            "banker_cards",
            "player_total",
            "banker_total",
            "winner",
            "player_pair",
            "banker_pair",
        )
        block: dict[str, list] = {key: [] for key in (*keys, "shuffled", "payoffs")}
        for _ in range(count):
            _, hand = engine.deal(self.rules, self.state)
            for key in (*keys, "shuffled"):
                block[key].append(getattr(hand, key)[0].copy())
            block["payoffs"].append(hand.payoffs(self.rules)[0])
        self.parts.append({key: np.array(values) for key, values in block.items()})
        self.size += count


@functools.lru_cache(maxsize=16)
def _stream(decks: int, seed: int) -> _Stream:
    return _Stream(decks, seed)


def deal_hands(decks: int, hands: int, seed: int) -> dict[str, np.ndarray]:
    """The first ``hands`` hands of one table of the shoe engine seeded with ``seed``.

    Args:
        decks: decks in the shoe, 1 to 8.
        hands: how many hands, 1 to :data:`MAX_HANDS`.
        seed: the engine's root seed, an integer >= 0.

    Returns:
        Arrays with one row per hand: ``player_cards`` and ``banker_cards`` (card codes, 0 for no
        third card), ``player_total``, ``banker_total``, ``winner`` (:class:`pb_gym.rules.Outcome`),
        the pair flags, ``shuffled`` (a fresh shoe began) and ``payoffs`` (net win per unit of each
        of :data:`pb_gym.rules.BETS`).
    """
    check_int("decks", decks, 1, R.MAX_DECKS)
    check_int("hands", hands, 1, MAX_HANDS)
    check_int("seed", seed, 0, None)
    return _stream(int(decks), int(seed)).first(int(hands))


def running_frequencies(dealt: dict[str, np.ndarray], side_bet: str) -> dict[str, np.ndarray]:
    """The share of hands so far that paid each main bet and ``side_bet``, after each hand.

    Args:
        dealt: hands from :func:`deal_hands`.
        side_bet: one of :data:`SIDE_BETS`.

    Returns:
        One array per bet (``banker``, ``player``, ``tie``, ``side_bet``): after hand ``k`` (index
        ``k - 1``) the share of the first ``k`` hands on which it was paid.
    """
    check_choice("side_bet", side_bet, SIDE_BETS)
    count = np.arange(1, len(dealt["winner"]) + 1)
    paid = dealt["payoffs"] > 0
    return {bet: np.cumsum(paid[:, R.BETS.index(bet)]) / count for bet in (*MAIN_BETS, side_bet)}


def _cards(codes: np.ndarray) -> str:
    return " ".join(R.RANKS[int(c) - 1] for c in codes if c)


def _value(code: int) -> int:
    return int(R.CARD_VALUES[int(code)])


def narrate(player_cards: np.ndarray, banker_cards: np.ndarray) -> list[str]:
    """The hand told step by step as the rules decide it: the two-card totals, naturals, the player's
    rule, the banker's tableau, the winner.

    Args:
        player_cards: the player's cards as the engine dealt them (3 codes, 0 for no third card).
        banker_cards: the banker's cards (the same).

    Returns:
        One sentence per step, in the order of the deal.
    """
    player, banker = [int(c) for c in player_cards], [int(c) for c in banker_cards]
    pt = (_value(player[0]) + _value(player[1])) % 10
    bt = (_value(banker[0]) + _value(banker[1])) % 10
    steps = [
        f"Player is dealt {_cards(np.array(player[:2]))}: total {pt}.",
        f"Banker is dealt {_cards(np.array(banker[:2]))}: total {bt}.",
    ]
    if pt >= R.NATURAL_MIN or bt >= R.NATURAL_MIN:
        steps.append(f"A natural ({max(pt, bt)} on two cards): both hands stand.")
    else:
        third = None
        if R.PLAYER_DRAWS[pt]:
            third = _value(player[2])
            pt = (pt + third) % 10
            steps.append(f"Player draws on 0-5: a {R.RANKS[player[2] - 1]}, total {pt}.")
        else:
            steps.append(f"Player stands on {pt} (6 or 7).")
        column = R.NO_THIRD_CARD if third is None else third
        why = "the player stood" if third is None else f"the player's third card is worth {third}"
        if R.BANKER_TABLEAU[bt, column]:
            drawn = (bt + _value(banker[2])) % 10
            card = R.RANKS[banker[2] - 1]
            steps.append(f"Banker has {bt}, {why}: the tableau says draw: a {card}, total {drawn}.")
            bt = drawn
        else:
            steps.append(f"Banker has {bt}, {why}: the tableau says stand.")
    if pt == bt:
        steps.append(f"{pt} against {bt}: a tie (the banker and player bets push, the tie bet wins).")
    else:
        winner = "Banker" if bt > pt else "Player"
        steps.append(f"Banker {bt}, Player {pt}: {winner} wins.")
    return steps


__all__ = ["MAIN_BETS", "SIDE_BETS", "MAX_HANDS", "bet_odds", "deal_hands", "running_frequencies", "narrate"]
