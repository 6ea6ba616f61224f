"""The shoe effect on a betting system's session, measured: Labouchere's exact chain against its
sessions dealt three ways (``python -m pb_gym.experiments.evaluate.shoe_effect``).

The exact chain (:mod:`pb_gym.experiments.evaluate.exact_chain`) deals every hand independently at the full
shoe's
probabilities; the evaluator deals real shoes, whose hands are not independent. At the exact
Labouchere config (:data:`CONFIG`: line 1, 2, 3, 4 on banker, table maximum 10 units, goal +10,
stop-loss 20, bankroll 100 units, 200 hands) this module plays the same sessions

* ``independent``: hands drawn independently at the full 8-deck shoe's exact probabilities (numpy);
* ``csm``: hands dealt by the engine from a shoe shuffled afresh before every hand (a continuous
  shuffler: independent hands, through the engine's own shuffle, burn and deal);
* ``shoe``: hands dealt by the engine from one shoe per session, to the cut card (the evaluator's way);

each by one vectorized Labouchere written from the rules (:func:`play`; it equals the evaluator's on the same
hands, checked in ``tests/experiments/evaluate/test_exact_shoe_effect.py``), and scans the evaluator's own
P(goal) over many seeds (:func:`evaluator_seeds`). ``shoe`` minus ``csm`` is the shoe effect; the
``independent`` row checks the chain. :func:`miss_by_hand` splits one seed's miss of the exact P(goal) hand by
hand (P(goal | the state after a hand) minus before it, summed over the sessions), from a value iteration over
the session's states written here (a second computation of the exact figure).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from pb_gym import engine, exact
from pb_gym import rules as R

if TYPE_CHECKING:
    from pb_gym.experiments.evaluate import ChunkPlay
    from pb_gym.experiments.evaluate.settings import StudyConfig

CONFIG = {
    "name": "labouchere-exact",
    "rules": {"decks": 8},
    "table": {"unit": 10, "minimum": 10, "maximum": 100},
    "bankroll": 1000,
    "win_goal": 100,
    "stop_loss": 200,
    "hands": 200,
    "sessions": 4000,
    "seed": 5,
    "systems": [{"type": "labouchere", "bet": "banker"}],
}
"""The exact Labouchere config of ``docs/guides/exact-systems.md`` (money; one unit is 10)."""
LINE: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0)
MAX_UNITS = 10.0
START, GOAL, FLOOR = 100.0, 110.0, 80.0
"""The config in units: the bankroll, the goal and the stop-loss floor."""
TOLERANCE = 1e-9
"""The evaluator's slack at the goal and the floor (in units here: finer than any amount's rounding)."""
WAYS = ("independent", "csm", "shoe")

Dealer = Callable[[np.ndarray], np.ndarray]
"""Called once a hand with the mask of the sessions still playing; returns every table's winner."""


def full_shoe_probabilities() -> dict[str, float]:
    return exact.odds(R.full_shoe(8))["probabilities"]


def play(deal: Dealer, n: int, hands: int = 200) -> np.ndarray:
    """``n`` Labouchere sessions of :data:`CONFIG` over the winners ``deal`` returns, by the rules: stake
    the first plus the last number (the only one when one is left), cut to the table maximum; a banker
    win pays 0.95 and crosses both numbers off (a new line when none is left), a player win appends
    the stake, a tie changes nothing; a session ends at the goal or the stop-loss floor. Returns
    every session's final bankroll in units."""
    width = len(LINE) + hands + 1
    line = np.zeros((n, width))
    line[:, : len(LINE)] = LINE
    head, tail = np.zeros(n, np.int64), np.full(n, len(LINE), np.int64)
    bankroll, playing = np.full(n, START), np.ones(n, dtype=bool)
    for _ in range(hands):
        rows = np.flatnonzero(playing)
        if rows.size == 0:
            break
        winner = deal(playing)[rows]
        first, last = head[rows], tail[rows]
        single = last - first == 1
        stake = np.where(single, line[rows, first], line[rows, first] + line[rows, last - 1])
        stake = np.minimum(stake, MAX_UNITS)
        won, lost = winner == R.BANKER, winner == R.PLAYER
        bankroll[rows] += np.where(won, 0.95 * stake, np.where(lost, -stake, 0.0))
        first = np.where(won, first + 1, first)
        last = np.where(won & ~single, last - 1, last)
        fresh = won & (last <= first)
        line[rows[fresh], : len(LINE)] = LINE
        first[fresh], last[fresh] = 0, len(LINE)
        line[rows[lost], last[lost]] = stake[lost]
        last[lost] += 1
        head[rows], tail[rows] = first, last
        b = bankroll[rows]
        playing[rows] = (b < GOAL - TOLERANCE) & (b > FLOOR + TOLERANCE)
    return bankroll


