"""Deprecated name of :mod:`pb_gym.experiments.common.plotting` (kept for one release)."""

import warnings

from pb_gym.experiments.common.plotting import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.plotting is now pb_gym.experiments.common.plotting; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
