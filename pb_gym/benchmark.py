"""Score any policy on a benchmark task against its known optimum.

The exact calculator gives the EV of every bet for the cards a player has not seen, so each task of
:mod:`pb_gym.envs.tasks` has a known optimum: the perfect-information bettor (one unit on the best
offered bet whenever its exact EV for the unseen cards is positive, nothing otherwise) is Bayes-optimal
for one-hand decisions at a flat stake. :func:`score` plays a policy on held-out hands that the
benchmark fixes (``tables`` tables seeded ``seed, seed + 1, ...``, ``hands`` hands each; an episode is
one shoe, a new shoe starts where one ends) and scores, on the SAME hands, the perfect bettor::

    from pb_gym import benchmark
    result = benchmark.score(policy, "pb_gym/Discover-v0", tables=256, hands=1600, seed=2000003)
    result["normalized_score"]["estimate"]   # 0 = never bet, 1 = the optimum

``policy`` is any callable from a batch of observations ``(N, obs_dim)`` float32 (the task's own flat
observation) to a batch of actions ``(N,)`` (ints; :func:`action_index` names them): an SB3 model
(``lambda obs: model.predict(obs, deterministic=True)[0]``), a CleanRL or TorchRL network, a count
written by hand. The core never imports torch: the policy brings its own.

Figures, per hand dealt, each ``{"estimate", "ci95", "se", "n"}`` with 95% CIs over shoes (the hands
of a shoe are correlated, shoes are independent: ratio estimators of per-shoe sums,
:func:`pb_gym.ci.ratio_ci`; paired where two systems play the same hands):

* ``exact_profit_per_hand``: the exact conditional profit, the sum over the policy's bets of stake x
  the exact EV of the bet for the cards unseen before the hand (no outcome noise: a narrow CI);
* ``perfect_profit_per_hand``: the perfect bettor's; ``regret_per_hand``: perfect minus the policy's
  (paired);
* ``normalized_score``: the policy's exact profit over the perfect bettor's (0 never betting, 1 the
  optimum; a ratio of paired per-shoe sums);
* ``realized_profit_per_hand`` (and ``perfect_realized_profit_per_hand``): the dealt outcomes;
* ``bet_rate``: the share of hands the policy bets on;
* ``below_minimum_rate``: the share of hands on which the policy chose a bet whose stake came out
  below the table minimum, so that the table took no bet (a stake level in fractions of a bankroll
  that has shrunk: Sizing-v0's 0.1% once the bankroll is below its starting 1,000 units);
* ``regret_per_1000_hands``: ``regret_per_hand`` per 1,000 hands, and
  ``never_bet_regret_per_1000_hands``, never betting's (the perfect bettor's profit);
* ``headline``: the name of the figure a result is read by (:func:`headline`): ``normalized_score``,
  for the controls (``edge=False``) ``regret_per_1000_hands``, for ``Sizing-v0``
  ``normalized_log_growth``.

A session task (:data:`pb_gym.envs.tasks.SESSION_TASKS`: reach a goal within a hand limit) is scored
by :func:`pb_gym.session_benchmark.score`: its P(goal) over held-out sessions against the exact optimum
of :mod:`pb_gym.session_optimum` (``normalized_score``: 0 never betting, 1 the optimum), exact as well
for a policy of the state; :func:`score`, :func:`report` and :func:`perfect_policy` pass such a task
on to it.

For ``objective="log_growth"`` tasks (``Sizing-v0``) the same for the exact expected log growth of the
bankroll (Kelly's objective): ``log_growth_per_hand`` (the policy's), ``perfect_log_growth_per_hand``
(the best action of the task's own for each hand, at the policy's bankroll: the one-hand optimum over
the stake levels the table takes there), ``kelly_log_growth_per_hand`` (the Kelly bettor: the best bet
at its continuous Kelly fraction, an upper bound no stake level reaches), and ``normalized_log_growth``
(policy over the best action's: the headline). The perfect bettor of the profit figures stakes the
smallest level of the task's starting bankroll (one unit, as in Discover-v0) whatever the policy's
bankroll, so its profit is the same for every policy; ``normalized_score`` is then the exact profit
over the one-unit bettor's, above 1 for a policy that stakes more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from pb_gym import engine
from pb_gym.ci import ratio_ci
from pb_gym.envs.tasks import SCORE_HANDS as DEFAULT_HANDS
from pb_gym.envs.tasks import SCORE_SEED as DEFAULT_SEED
from pb_gym.envs.tasks import SCORE_TABLES as DEFAULT_TABLES
from pb_gym.envs.tasks import (
    SESSION_TASKS,
    TASKS,
    SessionTask,
    Task,
    action_index,
    action_meanings,
    get_task,
    is_session_task,
)
from pb_gym.kelly import kelly_growth

Policy = Callable[[np.ndarray], Any]


def check_int(name: str, value: object, low: int) -> int:
    """``value`` as an int, or a ValueError naming ``name`` unless it is an integer >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name}={value!r} is not allowed; allowed: an integer >= {low}")
    return int(value)


