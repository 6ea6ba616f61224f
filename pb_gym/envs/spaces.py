"""The spaces of ONE table of an environment configured by an :class:`~pb_gym.envs.config.EnvConfig`."""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

from pb_gym.envs.config import EnvConfig


def episode_hands_high(cfg: EnvConfig) -> float:
    """The most hands an episode of ``cfg`` can deal: ``max_hands``, and with ``one_shoe`` the most a
    shoe can deal (``n_cards / 4``: a hand takes at least 4 cards), whichever is smaller; ``inf``
    without either (``gymnasium.make`` passes ``max_hands=None``: only its ``TimeLimit``, outside the
    env, ends such an episode)."""
    limits = [math.inf]
    if cfg.max_hands is not None:
        limits.append(float(cfg.max_hands))
    if cfg.one_shoe:
        limits.append(cfg.rules.n_cards / 4.0)
    return min(limits)


def bankroll_high(cfg: EnvConfig) -> float:
    """The most the bankroll (units) can reach in an episode of ``cfg``: ``inf`` unless the episode
    has a hand limit (:func:`episode_hands_high`) or a ``win_target``.

    Every hand the bankroll ``b`` grows by at most ``P x S(b)``, ``P`` the largest net win per unit of
    any offered bet and ``S(b)`` the most that can be staked (the session's stake rules): one spot
    (``discrete``, ``multidiscrete``) at the largest stake level, or that fraction of ``b`` with
    ``stake_unit="fraction"``, at most the table maximum; every offered spot (``box``), together at
    most ``b``, each at most the table maximum; the table minimum when a bet is forced. The bound
    follows ``b -> b + P S(b)`` for the episode's hands from the starting bankroll; with a
    ``win_target`` it is at most the target plus one hand's win from it (the episode ends once the
    bankroll reaches the target). A bound that holds, not one a policy can expect to reach: it wins
    the largest payout on every hand."""
    hands = episode_hands_high(cfg)
    start = cfg.bankroll_units
    pays = max(float(cfg.bets.pay_matrix()[:, cfg.bets.column(name)].max()) for name in cfg.bets.offered)
    if pays <= 0.0:
        return start
    table_max, table_min = cfg.table_max / cfg.unit, cfg.table_min / cfg.unit
    forced = 0.0 if cfg.allow_no_bet else table_min
    top = float(max(cfg.stake_levels))
    if cfg.action_mode == "box":
        rate, cap = 1.0, len(cfg.bets.offered) * table_max  # S(b) = max(min(rate b, cap), forced)
    elif cfg.stake_unit == "fraction":
        rate, cap = top, table_max
    else:
        rate, cap = 0.0, max(min(top, table_max), forced)  # a constant stake

    def stake(b: float) -> float:
        return cap if rate == 0.0 else max(min(rate * b, cap), forced)

    limit = math.inf if cfg.win_target is None else cfg.win_target / cfg.unit
    limit = limit + pays * stake(limit) if math.isfinite(limit) else limit
    if math.isinf(hands) and math.isinf(limit):
        return math.inf
    b, done = start, 0.0
    while done < hands and b < limit:
        if rate == 0.0 or rate * b >= cap:  # a constant stake from here on
            b += (hands - done) * pays * stake(b)
            break
        if rate * b <= forced:  # the table minimum until rate x b passes it
            steps = min(max(math.ceil((forced / rate - b) / (pays * forced)), 1), hands - done)
            b, done = b + steps * pays * forced, done + steps
            continue
        b, done = b + pays * rate * b, done + 1
    return min(b, limit)


def _up(high: np.ndarray) -> np.ndarray:
    """``high`` as float32, rounded up (a bound rounded down could fall below the value it bounds)."""
    high = np.asarray(high, dtype=np.float64)
    out = high.astype(np.float32)
    below = out.astype(np.float64) < high
    out[below] = np.nextafter(out[below], np.float32(np.inf))
    return out


def observation_space(cfg: EnvConfig) -> spaces.Dict | spaces.Box:
    """The observation space of one table: one float32 Box (``observation="flat"``, fields in
    :data:`OBS_KEYS` order at ``cfg.obs_offsets``) or a Dict of float32 Boxes. With ``obs_scale=
    "scaled"`` the bounds are the raw ones times :attr:`EnvConfig.obs_factors`: every feature but two
    lies in [0, 1]; the bankroll (1 at the start) up to :func:`bankroll_high` over the starting
    bankroll, the episode hands up to :func:`episode_hands_high` over ``max_hands`` (100 without it),
    each ``inf`` where the episode has no limit that bounds it (:meth:`EnvConfig.field_bounds`)."""
    highs = cfg.field_bounds(bankroll_high(cfg), episode_hands_high(cfg))
    bounds = {k: (np.zeros(len(high), dtype=np.float32), _up(high)) for k, high in highs.items()}
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
