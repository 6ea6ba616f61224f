"""The session tasks (pb_gym/Session-v0, SessionDouble-v0, SessionBold-v0): registered with frozen
settings, their exact figures the solver's, the env's spaces, masks, illegal actions, ends and exact
amounts, the single and vector envs' parity, the env simulated against the solver's exact P(goal) (the
env deals, stakes, pays, ruins and wins as the solver does), the scorer, and SB3's PPO on the task.

Statistical checks: the simulated P(goal) of a fixed policy lies within 4.5 standard errors of the exact
one (two-sided normal bound: a false alarm once in about 150,000 runs; the seeds are fixed, so each run
is deterministic)."""

import math
from fractions import Fraction

import gymnasium
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import pb_gym  # noqa: F401  (registers the tasks)
from pb_gym import benchmark, session_benchmark
from pb_gym import session_optimum as so
from pb_gym.envs import tasks
from pb_gym.envs.session_env import SessionEnv
from pb_gym.envs.session_settings import session_settings
from pb_gym.envs.session_vector import SessionVectorEnv

IDS = ["pb_gym/Session-v0", "pb_gym/SessionDouble-v0", "pb_gym/SessionBold-v0"]
Z_BOUND = 4.5
"""Two-sided 4.5-SE bound: P(|Z| > 4.5) = 6.8e-6 under the exact value."""


def test_the_session_tasks_are_registered_with_frozen_settings():
    assert list(tasks.SESSION_TASKS) == IDS
    assert not set(IDS) & set(tasks.TASKS)  # the Discover tasks and their scoring are apart
    settings = {
        "pb_gym/Session-v0": (20, 60, 30, 5),
        "pb_gym/SessionDouble-v0": (50, 100, 20, 10),
        "pb_gym/SessionBold-v0": (10, 20, 100, 10),
    }
    for task_id, (bankroll, goal, hands, top) in settings.items():
        task = tasks.get_session_task(task_id.split("/")[1])
        assert dict(task.kwargs) == dict(
            bankroll=bankroll,
            goal=goal,
            hands=hands,
            table_max=top,
            table_min=1,
            bets=tasks.MAIN_BETS,
            decks=8,
        )
        spec = gymnasium.spec(task_id)
        assert spec.kwargs == dict(task.kwargs) and spec.max_episode_steps is None
        assert spec.entry_point == "pb_gym.envs.session_env:SessionEnv"
        assert spec.vector_entry_point == "pb_gym.envs.session_vector:SessionVectorEnv"
    assert tasks.is_session_task("Session-v0") and not tasks.is_session_task("Discover-v0")
    with pytest.raises(ValueError, match="is a session task"):
        tasks.get_task("Session-v0")
    with pytest.raises(ValueError, match="allowed: pb_gym/Session-v0"):
        tasks.get_session_task("Discover-v0")


def test_the_tasks_figures_are_the_solvers():
    for task in tasks.SESSION_TASKS.values():
        session = session_benchmark.problem(task)
        solution = session_benchmark.solution(task)
        assert solution.p_goal == pytest.approx(task.optimum, abs=1e-14)
        assert so.evaluate(session, so.bold_play(session, "player")) == pytest.approx(task.bold, abs=1e-14)
        assert so.evaluate(session, so.timid_play(session, "player", 1)) == pytest.approx(
            task.timid, abs=1e-14
        )
    assert session_benchmark.solution("Session-v0").action(20, 30) == (
        "tie",
        5,
    )  # the optimum opens with 5 on the tie
    assert tasks.SESSION_TASKS["pb_gym/Session-v0"].optimum == pytest.approx(0.282916417064592, abs=1e-15)
    assert tasks.SESSION_TASKS["pb_gym/Session-v0"].bold / tasks.SESSION_TASKS[
        "pb_gym/Session-v0"
    ].optimum == (pytest.approx(0.394, abs=5e-4))
    canonical = tasks.SESSION_TASKS["pb_gym/SessionBold-v0"]
    assert canonical.optimum == canonical.bold == 0.493175170055446  # bold play on player is optimal


