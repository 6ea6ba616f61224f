"""Deprecated name of :mod:`pb_gym.experiments.benchmark.score` (kept for one release)."""

import warnings

from pb_gym.experiments.benchmark.score import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.score is now pb_gym.experiments.benchmark.score; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
