"""A plain one-table Python loop over the same rules: the benchmark's baseline and a test oracle.

It reads the rule tables of :mod:`pb_gym.rules` (no second copy of the tableau) but shares no code with
the compiled engine, so dealing the same shoe through both and comparing the hands checks the engine.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

from pb_gym import rules as R


class ReferenceHand(NamedTuple):
    """One hand: the cards (codes 1..13) of each side, final totals and the outcome class index."""

    player: tuple[int, ...]
    banker: tuple[int, ...]
    player_total: int
    banker_total: int
    outcome: int


def _value(card: int) -> int:
    return int(R.CARD_VALUES[card])


def deal_hand(shoe: Sequence[int], position: int) -> tuple[ReferenceHand, int]:
    """Deal one hand from ``shoe`` (card codes in deal order) starting at ``position``.

    Returns the hand and the position of the next card.
    """
    player = [shoe[position], shoe[position + 2]]
    banker = [shoe[position + 1], shoe[position + 3]]
    position += 4
    player_total = (_value(player[0]) + _value(player[1])) % 10
    banker_total = (_value(banker[0]) + _value(banker[1])) % 10
    if player_total < R.NATURAL_MIN and banker_total < R.NATURAL_MIN:
        third_value = None
        if R.PLAYER_DRAWS[player_total]:
            player.append(shoe[position])
            position += 1
            third_value = _value(player[2])
            player_total = (player_total + third_value) % 10
        if R.banker_draws(banker_total, third_value):
            banker.append(shoe[position])
            position += 1
            banker_total = (banker_total + _value(banker[2])) % 10
    outcome = int(R.OUTCOME_TABLE[player_total, banker_total, len(player) - 2, len(banker) - 2])
    return ReferenceHand(tuple(player), tuple(banker), player_total, banker_total, outcome), position


class ReferenceTable:
    """One table dealt by a plain Python loop: shuffle, burn, deal to the cut card, reshuffle."""

    def __init__(self, rules: R.Rules, seed: int | None = None) -> None:
        self.rules = rules
        self.random = random.Random(seed)
        self.cut_position = rules.n_cards - rules.cards_behind_cut
        self.new_shoe()

    def new_shoe(self) -> None:
        """Shuffle all cards and apply the burn rule."""
        self.shoe = [
            rank + 1 for rank in range(R.N_RANKS) for _ in range(R.CARDS_PER_RANK_PER_DECK * self.rules.decks)
        ]
        self.random.shuffle(self.shoe)
        self.position = 0
        self.hand_after_cut_dealt = False
        if self.rules.burn:
            self.position = 1 + int(R.BURN_COUNTS[self.shoe[0] - 1])

    def deal(self) -> ReferenceHand:
        """Deal the next hand, reshuffling first if the cut card has come out."""
        if self.position >= self.cut_position:
            if self.rules.hand_after_cut and not self.hand_after_cut_dealt:
                self.hand_after_cut_dealt = True
            else:
                self.new_shoe()
        hand, self.position = deal_hand(self.shoe, self.position)
        return hand
