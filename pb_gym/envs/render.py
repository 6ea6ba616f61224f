"""Rendering of one table of a :class:`~pb_gym.envs.tables.Tables` batch: text (``ansi``) and a small
hand-drawn RGB image (``rgb_array``, numpy only). Used by the single and the vector environment."""

from __future__ import annotations

import numpy as np

from pb_gym import rules as R
from pb_gym.envs.config import EnvConfig
from pb_gym.envs.tables import Tables
from pb_gym.roads import Roads, scoreboard_text
from pb_gym.session import BEAD_CODES
from pb_gym.session import state as hand_record

_BEAD_ROWS = 6  # a bead plate fills columns of six, top to bottom, oldest first
OUTCOME_LETTERS = R.OUTCOME_LETTERS
"""The letter of each :class:`pb_gym.rules.Outcome`, as the roads write them."""
ROAD_COLUMNS = 24
"""Display columns of each road in the text picture (the latest ones)."""


def _winner(last: np.ndarray) -> int:
    """The outcome (:data:`pb_gym.rules.BANKER`, ``PLAYER`` or ``TIE``) a ``last_hand`` record holds."""
    won = {
        R.BANKER: last[hand_record.LAST_BANKER_WON],
        R.PLAYER: last[hand_record.LAST_PLAYER_WON],
        R.TIE: last[hand_record.LAST_TIE],
    }
    return max(won, key=won.__getitem__)


def _card(code: int) -> str:
    return R.RANKS[code - 1] if code else ""


