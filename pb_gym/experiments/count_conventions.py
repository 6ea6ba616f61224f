"""Deprecated name of :mod:`pb_gym.experiments.atlas.conventions` (kept for one release)."""

import warnings

from pb_gym.experiments.atlas.conventions import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.count_conventions is now pb_gym.experiments.atlas.conventions; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
