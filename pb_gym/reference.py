"""A plain one-table Python loop over the same rules: the benchmark's baseline and a test oracle.

It reads the rule tables of :mod:`pb_gym.rules` (no second copy of the tableau) but shares no code with
the compiled engine, so dealing the same shoe through both and comparing the hands checks the engine.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

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


class LockstepDealer:
    """N tables dealt in lockstep by plain numpy (whole-array passes with masks and fancy indexing, no
    compiled code): the benchmark's comparison for the compiled engine, on the same rules.

    Each shoe is shuffled with numpy's generator (``Generator.permuted`` along the rows), burned, dealt
    to the cut card and reshuffled (after one more hand with ``hand_after_cut``), as the engine does;
    its random stream is numpy's, so its hands are not the engine's. :meth:`deal` returns the
    player's and banker's cards (0 = no third card), totals and outcome classes of one hand at every
    table."""

    def __init__(self, rules: R.Rules, n_tables: int, seed: int | None = None) -> None:
        self.rules = rules
        self.n = int(n_tables)
        self.random = np.random.default_rng(seed)
        per_rank = R.CARDS_PER_RANK_PER_DECK * rules.decks
        self.sorted_shoe = np.repeat(np.arange(1, R.N_RANKS + 1, dtype=np.intp), per_rank)
        self.shoe = np.empty((self.n, rules.n_cards), dtype=np.intp)
        self.position = np.zeros(self.n, dtype=np.intp)
        self.after_cut = np.zeros(self.n, dtype=np.bool_)
        self.cut_position = rules.n_cards - rules.cards_behind_cut
        self.values = R.CARD_VALUES.astype(np.intp)
        self.burn = R.BURN_COUNTS.astype(np.intp)
        self.new_shoes(np.arange(self.n))

    def new_shoes(self, tables: np.ndarray) -> None:
        """Shuffle and burn a fresh shoe at ``tables`` (indices)."""
        shoes = self.random.permuted(self.sorted_shoe[None, :].repeat(len(tables), axis=0), axis=1)
        self.shoe[tables] = shoes
        self.after_cut[tables] = False
        self.position[tables] = (1 + self.burn[shoes[:, 0] - 1]) if self.rules.burn else 0

    def deal(self) -> tuple:
        """One hand at every table: ``(player_cards (n, 3), banker_cards (n, 3), player_total,
        banker_total, outcome)``."""
        due = self.position >= self.cut_position
        if self.rules.hand_after_cut:
            first = due & ~self.after_cut
            self.after_cut |= first
            due &= ~first
        if due.any():
            self.new_shoes(np.flatnonzero(due))
        rows = np.arange(self.n)
        cards = self.shoe[rows[:, None], self.position[:, None] + np.arange(6)]  # the next six cards
        values = self.values[cards]
        player_total = (values[:, 0] + values[:, 2]) % 10
        banker_total = (values[:, 1] + values[:, 3]) % 10
        natural = (player_total >= R.NATURAL_MIN) | (banker_total >= R.NATURAL_MIN)
        player_draws = ~natural & R.PLAYER_DRAWS[player_total]
        column = np.where(player_draws, values[:, 4], R.NO_THIRD_CARD)
        banker_draws = ~natural & R.BANKER_TABLEAU[banker_total, column]
        banker_index = np.where(player_draws, 5, 4)
        player_total = np.where(player_draws, (player_total + values[:, 4]) % 10, player_total)
        banker_third = cards[rows, banker_index]
        banker_total = np.where(banker_draws, (banker_total + self.values[banker_third]) % 10, banker_total)
        player_cards = np.stack([cards[:, 0], cards[:, 2], np.where(player_draws, cards[:, 4], 0)], axis=1)
        banker_cards = np.stack([cards[:, 1], cards[:, 3], np.where(banker_draws, banker_third, 0)], axis=1)
        self.position += 4 + player_draws + banker_draws
        outcome = R.OUTCOME_TABLE[
            player_total, banker_total, player_draws.astype(np.intp), banker_draws.astype(np.intp)
        ]
        return player_cards, banker_cards, player_total, banker_total, outcome
