"""The table session's compiled kernels: pure functions over the state's structs
(:mod:`pb_gym.session.state`), each over a ``[start, stop)`` range of tables. :class:`pb_gym.session.Session`
runs them; the environments' stepper calls :func:`play_rows` and :func:`restart_rows` directly."""

from __future__ import annotations

import numba
import numpy as np
from numba.experimental import structref

from pb_gym import engine
from pb_gym import rules as R
from pb_gym.kernel_arrays import borrowed
from pb_gym.session.live import seat_span, table_at
from pb_gym.session.state import (
    LAST_BANKER_NCARDS,
    LAST_BANKER_PAIR,
    LAST_BANKER_TOTAL,
    LAST_BANKER_WON,
    LAST_NATURAL,
    LAST_PLAYER_NCARDS,
    LAST_PLAYER_PAIR,
    LAST_PLAYER_TOTAL,
    LAST_PLAYER_WON,
    LAST_TIE,
    MAX_CARDS,
    MAX_HANDS,
    PLAYING,
    RUIN,
    SHOE_END,
    SHOE_MISMATCH,
    STOP_LOSS,
    TARGET,
)
from pb_gym.shoe_state import NamedFields

_class_index = numba.njit(cache=True, nogil=True, inline="always")(R.class_index)
"""The hand class of a finished hand (:func:`pb_gym.rules.class_index` compiled; int64 arguments)."""
_bead_code = numba.njit(cache=True, nogil=True, inline="always")(R.bead_code)
"""The bead plate's code of an outcome (:func:`pb_gym.rules.bead_code` compiled)."""


# --------------------------------------------------------------------------------------------------
# Kernels: each runs over a range of tables ``start..stop-1`` and takes the state as structs; the
# row bodies are written out in the loops (a row function taking a dozen arrays costs more per call
# than the row's work: every array is passed and reference-counted at each call)
# --------------------------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True, inline="always")
def _place_single(k, t, b, requested, chosen, stakes, table_min, table_max, forced, tol):
    """The stake rules on the seat's chosen column alone (``single``: see :func:`place_rows`): steps 2
    and 4 (step 3 cannot apply)."""
    for j in range(stakes.shape[2]):
        stakes[k, t, j] = 0.0
    c = chosen[k, t]
    s = requested[k, t, c] if c >= 0 else 0.0
    c = max(c, 0)
    over_max = s > table_max + tol
    if s > table_max:  # 2. the table maximum, then the bankroll
        s = table_max
    over_bankroll = s > b
    if over_bankroll:
        s = b
    any_placed = s != 0.0 and s >= table_min - tol  # 4. below the minimum: not placed
    if any_placed:
        stakes[k, t, c] = s
    elif forced and b >= table_min - tol:
        stakes[k, t, c] = table_min
        any_placed = True
    return any_placed, over_max, over_bankroll


@numba.njit(cache=True, nogil=True, inline="always")
def _cap_requests(k, t, b, requested, stakes, table_max, tol):
    """Steps 1 and 2: every requested column cut to the table maximum, then to the bankroll. Returns
    ``(top column, columns requested, total, over_max, over_bankroll)``."""
    top = 0
    top_request = 0.0
    total = 0.0
    over_max = False
    over_bankroll = False
    requested_columns = 0
    for j in range(stakes.shape[2]):
        s = requested[k, t, j]
        if s == 0.0:  # (most columns: nothing asked)
            stakes[k, t, j] = 0.0
            continue
        requested_columns += 1
        if s > top_request:
            top_request = s
            top = j
        over_max = over_max or s > table_max + tol
        s = min(s, table_max)
        if s > b:
            s = b
            over_bankroll = True
        stakes[k, t, j] = s
        total += s
    return top, requested_columns, total, over_max, over_bankroll


@numba.njit(cache=True, nogil=True, inline="always")
def _scale_down(k, t, b, total, top, chosen, stakes):
    """Step 3: columns that together exceed the bankroll scaled down in proportion (a rounding excess
    comes off the chosen column)."""
    f = b / total
    total = 0.0
    for j in range(stakes.shape[2]):
        stakes[k, t, j] *= f
        total += stakes[k, t, j]
    if total > b:
        c = chosen[k, t]
        stakes[k, t, c if c >= 0 else top] -= total - b


