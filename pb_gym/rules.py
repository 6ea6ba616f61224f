"""The rules of Punto Banco, as data.

Everything that decides a hand lives in this module, once: card values, the player's drawing rule, the
banker's drawing tableau, how a finished hand maps to a settlement *outcome class*, and the paytables of
every bet. The engine (:mod:`pb_gym.engine`), the exact calculator (:mod:`pb_gym.exact`), the reference
Python loop used by the benchmark and the tests all read these tables; there is no second copy.

The deal
--------
Cards are dealt one at a time from the shoe: player, banker, player, banker. Aces count 1, 2-9 their
face value, tens and faces 0; a hand's total is the sum of its cards modulo 10.

* If either hand totals 8 or 9 on two cards (a *natural*), both stand and the hand is over.
* Otherwise the player draws a third card on 0-5 and stands on 6-7.
* The banker then follows :data:`BANKER_TABLEAU`: with no player third card, the banker draws on 0-5;
  with a player third card, the banker draws on 0-2, on 3 unless the card is an 8, on 4 when it is
  2-7, on 5 when it is 4-7, on 6 when it is 6-7, and stands on 7.
* The higher total wins; equal totals are a tie, which pushes the banker and player bets.

Cards are coded ``1..13`` for A, 2, ..., 10, J, Q, K and ``0`` for "no card"; ranks are indexed
``0..12`` wherever counts by rank are kept (the shoe composition).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any, Literal

import numpy as np

# --------------------------------------------------------------------------------------------------
# Cards
# --------------------------------------------------------------------------------------------------
RANKS: tuple[str, ...] = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
"""Rank names in rank-index order (index 0 is the ace)."""

N_RANKS = len(RANKS)
CARDS_PER_RANK_PER_DECK = 4
CARDS_PER_DECK = N_RANKS * CARDS_PER_RANK_PER_DECK
MAX_DECKS = 8  # a shoe holds 1 to 8 decks (Rules.decks)
MAX_SHOE_CARDS = MAX_DECKS * CARDS_PER_DECK

RANK_VALUES = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0], dtype=np.int8)
"""Baccarat value of each rank index: A=1, 2..9 face value, 10/J/Q/K = 0."""

CARD_VALUES = np.concatenate([[0], RANK_VALUES]).astype(np.int8)
"""Value of a card code (``0`` = no card, ``1..13`` = A..K); used by the engine's lookups."""

# Ten-point cards: the burn rule counts them as 10, the hand as 0.
BURN_COUNTS = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10], dtype=np.int8)
"""How many further cards the burn rule discards after turning a card of each rank index."""


def card_code(card: int | str) -> int:
    """Return the card code 1..13 of ``card`` given as a rank name ("A", "10", "K") or a code 1..13."""
    if isinstance(card, (int, np.integer)) and not isinstance(card, bool):
        if 1 <= int(card) <= N_RANKS:
            return int(card)
        raise ValueError(f"card code {card!r} is out of range; allowed: 1..13 (A..K)")
    if isinstance(card, str):
        name = card.strip().upper()
        if name == "T":
            name = "10"
        if name in RANKS:
            return RANKS.index(name) + 1
        if name == "1":
            return 1
    raise ValueError(f"unknown card {card!r}; allowed: one of {', '.join(RANKS)} or a code 1..13")


def full_shoe(decks: int) -> np.ndarray:
    """Counts by rank index (13 entries) of a fresh shoe of ``decks`` decks."""
    return np.full(N_RANKS, CARDS_PER_RANK_PER_DECK * int(decks), dtype=np.int64)


# --------------------------------------------------------------------------------------------------
# Drawing rules
# --------------------------------------------------------------------------------------------------
NATURAL_MIN = 8
"""A two-card total of 8 or 9 is a natural: both hands stand."""

PLAYER_DRAWS = np.array([t <= 5 for t in range(10)], dtype=np.bool_)
"""Player's rule by two-card total: draw on 0-5, stand on 6-7 (8-9 are naturals)."""

