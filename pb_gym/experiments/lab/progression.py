"""Lesson 3, the Martingale illusion: a progression aiming at a small win under a table maximum.

A session starts with ``bankroll`` units, plays one of pb-gym's progressions on the player bet
(even money: every amount stays on whole units, so the exact chain is finite) and stops at ``+goal``
units, at ruin, or after ``hands`` hands. It is a ``pb-gym evaluate`` study of one system
(:func:`study`), valued two ways by that command's own code:

* exactly, by its ``exact: true`` chain (:func:`pb_gym.experiments.evaluate.exact_chain.exact_system`):
  P(small win), P(ruin), P(still playing at the hand limit) and the whole distribution of the result,
  under independent hands at the full shoe's odds;
* by dealing real shoes (:func:`pb_gym.experiments.evaluate.run_study`): every session's result.

The lesson's point is the pair :func:`progression_exact` returns: a high P(small win) bought with a
rare loss many times larger, and an expected result below zero whatever the progression.
"""

from __future__ import annotations

import functools

import numpy as np

from pb_gym import rules as R
from pb_gym.experiments.lab.common import MAX_SESSIONS, check_choice, check_int, running_share

PROGRESSIONS = {
    "flat": "Flat (one unit every hand)",
    "martingale": "Martingale (double after a loss)",
    "grand_martingale": "Grand Martingale (double plus one)",
    "paroli": "Paroli (double after a win, three times)",
    "dalembert": "D'Alembert (one more after a loss)",
    "fibonacci": "Fibonacci",
    "labouchere": "Labouchere (cancellation)",
    "oscars_grind": "Oscar's Grind",
    "one_three_two_six": "1-3-2-6",
}
"""The progressions offered (pb-gym's system ``type``) and their names on the page."""
BET = "player"
"""The bet every progression plays (even money)."""
TABLE_MAXIMUMS = (8, 16, 32, 64, 128, 256, 512)
"""The table maximums offered, in units."""
MAX_BANKROLL = 500
MAX_GOAL = 50
MAX_HANDS = 500


def check_progression(system: str, bankroll: int, goal: int, table_max: int, hands: int) -> None:
    """Raise a ValueError naming the field unless the session is one the lesson offers."""
    check_choice("system", system, tuple(PROGRESSIONS))
    check_int("bankroll", bankroll, 2, MAX_BANKROLL)
    check_int("goal", goal, 1, MAX_GOAL)
    check_choice("table_max", table_max, TABLE_MAXIMUMS)
    check_int("hands", hands, 10, MAX_HANDS)


def study(
    system: str, bankroll: int, goal: int, table_max: int, hands: int, sessions: int = 1000, seed: int = 1
):
    """The session as a validated ``pb-gym evaluate`` study config
    (:class:`pb_gym.experiments.evaluate.StudyConfig`): one unit is one table unit, the minimum stake
    one unit, the system on :data:`BET`.

    Args:
        system: one of :data:`PROGRESSIONS`.
        bankroll: starting bankroll in units, 2 to 500.
        goal: stop as soon as this many units up, 1 to 50.
        table_max: the table maximum in units, one of :data:`TABLE_MAXIMUMS`.
        hands: the most hands of a session, 10 to 500.
        sessions: sessions to deal, 1 to 1,000.
        seed: the deal's seed, an integer >= 0.
    """
    from pb_gym.experiments.common.yaml_config import validate
    from pb_gym.experiments.evaluate import StudyConfig

    check_progression(system, bankroll, goal, table_max, hands)
    check_int("sessions", sessions, 1, MAX_SESSIONS)
    check_int("seed", seed, 0, None)
    return validate(
        {
            "name": f"lab-{system}",
            "table": {"unit": 1, "minimum": 1, "maximum": int(table_max)},
            "bankroll": int(bankroll),
            "sessions": int(sessions),
            "hands": int(hands),
            "win_goal": int(goal),
            "seed": int(seed),
            "sample_paths": 0,
            "systems": [{"type": system, "bet": BET, "name": system}],
        },
        StudyConfig,
        "lab",
    )