def independent(n: int, seed: int) -> Dealer:
    p = full_shoe_probabilities()
    rng = np.random.default_rng(seed)

    def deal(playing: np.ndarray) -> np.ndarray:
        u = rng.random(n)
        return np.where(
            u < p["banker"], R.BANKER, np.where(u < p["banker"] + p["player"], R.PLAYER, R.TIE)
        ).astype(np.int8)

    return deal


def engine_dealer(n: int, seed: int, shuffle_every_hand: bool) -> Dealer:
    """The engine's hands at ``n`` tables (8 decks, cut card 14, burn): one shoe per table dealt to
    its cut card, or (``shuffle_every_hand``) each playing table's shoe shuffled before every hand."""
    rules = R.Rules(decks=8)
    state = engine.init(rules, n, seed)

    def deal(playing: np.ndarray) -> np.ndarray:
        if shuffle_every_hand:
            engine.shuffle(rules, state, np.flatnonzero(playing))
        return engine.deal(rules, state, active=playing)[1].winner

    return deal


def dealt(way: str, sessions: int, seed: int, batch: int = 100_000) -> dict:
    """P(goal) over ``sessions`` sessions dealt ``way`` (batches of ``batch``, batch ``k`` seeded
    ``seed * 1000 + k``)."""
    if way not in WAYS:
        raise ValueError(f"way={way!r} is not allowed; allowed: {', '.join(WAYS)}")
    goals = done = 0
    while done < sessions:
        n = min(batch, sessions - done)
        s = seed * 1000 + done // batch
        deal = independent(n, s) if way == "independent" else engine_dealer(n, s, way == "csm")
        goals += int((play(deal, n) >= GOAL - TOLERANCE).sum())
        done += n
    return {"way": way, "seed": seed, "sessions": done, "p_target": goals / done}


def evaluator_seeds(seeds: range, sessions: int) -> list[dict]:
    """The evaluator's P(goal) of :data:`CONFIG` at each seed (``sessions`` sessions each)."""
    from pb_gym.experiments.evaluate import run_study
    from pb_gym.experiments.evaluate.settings import StudyConfig

    rows = []
    for seed in seeds:
        config = StudyConfig.model_validate(CONFIG | {"seed": seed, "sessions": sessions})
        report = run_study(config, final_bankrolls=False)
        rows.append(
            {
                "way": "evaluator",
                "seed": seed,
                "sessions": sessions,
                "p_target": report["systems"][0]["p_target"],
            }
        )
    return rows


def exact_p_target() -> float:
    """The exact chain's P(goal) at :data:`CONFIG`."""
    from pb_gym.experiments.evaluate import exact_chain as exact_systems
    from pb_gym.experiments.evaluate.settings import StudyConfig

    config = StudyConfig.model_validate(CONFIG)
    return float(exact_systems.exact_system(config.systems[0], config)["p_target"])


def _after(bankroll: float, line: tuple[float, ...], won: bool) -> tuple[float, tuple[float, ...]]:
    stake = min(line[0] + line[-1] if len(line) > 1 else line[0], MAX_UNITS)
    if won:
        return round(bankroll + 0.95 * stake, 9), (line[1:-1] or LINE)
    return round(bankroll - stake, 9), (*line, stake)


def _ended(bankroll: float) -> float | None:
    """1 at the goal, 0 at the floor, None while playing."""
    return 1.0 if bankroll >= GOAL - TOLERANCE else 0.0 if bankroll <= FLOOR + TOLERANCE else None


