"""Score any policy on a session task against its exact optimum: P(goal) simulated and, where the
policy is a function of the state, exact.

A session task (:data:`pb_gym.envs.tasks.SESSION_TASKS`: ``pb_gym/Session-v0``, ...) asks to reach a goal
from a bankroll within a hand limit. Its optimum is exact: :func:`pb_gym.session_optimum.solve` of the
task's session, whose dealing, stakes, goal and ruin are the env's (``pb_gym/envs/session_env.py``;
tested by simulation). :func:`score` plays ``sessions`` sessions, session ``i`` seeded ``seed + i``
(:class:`~pb_gym.envs.session_vector.SessionVectorEnv`, ``tables`` at a time), and reports::

    from pb_gym import benchmark
    result = benchmark.score(policy, "pb_gym/Session-v0")        # 100,000 held-out sessions
    result["p_goal"]             # {"estimate", "ci95", "se", "n"}: won sessions, 95% CI over sessions
    result["normalized_score"]   # P(goal) / the optimum's: 0 = never bet (never wins), 1 = optimal
    result["exact"]              # the exact figures, for a policy of the state (else None)

The policy is one of:

* a function of the observation: a callable from observations ``(N, 2)`` float32 to actions ``(N,)``
  (an SB3 model: ``lambda obs: model.predict(obs, deterministic=True)[0]``; a tuple's first item is
  taken). It is simulated; with ``exact=True`` it is also called once on the observation of every state
  and valued exactly, which is right for a deterministic policy of the observation alone (no memory, no
  sampling): the observation is a function of the state (bankroll, hands left), so such a policy is one;
* a :class:`pb_gym.session_optimum.PolicyTable` (:func:`pb_gym.session_optimum.solve`'s policy,
  :func:`~pb_gym.session_optimum.bold_play`, ...) for the task's session (:func:`problem`);
* a :class:`StatePolicy`: a function of (bankroll in units as a Fraction, hands left) returning
  ``(bet, stake in units)`` or None (no bet), the form :func:`pb_gym.session_optimum.evaluate` takes.

A policy of the state is played from the env's exact state and valued exactly as well. Every policy is
played as the env plays it: an illegal action (a stake above the bankroll) is no bet, in the
simulation and in the exact value (:func:`policy_table`).

Figures: ``p_goal`` (sessions won), ``normalized_score`` (``p_goal`` over the optimum's),
``regret`` (the optimum's minus ``p_goal``), each ``{"estimate", "ci95", "se", "n"}`` over sessions
(independent: :func:`pb_gym.ci.ratio_ci`); ``optimum_p_goal`` and ``bold_p_goal`` (exact);
``bet_rate`` and ``illegal_action_rate`` per hand played, ``hands_per_session``; and ``exact``:
``{"p_goal", "normalized_score", "regret", "illegal_states", "z"}`` (``illegal_states``: live states
where the policy's action is illegal; ``z``: the simulated P(goal) minus the exact one, in standard
errors of the simulation given the exact value, ``sqrt(p (1 - p) / sessions)``) or None.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from pb_gym import session_optimum as so
from pb_gym.benchmark import check_int, policy_actions, scaled
from pb_gym.ci import ratio_ci
from pb_gym.envs.session_settings import SessionSettings, session_settings
from pb_gym.envs.tasks import SCORE_SEED, SessionTask, get_session_task

SCORE_SESSIONS = 100_000
"""The held-out sessions :func:`score` plays by default (seeded ``SCORE_SEED + i``, as the Discover
tasks' tables: no training config uses these seeds)."""
SCORE_TABLES = 4096
"""Sessions played side by side by default (one vector env of this many tables)."""


@dataclasses.dataclass(frozen=True)
class StatePolicy:
    """A policy of the state: ``function(bankroll, hands_left)`` with the bankroll in units (an exact
    Fraction) returns ``(bet name, stake in whole units)`` or None for no bet
    (:data:`pb_gym.session_optimum.PolicyFunction`)."""

    function: Callable[[Fraction, int], tuple[str, int] | None]


Policy = Callable[[np.ndarray], Any] | so.PolicyTable | StatePolicy


def settings(task: str | SessionTask) -> SessionSettings:
    """The env settings of a session task (:class:`~pb_gym.envs.session_settings.SessionSettings`)."""
    return session_settings(**get_session_task(task).kwargs)


def problem(task: str | SessionTask) -> so.Session:
    """The task's session for :mod:`pb_gym.session_optimum` (``solve(problem(task))``)."""
    return so.Session(**settings(task).problem())


@functools.lru_cache(maxsize=8)
def _solution(task_id: str) -> so.Solution:
    return so.solve(problem(task_id))


def solution(task: str | SessionTask) -> so.Solution:
    """The exact optimum of a session task (:func:`pb_gym.session_optimum.solve`; kept once solved)."""
    return _solution(get_session_task(task).id)


# --------------------------------------------------------------------------------------------------
# Policies as tables of the env's actions
# --------------------------------------------------------------------------------------------------
def _from_table(s: SessionSettings, table: so.PolicyTable) -> np.ndarray:
    shape = (s.hands + 1, s.goal_ticks + 1)
    bet, stake = (np.asarray(getattr(table, name)) for name in ("bet", "stake"))
    if (
        bet.shape != shape
        or stake.shape != shape
        or bet.dtype.kind not in "iu"
        or stake.dtype.kind not in "iu"
    ):
        raise ValueError(f"policy: a PolicyTable's bet and stake must be integers of shape {shape}")
    live = np.zeros(shape, dtype=np.bool_)
    live[1:, s.min_ticks : s.goal_ticks] = True
    placed = live & (bet != so.NO_BET)
    for bad, why in (
        (placed & ((bet < 0) | (bet >= len(s.bets))), f"the bet must be -1 or 0..{len(s.bets) - 1}"),
        (
            placed & ((stake < s.table_min) | (stake > s.table_max)),
            f"the stake must be whole units from {s.table_min} to {s.table_max}",
        ),
    ):
        if bad.any():
            h, b = (int(x) for x in np.argwhere(bad)[0])
            raise ValueError(f"policy: {_where(s, b, h)}, {why} (bet {bet[h, b]}, stake {stake[h, b]})")
    actions = 1 + bet.astype(np.int64) * len(s.stakes) + stake.astype(np.int64) - s.table_min
    return np.where(placed, actions, 0)


def _where(s: SessionSettings, b: int, h: int) -> str:
    return f"at bankroll {Fraction(b, s.ticks_per_unit)} with {h} hand(s) left"


def _from_observations(s: SessionSettings, policy: Callable[[np.ndarray], Any], chunk: int) -> np.ndarray:
    actions = np.zeros((s.hands + 1, s.goal_ticks + 1), dtype=np.int64)
    # every live state: hands left 1..hands by bankroll tick min .. goal - 1, flat
    h, b = (
        x.ravel()
        for x in np.meshgrid(np.arange(1, s.hands + 1), np.arange(s.min_ticks, s.goal_ticks), indexing="ij")
    )
    for start in range(0, len(h), chunk):
        part = slice(start, start + chunk)
        obs = s.observe(b[part], h[part])
        actions[h[part], b[part]] = policy_actions(policy(obs), len(obs), s.n_actions)
    return actions


def action_table(task: str | SessionTask, policy: Policy, chunk: int = SCORE_TABLES) -> np.ndarray:
    """The env action ``policy`` takes at every state, ``(hands + 1, goal ticks + 1)`` int64 indexed
    ``[hands left, bankroll tick]`` (0 at the states where nothing is played: no hands left, a bankroll
    under the table minimum, the goal). A function of the observation is called on every state's
    observation, ``chunk`` rows at a time (right for a deterministic policy of the observation alone).

    Raises:
        ValueError: an action the env does not have (a bet not offered, a stake off whole units or
            outside the table's limits), naming its state.
    """
    s = settings(task)
    if isinstance(policy, so.PolicyTable):
        return _from_table(s, policy)
    if isinstance(policy, StatePolicy):  # called at every live state, its answers checked there
        return _from_table(s, so.table_from_function(problem(task), policy.function))
    if callable(policy):
        return _from_observations(s, policy, chunk)
    raise ValueError(
        f"policy={policy!r} is not allowed; allowed: a function of observations, a "
        "session_optimum.PolicyTable or a session_benchmark.StatePolicy"
    )


def policy_table(task: str | SessionTask, actions: np.ndarray) -> tuple[so.PolicyTable, int]:
    """The policy the env plays for a table of its actions (:func:`action_table`), as
    :func:`pb_gym.session_optimum.evaluate` reads it: an illegal action (a stake above the bankroll) is
    no bet. Returns the table and the number of live states where the action is illegal."""
    s = settings(task)
    ticks = np.arange(s.goal_ticks + 1)[None, :]
    illegal = s.stake_ticks[actions] > ticks
    played = np.where(illegal, 0, actions)
    k = len(s.stakes)
    bet = np.where(played > 0, (played - 1) // k, so.NO_BET).astype(np.int64)
    stake = np.where(played > 0, s.table_min + (played - 1) % k, 0).astype(np.int64)
    return so.PolicyTable(bet=bet, stake=stake), int(illegal[1:, s.min_ticks : s.goal_ticks].sum())


def optimal_policy(task: str | SessionTask) -> Callable[[np.ndarray], np.ndarray]:
    """The exact optimum as a policy of the task's observations (the reference a learned policy is
    measured against): the state read back from the observation (exact: the bankroll tick is
    ``round(obs[0] x goal ticks)``, the hands left ``round(obs[1] x hands)``), then the solver's action."""
    s = settings(task)
    actions = action_table(task, solution(task).policy)

    def act(obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float64).reshape(-1, 2)
        b = np.rint(obs[:, 0] * s.goal_ticks).astype(np.int64)
        h = np.rint(obs[:, 1] * s.hands).astype(np.int64)
        return actions[np.clip(h, 0, s.hands), np.clip(b, 0, s.goal_ticks)]

    return act


# --------------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------------
def _play(
    s: SessionSettings,
    policy: Policy,
    table: np.ndarray | None,
    sessions: int,
    seed: int,
    tables: int,
    reset: Callable[[], None] | None,
) -> dict[str, np.ndarray]:
    """Play ``sessions`` sessions (``tables`` at a time); per session: won, hands, bets, illegal."""
    from pb_gym.envs.session_vector import SessionVectorEnv

    n = min(tables, sessions)
    env = SessionVectorEnv(n, autoreset_mode=AutoresetMode.DISABLED, **s.problem())
    out = {key: np.zeros(sessions) for key in ("won", "hands", "bets", "illegal")}
    for start in range(0, sessions, n):
        obs, _ = env.reset(seed=seed + start)
        if reset is not None:
            reset()
        live = np.ones(n, dtype=np.bool_)
        won, hands, bets, illegal = (np.zeros(n) for _ in range(4))
        while live.any():
            if table is not None:
                b = np.minimum(env.bankroll_ticks, s.goal_ticks)
                actions = np.where(live, table[env.hands_left, b], 0)
            else:
                actions = np.zeros(n, dtype=np.int64)
                rows = np.flatnonzero(live)
                actions[rows] = policy_actions(policy(obs[rows]), len(rows), s.n_actions)  # type: ignore[operator]
            obs, reward, terminated, _, info = env.step(actions)
            hands += live
            illegal += info["illegal_action"]
            bets += live & (actions > 0) & ~info["illegal_action"]
            won += reward
            live &= ~terminated
        take = slice(0, min(n, sessions - start))
        for key, value in (("won", won), ("hands", hands), ("bets", bets), ("illegal", illegal)):
            out[key][start : start + n][: take.stop] = value[take]
    env.close()
    return out


def score(
    policy: Policy,
    task: str | SessionTask = "pb_gym/Session-v0",
    sessions: int = SCORE_SESSIONS,
    seed: int = SCORE_SEED,
    *,
    tables: int = SCORE_TABLES,
    exact: bool | None = None,
    reset: Callable[[], None] | None = None,
) -> dict:
    """Play ``policy`` on ``sessions`` held-out sessions of a session task; the JSON-ready figures of
    the module docstring.

    Args:
        policy: a function of observations, a :class:`~pb_gym.session_optimum.PolicyTable` or a
            :class:`StatePolicy` (module docstring).
        task: a session task id of :data:`pb_gym.envs.tasks.SESSION_TASKS` (``"Session-v0"`` works too).
        sessions: sessions played; session ``i`` is seeded ``seed + i``.
        seed: the first session's seed.
        tables: sessions played side by side.
        exact: also value the policy exactly; None: for a policy of the state only (True for a function
            of observations calls it on every state's observation: right for a deterministic policy).
        reset: called before each batch of ``tables`` sessions (a recurrent policy's state).

    Raises:
        ValueError: a bad argument (named), or a policy that returns an action the env does not have.
    """
    spec = get_session_task(task)
    sessions = check_int("sessions", sessions, 2)
    seed = check_int("seed", seed, 0)
    tables = check_int("tables", tables, 1)
    if exact not in (None, True, False):
        raise ValueError(f"exact={exact!r} is not allowed; allowed: None, True or False")
    of_state = isinstance(policy, (so.PolicyTable, StatePolicy))
    if not of_state and not callable(policy):
        raise ValueError(
            f"policy={policy!r} is not allowed; allowed: a function of observations, a "
            "session_optimum.PolicyTable or a session_benchmark.StatePolicy"
        )
    s = settings(spec)
    valued = of_state if exact is None else exact
    actions = action_table(spec, policy, tables) if of_state or valued else None
    played = _play(s, policy, actions if of_state else None, sessions, seed, tables, reset)
    optimum = solution(spec).p_goal
    ones = np.ones(sessions)
    p_goal = ratio_ci(played["won"], ones)
    out: dict[str, Any] = {
        "task": spec.id,
        "sessions": sessions,
        "seed": seed,
        "p_goal": p_goal,
        "optimum_p_goal": optimum,
        "bold_p_goal": spec.bold,
        "normalized_score": scaled(p_goal, 1.0 / optimum),
        "regret": scaled(p_goal, -1.0, optimum),
        "bet_rate": ratio_ci(played["bets"], played["hands"]),
        "illegal_action_rate": ratio_ci(played["illegal"], played["hands"]),
        "hands_per_session": ratio_ci(played["hands"], ones),
        "exact": None,
    }
    if valued and actions is not None:
        table, illegal_states = policy_table(spec, actions)
        value = so.evaluate(problem(spec), table)
        # the simulated P(goal)'s standard error if the exact value is the truth
        se = math.sqrt(value * (1.0 - value) / sessions)
        gap = p_goal["estimate"] - value
        out["exact"] = {
            "p_goal": value,
            "normalized_score": value / optimum,
            "regret": optimum - value,
            "illegal_states": illegal_states,
            "z": gap / se if se > 0 else (0.0 if gap == 0 else math.copysign(math.inf, gap)),
        }
    return out


def report(result: dict) -> str:
    """A :func:`score` result as text."""

    def fmt(entry: dict, digits: int = 4) -> str:
        lo, hi = entry["ci95"]
        return f"{entry['estimate']:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"

    lines = [
        f"{result['task']}: {result['sessions']:,} held-out sessions (seed {result['seed']}); "
        "95% CIs over sessions",
        f"P(goal):           {fmt(result['p_goal'])}   optimum {result['optimum_p_goal']:.6f} (exact)   "
        f"bold play {result['bold_p_goal']:.6f}",
        f"normalized score:  {fmt(result['normalized_score'])}   (0 = never bet, 1 = optimal)",
        f"regret:            {fmt(result['regret'])}",
        f"bet rate {result['bet_rate']['estimate']:.4f}, illegal actions "
        f"{result['illegal_action_rate']['estimate']:.4f} per hand; "
        f"{result['hands_per_session']['estimate']:.2f} hands per session",
    ]
    exact = result.get("exact")
    if exact is not None:
        lines.append(
            f"exact:             P(goal) {exact['p_goal']:.6f}, normalized {exact['normalized_score']:.6f}, "
            f"regret {exact['regret']:.6f}; simulated - exact = {exact['z']:+.2f} SE"
        )
    return "\n".join(lines)


__all__ = [
    "SCORE_SESSIONS",
    "SCORE_TABLES",
    "StatePolicy",
    "action_table",
    "optimal_policy",
    "policy_table",
    "problem",
    "report",
    "score",
    "settings",
    "solution",
]
