"""The benchmark's tasks: Gymnasium ids with frozen settings and a known optimum.

Each task is a :class:`PuntoBancoEnv` (``gymnasium.make``) or :class:`PuntoBancoVectorEnv`
(``gymnasium.make_vec``) with every setting fixed here, so that a score on ``pb_gym/Discover-v0`` means
the same thing in any paper and any library. A task's settings never change: a changed task is a new
version (``-v1``). :mod:`pb_gym.benchmark` scores any policy on them against the perfect-information
bettor (the exact EV of the unseen cards, bet where positive: Bayes-optimal for one-hand decisions).

Common to every task (the settings of ``configs/train/discover*.yaml``): 8 decks, the cut card 14 cards
from the end, the burn card, one-unit stakes of a 10 unit (table 10-5000) from a bankroll of 10,000 (1000
units: ruin plays no part), an episode is one whole shoe (no hand limit: it ends when the cut card
comes out), the bead plate holds the last outcome only, the observation is the env's flat, scaled
``Box`` (every feature divided by its documented bound, :mod:`pb_gym.envs.punto_banco`), the actions
are ``Discrete``: 0 = no bet, then each offered bet (:func:`action_meanings`), and the training reward
is the exact expected value of the stake for the cards not yet seen (``reward="expected"``: no outcome
noise; the benchmark scores on realized and exact profit whatever the reward).

========================  =========================================================  =======  ========
id                        offered bets (actions 1..)                                 actions  reward
========================  =========================================================  =======  ========
Discover-v0               banker, player, tie, Dragon 7 (40:1), Panda 8 (25:1)          6     expected
DiscoverCatalog-v0        banker, player, tie, 3 Giving 8, Egalite 7, Egalite 0         7     expected
                          (the atlas's best counting targets, docs/atlas/)
DiscoverAll-v0            the seven spots and every published side bet of the          59     expected
                          catalog settled by rank (58 bets, :data:`ALL_SIDE_BETS`)
Sizing-v0                 as Discover-v0, each bet at 0.1, 0.2, 0.4, 0.8 or 1.6% of    26     log growth
                          the bankroll (``stake_unit="fraction"``)
DiscoverHidden-v0         banker, player, tie, player pair, banker pair, Dragon 7,      8     expected
                          Panda 8; discards hidden, the last 20 outcomes shown
                          (control: no edge can be seen)
DiscoverMainBets-v0       banker, player, tie (control: no practical edge exists)       4     expected
DiscoverEdgeSort-v0       banker, player, tie; the first card's sorted class (high      4     expected
                          6-9 or low) shown before each hand (``leaks``: edge sorting)
========================  =========================================================  =======  ========

Session tasks (:data:`SESSION_TASKS`, :class:`SessionTask`): reach a goal from a bankroll within a
hand limit, the problem :mod:`pb_gym.session_optimum` solves exactly (Dubins & Savage at a baccarat
table). Each is a :class:`~pb_gym.envs.session_env.SessionEnv` (``gymnasium.make``) or
:class:`~pb_gym.envs.session_vector.SessionVectorEnv` (``gymnasium.make_vec``); the exact optimum is
that of the solver, because every hand is dealt from the full shoe by a continuous shuffler that takes
the cards back at once (independent hands) and every amount is exact (``session_env``'s module
docstring). Common to the three: 8 decks, the table minimum 1 unit, the bets banker (19:20), player
and tie (8:1); an illegal action (a stake above the bankroll, masked in ``info["action_mask"]`` and
``action_masks()``) is played as no bet and counted in ``info["illegal_actions"]``;
:func:`pb_gym.benchmark.score` scores a policy by its P(goal) against the exact optimum.

``pb_gym/Session-v0``: reach 60 units from 20 within 30 hands, stakes 1 to 5 units.

=================  =========================================================================================
Action Space       ``Discrete(16)``: 0 no bet; ``1 + 5 b + (s - 1)`` stakes ``s`` = 1..5 units on bet ``b``
                   (0 banker, 1 player, 2 tie)
Observation Space  ``Box(0, 1, (2,), float32)``: ``[min(bankroll, 60) / 60, hands left / 30]``
Reward             1 on the hand that reaches 60 units, else 0
Episode end        terminated at 60 (won), below 1 unit (ruin) or after 30 hands; never truncated
P(goal) optimum    0.282916417064592 (:func:`pb_gym.session_optimum.solve`; it opens with 5 on the tie)
P(goal) bold       0.111587908386914 on player (0.394 of the optimum), 0.097165805080941 on banker
P(goal) timid      0 at 1 unit a hand on player or banker (30 hands cannot win 40 units)
=================  =========================================================================================

``pb_gym/SessionDouble-v0``: double 50 units within 20 hands, stakes 1 to 10 units.

=================  =========================================================================================
Action Space       ``Discrete(31)``: 0 no bet; ``1 + 10 b + (s - 1)`` stakes ``s`` = 1..10 units on bet ``b``
Observation Space  ``Box(0, 1, (2,), float32)``: ``[min(bankroll, 100) / 100, hands left / 20]``
Reward             1 on the hand that reaches 100 units, else 0
Episode end        terminated at 100 (won), below 1 unit (ruin) or after 20 hands; never truncated
P(goal) optimum    0.443445351949888 (it opens with 10 on player)
P(goal) bold       0.228380922555073 on player (0.515 of the optimum), 0.198833473736703 on banker
P(goal) timid      0 at 1 unit a hand on player or banker (20 hands cannot win 50 units)
=================  =========================================================================================

``pb_gym/SessionBold-v0``: double 10 units within 100 hands, stakes 1 to 10 units (the canonical case:
one stake can reach the goal, and bold play on player is optimal, after Dubins & Savage).

=================  =========================================================================================
Action Space       ``Discrete(31)``: 0 no bet; ``1 + 10 b + (s - 1)`` stakes ``s`` = 1..10 units on bet ``b``
Observation Space  ``Box(0, 1, (2,), float32)``: ``[min(bankroll, 20) / 20, hands left / 100]``
Reward             1 on the hand that reaches 20 units, else 0
Episode end        terminated at 20 (won), below 1 unit (ruin) or after 100 hands; never truncated
P(goal) optimum    0.493175170055446 = bold play on player (10 units until a decision)
P(goal) bold       0.493175170055446 on player (1 of the optimum), 0.482671055152989 on banker
P(goal) timid      0.254244840312079 at 1 unit a hand on player, 0.227205804820933 on banker
=================  =========================================================================================

Importing this module registers the ids and needs only Gymnasium (the env classes load on first use).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeGuard

import gymnasium

NAMESPACE = "pb_gym"

ALL_SIDE_BETS: tuple[str, ...] = (
    "player_pair",
    "banker_pair",
    "dragon7",
    "panda8",
    "dragon_bonus_player",
    "dragon_bonus_banker",
    "egalite_0",
    "egalite_1",
    "egalite_2",
    "egalite_3",
    "egalite_4",
    "egalite_5",
    "egalite_6",
    "egalite_7",
    "egalite_8",
    "egalite_9",
    "four_cards",
    "five_cards",
    "six_cards",
    "small",
    "big",
    "lucky6",
    "tiger",
    "small_tiger",
    "big_tiger",
    "tiger_tie",
    "super6",
    "either_pair",
    "player_total_0",
    "player_total_1",
    "player_total_2",
    "player_total_3",
    "player_total_4",
    "player_total_5",
    "player_total_6",
    "player_total_7",
    "player_total_8",
    "player_total_9",
    "banker_total_0",
    "banker_total_1",
    "banker_total_2",
    "banker_total_3",
    "banker_total_4",
    "banker_total_5",
    "banker_total_6",
    "banker_total_7",
    "banker_total_8",
    "banker_total_9",
    "three_giving_eight",
    "eights_and_nines",
    "nine_over_seven",
    "bad_beat",
    "any_bad_beat",
    "player_three_card_win",
    "banker_three_card_win",
)
"""The side bets of ``DiscoverAll-v0``: the catalog's (:func:`pb_gym.catalog.bet_names`, the main bets
left out) when the task was frozen, written out so that a bet added to the catalog later does not
change the task (a test checks that they are still the catalog's)."""

MAIN_BETS: tuple[str, ...] = ("banker", "player", "tie")

SCORE_TABLES = 256
SCORE_HANDS = 1600
SCORE_SEED = 2_000_003
"""The benchmark's held-out deal (:func:`pb_gym.benchmark.score`, ``pb-gym score``): 256 tables seeded
``2000003 + i``, 1600 hands each (409,600 hands, about 5,200 shoes); no training config uses these
seeds."""

_COMMON: dict[str, Any] = dict(
    decks=8,
    cut_card=14,
    burn=True,
    bankroll=10_000.0,
    unit=10.0,
    table_min=10.0,
    table_max=5000.0,
    max_hands=None,
    one_shoe=True,
    visible_discards=True,
    history=1,
    action_mode="discrete",
    stake_levels=(1.0,),
    stake_unit="units",
    allow_no_bet=True,
    reward="expected",
    observation="flat",
    obs_scale="scaled",
)


@dataclasses.dataclass(frozen=True)
class _Registered:
    """What every task has: its Gymnasium id, one line on what it asks and its frozen settings."""

    id: str
    summary: str
    kwargs: Mapping[str, Any]

    @property
    def name(self) -> str:
        """The id without its namespace (``Discover-v0``, ``Session-v0``)."""
        return self.id.split("/", 1)[1]


@dataclasses.dataclass(frozen=True)
class Task(_Registered):
    """A benchmark task: its Gymnasium id, its frozen env settings and what it scores.

    Attributes:
        id: the Gymnasium id (``pb_gym/...-v0``).
        summary: one line on what the task asks.
        kwargs: every environment keyword argument (:func:`pb_gym.envs.config.make_config`).
        bets: the bets the perfect-information bettor plays (every offered bet).
        objective: ``"profit"`` (one-unit stakes: exact profit per hand) or ``"log_growth"`` (stake
            sizing: exact expected log growth of the bankroll per hand, Kelly's objective).
        edge: whether a positive-EV bet exists and can be seen (False for the controls: the optimum
            the agent can reach is never betting).
    """

    bets: tuple[str, ...]
    objective: str = "profit"
    edge: bool = True


def _task(
    name: str,
    summary: str,
    side_bets: tuple[str, ...],
    objective: str = "profit",
    edge: bool = True,
    **changes: Any,
) -> Task:
    kwargs = dict(_COMMON, side_bets=side_bets, **changes)
    return Task(
        id=f"{NAMESPACE}/{name}",
        summary=summary,
        kwargs=kwargs,
        bets=MAIN_BETS + side_bets,
        objective=objective,
        edge=edge,
    )


TASKS: dict[str, Task] = {
    task.id: task
    for task in (
        _task(
            "Discover-v0",
            "find the Dragon 7 and Panda 8 edges the visible discards create, and bet nothing elsewhere",
            ("dragon7", "panda8"),
        ),
        _task(
            "DiscoverCatalog-v0",
            "the same on the catalog's best counting targets: 3 Giving 8, Egalite 7, Egalite 0",
            ("three_giving_eight", "egalite_7", "egalite_0"),
        ),
        _task("DiscoverAll-v0", "the same with every bet of the catalog offered (58)", ALL_SIDE_BETS),
        _task(
            "Sizing-v0",
            "size the Dragon 7 and Panda 8 bets for growth: five stake levels as fractions "
            "of the bankroll, rewarded by the exact expected log growth",
            ("dragon7", "panda8"),
            objective="log_growth",
            stake_levels=(0.001, 0.002, 0.004, 0.008, 0.016),
            stake_unit="fraction",
            reward="log_growth",
        ),
        _task(
            "DiscoverHidden-v0",
            "control: the discards are hidden (the last 20 outcomes shown), so no "
            "edge can be seen; the best policy never bets",
            ("player_pair", "banker_pair", "dragon7", "panda8"),
            edge=False,
            visible_discards=False,
            history=20,
        ),
        _task(
            "DiscoverMainBets-v0",
            "control: main bets only; banker and player turn positive on about "
            "0.1% of hands by about +0.3%, so the optimum is barely above never betting",
            (),
            edge=False,
        ),
        _task(
            "DiscoverEdgeSort-v0",
            "find an edge sorter's edge: banker, player and tie, the first card's sorted class "
            "(high 6-9 or low) shown before each hand",
            (),
            leaks=("first_card_class",),
        ),
    )
}
"""Every benchmark task by its Gymnasium id."""


def get_task(task: str | Task | SessionTask) -> Task:
    """The :class:`Task` called ``task`` (its id, or the id without ``pb_gym/``); a session task is
    refused (:func:`get_session_task`)."""
    if isinstance(task, Task):
        return task
    if is_session_task(task):
        name = task.id if isinstance(task, SessionTask) else task
        raise ValueError(
            f"task={name!r} is a session task (pb_gym.envs.tasks.get_session_task; "
            f"pb_gym.benchmark.score scores it); allowed here: {', '.join(TASKS)}"
        )
    key = _key(task)
    if key not in TASKS:
        raise ValueError(f"task={task!r} is not allowed; allowed: {', '.join(TASKS)}")
    return TASKS[key]


@dataclasses.dataclass(frozen=True)
class SessionTask(_Registered):
    """A session task: its Gymnasium id, its frozen settings and its exact figures.

    Attributes:
        id: the Gymnasium id (``pb_gym/Session...-v0``).
        summary: one line on what the task asks.
        kwargs: every keyword argument of :class:`~pb_gym.envs.session_env.SessionEnv` (bankroll,
            goal, hands, table_min, table_max, bets, decks; amounts in units).
        optimum: the optimal policy's P(goal), :func:`pb_gym.session_optimum.solve` (tested).
        bold: bold play's P(goal) on player (:func:`pb_gym.session_optimum.bold_play`).
        timid: timid play's P(goal), 1 unit a hand on player (:func:`pb_gym.session_optimum.timid_play`).
    """

    optimum: float
    bold: float
    timid: float


def _session(name: str, summary: str, figures: tuple[float, float, float], **kwargs: Any) -> SessionTask:
    kwargs = dict(kwargs, table_min=1, bets=MAIN_BETS, decks=8)
    return SessionTask(f"{NAMESPACE}/{name}", summary, kwargs, *figures)


SESSION_TASKS: dict[str, SessionTask] = {
    task.id: task
    for task in (
        _session(
            "Session-v0",
            "reach 60 units from 20 within 30 hands, stakes 1 to 5 units",
            (0.282916417064592, 0.111587908386914, 0.0),
            bankroll=20,
            goal=60,
            hands=30,
            table_max=5,
        ),
        _session(
            "SessionDouble-v0",
            "double 50 units within 20 hands, stakes 1 to 10 units",
            (0.443445351949888, 0.228380922555073, 0.0),
            bankroll=50,
            goal=100,
            hands=20,
            table_max=10,
        ),
        _session(
            "SessionBold-v0",
            "double 10 units within 100 hands, stakes 1 to 10 units: bold play on player is optimal",
            (0.493175170055446, 0.493175170055446, 0.254244840312079),
            bankroll=10,
            goal=20,
            hands=100,
            table_max=10,
        ),
    )
}
"""Every session task by its Gymnasium id (the figures rounded to 15 digits)."""


def _key(task: object) -> str:
    """A task's id from its id or its name (the id without ``pb_gym/``)."""
    text = str(task)
    return text if "/" in text else f"{NAMESPACE}/{text}"


def is_session_task(task: object) -> TypeGuard[str | SessionTask]:
    """Whether ``task`` is a :class:`SessionTask` or the id of one (``"Session-v0"`` works too)."""
    return isinstance(task, SessionTask) or (isinstance(task, str) and _key(task) in SESSION_TASKS)


def get_session_task(task: str | SessionTask) -> SessionTask:
    """The :class:`SessionTask` called ``task`` (its id, or the id without ``pb_gym/``)."""
    if isinstance(task, SessionTask):
        return task
    key = _key(task) if isinstance(task, str) else None
    if key not in SESSION_TASKS:
        raise ValueError(f"task={task!r} is not allowed; allowed: {', '.join(SESSION_TASKS)}")
    return SESSION_TASKS[key]


def action_meanings(task: str | Task | SessionTask) -> tuple[str, ...]:
    """What each action of ``task`` does: ``"no_bet"`` (action 0), then ``"BET"`` (one unit on it) or,
    for several stake levels, ``"BET@LEVEL"`` (bet-major: the levels of the first bet, then the next
    bet's; a level in units, or in fractions of the bankroll for ``Sizing-v0``; a session task's
    ``"BET@STAKE"``, whole units)."""
    if is_session_task(task):
        return _session_settings(task).action_meanings()
    spec = get_task(task)
    levels = spec.kwargs["stake_levels"]
    if len(levels) == 1:
        return ("no_bet", *spec.bets)
    return ("no_bet", *(f"{bet}@{level:g}" for bet in spec.bets for level in levels))


def action_index(task: str | Task | SessionTask, bet: str, stake: float = 1) -> int:
    """The action of ``task`` that stakes ``stake`` (a stake level: units, or a fraction of the bankroll
    for ``Sizing-v0``; whole units for a session task) on ``bet``; ``bet="no_bet"`` is 0."""
    if is_session_task(task):
        return _session_settings(task).action_index(bet, 0 if bet == "no_bet" else int(stake))
    spec = get_task(task)
    if bet == "no_bet":
        return 0
    if bet not in spec.bets:
        raise ValueError(f"bet={bet!r} is not offered by {spec.id}; allowed: no_bet, {', '.join(spec.bets)}")
    levels = tuple(float(x) for x in spec.kwargs["stake_levels"])
    if float(stake) not in levels:
        raise ValueError(
            f"stake={stake!r} is not a stake level of {spec.id}; allowed: "
            f"{', '.join(f'{x:g}' for x in levels)}"
        )
    return 1 + spec.bets.index(bet) * len(levels) + levels.index(float(stake))


def _session_settings(task: str | SessionTask) -> Any:
    from pb_gym.envs.session_settings import session_settings  # (numpy: not at this module's import)

    return session_settings(**get_session_task(task).kwargs)


def register() -> None:
    """Register every task with Gymnasium (once; importing :mod:`pb_gym` does it)."""
    # an episode is one shoe (the env truncates when the cut card comes out); a session task's env ends
    # every episode itself (the hand limit is terminal): no TimeLimit for either
    for tasks, entry, vector in (
        (TASKS, "punto_banco:PuntoBancoEnv", "vector:PuntoBancoVectorEnv"),
        (SESSION_TASKS, "session_env:SessionEnv", "session_vector:SessionVectorEnv"),
    ):
        for task in tasks.values():
            if task.id not in gymnasium.registry:
                gymnasium.register(
                    id=task.id,
                    entry_point=f"pb_gym.envs.{entry}",
                    vector_entry_point=f"pb_gym.envs.{vector}",
                    max_episode_steps=None,
                    kwargs=dict(task.kwargs),
                )


register()

__all__ = [
    "ALL_SIDE_BETS",
    "SESSION_TASKS",
    "TASKS",
    "SessionTask",
    "Task",
    "action_index",
    "action_meanings",
    "get_session_task",
    "get_task",
    "is_session_task",
    "register",
]
