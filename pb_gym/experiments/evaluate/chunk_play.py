"""One chunk of ``pb-gym evaluate``'s sessions in play: the systems seated at one table session, hand
by hand, and the chunk's mergeable statistics.

The systems are the seats of one :class:`pb_gym.session.Session` of the chunk's tables; the progression
systems whose decisions are their programs alone play inside the hand's compiled pass
(:mod:`pb_gym.experiments.evaluate.hand`), every other system through its own ``propose`` and
``update``; each seat's running statistics are its :class:`~pb_gym.experiments.evaluate.ledger.Ledger`.
:func:`run_chunk` is the task a backend runs (:mod:`pb_gym.experiments.common.scale`); the study
merges what it returns (:mod:`pb_gym.experiments.evaluate`).
"""

from __future__ import annotations

import numpy as np

from pb_gym import engine
from pb_gym import progress as progress_display
from pb_gym import rules as R
from pb_gym import session as session_
from pb_gym.agents import staking
from pb_gym.agents import systems as betting_systems
from pb_gym.experiments.common import scale
from pb_gym.experiments.evaluate import hand as evaluate_hand
from pb_gym.experiments.evaluate import ledger as seat_ledger
from pb_gym.experiments.evaluate.settings import StudyConfig, make_system, slots, study_limits
from pb_gym.experiments.evaluate.summary import FAN_EXACT_VALUES
from pb_gym.parallel import checked_rows
from pb_gym.session import live as session_live

FAN_BINS = 400
"""Bins of the bankroll histogram of each fan checkpoint (over 0 .. :func:`fan_range`)."""
STATES = ("playing", "ruin", "target", "stop_loss", "one_shoe")
"""Where each session stands at a checkpoint: still playing, or ended by ruin, goal, stop-loss or (a
``one_shoe`` study) the end of its shoe (:data:`pb_gym.session.END_REASONS` but ``max_hands``: a
study's hand limit is the loop's, not a seat's)."""
STATE_CODES = np.array([session_.END_REASONS.index(state) for state in STATES])
"""The :data:`pb_gym.session.END_REASONS` code of each of :data:`STATES`."""
DROP_EVERY = 8
"""Hands between two shortenings of the seats' lists of live tables (:mod:`pb_gym.session.live`):
a pass over every listed row, which at every hand cost a tenth of the pass it shortens; a finished
row left listed a few hands longer costs only its visit."""


def fan_range(config: StudyConfig) -> float:
    """Upper edge of the bankroll histograms behind the fan plots (values above it fall in the top bin)."""
    return max(config.bankroll + (config.win_goal or 0.0), 2.0 * config.bankroll)


