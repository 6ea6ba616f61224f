"""Deprecated name of :mod:`pb_gym.experiments.common.scale` (kept for one release)."""

import warnings

from pb_gym.experiments.common.scale import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.scale is now pb_gym.experiments.common.scale; the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
