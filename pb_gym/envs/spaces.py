"""The spaces of ONE table of an environment configured by an :class:`~pb_gym.envs.config.EnvConfig`."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pb_gym import rules as R
from pb_gym.envs.config import LAST_HAND_HIGH, EnvConfig, leak_bounds


def _field_bounds(cfg: EnvConfig, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Raw-unit bounds of one field (the bankroll, and the episode hands without ``max_hands``, have
    none: ``inf``)."""
    size = cfg.obs_sizes[key]
    high = {
        "bankroll": np.full(1, np.inf),
        "bead_plate": np.full(size, 3.0),
        "cards_left": np.full(1, float(cfg.rules.n_cards)),
        "hands": np.array(
            [np.inf if cfg.max_hands is None else float(cfg.max_hands), cfg.rules.n_cards / 4.0]
        ),
        "last_hand": LAST_HAND_HIGH,
        "leak": np.array(leak_bounds(cfg)),
        "shoe": np.full(R.N_RANKS, float(R.CARDS_PER_RANK_PER_DECK * cfg.rules.decks)),
    }[key]
    return np.zeros(size, dtype=np.float32), high.astype(np.float32)


def observation_space(cfg: EnvConfig) -> spaces.Dict | spaces.Box:
    """The observation space of one table: one float32 Box (``observation="flat"``, fields in
    :data:`OBS_KEYS` order at ``cfg.obs_offsets``) or a Dict of float32 Boxes. With ``obs_scale=
    "scaled"`` the bounds are the raw ones times :attr:`EnvConfig.obs_factors` (every bounded
    feature in [0, 1]; the unbounded ones, the bankroll and the episode hands without ``max_hands``,
    keep ``inf``)."""
    bounds = {k: _field_bounds(cfg, k) for k in cfg.obs_keys}
    factors = cfg.obs_factors
    if factors is not None:
        scaled = {}
        for key, (lo, hi) in bounds.items():
            a, b = cfg.obs_offsets[key]
            scaled[key] = (lo, np.where(np.isinf(hi), hi, hi * factors[a:b]).astype(np.float32))
        bounds = scaled
    if cfg.flat:
        low = np.concatenate([b[0] for b in bounds.values()])
        high = np.concatenate([b[1] for b in bounds.values()])
        return spaces.Box(low, high, dtype=np.float32)
    return spaces.Dict({k: spaces.Box(lo, hi, dtype=np.float32) for k, (lo, hi) in bounds.items()})


def action_space(cfg: EnvConfig) -> spaces.Space:
    """The action space of one table (see :data:`ACTION_MODES`)."""
    if cfg.action_mode == "multidiscrete":
        return spaces.MultiDiscrete([len(cfg.bet_choices), len(cfg.stake_levels)])
    if cfg.action_mode == "discrete":
        return spaces.Discrete(cfg.n_actions)
    return spaces.Box(0.0, 1.0, shape=(len(cfg.bets.offered),), dtype=np.float32)
