"""Deprecated name of :mod:`pb_gym.experiments.evaluate.settings` (kept for one release)."""

from pb_gym.experiments import warn_moved
from pb_gym.experiments.evaluate.settings import *  # noqa: F403

warn_moved(__name__, "pb_gym.experiments.evaluate.settings")