@numba.njit(cache=True, nogil=True, inline="always")
def _drop_below_minimum(k, t, top, requested_columns, stakes, table_min, tol):
    """Step 4: a column below the table minimum is not placed; returns whether any is."""
    if requested_columns == 1 and stakes[k, t, top] != 0.0:  # the usual single bet
        if stakes[k, t, top] < table_min - tol:
            stakes[k, t, top] = 0.0
            return False
        return True
    any_placed = False
    for j in range(stakes.shape[2]):
        if stakes[k, t, j] < table_min - tol:
            stakes[k, t, j] = 0.0
        else:
            any_placed = True
    return any_placed


@numba.njit(cache=True, nogil=True, inline="always")
def _place_seat(k, t, b, requested, chosen, stakes, table_min, table_max, forced, tol, single):
    """THE stake rules (module docstring, steps 1-4) for seat ``k`` at table ``t`` with bankroll
    ``b``: writes ``stakes[k, t, :]`` and returns ``(placed, table_capped, bankroll_capped)``.
    ``single``: see :func:`place_rows`. (Inlined, with its steps, into its two callers,
    :func:`place_rows` and :func:`settle_rows`: a call taking these arrays would cost more than the
    rules.)"""
    if single:
        return _place_single(k, t, b, requested, chosen, stakes, table_min, table_max, forced, tol)
    top, requested_columns, total, over_max, over_bankroll = _cap_requests(
        k, t, b, requested, stakes, table_max, tol
    )
    if total > b:  # 3. several columns over the bankroll
        over_bankroll = True
        _scale_down(k, t, b, total, top, chosen, stakes)
    any_placed = _drop_below_minimum(k, t, top, requested_columns, stakes, table_min, tol)
    if forced and not any_placed and b >= table_min - tol:
        c = chosen[k, t]  # (read only here: most seats never need it)
        stakes[k, t, c if c >= 0 else top] = table_min
        any_placed = True
    return any_placed, over_max, over_bankroll


@numba.njit(cache=True, nogil=True)
def place_rows(start, stop, deal, requested, chosen, sticky, seats, limits, single=False):
    """THE stake rules (:func:`_place_seat`) for every seat still playing at the tables of
    ``start..stop-1`` that deal: writes the seats' ``stakes``, ``placed``, ``table_capped`` and
    ``bankroll_capped``. ``chosen[k, t]``: the seat's chosen column, or -1 for the column of its
    largest request (the first on ties). ``single``: the caller guarantees that each seat requests
    nothing outside its chosen column (an env's discrete action), so the other columns are not read:
    the same rules on one column (steps 2 and 4; step 3 cannot apply)."""
    bankroll, ended, stakes, placed = seats.bankroll, seats.ended, seats.stakes, seats.placed
    table_capped, bankroll_capped = seats.table_capped, seats.bankroll_capped
    table_min, table_max, forced, tol = limits.table_min, limits.table_max, limits.forced, limits.tolerance
    for k in range(ended.shape[0]):  # seat by seat: every array's row of a seat is contiguous
        for t in range(start, stop):
            if not deal[t] or (sticky and ended[k, t] != PLAYING):
                continue
            placed[k, t], table_capped[k, t], bankroll_capped[k, t] = _place_seat(
                k, t, bankroll[k, t], requested, chosen, stakes, table_min, table_max, forced, tol, single
            )