def goal_values() -> tuple[dict[tuple, int], np.ndarray]:
    """P(goal | the state) of every playing (bankroll, line) state, without a hand limit (the chain's
    P(still playing after 200 hands) is below 1e-19), by value iteration over the states reachable
    from the start through banker and player wins (ties leave the state). Returns the states' ids
    (the start is 0) and their values."""
    p = full_shoe_probabilities()
    win = p["banker"] / (p["banker"] + p["player"])
    start = (START, LINE)
    ids, states, successors = {start: 0}, [start], []
    for bankroll, line in states:  # grows while it is read: a breadth-first search
        row = []
        for won in (True, False):
            state = _after(bankroll, line, won)
            end = _ended(state[0])
            if end is not None:
                row.append(-1 - int(end))  # -1: the floor, -2: the goal
                continue
            if state not in ids:
                ids[state] = len(states)
                states.append(state)
            row.append(ids[state])
        successors.append(row)
    to = np.array(successors)
    value = np.zeros(len(states))
    for _ in range(100_000):
        reached = np.where(to >= 0, value[np.maximum(to, 0)], np.where(to == -2, 1.0, 0.0))
        new = win * reached[:, 0] + (1.0 - win) * reached[:, 1]
        if np.abs(new - value).max() < 1e-16:
            return ids, new
        value = new
    raise RuntimeError("the value iteration did not converge")


def evaluator_winners(config: StudyConfig) -> tuple[ChunkPlay, np.ndarray]:
    """The evaluator's first chunk of ``config`` played hand by hand: ``(table, winners)``, the
    :class:`pb_gym.experiments.evaluate.ChunkPlay` after its last hand and each hand's winner at every table
    ``(hands, tables)``."""
    from pb_gym.experiments import evaluate
    from pb_gym.experiments.common import scale

    chunk = scale.plan(config.sessions, config.chunk_sessions, config.seed, range(1))[0]
    table = evaluate.ChunkPlay(config, chunk)
    winners = np.zeros((config.hands, table.n), dtype=np.int8)
    for hand in range(config.hands):
        table.play(hand)
        winners[hand] = table.session.hand.winner
    return table, winners


def miss_by_hand(seed: int, sessions: int = 4000) -> dict:
    """The evaluator's sessions of :data:`CONFIG` at ``seed``: its goals minus the exact expectation,
    split by hand (the change of P(goal | the state) that each hand made, summed over the sessions;
    the hands' sum is the whole miss) with each part's SD (the root sum of squares of those changes),
    and the banker share of the decisions dealt in each span of hands, at every table and at the
    tables still playing."""
    from pb_gym.experiments.evaluate.settings import StudyConfig

    config = StudyConfig.model_validate(CONFIG | {"seed": seed, "sessions": sessions})
    table, winners = evaluator_winners(config)
    ids, value = goal_values()
    change, square = np.zeros(config.hands), np.zeros(config.hands)
    playing = np.zeros(winners.shape, dtype=bool)
    goals = 0
    for t in range(table.n):
        bankroll, line = START, LINE
        before = value[0]
        for hand in range(config.hands):
            playing[hand, t] = True
            if winners[hand, t] == R.TIE:
                continue
            bankroll, line = _after(bankroll, line, winners[hand, t] == R.BANKER)
            end = _ended(bankroll)
            after = end if end is not None else value[ids[(bankroll, line)]]
            change[hand] += after - before
            square[hand] += (after - before) ** 2
            before = after
            if end is not None:
                goals += int(end)
                break
    p = full_shoe_probabilities()
    banker_share = p["banker"] / (p["banker"] + p["player"])
    spans = []
    for first, last in ((1, 1), (2, 3), (4, 6), (7, 10), (11, 20), (21, config.hands)):
        part = slice(first - 1, last)
        row = {"hands": [first, last], "miss": float(change[part].sum()), "sd": math.sqrt(square[part].sum())}
        for name, mask in (("all", np.ones_like(playing[part])), ("playing", playing[part])):
            decided = winners[part][mask & (winners[part] != R.TIE)]
            share = float((decided == R.BANKER).mean())
            se = math.sqrt(banker_share * (1 - banker_share) / decided.size)
            row[f"banker_share_{name}"] = [share, decided.size, (share - banker_share) / se]
        spans.append(row)
    evaluator_goals = int((table.seats.bankroll[0] >= 10 * GOAL - 1e-6).sum())
    if evaluator_goals != goals:
        raise AssertionError(f"the replay reached {goals} goals, the evaluator {evaluator_goals}")
    return {
        "seed": seed,
        "sessions": table.n,
        "goals": goals,
        "expected": table.n * float(value[0]),
        "p_target_values": float(value[0]),
        "states": len(ids),
        "miss": goals - table.n * float(value[0]),
        "sd": math.sqrt(square.sum()),
        "spans": spans,
    }