@pytest.mark.parametrize("task_id", IDS)
def test_spaces_actions_and_the_env_checkers(task_id):
    env = gymnasium.make(task_id)
    s = env.unwrapped.settings
    session = session_benchmark.problem(task_id)
    assert s.ticks_per_unit == session.ticks_per_unit == 20 and s.bets == session.bets == tasks.MAIN_BETS
    top = s.table_max
    assert env.action_space == gymnasium.spaces.Discrete(1 + 3 * top)
    assert env.observation_space == gymnasium.spaces.Box(0.0, 1.0, (2,), np.float32)
    meanings = benchmark.action_meanings(task_id)
    assert meanings[0] == "no_bet" and meanings[1] == "banker@1" and meanings[-1] == f"tie@{top}"
    for action, meaning in enumerate(meanings):
        bet, stake = env.unwrapped.describe_action(action)
        assert meaning == ("no_bet" if action == 0 else f"{bet}@{stake}")
        assert benchmark.action_index(task_id, bet, stake) == action
    obs, info = env.reset(seed=3)
    assert obs.tolist() == [float(np.float32(s.bankroll / s.goal)), 1.0]
    assert info["action_mask"].all() and info["hands_left"] == s.hands and info["bankroll"] == s.bankroll
    check_env(env.unwrapped)
    sb3 = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3.check_env(gymnasium.make(task_id), warn=True)


def test_an_illegal_action_is_played_as_no_bet_and_counted():
    kwargs = dict(bankroll=3, goal=10, hands=4, table_max=5)
    env, twin = SessionEnv(**kwargs), SessionEnv(**kwargs)
    env.reset(seed=11)
    twin.reset(seed=11)
    tie5 = env.action_index("tie", 5)
    assert env.action_masks().tolist() == [True] + [s <= 3 for s in range(1, 6)] * 3
    obs, reward, terminated, truncated, info = env.step(tie5)  # 5 units with 3: illegal
    same = twin.step(0)  # no bet, dealt the same hand
    assert np.array_equal(obs, same[0]) and reward == same[1] == 0.0
    assert (terminated, truncated) == (False, False)
    assert info["illegal_action"] and info["illegal_actions"] == 1 and info["bankroll"] == 3.0
    assert info["hands_left"] == 3  # the hand counts against the limit
    assert not same[4]["illegal_action"] and same[4]["illegal_actions"] == 0
    with pytest.raises(ValueError, match=r"action=16 is not allowed; allowed: an integer in 0..15"):
        env.step(16)
    with pytest.raises(ValueError, match="action=1.0 is not allowed"):
        env.step(1.0)
    env.step(env.action_index("player", 3))  # legal: all in on player
    assert env.render() is None  # (no render mode)


def test_the_episode_ends_and_rewards():
    # never betting: terminated (not truncated) after the hand limit, reward 0, not a success
    env = gymnasium.make("pb_gym/Session-v0")
    env.reset(seed=0)
    for hand in range(30):
        obs, reward, terminated, truncated, info = env.step(0)
        assert reward == 0.0 and not truncated and terminated == (hand == 29)
    assert obs.tolist() == [float(np.float32(1 / 3)), 0.0] and info["is_success"] is False
    with pytest.raises(ResetNeeded):
        env.step(0)
    # all in on player from 10 with a goal of 20: a win reaches the goal (reward 1), a loss ruins
    env = SessionEnv(bankroll=10, goal=20, hands=100, table_max=10)
    ends = set()
    for seed in range(40):
        env.reset(seed=seed)
        while True:
            obs, reward, terminated, truncated, info = env.step(env.action_index("player", 10))
            if terminated:
                break
            assert info["bankroll"] == 10.0 and reward == 0.0  # a tie pushes
        won = info["bankroll"] == 20.0
        assert won == info["is_success"] == (reward == 1.0) and (won or info["bankroll"] == 0.0)
        assert obs[0] == (1.0 if won else 0.0) and not truncated
        ends.add(won)
    assert ends == {True, False}


def test_every_amount_is_exact_and_the_goal_test_is_the_solvers():
    """Banker wins of 19/20 unit a unit: the bankroll in ticks stays whole (in units, a float walk goes
    off the lattice on most hands), and a session ends won exactly when the exact bankroll reaches
    the goal."""
    env = SessionVectorEnv(2000, autoreset_mode="Disabled", bankroll=20, goal=60, hands=30, table_max=5)
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    live = np.ones(2000, dtype=bool)
    wins = 0
    while live.any():
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in env.action_masks()])  # legal ones
        _, reward, terminated, _, info = env.step(actions)
        ticks = env.tables.tables.bankroll
        assert np.array_equal(ticks, np.rint(ticks))  # whole ticks
        assert not info["illegal_action"].any()
        ended = terminated & live
        assert np.array_equal(reward[ended] == 1.0, ticks[ended] >= 1200)
        assert np.all((ticks[ended] >= 1200) | (ticks[ended] < 20) | (info["hands_left"][ended] == 0))
        wins += int(reward.sum())
        live &= ~terminated
    assert wins > 0