@numba.njit(cache=True, nogil=True)
def record_rows(start, stop, deal, hand, records, suited=False):
    """Fold the hand just dealt at every table of ``start..stop-1`` that dealt into the table's
    records (bead plate, last hand, cards, hand class). ``suited``: the hand class is the suited one
    (:data:`pb_gym.rules.N_SUITED_CLASSES`, the hand's cards' suits read), for a table offering
    suited bets."""
    player_cards, banker_cards = hand.player_cards, hand.banker_cards
    player_total, banker_total = hand.player_total, hand.banker_total
    player_ncards, banker_ncards = hand.player_ncards, hand.banker_ncards
    winner, natural, shuffled = hand.winner, hand.natural, hand.shuffled
    player_pair, banker_pair = hand.player_pair, hand.banker_pair
    player_suits, banker_suits = hand.player_suits, hand.banker_suits
    bead, last_hand, hand_class = records.bead, records.last_hand, records.hand_class
    last_player, last_banker = records.player_cards, records.banker_cards
    history = bead.shape[1]
    for t in range(start, stop):
        if not deal[t]:
            continue
        if shuffled[t]:
            for i in range(history):
                bead[t, i] = R.BEAD_EMPTY
        for i in range(history - 1, 0, -1):
            bead[t, i] = bead[t, i - 1]
        w = winner[t]
        bead[t, 0] = _bead_code(w)
        last_hand[t, LAST_BANKER_WON] = 1.0 if w == R.BANKER else 0.0
        last_hand[t, LAST_PLAYER_WON] = 1.0 if w == R.PLAYER else 0.0
        last_hand[t, LAST_TIE] = 1.0 if w == R.TIE else 0.0
        last_hand[t, LAST_PLAYER_TOTAL] = player_total[t]
        last_hand[t, LAST_BANKER_TOTAL] = banker_total[t]
        last_hand[t, LAST_PLAYER_NCARDS] = player_ncards[t]
        last_hand[t, LAST_BANKER_NCARDS] = banker_ncards[t]
        last_hand[t, LAST_NATURAL] = 1.0 if natural[t] else 0.0
        last_hand[t, LAST_PLAYER_PAIR] = 1.0 if player_pair[t] else 0.0
        last_hand[t, LAST_BANKER_PAIR] = 1.0 if banker_pair[t] else 0.0
        for i in range(MAX_CARDS):
            last_player[t, i] = player_cards[t, i]
            last_banker[t, i] = banker_cards[t, i]
        c = _class_index(
            np.int64(player_total[t]),
            np.int64(banker_total[t]),
            np.int64(player_ncards[t]),
            np.int64(banker_ncards[t]),
            np.int64(player_pair[t]),
            np.int64(banker_pair[t]),
        )
        if suited:  # + N_HAND_CLASSES * the suit class (pb_gym.rules.N_SUIT_CLASSES)
            player_perfect = player_pair[t] and player_suits[t, 0] == player_suits[t, 1]
            banker_perfect = banker_pair[t] and banker_suits[t, 0] == banker_suits[t, 1]
            c += R.N_HAND_CLASSES * ((1 if player_perfect else 0) + (2 if banker_perfect else 0))
        hand_class[t] = c


@numba.njit(cache=True, nogil=True, inline="always")
def _sit_out(k, t, stakes, net, placed, table_capped, bankroll_capped, terminated, truncated):
    """Seat ``k`` sits this hand out at table ``t``: no stakes, no net, no flags."""
    for j in range(stakes.shape[2]):
        stakes[k, t, j] = 0.0
    net[k, t] = 0.0
    placed[k, t] = False
    table_capped[k, t] = False
    bankroll_capped[k, t] = False
    terminated[k, t] = False
    truncated[k, t] = False


@numba.njit(cache=True, nogil=True, inline="always")
def _end_reason(b, h, shoe_end, table_min, target, floor, max_hands, tol):
    """The :data:`END_REASONS` code of a seat with bankroll ``b`` after ``h`` hands (first match:
    ruin, target, stop loss terminate; the hand limit and the shoe's end truncate)."""
    if b < table_min - tol:
        return RUIN
    if b >= target - tol:
        return TARGET
    if b <= floor + tol:
        return STOP_LOSS
    if max_hands > 0 and h >= max_hands:
        return MAX_HANDS
    if shoe_end:
        return SHOE_END
    return PLAYING


