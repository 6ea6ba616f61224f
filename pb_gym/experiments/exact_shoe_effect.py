"""Deprecated name of :mod:`pb_gym.experiments.evaluate.shoe_effect` (kept for one release)."""

import warnings

from pb_gym.experiments.evaluate.shoe_effect import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.exact_shoe_effect is now pb_gym.experiments.evaluate.shoe_effect; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
