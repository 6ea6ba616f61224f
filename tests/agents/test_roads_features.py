"""The ``roads`` observation transform: the roads drawn from the bead plate are, entry for entry, those
RoadsObservation tracks hand by hand, and a train config whose bead plate cannot hold a shoe is
refused with the field and the least history allowed."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import pb_gym  # noqa: F401  (registers the envs)
from pb_gym.agents import learned
from pb_gym.agents.roads_features import SIZE, roads_features
from pb_gym.envs import config as env_config
from pb_gym.envs.roads_observation import RoadsObservation

from repo_paths import ROOT  # noqa: E402


@pytest.mark.parametrize("scale", ["raw", "scaled"])
def test_the_roads_from_the_bead_plate_are_those_the_wrapper_tracks(scale):
    env = RoadsObservation(
        gym.make("pb_gym/PuntoBanco-v0", observation="dict", obs_scale=scale, history=104, bankroll=10**6),
        marks=8,
    )
    obs, _ = env.reset(seed=7)
    compared = shoes = 0
    for _ in range(400):  # several shoes: the bead plate and the roads are cleared at each
        obs, _, terminated, truncated, info = env.step(0)
        shoes += bool(info.get("shuffled"))
        mine = roads_features(obs["bead_plate"], scaled=scale == "scaled")
        assert mine.shape == (SIZE,) and mine.dtype == np.float32
        np.testing.assert_array_equal(mine, obs["roads"])
        compared += int(np.abs(mine).sum() > 0)
        if terminated or truncated:
            obs, _ = env.reset()
    assert shoes >= 3 and compared > 300


def test_the_transform_replaces_the_bead_plate_and_batches_tables():
    plates = np.zeros((3, 104))
    plates[1, :5] = [1, 1, 3, 2, 1]  # most recent first: B P T B B oldest first (a tie on the P)
    plates[2, :2] = [2, 2]
    features = roads_features(plates, scaled=False)
    assert features.shape == (3, SIZE) and not features[0].any()
    # Big Road of table 1, newest last: B, P, B, B (the tie makes no mark)
    np.testing.assert_array_equal(features[1, :8], [0, 0, 0, 0, 1, -1, 1, 1])
    np.testing.assert_array_equal(features[2, :8], [0, 0, 0, 0, 0, 0, -1, -1])
    obs = {"bankroll": np.ones((3, 1)), "bead_plate": plates}
    cfg = env_config.make_config(obs_scale="raw", observation="dict", history=104)
    out = learned.transform_obs("roads", obs, cfg)
    assert sorted(out) == ["bankroll", "roads"]
    np.testing.assert_array_equal(out["roads"], features)
    with pytest.raises(ValueError, match=r"bead_plate holds 0..4; allowed: 0 \(none\), 1 banker"):
        roads_features(plates + (plates > 1), scaled=False)


def test_a_bead_plate_shorter_than_a_shoe_is_refused():
    from pb_gym.experiments import train
    from pb_gym.experiments.common.yaml_config import load

    config = load(str(ROOT / "configs" / "train" / "discover-roads.yaml"), train.TrainConfig)
    assert config.obs_transform == "roads" and config.env.history == 104
    data = config.model_dump(mode="json")
    data["env"]["history"] = 20
    message = r"env.history: 20 is not allowed with obs_transform 'roads'.*allowed: at least 102"
    with pytest.raises(ValueError, match=message):
        train.TrainConfig.model_validate(data)