def test_the_vector_env_deals_as_the_single_env():
    kwargs = dict(bankroll=20, goal=60, hands=30, table_max=5)
    vector = gymnasium.make_vec("pb_gym/Session-v0", num_envs=4, autoreset_mode="Disabled")
    assert isinstance(vector.unwrapped, SessionVectorEnv)
    vector.reset(seed=100)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 16, size=4) for _ in range(30)]
    steps = [vector.step(a) for a in actions]
    for i in range(4):
        env = SessionEnv(**kwargs)
        env.reset(seed=100 + i)
        for a, (obs, reward, terminated, _, info) in zip(actions, steps, strict=False):
            mine = env.step(int(a[i]))
            assert np.array_equal(mine[0], obs[i]) and mine[1] == reward[i] and mine[2] == terminated[i]
            assert mine[4]["illegal_action"] == info["illegal_action"][i]
            if mine[2]:
                break


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_the_vector_env_autoresets(mode):
    env = SessionVectorEnv(2, autoreset_mode=mode, bankroll=1, goal=2, hands=3, table_max=1)
    env.reset(seed=1)
    all_in = env.settings.action_index("player", 1)
    first_end = None
    for step in range(40):
        obs, reward, terminated, truncated, info = env.step(np.array([all_in, 0]))
        assert not truncated.any()
        if step == 2:  # table 1 never bets: its three hands end it
            assert terminated[1] and reward[1] == 0.0 and info["_is_success"][1] and not info["is_success"][1]
            if mode == "SameStep":
                assert obs[1].tolist() == [0.5, 1.0] and info["final_obs"][1].tolist() == [0.5, 0.0]
                assert info["hands_left"][1] == 3 and info["final_info"]["hands_left"][1] == 0
            else:
                assert obs[1].tolist() == [0.5, 0.0]
        if step == 3 and mode == "NextStep":  # the table restarts, its action ignored
            assert obs[1].tolist() == [0.5, 1.0] and not terminated[1] and reward[1] == 0.0
        if terminated[0] and first_end is None:
            first_end = step
    assert first_end is not None


def test_the_env_agrees_with_the_solver_on_session_v0():
    """The solver's optimal policy read from the env's observations and bold play on player, each on
    200,000 sessions: the simulated P(goal) within 4.5 SE of the exact value."""
    optimal = benchmark.score(
        benchmark.perfect_policy("Session-v0"), "Session-v0", sessions=200_000, seed=1, exact=True
    )
    assert optimal["exact"]["p_goal"] == pytest.approx(0.282916417064592, abs=1e-14)
    assert optimal["exact"]["normalized_score"] == 1.0 and optimal["exact"]["illegal_states"] == 0
    assert abs(optimal["exact"]["z"]) < Z_BOUND
    assert optimal["illegal_action_rate"]["estimate"] == 0.0
    bold = benchmark.score(
        so.bold_play(session_benchmark.problem("Session-v0"), "player"),
        "Session-v0",
        sessions=200_000,
        seed=2,
    )
    assert bold["exact"]["p_goal"] == pytest.approx(0.111587908386914, abs=1e-14)
    assert abs(bold["exact"]["z"]) < Z_BOUND
    assert bold["exact"]["normalized_score"] == pytest.approx(0.394420, abs=1e-6)


@pytest.mark.parametrize("task_id", ["SessionDouble-v0", "SessionBold-v0"])
def test_the_env_agrees_with_the_solver_on_the_other_tasks(task_id):
    session = session_benchmark.problem(task_id)
    for policy, seed in (
        (session_benchmark.solution(task_id).policy, 3),
        (so.bold_play(session, "banker"), 4),
    ):
        result = benchmark.score(policy, task_id, sessions=100_000, seed=seed)
        assert result["exact"]["p_goal"] == pytest.approx(so.evaluate(session, policy), abs=1e-15)
        assert abs(result["exact"]["z"]) < Z_BOUND, result["exact"]


