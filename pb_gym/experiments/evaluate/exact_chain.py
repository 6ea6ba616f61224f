"""Betting systems as exact Markov chains: the session outcome under independent hands.

With hands dealt independently at the exact probabilities of the full shoe (:mod:`pb_gym.exact`), a
session of a betting system is a Markov chain whose state is the bankroll, the system's progression
state and (for systems that follow the last decision) the last non-tie winner. Where that state is
finite under the study's config (the table limits and the bankroll bound every progression), the
session's outcome is computed exactly: the probabilities of reaching the win goal, of ruin, of the
stop-loss and of still playing at the hand limit, the expected hands played, the mean final bankroll
and the whole final-bankroll distribution.

One source of truth: the chain's transitions are not written here system by system. Each state of
the frontier is one *table* of the system's own vectorized state (``propose`` / ``update`` of
:mod:`pb_gym.agents.systems`), replicated once per outcome group of the hand; the stakes are placed and
settled, and the ends decided, by the session's own kernel (:func:`pb_gym.session.settle_rows`: the
table minimum and maximum, the cut to the bankroll and all-in, pushes through the payoff matrix, the
19:20 banker win, the goal and the stop-loss, with evaluate's tolerance). The successors are what the
simulator would do from that state on that outcome, bit for bit.

Amounts: the bankroll and the system's arrays are the simulator's own float64 values (stakes such as
10 x 0.95^-k of the recovering Martingale are not multiples of any decimal unit); two states are the
same state when every amount agrees to :data:`KEY_DIGITS` decimals (money and units): merging only
values that differ by float rounding, never a coarser lattice. The probabilities are float64 sums
over the hand classes of :func:`pb_gym.exact.hand_class_probabilities`; they add up to 1 within
about 1e-13 after 1,000 hands (checked: ``probability_error`` in each result).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from pb_gym import engine, exact
from pb_gym import rules as R
from pb_gym import session as session_
from pb_gym.agents import systems as betting_systems
from pb_gym.experiments.evaluate.settings import make_system, slots, study_limits

KEY_DIGITS = 9
"""Decimals (of money and of units) at which two amounts are the same state: float rounding only
(rounding can at worst split one state in two, which changes no probability; it merges two amounts
only if they differ by less than 1e-9, finer than seven all-in banker wins make the lattice)."""
PRUNE_BELOW = 0.0
"""A state holding less probability than this after a hand is dropped, its probability added to the
result's ``pruned_mass`` (a bound on the error of every probability). 0: nothing is dropped, the chain
is exact; raising it bounds a chain that is not finite (docs/guides/exact-systems.md measures what it
would take for the classic study's all-in progressions: more than 1.5 million states even at 1e-10)."""
MAX_STATES = 250_000
"""A chain with more states than this within the hand limit is reported as not finite in practice:
where all-in stakes (the bankroll below the wanted stake) occur, a banker win multiplies the bankroll by
1.95 and puts it on a lattice twenty times finer, and the states on those lattices multiply with the
hands."""
READS_LAST_DECISION = (betting_systems.FollowTheWinner, betting_systems.Chop)
"""Systems whose bet depends on the last non-tie winner (a part of their chain's state)."""
NOT_FINITE = {
    "kelly": "it stakes on the composition of the shoe, which independent hands do not have",
    "sb3": "a learned policy reads the shoe and its own hidden state",
    "road_pattern": "it reads the roads: the shoe's whole sequence of results so far, which the chain's "
    "state does not hold",
}
"""Why a system type has no exact chain (a one-line reason in the report)."""
END_NAMES = {session_.RUIN: "ruin", session_.TARGET: "target", session_.STOP_LOSS: "stop_loss"}


class NotFinite(Exception):
    """A system whose session is not a finite chain under the config (the message says why)."""


def outcome_groups(rules: R.Rules, payoffs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hand's outcomes as the chain sees them: hand classes grouped by winner and by their payoff
    row over the study's bet columns. Returns ``(probability, representative hand class, winner)``
    per group; the probabilities are the full shoe's exact ones."""
    p = exact.hand_class_probabilities(R.full_shoe(rules.decks)[None, :])[0]
    pt, bt = R.hand_class_fields(np.arange(R.N_HAND_CLASSES))[:2]
    winner = np.where(bt > pt, R.BANKER, np.where(pt > bt, R.PLAYER, R.TIE))
    # the groups numbered in the order of their first hand class (+ 0.0: -0.0 and 0.0 are one payoff)
    rows = np.column_stack([winner.astype(np.float64), np.round(payoffs, 12) + 0.0])
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    group = rank[inverse.ravel()]
    probability = np.bincount(group, weights=p, minlength=first.size)
    representative = np.sort(first)
    keep = probability > 0
    return probability[keep], representative[keep], winner[representative[keep]]


def _state_names(system: betting_systems.BettingSystem, n: int) -> list[str]:
    """The system's per-table state arrays (after ``reset``): its program's (:func:`_state`), or every
    ndarray attribute of length n."""
    return sorted(name for name, value in _state(system).items() if value.ndim == 1 and value.shape[0] == n)


def _state(system: betting_systems.BettingSystem) -> dict[str, np.ndarray]:
    """The system's state arrays by name: a programmed system's rows of its one-seat
    :class:`agents.staking.ProgramState` (writable views), another's ndarray attributes."""
    if isinstance(system, betting_systems.Programmed):
        state = system.programs.state
        return {name: getattr(state, name)[0] for name in ("wanted", "level", "counter", "tail")}
    return {name: value for name, value in vars(system).items() if isinstance(value, np.ndarray)}


class _Chain:
    """One system's session, hand by hand: the probability of every state still playing (merged where
    two paths reach the same state) and of every end, propagated forward over the hand limit."""

    def __init__(
        self,
        system: betting_systems.BettingSystem,
        config,
        rules: R.Rules,
        payoffs: np.ndarray,
        column: np.ndarray,
    ) -> None:
        self.system, self.config, self.rules = system, config, rules
        self.unit = config.table.unit
        self.limits = study_limits(config).struct()
        self.payoffs = payoffs
        self.column = column
        self.probability, self.hand_class, self.winner = outcome_groups(rules, payoffs)
        self.shoe = engine.init(rules, 1, 0).view
        self.reads_decision = isinstance(system, READS_LAST_DECISION)
        self.draw_column = None
        if isinstance(system, betting_systems.RandomBettor):
            # its draw is independent of everything else: each hand's branches are (draw, outcome)
            # pairs, the draw's probability times the outcome's (the chain averages over its stream)
            draws = [int(c) for c in system.columns]
            weights = [system.p_bet / len(draws)] * len(draws)
            if system.p_bet < 1.0:
                draws, weights = draws + [betting_systems.NO_BET], weights + [1.0 - system.p_bet]
            outcomes = self.probability.size
            self.probability = (np.array(weights)[:, None] * self.probability[None, :]).ravel()
            self.hand_class = np.tile(self.hand_class, len(draws))
            self.winner = np.tile(self.winner, len(draws))
            self.draw_column = np.repeat(np.array(draws, dtype=np.int64), outcomes)
        system.reset(1, np.random.default_rng(0))
        self.names = _state_names(system, 1)
        self.line = isinstance(system, betting_systems.Labouchere)
        """Labouchere: the live part of its line (``lines[counter:tail]``, moved to the start of its
        row: ``counter`` 0, ``tail`` its length) is part of the state, as the ``line`` rows."""
        self.longest_line = 0
        self.max_states = MAX_STATES
        self.all_in = False
        self.off_lattice = False

    def _step(self, bankroll: np.ndarray, decision: np.ndarray, state: dict):
        """Every state's successors, one per outcome group (rows ``g * m + i``): the system's own
        ``propose`` and ``update`` on a table per row, the session's own stake rules and ends."""
        m, g = bankroll.size, self.probability.size
        n = m * g
        system = self.system
        system.reset(n, np.random.default_rng(0))
        arrays = _state(system)
        for name in self.names:
            arrays[name][:] = np.tile(state[name], g)
        if self.line:
            self._set_lines(system, np.tile(state["line"], (g, 1)))
        if self.draw_column is not None:
            drawn = np.repeat(self.draw_column, m)
            system.draw = lambda: drawn  # type: ignore[attr-defined]
        b = np.tile(bankroll, g)
        last_decision = np.tile(decision, g)
        unit = self.unit
        table = self.config.table
        view = betting_systems.TableView(
            b / unit,
            table.maximum / unit,
            self.rules,
            None,
            last_decision.copy(),
            last_decision,
            table.minimum / unit,
            1,
            None,
            None,
            unit=unit,
            bets=self.config.table_bets(),
        )
        proposal = system.propose(view)
        spot, units = proposal.column, proposal.units
        bet = np.flatnonzero(spot != betting_systems.NO_BET)
        if bet.size and self.column[spot[bet]].min() < 0:
            raise ValueError(f"system {system.name!r} proposed a bet column outside its bet_columns()")
        requested = np.zeros((1, n, self.payoffs.shape[1]))
        requested[0, bet, self.column[spot[bet]]] = units[bet] * unit
        seats = session_.Seats.empty(1, n, self.payoffs.shape[1])
        seats.bankroll[0] = b
        hand_class = np.repeat(self.hand_class, m).astype(np.int64)
        session_.settle_rows(
            0,
            n,
            np.ones(n, dtype=np.bool_),
            requested,
            np.full((1, n), -1, np.int64),
            True,
            self.payoffs,
            hand_class,
            self.shoe,
            False,
            seats.view,
            self.limits,
        )
        placed = seats.placed[0]
        spot_safe = np.where(placed, spot, 0)
        stake = np.where(placed, seats.stakes[0, np.arange(n), np.maximum(self.column[spot_safe], 0)], 0.0)
        net = seats.net[0]
        capped = placed & proposal.capped
        system.update(
            view,
            betting_systems.HandOutcome(
                placed, np.sign(net).astype(np.int8), stake / unit, net / unit, capped
            ),
        )
        winner = np.repeat(self.winner, m)
        new_decision = np.where(winner != R.TIE, winner, last_decision).astype(np.int8)
        if not self.reads_decision:
            new_decision[:] = -1
        arrays = _state(system)
        new_state = {name: arrays[name].copy() for name in self.names}
        if self.line:
            new_state["counter"][:], new_state["tail"][:], new_state["line"] = self._live_lines(system)
        self.all_in |= bool((placed & seats.bankroll_capped[0]).any())
        whole = stake / (system.base * unit)
        self.off_lattice |= bool((placed & (np.abs(whole - np.round(whole)) > 1e-9)).any())
        return seats.bankroll[0].copy(), new_decision, new_state, seats.ended[0].copy()

    @staticmethod
    def _set_lines(system: betting_systems.BettingSystem, lines: np.ndarray) -> None:
        """Write each table's live Labouchere line (``lines``: one row a table, zero-padded; the
        state's ``counter`` 0 and ``tail`` its length are set with the other arrays)."""
        programs = system.programs  # type: ignore[attr-defined]
        state = programs.state
        width = max(state.lines.shape[2], lines.shape[1] + 2)
        buffer = np.zeros((1, lines.shape[0], width))
        buffer[0, :, : lines.shape[1]] = lines
        programs.state = state._replace(lines=buffer)

    def _live_lines(self, system: betting_systems.BettingSystem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each table's live Labouchere line after the hand, moved to the start of its row:
        ``(counter, tail, lines)`` = ``(0, length, (n, longest) zero-padded)``."""
        state = system.programs.state  # type: ignore[attr-defined]
        head, tail, lines = state.counter[0], state.tail[0], state.lines[0]
        length = tail - head
        longest = int(length.max())
        self.longest_line = max(self.longest_line, longest)
        at = np.arange(longest)
        index = np.minimum(head[:, None] + at[None, :], lines.shape[1] - 1)
        live = np.where(at[None, :] < length[:, None], np.take_along_axis(lines, index, axis=1), 0.0)
        return np.zeros_like(head), length, live

    def _key_rows(self, bankroll, decision, state) -> np.ndarray:
        columns = [np.round(bankroll, KEY_DIGITS), decision.astype(np.float64)]
        columns += [np.round(state[name].astype(np.float64), KEY_DIGITS) for name in self.names]
        if self.line:  # last: its zero padding is stripped from the key (every number is > 0)
            columns.append(np.round(state["line"], KEY_DIGITS))
        rows = np.ascontiguousarray(np.column_stack(columns)) + 0.0  # -0.0 and 0.0: one state
        if self.line:  # bytes without their trailing zeros: one key whatever the padding
            return rows.view(np.dtype(("S", rows.dtype.itemsize * rows.shape[1]))).ravel()
        return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()

    def _too_many(self) -> str:
        why = (
            ": all-in stakes (the bankroll below the wanted stake) put the bankroll on ever finer lattices "
            "(none is all-in when the stop-loss floor, bankroll - stop_loss, is at least the table maximum)"
            if self.all_in
            else ": stakes that are not whole multiples of the base (such as (base - series profit) / 0.95) "
            "put the bankroll on ever finer lattices"
            if self.off_lattice
            else self._line_reason()
            if self.line
            else ""
        )
        held = f" holding {PRUNE_BELOW:g} or more" if PRUNE_BELOW > 0 else ""
        what = " (bankroll, line)" if self.line else ""
        return f"more than {self.max_states:,}{what} states{held} within the hand limit{why}"

    def _line_reason(self) -> str:
        """Why a Labouchere chain without all-in stakes is too large: its line's sum is bounded only
        with a win goal (and a bet paying at most even money), and then by many lines."""
        config = self.config
        pays = self.system.win_pays(self.rules)
        seen = f"lines of up to {self.longest_line} numbers reached"
        if not config.win_goal or pays > 1.0:
            cause = "without a win_goal" if not config.win_goal else f"on a bet paying {pays:g} to 1"
            return f": {cause} its line's sum is bounded only by the hand limit ({seen})"
        bound = f"sum at most {self._line_bound():g} base units"
        return f": its line stays bounded ({bound}) but the {seen} are too many"

    def _line_bound(self) -> float:
        """A bound on a Labouchere line's sum (units of ``base``), with a win goal and a bet paying at
        most even money: a series' line grows by what the series lost, so its sum is at most the first
        line's plus (series-start bankroll - bankroll) / base, where a series starts below the goal
        and the bankroll stays above the stop-loss floor (or 0)."""
        config = self.config
        floor = config.bankroll - config.stop_loss if config.stop_loss else 0.0
        top = config.bankroll + config.win_goal
        return float(self.system.line.sum()) + (top - floor) / (self.system.base * self.unit)  # type: ignore[attr-defined]

    def solve(self, hands: int, max_states: int = MAX_STATES) -> dict:
        """The start state's probability carried forward hand by hand (:class:`NotFinite` past
        ``max_states`` states). Each state is stepped once,
        the first hand it holds probability (its successors are kept), and every hand its probability
        flows to them. A state holding less than :data:`PRUNE_BELOW` after a hand is dropped and its
        probability added to ``pruned_mass``: every probability below is then low by at most that."""
        system = self.system
        self.max_states = max_states
        system.reset(1, np.random.default_rng(0))
        g = self.probability.size
        table = _States(self.names + (["line"] if self.line else []), self._key_rows)
        start = {name: _state(system)[name].copy() for name in self.names}
        if self.line:
            start["counter"][:], start["tail"][:], start["line"] = self._live_lines(system)
        table.playing(np.array([float(self.config.bankroll)]), np.array([-1], dtype=np.int8), start)
        # the transitions of the states stepped so far: to states (source, target, probability) and to
        # ends (the same), in buffers that grow by doubling
        edges = [np.zeros(64, dtype=np.int64), np.zeros(64, dtype=np.int64), np.zeros(64)]
        exits = [np.zeros(64, dtype=np.int64), np.zeros(64, dtype=np.int64), np.zeros(64)]
        n_edges = n_exits = 0
        stepped = np.zeros(1, dtype=np.bool_)
        mass: np.ndarray = np.ones(1)
        absorbed: np.ndarray = np.zeros(0)
        pruned = expected_hands = 0.0
        for _ in range(hands):
            if PRUNE_BELOW > 0:
                small = np.flatnonzero((mass > 0) & (mass < PRUNE_BELOW))
                pruned += float(mass[small].sum())
                mass[small] = 0.0
            total = float(mass.sum())
            if total == 0.0:
                break
            expected_hands += total
            need = np.flatnonzero((mass > 0) & ~stepped[: mass.size])
            if need.size:
                new_bankroll, new_decision, new_state, ended = self._step(*table.rows(need))
                targets = table.successors(new_bankroll, new_decision, new_state, ended)
                if table.size > max_states:
                    raise NotFinite(self._too_many())
                stepped = _grown(stepped, table.size)
                stepped[need] = True
                source = np.tile(need, g)
                weight = np.repeat(self.probability, need.size)
                on = targets >= 0
                for buffers, count, rows, to in (
                    (edges, n_edges, on, targets),
                    (exits, n_exits, ~on, -1 - targets),
                ):
                    top = count + int(rows.sum())
                    for i, values in enumerate((source[rows], to[rows], weight[rows])):
                        buffers[i] = _grown(buffers[i], top)
                        buffers[i][count:top] = values
                n_edges += int(on.sum())
                n_exits += int((~on).sum())
            src, dst, w = (x[:n_edges] for x in edges)
            mass = np.pad(mass, (0, table.size - mass.size))
            out_src, out_dst, out_w = (x[:n_exits] for x in exits)
            absorbed = np.pad(absorbed, (0, table.n_ends - absorbed.size)) + np.bincount(
                out_dst, weights=mass[out_src] * out_w, minlength=table.n_ends
            )
            mass = np.bincount(dst, weights=mass[src] * w, minlength=table.size)
        return self._result(table, mass, absorbed, expected_hands, pruned)

    @staticmethod
    def _result(table: _States, mass: np.ndarray, absorbed: np.ndarray, expected_hands: float, pruned: float):
        absorbed = np.pad(absorbed, (0, table.n_ends - absorbed.size))
        reason = table.end_reason[: table.n_ends]
        p = {name: float(absorbed[reason == code].sum()) for code, name in END_NAMES.items()}
        finals = np.concatenate([table.bankroll[: table.size], table.end_bankroll[: table.n_ends]])
        masses = np.concatenate([np.pad(mass, (0, table.size - mass.size)), absorbed])
        values, inverse = np.unique(np.round(finals, KEY_DIGITS), return_inverse=True)
        distribution = np.bincount(inverse.ravel(), weights=masses, minlength=len(values))
        keep = distribution > 0
        return {
            "p_target": p["target"],
            "p_ruin": p["ruin"],
            "p_stop_loss": p["stop_loss"],
            "p_hand_limit": float(mass.sum()),
            "expected_hands": expected_hands,
            "mean_final_bankroll": float((finals * masses).sum()),
            "final_bankroll": {"values": values[keep].tolist(), "probabilities": distribution[keep].tolist()},
            "states": table.size + table.n_ends,
            "pruned_mass": pruned,
            "probability_error": abs(float(masses.sum()) + pruned - 1.0),
        }


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` with room for at least ``size`` rows (doubling)."""
    if size <= array.shape[0]:
        return array
    out = np.zeros((max(size, 2 * array.shape[0]),) + array.shape[1:], dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


class _States:
    """The chain's states by key: every state still playing (bankroll, last decision, the system's
    arrays; ids 0, 1, ...) and every end (reason, final bankroll; ids of their own)."""

    def __init__(self, names: list[str], key_rows) -> None:
        self.names, self.key_rows = names, key_rows
        self.index: dict[bytes, int] = {}
        self.ends: dict[tuple[int, float], int] = {}
        self.size = self.n_ends = 0
        self.bankroll = np.zeros(16)
        self.decision = np.zeros(16, dtype=np.int8)
        self.state: dict[str, np.ndarray] = {}
        self.end_reason = np.zeros(16, dtype=np.int64)
        self.end_bankroll = np.zeros(16)

    def rows(self, ids: np.ndarray) -> tuple:
        return self.bankroll[ids], self.decision[ids], {name: self.state[name][ids] for name in self.names}

    def _lookup(self, index: dict, keys: list, first: int) -> tuple[np.ndarray, np.ndarray]:
        """The ids of ``keys`` in ``index`` (a new key gets the next id after ``first - 1``) and the
        rows of the new keys."""
        ids = np.empty(len(keys), dtype=np.int64)
        fresh: list[int] = []
        for i, key in enumerate(keys):
            found = index.get(key)
            if found is None:
                found = index[key] = first + len(fresh)
                fresh.append(i)
            ids[i] = found
        return ids, np.array(fresh, dtype=np.int64)

    def playing(self, bankroll, decision, state) -> np.ndarray:
        """The ids of these playing states, new ones added."""
        ids, rows = self._lookup(self.index, self.key_rows(bankroll, decision, state).tolist(), self.size)
        if rows.size:
            top = self.size + rows.size
            self.bankroll = _grown(self.bankroll, top)
            self.decision = _grown(self.decision, top)
            self.bankroll[self.size : top] = bankroll[rows]
            self.decision[self.size : top] = decision[rows]
            for name in self.names:
                values = state[name]
                column = self.state.get(name, np.zeros((16,) + values.shape[1:], dtype=values.dtype))
                if values.ndim == 2 and values.shape[1] != column.shape[1]:  # a line: one width
                    width = max(values.shape[1], column.shape[1])
                    column = np.pad(column, ((0, 0), (0, width - column.shape[1])))
                    values = np.pad(values, ((0, 0), (0, width - values.shape[1])))
                self.state[name] = _grown(column, top)
                self.state[name][self.size : top] = values[rows]
            self.size = top
        return ids

    def successors(self, bankroll, decision, state, ended) -> np.ndarray:
        """The successors of these rows: a playing state's id, or -1 - an end's id."""
        ids = np.empty(bankroll.size, dtype=np.int64)
        over = np.flatnonzero(ended != session_.PLAYING)
        keys = [(int(ended[i]), round(float(bankroll[i]), KEY_DIGITS)) for i in over.tolist()]
        found, fresh = self._lookup(self.ends, keys, self.n_ends)
        ids[over] = -1 - found
        if fresh.size:
            top = self.n_ends + fresh.size
            self.end_reason = _grown(self.end_reason, top)
            self.end_bankroll = _grown(self.end_bankroll, top)
            self.end_reason[self.n_ends : top] = ended[over[fresh]]
            self.end_bankroll[self.n_ends : top] = bankroll[over[fresh]]
            self.n_ends = top
        playing = np.flatnonzero(ended == session_.PLAYING)
        ids[playing] = self.playing(
            bankroll[playing], decision[playing], {name: state[name][playing] for name in self.names}
        )
        return ids


def study_columns(config, systems: Sequence[betting_systems.BettingSystem]) -> tuple[np.ndarray, np.ndarray]:
    """The payoff columns the study's session keeps (as :func:`pb_gym.experiments.evaluate.run_chunk`) and
    the map from stake column to them."""
    rules = config.rules.to_rules()
    table_bets = config.table_bets()
    spots, column = slots(list(systems), table_bets.n_columns)
    payoffs = session_.payoff_matrix(rules) if not table_bets.extra else table_bets.pay_matrix()
    return np.ascontiguousarray(payoffs[:, spots]), column


def exact_system(system_config, config, max_states: int = MAX_STATES) -> dict:
    """The exact session outcome of one system of an evaluate study, or ``{"reason": ...}`` (a chain
    of more than ``max_states`` states within the hand limit is reported as not finite)."""
    started = time.perf_counter()
    kind = system_config.type
    if config.one_shoe:
        return {
            "reason": "one_shoe sessions end with the shoe's cards, not with a count of independent hands"
        }
    if kind in NOT_FINITE:
        return {"reason": NOT_FINITE[kind]}
    system = make_system(system_config)
    system.bind(config.table_bets())
    if system.needs_composition:
        return {"reason": NOT_FINITE["kelly"]}
    payoffs, column = study_columns(config, [system])
    try:
        chain = _Chain(system, config, config.rules.to_rules(), payoffs, column)
        result = chain.solve(config.hands, max_states)
    except NotFinite as reason:
        return {"reason": str(reason)}
    result["seconds"] = time.perf_counter() - started
    return result


def exact_study(config) -> list[dict]:
    """:func:`exact_system` for every system of the study, in the config's order."""
    return [exact_system(system_config, config) for system_config in config.systems]


def compare(exact_result: dict, simulated: dict, sessions: int) -> dict:
    """The simulated figures of the same study (real shoes) beside the exact ones (independent hands):
    the difference (simulated - exact) and its 95% CI (binomial SD of the simulated share; the exact
    figure has none). A difference outside the CI is a shoe effect (or a bug)."""
    simulated = dict(simulated)
    simulated["p_hand_limit"] = 1.0 - simulated["p_ruin"] - simulated["p_target"] - simulated["p_stop_loss"]
    rows = {}
    for name in ("p_target", "p_ruin", "p_stop_loss", "p_hand_limit"):
        q = float(simulated[name])
        half = 1.96 * float(np.sqrt(max(q * (1.0 - q), 0.0) / sessions))
        difference = q - exact_result[name]
        rows[name] = {
            "exact": exact_result[name],
            "simulated": q,
            "difference": difference,
            "ci95": [difference - half, difference + half],
        }
    return rows


def attach(report: dict, config) -> None:
    """Add ``exact`` (the chain's figures and the comparison with the simulation, or a reason) to
    every system's entry of an evaluate report."""
    started = time.perf_counter()
    for entry, result in zip(report["systems"], exact_study(config), strict=True):
        if "reason" not in result:
            result["versus_simulated"] = compare(result, entry, report["sessions"])
        entry["exact"] = result
    report["timings"]["exact_seconds"] = time.perf_counter() - started


def plot_goal_against_final(report: dict, path) -> None:
    """The exact picture for teaching: per finite system, P(reach the goal) against the expected
    result of a session (E(final bankroll) - bankroll), both exact under independent hands. The
    progressions that win most sessions sit far to the right and still below zero: P(win the session)
    is not E(win)."""
    from pb_gym.experiments.common import plotting

    rows = [(s["name"], s["exact"]) for s in report["systems"] if "p_target" in s.get("exact", {})]
    if not rows:
        raise ValueError("no system of this study has a finite exact chain")
    bankroll = float(report["bankroll"])
    goal = np.array([e["p_target"] for _, e in rows])
    result = np.array([e["mean_final_bankroll"] - bankroll for _, e in rows])
    hands = np.array([e["expected_hands"] for _, e in rows])
    plt = plotting.pyplot()
    fig, ax = plt.subplots(figsize=(8.0, 5.0))
    points = ax.scatter(
        goal, result, c=hands, cmap="viridis", s=46, zorder=3, edgecolors="black", linewidths=0.4
    )
    span = max(float(np.ptp(result)), 1.0)
    placed: list[tuple[float, float]] = []
    for i in np.argsort(-result, kind="stable"):
        name, x, y = rows[i][0], goal[i], result[i]
        # points that nearly coincide (follow-the-winner and chop) get their labels stacked downwards
        clashes = sum(abs(x - px) < 0.08 and abs(y - py) < 0.04 * span for px, py in placed)
        placed.append((x, y))
        ax.annotate(name, (x, y), xytext=(6, 2 - 11 * clashes), textcoords="offset points", fontsize=8)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.text(0.0, 0.0, " break even", va="bottom", ha="left", fontsize=8, transform=ax.get_yaxis_transform())
    low = min(float(result.min()), 0.0)
    ax.set_ylim(low * 1.15, max(-0.12 * low, 1.0))
    ax.set_xlim(-0.02, min(1.02, float(goal.max()) + 0.15))
    ax.set_xlabel("P(reach the win goal)  (exact)")
    ax.set_ylabel("expected result of a session, money  (exact)")
    ax.set_title(
        f"{report.get('name', 'study')}: winning more sessions does not win money\n"
        f"bankroll {bankroll:g}, up to {report['hands_per_session']:,} hands, "
        "independent hands at the full shoe's odds",
        fontsize=10,
    )
    fig.colorbar(points, ax=ax, label="expected hands played")
    ax.grid(alpha=0.3)
    plotting.save(fig, path)


def print_exact(report: dict) -> None:
    """The exact columns of the terminal table: P(goal), P(ruin), E(hands), E(final) under
    independent hands, and the simulated P(goal) minus the exact one with its 95% CI."""
    width = max([len("system")] + [len(s["name"]) for s in report["systems"]])
    seconds = report["timings"].get("exact_seconds", 0.0)
    print(f"exact, independent hands at the full shoe's odds ({seconds:.1f} s):")
    print(
        f"{'system':<{width}} {'P(goal)':>9} {'P(ruin)':>9} {'P(limit)':>9} {'E(hands)':>9} "
        f"{'E(final)':>10} {'sim-exact P(goal) [95% CI]':>34}"
    )
    for s in report["systems"]:
        e = s.get("exact")
        if e is None:
            continue
        if "reason" in e:
            print(f"{s['name']:<{width}} not finite: {e['reason']}")
            continue
        d = e["versus_simulated"]["p_target"]
        print(
            f"{s['name']:<{width}} {e['p_target']:>9.5f} {e['p_ruin']:>9.5f} {e['p_hand_limit']:>9.5f} "
            f"{e['expected_hands']:>9.1f} {e['mean_final_bankroll']:>10.2f} "
            f"{d['difference']:>+10.5f} [{d['ci95'][0]:+.5f}, {d['ci95'][1]:+.5f}]"
        )
