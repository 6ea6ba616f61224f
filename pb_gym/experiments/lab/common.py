"""What the lab's lessons share: the table's rules, the default seed, the checks of their inputs.

Each check raises a ValueError that names the field and the allowed values, as the rest of pb-gym
does; the web page bounds its widgets to the same ranges, so a bad value cannot be entered there.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from pb_gym import rules as R

DEFAULT_SEED = 15
"""The seed of a repeatable demonstration (the page's seed after a reset): with it, lesson 2's default 1,000
sessions land within one standard error of the exact value (other seeds show the spread)."""
MAX_SEED = 999_999
"""The largest seed the page offers (any integer >= 0 works in Python)."""
MAX_SESSIONS = 1000
"""The most simulated sessions a lesson deals at once."""


@functools.lru_cache(maxsize=8)
def lab_rules(decks: int) -> R.Rules:
    """The table of every lesson: the standard rules (banker pays 19:20, tie 8:1, burn, cut card
    14 cards from the end) with ``decks`` decks."""
    return R.Rules(decks=int(decks))


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(field: str, value: object, low: int, high: int | None) -> None:
    """Raise a ValueError naming ``field`` unless ``value`` is an integer in ``low .. high`` (no upper
    bound when ``high`` is None)."""
    if not _is_int(value) or value < low or (high is not None and value > high):  # type: ignore[operator]
        allowed = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        raise ValueError(f"{field}={value!r} is not allowed; allowed: {allowed}")


def check_choice(field: str, value: object, allowed: Sequence[object], note: str = "") -> None:
    """Raise a ValueError naming ``field`` unless ``value`` is one of ``allowed`` (the message lists
    them, then ``note``)."""
    if value not in allowed:
        raise ValueError(f"{field}={value!r} is not allowed; allowed: {', '.join(map(str, allowed))}{note}")


def running_share(success: np.ndarray) -> np.ndarray:
    """The share of successes among the first ``k`` sessions, for every ``k`` (index ``k - 1``)."""
    success = np.asarray(success, dtype=bool)
    return np.cumsum(success) / np.arange(1, success.size + 1)


__all__ = [
    "DEFAULT_SEED",
    "MAX_SEED",
    "MAX_SESSIONS",
    "lab_rules",
    "check_int",
    "check_choice",
    "running_share",
]