def headline(task: str | Task) -> str:
    """The figure a :func:`score` result of ``task`` is read by (``result["headline"]``):
    ``normalized_log_growth`` for a stake-sizing task (its objective; its ``normalized_score`` is the
    exact profit over the one-unit perfect bettor's, which a bigger stake exceeds),
    ``regret_per_1000_hands`` for a control (``edge=False``: the optimum is about 0, or out of the
    observation's reach, so a share of it says nothing), else ``normalized_score``."""
    spec = get_task(task)
    if spec.objective == "log_growth":
        return "normalized_log_growth"
    return "normalized_score" if spec.edge else "regret_per_1000_hands"


def scaled(entry: dict, scale: float, shift: float = 0.0) -> dict:
    """``shift + scale x`` of a :func:`pb_gym.ci.ratio_ci` figure (its interval reordered when
    ``scale < 0``; a figure of no hands stays None)."""
    if entry["estimate"] is None:
        return dict(entry)
    lo, hi = sorted(shift + scale * x for x in entry["ci95"])
    return {
        "estimate": shift + scale * entry["estimate"],
        "ci95": [lo, hi],
        "se": abs(scale) * entry["se"],
        "n": entry["n"],
    }


def policy_actions(raw: Any, rows: int, n_actions: int) -> np.ndarray:
    """A policy's answer for ``rows`` observations as ``(rows,)`` int64 actions (an SB3 ``predict``'s
    tuple: its first item), or a ValueError saying what is allowed."""
    if isinstance(raw, tuple):  # an SB3 model's predict: (actions, state)
        raw = raw[0]
    allowed = f"one integer action 0 .. {n_actions - 1} per observation row (benchmark.action_meanings)"
    try:
        actions = np.asarray(raw)
    except Exception:  # e.g. a torch tensor on a device: the policy must hand back numbers
        raise ValueError(f"policy returned {type(raw).__name__}; allowed: {allowed}") from None
    if actions.shape not in ((rows,), (rows, 1)):
        raise ValueError(f"policy returned actions of shape {actions.shape}; allowed: ({rows},), {allowed}")
    if actions.dtype.kind not in "iuf":
        raise ValueError(f"policy returned actions of dtype {actions.dtype}; allowed: {allowed}")
    actions = actions.reshape(rows)
    if actions.dtype.kind == "f" and not np.all(np.isfinite(actions) & (actions == np.round(actions))):
        raise ValueError(f"policy returned non-integer actions; allowed: {allowed}")
    actions = actions.astype(np.int64)
    if rows and (actions.min() < 0 or actions.max() >= n_actions):
        bad = int(actions.max() if actions.max() >= n_actions else actions.min())
        raise ValueError(f"policy returned action {bad}; allowed: {allowed}")
    return actions


