"""The cost of ``pb-gym evaluate`` per seat-hand (``pb-gym bench``; the studies' part of the benchmarks:
the core's :mod:`pb_gym.bench` never imports the systems).

A seat-hand is one system's stake, settlement and accounting at one table for one hand. Measured on the
systems of ``configs/systems/classic.yaml`` (its rules, table and bankroll, fewer sessions and hands), in
one run:

* the fourteen progression systems, stacked in one compiled kernel (:mod:`agents.staking`);
* the same systems each through its own ``propose`` and ``update`` (the per-system path every other
  system takes), for the ratio;
* the Kelly bettor alone (it prices the shoe before every hand: :mod:`pb_gym.ev_bound`,
  :mod:`pb_gym.exact`).
"""

from __future__ import annotations

import time
from typing import Any

from pb_gym import bench
from pb_gym.agents import systems as betting_systems
from pb_gym.experiments import evaluate
from pb_gym.experiments.common import scale

CLASSIC: dict[str, Any] = {
    "name": "classic",
    "rules": {"decks": 8, "banker_variant": "standard", "tie_pays": 8, "cut_card": 14},
    "table": {"unit": 10, "minimum": 10, "maximum": 5000},
    "bankroll": 1000,
    "win_goal": 500,
    "seed": 2026,
    "systems": [
        {"type": "flat", "bet": "banker"},
        {"type": "martingale", "bet": "banker"},
        {"type": "martingale", "bet": "banker", "recovering": True, "name": "martingale (recovering)"},
        {"type": "grand_martingale", "bet": "banker"},
        {"type": "reverse_martingale", "bet": "banker"},
        {"type": "paroli", "bet": "banker", "wins_to_reset": 3},
        {"type": "dalembert", "bet": "banker"},
        {"type": "fibonacci", "bet": "banker"},
        {"type": "labouchere", "bet": "banker", "line": [1, 2, 3, 4]},
        {"type": "one_three_two_six", "bet": "banker"},
        {"type": "oscars_grind", "bet": "banker"},
        {"type": "follow_winner"},
        {"type": "chop"},
        {"type": "random", "bets": ["banker", "player"]},
        {"type": "kelly", "bets": ["banker"], "fraction": 1.0},
    ],
}
"""The main job's study, ``configs/systems/classic.yaml`` (the configs are no part of the package),
but for its sessions and hands."""


def _config(sessions: int, hands: int, kelly: bool) -> dict:
    systems = [s for s in CLASSIC["systems"] if (s["type"] == "kelly") == kelly]
    return CLASSIC | {"sessions": sessions, "hands": hands, "chunk_sessions": sessions, "systems": systems}


def seat_hand_ns(sessions: int, hands: int, kelly: bool = False, stacked: bool = True) -> float:
    """Nanoseconds per seat-hand of :func:`pb_gym.experiments.evaluate.run_chunk` on the classic study's
    progression systems (or, ``kelly``, its Kelly bettor), stacked in the kernel or (``stacked=False``)
    each through its own ``propose`` and ``update``; best of three runs after a warm-up one."""
    config = evaluate.StudyConfig.model_validate(_config(sessions, hands, kelly)).model_dump(mode="json")
    chunk = scale.plan(sessions, sessions, 0)[0]
    before = betting_systems.Programmed.compiled
    if not stacked:
        betting_systems.Programmed.compiled = lambda self: False  # type: ignore[method-assign]
    try:
        evaluate.run_chunk(config, scale.plan(64, 64, 0)[0])  # warm-up: the kernels load
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            evaluate.run_chunk(config, chunk)
            best = min(best, time.perf_counter() - start)
    finally:
        betting_systems.Programmed.compiled = before  # type: ignore[method-assign]
    seats = len(config["systems"])
    return 1e9 * best / (sessions * hands * seats)


def _condition(quick: bool) -> dict:
    sessions, hands = (200, 100) if quick else (2000, 500)
    stacked = seat_hand_ns(sessions, hands)
    alone = seat_hand_ns(sessions, hands, stacked=False)
    return {
        "evaluate_sessions": sessions,
        "evaluate_hands": hands,
        "evaluate_progression_ns_per_seat_hand": stacked,
        "evaluate_progression_alone_ns_per_seat_hand": alone,
        "evaluate_alone_vs_stacked": alone / stacked,
        "evaluate_kelly_ns_per_seat_hand": seat_hand_ns(sessions, hands, kelly=True),
    }


def run(quick: bool = False, load: bool = False) -> dict:
    """The figures idle and, with ``load``, beside one busy process per core (under ``"busy"``)."""
    return bench.with_busy(_condition(quick), lambda: _condition(quick), load)


def print_figures(figures: dict) -> None:
    """The figures of :func:`run`, idle and (if measured) busy side by side."""
    conditions = [("idle", figures)] + ([("busy", figures["busy"])] if "busy" in figures else [])
    print(
        f"evaluate, classic.yaml's systems, {figures['evaluate_sessions']:,} sessions x "
        f"{figures['evaluate_hands']} hands"
    )
    print(f"{'':<52}" + "".join(f"{name:>16}" for name, _ in conditions))
    for key, label, fmt in (
        (
            "evaluate_progression_ns_per_seat_hand",
            "  14 progressions, one kernel (ns/seat-hand)",
            "{:>16,.1f}",
        ),
        ("evaluate_progression_alone_ns_per_seat_hand", "  each through propose/update (ns)", "{:>16,.1f}"),
        ("evaluate_alone_vs_stacked", "  propose/update / one kernel", "{:>15.2f}x"),
        ("evaluate_kelly_ns_per_seat_hand", "  Kelly (ns/seat-hand)", "{:>16,.1f}"),
    ):
        print(f"{label:<52}" + "".join(fmt.format(f[key]) for _, f in conditions))