NO_THIRD_CARD = 10
"""Column of :data:`BANKER_TABLEAU` used when the player stood (no player third card)."""

# The banker's tableau as printed on the rule sheets: one row per banker two-card total, one column per
# value of the player's third card, and a last column for "the player stood". D = draw, S = stand.
_BANKER_TABLEAU_SHEET = """
            0 1 2 3 4 5 6 7 8 9  none
banker 0    D D D D D D D D D D  D
banker 1    D D D D D D D D D D  D
banker 2    D D D D D D D D D D  D
banker 3    D D D D D D D D S D  D
banker 4    S S D D D D D D S S  D
banker 5    S S S S D D D D S S  D
banker 6    S S S S S S D D S S  S
banker 7    S S S S S S S S S S  S
banker 8    S S S S S S S S S S  S
banker 9    S S S S S S S S S S  S
"""


def _parse_tableau(sheet: str) -> np.ndarray:
    rows = [line.split()[2:] for line in sheet.strip().splitlines()[1:]]
    table = np.array([[cell == "D" for cell in row] for row in rows], dtype=np.bool_)
    if table.shape != (10, 11):
        raise AssertionError("the banker tableau must be 10 totals x 11 columns")
    return table


BANKER_TABLEAU = _parse_tableau(_BANKER_TABLEAU_SHEET)
"""``BANKER_TABLEAU[banker_total, player_third_card_value or NO_THIRD_CARD]`` is True when the banker
draws. Rows 8 and 9 are never consulted (a natural ends the hand) and read "stand"."""


def banker_draws(banker_total: int, player_third_value: int | None) -> bool:
    """Whether the banker draws on ``banker_total`` given the player's third card value (None: stood)."""
    column = NO_THIRD_CARD if player_third_value is None else player_third_value
    return bool(BANKER_TABLEAU[banker_total, column])


# --------------------------------------------------------------------------------------------------
# Outcome classes: everything the main bets, Dragon 7 and Panda 8 need to be settled.
# --------------------------------------------------------------------------------------------------
class Outcome(enum.IntEnum):
    """Who won a hand: THE outcome code everywhere (``HandResult.winner``, ``info["winner"]``, the
    order of the first three :data:`BETS` and of the ``last_hand`` one-hot). The bead plate stores
    :func:`bead_code` of it (0 = an empty cell); the ``multidiscrete`` action's first entry is a *bet*
    index (:attr:`pb_gym.envs.config.EnvConfig.bet_choices`), not an outcome."""

    BANKER = 0
    PLAYER = 1
    TIE = 2


BANKER, PLAYER, TIE = int(Outcome.BANKER), int(Outcome.PLAYER), int(Outcome.TIE)
"""The :class:`Outcome` codes as plain ints (what the compiled kernels compare with)."""
WINNERS: tuple[str, ...] = tuple(outcome.name.lower() for outcome in Outcome)
"""The outcomes' names, by code: ``("banker", "player", "tie")``."""
OUTCOME_LETTERS: tuple[str, ...] = tuple(outcome.name[0] for outcome in Outcome)
"""The outcomes' letters, by code (the roads' and the bead plate's): ``("B", "P", "T")``."""

BEAD_EMPTY = 0
"""A bead-plate cell with no hand in it yet."""


def bead_code(outcome):
    """The bead plate's code of an :class:`Outcome` (scalars or arrays): ``outcome + 1``, so that 0
    stays :data:`BEAD_EMPTY`. The compiled kernels compile this function."""
    return outcome + 1


def bead_outcome(code):
    """The :class:`Outcome` of a non-empty bead-plate code (the inverse of :func:`bead_code`)."""
    return code - 1