def test_the_score_of_every_kind_of_policy():
    never = benchmark.score(benchmark.never_bet, "Session-v0", sessions=1000, exact=True)
    assert never["p_goal"]["estimate"] == 0.0 and never["normalized_score"]["estimate"] == 0.0
    assert (
        never["regret"]["estimate"] == pytest.approx(never["optimum_p_goal"])
        and never["exact"]["p_goal"] == 0
    )
    assert never["bet_rate"]["estimate"] == 0.0 and never["hands_per_session"]["estimate"] == 30.0
    assert benchmark.score(benchmark.never_bet, "Session-v0", sessions=1000)["exact"] is None  # not asked for

    def bold_of_state(bankroll: Fraction, hands_left: int):  # what a win needs, within the limits
        return ("player", min(bankroll // 1, math.ceil(60 - bankroll), 5))

    by_state = benchmark.score(
        session_benchmark.StatePolicy(bold_of_state), "Session-v0", sessions=2000, seed=9
    )
    table = benchmark.score(
        so.bold_play(session_benchmark.problem("Session-v0"), "player"), "Session-v0", sessions=2000, seed=9
    )
    assert by_state["p_goal"] == table["p_goal"] and by_state["exact"] == table["exact"]  # same play

    # always 5 on banker: illegal under 5 units, played as no bet, in the simulation and exactly (not
    # flat play's all-in there)
    banker5 = benchmark.action_index("Session-v0", "banker", 5)
    result = benchmark.score(
        lambda obs: np.full(len(obs), banker5), "Session-v0", sessions=20_000, exact=True
    )
    flat = so.evaluate(
        session_benchmark.problem("Session-v0"),
        so.timid_play(session_benchmark.problem("Session-v0"), "banker", 5),
    )
    assert result["exact"]["illegal_states"] == 30 * 80  # bankrolls 1 to 4.95 units, each hand
    assert result["illegal_action_rate"]["estimate"] > 0
    assert result["exact"]["p_goal"] < flat and abs(result["exact"]["z"]) < Z_BOUND
    text = benchmark.report(result)
    assert "P(goal)" in text and "simulated - exact" in text


def test_the_scorer_refuses_bad_input():
    with pytest.raises(ValueError, match="hands=10 is not allowed; allowed: None for a session task"):
        benchmark.score(benchmark.never_bet, "Session-v0", hands=10)
    with pytest.raises(ValueError, match="sessions=10 is not allowed; allowed: None"):
        benchmark.score(benchmark.never_bet, "Discover-v0", sessions=10)
    with pytest.raises(ValueError, match="sessions=1 is not allowed; allowed: an integer >= 2"):
        benchmark.score(benchmark.never_bet, "Session-v0", sessions=1)
    with pytest.raises(ValueError, match=r"policy returned action 16; allowed: one integer action 0 \.\. 15"):
        benchmark.score(lambda obs: np.full(len(obs), 16), "Session-v0", sessions=10)
    bad_stake = so.PolicyTable(np.full((31, 1201), so.NO_BET), np.zeros((31, 1201), dtype=np.int64))
    bad_stake.bet[30, 400], bad_stake.stake[30, 400] = 0, 6
    with pytest.raises(
        ValueError, match="at bankroll 20 with 30 hand.s. left, the stake must be whole units"
    ):
        benchmark.score(bad_stake, "Session-v0", sessions=10)
    with pytest.raises(ValueError, match=r"bet .dragon7. is not offered \(banker, player, tie\)"):
        benchmark.score(session_benchmark.StatePolicy(lambda b, h: ("dragon7", 1)), "Session-v0", sessions=10)


def test_the_optimal_policy_reads_the_state_exactly_from_the_observation():
    s = session_settings(**tasks.get_session_task("Session-v0").kwargs)
    h, b = np.meshgrid(np.arange(1, 31), np.arange(20, 1200), indexing="ij")
    obs = s.observe(b.ravel(), h.ravel())
    assert np.array_equal(np.rint(obs[:, 0].astype(np.float64) * 1200), b.ravel())
    table = session_benchmark.action_table("Session-v0", session_benchmark.solution("Session-v0").policy)
    assert np.array_equal(benchmark.perfect_policy("Session-v0")(obs), table[h.ravel(), b.ravel()])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(hands=0), "hands=0 is not allowed; allowed: an integer"),
        (dict(table_max=0), "table_max=0 is not allowed; allowed: a whole"),
        (dict(goal=20), "goal=20 is not allowed; allowed: an amount above"),
        (dict(bankroll=20.01), "bankroll=20.01 is not allowed; allowed: an amount on the lattice"),
        (dict(bankroll=0.5), "bankroll=0.5 is not allowed; allowed: an amount >="),
        (dict(bets=("nope",)), "bets=.* is not allowed"),
        (dict(decks=9), "decks=9 is not allowed"),
        (dict(bankroll="20"), "bankroll='20' is not allowed"),
    ],
)
def test_bad_settings_are_one_line_errors_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message) as caught:
        SessionEnv(**dict(dict(bankroll=20, goal=60, hands=30, table_max=5), **kwargs))
    assert "\n" not in str(caught.value)


def test_ppo_runs_on_session_v0_through_make_vec_env():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env("pb_gym/Session-v0", n_envs=4, seed=0)
    model = PPO("MlpPolicy", vec, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(512)
    result = benchmark.score(
        lambda obs: model.predict(obs, deterministic=True)[0], "Session-v0", sessions=500, exact=True
    )
    assert 0.0 <= result["exact"]["p_goal"] <= result["optimum_p_goal"]
    contrib = pytest.importorskip("sb3_contrib")
    masked = contrib.MaskablePPO(
        "MlpPolicy", make_vec_env("pb_gym/Session-v0", n_envs=2, seed=0), n_steps=64, batch_size=64, seed=0
    )
    masked.learn(128)
