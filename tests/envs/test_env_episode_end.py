"""What the single env does at the end of an episode, and the ``ev`` of its infos (documented in
pb_gym/envs/punto_banco.py and docs/env.md): a step after the env's own end raises ``ResetNeeded``;
after Gymnasium's ``TimeLimit`` (outside the env) truncates, the env cannot know, and ``TimeLimit``
answers ``truncated=True`` again; ``info["ev"]`` prices the hand that step dealt, so the first hand's
EV is in the first step's info (the reset's info is empty: no hand has been dealt)."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded

from pb_gym import engine
from pb_gym.envs import ENV_ID, PuntoBancoEnv

ENDED = r"after the episode ended \(terminated or truncated\): call env.reset\(\) first"


def test_a_step_after_the_envs_own_hand_limit_raises():
    env = PuntoBancoEnv(max_hands=3)
    env.reset(seed=0)
    assert [env.step(0)[3] for _ in range(3)] == [False, False, True]
    with pytest.raises(ResetNeeded, match=ENDED):
        env.step(0)
    env.reset()
    assert env.step(0)[3] is False


def test_a_step_after_ruin_raises():
    env = PuntoBancoEnv(bankroll=10, unit=10, table_min=10, max_hands=None)  # one unit: one loss ruins
    env.reset(seed=0)
    banker = env.action_index("banker", 0)
    for _ in range(200):
        _, reward, terminated, truncated, _ = env.step(banker)
        if terminated:
            break
    assert terminated and not truncated and reward == -1.0 and env.bankroll == 0.0
    with pytest.raises(ResetNeeded, match=ENDED):
        env.step(0)


def test_gymnasiums_time_limit_is_outside_the_env():
    """``gymnasium.make``'s TimeLimit (the registered 100 hands) truncates above the env: Gymnasium 1.x
    gives the unwrapped env a spec without ``max_episode_steps``, OrderEnforcing refuses only a step
    before the first reset, PassiveEnvChecker checks only the first reset and step. A further step
    deals a hand and TimeLimit says ``truncated=True`` again. With the env's own ``max_hands`` the
    same limit raises."""
    env = gym.make(ENV_ID, max_episode_steps=3)
    assert env.unwrapped.spec.max_episode_steps is None and env.spec.max_episode_steps == 3
    env.reset(seed=0)
    assert [env.step(0)[3] for _ in range(3)] == [False, False, True]
    assert [env.step(0)[3] for _ in range(2)] == [True, True]  # no error: the env never ended
    own = gym.make(ENV_ID, max_episode_steps=3, max_hands=3)  # the documented way to get the error
    own.reset(seed=0)
    assert [own.step(0)[3] for _ in range(3)] == [False, False, True]
    with pytest.raises(ResetNeeded, match=ENDED):
        own.step(0)


@pytest.mark.parametrize(
    "make", [lambda: PuntoBancoEnv(info_ev=True), lambda: gym.make(ENV_ID, info_ev=True)]
)
def test_the_first_hands_ev_is_in_the_first_steps_info(make):
    env = make()
    _, info = env.reset(seed=4)
    assert info == {}  # no hand dealt yet
    unwrapped = env.unwrapped
    cfg = unwrapped.config
    before = cfg.bets.expected_values(engine.next_hand_composition(cfg.rules, unwrapped.tables.shoe))[0]
    _, _, _, _, info = env.step(0)
    np.testing.assert_array_equal(info["ev"], before)  # the hand this step dealt, priced before it
    # and each later step's ev is the EV of its own hand, from the cards unseen before it
    for _ in range(30):
        before = cfg.bets.expected_values(engine.next_hand_composition(cfg.rules, unwrapped.tables.shoe))[0]
        _, _, _, _, info = env.step(0)
        np.testing.assert_array_equal(info["ev"], before)
