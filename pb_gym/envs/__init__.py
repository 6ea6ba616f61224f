"""Gymnasium environments of pb_gym.

Importing :mod:`pb_gym` registers ``pb_gym/PuntoBanco-v0``: ``gymnasium.make("pb_gym/PuntoBanco-v0",
**kwargs)`` builds the single-table :class:`PuntoBancoEnv`, and ``gymnasium.make_vec(
"pb_gym/PuntoBanco-v0", num_envs=N, **kwargs)`` the native :class:`PuntoBancoVectorEnv` (N tables
stepped by one engine call). Episodes last ``max_episode_steps`` hands (registered: 100; Gymnasium's
``TimeLimit`` for ``make``, the vector env's own counter for ``make_vec``). The stable-baselines3 adapter
lives above the core, in :mod:`pb_gym.agents.sb3_vec_env` (the core never imports torch).

Registering needs only Gymnasium: the env classes load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium

if TYPE_CHECKING:
    from pb_gym.envs.punto_banco import PuntoBancoEnv
    from pb_gym.envs.vector import PuntoBancoVectorEnv

ENV_ID = "pb_gym/PuntoBanco-v0"
MAX_EPISODE_STEPS = 100
"""The registered episode length (hands): ``gymnasium.make`` wraps the env in ``TimeLimit`` with it (or
with its ``max_episode_steps=`` argument), ``make_vec`` passes it to the vector env."""

if ENV_ID not in gymnasium.registry:
    gymnasium.register(
        id=ENV_ID,
        entry_point="pb_gym.envs.punto_banco:PuntoBancoEnv",
        vector_entry_point="pb_gym.envs.vector:PuntoBancoVectorEnv",
        # Gymnasium's own mechanism sets the episode length: TimeLimit(max_episode_steps), so that
        # spec.max_episode_steps is the truth and make(..., max_episode_steps=N) works; the env's own
        # hand limit is off (max_hands=None) unless the caller passes one (then the first limit
        # reached truncates).
        max_episode_steps=MAX_EPISODE_STEPS,
        kwargs={"max_hands": None},
    )

import pb_gym.envs.tasks  # noqa: E402, F401  (registers the benchmark's tasks: pb_gym/Discover-v0, ...)

__all__ = ["ENV_ID", "MAX_EPISODE_STEPS", "PuntoBancoEnv", "PuntoBancoVectorEnv"]


def __getattr__(name: str) -> Any:
    value: Any
    # written out (not importlib) so that the import contracts see them
    if name == "PuntoBancoEnv":
        from pb_gym.envs.punto_banco import PuntoBancoEnv as value
    elif name == "PuntoBancoVectorEnv":
        from pb_gym.envs.vector import PuntoBancoVectorEnv as value
    else:
        raise AttributeError(f"module 'pb_gym.envs' has no attribute {name!r}")
    globals()[name] = value
    return value
