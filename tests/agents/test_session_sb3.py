"""The stable-baselines3 pieces of the session tasks: the VecEnv over the native session vector env and
the thermometer code of the observation."""

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from pb_gym.agents.session_sb3 import (  # noqa: E402
    SessionSB3VecEnv,
    SessionThermometer,
    featured_space,
    thermometer,
)
from pb_gym.envs.session_vector import SessionVectorEnv  # noqa: E402
from pb_gym.envs.tasks import get_session_task  # noqa: E402

TASK = "pb_gym/Session-v0"


def test_thermometer_counts_whole_units_and_hands_left_at_every_state():
    s = SessionVectorEnv(1, **get_session_task(TASK).kwargs).settings
    ticks = np.arange(s.goal_ticks + 1)
    for left in (0, 1, 17, s.hands):
        code = thermometer(s.observe(ticks, np.full(len(ticks), left)), s)
        goal = int(s.goal)
        assert code.shape == (len(ticks), 2 + goal + s.hands)
        np.testing.assert_array_equal(code[:, 2 : 2 + goal].sum(1), ticks // s.ticks_per_unit)
        assert (code[:, 2 + goal :].sum(1) == left).all()
    assert featured_space(s, "thermometer").shape == (2 + int(s.goal) + s.hands,)
    with pytest.raises(ValueError, match="features"):
        featured_space(s, "onehot")


def test_vec_env_plays_the_vector_env_and_reports_the_end():
    env = SessionSB3VecEnv(TASK, 8, features="thermometer", seed=3)
    plain = SessionVectorEnv(8, autoreset_mode="SameStep", **get_session_task(TASK).kwargs)
    obs = env.reset()
    raw, _ = plain.reset(seed=3)
    np.testing.assert_array_equal(obs, thermometer(raw, env.settings))
    tie5 = env.venv.settings.action_index("tie", 5)
    ended = 0
    for _ in range(env.settings.hands):
        env.step_async(np.full(8, tie5))
        obs, rewards, dones, infos = env.step_wait()
        raw, r, term, trunc, _ = plain.step(np.full(8, tie5))
        np.testing.assert_array_equal(obs, thermometer(raw, env.settings))
        np.testing.assert_array_equal(rewards, r)
        for i in np.flatnonzero(dones):
            ended += 1
            assert infos[i]["is_success"] == (rewards[i] == 1.0)
            assert infos[i]["TimeLimit.truncated"] is False
            assert infos[i]["terminal_observation"].shape == obs.shape[1:]
    assert ended >= 8  # tie at 5 from 20 ends within 4 losing hands or on the goal
    assert env.action_masks().shape == (8, env.action_space.n)
    assert len(env.env_method("action_masks")) == 8


def test_wrapper_matches_the_vec_env_code():
    env = SessionThermometer(gym.make(TASK))
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs.shape == SessionSB3VecEnv(TASK, 1, features="thermometer").observation_space.shape


def test_vec_env_refuses_an_action_that_is_not_one_integer_per_table():
    env = SessionSB3VecEnv(TASK, 4, seed=0)
    env.reset()
    allowed = r"allowed: an integer array of shape \(4,\) with values in 0\.\.15"
    for actions in (np.array([0.5, 0, 0, 0]), np.zeros(3, dtype=np.int64), np.array([16, 0, 0, 0])):
        env.step_async(actions)
        with pytest.raises(ValueError, match=allowed):
            env.step_wait()
    env.step_async(np.zeros((4, 1), dtype=np.int64))  # a policy output with the action axis kept
    assert env.step_wait()[0].shape == (4, 2)


def test_the_thermometer_wrapper_refuses_an_env_that_is_not_a_session():
    with pytest.raises(ValueError, match="^env=.* is not allowed; allowed: a session env"):
        SessionThermometer(gym.make("pb_gym/PuntoBanco-v0"))
