"""Deprecated name of :mod:`pb_gym.experiments.common.stats` (kept for one release)."""

import warnings

from pb_gym.experiments.common.stats import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.stats is now pb_gym.experiments.common.stats; the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
