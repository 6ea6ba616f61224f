"""Deprecated name of :mod:`pb_gym.experiments.benchmark.regret_table` (kept for one release)."""

import warnings

from pb_gym.experiments.benchmark.regret_table import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.regret_table is now pb_gym.experiments.benchmark.regret_table; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
