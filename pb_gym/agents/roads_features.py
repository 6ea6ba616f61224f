"""The roads as features of a learned agent: the ``roads`` observation transform of ``pb-gym train``.

The roads are a function of the shoe's outcomes so far, which the env's ``bead_plate`` holds (most
recent first, 0 = none yet, cleared at each new shoe): given a bead plate as long as a shoe
(``history`` >= the hands of a shoe, e.g. 104 for 8 decks), :func:`roads_features` rebuilds every
table's roads from it in one pass over the plate's columns (:class:`pb_gym.roads.RoadTracker`, all
tables at once) and gives the entries :class:`pb_gym.envs.roads_observation.RoadsObservation` adds,
in its layout: the last ``marks`` marks of each road (Big Road, Big Eye Boy, Small Road, Cockroach
Pig; oldest first, 0 where shorter), then the ask road (the three derived roads' next mark after a
banker, then after a player). Being a function of the observation, not a state carried between
steps, the same features are computed wherever the model's observations are (training, the
``discovery:`` scoring, :func:`pb_gym.benchmark.score`).
"""

from __future__ import annotations

import numpy as np

from pb_gym import roads

MARKS = 8
"""Marks of each road shown (RoadsObservation's default)."""
SIZE = 4 * MARKS + 6
"""Entries of the features: four roads' marks and the ask road's six."""


def roads_features(bead_plate: np.ndarray, scaled: bool, marks: int = MARKS) -> np.ndarray:
    """``(N, 4 * marks + 6)`` float32 road features of ``N`` tables' bead plates ``(N, history)``
    (``scaled``: the plate's codes divided by 3, as ``obs_scale="scaled"`` gives them).

    Raises:
        ValueError: a code is not 0 (none), 1 (banker), 2 (player) or 3 (tie).
    """
    plate = np.asarray(bead_plate, dtype=np.float64)
    if plate.ndim == 1:
        return roads_features(plate[None], scaled, marks)[0]
    codes = np.rint(plate * 3.0 if scaled else plate).astype(np.int64)
    if codes.size and (codes.min() < 0 or codes.max() > 3):
        raise ValueError(
            f"bead_plate holds {codes.min()}..{codes.max()}; allowed: 0 (none), 1 banker, 2 player, 3 tie"
        )
    tracker = roads.RoadTracker(len(codes), memory=marks)
    for column in range(codes.shape[1] - 1, -1, -1):  # oldest first; 0 (none yet) records nothing
        tracker.record(codes[:, column] - 1)
    n = len(codes)
    return np.concatenate([tracker.history.reshape(n, -1), tracker.ask().reshape(n, -1)], axis=1).astype(
        np.float32
    )


__all__ = ["MARKS", "SIZE", "roads_features"]
