"""Deprecated name of :mod:`pb_gym.experiments.common.yaml_config` (kept for one release)."""

import warnings

from pb_gym.experiments.common.yaml_config import *  # noqa: F403

warnings.warn(
    "pb_gym.experiments.config is now pb_gym.experiments.common.yaml_config; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