OUTCOMES: tuple[str, ...] = (
    "banker",  # banker wins, any other way
    "banker_6",  # banker wins with a total of 6 (two or three cards): no-commission pays 1:2
    "banker_3card_7",  # banker wins with a three-card 7: EZ pushes, Dragon 7 pays
    "player",  # player wins, any other way
    "player_3card_8",  # player wins with a three-card 8: Panda 8 pays
    "tie",
)
"""Settlement outcome classes of a hand (pair side bets are settled on their own flags)."""
N_OUTCOMES = len(OUTCOMES)
OUTCOME_WINNER = np.array([BANKER, BANKER, BANKER, PLAYER, PLAYER, TIE], dtype=np.int8)


def _outcome_table() -> np.ndarray:
    """``table[player_total, banker_total, player_cards - 2, banker_cards - 2]`` -> outcome index."""
    table = np.empty((10, 10, 2, 2), dtype=np.int8)
    for pt in range(10):
        for bt in range(10):
            for pn in (2, 3):
                for bn in (2, 3):
                    if bt > pt:
                        if bt == 6:
                            outcome = "banker_6"
                        elif bt == 7 and bn == 3:
                            outcome = "banker_3card_7"
                        else:
                            outcome = "banker"
                    elif pt > bt:
                        outcome = "player_3card_8" if (pt == 8 and pn == 3) else "player"
                    else:
                        outcome = "tie"
                    table[pt, bt, pn - 2, bn - 2] = OUTCOMES.index(outcome)
    return table


OUTCOME_TABLE = _outcome_table()
"""Outcome class of a finished hand, indexed by (player total, banker total, player cards - 2,
banker cards - 2)."""

# --------------------------------------------------------------------------------------------------
# Hand classes: everything a bet can be settled on, as one index
# --------------------------------------------------------------------------------------------------
HAND_CLASS_SHAPE: tuple[int, ...] = (10, 10, 2, 2, 2, 2)
"""The axes of a hand class: player total, banker total, player cards - 2, banker cards - 2, player
pair, banker pair. Naturals, margins, ties on a total, three-card wins, card counts and the pair bets
all follow from these six, so one payoff row per class settles every bet (suits are not tracked)."""
N_HAND_CLASSES = int(np.prod(HAND_CLASS_SHAPE))
N_SUIT_CLASSES = 4
"""Suit classes of a hand: bit 0 set when the player's first two cards are identical in rank and suit (a
perfect pair), bit 1 the same for the banker's. The suited bets are settled on these."""
N_SUITED_CLASSES = N_HAND_CLASSES * N_SUIT_CLASSES
"""Suited hand classes, ``hand_class + N_HAND_CLASSES * suit_class``: the rows of the payoff matrix of a
table that offers a suited bet (from a shoe that tracks suits)."""


N_VALUE_CLASSES = N_HAND_CLASSES // 4
"""Value classes: the hand classes without the two pair flags (``hand class // 4``)."""


def class_index(player_total, banker_total, player_ncards, banker_ncards, player_pair, banker_pair):
    """THE hand-class encoding, in plain arithmetic (the axes of :data:`HAND_CLASS_SHAPE` in order), so
    that numpy arrays (:func:`hand_class`) and the compiled kernels (which compile this very function:
    :mod:`pb_gym.session.kernels`) share it. The arguments must be integers wide enough for the result
    (int64 arrays or scalars); :func:`hand_class` casts them."""
    value = ((player_total * 10 + banker_total) * 2 + player_ncards - 2) * 2 + banker_ncards - 2
    return value * 4 + player_pair * 2 + banker_pair


def value_class(player_total, banker_total, player_ncards, banker_ncards):
    """The value class (an index in ``range(N_VALUE_CLASSES)``) of finished hands, scalars or arrays:
    ``((pt * 10 + bt) * 2 + pn - 2) * 2 + bn - 2``, the first four axes of :data:`HAND_CLASS_SHAPE`
    (:func:`class_index` without the pair flags)."""
    pt, bt = np.asarray(player_total, np.int64), np.asarray(banker_total, np.int64)
    pn, bn = np.asarray(player_ncards, np.int64), np.asarray(banker_ncards, np.int64)
    return class_index(pt, bt, pn, bn, 0, 0) // 4


