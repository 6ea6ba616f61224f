"""Show the roads to an agent: a Gymnasium wrapper that adds the last marks of every road and the ask
road to the observation of :class:`pb_gym.envs.punto_banco.PuntoBancoEnv`.

The added entries, all in {-1, 0, 1} (float32), roads in the order Big Road, Big Eye Boy, Small Road,
Cockroach Pig (:class:`pb_gym.roads.RoadTracker`):

* the last ``marks`` marks of each road, oldest first, newest last (Big Road +1 banker, -1 player; a
  derived road +1 red, -1 blue; 0 where the road is shorter), ``4 x marks`` entries;
* the ask road: the mark each derived road would make next after a banker, then after a player
  (+1 red, -1 blue, 0 none yet), 6 entries.

With a flat observation (``observation="flat"``) they are appended to the Box; with
``observation="dict"`` they are the key ``"roads"``. The roads start afresh with every shoe (the
hand's ``shuffled`` info) and at ``reset``; they read the hand's ``winner`` info, so the env needs
``hand_info=True`` (the default).

Usage::

    import gymnasium as gym
    from pb_gym.envs.roads_observation import RoadsObservation

    env = RoadsObservation(gym.make("pb_gym/PuntoBanco-v0"), marks=8)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from pb_gym import roads

ASK_ENTRIES = 6
"""Ask-road entries: three derived roads after a banker, then after a player."""


class RoadsObservation(gym.Wrapper):
    """Add the roads (the last ``marks`` marks of each road and the ask road) to the observation.

    Args:
        env: a Punto Banco environment (flat ``Box`` or ``Dict`` observation, ``hand_info=True``).
        marks: marks of each road shown, 1 to 64.
    """

    def __init__(self, env: gym.Env, marks: int = 8) -> None:
        super().__init__(env)
        if isinstance(marks, bool) or not isinstance(marks, int) or not 1 <= marks <= 64:
            raise ValueError(f"marks={marks!r} is not allowed; allowed: an integer in 1..64")
        self.marks = marks
        size = 4 * marks + ASK_ENTRIES
        added = gym.spaces.Box(-1.0, 1.0, (size,), dtype=np.float32)
        space = env.observation_space
        if isinstance(space, gym.spaces.Dict):
            self.observation_space = gym.spaces.Dict({**space.spaces, "roads": added})
        elif isinstance(space, gym.spaces.Box) and len(space.shape) == 1:
            self.observation_space = gym.spaces.Box(
                np.concatenate([space.low, added.low]).astype(space.dtype),
                np.concatenate([space.high, added.high]).astype(space.dtype),
                dtype=space.dtype,
            )
        else:
            raise ValueError(
                f"the observation space {space} is not allowed; allowed: a flat Box or a "
                "Dict (the env's observation='flat' or 'dict')"
            )
        self.tracker = roads.RoadTracker(1, memory=marks)

    def roads_features(self) -> np.ndarray:
        """The entries added to the observation now (see the module docstring)."""
        return np.concatenate([self.tracker.history[0].ravel(), self.tracker.ask()[0].ravel()]).astype(
            np.float32
        )

    def _with_roads(self, observation: Any) -> Any:
        if isinstance(observation, dict):
            return {**observation, "roads": self.roads_features()}
        return np.concatenate([observation, self.roads_features()]).astype(observation.dtype)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        observation, info = self.env.reset(seed=seed, options=options)
        self.tracker.restart(np.ones(1, dtype=bool))
        return self._with_roads(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        if "winner" not in info:
            raise ValueError(
                "RoadsObservation reads the hand's winner from the info: make the env with hand_info=True"
            )
        if info.get("shuffled"):
            self.tracker.restart(np.ones(1, dtype=bool))
        self.tracker.record(np.array([int(info["winner"])]))
        return self._with_roads(observation), reward, terminated, truncated, info


__all__ = ["RoadsObservation", "ASK_ENTRIES"]