class _Growth:
    """Exact expected log growth of the bankroll over a hand, for the stakes placed (the env's
    ``reward="log_growth"`` formula, :func:`pb_gym.envs.observation.log_growth_before_hand`)."""

    def __init__(self, cfg, pay: np.ndarray, spots: np.ndarray) -> None:
        from pb_gym.envs import config as env_config

        self.cfg, self.pay, self.spots = cfg, pay, spots
        self.floor = env_config.LOG_GROWTH_FLOOR * cfg.min_units
        self.levels = np.asarray(cfg.stake_levels, dtype=np.float64)

    def of(self, probabilities: np.ndarray, stakes: np.ndarray, before: np.ndarray) -> np.ndarray:
        from pb_gym import exact

        net = exact.row_products(stakes, self.pay.T)
        growth = np.log(np.maximum(before[:, None] + net, self.floor) / before[:, None])
        return (probabilities * growth).sum(axis=1)

    def best_action(self, probabilities: np.ndarray, before: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The action of the task (bet and stake level) with the largest exact expected log growth on
        each hand, and that growth; 0 (no bet, growth 0) where no action grows the bankroll. Ties go
        to the first action."""
        from pb_gym.envs import actions as env_actions

        cfg = self.cfg
        best_growth = np.zeros(len(before))
        best_action = np.zeros(len(before), dtype=np.int64)
        trial = np.zeros((len(before), cfg.n_columns))
        for action in range(1, cfg.n_actions):
            env_actions.decode_actions(cfg, np.full(len(before), action), before, trial)
            g = self.of(probabilities, trial, before)
            better = g > best_growth
            best_growth = np.where(better, g, best_growth)
            best_action = np.where(better, action, best_action)
        return best_action, best_growth

    def kelly(self, probabilities: np.ndarray) -> np.ndarray:
        """The Kelly bettor's growth: the best scored bet at its continuous Kelly fraction."""
        best = np.zeros(len(probabilities))
        for spot in self.spots:
            column = self.pay[:, spot]
            values = np.array(sorted(set(column.tolist()) - {0.0}))
            grouped = probabilities @ (column[:, None] == values[None, :]).astype(np.float64)
            best = np.maximum(best, kelly_growth(grouped, values)[1])
        return best


class Hand(NamedTuple):
    """One hand of :meth:`Deal.play` at every table: before it, the unseen cards' composition
    ``(tables, 13)``, every column's exact EV for them ``(tables, n_columns)`` (:meth:`Deal.before`)
    and the bankrolls; the actions played, the stakes they placed (an array the next hand overwrites),
    the realized rewards, every column's net win per unit ``(tables, n_columns)``, the tables whose
    episode ended, and what ``act`` gave besides the actions."""

    composition: np.ndarray
    ev: np.ndarray
    bankroll: np.ndarray
    actions: np.ndarray
    stakes: np.ndarray
    reward: np.ndarray
    payoffs: np.ndarray
    done: np.ndarray
    extra: Any


class Deal:
    """A held-out deal at ``tables`` tables (seeded ``seed + i``) with its per-shoe sums: the one
    bookkeeping of :func:`score` and of ``pb-gym train``'s discovery scoring
    (:func:`pb_gym.experiments.benchmark.discovery.score`).

    The native vector env of ``env_kwargs`` (realized rewards, no autoreset) is dealt one hand at a
    time: :meth:`before` gives the unseen cards' composition and every column's exact EV before the
    hand, :meth:`step` plays the actions and starts a new shoe id where the hand came from a freshly
    shuffled shoe, :meth:`add` adds a weight per table to the current shoe's sum of a key,
    :meth:`end_hand` resets the tables whose episode ended (a reset is a new shoe, and a new id);
    :meth:`play` is the loop of the two scorers over them.
    Shoes are the independent groups of the CIs: :meth:`totals` gives each key's per-shoe sums and
    the hands of each shoe, for the shoes that were dealt.

    Args:
        env_kwargs: the env's settings (the task's, or a training config's).
        tables: tables dealt in parallel.
        seed: table ``i`` is seeded ``seed + i``.
        keys: the names of the sums (``"hands"`` is kept as well).
    """

    def __init__(self, env_kwargs: Mapping[str, Any], tables: int, seed: int, keys: Sequence[str]) -> None:
        from gymnasium.vector import AutoresetMode

        from pb_gym import memory
        from pb_gym.envs import tables as env_tables
        from pb_gym.envs.config import EnvConfig
        from pb_gym.envs.vector import PuntoBancoVectorEnv
        from pb_gym.rules import N_RANKS

        settings = dict(env_kwargs, reward="realized")
        config = EnvConfig(**settings)
        # checked here, in this function's terms (the env's own check would say "num_envs"): the
        # tables, and per table the sums, the unseen cards, the EVs, stakes and the observation
        per_table = env_tables.table_bytes(config) + 4 * config.obs_size
        per_table += 8 * (2 * (len(keys) + 1) + N_RANKS + 4 * config.n_columns)
        memory.require(tables * per_table, f"dealing {tables:,} held-out tables at once", "use fewer tables")
        self.env = PuntoBancoVectorEnv(tables, autoreset_mode=AutoresetMode.DISABLED, **settings)
        self.cfg = self.env.config
        self.pay = self.env.tables.session.payoffs  # net win per unit of every column, by hand class
        self.obs, _ = self.env.reset(seed=seed)
        self.sums = {key: np.zeros(2 * tables) for key in (*keys, "hands")}
        self.shoe_id = np.arange(tables)
        self.next_id = tables

    def before(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The composition of the cards unseen before the next hand ``(tables, 13)``, every column's
        exact EV for them ``(tables, n_columns)`` and the bankrolls (a copy). Where the env leaks
        (:attr:`~pb_gym.envs.config.EnvConfig.leaks`), the composition is less the cards shown and
        the EVs are given the leak (:func:`pb_gym.envs.leaks.expected_values`): the perfect bettor
        knows what the policy is shown, and both are priced on it."""
        shoe = self.env.tables.shoe
        composition = engine.next_hand_composition(self.cfg.rules, shoe)
        bankroll = self.env.tables.bankroll.copy()
        if self.cfg.leaks:
            from pb_gym.envs import leaks

            leak = leaks.before_hand(self.cfg, shoe)
            ev = leaks.expected_values(self.cfg, composition, leak)
            return leaks.composition(leak, composition), ev, bankroll
        return composition, self.cfg.bets.expected_values(composition), bankroll

    def _new_shoes(self, mask: np.ndarray) -> None:
        count = int(mask.sum())
        self.shoe_id[mask] = self.next_id + np.arange(count)
        self.next_id += count

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Play ``actions``; the realized rewards, every column's net win per unit on the hand dealt
        ``(tables, n_columns)``, and which episodes ended."""
        self.obs, reward, terminated, truncated, _ = self.env.step(actions)
        payoffs = self.pay[self.env.tables.session.records.hand_class]
        new_shoe = self.env.tables.result.shuffled
        if new_shoe.any():  # this hand came from a freshly shuffled shoe
            self._new_shoes(new_shoe)
        if self.next_id > len(self.sums["hands"]):
            size = max(2 * len(self.sums["hands"]), self.next_id + len(self.shoe_id))
            self.sums = {k: np.concatenate([v, np.zeros(size - len(v))]) for k, v in self.sums.items()}
        self.add("hands", None)
        return reward, payoffs, terminated | truncated

    def add(self, key: str, weights: Any) -> None:
        """Add each table's weight (an array of ``tables`` numbers or booleans; None: 1) to its current
        shoe's sum of ``key``."""
        self.sums[key] += np.bincount(self.shoe_id, weights=weights, minlength=len(self.sums[key]))

    def end_hand(self, done: np.ndarray) -> None:
        """An episode is one shoe: where one ended, the table is reset (a new shoe, a new id)."""
        if done.any():
            self.obs, _ = self.env.reset(options={"reset_mask": done})
            self._new_shoes(done)

    def play(self, hands: int, act: Callable[..., tuple[np.ndarray, Any]]) -> Iterator[Hand]:
        """The one per-hand loop of the scorers: ``hands`` hands at every table, each a :class:`Hand`.

        Before each hand ``act(obs, bankroll, episode_start)`` (``episode_start``: the tables whose
        episode ended on the hand before, all of them at the first) gives the actions and anything the
        caller wants back with the hand (:attr:`Hand.extra`); the actions are decoded to stakes and
        played. The caller adds its sums (:meth:`add`, :meth:`add_stakes`) before the next hand; then
        the tables whose episode ended are reset (:meth:`end_hand`)."""
        from pb_gym.envs import actions as env_actions

        stakes = np.zeros((len(self.shoe_id), self.cfg.n_columns))
        episode_start = np.ones(len(self.shoe_id), dtype=bool)
        for _ in range(hands):
            composition, ev, bankroll = self.before()
            actions, extra = act(self.obs, bankroll, episode_start)
            env_actions.decode_actions(self.cfg, actions, bankroll, stakes)
            reward, payoffs, done = self.step(actions)
            yield Hand(composition, ev, bankroll, actions, stakes, reward, payoffs, done, extra)
            episode_start = done.copy()
            self.end_hand(done)

    def add_stakes(self, name: str, stakes: np.ndarray, ev: np.ndarray, realized: np.ndarray) -> None:
        """Add a system's hand to its sums: ``exact/name`` (``stakes`` x ``ev``), ``real/name``
        (``realized``), ``bets/name`` (whether it bet) and, where that key is kept, ``staked/name``."""
        self.add(f"exact/{name}", (stakes * ev).sum(axis=1))
        self.add(f"real/{name}", realized)
        self.add(f"bets/{name}", (stakes > 0).any(axis=1))
        if f"staked/{name}" in self.sums:
            self.add(f"staked/{name}", stakes.sum(axis=1))

    def totals(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Each key's per-shoe sums and the hands of each shoe, for the shoes dealt; closes the env."""
        self.env.close()
        used = self.sums["hands"] > 0
        return {k: v[used] for k, v in self.sums.items()}, self.sums["hands"][used]


def score(
    policy: Any,
    task: str | Task | SessionTask = "pb_gym/Discover-v0",
    tables: int | None = None,
    hands: int | None = None,
    seed: int = DEFAULT_SEED,
    *,
    reset: Callable[[], None] | None = None,
    sessions: int | None = None,
    exact: bool | None = None,
) -> dict:
    """Play ``policy`` on ``tables`` x ``hands`` held-out hands of ``task`` (seed ``seed``) beside the
    perfect-information bettor; the JSON-ready figures of the module docstring. A session task
    (``pb_gym/Session-v0``, ...) is scored by :func:`pb_gym.session_benchmark.score` instead: its
    P(goal) over ``sessions`` sessions against the exact optimum.

    Args:
        policy: a callable from observations ``(N, obs_dim)`` float32 to actions ``(N,)`` (a tuple's
            first item is taken: an SB3 ``predict``); for a session task also a
            :class:`~pb_gym.session_optimum.PolicyTable` or a :class:`~pb_gym.session_benchmark.StatePolicy`.
        task: a task id of :data:`pb_gym.envs.tasks.TASKS` or :data:`~pb_gym.envs.tasks.SESSION_TASKS`
            (``"Discover-v0"`` works too).
        tables: tables dealt in parallel (each hand, one batch of ``tables`` observations); None: 256
            (a session task: the sessions played side by side, None: 4096).
        hands: hands dealt at each table (a new shoe, and a new episode, starts where one ends); None:
            1600. Not for a session task (a session lasts the task's hands).
        seed: table ``i`` (a session task: session ``i``) is seeded ``seed + i``.
        reset: called before the first hand (a recurrent policy's state; a session task: before each
            batch of sessions).
        sessions: a session task's sessions (None: 100,000); only for a session task.
        exact: a session task's exact valuation (:func:`pb_gym.session_benchmark.score`); only for a
            session task.

    Raises:
        ValueError: a bad argument (named), or a policy that returns other than one valid action per row.
    """
    from pb_gym.envs import actions as env_actions
    from pb_gym.exact import best_positive

    if is_session_task(task):
        from pb_gym import session_benchmark as session_scoring

        if hands is not None:
            raise ValueError(
                f"hands={hands!r} is not allowed; allowed: None for a session task (a session lasts the "
                "task's hands; sessions= sets how many are played)"
            )
        return session_scoring.score(
            policy,
            task,
            session_scoring.SCORE_SESSIONS if sessions is None else sessions,
            seed,
            tables=session_scoring.SCORE_TABLES if tables is None else tables,
            exact=exact,
            reset=reset,
        )
    for name, value in (("sessions", sessions), ("exact", exact)):
        if value is not None:
            raise ValueError(f"{name}={value!r} is not allowed; allowed: None (only a session task takes it)")
    spec = get_task(task)
    tables = check_int("tables", DEFAULT_TABLES if tables is None else tables, 2)
    hands = check_int("hands", DEFAULT_HANDS if hands is None else hands, 1)
    seed = check_int("seed", seed, 0)
    if not callable(policy):
        raise ValueError(
            f"policy={policy!r} is not allowed; allowed: a callable from observations "
            "(N, obs_dim) float32 to actions (N,)"
        )
    kinds = ["exact", "real", "bets"] + (["growth"] if spec.objective == "log_growth" else [])
    systems = ["policy", "perfect"] + (["sizer", "kelly"] if spec.objective == "log_growth" else [])
    keys = [f"{k}/{s}" for k in kinds for s in systems] + ["below_minimum/policy"]
    deal = Deal(spec.kwargs, tables, seed, keys)
    cfg = deal.cfg
    spots = np.array([cfg.bets.column(b) for b in spec.bets], dtype=np.int64)
    growth = _Growth(cfg, deal.pay, spots) if spec.objective == "log_growth" else None
    unit_action = np.array([action_index(spec, b, cfg.stake_levels[0]) for b in spec.bets])
    if reset is not None:
        reset()
    perfect = np.zeros((tables, cfg.n_columns))
    # the perfect bettor stakes on the task's starting bankroll, whatever the policy's has become: its
    # profit is then the same for every policy (with Sizing-v0's fractions it is one unit, as in
    # Discover-v0; on the policy's bankroll its smallest level fell below the table minimum, and out
    # of play, after any net loss of the policy)
    start = np.full(tables, cfg.bankroll_units)
    # the policy sees the observations alone (the bankroll and episode starts are for train's policies)
    for hand in deal.play(hands, lambda obs, *_: (policy_actions(policy(obs), tables, cfg.n_actions), None)):
        stakes = hand.stakes
        # a bet chosen whose stake the table does not take (below its minimum): no bet, and counted
        below_minimum = (hand.actions != 0) & ~(stakes > 0).any(axis=1)
        # the perfect bettor: the smallest stake on the best scored bet, where its exact EV is > 0
        side_ev = hand.ev[:, spots]
        best, positive = best_positive(side_ev)
        env_actions.decode_actions(cfg, np.where(positive, unit_action[best], 0), start, perfect)
        placed = {"policy": stakes, "perfect": perfect}
        realized = {"policy": hand.reward, "perfect": (perfect * hand.payoffs).sum(axis=1)}
        grown: dict[str, np.ndarray] = {}
        if growth is not None:
            grown = _sizing(growth, cfg, hand, side_ev, perfect, placed, realized)
        for name, st in placed.items():
            deal.add_stakes(name, st, hand.ev, realized[name])
        for name, g in grown.items():
            deal.add(f"growth/{name}", g)
        deal.add("below_minimum/policy", below_minimum)
    sums, n = deal.totals()

    def per_hand(key: str) -> dict:
        return ratio_ci(sums[key], n)

    mine, best_exact = sums["exact/policy"], sums["exact/perfect"]
    out: dict[str, Any] = {
        "task": spec.id,
        "tables": tables,
        "hands_per_table": hands,
        "seed": seed,
        "hands": int(n.sum()),
        "shoes": len(n),
        "bets": list(spec.bets),
        "normalized_score": ratio_ci(mine, best_exact),
        "exact_profit_per_hand": per_hand("exact/policy"),
        "perfect_profit_per_hand": per_hand("exact/perfect"),
        "regret_per_hand": ratio_ci(best_exact - mine, n),
        "realized_profit_per_hand": per_hand("real/policy"),
        "perfect_realized_profit_per_hand": per_hand("real/perfect"),
        "bet_rate": per_hand("bets/policy"),
        "perfect_bet_rate": per_hand("bets/perfect"),
        "below_minimum_rate": per_hand("below_minimum/policy"),
        "regret_per_1000_hands": scaled(ratio_ci(best_exact - mine, n), 1000.0),
        "never_bet_regret_per_1000_hands": scaled(per_hand("exact/perfect"), 1000.0),
        "headline": headline(spec),
    }
    if growth is not None:
        out.update(
            {
                "log_growth_per_hand": per_hand("growth/policy"),
                "perfect_log_growth_per_hand": per_hand("growth/sizer"),
                "kelly_log_growth_per_hand": per_hand("growth/kelly"),
                "normalized_log_growth": ratio_ci(sums["growth/policy"], sums["growth/sizer"]),
                "log_growth_regret_per_hand": ratio_ci(sums["growth/sizer"] - sums["growth/policy"], n),
            }
        )
    for key in ("normalized_score", "normalized_log_growth"):  # (a ratio of profits: n is the hands)
        if key in out:
            out[key]["n"] = out["hands"]
    return out


def _sizing(
    growth: _Growth, cfg, hand: Hand, side_ev: np.ndarray, perfect: np.ndarray, placed: dict, realized: dict
) -> dict[str, np.ndarray]:
    """The exact log growth of the policy, of the best action of the task's own (the sizer) and of
    the Kelly bettor on this hand. A stake can grow the bankroll only on a bet whose EV is > 0, so the
    hand-class probabilities are computed only where the policy bets or some scored bet is positive."""
    from pb_gym import exact
    from pb_gym.envs import actions as env_actions

    composition, bankroll, stakes = hand.composition, hand.bankroll, hand.stakes
    n = len(bankroll)
    out = {name: np.zeros(n) for name in ("policy", "sizer", "kelly")}
    sizer = np.zeros_like(stakes)
    rows = np.flatnonzero((side_ev > 0).any(axis=1) | (stakes > 0).any(axis=1))
    if rows.size:
        probabilities = exact.hand_class_probabilities(composition[rows])
        before = bankroll[rows]
        out["policy"][rows] = growth.of(probabilities, stakes[rows], before)
        # every action of the task on these hands: the best (0 = no bet, growth 0) is the sizer's
        best_action, best_growth = growth.best_action(probabilities, before)
        out["sizer"][rows] = best_growth
        chosen = np.zeros((rows.size, cfg.n_columns))
        env_actions.decode_actions(cfg, best_action, before, chosen)
        sizer[rows] = chosen
        out["kelly"][rows] = growth.kelly(probabilities)
    placed["sizer"] = sizer
    realized["sizer"] = (sizer * hand.payoffs).sum(axis=1)
    return out


def perfect_policy(task: str | Task | SessionTask = "pb_gym/Discover-v0") -> Policy:
    """The known optimum as a policy of ``task``'s observations, the reference a learned policy is
    measured against: the unseen cards read from the observation (``shoe`` x ``4 x decks``: exact in
    float32), then one unit (the smallest stake level) on the best offered bet whose exact EV is
    positive, else no bet. For ``objective="log_growth"`` tasks, the action of the task with the
    largest exact expected log growth (none: no bet), the bankroll read from the observation. It
    scores exactly 1 on every seed (tested). For a session task, the solver's optimal policy
    (:func:`pb_gym.session_benchmark.optimal_policy`).

    Raises:
        ValueError: the task hides the discards (no policy of its observation can be perfect).
    """
    from pb_gym import exact
    from pb_gym import rules as R
    from pb_gym.envs import config as env_config

    if is_session_task(task):
        from pb_gym import session_benchmark

        return session_benchmark.optimal_policy(task)
    spec = get_task(task)
    cfg = env_config.make_config(**spec.kwargs)
    if not cfg.visible_discards:
        raise ValueError(
            f"task={spec.id!r} hides the discards: its observation does not show the "
            "unseen cards, so no policy of it can be the perfect bettor"
        )
    start, stop = cfg.obs_offsets["shoe"]
    bank = cfg.obs_offsets["bankroll"][0]
    per_rank = float(R.CARDS_PER_RANK_PER_DECK * cfg.rules.decks)
    spots = np.array([cfg.bets.column(b) for b in spec.bets], dtype=np.int64)
    unit_action = np.array([action_index(spec, b, cfg.stake_levels[0]) for b in spec.bets])
    growth = _Growth(cfg, cfg.bets.pay_matrix(), spots) if spec.objective == "log_growth" else None

    def act(obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float64)
        composition = np.rint(obs[:, start:stop] * per_rank).astype(np.int64)
        if cfg.leaks:  # what the leaks show, read from the observation as the policy reads it
            from pb_gym.envs import leaks

            leak = leaks.from_obs(cfg, obs)
            side_ev = leaks.expected_values(cfg, composition, leak)[:, spots]
            composition = leaks.composition(leak, composition)
        else:
            side_ev = cfg.bets.expected_values(composition)[:, spots]
        if growth is None:
            best, positive = exact.best_positive(side_ev)
            return np.where(positive, unit_action[best], 0)
        actions = np.zeros(len(obs), dtype=np.int64)
        rows = np.flatnonzero((side_ev > 0).any(axis=1))
        if rows.size:
            probabilities = exact.hand_class_probabilities(composition[rows])
            actions[rows] = growth.best_action(probabilities, obs[rows, bank] * cfg.bankroll_units)[0]
        return actions

    return act


def never_bet(obs: np.ndarray) -> np.ndarray:
    """The policy that never bets (action 0 everywhere): scores exactly 0."""
    return np.zeros(len(obs), dtype=np.int64)


def ci_text(entry: dict, scale: float = 1.0, digits: int = 4) -> str:
    """A :func:`pb_gym.ci.ratio_ci` figure as ``+estimate [+low, +high]`` (times ``scale``)."""
    if entry.get("estimate") is None:
        return "n/a"
    lo, hi = entry["ci95"]
    return f"{entry['estimate'] * scale:+.{digits}f} [{lo * scale:+.{digits}f}, {hi * scale:+.{digits}f}]"


def report(result: dict) -> str:
    """A :func:`score` result as text, its headline (:func:`headline`) first."""
    if "p_goal" in result:  # a session task's
        from pb_gym import session_benchmark

        return session_benchmark.report(result)
    sizing = "log_growth_per_hand" in result
    lines = [
        f"{result['task']}: {result['hands']:,} held-out hands ({result['tables']} tables x "
        f"{result['hands_per_table']} hands, {result['shoes']:,} shoes, seed {result['seed']}); "
        "units per hand dealt, 95% CIs over shoes",
    ]
    regret = (
        f"regret / 1,000 hands (paired): {ci_text(result['regret_per_1000_hands'], 1, 3)}   never betting's "
        f"{ci_text(result['never_bet_regret_per_1000_hands'], 1, 3)}"
    )
    growth = (
        [
            f"normalized log growth (policy / best action): {ci_text(result['normalized_log_growth'], 1, 4)}",
            f"log growth / hand (x1e6): policy {ci_text(result['log_growth_per_hand'], 1e6, 3)}   "
            f"best action {ci_text(result['perfect_log_growth_per_hand'], 1e6, 3)}   Kelly "
            f"{ci_text(result['kelly_log_growth_per_hand'], 1e6, 3)}",
        ]
        if sizing
        else []
    )
    normalized = f"normalized score (policy / perfect, exact): {ci_text(result['normalized_score'], 1, 4)}"
    if sizing:  # the objective first; the profit is over the one-unit bettor's, which stakes less
        lines += growth
        normalized = (
            f"exact profit / the one-unit perfect bettor's: {ci_text(result['normalized_score'], 1, 4)}"
        )
    if result.get("headline") == "regret_per_1000_hands":  # a control: the optimum is about 0
        lines.append(regret)
        normalized += " (a control: not a share of a reachable optimum)"
    lines += [
        normalized,
        f"exact profit / hand:     policy {ci_text(result['exact_profit_per_hand'], 1, 5)}   perfect "
        f"{ci_text(result['perfect_profit_per_hand'], 1, 5)}",
        f"regret / hand (paired):  {ci_text(result['regret_per_hand'], 1, 5)}",
        f"realized profit / hand:  policy {ci_text(result['realized_profit_per_hand'], 1, 5)}   perfect "
        f"{ci_text(result['perfect_realized_profit_per_hand'], 1, 5)}",
        f"bet rate:                policy {result['bet_rate']['estimate']:.4%}   perfect "
        f"{result['perfect_bet_rate']['estimate']:.4%}",
    ]
    below = result.get("below_minimum_rate", {}).get("estimate")
    if below:
        lines.append(
            f"bets below the table minimum (chosen, not placed): {below:.4%} of hands "
            "(a stake level that the bankroll has made smaller than the table minimum)"
        )
    return "\n".join(lines)


__all__ = [
    "DEFAULT_HANDS",
    "DEFAULT_SEED",
    "DEFAULT_TABLES",
    "SESSION_TASKS",
    "TASKS",
    "Task",
    "action_index",
    "action_meanings",
    "get_task",
    "headline",
    "never_bet",
    "perfect_policy",
    "report",
    "score",
]
