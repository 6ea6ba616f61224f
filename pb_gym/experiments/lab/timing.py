"""How fast the lab answers: ``python -m pb_gym.experiments.lab.timing`` prints, per lesson, the time of
a slider move's exact figures and of 1,000 simulated sessions, as the page's callbacks compute them.

Each figure is the median of a few runs on a setting not computed before (the lessons cache what they
computed, so a setting seen once comes back at once); the figures' drawing is included. The browser's
own share (sending, drawing) is measured by ``tests/experiments/lab/test_lab_browser.py``, which prints it.
Nothing is asserted here: a machine busy with other work is slower, and the numbers say by how much.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from pb_gym.experiments.lab import bold, figures, gamblers_ruin, hand, progression, shoe
from pb_gym.experiments.lab.common import DEFAULT_SEED

SESSIONS = 1000


def _clock(work: Callable[[int], object], repeats: int) -> float:
    """The median seconds of ``work(k)`` over ``repeats`` values of ``k`` (each a new setting)."""
    times = []
    for k in range(repeats):
        started = time.perf_counter()
        work(k)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(repeats: int = 5) -> dict[str, dict[str, float]]:
    """Per lesson, ``exact`` (a slider move's exact figures) and ``sessions`` (1,000 sessions dealt,
    where the lesson deals sessions) in seconds, each the median of ``repeats`` new settings."""
    seed = DEFAULT_SEED + 1000

    def ruin_exact(k: int) -> None:
        result = gamblers_ruin.ruin_exact("player", 11 + k, 40)
        figures.ruin_curve(result, 11 + k, 40, "player")

    def ruin_sessions(k: int) -> None:
        dealt = gamblers_ruin.ruin_sessions("player", 10, 20, 1, SESSIONS, seed + k)
        figures.ruin_paths(dealt["paths"], 10, 20, 1)

    def prog_exact(k: int) -> None:
        result = progression.progression_exact("martingale", 90 + 10 * k, 10, 64, 200)
        figures.result_distribution(result)

    def prog_sessions(k: int) -> None:
        progression.progression_sessions("martingale", 100, 10, 64, 200, SESSIONS, seed + k)

    def bold_exact(k: int) -> None:
        result = bold.bold_exact(10 + k, 30, 100, 2, "player")
        figures.policy_curves(result, 10 + k)
        figures.stake_map(result)

    def bold_sessions(k: int) -> None:
        bold.bold_sessions(10, 20, 100, 2, "player", SESSIONS, seed + k)

    def hand_exact(k: int) -> None:
        hand.bet_odds(1 + k % 8, hand.SIDE_BETS[k % len(hand.SIDE_BETS)])

    def roads_exact(k: int) -> None:
        dealt = shoe.deal_shoe(8, seed + k)
        odds = shoe.next_hand_odds(dealt["composition"])
        figures.scoreboard(shoe.road_reading(dealt, 40)["roads"])
        figures.shoe_series(odds["banker"], 40, 0.4586, "P(banker)", "P")

    def count_exact(k: int) -> None:
        dealt = shoe.deal_shoe(8, seed + 100 + k)
        figures.shoe_series(shoe.side_bet_ev(dealt, "dragon7"), 40, -0.0761, "EV", "EV", zero=True)

    return {
        "one hand": {"exact": _clock(hand_exact, repeats)},
        "gambler's ruin": {"exact": _clock(ruin_exact, repeats), "sessions": _clock(ruin_sessions, repeats)},
        "Martingale illusion": {
            "exact": _clock(prog_exact, repeats),
            "sessions": _clock(prog_sessions, repeats),
        },
        "bold play": {"exact": _clock(bold_exact, repeats), "sessions": _clock(bold_sessions, repeats)},
        "roads": {"exact": _clock(roads_exact, repeats)},
        "counting": {"exact": _clock(count_exact, repeats)},
    }


def main() -> None:
    """Print :func:`measure`'s figures (after one warm-up run that loads the compiled kernels)."""
    measure(repeats=1)
    print(f"{'lesson':<22}{'exact figures':>15}{f'{SESSIONS:,} sessions':>17}")
    for lesson, times in measure().items():
        sessions = f"{times['sessions']:.3f} s" if "sessions" in times else "-"
        print(f"{lesson:<22}{times['exact']:>13.3f} s{sessions:>17}")


if __name__ == "__main__":
    main()
