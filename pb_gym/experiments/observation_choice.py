"""Deprecated name of :mod:`pb_gym.experiments.train.observation_choice` (kept for one release)."""

import warnings

from pb_gym.experiments.train.observation_choice import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.observation_choice is now pb_gym.experiments.train.observation_choice; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