@numba.njit(cache=True, nogil=True)
def settle_rows(
    start,
    stop,
    deal,
    requested,
    chosen,
    sticky,
    payoffs,
    hand_class,
    shoe,
    hand_after_cut,
    seats,
    limits,
    single=False,
    live=None,
    live_count=None,
):
    """After the deal (and :func:`record_rows`), every seat at the tables of ``start..stop-1``: a
    seat still playing at a table that dealt gets the stake rules (:func:`_place_seat`) on its
    request, is settled through the payoff matrix row of the hand class, and its bankroll, hand
    count and end (:data:`END_REASONS`, first match: :func:`_end_reason`) move; a seat that does not
    play this hand gets no stakes, no net and no end this hand (:func:`_sit_out`). The stakes are
    placed here, after the deal, in the same pass as settlement (they depend only on the bankroll
    before the hand and the request, never on the cards): one pass over each seat's rows, seat by
    seat (each row of a seat is contiguous). ``single``: see :func:`place_rows`. ``live``,
    ``live_count``: each seat's rows to visit (:mod:`pb_gym.session.live`), or every row."""
    # (borrowed: the helpers of the stake rules take these arrays at every row)
    bankroll, hands, ended = borrowed(seats.bankroll), borrowed(seats.hands), borrowed(seats.ended)
    stakes, net, placed = borrowed(seats.stakes), borrowed(seats.net), borrowed(seats.placed)
    table_capped, bankroll_capped = borrowed(seats.table_capped), borrowed(seats.bankroll_capped)
    terminated, truncated = borrowed(seats.terminated), borrowed(seats.truncated)
    requested, chosen, deal = borrowed(requested), borrowed(chosen), borrowed(deal)
    payoffs, hand_class = borrowed(payoffs), borrowed(hand_class)
    table_min, table_max, target, floor = limits.table_min, limits.table_max, limits.target, limits.floor
    max_hands, one_shoe, forced, tol = limits.max_hands, limits.one_shoe, limits.forced, limits.tolerance
    position, cut_hands = borrowed(shoe.position), borrowed(shoe.cut_hands)
    cut_position = shoe.cut_position
    n_bets = stakes.shape[2]
    for k in range(ended.shape[0]):
        lo, hi, listed = seat_span(live, live_count, k, start, stop)
        for i in range(lo, hi):
            t = table_at(live, k, i, listed)
            if not deal[t] or (sticky and ended[k, t] != PLAYING):  # sits this hand out
                # (cleared once: a seat that ended hands ago is already all zeros, and rewriting its
                # rows would cost a study of many seats memory traffic; stakes are 0 unless placed)
                if (
                    placed[k, t]
                    | table_capped[k, t]
                    | bankroll_capped[k, t]
                    | terminated[k, t]
                    | truncated[k, t]
                ):
                    _sit_out(k, t, stakes, net, placed, table_capped, bankroll_capped, terminated, truncated)
                continue
            b = bankroll[k, t]
            placed[k, t], table_capped[k, t], bankroll_capped[k, t] = _place_seat(
                k, t, b, requested, chosen, stakes, table_min, table_max, forced, tol, single
            )
            row = hand_class[t]
            r = 0.0
            for j in range(n_bets):
                s = stakes[k, t, j]
                if s != 0.0:
                    r += s * payoffs[row, j]
            net[k, t] = r
            b += r
            if b < 0.0:  # rounding of proportionally scaled stakes only: stakes never exceed it
                b = 0.0
            bankroll[k, t] = b
            h = hands[k, t] + 1
            hands[k, t] = h
            # the cut card is out: the next hand would come from a new shoe
            shoe_end = one_shoe and position[t] >= cut_position and (not hand_after_cut or cut_hands[t] == 1)
            reason = _end_reason(b, h, shoe_end, table_min, target, floor, max_hands, tol)
            terminated[k, t] = RUIN <= reason <= STOP_LOSS  # ruin, target or stop loss
            truncated[k, t] = (max_hands > 0 and h >= max_hands) or shoe_end
            ended[k, t] = reason


