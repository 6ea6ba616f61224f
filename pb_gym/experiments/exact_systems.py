"""Deprecated name of :mod:`pb_gym.experiments.evaluate.exact_chain` (kept for one release)."""

import warnings

from pb_gym.experiments.evaluate.exact_chain import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.exact_systems is now pb_gym.experiments.evaluate.exact_chain; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