def hand_class(player_total, banker_total, player_ncards, banker_ncards, player_pair, banker_pair):
    """The hand class (an index in ``range(N_HAND_CLASSES)``) of finished hands, scalars or arrays:
    ``value_class * 4 + player_pair * 2 + banker_pair`` (:func:`class_index`), the axes of
    :data:`HAND_CLASS_SHAPE` in order."""
    pt, bt = np.asarray(player_total, np.int64), np.asarray(banker_total, np.int64)
    pn, bn = np.asarray(player_ncards, np.int64), np.asarray(banker_ncards, np.int64)
    pp, bp = np.asarray(player_pair, np.int64), np.asarray(banker_pair, np.int64)
    return class_index(pt, bt, pn, bn, pp, bp)


def hand_class_fields(index):
    """The inverse of :func:`hand_class`: ``(player_total, banker_total, player_ncards, banker_ncards,
    player_pair, banker_pair)`` arrays of the given class indices."""
    pt, bt, pn, bn, pp, bp = np.unravel_index(np.asarray(index, np.int64), HAND_CLASS_SHAPE)
    return pt, bt, pn + 2, bn + 2, pp.astype(bool), bp.astype(bool)


# --------------------------------------------------------------------------------------------------
# Bets
# --------------------------------------------------------------------------------------------------
BETS: tuple[str, ...] = ("banker", "player", "tie", "player_pair", "banker_pair", "dragon7", "panda8")
"""Every bet spot, in the column order used for stakes, payoffs and EVs."""
MAIN_BETS: tuple[str, ...] = BETS[:3]
SIDE_BETS: tuple[str, ...] = BETS[3:]
N_BETS = len(BETS)

BankerVariant = Literal["standard", "no-commission", "ez"]
BANKER_VARIANTS: tuple[str, ...] = ("standard", "no-commission", "ez")
TIE_PAYOUTS: tuple[int, ...] = (8, 9)


def _check(condition: bool, field: str, value: object, allowed: str) -> None:
    if not condition:
        raise ValueError(f"Rules.{field}={value!r} is not allowed; allowed: {allowed}")


