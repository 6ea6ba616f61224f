"""The running statistics of every seat of an evaluate chunk (:mod:`pb_gym.experiments.evaluate`), kept as
``(seats, sessions)`` arrays and moved by two compiled passes a hand (:func:`account_range`, inside the
hand's pass over each chunk of tables, and :func:`account_totals`).

:class:`Ledgers` holds the arrays of all the seats; :class:`Ledger` is one seat's view of them, with
what the merge needs (:meth:`Ledger.statistics`). The per-hand accounting is the one the per-seat
numpy code did, operation for operation (the same float sums, in the same order).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from pb_gym import session as session_
from pb_gym.agents import systems
from pb_gym.experiments.evaluate import summary as summaries
from pb_gym.session.live import seat_span, table_at


class Ledgers(NamedTuple):
    """Every seat's running statistics over the sessions of a chunk (``(K, N)`` unless stated).

    Attributes:
        peak, max_drawdown: the bankroll's running peak and the largest fall from it.
        wagered, net: money staked and won.
        bets: bets placed.
        wagered_by_column: ``(K, columns)`` money staked on each table column.
        counts: ``(K, 2)`` int64: bets where the table maximum bound (the system's own account), and
            where the bankroll did (the session's).
        max_stake: ``(K,)`` the largest stake placed.
        stake: the stake of the last hand (0 where none was placed).
        capped: the last hand's bet was placed and the table maximum bound it.
    """

    peak: np.ndarray
    max_drawdown: np.ndarray
    wagered: np.ndarray
    net: np.ndarray
    bets: np.ndarray
    wagered_by_column: np.ndarray
    counts: np.ndarray
    max_stake: np.ndarray
    stake: np.ndarray
    capped: np.ndarray

    @classmethod
    def start(cls, bankroll: np.ndarray, n_columns: int) -> Ledgers:
        """Fresh statistics for seats whose bankrolls are ``bankroll`` ``(K, N)``."""
        k, n = bankroll.shape
        return cls(
            peak=bankroll.copy(),
            max_drawdown=np.zeros((k, n)),
            wagered=np.zeros((k, n)),
            net=np.zeros((k, n)),
            bets=np.zeros((k, n), dtype=np.int64),
            wagered_by_column=np.zeros((k, n_columns)),
            counts=np.zeros((k, 2), dtype=np.int64),
            max_stake=np.zeros(k),
            stake=np.zeros((k, n)),
            capped=np.zeros((k, n), dtype=np.bool_),
        )


@numba.njit(cache=True, nogil=True)
def account_range(
    start, stop, seats, columns, slot_of, proposed_capped, ledgers, live=None, live_count=None, totals=False
):
    """One hand's accounting of every seat at the tables ``start..stop-1``, what is kept per table: the
    stake placed on the seat's proposed ``columns[k, t]`` (the session's slot ``slot_of[column]``), the
    net, the bets, where the table maximum bound it (``proposed_capped``: the system's own account),
    the bankroll's peak and drawdown. What sums over the tables is :func:`account_totals`', or, with
    ``totals`` (the range is every table, on one thread), added here in the same order: each table's
    row is then read once a hand, not twice. ``live``, ``live_count``: each seat's rows to visit
    (:mod:`pb_gym.session.live`), or every row."""
    bankroll, stakes, net, placed = seats.bankroll, seats.stakes, seats.net, seats.placed
    peak, max_drawdown, wagered, total = ledgers.peak, ledgers.max_drawdown, ledgers.wagered, ledgers.net
    bets, last_stake, capped = ledgers.bets, ledgers.stake, ledgers.capped
    bankroll_capped, by_column, counts, max_stake = (
        seats.bankroll_capped,
        ledgers.wagered_by_column,
        ledgers.counts,
        ledgers.max_stake,
    )
    for k in range(net.shape[0]):
        lo, hi, listed = seat_span(live, live_count, k, start, stop)
        for at in range(lo, hi):
            t = table_at(live, k, at, listed)
            if not placed[k, t] and net[k, t] == 0.0:
                # no bet and no money moved (an ended seat, a hand sat out): the bankroll, its peak
                # and drawdown and the sums stand as they are (a sum of nets is never -0.0, so
                # adding 0.0 would not change its bits); only the last hand's stake and cap are
                # cleared, once (half the main job's seat-rows, most of them ended seats)
                if last_stake[k, t] != 0.0 or capped[k, t]:
                    last_stake[k, t] = 0.0
                    capped[k, t] = False
                continue
            stake = 0.0
            if placed[k, t]:
                stake = stakes[k, t, max(slot_of[columns[k, t]], 0)]
                bets[k, t] += 1
                # account_totals' sums, in its order (seat by seat, table by table); written out
                # again, not a shared helper: a call passing these arrays costs their reference
                # counts at every row, a cost the whole study feels
                if totals:
                    by_column[k, columns[k, t]] += stake
                    if proposed_capped[k, t]:
                        counts[k, 0] += 1
                    if bankroll_capped[k, t]:
                        counts[k, 1] += 1
                    if stake > max_stake[k]:
                        max_stake[k] = stake
            capped[k, t] = placed[k, t] and proposed_capped[k, t]
            last_stake[k, t] = stake
            total[k, t] += net[k, t]
            wagered[k, t] += stake
            b = bankroll[k, t]
            if b > peak[k, t]:
                peak[k, t] = b
            fall = peak[k, t] - b
            if fall > max_drawdown[k, t]:
                max_drawdown[k, t] = fall


@numba.njit(cache=True, nogil=True)
def account_totals(seats, columns, proposed_capped, ledgers, live=None, live_count=None):
    """One hand's accounting summed over the tables, after :func:`account_range` (whose last stakes
    it reads): each seat's money staked on each column, its counts of caps, its largest stake. One
    pass in table order, on one thread, so that the sums take the same bits whatever the threads
    (with ``live`` lists, :mod:`pb_gym.session.live`, over their rows: every row with a stake is
    listed, in the same order)."""
    placed, bankroll_capped = seats.placed, seats.bankroll_capped
    by_column, counts, max_stake, last_stake = (
        ledgers.wagered_by_column,
        ledgers.counts,
        ledgers.max_stake,
        ledgers.stake,
    )
    for k in range(placed.shape[0]):
        lo, hi, listed = seat_span(live, live_count, k, 0, placed.shape[1])
        for at in range(lo, hi):
            t = table_at(live, k, at, listed)
            if placed[k, t]:
                stake = last_stake[k, t]
                by_column[k, columns[k, t]] += stake
                if proposed_capped[k, t]:
                    counts[k, 0] += 1
                if bankroll_capped[k, t]:
                    counts[k, 1] += 1
                if stake > max_stake[k]:
                    max_stake[k] = stake


@numba.njit(cache=True, nogil=True)
def many_distinct(values, most):
    """For each row of ``values`` ``(K, N)``: whether it holds more than ``most`` distinct values and no
    NaN (a fan's checkpoint then keeps no table of its bankrolls, only their range: sorting a row to
    find out cost a millisecond a checkpoint). Counted in a small hash set, up to ``most + 1``; +0.0
    and -0.0 count as one value, as they compare equal."""
    size = 1
    while size < 4 * (most + 1):
        size *= 2
    keys = np.empty(size, dtype=np.int64)
    used = np.zeros(size, dtype=np.bool_)
    bits = np.empty(1, dtype=np.float64)
    as_int = bits.view(np.int64)
    out = np.zeros(values.shape[0], dtype=np.bool_)
    for k in range(values.shape[0]):
        used[:] = False
        found = 0
        nan = False
        for t in range(values.shape[1]):
            value = values[k, t]
            if value != value:
                nan = True
                break
            bits[0] = value + 0.0  # (-0.0 + 0.0 is +0.0)
            key = as_int[0]
            slot = ((key * -7046029254386353131) >> 40) & (size - 1)  # (Fibonacci hashing)
            while used[slot] and keys[slot] != key:
                slot = (slot + 1) & (size - 1)
            if not used[slot]:
                used[slot] = True
                keys[slot] = key
                found += 1
                if found > most:
                    break
        out[k] = found > most and not nan
    return out


@numba.njit(cache=True, nogil=True)
def fan_checkpoint(values, edges, codes, wanted):
    """A fan checkpoint's tallies of each row of ``values`` ``(K, N)`` and ``codes`` ``(K, N)``, a row
    at a time, without ``(K, N)`` arrays of bins and offset codes written and read back. Returns

    * ``fans`` ``(K, len(edges))`` int64: the histogram of the values over evenly spaced ``edges``
      (``linspace(0, top, bins + 1)``): bin ``i`` holds ``[edges[i], edges[i + 1])``, the last one
      also everything above and NaN, the first everything below; the bins of
      ``clip(searchsorted(edges, values, "right") - 1, 0, bins)``, at a fraction of its cost: the
      index from ``value * (bins / edges[-1])``, clipped to ``0 .. bins``, moved down by one where
      its edge is above the value, else up by one where the next edge is not;
    * ``ends`` ``(K, len(wanted))`` int64: the count of each of the ``wanted`` codes."""
    k, n = values.shape
    bins = len(edges) - 1
    scale = bins / edges[-1]
    top = float(bins)
    fans = np.zeros((k, bins + 1), dtype=np.int64)
    ends = np.zeros((k, len(wanted)), dtype=np.int64)
    guess = np.empty(n, dtype=np.int64)
    for row in range(k):
        # the guesses first, in a loop of their own that the compiler vectorises (the corrections'
        # reads of the edges keep the second loop scalar)
        for t in range(n):
            x = values[row, t] * scale
            x = x if x < top else top  # NaN and +inf too
            x = x if x > 0.0 else 0.0
            guess[t] = np.int64(x)
        for t in range(n):
            value = values[row, t]
            at = guess[t]
            if edges[at] > value:
                at -= 1  # (then edges[at + 1] is the edge just found above the value)
            elif at < bins and edges[at + 1] <= value:
                at += 1
            fans[row, max(at, 0)] += 1
        # a count per code over the row's codes, vectorised (one increment a session would be a
        # chain of increments of the same count, mostly 'playing')
        for i in range(len(wanted)):
            code = wanted[i]
            count = 0
            for t in range(n):
                count += np.int64(codes[row, t] == code)
            ends[row, i] = count
    return fans, ends


class Ledger:
    """One system (seat ``seat`` of the chunk's :class:`pb_gym.session.Session`) over the sessions of
    one chunk: its running statistics (its rows of :class:`Ledgers`), mergeable. The bankroll and
    where each session ended are the session's (:class:`pb_gym.session.Seats`)."""

    def __init__(
        self,
        system: systems.BettingSystem,
        seats: session_.Seats,
        seat: int,
        ledgers: Ledgers,
        n_checkpoints: int,
        fan_bins: int,
        states: tuple[str, ...],
    ) -> None:
        self.system = system
        self.seats = seats
        self.seat = seat
        self.ledgers = ledgers
        self.exact_ev_wagered = 0.0  # sum of stake x exact EV (for counting systems)
        self.fan = np.zeros((n_checkpoints, fan_bins + 1), dtype=np.int64)
        # exact distinct bankrolls and counts per checkpoint (None where there are too many), the
        # exact range, and the sessions in each state (STATES)
        self.fan_values: list[tuple[np.ndarray, np.ndarray] | None] = [None] * n_checkpoints
        self.fan_min = np.zeros(n_checkpoints)
        self.fan_max = np.zeros(n_checkpoints)
        self.state_names = states
        self.states = np.zeros((n_checkpoints, len(states)), dtype=np.int64)

    @property
    def bankroll(self) -> np.ndarray:
        """Each session's bankroll (the seat's row of the session, in money)."""
        return self.seats.bankroll[self.seat]

    def state_counts(self) -> list[int]:
        """The sessions in each state (still playing, or ended by ruin, goal, stop-loss, shoe end)."""
        ended = self.seats.ended[self.seat]
        return [int((ended == session_.END_REASONS.index(state)).sum()) for state in self.state_names]

    def statistics(self, session_hands: np.ndarray, samples: np.ndarray) -> dict:
        """What the merge needs: sums, counts, histograms, the summary of the final bankrolls, the
        sample paths, and the final bankroll and hands dealt of each session (which the merge keeps
        only when asked to). ``session_hands``: the hands dealt in each session (its table's,
        whatever the seat); ``samples``: the seat's sample paths (``(paths, hands recorded)``)."""
        k, ledgers = self.seat, self.ledgers
        # fresh arrays, as a seat's own statistics were before they were stacked (the same sums)
        net, wagered, drawdown = (
            ledgers.net[k].copy(),
            ledgers.wagered[k].copy(),
            ledgers.max_drawdown[k].copy(),
        )
        final = self.bankroll.copy()
        return {
            "sessions": len(net),
            "hands_dealt": int(session_hands.sum()),
            "sum_net": float(net.sum()),
            "sum_wagered": float(wagered.sum()),
            "sum_net2": float(net @ net),
            "sum_wagered2": float(wagered @ wagered),
            "sum_net_wagered": float(net @ wagered),
            "bets": int(ledgers.bets[k].sum()),
            "ended": dict(zip(self.state_names[1:], self.state_counts()[1:], strict=True)),
            "sum_max_drawdown": float(drawdown.sum()),
            "max_drawdown": float(drawdown.max()),
            "wagered_by_spot": ledgers.wagered_by_column[k].copy(),
            "exact_ev_wagered": self.exact_ev_wagered,
            "table_capped": int(ledgers.counts[k, 0]),
            "bankroll_capped": int(ledgers.counts[k, 1]),
            "max_stake": float(ledgers.max_stake[k]),
            "fan": self.fan,
            "final": summaries.final_summary(final),
            "fan_values": self.fan_values,
            "fan_min": self.fan_min,
            "fan_max": self.fan_max,
            "states": self.states,
            "samples": samples,
            "final_bankrolls": final,
            "session_hands": session_hands,
        }
