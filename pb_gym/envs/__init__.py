"""Gymnasium environments of pb_gym.

Importing :mod:`pb_gym` registers ``pb_gym/PuntoBanco-v0``: ``gymnasium.make("pb_gym/PuntoBanco-v0",
**kwargs)`` builds the single-table :class:`PuntoBancoEnv`, and ``gymnasium.make_vec(
"pb_gym/PuntoBanco-v0", num_envs=N, **kwargs)`` the native :class:`PuntoBancoVectorEnv` (N tables
stepped by one engine call). Episodes last ``max_episode_steps`` hands (registered: 100; Gymnasium's
``TimeLimit`` for ``make``, the vector env's own counter for ``make_vec``). The stable-baselines3 adapter
lives above the core, in :mod:`pb_gym.agents.sb3_vec_env` (the core never imports torch).

Registering needs only Gymnasium: the env classes load on first use.

The game itself -- the stake rules, the deal, settlement, the bead plate, the episode ends -- is the
table session's (:mod:`pb_gym.session`); the single environment (:mod:`pb_gym.envs.punto_banco`) and
the native vector environment (:mod:`pb_gym.envs.vector`) are shells around a one-seat session of 1
or N tables. What only an environment needs is written once over batches of tables (row ``t`` of
every array is table ``t``), one job a module; import each under its own name
(``from pb_gym.envs import tables, stepping``):

* :mod:`pb_gym.envs.config`: :class:`~pb_gym.envs.config.EnvConfig`, the one configuration of both
  environments (rules, money, limits, episode ends, action and observation options), validated on
  construction; its units.
* :mod:`pb_gym.envs.spaces`: :func:`~pb_gym.envs.spaces.observation_space` /
  :func:`~pb_gym.envs.spaces.action_space`, the spaces of ONE table.
* :mod:`pb_gym.envs.tables`: :class:`~pb_gym.envs.tables.Tables`, the env's view of its session table
  by table (:func:`~pb_gym.envs.tables.new_tables`, :func:`~pb_gym.envs.tables.reset_tables`);
  :func:`~pb_gym.envs.tables.limits` turns a config into the session's :class:`~pb_gym.session.Limits`
  (in betting units).
* :mod:`pb_gym.envs.actions`: actions -> requested stakes
  (:func:`~pb_gym.envs.actions.requested_stakes`: step 1 of the stake rules, written out there; the
  session applies steps 2-4) and :func:`~pb_gym.envs.actions.action_masks` for MaskablePPO.
* :mod:`pb_gym.envs.stepping`: one hand at every table, :func:`~pb_gym.envs.stepping.step` over a
  :class:`~pb_gym.envs.stepping.StepState` that holds its arguments: the single env's one table and a
  batch go through it alike.
* :mod:`pb_gym.envs.observation`: :func:`~pb_gym.envs.observation.observe`, THE observation of a seat
  of a session, as an env configured by an :class:`~pb_gym.envs.config.EnvConfig` shows it (the envs'
  steps write theirs with the same row function; ``pb-gym evaluate`` reads a learned policy's with
  it); :func:`~pb_gym.envs.observation.hand_info` the batched infos.
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
