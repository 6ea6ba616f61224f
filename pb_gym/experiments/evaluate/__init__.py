"""Evaluate betting systems side by side from a YAML study config (``pb-gym evaluate CONFIG``): the loop.

Every system plays the same dealt hands (common random numbers): the systems are the seats of one
table session (:class:`pb_gym.session.Session`), session ``s`` is its table ``s``, and each system keeps
its own bankroll over those hands. Differences between systems are therefore differences of staking,
not of luck. The session applies the table's stake rules, settles, and ends a system's session at
ruin (bankroll below the table minimum), at the stop-loss or at the win goal; an ended session stops
betting; the study's hand limit ends them all. A chunk whose sessions have all ended deals no more
hands: what it reports is what those hands would have left it (:meth:`ChunkPlay.finish`).

The study is cut into chunks of sessions (:mod:`pb_gym.experiments.common.scale`); a chunk returns mergeable
statistics (sums, counts, histograms, the bounded summaries of :mod:`pb_gym.experiments.evaluate.summary`),
and the chunks are merged a batch at a time in chunk order, so that a study needs the memory of a few
chunks however many sessions it has. The files, one job each:

* ``pb_gym/experiments/evaluate/settings.py``: the YAML schema (derived from ``Rules`` and the systems'
  constructors);
* ``pb_gym/experiments/evaluate/__init__.py`` (this file): the session loop (:func:`run_chunk`,
:class:`Ledger`), the
  merge and :func:`run_study`, and ``main``;
* ``pb_gym/experiments/evaluate/summary.py``: the mergeable summaries of the bankrolls and their quantiles;
* ``pb_gym/experiments/evaluate/report.py``: the per-system figures, the terminal table, JSON and CSV;
  ``figures.py``: the plots.
"""

from __future__ import annotations

import functools
import os
import time

import numpy as np