def progression_exact(system: str, bankroll: int, goal: int, table_max: int, hands: int) -> dict:
    """The exact outcome of a session (independent hands at the full shoe's odds).

    Args:
        system, bankroll, goal, table_max, hands: as :func:`study` takes them.

    Returns:
        ``p_goal`` (the small win), ``p_ruin``, ``p_hand_limit``, ``p_loss`` (ending below the
        bankroll), ``mean_loss_when_lost`` and ``largest_loss`` (units), ``expected_result`` (units:
        the mean final bankroll minus the bankroll), ``expected_hands``, ``result`` (``values`` and
        ``probabilities`` of the session's result in units), ``states``; or ``reason`` alone where the
        chain is not finite.
    """
    check_progression(system, bankroll, goal, table_max, hands)
    return _progression_exact(system, int(bankroll), int(goal), int(table_max), int(hands))


@functools.lru_cache(maxsize=128)
def _progression_exact(system: str, bankroll: int, goal: int, table_max: int, hands: int) -> dict:
    from pb_gym.experiments.evaluate import exact_chain

    config = study(system, bankroll, goal, table_max, hands)
    chain = exact_chain.exact_system(config.systems[0], config)
    if "reason" in chain:
        return {"reason": chain["reason"]}
    values = np.array(chain["final_bankroll"]["values"]) - bankroll
    probabilities = np.array(chain["final_bankroll"]["probabilities"])
    lost = values < -1e-9
    p_loss = float(probabilities[lost].sum())
    return {
        "p_goal": chain["p_target"],
        "p_ruin": chain["p_ruin"],
        "p_hand_limit": chain["p_hand_limit"],
        "p_loss": p_loss,
        "mean_loss_when_lost": float(-(values[lost] * probabilities[lost]).sum() / p_loss) if p_loss else 0.0,
        "largest_loss": float(-values[lost].min()) if lost.any() else 0.0,
        "expected_result": chain["mean_final_bankroll"] - bankroll,
        "expected_hands": chain["expected_hands"],
        "result": {"values": values.tolist(), "probabilities": probabilities.tolist()},
        "states": chain["states"],
    }


def progression_sessions(
    system: str, bankroll: int, goal: int, table_max: int, hands: int, sessions: int, seed: int
) -> dict:
    """``sessions`` sessions dealt from real shoes by ``pb-gym evaluate``'s session loop.

    Args:
        system, bankroll, goal, table_max, hands, sessions, seed: as :func:`study` takes them.

    Returns:
        ``result`` (each session's final bankroll minus the bankroll, units, in deal order),
        ``reached`` (the goal was reached), ``running`` (the share of the first ``k`` sessions that
        reached it, for every ``k``) and the report's ``exact_edge`` of the bet.
    """
    config = study(system, bankroll, goal, table_max, hands, sessions, seed)
    return _progression_sessions(config.model_dump_json())


@functools.lru_cache(maxsize=32)
def _progression_sessions(config_json: str) -> dict:
    from pb_gym.experiments.evaluate import StudyConfig, run_study

    config = StudyConfig.model_validate_json(config_json)
    report = run_study(config, backend="serial")
    name = config.systems[0].name
    result = np.asarray(report["final_bankrolls"][name], dtype=np.float64) - config.bankroll
    reached = result >= float(config.win_goal or 0) - 1e-9
    for array in (result, reached):
        array.setflags(write=False)
    return {
        "result": result,
        "reached": reached,
        "running": running_share(reached),
        "exact_edge": report["systems"][0]["exact_edge"],
    }


def bet_edge(decks: int = 8) -> float:
    """The house edge of :data:`BET` (per unit staked), for the page's reminder."""
    from pb_gym import exact

    return -float(exact.expected_values(R.full_shoe(decks))[R.BETS.index(BET)])


__all__ = [
    "PROGRESSIONS",
    "BET",
    "TABLE_MAXIMUMS",
    "check_progression",
    "study",
    "progression_exact",
    "progression_sessions",
    "bet_edge",
]
