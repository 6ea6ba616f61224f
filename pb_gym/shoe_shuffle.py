"""The shuffle of a shoe, in compiled code: each table's random stream, the Fisher-Yates swaps, the burn.

Each table draws from its own stream, splitmix64 over a counter (``rng[t]`` of a
:class:`pb_gym.shoe_state.ShoeView`) advanced by the golden gamma per draw (:func:`stream_index`,
:func:`shuffle_row`). The kernels here shuffle a new engine's shoes (:func:`_init_rows`, for
:func:`pb_gym.engine.init`) and the tables of :func:`pb_gym.engine.shuffle` (:func:`_shuffle_rows`);
the deal (:func:`pb_gym.engine.deal_rows`) reshuffles a shoe whose cut card has come out with
:func:`shuffle_row`. :mod:`pb_gym.engine` exports :func:`stream_index`, :func:`new_shoe` and
:func:`shuffle_row` too.
"""

from __future__ import annotations

import numba
import numpy as np

from pb_gym import rules as R
from pb_gym.kernel_arrays import borrowed, stack_int32

_U64 = np.uint64
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53
_N_RANKS = R.N_RANKS  # card codes 1..13, ranks 0..12
_MAX_SHOE_CARDS = R.MAX_SHOE_CARDS  # the longest shoe: the size of a shuffle's scratch space


@numba.njit(inline="always")
def _mix(z: np.uint64) -> np.uint64:
    """splitmix64's output function of a counter value."""
    z = (z ^ (z >> _U64(30))) * _MIX1
    z = (z ^ (z >> _U64(27))) * _MIX2
    return z ^ (z >> _U64(31))


@numba.njit(inline="always")
def stream_index(rng, t, low, high):
    """A uniform integer in ``low..high-1`` from table ``t``'s random stream, advanced by one draw
    (the shuffle's draw: splitmix64 of the counter, its top 53 bits as a fraction)."""
    seed = rng[t] + _GOLDEN
    rng[t] = seed
    return low + np.int64(float(_mix(seed) >> _U64(11)) * _TO_UNIT * (high - low))


@numba.njit(inline="always")
def _swap(row, t, draws, n_draws):
    """The Fisher-Yates swaps of a shuffle on ``row[t]``: draw ``k < n_draws`` swaps the position
    ``n - 1 - k`` with ``draws[k]``."""
    last = row.shape[1] - 1
    for k in range(n_draws):
        i = last - k
        j = draws[k]
        tmp = row[t, i]
        row[t, i] = row[t, j]
        row[t, j] = tmp


@numba.njit(inline="always")
def _scratch(n_cards):
    """A shuffle's scratch space (:func:`shuffle_row`) for a shoe of ``n_cards``: on the calling
    kernel's stack (an allocation each call would slow the deal), or allocated for a shoe longer than
    any the rules deal (a state built by hand)."""
    draws = stack_int32(_MAX_SHOE_CARDS)
    if n_cards > _MAX_SHOE_CARDS:
        draws = np.empty(n_cards, dtype=np.int32)
    return draws


@numba.njit(inline="always")
def _shoe_arrays(shoe):
    """The arrays of a :class:`ShoeView` that :func:`shuffle_row` takes, borrowed (each array handed
    to a helper otherwise takes an atomic reference count, which both threads contend on)."""
    return (
        borrowed(shoe.shoe),
        borrowed(shoe.suits),
        borrowed(shoe.counts),
        borrowed(shoe.unseen),
        borrowed(shoe.rng),
        borrowed(shoe.position),
    )


# (new_shoe and shuffle_row are called only from compiled code: no Python or C entry point is compiled;
# numba's type stubs omit these flags)
@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]
def new_shoe(t, shoe, start, burn):
    """Shuffle the cards below ``start`` of table ``t`` of a :class:`ShoeView` (cards above are a
    stacked top), then burn with ``burn`` (:func:`shuffle_row`)."""
    cards, suits, counts, unseen, rng, position = _shoe_arrays(shoe)
    draws = _scratch(cards.shape[1])
    position[t] = shuffle_row(t, cards, suits, counts, unseen, rng, start, burn, draws)