@dataclasses.dataclass(frozen=True)
class Rules:
    """The rules of one Punto Banco table, validated on construction.

    Args:
        decks: decks in the shoe, 1 to 8.
        banker_variant: ``"standard"`` (banker wins pay 19:20, i.e. ``commission`` of 5%),
            ``"no-commission"`` (banker wins pay 1:1, except a banker win with 6 pays 1:2) or ``"ez"``
            (banker wins pay 1:1, except a banker win with a three-card 7 pushes).
        commission: the commission on banker wins in the standard variant (0.05 = 19:20; 0.04 is also
            dealt). Ignored by the other variants.
        tie_pays: the tie bet pays 8:1 or 9:1. A tie pushes the banker and player bets.
        side_bets: the side bets offered at this table, any of ``player_pair``, ``banker_pair``,
            ``dragon7``, ``panda8``. Staking an unoffered side bet is an error.
        pair_pays: player pair / banker pair payout (first two cards of that hand of the same rank).
        dragon7_pays: Dragon 7 payout, paid when the banker wins with a three-card 7; loses otherwise.
        panda8_pays: Panda 8 payout, paid when the player wins with a three-card 8; loses otherwise.
        burn: apply the burn rule after each shuffle: turn the first card face up and burn as many
            further cards, face down, as its value (10, J, Q, K burn 10; an ace burns 1).
        cut_card: where the cut card sits. An int is the number of cards left behind it (14 = 14 cards
            are never dealt); a float in (0, 1) is the penetration, the fraction of the shoe dealt
            before it. When the cut card has come out the shoe is reshuffled before the next hand.
        hand_after_cut: deal one more hand after the cut card appears before reshuffling (a common
            casino convention); False reshuffles at once.
    """

    decks: int = 8
    banker_variant: BankerVariant = "standard"
    commission: float = 0.05
    tie_pays: int = 8
    side_bets: tuple[str, ...] = SIDE_BETS
    pair_pays: float = 11.0
    dragon7_pays: float = 40.0
    panda8_pays: float = 25.0
    burn: bool = True
    cut_card: int | float = 14
    hand_after_cut: bool = False

    def __post_init__(self) -> None:
        _check(
            isinstance(self.decks, (int, np.integer))
            and not isinstance(self.decks, bool)
            and 1 <= self.decks <= MAX_DECKS,
            "decks",
            self.decks,
            "an integer from 1 to 8",  # (MAX_DECKS: a literal, which the config reference reads)
        )
        _check(
            self.banker_variant in BANKER_VARIANTS,
            "banker_variant",
            self.banker_variant,
            ", ".join(BANKER_VARIANTS),
        )
        _check(
            _is_number(self.commission) and 0.0 <= self.commission < 1.0,
            "commission",
            self.commission,
            "a number in [0, 1), e.g. 0.05 for 19:20",
        )
        _check(
            self.tie_pays in TIE_PAYOUTS and not isinstance(self.tie_pays, bool),
            "tie_pays",
            self.tie_pays,
            "8 or 9 (paying 8:1 or 9:1)",
        )
        side_bets = self.side_bets
        if isinstance(side_bets, str):
            side_bets = (side_bets,)
        _check(
            isinstance(side_bets, (tuple, list)),
            "side_bets",
            self.side_bets,
            f"a list drawn from {', '.join(SIDE_BETS)}",
        )
        for bet in side_bets:
            _check(bet in SIDE_BETS, "side_bets", bet, ", ".join(SIDE_BETS))
        _check(
            len(set(side_bets)) == len(side_bets), "side_bets", self.side_bets, "each side bet at most once"
        )
        object.__setattr__(self, "side_bets", tuple(b for b in SIDE_BETS if b in side_bets))
        for name in ("pair_pays", "dragon7_pays", "panda8_pays"):
            value = getattr(self, name)
            _check(_is_number(value) and value > 0, name, value, "a positive payout (x in x:1)")
        _check(isinstance(self.burn, (bool, np.bool_)), "burn", self.burn, "true or false")
        _check(
            isinstance(self.hand_after_cut, (bool, np.bool_)),
            "hand_after_cut",
            self.hand_after_cut,
            "true or false",
        )
        n_cards = self.n_cards
        min_left = 12 if self.hand_after_cut else 6
        cut = self.cut_card
        if isinstance(cut, (bool, np.bool_)) or not _is_number(cut):
            _check(
                False,
                "cut_card",
                cut,
                "an int (cards left behind the cut card) or a penetration fraction in (0, 1)",
            )
        if isinstance(cut, (int, np.integer)):
            _check(
                min_left <= cut <= n_cards // 2,
                "cut_card",
                cut,
                f"{min_left}..{n_cards // 2} cards left behind the cut card for {self.decks} "
                f"deck(s) (at least {min_left} so the last hand can always be completed)",
            )
        else:
            _check(0.0 < cut < 1.0, "cut_card", cut, "a penetration fraction in (0, 1)")
            left = n_cards - int(round(cut * n_cards))
            _check(
                min_left <= left <= n_cards // 2,
                "cut_card",
                cut,
                f"a penetration leaving {min_left}..{n_cards // 2} cards behind the cut card for "
                f"{self.decks} deck(s) (it leaves {left})",
            )

    # ---- derived figures ------------------------------------------------------------------------
    @property
    def n_cards(self) -> int:
        """Cards in a full shoe."""
        return int(self.decks) * CARDS_PER_DECK

    @property
    def cards_behind_cut(self) -> int:
        """Cards left undealt behind the cut card."""
        if isinstance(self.cut_card, (int, np.integer)):
            return int(self.cut_card)
        return self.n_cards - int(round(self.cut_card * self.n_cards))

    @property
    def most_hands_per_shoe(self) -> int:
        """An upper bound on the hands one shoe deals: every hand takes at least four cards, hands
        begin while the cut card is still in (``n_cards - cards_behind_cut`` cards), and one more
        follows it with ``hand_after_cut``."""
        return -(-(self.n_cards - self.cards_behind_cut) // 4) + int(bool(self.hand_after_cut))

    @property
    def offered_bets(self) -> tuple[str, ...]:
        """The bet spots of this table: banker, player, tie and the offered side bets."""
        return MAIN_BETS + self.side_bets

    @property
    def offered_mask(self) -> np.ndarray:
        """Boolean mask over :data:`BETS` of the spots offered at this table."""
        return np.array([bet in self.offered_bets for bet in BETS], dtype=np.bool_)

    def banker_win_pays(self) -> np.ndarray:
        """Net win per unit of a banker bet for each banker-win outcome (banker, banker_6, 3-card 7)."""
        if self.banker_variant == "standard":
            win = 1.0 - float(self.commission)
            return np.array([win, win, win])
        if self.banker_variant == "no-commission":
            return np.array([1.0, 0.5, 1.0])
        return np.array([1.0, 1.0, 0.0])  # ez: a three-card 7 pushes

    def paytable(self) -> np.ndarray:
        """Net win per unit staked, shape ``(N_OUTCOMES, 7)``: row = outcome class, column = bet.

        The pair columns are not a function of the outcome class; they hold the loss (-1) and are
        replaced by ``pair_pays`` when the pair flag of the hand is set (see :func:`payoffs`).
        """
        table = np.full((N_OUTCOMES, N_BETS), -1.0)
        col = {bet: i for i, bet in enumerate(BETS)}
        banker_rows = [OUTCOMES.index(o) for o in ("banker", "banker_6", "banker_3card_7")]
        player_rows = [OUTCOMES.index(o) for o in ("player", "player_3card_8")]
        tie_row = OUTCOMES.index("tie")
        table[banker_rows, col["banker"]] = self.banker_win_pays()
        table[player_rows, col["player"]] = 1.0
        table[tie_row, col["banker"]] = 0.0  # a tie pushes banker and player bets
        table[tie_row, col["player"]] = 0.0
        table[tie_row, col["tie"]] = float(self.tie_pays)
        table[OUTCOMES.index("banker_3card_7"), col["dragon7"]] = float(self.dragon7_pays)
        table[OUTCOMES.index("player_3card_8"), col["panda8"]] = float(self.panda8_pays)
        return table

    def payoff_matrix(self) -> np.ndarray:
        """Net win per unit staked, shape ``(N_HAND_CLASSES, 7)``: row = :func:`hand_class`, column =
        bet (:data:`BETS`); the pair columns read the class's pair flags. One lookup settles a hand."""
        pt, bt, pn, bn, pp, bp = hand_class_fields(np.arange(N_HAND_CLASSES))
        return payoffs(self, OUTCOME_TABLE[pt, bt, pn - 2, bn - 2], pp, bp)

    def replace(self, **changes: Any) -> Rules:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:  # an int too large for a float (10**400) is no table's number either
        return math.isfinite(float(value))
    except OverflowError:
        return False


def payoffs(
    rules: Rules, outcome: np.ndarray, player_pair: np.ndarray, banker_pair: np.ndarray
) -> np.ndarray:
    """Net win per unit staked on every bet spot, shape ``(n, 7)``, for hands with the given outcome
    classes and pair flags. Unoffered side bets are given too (the caller refuses stakes on them)."""
    table = rules.paytable()[np.asarray(outcome, dtype=np.intp)]
    col_pp, col_bp = BETS.index("player_pair"), BETS.index("banker_pair")
    table[:, col_pp] = np.where(player_pair, rules.pair_pays, -1.0)
    table[:, col_bp] = np.where(banker_pair, rules.pair_pays, -1.0)
    return table