def _line(row: dict, exact_p: float) -> str:
    n, q = row["sessions"], row["p_target"]
    half = 1.96 * math.sqrt(q * (1 - q) / n)
    d = q - exact_p
    z = d / math.sqrt(exact_p * (1 - exact_p) / n)
    return (
        f"{row['way']:<11} seed {row['seed']:>3} {n:>9,} sessions: P(goal) {q:.5f}, "
        f"minus exact {d:+.5f} [{d - half:+.5f}, {d + half:+.5f}], z {z:+.2f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1_000_000, help="sessions per seed of each way")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 1..N of each way")
    parser.add_argument("--scan", type=int, default=300, help="evaluator seeds 1..N of 4,000 sessions")
    parser.add_argument("--split", type=int, nargs="*", default=[5, 7], help="seeds to split by hand")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    q = exact_p_target()
    print(f"exact chain: P(goal) {q:.16f}")
    for way in WAYS:
        rows = [dealt(way, args.sessions, seed) for seed in range(1, args.seeds + 1)]
        for row in rows:
            print(_line(row, q))
        pooled = {"way": way, "seed": 0, "sessions": sum(r["sessions"] for r in rows)}
        pooled["p_target"] = sum(r["p_target"] * r["sessions"] for r in rows) / pooled["sessions"]
        print(_line(pooled, q), "(pooled)")
    if args.scan:
        rows = evaluator_seeds(range(1, args.scan + 1), 4000)
        z = np.array([(r["p_target"] - q) / math.sqrt(q * (1 - q) / 4000) for r in rows])
        pooled = {"way": "evaluator", "seed": 0, "sessions": 4000 * len(rows)}
        pooled["p_target"] = float(np.mean([r["p_target"] for r in rows]))
        print(_line(pooled, q), f"(pooled over seeds 1-{args.scan})")
        worst = int(np.argmin(z))
        beyond = [int((abs(z) > k).sum()) for k in (2, 3)]
        print(
            f"evaluator z over {len(rows)} seeds: SD {z.std(ddof=1):.3f}, |z| > 2: {beyond[0]}, "
            f"|z| > 3: {beyond[1]}, lowest {z[worst]:+.2f} (seed {rows[worst]['seed']}), "
            f"highest {z.max():+.2f}; without the lowest: SD {np.delete(z, worst).std(ddof=1):.3f}"
        )
    for seed in args.split:
        split = miss_by_hand(seed)
        print(
            f"seed {seed}: {split['goals']} goals, {split['expected']:.1f} expected (value iteration over "
            f"{split['states']:,} states: P(goal) {split['p_target_values']:.16f}), "
            f"miss {split['miss']:+.1f} (SD {split['sd']:.1f})"
        )
        for row in split["spans"]:
            a, b = row["hands"]
            every, playing = row["banker_share_all"], row["banker_share_playing"]
            print(
                f"  hands {a}-{b}: {row['miss']:+6.1f} goals (SD {row['sd']:.1f}, "
                f"z {row['miss'] / row['sd']:+.2f}); banker share of the decisions at every table "
                f"{every[0]:.4f} (z {every[2]:+.2f}), at the tables still playing {playing[0]:.4f} "
                f"of {playing[1]:,} (z {playing[2]:+.2f})"
            )
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
