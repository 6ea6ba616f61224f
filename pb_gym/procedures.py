"""Dealing procedures: how the cards get from the shuffle to the table, in one typed, validated place.

:class:`Dealing` sits beside :class:`pb_gym.rules.Rules` (the rules decide a hand; the procedure
decides which cards come out): the shuffle (``hand``: a shoe shuffled by hand and dealt to the cut
card, the engine's way; ``csm``: a continuous shuffling machine, the dealt cards going back into the
machine after each hand, or ``csm_delay`` hands later), the depth of the cut card (a fixed number of
cards behind it, or a range the dealer's cut varies over, drawn per shoe) and the burn rule
(``value``: turn the first card face up and burn its value face down, the engine's rule; ``one_down``:
burn one card face down; ``one_up``: turn one card face up; ``none``). ``Dealing()`` is the engine's
own procedure for the rules given.

:class:`ProcedureDealer` deals hands at many tables under a procedure, as array code over named state
(one row per table), and keeps what a player who has watched every card knows: the composition of the
unseen cards before each hand (:meth:`ProcedureDealer.unseen`). Under a CSM that is the machine's
content: the cards of the last ``csm_delay`` hands are out of it and were all seen. The engine
(:mod:`pb_gym.engine`) and its golden digests are untouched: the studies' procedures are dealt here.

:func:`csm_rows` runs a continuous shuffler on the engine's own shoe instead, for the environments'
``shuffle="csm"``: after each hand the tray (:class:`CsmTray`) takes the hand, gives back the hands
beyond the delay, and the machine's next six cards are drawn at random from it, so that the engine's
deal takes a random hand of the machine's cards.

Method. A hand-shuffled shoe is a uniform permutation per table (``numpy.random.Generator.permuted``);
a CSM hand draws its six candidate cards without replacement from the machine's counts, one card at a
time, each with probability count / cards left (the hand takes the first four to six of them; the
cards it does not take were never dealt and stay in the machine). The hand is played out by the rule
tables (:func:`pb_gym.exact.deal_value_sequences`) into its hand class (:func:`pb_gym.rules.hand_class`).
"""

from __future__ import annotations

import dataclasses
from typing import Literal, NamedTuple

import numba
import numpy as np

from pb_gym import engine, exact
from pb_gym import rules as R
from pb_gym.parallel import run_rows
from pb_gym.rules import Rules
from pb_gym.shoe_state import ShoeState

SHUFFLES: tuple[str, ...] = ("hand", "csm")
"""``Dealing.shuffle`` options: a hand-shuffled shoe dealt to the cut card, or a continuous shuffler."""
BURNS: tuple[str, ...] = ("rules", "value", "one_down", "one_up", "none")
"""``Dealing.burn`` options: as ``Rules.burn`` says (``value`` if True, ``none`` if False), or one."""
MAX_CSM_DELAY = 50
"""The most hands a CSM may keep the dealt cards out (50 hands hold at most 300 cards)."""

Shuffle = Literal["hand", "csm"]
Burn = Literal["rules", "value", "one_down", "one_up", "none"]


def _bad(field: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"Dealing.{field}={value!r} is not allowed; allowed: {allowed}")