# ------------------------------------------------------------------------------------- the loop
class ChunkPlay:
    """One chunk's sessions in play: the systems seated at one :class:`pb_gym.session.Session`, their
    ledgers, and the hand loop's state (:func:`run_chunk`).

    The progression systems whose decisions are their programs alone
    (:meth:`agents.systems.Programmed.compiled`) are stacked into one
    :class:`agents.staking.Programs`, proposed and updated for all of them inside the hand's compiled
    pass (:meth:`hand`, with the session's hand and every seat's accounting); every other system
    (Kelly, a learned policy, ...) through its own ``propose`` and ``update``.
    """

    def __init__(self, config: StudyConfig, chunk: scale.Chunk) -> None:
        self.config = config
        self.rules = rules = config.rules.to_rules()
        table = config.table
        self.n = n = chunk.size
        deal_seed, *system_seeds = chunk.child_seeds(1 + len(config.systems))
        self.systems: list[betting_systems.BettingSystem] = []
        for system_config, seed in zip(config.systems, system_seeds, strict=True):
            # made and reset one after the other: a sampling learned policy seeds torch's global random
            # state on reset, and loading the next model draws from it
            system = make_system(system_config)
            system.reset(n, np.random.default_rng(seed))
            self.systems.append(system)
        self.table_bets = table_bets = config.table_bets()
        for system in self.systems:
            system.bind(table_bets)
        columns, self.slot_of = slots(self.systems, table_bets.n_columns)
        payoffs = session_.payoff_matrix(rules) if not table_bets.extra else table_bets.pay_matrix()
        self.session = session_.Session(
            rules,
            study_limits(config),
            n,
            len(self.systems),
            seed=deal_seed,
            history=max([1] + [system.bead_plate for system in self.systems]),
            payoffs=payoffs[:, columns],
        )
        self.seats = self.session.seats
        self.checkpoints = checkpoint_hands(config.hands)
        self.fan_edges = np.linspace(0.0, fan_range(config), FAN_BINS + 1)
        self.samples = min(config.sample_paths, n) if chunk.index == 0 else 0
        # the sample paths' bankrolls at each hand recorded, every seat's at once ((K, samples) a hand)
        self.path_rows: list[np.ndarray] = []
        self.ledgers = seat_ledger.Ledgers.start(self.seats.bankroll, table_bets.n_columns)
        self.ledger = [
            seat_ledger.Ledger(system, self.seats, k, self.ledgers, len(self.checkpoints), FAN_BINS, STATES)
            for k, system in enumerate(self.systems)
        ]
        # the seats whose exact EV of the money staked is kept (every seat of an exact_conditional
        # study; else the counting systems): settle visits them alone
        self.ev_seats = [
            k for k, system in enumerate(self.systems) if config.exact_conditional or system.needs_composition
        ]
        self.counting = bool(self.ev_seats)
        self.last_winner = np.full(n, -1, dtype=np.int8)
        self.last_decision = np.full(n, -1, dtype=np.int8)
        self.max_units = table.maximum / table.unit
        self.requested = np.zeros((len(self.systems), n, len(columns)))
        self.columns = np.full(
            (len(self.systems), n), betting_systems.NO_BET, dtype=np.int64
        )  # proposed, per seat
        self.capped = np.zeros((len(self.systems), n), dtype=np.bool_)
        compiled = [
            k
            for k, system in enumerate(self.systems)
            if isinstance(system, betting_systems.Programmed) and system.compiled()
        ]
        self.python_seats = [k for k in range(len(self.systems)) if k not in compiled]
        # the Python seats that learn from a hand's outcome (a system without its own update, as the
        # Kelly bettor, gets no outcome built)
        self.learning_seats = [
            k
            for k in self.python_seats
            if type(self.systems[k]).update is not betting_systems.BettingSystem.update
        ]
        self.programs: staking.Programs | None = None
        # (no program seat: the hand's pass runs over none)
        self.no_programs = evaluate_hand.no_programs(n)
        self.program_seats = np.zeros(0, dtype=np.int64)
        self.pays = np.zeros(0)
        self.drawing: list[tuple[int, betting_systems.BettingSystem]] = []
        if compiled:
            self.programs = staking.Programs([self.systems[k].program() for k in compiled], n)  # type: ignore[attr-defined]
            self.program_seats = np.array(compiled, dtype=np.int64)
            self.drawing = [
                (s, self.systems[k])
                for s, k in enumerate(compiled)
                if self.programs.programs[s].choice == "drawn"
            ]
            self.pays = np.array([self.systems[k].win_pays(rules) for k in compiled])
        # the seats whose requests are cleared before each hand: a program seat on a fixed column
        # writes its one slot at every table it plays, every hand, and no other (1.2 MB a hand of
        # the main job cleared for nothing)
        choices = (
            dict(zip(compiled, [p.choice for p in self.programs.programs], strict=True))
            if self.programs
            else {}
        )
        self.cleared_seats = np.array(
            [k for k in range(len(self.systems)) if choices.get(k) != "fixed"], dtype=np.int64
        )
        self.totals_done = np.zeros(1, dtype=np.bool_)  # whether the pass added the sums over tables
        self._hand_parts: tuple | None = None  # what the hand's compiled arguments were built from
        self._hand: evaluate_hand.HandState | None = None
        # the tables where each seat may still have work (an ended seat's row, once cleared, is
        # visited no more: about half the main job's seat-rows)
        self.live, self.live_count = session_live.all_live(len(self.systems), n)
        self.hands_since_drop = 0
        self.session_hands = np.zeros(n, dtype=np.int64)  # each session's: its shoe's, whoever sat out
        self.in_shoe = np.ones(n, dtype=bool)  # one_shoe: the session's shoe is still dealing
        self.dealt = config.hands  # the hands dealt at the tables (fewer: see finish)

    def view(self, k: int, hand_index: int, composition: np.ndarray | None) -> betting_systems.TableView:
        """What seat ``k``'s system sees before (and, with this hand's results, after) the hand."""
        table = self.config.table
        return betting_systems.TableView(
            self.seats.bankroll[k] / table.unit,
            self.max_units,
            self.rules,
            composition,
            self.last_winner,
            self.last_decision,
            table.minimum / table.unit,
            hand_index,
            self.session.shoe,
            self.session.hand if hand_index else None,
            session=self.session,
            seat=k,
            unit=table.unit,
            bets=self.table_bets,
        )

    def propose(self, hand_index: int, composition: np.ndarray | None) -> list[betting_systems.TableView]:
        """The Python seats' proposals into the requested stakes (the program seats propose in the
        hand's pass, :meth:`hand`); the views shown to them."""
        self.requested[self.cleared_seats] = 0.0
        unit = self.config.table.unit
        if self.programs is not None:
            for s, system in self.drawing:
                self.programs.state.drawn[s] = system.draw()  # type: ignore[attr-defined]
        views = []
        for k in self.python_seats:
            system, view = self.systems[k], self.view(k, hand_index, composition)
            proposal = system.propose(view)
            column = np.asarray(proposal.column)
            bet = np.flatnonzero(column != betting_systems.NO_BET)
            if bet.size and self.slot_of[column[bet]].min() < 0:
                raise ValueError(
                    f"system {system.name!r} proposed a bet column outside its "
                    f"bet_columns() {system.bet_columns()}"
                )
            self.requested[k, bet, self.slot_of[column[bet]]] = proposal.units[bet] * unit
            self.columns[k] = column
            self.capped[k] = proposal.capped
            views.append(view)
        return views

    def hand(self) -> None:
        """The hand at every table, in one compiled pass over each chunk of tables (on the session's
        threads, :mod:`pb_gym.experiments.evaluate.hand`): the program seats' proposals, the session's stake
        rules, deal, settlement and ends, every seat's accounting and the program seats' updates;
        then what the accounting sums over the tables."""
        programs, state = self.no_programs
        if self.programs is not None:
            self.programs.make_room()  # (before the updates: a loss may lengthen a Labouchere line)
            programs, state = self.programs.table, self.programs.state
        # (the Python seats' requests are checked here; the program seats' are written inside the
        # pass, min(wanted, table maximum) x unit: finite and >= 0)
        deal, requested, chosen, sticky, play_state = self.session.play_arguments(
            self.requested, self.python_seats
        )
        # the pass's arguments as one compiled object, built again when one of them is replaced
        parts = (programs, state, requested, play_state)
        if self._hand_parts is None or any(a is not b for a, b in zip(parts, self._hand_parts, strict=True)):
            self._hand_parts = parts
            self._hand = evaluate_hand.new_hand_state(
                programs,
                state,
                self.last_decision,
                float(self.max_units),
                float(self.config.table.unit),
                self.program_seats,
                self.slot_of,
                self.columns,
                self.capped,
                self.pays,
                deal,
                requested,
                chosen,
                sticky,
                play_state,
                self.ledgers,
                self.live,
                self.live_count,
                self.totals_done,
            )
        self.totals_done[0] = False
        found = checked_rows(evaluate_hand.hand_rows, self.n, session_.PLAY_MIN_TABLES, self._hand)
        if found[0] >= 0:
            engine.raise_table_problem(*found)
        seats = self.session.seats
        if not self.totals_done[0]:  # (the pass ran in chunks, on several threads: summed here)
            seat_ledger.account_totals(
                seats.view, self.columns, self.capped, self.ledgers, self.live, self.live_count
            )
        self.hands_since_drop += 1
        if sticky and self.hands_since_drop >= DROP_EVERY:
            self.hands_since_drop = 0
            session_live.drop_finished(
                self.live, self.live_count, seats.ended, seats.terminated, seats.truncated
            )

    def settle(self, views: list[betting_systems.TableView], composition: np.ndarray | None) -> None:
        """After the hand: each Python seat's system learns its outcome; the counting seats' exact EV
        of the money they staked."""
        seats, ledgers, unit = self.seats, self.ledgers, self.config.table.unit
        for k, view in zip(self.python_seats, views, strict=True):
            if k not in self.learning_seats:
                continue
            view.hand = self.session.hand  # systems learn from this hand's result arrays
            placed, stake, net = seats.placed[k], ledgers.stake[k], seats.net[k]
            outcome = betting_systems.HandOutcome(
                placed, np.sign(net).astype(np.int8), stake / unit, net / unit, ledgers.capped[k]
            )
            self.systems[k].update(view, outcome)
        if composition is not None:
            for k in self.ev_seats:
                placed = seats.placed[k]
                if placed.any():
                    column = self.columns[k][placed]
                    ev = self.table_bets.expected_values(composition[placed])
                    self.ledger[k].exact_ev_wagered += float(
                        (ledgers.stake[k][placed] * ev[np.arange(placed.sum()), column]).sum()
                    )

    def record(self, hand: int) -> None:
        """Every seat's sample paths, and at a checkpoint its bankroll fan, distinct bankrolls and
        states (all seats at once: one compiled pass for the histograms and the counts of the ends)."""
        if self.samples:
            self.path_rows.append(self.seats.bankroll[:, : self.samples].copy())
        at = np.searchsorted(self.checkpoints, hand)
        if at < len(self.checkpoints) and self.checkpoints[at] == hand:
            self.record_checkpoint(int(at))

    def record_checkpoint(self, at: int) -> None:
        """Checkpoint ``at``'s bankroll fans, distinct bankrolls and states of every seat."""
        bankroll = self.seats.bankroll
        n = bankroll.shape[1]
        # bin i holds [edge_i, edge_i+1); the last bin also everything above the range
        fans, states = seat_ledger.fan_checkpoint(bankroll, self.fan_edges, self.seats.ended, STATE_CODES)
        many = seat_ledger.many_distinct(bankroll, FAN_EXACT_VALUES)
        for j, ledger in enumerate(self.ledger):
            ledger.fan[at] += fans[j]
            ledger.states[at] = states[j]
            if many[j]:  # no table of the bankrolls, only their range
                ledger.fan_values[at] = None
                ledger.fan_min[at], ledger.fan_max[at] = bankroll[j].min(), bankroll[j].max()
                continue
            ordered = np.sort(bankroll[j])  # the distinct values and their counts, as np.unique's
            starts = np.flatnonzero(np.append(True, ordered[1:] != ordered[:-1]))
            values, counts = ordered[starts], np.diff(np.append(starts, n))
            ledger.fan_values[at] = (values, counts) if len(values) <= FAN_EXACT_VALUES else None
            ledger.fan_min[at], ledger.fan_max[at] = values[0], values[-1]

    def play(self, hand_index: int) -> None:
        """One hand at every table: the proposals, the session's hand, the accounting and updates."""
        config = self.config
        self.session_hands += self.in_shoe
        composition = engine.next_hand_composition(self.rules, self.session.shoe) if self.counting else None
        views = self.propose(hand_index, composition)
        self.hand()  # the program seats' proposals, the hand, the accounting, the programs' updates
        self.settle(views, composition)
        self.record(hand_index + 1)
        hand = self.session.hand
        self.last_winner[:] = hand.winner
        np.copyto(self.last_decision, hand.winner, where=hand.winner != R.TIE)
        if config.one_shoe:
            self.in_shoe &= ~engine.shoe_over(self.rules, self.session.shoe)

    def over(self) -> bool:
        """Whether no hand left to deal can change anything the chunk reports: every seat at every
        table has ended (its bankroll, its state and its sums stand; the seats' lists of live tables,
        shortened every :data:`DROP_EVERY` hands, are empty), or, in a ``one_shoe`` study, every
        shoe is over (its seats ended with it). A ``one_shoe`` session's hands are its shoe's, which
        deals on after its seats have ended: the chunk stops only with the last shoe."""
        if self.config.one_shoe:
            return not self.in_shoe.any()
        return not self.live_count.any()

    def finish(self, dealt: int) -> None:
        """After :meth:`over`, with ``dealt`` hands dealt: the hands left, undealt, as if dealt. Each
        session counts them (a session's hands are its table's, whoever sat out), and the fans of
        the checkpoints left repeat the final bankrolls and states. The sample paths stop at the
        last hand recorded (:meth:`sample_paths`)."""
        self.session_hands += (self.config.hands - dealt) * self.in_shoe
        for at in np.flatnonzero(self.checkpoints > dealt):
            self.record_checkpoint(int(at))
        self.dealt = dealt

    def sample_paths(self) -> list[np.ndarray]:
        """Each seat's sample paths ``(samples, hands recorded)``: the bankroll at hand 0 and after
        each hand recorded (chunk 0 alone keeps any). A chunk that stopped early (:meth:`finish`)
        recorded fewer than ``hands + 1``: its sessions had ended, and each path's last bankroll
        stands for the hands not dealt (:func:`pb_gym.experiments.evaluate.sample_lists`), so that
        the paths of a million hands of sessions that end within tens take the memory of tens."""
        if not self.path_rows:
            return [np.array([]) for _ in self.ledger]  # (no paths: as an array of no rows was)
        rows = np.array(self.path_rows)  # (hands recorded, K, samples)
        return [np.ascontiguousarray(rows[:, k]).T for k in range(len(self.ledger))]

    def result(self, index: int) -> dict:
        """The mergeable statistics of chunk ``index`` (:func:`pb_gym.experiments.evaluate.merge_into`),
        and ``hands_run``: the hands the chunk dealt at its tables (``hands``, or fewer where every
        session ended before)."""
        config, systems = self.config, self.systems
        paths = self.sample_paths()
        return {
            "chunk": index,
            "hands_run": self.dealt,
            "systems": [
                ledger.statistics(self.session_hands, samples)
                for ledger, samples in zip(self.ledger, paths, strict=True)
            ],
            "names": [system.name for system in systems],
            "types": [system.key for system in systems],
            "bets": [system.bet for system in systems],
            "counting": [system.needs_composition for system in systems],
            "conditional": [config.exact_conditional or system.needs_composition for system in systems],
        }


