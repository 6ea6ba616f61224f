"""Gymnasium environments of pb_gym.

Importing :mod:`pb_gym` registers ``pb_gym/PuntoBanco-v0``: ``gymnasium.make("pb_gym/PuntoBanco-v0",
**kwargs)`` builds the single-table :class:`PuntoBancoEnv`, and ``gymnasium.make_vec(
"pb_gym/PuntoBanco-v0", num_envs=N, **kwargs)`` the native :class:`PuntoBancoVectorEnv` (N tables
stepped by one engine call). The stable-baselines3 adapter lives outside the core package, in
:mod:`agents.sb3_vec_env` (the core never imports torch).
"""

import gymnasium

from pb_gym.envs.punto_banco import PuntoBancoEnv
from pb_gym.envs.vector import PuntoBancoVectorEnv

ENV_ID = "pb_gym/PuntoBanco-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(
        id=ENV_ID,
        entry_point="pb_gym.envs.punto_banco:PuntoBancoEnv",
        vector_entry_point="pb_gym.envs.vector:PuntoBancoVectorEnv",
    )

__all__ = ["ENV_ID", "PuntoBancoEnv", "PuntoBancoVectorEnv"]
