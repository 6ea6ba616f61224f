"""Deprecated name of :mod:`pb_gym.experiments.benchmark.regret_table` (kept for one release)."""

from pb_gym.experiments import warn_moved
from pb_gym.experiments.benchmark.regret_table import *  # noqa: F403

warn_moved(__name__, "pb_gym.experiments.benchmark.regret_table")