def bead_grid(bead_row: np.ndarray) -> list[list[str]]:
    """The bead plate as rows of letters (B, P, T, '.' = empty), oldest hand top-left, columns of six."""
    codes = [int(c) for c in bead_row[::-1] if c]  # oldest first
    n_cols = max(1, -(-len(codes) // _BEAD_ROWS))
    grid = [["."] * n_cols for _ in range(_BEAD_ROWS)]
    for k, c in enumerate(codes):
        grid[k % _BEAD_ROWS][k // _BEAD_ROWS] = BEAD_CODES[c]
    return grid


def render_ansi(cfg: EnvConfig, tables: Tables, t: int, roads: Roads | None = None) -> str:
    """Text picture of table ``t``: both hands with totals, the winner, stakes and result, and the bead
    plate of the last ``history`` hands; with ``roads`` (the hands of this shoe,
    :func:`pb_gym.roads.read_roads`) the casino scoreboard instead of that bead plate: the shoe's bead
    plate, Big Road, derived roads and ask road (:func:`pb_gym.roads.scoreboard_text`, the last
    :data:`ROAD_COLUMNS` columns)."""
    shoe = tables.shoe
    lines = [
        f"hand {int(tables.episode_hands[t])} of the episode | shoe: {int(shoe.hands_in_shoe[t])} "
        f"hands dealt, {int(shoe.cards_left[t])} cards left | bankroll "
        f"{tables.bankroll[t]:.2f} units ({tables.bankroll[t] * cfg.unit:.2f})"
    ]
    last = tables.last_hand[t]
    if tables.episode_hands[t] == 0:
        lines.append("no hand dealt yet")
    else:
        for name, cards, total in (
            ("Player", tables.player_cards[t], last[hand_record.LAST_PLAYER_TOTAL]),
            ("Banker", tables.banker_cards[t], last[hand_record.LAST_BANKER_TOTAL]),
        ):
            shown = " ".join(f"{_card(c):>2}" for c in cards if c)
            lines.append(f"{name}: {shown:<9} = {int(total)}")
        winner = _winner(last)
        notes = [
            n
            for n, flag in (
                ("natural", last[hand_record.LAST_NATURAL]),
                ("player pair", last[hand_record.LAST_PLAYER_PAIR]),
                ("banker pair", last[hand_record.LAST_BANKER_PAIR]),
            )
            if flag
        ]
        verdict = "Tie" if winner == R.TIE else f"{R.WINNERS[winner].capitalize()} wins"
        lines.append(verdict + (f" ({', '.join(notes)})" if notes else ""))
        placed = [f"{bet} {s:g}" for bet, s in zip(cfg.bets.columns, tables.stakes[t], strict=True) if s > 0]
        lines.append(
            f"stakes: {', '.join(placed) if placed else 'no bet'} -> net {tables.reward[t]:+.2f} units"
        )
    if roads is not None:  # the scoreboard: the shoe's bead plate, then the Big Road and the others
        return "\n".join(lines) + "\n" + scoreboard_text(roads, ROAD_COLUMNS)
    lines.append("bead plate:")
    lines.extend("  " + " ".join(row) for row in bead_grid(tables.bead[t]))
    return "\n".join(lines) + "\n"


# 3x5 pixel font for the image
_FONT = {
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001001010010",
    "8": "111101111101111",
    "9": "111101111001111",
    "A": "010101111101101",
    "J": "001001001101010",
    "Q": "010101101110011",
    "K": "101110100110101",
    "T": "111010010010010",
    "P": "110101110100100",
    "B": "110101110101110",
}
_FELT = np.array([20, 110, 50], np.uint8)
_DARK = np.array([10, 70, 30], np.uint8)
_COLORS = {
    "B": np.array([210, 40, 40], np.uint8),
    "P": np.array([40, 80, 220], np.uint8),
    "T": np.array([240, 200, 40], np.uint8),
}
_WHITE = np.array([250, 250, 245], np.uint8)
_BLACK = np.array([20, 20, 20], np.uint8)
_GOLD = np.array([255, 215, 0], np.uint8)


def _glyph(img: np.ndarray, ch: str, y: int, x: int, color: np.ndarray, scale: int = 2) -> None:
    bits = np.array([int(b) for b in _FONT[ch]], bool).reshape(5, 3)
    big = np.kron(bits, np.ones((scale, scale), bool))
    img[y : y + big.shape[0], x : x + big.shape[1]][big] = color


def render_rgb(cfg: EnvConfig, tables: Tables, t: int) -> np.ndarray:
    """A small image ``(H, W, 3)`` uint8 of table ``t``: the two hands (player top, banker below, the
    winner framed in gold), their totals, the bankroll bar (relative to the start, full at 2x) and the
    bead plate (red banker, blue player, yellow tie)."""
    cols = max(1, -(-cfg.history // _BEAD_ROWS))
    width = max(150, 10 + cols * 10)
    img = np.empty((150, width, 3), np.uint8)
    img[:] = _FELT
    last = tables.last_hand[t]
    dealt = tables.episode_hands[t] > 0
    winner = _winner(last) if dealt else -1
    for row, (label, cards, total, win) in enumerate(
        (
            ("P", tables.player_cards[t], last[hand_record.LAST_PLAYER_TOTAL], winner in (R.PLAYER, R.TIE)),
            ("B", tables.banker_cards[t], last[hand_record.LAST_BANKER_TOTAL], winner in (R.BANKER, R.TIE)),
        )
    ):
        y = 6 + row * 32
        _glyph(img, label, y + 7, 4, _COLORS[label])
        if dealt and win:
            img[y - 2 : y + 26, 14:110] = _GOLD
            img[y : y + 24, 16:108] = _FELT
        for k, code in enumerate(cards):
            if not code:
                continue
            x = 20 + k * 24
            img[y + 1 : y + 23, x : x + 18] = _WHITE
            rank = "T" if code == 10 else R.RANKS[code - 1]
            _glyph(img, rank, y + 7, x + 6, _BLACK)
        if dealt:
            _glyph(img, str(int(total)), y + 7, 96, _WHITE)
    # bankroll bar
    frac = float(np.clip(tables.bankroll[t] / (2 * cfg.bankroll_units), 0.0, 1.0))
    img[72:78, 4 : width - 4] = _DARK
    img[72:78, 4 : 4 + int(round(frac * (width - 8)))] = _GOLD
    # bead plate
    for r, line in enumerate(bead_grid(tables.bead[t])):
        for c, letter in enumerate(line[:cols]):
            y, x = 84 + r * 10, 4 + c * 10
            img[y : y + 8, x : x + 8] = _COLORS.get(letter, _DARK)
    return img