def run_chunk(
    config_data: dict, chunk: scale.Chunk, show_progress: bool | progress_display.Progress = False
) -> dict:
    """Play every system over the hands of one chunk of sessions (the scale-out task).

    The systems are the seats of one :class:`pb_gym.session.Session` of ``chunk.size`` tables: each
    proposes a stake per session, the session applies the table's stake rules, deals one hand at every
    table (the same hand for every system), settles, and ends the sessions (:class:`ChunkPlay`). The
    chunk's seed deals its sessions and seeds its systems; everything returned merges exactly. Once
    every session has ended (:meth:`ChunkPlay.over`) the chunk stops dealing.
    ``show_progress``: the study's :class:`pb_gym.progress.Progress` to count the hands dealt in (the
    serial backend), or True for a display of this chunk alone.
    """
    config = StudyConfig.model_validate(config_data)
    play = ChunkPlay(config, chunk)
    hands = config.hands
    bar = show_progress if isinstance(show_progress, progress_display.Progress) else None
    if show_progress is True:
        bar = progress_display.Progress(
            f"{config.name} {chunk.index + 1}/{chunk.count}", total=play.n * hands
        )
    play.record(0)
    for hand_index in range(hands):
        if play.over():
            # every session has ended: the hands left would deal cards and change nothing reported
            play.finish(hand_index)
            if bar is not None:
                bar.update(play.n * (hands - hand_index), chunk.index)
            break
        if scale.stop_requested():  # (Ctrl-C, on the threads backend)
            raise scale.ChunkStopped(chunk.describe())
        play.play(hand_index)
        if bar is not None:
            bar.update(play.n, chunk.index)
    if show_progress is True and bar is not None:
        bar.close()
    return play.result(chunk.index)


def checkpoint_hands(hands: int) -> np.ndarray:
    """The hands (0 = the start) at which the bankroll fans are recorded: at most 101."""
    return np.unique(np.linspace(0, hands, min(hands, 100) + 1).astype(int))


__all__ = [
    "ChunkPlay",
    "run_chunk",
    "checkpoint_hands",
    "fan_range",
    "FAN_BINS",
    "STATES",
    "STATE_CODES",
]
