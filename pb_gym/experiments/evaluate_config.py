"""Deprecated name of :mod:`pb_gym.experiments.evaluate.settings` (kept for one release)."""

import warnings

from pb_gym.experiments.evaluate.settings import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.evaluate_config is now pb_gym.experiments.evaluate.settings; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