from pb_gym import engine, memory
from pb_gym import progress as progress_display
from pb_gym import rules as R
from pb_gym import session as session_
from pb_gym.agents import staking
from pb_gym.agents import systems as S
from pb_gym.experiments.common import chunk_store, outputs, plotting, scale
from pb_gym.experiments.common.yaml_config import ConfigError, load
from pb_gym.experiments.evaluate import exact_chain
from pb_gym.experiments.evaluate import hand as EH
from pb_gym.experiments.evaluate import ledger as LG
from pb_gym.experiments.evaluate import summary as summaries
from pb_gym.experiments.evaluate.report import (
    EXACT_OUTPUT_NAMES,
    OUTPUT_NAMES,
    fan_summary,
    json_report,
    print_report,
    system_summary,
    write_outputs,
)
from pb_gym.experiments.evaluate.settings import TOLERANCE, StudyConfig, make_system, slots, study_limits
from pb_gym.experiments.evaluate.summary import FAN_EXACT_VALUES, QUANTILES
from pb_gym.parallel import checked_rows, cores
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
        self.systems: list[S.BettingSystem] = []
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
        self.ledgers = LG.Ledgers.start(self.seats.bankroll, table_bets.n_columns)
        self.ledger = [
            LG.Ledger(system, self.seats, k, self.ledgers, len(self.checkpoints), FAN_BINS, STATES)
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
        self.columns = np.full((len(self.systems), n), S.NO_BET, dtype=np.int64)  # proposed, per seat
        self.capped = np.zeros((len(self.systems), n), dtype=np.bool_)
        compiled = [
            k
            for k, system in enumerate(self.systems)
            if isinstance(system, S.Programmed) and system.compiled()
        ]
        self.python_seats = [k for k in range(len(self.systems)) if k not in compiled]
        # the Python seats that learn from a hand's outcome (a system without its own update, as the
        # Kelly bettor, gets no outcome built)
        self.learning_seats = [
            k for k in self.python_seats if type(self.systems[k]).update is not S.BettingSystem.update
        ]
        self.programs: staking.Programs | None = None
        # (no program seat: the hand's pass runs over none)
        self.no_programs = EH.no_programs(n)
        self.program_seats = np.zeros(0, dtype=np.int64)
        self.pays = np.zeros(0)
        self.drawing: list[tuple[int, S.BettingSystem]] = []
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
        self._hand: EH.HandState | None = None
        # the tables where each seat may still have work (an ended seat's row, once cleared, is
        # visited no more: about half the main job's seat-rows)
        self.live, self.live_count = session_live.all_live(len(self.systems), n)
        self.hands_since_drop = 0
        self.session_hands = np.zeros(n, dtype=np.int64)  # each session's: its shoe's, whoever sat out
        self.in_shoe = np.ones(n, dtype=bool)  # one_shoe: the session's shoe is still dealing
        self.dealt = config.hands  # the hands dealt at the tables (fewer: see finish)

    def view(self, k: int, hand_index: int, composition: np.ndarray | None) -> S.TableView:
        """What seat ``k``'s system sees before (and, with this hand's results, after) the hand."""
        table = self.config.table
        return S.TableView(
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

    def propose(self, hand_index: int, composition: np.ndarray | None) -> list[S.TableView]:
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
            bet = np.flatnonzero(column != S.NO_BET)
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
            self._hand = EH.new_hand_state(
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
        found = checked_rows(EH.hand_rows, self.n, session_.PLAY_MIN_TABLES, self._hand)
        if found[0] >= 0:
            engine.raise_table_problem(*found)
        seats = self.session.structs()[0]
        if not self.totals_done[0]:  # (the pass ran in chunks, on several threads: summed here)
            LG.account_totals(seats, self.columns, self.capped, self.ledgers, self.live, self.live_count)
        self.hands_since_drop += 1
        if sticky and self.hands_since_drop >= DROP_EVERY:
            self.hands_since_drop = 0
            session_live.drop_finished(
                self.live, self.live_count, seats.ended, seats.terminated, seats.truncated
            )

    def settle(self, views: list[S.TableView], composition: np.ndarray | None) -> None:
        """After the hand: each Python seat's system learns its outcome; the counting seats' exact EV
        of the money they staked."""
        seats, ledgers, unit = self.seats, self.ledgers, self.config.table.unit
        for k, view in zip(self.python_seats, views, strict=True):
            if k not in self.learning_seats:
                continue
            view.hand = self.session.hand  # systems learn from this hand's result arrays
            placed, stake, net = seats.placed[k], ledgers.stake[k], seats.net[k]
            outcome = S.HandOutcome(
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
        fans, states = LG.fan_checkpoint(bankroll, self.fan_edges, self.seats.ended, STATE_CODES)
        many = LG.many_distinct(bankroll, FAN_EXACT_VALUES)
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
        stands for the hands not dealt (:func:`sample_lists`), so that the paths of a million hands
        of sessions that end within tens take the memory of tens."""
        if not self.path_rows:
            return [np.array([]) for _ in self.ledger]  # (no paths: as an array of no rows was)
        rows = np.array(self.path_rows)  # (hands recorded, K, samples)
        return [np.ascontiguousarray(rows[:, k]).T for k in range(len(self.ledger))]

    def result(self, index: int) -> dict:
        """The mergeable statistics of chunk ``index`` (:func:`merge_into`), and ``hands_run``: the
        hands the chunk dealt at its tables (``hands``, or fewer where every session ended before)."""
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


def sample_lists(samples: np.ndarray, length: int) -> list:
    """A system's sample paths ``(paths, hands recorded)`` as the report's lists of ``length``
    bankrolls (hand 0 to the last): a path recorded to fewer hands (a chunk that stopped when its
    sessions had ended, :meth:`ChunkPlay.finish`) keeps its last bankroll for the rest. The bankroll
    a path ends on, often for most of its hands, is one float object repeated, not one a hand (8
    bytes a hand rather than 32); the values are those of ``tolist()`` of the whole path."""
    if samples.ndim < 2:
        return samples.tolist()  # (no sample paths)
    paths = []
    for path in samples:
        bits = path.view(np.int64)  # (equal bits: -0.0 is not 0.0, and a NaN is itself)
        changes = np.flatnonzero(bits[1:] != bits[:-1])
        last = int(changes[-1]) + 1 if changes.size else 0  # where the last value starts
        values = [float(path[last])] * length
        values[:last] = path[:last].tolist()  # (in place: no second list of the whole path)
        paths.append(values)
    return paths


def checkpoint_hands(hands: int) -> np.ndarray:
    """The hands (0 = the start) at which the bankroll fans are recorded: at most 101."""
    return np.unique(np.linspace(0, hands, min(hands, 100) + 1).astype(int))


SUMMED = (
    "sessions",
    "hands_dealt",
    "sum_net",
    "sum_wagered",
    "sum_net2",
    "sum_wagered2",
    "sum_net_wagered",
    "bets",
    "sum_max_drawdown",
    "wagered_by_spot",
    "exact_ev_wagered",
    "table_capped",
    "bankroll_capped",
    "fan",
    "states",
)
"""The statistics of a system that the merge adds up."""


def merge_into(merged: list[dict] | None, chunk: dict, final_bankrolls: bool = True) -> list[dict]:
    """Add one chunk's statistics to the merged ones (None before the first chunk), system by system.
    Chunks must come in chunk order: the float sums are then the same, to the last bit, however the
    chunks are batched (sums, counts and histograms add; ranges take the min and max; the exact value
    tables and the final-bankroll summaries merge exactly; the sample paths are the first chunk's).
    ``final_bankrolls``: keep every session's final bankroll (a list of the chunks' arrays)."""
    if merged is None:
        merged = []
        for i, part in enumerate(chunk["systems"]):
            total = {key: 0 + part[key] for key in SUMMED}  # as sum() over chunks starts: 0 + first
            total.update(
                fan_min=part["fan_min"].copy(),
                fan_max=part["fan_max"].copy(),
                fan_values=[summaries.merge_value_counts([table]) for table in part["fan_values"]],
                ended=dict(part["ended"]),
                max_drawdown=part["max_drawdown"],
                max_stake=part["max_stake"],
                final=part["final"],
                samples=part["samples"],
            )
            if final_bankrolls:
                total["final_bankrolls"] = [part["final_bankrolls"]]
                total["session_hands"] = [part["session_hands"]]
            for key, name in (
                ("names", "name"),
                ("types", "type"),
                ("bets", "bet"),
                ("counting", "counting"),
                ("conditional", "conditional"),
            ):
                total[name] = chunk[key][i]
            merged.append(total)
        return merged
    for total, part in zip(merged, chunk["systems"], strict=True):
        for key in SUMMED:
            total[key] = total[key] + part[key]
        total["fan_min"] = np.minimum(total["fan_min"], part["fan_min"])
        total["fan_max"] = np.maximum(total["fan_max"], part["fan_max"])
        total["fan_values"] = [
            summaries.merge_value_counts([mine, theirs])
            for mine, theirs in zip(total["fan_values"], part["fan_values"], strict=True)
        ]
        total["ended"] = {reason: total["ended"][reason] + part["ended"][reason] for reason in total["ended"]}
        total["max_drawdown"] = max(total["max_drawdown"], part["max_drawdown"])
        total["max_stake"] = max(total["max_stake"], part["max_stake"])
        total["final"] = summaries.merge_final(total["final"], part["final"])
        if "final_bankrolls" in total:
            total["final_bankrolls"].append(part["final_bankrolls"])
            total["session_hands"].append(part["session_hands"])
    return merged


def merge(chunks: list[dict]) -> list[dict]:
    """The merged statistics of ``chunks`` (in chunk order), system by system (see :func:`merge_into`)."""
    merged = None
    for chunk in chunks:
        merged = merge_into(merged, chunk)
    if merged is None:
        raise ValueError("merge needs at least one chunk")
    for total in merged:
        if "final_bankrolls" in total:
            total["final_bankrolls"] = np.concatenate(total["final_bankrolls"])
            total["session_hands"] = np.concatenate(total["session_hands"])
    return merged


# ------------------------------------------------------------------------------------- the study
BATCH_BYTES = 256 << 20
"""Finished chunks are merged once their results reach about this much memory (a batch of chunks is
run, merged, and let go), so that memory is bounded whatever the number of chunks."""
WORKING_BYTES_PER_SESSION_AND_SYSTEM = 178
"""A running chunk's memory per session and system: the ledger's rows, the stakes, the outcome, and
its entry in the seats' lists of live tables (8 bytes)."""


def chunk_result_bytes(config: StudyConfig) -> int:
    """The memory one finished chunk's result holds until it is merged (an upper bound): per system,
    the fan (a histogram, an exact table and the states at each checkpoint), the final-bankroll summary
    (at most :data:`~pb_gym.experiments.evaluate.summary.FINAL_EXACT_VALUES` values, or its buckets), and
    every session's final bankroll (the merge keeps them only for ``run_study(final_bankrolls=True)``).
    It depends on the chunk size, never on the number of sessions of the study."""
    chunk = min(config.chunk_sessions, config.sessions)
    fan = len(checkpoint_hands(config.hands)) * (
        (FAN_BINS + 1) * 8 + FAN_EXACT_VALUES * 16 + (len(STATES) + 2) * 8
    )
    final = min(chunk, summaries.FINAL_EXACT_VALUES) * 16
    samples = min(config.sample_paths, chunk) * (config.hands + 1) * 8
    per_system = fan + final + samples + 8 * chunk + 1024
    return len(config.systems) * per_system


def check_memory(config: StudyConfig, parallel: int, final_bankrolls: bool = False) -> int:
    """Refuse (:class:`pb_gym.memory.TooLarge`) a study this machine cannot hold, before anything
    runs; return the number of chunks merged at a time. The memory is that of the chunks running at
    once (``parallel`` of ``chunk_sessions`` sessions), of a batch of finished chunks and of the merged
    statistics: it does not grow with the number of sessions, except by every session's final bankroll
    when a caller asks for them (``final_bankrolls``, not ``pb-gym evaluate``)."""
    n_systems = len(config.systems)
    chunk = min(config.chunk_sessions, config.sessions)
    count = -(-config.sessions // config.chunk_sessions)
    per_chunk = chunk_result_bytes(config) + scale.CHUNK_OVERHEAD
    batch = min(count, max(parallel, BATCH_BYTES // per_chunk))
    # a table's shoe state, each system's ledger row and stakes, the exact odds if computed
    per_session = (
        engine.table_bytes(config.rules.to_rules()) + WORKING_BYTES_PER_SESSION_AND_SYSTEM * n_systems + 200
    )
    working = parallel * chunk * per_session
    kept = (batch + 1) * per_chunk  # a batch of results, and the merged statistics
    kept_finals = config.sessions * 16 * n_systems if final_bankrolls else 0  # bankroll and hands
    if kept_finals > working:
        advice = (
            f"lower `sessions` (every session's final bankroll is kept for the caller, "
            f"{memory.describe(16 * n_systems)} a session)"
        )
    else:
        advice = (
            f"lower `chunk_sessions` (a running chunk needs about "
            f"{memory.describe(per_session)} per session"
            + (f", {parallel} chunks at once" if parallel > 1 else "")
            + ")"
        )
    memory.require(
        working + kept + kept_finals,
        f"the study {config.name!r} ({config.sessions:,} sessions in chunks of {config.chunk_sessions:,})",
        advice,
    )
    return batch


def run_study(
    config: StudyConfig,
    progress: bool = False,
    backend: str = "threads",
    scheduler: str | None = None,
    workers: int | None = None,
    store: chunk_store.ChunkStore | None = None,
    final_bankrolls: bool = True,
) -> dict:
    """Play every system over the same dealt hands and return the report (JSON-ready but for the
    entries :func:`pb_gym.experiments.evaluate.report.json_report` leaves out).

    The sessions are cut into chunks of ``config.chunk_sessions`` (see
    :mod:`pb_gym.experiments.common.scale`); the
    report is identical whatever the backend that ran them. On ``threads`` (the default) the chunks
    run side by side on this process's cores, but serially for a study with a learned policy (it
    seeds torch's process-wide random state). The chunks are planned, run and merged a
    batch at a time (:func:`check_memory`), so the memory is bounded by the chunk size. With a ``store``
    (see :func:`pb_gym.experiments.common.outputs.chunk_store`) finished chunks are kept and an interrupted
    run
    resumes. ``final_bankrolls``: the report also holds every session's final bankroll
    (``report["final_bankrolls"][name]``) and hands dealt (``report["session_hands"]``: fewer than
    ``hands`` in a ``one_shoe`` study), 16 bytes a session and system: for callers that pair sessions
    across systems; ``pb-gym evaluate`` does without.
    """
    started = time.perf_counter()
    count = -(-config.sessions // config.chunk_sessions)
    if backend == "threads" and any(system.type == "sb3" for system in config.systems):
        # a learned policy seeds torch's process-wide random state: chunks side by side would
        # interleave its draws (and the report would depend on the threads' timing)
        backend = "serial"
    parallel = 1 if backend == "serial" else workers or os.cpu_count() or 1
    if backend == "threads":  # (as many chunks at once as scale.run runs: the cores, at most)
        parallel = min(workers or cores(), count)
    batch = check_memory(config, parallel, final_bankrolls)
    # hands dealt: counted hand by hand when the chunks run here, chunk by chunk otherwise
    tracker = progress_display.Progress(
        config.name,
        total=config.sessions * config.hands,
        chunks=count,
        per_item=config.hands,
        enabled=progress,
    )
    task = functools.partial(
        run_chunk,
        config.model_dump(mode="json"),
        show_progress=tracker if progress and backend in ("serial", "threads") else False,
    )
    merged = None
    with tracker:
        for first in range(0, count, batch):
            chunks = scale.plan(
                config.sessions, config.chunk_sessions, config.seed, range(first, min(first + batch, count))
            )
            for result in scale.run(
                task, chunks, backend, scheduler, workers, progress=tracker if progress else None, store=store
            ):
                merged = merge_into(merged, result, final_bankrolls)
    if merged is None:
        raise ValueError(f"the study {config.name!r} ran no chunk")
    systems = merged
    for stats in systems:
        if "final_bankrolls" in stats:
            stats["final_bankrolls"] = np.concatenate(stats["final_bankrolls"])
            stats["session_hands"] = np.concatenate(stats["session_hands"])
    rules = config.rules.to_rules()
    full_ev = config.table_bets().expected_values(R.full_shoe(rules.decks))
    checkpoints = checkpoint_hands(config.hands)
    edges = np.linspace(0.0, fan_range(config), FAN_BINS + 1)
    report = {
        "name": config.name,
        "sessions": config.sessions,
        "hands_per_session": config.hands,
        "one_shoe": config.one_shoe,
        "hands_dealt": systems[0]["hands_dealt"],
        "bankroll": config.bankroll,
        "table": config.table.model_dump(),
        "rules": config.rules.model_dump(),
        "seed": config.seed,
        "chunks": count,
        "chunk_sessions": config.chunk_sessions,
        "systems": [system_summary(stats, config, full_ev) for stats in systems],
        "checkpoints": checkpoints.tolist(),
        "timings": {"seconds": time.perf_counter() - started},
    }
    if config.exact:
        exact_chain.attach(report, config)
    report["paths"] = {
        stats["name"]: fan_summary(stats, edges, STATES)
        | {"samples": sample_lists(stats["samples"], config.hands + 1)}
        for stats in systems
    }
    report["final_summaries"] = {stats["name"]: stats["final"] for stats in systems}
    if final_bankrolls:
        report["final_bankrolls"] = {stats["name"]: stats["final_bankrolls"] for stats in systems}
        report["session_hands"] = systems[0]["session_hands"]  # the table's: the same for every seat
    return report


def _model_checksums(config: StudyConfig) -> dict:
    """The recorded SHA-256 of each learned model's files (a model retrained in the same folder makes
    another run: its finished chunks must not be resumed)."""
    import json

    from pb_gym.agents.learned import model_files

    return {
        system.model: json.loads(model_files(system.model)[1].read_text()).get("sha256")
        for system in config.systems
        if system.type == "sb3"
    }


def main(
    config_path: str,
    out: str | None = None,
    as_json: bool = False,
    backend: str = "threads",
    scheduler: str | None = None,
    workers: int | None = None,
    resume: bool | None = None,
) -> dict:
    """``pb-gym evaluate``: load and validate the config, run (on the backend), print, write outputs.

    ``out`` is checked before anything is computed; finished chunks are kept in ``out/.partial`` and a
    rerun resumes from them (``resume``: None resumes a matching unfinished run, False discards it);
    outputs are written only after every chunk has finished and been merged, into a staging folder
    moved into place whole (:mod:`pb_gym.experiments.common.outputs`). The report is the same on every
    backend, and
    resumed or not, except its ``timings``.
    """
    config = load(config_path, StudyConfig)
    destination = outputs.prepare(out, OUTPUT_NAMES + EXACT_OUTPUT_NAMES)
    if destination is not None:
        plotting.preload()  # (the figures are drawn after the run: matplotlib's import overlaps it)
    store = outputs.chunk_store(
        destination,
        {
            "study": "evaluate",
            "config": config.model_dump(mode="json"),
            "models": _model_checksums(config),
        },
        resume,
    )
    report = run_study(
        config,
        progress=not as_json,
        backend=backend,
        scheduler=scheduler,
        workers=workers,
        store=store,
        final_bankrolls=False,
    )
    if destination is not None:
        with destination.staging() as staged:
            written = write_outputs(report, staged)
        report["written"] = [str(destination.final_path(p, staged)) for p in written]
    if not as_json:
        print_report(report)
        if out is not None:
            print(outputs.wrote_line(report["written"]))
    return json_report(report)


__all__ = [
    "StudyConfig",
    "ConfigError",
    "run_study",
    "run_chunk",
    "merge",
    "merge_into",
    "main",
    "make_system",
    "check_memory",
    "chunk_result_bytes",
    "json_report",
    "print_report",
    "QUANTILES",
    "TOLERANCE",
]