def check_shuffle(shuffle: str, csm_delay: int, owner: str = "") -> int:
    """``csm_delay`` as an int, after checking it and ``shuffle`` (one of :data:`SHUFFLES`; a delay of
    0 to :data:`MAX_CSM_DELAY`, and 0 with ``hand``): a ``ValueError`` names the field, after
    ``owner`` (``"Dealing."``; the environments' keywords have none)."""
    if shuffle not in SHUFFLES:
        raise ValueError(f"{owner}shuffle={shuffle!r} is not allowed; allowed: {', '.join(SHUFFLES)}")
    if not _is_int(csm_delay) or not 0 <= csm_delay <= MAX_CSM_DELAY:
        raise ValueError(
            f"{owner}csm_delay={csm_delay!r} is not allowed; allowed: an integer from 0 to {MAX_CSM_DELAY}"
        )
    if shuffle == "hand" and csm_delay:
        raise ValueError(
            f"{owner}csm_delay={csm_delay!r} is not allowed; allowed: 0 with shuffle='hand' (a delay is a "
            "continuous shuffler's)"
        )
    return int(csm_delay)


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclasses.dataclass(frozen=True)
class Dealing:
    """A dealing procedure, validated on construction (a bad field raises ``ValueError`` naming it).

    Args:
        shuffle: ``hand`` (a shoe shuffled by hand, dealt to the cut card, then shuffled again) or
            ``csm`` (a continuous shuffling machine: every hand is drawn from the cards in it).
        csm_delay: with ``csm``, the hands a hand's cards stay out of the machine before they go back
            (0: straight after the hand; D: the machine lacks the last D hands' cards), 0 to
            :data:`MAX_CSM_DELAY`. Must be 0 with ``hand``.
        cut_range: with ``hand``, ``(low, high)``: the cards behind the cut card are drawn uniformly
            from ``low..high`` for each shoe (the dealer's cut varies); None: ``Rules.cut_card``.
            Each end within what ``Rules.cut_card`` allows (at least 6, at most half the shoe).
        burn: ``rules`` (the rules' burn: ``value`` when ``Rules.burn``, else ``none``), ``value``,
            ``one_down``, ``one_up`` or ``none`` (see the module docstring). A CSM burns nothing.
    """

    shuffle: Shuffle = "hand"
    csm_delay: int = 0
    cut_range: tuple[int, int] | None = None
    burn: Burn = "rules"

    def __post_init__(self) -> None:
        check_shuffle(self.shuffle, self.csm_delay, "Dealing.")
        if self.burn not in BURNS:
            raise _bad("burn", self.burn, ", ".join(BURNS))
        cut = self.cut_range
        if cut is not None:
            if (
                not isinstance(cut, (tuple, list))
                or len(cut) != 2
                or not all(_is_int(x) for x in cut)
                or cut[0] > cut[1]
            ):
                raise _bad("cut_range", cut, "None or two integers (low, high) with low <= high")
            if self.shuffle == "csm":
                raise _bad("cut_range", cut, "None with shuffle='csm' (a CSM has no cut card)")
            object.__setattr__(self, "cut_range", (int(cut[0]), int(cut[1])))

    def check(self, rules: Rules) -> None:
        """Raise ``ValueError`` (naming the field) unless this procedure can deal under ``rules``: the
        cut range's ends are cut cards the rules accept."""
        if self.cut_range is not None:
            for end in self.cut_range:
                try:
                    rules.replace(cut_card=end)
                except ValueError as error:
                    raise _bad("cut_range", self.cut_range, str(error).split("allowed: ", 1)[-1]) from None

    def burn_rule(self, rules: Rules) -> str:
        """The burn actually applied: ``rules`` resolved, and ``none`` under a CSM."""
        if self.shuffle == "csm":
            return "none"
        if self.burn == "rules":
            return "value" if rules.burn else "none"
        return self.burn


