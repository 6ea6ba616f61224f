"""The observation transforms of a learned policy: what it sees of the environment's observation.

A train config's ``obs_transform`` (one of :data:`OBS_TRANSFORMS`) is applied on top of the
environment's observation, in training (:func:`obs_transform_wrapper`) as when the saved model plays
(:class:`pb_gym.agents.learned.Sb3Policy`); :func:`transformed_space` is the observation space it
gives. :mod:`pb_gym.agents.learned` exports these names too.
"""

from __future__ import annotations

import functools

import numpy as np

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.agents import roads_features
from pb_gym.envs import config

OBS_TRANSFORMS: tuple[str, ...] = ("none", "composition", "counts", "shoe_only", "roads")
"""The observation transforms (:func:`transform_obs`), the ``obs_transform`` of a train config."""
SHOE_ONLY_KEYS: tuple[str, ...] = ("shoe", "cards_left")
"""What ``shoe_only`` keeps: the composition of the unseen cards, and how many there are."""


def sees_hand_counters(obs_transform: str) -> bool:
    """Whether a policy under ``obs_transform`` sees the bankroll and hand counters, which leave their
    training range over sessions longer than its training episodes (``shoe_only`` drops them)."""
    return obs_transform != "shoe_only"


COUNTED_BETS: tuple[str, ...] = ("dragon7", "panda8", "tie")
"""The bets whose linear (effect-of-removal) EV estimate the ``counts`` transform adds (the pairs have
none: every effect of removal of a pair bet is zero)."""


@functools.cache
def _full_fraction(decks: int) -> np.ndarray:
    """Each rank's share of a full shoe of ``decks`` decks, float32."""
    full = R.full_shoe(decks).astype(np.float32)
    return full / full.sum()


@functools.cache
def _linear_ev_model(rules: R.Rules) -> tuple[np.ndarray, np.ndarray]:
    """Full-shoe EV ``(k,)`` and effects of removal ``(13, k)`` of :data:`COUNTED_BETS`, from the exact
    calculator: the linear estimate EV(c) ~ EV(full) + sum_r EoR_r x removed_r x N_full / N_unseen."""
    full = R.full_shoe(rules.decks)
    columns = [R.BETS.index(b) for b in COUNTED_BETS]
    ev_full = exact.expected_values(full, rules)[columns]
    removed = full[None, :] - np.eye(R.N_RANKS, dtype=np.int64)
    return ev_full, exact.expected_values(removed, rules)[:, columns] - ev_full[None, :]


def transform_obs(kind: str, obs: dict[str, np.ndarray], cfg: config.EnvConfig) -> dict[str, np.ndarray]:
    """Observation transform applied on top of the environment's observation (training and replay).

    ``none``: unchanged. ``composition``: the ``shoe`` counts become the deviation of each rank's share
    of the unseen cards from its share in a full shoe, in percent (a depletion-free view of the shoe's
    composition; the counts' scale shrinks with the cards left, these do not). ``counts``: the same,
    plus ``count``: a card counter's linear estimate of the EV (in %) of each of :data:`COUNTED_BETS`
    from the cards seen (effects of removal from the exact calculator, scaled by the cards unseen), the
    feature a human counter would hand the agent. ``shoe_only``: ``composition``'s ``shoe`` and
    ``cards_left``, nothing else (no bankroll, hand counters or bead plate): what a counter sizes a bet
    from, and nothing that drifts over a session longer than a training episode. ``roads``: the bead
    plate replaced by the roads drawn from it (``roads``: :func:`agents.roads_features.roads_features`,
    the entries of :class:`pb_gym.envs.roads_observation.RoadsObservation`; give the env a ``history``
    as long as a shoe), the other fields unchanged.
    """
    if kind not in OBS_TRANSFORMS:
        raise ValueError(f"obs_transform={kind!r} is not allowed; allowed: {', '.join(OBS_TRANSFORMS)}")
    if kind == "roads":  # the bead plate becomes the roads (agents.roads_features)
        out = {key: value for key, value in obs.items() if key != "bead_plate"}
        out["roads"] = roads_features.roads_features(obs["bead_plate"], cfg.obs_scale == "scaled")
        return out
    if kind == "none" or "shoe" not in obs:
        return obs
    full = _full_fraction(cfg.rules.decks)
    shoe = obs["shoe"].astype(np.float32)
    total = np.maximum(shoe.sum(axis=-1, keepdims=True), 1.0)
    out = dict(obs)
    out["shoe"] = (100.0 * (shoe / total - full)).astype(np.float32)
    if kind == "counts":
        ev_full, eor = _linear_ev_model(cfg.rules)
        removed = R.full_shoe(cfg.rules.decks).astype(np.float64) - obs["shoe"]
        scale = cfg.rules.n_cards / total.astype(np.float64)
        out["count"] = (100.0 * (ev_full + (removed @ eor) * scale)).astype(np.float32)
    if kind == "shoe_only":
        out = {key: out[key] for key in SHOE_ONLY_KEYS}
    return out


def transformed_space(kind: str, space):
    """The observation space after :func:`transform_obs`."""
    from gymnasium import spaces

    if kind == "roads" and isinstance(space, spaces.Dict):
        boxes = {key: box for key, box in space.spaces.items() if key != "bead_plate"}
        return spaces.Dict(
            {**boxes, "roads": spaces.Box(-1.0, 1.0, shape=(roads_features.SIZE,), dtype=np.float32)}
        )
    if kind == "none" or not isinstance(space, spaces.Dict) or "shoe" not in space.spaces:
        return space
    boxes = dict(space.spaces)
    boxes["shoe"] = spaces.Box(-100.0, 100.0, shape=boxes["shoe"].shape, dtype=np.float32)
    if kind == "counts":
        boxes["count"] = spaces.Box(-1000.0, 1000.0, shape=(len(COUNTED_BETS),), dtype=np.float32)
    if kind == "shoe_only":
        boxes = {key: boxes[key] for key in SHOE_ONLY_KEYS}
    return spaces.Dict(boxes)


def obs_transform_wrapper(venv, kind: str, cfg: config.EnvConfig):
    """A ``VecEnvWrapper`` applying :func:`transform_obs` (``venv`` unchanged for ``none``)."""
    if kind == "none":
        return venv
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class ObsTransform(VecEnvWrapper):
        def __init__(self, inner):
            super().__init__(inner, observation_space=transformed_space(kind, inner.observation_space))

        def reset(self):
            return transform_obs(kind, self.venv.reset(), cfg)

        def step_wait(self):
            obs, rewards, dones, infos = self.venv.step_wait()
            for info in infos:
                if "terminal_observation" in info:
                    info["terminal_observation"] = transform_obs(kind, info["terminal_observation"], cfg)
            return transform_obs(kind, obs, cfg), rewards, dones, infos

    return ObsTransform(venv)
