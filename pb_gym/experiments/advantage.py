"""Deprecated name of :mod:`pb_gym.experiments.counting.advantage` (kept for one release)."""

import warnings

from pb_gym.experiments.counting.advantage import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.advantage is now pb_gym.experiments.counting.advantage; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
