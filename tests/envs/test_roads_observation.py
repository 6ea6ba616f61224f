"""The roads observation wrapper: what it adds is the roads of the hands the env dealt."""

import gymnasium as gym
import numpy as np
import pytest

import pb_gym  # noqa: F401  (registers the env ids)
from pb_gym import roads
from pb_gym.envs.roads_observation import RoadsObservation

VALUE = {"red": 1, "blue": -1, None: 0}


def expected_features(outcomes, marks):
    board = roads.read_roads(outcomes)
    rows = [[1 if e.winner == "B" else -1 for c in board.big_road for e in c]]
    rows += [[VALUE[m] for m in board.derived[name]] for name in roads.DERIVED_ROADS]
    shown = [([0] * marks + row)[-marks:] for row in rows]
    ask = [VALUE[board.ask[w][name]] for w in "BP" for name in roads.DERIVED_ROADS]
    return np.array(sum(shown, []) + ask, dtype=np.float32)


@pytest.mark.parametrize("observation", ["flat", "dict"])
def test_the_roads_of_the_dealt_hands(observation):
    env = RoadsObservation(
        gym.make("pb_gym/PuntoBanco-v0", observation=observation, bankroll=10_000), marks=5
    )
    obs, _ = env.reset(seed=3)
    base = env.env.observation_space
    size = 4 * 5 + 6
    if observation == "flat":
        assert env.observation_space.shape == (base.shape[0] + size,)
        assert not obs[-size:].any()
    else:
        assert env.observation_space["roads"].shape == (size,) and not obs["roads"].any()
    outcomes = ""
    for _ in range(60):
        obs, _, terminated, truncated, info = env.step(0)
        if info["shuffled"]:
            outcomes = ""
        outcomes += "BPT"[info["winner"]]
        features = obs[-size:] if observation == "flat" else obs["roads"]
        np.testing.assert_array_equal(features, expected_features(outcomes, 5))
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            break


def test_bad_marks_and_missing_hand_info():
    with pytest.raises(ValueError, match="marks=0 is not allowed; allowed: an integer in 1..64"):
        RoadsObservation(gym.make("pb_gym/PuntoBanco-v0"), marks=0)
    env = RoadsObservation(gym.make("pb_gym/PuntoBanco-v0", hand_info=False))
    env.reset(seed=1)
    with pytest.raises(ValueError, match="hand_info=True"):
        env.step(0)