class ProcedureDealer:
    """Hands dealt at ``n_tables`` tables under ``rules`` and ``dealing``, from ``seed``.

    State (one row per table): ``shoe`` (the cards in dealing order, hand shuffle) with ``position`` and
    ``cut`` (the position of the cut card in this shoe), or ``machine`` (the cards in the CSM by rank)
    with ``out`` (the cards of the last ``csm_delay`` hands, oldest first); and ``unseen`` (the cards
    a player has not seen, by rank), ``shoes`` (shoes started, hand shuffle) and ``cut_hands`` (the hand
    after the cut card has been dealt). A shoe is shuffled again once the cut card is out, after one
    more hand with ``Rules.hand_after_cut`` (as the engine does).
    """

    def __init__(
        self, rules: Rules, dealing: Dealing, n_tables: int, seed: int | np.random.SeedSequence
    ) -> None:
        if not isinstance(dealing, Dealing):
            raise TypeError(f"dealing must be a pb_gym.procedures.Dealing, got {type(dealing).__name__}")
        dealing.check(rules)
        if not _is_int(n_tables) or n_tables < 1:
            raise ValueError(f"n_tables={n_tables!r} is not allowed; allowed: an integer >= 1")
        self.rules, self.dealing, self.n = rules, dealing, int(n_tables)
        self.rng = np.random.default_rng(seed)
        self.full = R.full_shoe(rules.decks)
        self.burn = dealing.burn_rule(rules)
        n = self.n
        if dealing.shuffle == "csm":
            self.machine = np.tile(self.full, (n, 1))
            self.out = np.zeros((n, dealing.csm_delay, R.N_RANKS), dtype=np.int64)
        else:
            self.shoe = np.zeros((n, rules.n_cards), dtype=np.int64)
            self.position = np.zeros(n, dtype=np.int64)
            self.cut = np.zeros(n, dtype=np.int64)
            self.unseen_hand = np.zeros((n, R.N_RANKS), dtype=np.int64)
            self.shoes = np.zeros(n, dtype=np.int64)
            self.cut_hands = np.zeros(n, dtype=bool)
            self._new_shoes(np.ones(n, dtype=bool))

    # ---- the hand shuffle -------------------------------------------------------------------------
    def _new_shoes(self, tables: np.ndarray) -> None:
        """Shuffle, cut and burn a new shoe at the ``tables`` (a mask)."""
        rows = np.flatnonzero(tables)
        if not rows.size:
            return
        rules, m = self.rules, rows.size
        codes = np.repeat(np.arange(R.N_RANKS), self.full)
        self.shoe[rows] = self.rng.permuted(np.tile(codes, (m, 1)), axis=1)
        low, high = self.dealing.cut_range or (rules.cards_behind_cut,) * 2
        self.cut[rows] = rules.n_cards - self.rng.integers(low, high + 1, size=m)
        self.unseen_hand[rows] = self.full
        first = self.shoe[rows, 0]
        if self.burn == "value":  # the first card face up (seen), its value in cards face down
            self.unseen_hand[rows, first] -= 1
            self.position[rows] = 1 + R.BURN_COUNTS[first]
        elif self.burn == "one_up":
            self.unseen_hand[rows, first] -= 1
            self.position[rows] = 1
        elif self.burn == "one_down":
            self.position[rows] = 1
        else:
            self.position[rows] = 0
        self.shoes[rows] += 1
        self.cut_hands[rows] = False

    def shoe_over(self) -> np.ndarray:
        """``(n,)``: the tables whose shoe is finished: the cut card has come out (and, with
        ``Rules.hand_after_cut``, the hand after it has been dealt); never under a CSM."""
        if self.dealing.shuffle == "csm":
            return np.zeros(self.n, dtype=bool)
        over = self.position >= self.cut
        if self.rules.hand_after_cut:
            over &= self.cut_hands
        return over

    def unseen(self) -> np.ndarray:
        """The cards unseen before the next hand ``(n, 13)`` (a new shoe, burned, where the cut card is
        out: the next :meth:`deal` shuffles it first; call :meth:`start_shoes` to see it now)."""
        if self.dealing.shuffle == "csm":
            return self.machine.copy()
        return self.unseen_hand.copy()

    def start_shoes(self) -> np.ndarray:
        """Shuffle a new shoe where the cut card has come out; which tables did (``(n,)`` bool)."""
        over = self.shoe_over()
        if over.any():
            self._new_shoes(over)
        return over

    # ---- one hand ---------------------------------------------------------------------------------
    def _draw_six(self) -> np.ndarray:
        """Six cards per table drawn without replacement from the machine ``(n, 6)`` rank indices."""
        counts = self.machine.astype(np.float64).copy()
        cards = np.zeros((self.n, 6), dtype=np.int64)
        rows = np.arange(self.n)
        for k in range(6):
            total = counts.sum(axis=1)
            u = self.rng.random(self.n) * total
            rank = (np.cumsum(counts, axis=1) <= u[:, None]).sum(axis=1)
            cards[:, k] = rank
            counts[rows, rank] -= 1
        return cards

    def deal(self) -> dict[str, np.ndarray]:
        """Deal one hand at every table: ``cards`` ``(n, 6)`` (the next six cards, rank indices; the
        hand takes ``used`` of them), ``used``, ``hand_class`` ``(n,)`` and ``shuffled`` (a new shoe
        was shuffled first)."""
        if self.dealing.shuffle == "csm":
            cards, shuffled = self._draw_six(), np.zeros(self.n, dtype=bool)
        else:
            shuffled = self.start_shoes()
            self.cut_hands |= self.position >= self.cut  # (with hand_after_cut: this is that hand)
            take = self.position[:, None] + np.arange(6)[None, :]
            cards = np.take_along_axis(self.shoe, take, axis=1)
        hand = exact.deal_value_sequences(R.RANK_VALUES[cards].T)
        used = hand["player_ncards"] + hand["banker_ncards"]
        classes = R.hand_class(
            hand["player_total"],
            hand["banker_total"],
            hand["player_ncards"],
            hand["banker_ncards"],
            cards[:, 0] == cards[:, 2],
            cards[:, 1] == cards[:, 3],
        )
        dealt = np.zeros((self.n, R.N_RANKS), dtype=np.int64)
        for k in range(6):
            np.add.at(dealt, (np.flatnonzero(used > k), cards[used > k, k]), 1)
        if self.dealing.shuffle == "csm":
            self.machine -= dealt
            delay = self.dealing.csm_delay
            if delay:  # the oldest out hand's cards go back; this hand's go out
                self.machine += self.out[:, 0]
                self.out = np.concatenate([self.out[:, 1:], dealt[:, None, :]], axis=1)
            else:
                self.machine += dealt
        else:
            self.position += used
            self.unseen_hand -= dealt
        return {"cards": cards, "used": used, "hand_class": classes, "shuffled": shuffled, "dealt": dealt}


