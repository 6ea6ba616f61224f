"""What a leaking casino procedure shows before a hand (:attr:`EnvConfig.leaks`), and the exact EVs
conditional on it: the one place the environments' ``expected`` rewards and ``info_ev``, the
benchmark's perfect bettor (:mod:`pb_gym.benchmark`) and its policy read the leak from.

A leak, table by table, is a :class:`Leak`: the first card's class (edge sorting: 1 high {6, 7, 8, 9},
0 low, -1 not shown), the cards burned face down (shown: they leave the unseen composition) and the
bottom card's rank index (-1 not shown; known, it is never dealt, so it leaves the composition too).
Nothing is shown for a hand dealt from a shoe shuffled as it is dealt (the cut card had come out).
The EVs: the composition less the shown cards, priced by the table's bets
(:meth:`pb_gym.catalog.TableBets.expected_values`); with the first card's class, the seven spots given
that class (:func:`pb_gym.known_cards.first_card_class_values`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pb_gym import engine, known_cards
from pb_gym import rules as R
from pb_gym.envs.config import LEAK_HIGH, EnvConfig


@dataclasses.dataclass(frozen=True)
class Leak:
    """What ``n`` tables' leaks show before a hand (arrays; see the module docstring)."""

    first_class: np.ndarray  # (n,) int8: 1 high, 0 low, -1 not shown (or not leaked)
    burned: np.ndarray  # (n, 13) int64: the face-down burned cards shown, by rank (zeros: none)
    bottom: np.ndarray  # (n,) int64: the bottom card's rank index, -1 not shown


def _leak(
    cfg: EnvConfig, visible: np.ndarray, first: np.ndarray, burned: np.ndarray, bottom: np.ndarray
) -> Leak:
    n = len(visible)
    first_class = np.full(n, -1, dtype=np.int8)
    if "first_card_class" in cfg.leaks:
        high = np.isin(first.astype(np.int64) - 1, known_cards.FIRST_CARD_HIGH_RANKS)
        first_class = np.where(visible, high.astype(np.int8), np.int8(-1))
    shown = np.zeros((n, R.N_RANKS), dtype=np.int64)
    if "burn_card" in cfg.leaks:
        shown = np.where(visible[:, None], burned.astype(np.int64), 0)
    rank = np.full(n, -1, dtype=np.int64)
    if "bottom_card" in cfg.leaks:
        rank = np.where(visible, bottom.astype(np.int64) - 1, -1)
    return Leak(first_class, shown, rank)


def before_hand(cfg: EnvConfig, shoe: engine.ShoeState) -> Leak:
    """What the leaks show before the next hand at every table of ``shoe`` (the ``leak`` features)."""
    visible = ~engine.shoe_over(cfg.rules, shoe)
    first = shoe.shoe[np.arange(shoe.n_tables), np.minimum(shoe.position, cfg.rules.n_cards - 1)]
    return _leak(cfg, visible, first, shoe.unseen - shoe.counts, shoe.shoe[:, -1])


def of_hand_dealt(
    cfg: EnvConfig, shoe: engine.ShoeState, hand: engine.HandResult, rows: np.ndarray | None = None
) -> Leak:
    """What the leaks showed before the hand just dealt (``rows``: only these tables): nothing where
    the hand came from a freshly shuffled shoe; the hand's first card's class; the shoe's burned and
    bottom cards (the same shoe as before the hand)."""
    select = slice(None) if rows is None else rows
    visible = ~hand.shuffled[select]
    return _leak(
        cfg,
        visible,
        hand.player_cards[select, 0],
        shoe.unseen[select] - shoe.counts[select],
        shoe.shoe[select, -1],
    )


def from_obs(cfg: EnvConfig, obs: np.ndarray) -> Leak:
    """What the leaks show, read back from flat observations ``(n, obs_size)`` of ``cfg`` (scaled or
    raw): the perfect bettor of :func:`pb_gym.benchmark.perfect_policy` sees what the policy sees."""
    n = len(obs)
    start = cfg.obs_offsets["leak"][0] if cfg.leaks else 0
    scale = 1.0 if cfg.obs_factors is None else None
    first = np.zeros(n, dtype=np.uint8)
    visible = np.ones(n, dtype=bool)
    burned = np.zeros((n, R.N_RANKS), dtype=np.int64)
    bottom = np.zeros(n, dtype=np.int64)
    for leak, offset in cfg.leak_offsets.items():
        a = start + offset
        high = LEAK_HIGH[leak] if scale is None else 1.0
        width = 2 if leak == "first_card_class" else R.N_RANKS
        block = np.rint(np.asarray(obs[:, a : a + width], np.float64) * high).astype(np.int64)
        if leak == "first_card_class":
            visible &= block.sum(axis=1) > 0
            first = np.where(block[:, 0] > 0, known_cards.FIRST_CARD_HIGH_RANKS[0] + 1, 1).astype(np.uint8)
        elif leak == "burn_card":
            burned = block
        else:
            visible &= block.sum(axis=1) > 0
            bottom = block.argmax(axis=1) + 1
    return _leak(cfg, visible, first, burned, bottom)


def composition(leak: Leak, unseen: np.ndarray) -> np.ndarray:
    """The unseen composition ``(n, 13)`` less the cards the leak shows (the burned, the bottom card)."""
    comp = np.asarray(unseen, dtype=np.int64) - leak.burned
    rows = np.flatnonzero(leak.bottom >= 0)
    comp[rows, leak.bottom[rows]] -= 1
    return comp


def expected_values(cfg: EnvConfig, unseen: np.ndarray, leak: Leak) -> np.ndarray:
    """Exact EV per unit of every stake column ``(n, n_columns)`` for the next hand, given the unseen
    composition ``unseen`` ``(n, 13)`` and what the leak shows."""
    comp = composition(leak, unseen)
    ev = cfg.bets.expected_values(comp)
    rows = np.flatnonzero(leak.first_class >= 0)
    if rows.size:
        _, by_class = known_cards.first_card_class_values(comp[rows], rules=cfg.rules)
        ev[rows, : R.N_BETS] = by_class[np.arange(rows.size), leak.first_class[rows].astype(np.intp)]
    return ev


__all__ = ["Leak", "before_hand", "composition", "expected_values", "from_obs", "of_hand_dealt"]
