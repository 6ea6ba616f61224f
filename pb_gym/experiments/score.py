"""Deprecated name of :mod:`pb_gym.experiments.benchmark.score` (kept for one release)."""

from pb_gym.experiments import warn_moved
from pb_gym.experiments.benchmark.score import *  # noqa: F403

warn_moved(__name__, "pb_gym.experiments.benchmark.score")