@numba.njit(cache=True, nogil=True)
def restart_rows(index, bankroll0, seats, records):
    """The tables ``index`` start afresh: empty records, every seat there at ``bankroll0``, playing,
    no hands, nothing staked."""
    bead, last_hand, hand_class = records.bead, records.last_hand, records.hand_class
    last_player, last_banker = records.player_cards, records.banker_cards
    bankroll, hands, ended, stakes, net = seats.bankroll, seats.hands, seats.ended, seats.stakes, seats.net
    placed, table_capped, bankroll_capped = seats.placed, seats.table_capped, seats.bankroll_capped
    terminated, truncated = seats.terminated, seats.truncated
    for i in range(index.shape[0]):
        t = index[i]
        bead[t, :] = R.BEAD_EMPTY
        last_hand[t, :] = 0.0
        last_player[t, :] = 0
        last_banker[t, :] = 0
        hand_class[t] = 0
        for k in range(ended.shape[0]):
            bankroll[k, t] = bankroll0
            hands[k, t] = 0
            ended[k, t] = PLAYING
            _sit_out(k, t, stakes, net, placed, table_capped, bankroll_capped, terminated, truncated)


@numba.njit(cache=True, nogil=True)
def play_rows(
    start,
    stop,
    deal,
    requested,
    chosen,
    sticky,
    seats,
    records,
    shoe,
    deal_consts,
    hand,
    payoffs,
    limits,
    single=False,
    live=None,
    live_count=None,
):
    """One hand at tables ``start..stop-1``: the deal at every table that deals (``deal[t]``), its
    records (:func:`record_rows`), then for every seat still playing there the stake rules,
    settlement and ends in one pass (:func:`settle_rows`). Returns ``(table, problem)`` of the
    first table whose shoe state is unusable (nothing is dealt then), or ``(-1, 0)``. ``sticky``:
    a seat that has ended sits out until reset (else it plays on). ``single``: see
    :func:`place_rows`; ``live``, ``live_count``: :func:`settle_rows`'."""
    hand_after_cut, burn, per_rank = deal_consts.hand_after_cut, deal_consts.burn, deal_consts.per_rank
    if shoe.shoe.shape[1] != per_rank * R.N_RANKS:  # the kernels would write past it
        return start, SHOE_MISMATCH
    table, problem = engine.check_rows(start, stop, shoe, hand_after_cut, per_rank)
    if table >= 0:
        return table, problem
    engine.deal_rows(start, stop, deal, shoe, hand, hand_after_cut, burn)
    record_rows(start, stop, deal, hand, records, payoffs.shape[0] == R.N_SUITED_CLASSES)
    settle_rows(
        start,
        stop,
        deal,
        requested,
        chosen,
        sticky,
        payoffs,
        records.hand_class,
        shoe,
        hand_after_cut,
        seats,
        limits,
        single,
        live,
        live_count,
    )
    return -1, 0


@structref.register
class _PlayStateType(NamedFields):
    pass


class PlayState(structref.StructRefProxy):
    """A session's structs, deal constants, payoffs and limits as one compiled object, the argument of
    :func:`play_state_rows`: a call from Python then types one object, not seven (each struct costs
    microseconds to type at every call). Made by :class:`pb_gym.session.Session`, again whenever its
    structs are rebuilt."""


PLAY_STATE_FIELDS = ("seats", "records", "shoe", "hand", "deal_consts", "payoffs", "limits")
structref.define_proxy(PlayState, _PlayStateType, list(PLAY_STATE_FIELDS))


@numba.njit(cache=True)
def new_play_state(seats, records, shoe, hand, deal_consts, payoffs, limits):
    """A :class:`PlayState` of its :data:`PLAY_STATE_FIELDS`, built by a cached kernel (as
    :func:`pb_gym.shoe_state._new_shoe_view`: the proxy class called from Python compiles its
    constructor again in every process, about 0.5 s)."""
    return PlayState(seats, records, shoe, hand, deal_consts, payoffs, limits)


@numba.njit(cache=True, nogil=True)
def play_state_rows(start, stop, deal, requested, chosen, sticky, state, live=None, live_count=None):
    """:func:`play_rows` over the state of a :class:`PlayState`."""
    return play_rows(
        start,
        stop,
        deal,
        requested,
        chosen,
        sticky,
        state.seats,
        state.records,
        state.shoe,
        state.deal_consts,
        state.hand,
        state.payoffs,
        state.limits,
        False,
        live,
        live_count,
    )