@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]
def shuffle_row(t, cards, suits, counts, unseen, rng, start, burn, draws):
    """Shuffle the cards below ``start`` of row ``t`` of a shoe's arrays (cards above are a stacked
    top), then burn with ``burn``: returns the position of the next card. ``draws`` is scratch
    space of at least a shoe's cards (:func:`_scratch`, on the caller's stack). The callers hand it
    the arrays borrowed, not the :class:`ShoeView`: each array taken from the view takes an atomic
    reference count, a large share of a shuffle's work, contended by every thread.

    Each table's stream is splitmix64 over a counter (``rng[t]``, advanced by the golden gamma per
    draw): the Fisher-Yates swap of position ``i`` takes ``start + floor(u * (i - start + 1))`` with
    ``u`` the draw's top 53 bits as a fraction. The draws of a shuffle do not depend on each other,
    so they are computed first in a loop the compiler vectorizes, then the swaps run."""
    n_cards = cards.shape[1]
    per_rank = n_cards // _N_RANKS
    suited = suits.shape[1] > 0  # the state tracks suits (init's suited=True)
    if start == 0:
        k = 0
        for r in range(_N_RANKS):
            for _ in range(per_rank):
                cards[t, k] = r + 1
                k += 1
        if suited:  # the canonical shoe: by rank, copy j of a rank in suit j % 4
            for k in range(n_cards):
                suits[t, k] = (k % per_rank) & 3
    n_draws = max(n_cards - 1 - start, 0)
    seed = rng[t]
    for k in range(n_draws):  # draw k swaps position n_cards - 1 - k
        z = _mix(seed + _U64(k + 1) * _GOLDEN)
        draws[k] = start + np.int32(float(z >> _U64(11)) * _TO_UNIT * (n_cards - start - k))
    rng[t] = seed + _U64(n_draws) * _GOLDEN
    _swap(cards, t, draws, n_draws)
    if suited:  # the same swaps: each card's suit moves with its rank
        _swap(suits, t, draws, n_draws)
    for r in range(_N_RANKS):
        counts[t, r] = per_rank
        unseen[t, r] = per_rank
    pos = 0
    if burn:
        first = cards[t, 0] - 1
        counts[t, first] -= 1
        unseen[t, first] -= 1  # turned face up: seen
        pos = 1
        for _ in range(R.BURN_COUNTS[first]):
            counts[t, cards[t, pos] - 1] -= 1  # burned face down: gone, but not seen
            pos += 1
    return pos


@numba.njit(cache=True, nogil=True)
def _init_rows(start, stop, shoe, stack_len, burn):
    """Shuffle the shoes of the tables ``start..stop-1`` below their stacked top of ``stack_len``
    cards, then burn (:func:`pb_gym.engine.init`)."""
    cards, suits, counts, unseen, rng, position = _shoe_arrays(shoe)
    draws = _scratch(cards.shape[1])
    for t in range(start, stop):
        position[t] = shuffle_row(t, cards, suits, counts, unseen, rng, stack_len, burn, draws)


@numba.njit(cache=True, nogil=True)
def _shuffle_rows(start, stop, tables, shoe, burn):
    """Start a fresh shoe at the tables ``tables[start:stop]``: shuffle, burn, and reset their shoe
    counters (:func:`pb_gym.engine.shuffle`)."""
    cards, suits, counts, unseen, rng, position = _shoe_arrays(shoe)
    draws = _scratch(cards.shape[1])
    for i in range(start, stop):
        t = tables[i]
        position[t] = shuffle_row(t, cards, suits, counts, unseen, rng, np.int64(0), burn, draws)
        shoe.hands_in_shoe[t] = 0
        shoe.shoes_started[t] += 1
        shoe.cut_hands[t] = 0
