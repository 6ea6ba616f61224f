"""Deprecated name of :mod:`pb_gym.experiments.train.observation_choice` (kept for one release)."""

from pb_gym.experiments import warn_moved
from pb_gym.experiments.train.observation_choice import *  # noqa: F403

warn_moved(__name__, "pb_gym.experiments.train.observation_choice")
