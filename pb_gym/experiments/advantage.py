"""Deprecated name of :mod:`pb_gym.experiments.counting.advantage` (kept for one release)."""

from pb_gym.experiments import warn_moved
from pb_gym.experiments.counting.advantage import *  # noqa: F403

warn_moved(__name__, "pb_gym.experiments.counting.advantage")