# ------------------------------------------------------------------------------------------------
# A continuous shuffler on the engine's shoe (the environments' ``shuffle="csm"``)
# ------------------------------------------------------------------------------------------------
class CsmTray(NamedTuple):
    """What a continuous shuffler keeps out of the machine at each table, for :func:`csm_rows`:
    ``sizes`` ``(n, csm_delay + 1)`` int64, the cards of each hand held out, oldest first; ``held``
    ``(n,)`` int64, the hands held out; ``last`` ``(n,)`` int64, the shoe position after the last pass
    (where the hand dealt since then began)."""

    sizes: np.ndarray
    held: np.ndarray
    last: np.ndarray

    @classmethod
    def empty(cls, n_tables: int, csm_delay: int) -> CsmTray:
        """A tray holding nothing at ``n_tables`` tables whose shoes are at position 0."""
        zeros = np.zeros(n_tables, dtype=np.int64)
        return cls(np.zeros((n_tables, csm_delay + 1), dtype=np.int64), zeros, zeros.copy())

    def restart(self, state: ShoeState, rows: np.ndarray | None = None) -> None:
        """Empty the tray at ``rows`` (all if None), whose shoes were just shuffled afresh."""
        select = slice(None) if rows is None else rows
        self.held[select] = 0
        self.last[select] = state.position[select]


@numba.njit(cache=True, nogil=True)
def csm_rows(start, stop, active, shoe, tray, delay):  # noqa: C901 - one pass a hand: a call per table costs
    """Between hands, at every active table ``t`` of ``start..stop-1`` of a :class:`ShoeView` dealt
    as a continuous shuffler with ``delay``: the hand dealt since the last pass goes into the tray, the
    oldest hands beyond ``delay`` go back into the machine, and the machine's next six cards are
    drawn at random from all the cards in it, so that the engine's deal takes a random hand of them.

    The shoe's cards are kept as ``[tray | machine]``: the tray's hands at positions ``0..pos-1`` in
    the order they were dealt, the machine from ``pos`` on (its counts are the shoe's ``counts`` and
    ``unseen``: every card out of it was seen). A hand going back is moved to the end of the tray
    and the position is moved back over it. The shoe's hand counter stays 0: a machine has no shoe."""
    cards, suits = shoe.shoe, shoe.suits
    suited = suits.shape[1] > 0
    position, counts, unseen, rng = shoe.position, shoe.counts, shoe.unseen, shoe.rng
    sizes, held, last = tray.sizes, tray.held, tray.last
    n_cards = cards.shape[1]
    back = np.empty(6, dtype=np.uint8)
    back_suits = np.empty(6, dtype=np.uint8)
    for t in range(start, stop):
        if not active[t]:
            continue
        pos = position[t]
        if pos > last[t]:  # a hand was dealt since the last pass: into the tray
            sizes[t, held[t]] = pos - last[t]
            held[t] += 1
        while held[t] > delay:  # the oldest hand goes back into the machine
            k = sizes[t, 0]
            for i in range(k):
                back[i] = cards[t, i]
                back_suits[i] = suits[t, i] if suited else 0
            for i in range(pos - k):
                cards[t, i] = cards[t, i + k]
                if suited:
                    suits[t, i] = suits[t, i + k]
            for i in range(k):
                cards[t, pos - k + i] = back[i]
                if suited:
                    suits[t, pos - k + i] = back_suits[i]
                counts[t, back[i] - 1] += 1
                unseen[t, back[i] - 1] += 1
            pos -= k
            for h in range(held[t] - 1):
                sizes[t, h] = sizes[t, h + 1]
            held[t] -= 1
        for i in range(pos, min(pos + 6, n_cards - 1)):  # the next six: a uniform draw from the machine
            j = engine.stream_index(rng, t, i, n_cards)
            tmp = cards[t, i]
            cards[t, i] = cards[t, j]
            cards[t, j] = tmp
            if suited:
                tmp = suits[t, i]
                suits[t, i] = suits[t, j]
                suits[t, j] = tmp
        position[t] = pos
        last[t] = pos
        shoe.hands_in_shoe[t] = 0  # a machine has no shoe (the observations' "hands of this shoe")


def csm_prepare(state: ShoeState, tray: CsmTray, csm_delay: int, active: np.ndarray) -> None:
    """:func:`csm_rows` at every table of ``state`` where ``active`` (after the hand just dealt, before
    the next; the tray at a table that sat the hand out is left as it is)."""
    run_rows(
        csm_rows, state.n_tables, engine.SHUFFLE_MIN_TABLES, active, state.view, tray, np.int64(csm_delay)
    )


__all__ = [
    "BURNS",
    "MAX_CSM_DELAY",
    "SHUFFLES",
    "CsmTray",
    "check_shuffle",
    "Dealing",
    "ProcedureDealer",
    "csm_prepare",
    "csm_rows",
]
