"""The environments' side of the table session: configs, spaces, actions and observations, in one
namespace (``from pb_gym.envs import table as T``) over the files that hold them, one job each.

The game itself -- the stake rules, the deal, settlement, the bead plate, the episode ends -- is the
table session's (:mod:`pb_gym.session`); the single environment (:mod:`pb_gym.envs.punto_banco`) and
the native vector environment (:mod:`pb_gym.envs.vector`) are shells around a one-seat session of 1
or N tables. This module holds what only an environment needs, written once over batches of tables
(row ``t`` of every array is table ``t``):

* :mod:`pb_gym.envs.config`: :class:`EnvConfig`, the one configuration of both environments (rules,
  money, limits, episode ends, action and observation options), validated on construction.
* :mod:`pb_gym.envs.spaces`: :func:`observation_space` / :func:`action_space`, the spaces of ONE table.
* :mod:`pb_gym.envs.tables`: :class:`Tables`, the env's view of its session table by table
  (:func:`new_tables`, :func:`reset_tables`); :func:`limits` turns a config into the session's
  :class:`~pb_gym.session.Limits` (in betting units).
* :mod:`pb_gym.envs.actions`: actions -> requested stakes (:func:`requested_stakes`: step 1 of the
  stake rules below; the session applies steps 2-4) and :func:`action_masks` for MaskablePPO.
* :mod:`pb_gym.envs.stepping`: one hand at every table, :func:`step` over a :class:`StepState`
  that holds its arguments: the single env's one table and a batch go through it alike.
* :mod:`pb_gym.envs.observation`: :func:`observe`, THE observation of a seat of a session, as an env
  configured by an :class:`EnvConfig` shows it (the envs' steps write theirs with the same row
  function; ``pb-gym evaluate`` reads a learned policy's with it); :func:`hand_info` the batched
  infos.

Units. Money amounts given to the environment (``bankroll``, ``table_min``, ``table_max``,
``win_target``) are in money; ``unit`` is the betting unit in money. Inside, and in everything the
environment returns (observation, reward, stakes in ``info``), amounts are in **betting units**
(money / ``unit``).

Stake rules (:func:`pb_gym.session.place_rows`; applied to every table every hand, in this order):

1. The requested stake of each bet spot, in units: a stake level (``stake_unit="units"``: the level in
   units; ``"fraction"``: the level times the current bankroll) for the discrete modes; for the ``box``
   mode ``a * min(bankroll, table_max)`` where ``a`` is the action entry clipped to ``[0, 1]`` (NaN = 0).
2. Each spot's stake is capped at the table maximum and at the bankroll.
3. If the stakes of several spots (box mode) add up to more than the bankroll they are scaled down in
   proportion so that they add up to the bankroll.
4. A spot whose stake is below the table minimum is not placed (stake 0). When betting is forced
   (``allow_no_bet=False``) and nothing would be placed, the table minimum is placed instead on the
   chosen spot (box mode: the spot with the largest action entry, banker on ties); the bankroll always
   covers it, since an episode ends (ruin) as soon as the bankroll falls below the table minimum.
"""

from __future__ import annotations

from pb_gym.envs.actions import (
    BOX,
    DISCRETE,
    MULTIDISCRETE,
    action_array,
    action_masks,
    bad_action,
    decode_actions,
    decode_rows,
    decode_struct,
    requested_stakes,
)
from pb_gym.envs.config import (
    ACTION_MODES,
    DEFAULT_STAKE_LEVELS,
    HANDS_SCALE,
    LAST_HAND_HIGH,
    LEGACY_DEFAULTS,
    LOG_GROWTH_FLOOR,
    OBS_KEYS,
    OBS_SCALES,
    OBSERVATIONS,
    REWARDS,
    RULE_FIELDS,
    STAKE_UNITS,
    EnvConfig,
    bad,
    is_number,
    make_config,
    upgrade_record,
)
from pb_gym.envs.observation import (
    HAND_INFO_KEYS,
    OBS_MIN_TABLES,
    composition_before_hand,
    ev_before_hand,
    exact_reward,
    hand_info,
    info_dict,
    log_growth_before_hand,
    obs_rows,
    obs_struct,
    observe,
    split_obs,
    write_obs,
)
from pb_gym.envs.spaces import action_space, observation_space
from pb_gym.envs.stepping import (
    STEP_MIN_TABLES,
    StepState,
    hand_outcome,
    restart_all,
    step,
    step_state,
)
from pb_gym.envs.tables import (
    Tables,
    after_hand,
    check_batch,
    limits,
    limits_struct,
    new_tables,
    record_hand,
    reset_tables,
    table_bytes,
)

__all__ = [
    "ACTION_MODES",
    "BOX",
    "DEFAULT_STAKE_LEVELS",
    "DISCRETE",
    "EnvConfig",
    "HANDS_SCALE",
    "HAND_INFO_KEYS",
    "LAST_HAND_HIGH",
    "LEGACY_DEFAULTS",
    "LOG_GROWTH_FLOOR",
    "MULTIDISCRETE",
    "OBSERVATIONS",
    "OBS_KEYS",
    "OBS_MIN_TABLES",
    "OBS_SCALES",
    "REWARDS",
    "RULE_FIELDS",
    "STAKE_UNITS",
    "STEP_MIN_TABLES",
    "StepState",
    "Tables",
    "after_hand",
    "action_array",
    "action_masks",
    "action_space",
    "bad",
    "bad_action",
    "check_batch",
    "composition_before_hand",
    "decode_actions",
    "decode_rows",
    "decode_struct",
    "ev_before_hand",
    "exact_reward",
    "hand_info",
    "info_dict",
    "hand_outcome",
    "is_number",
    "limits",
    "limits_struct",
    "log_growth_before_hand",
    "make_config",
    "new_tables",
    "obs_rows",
    "obs_struct",
    "observation_space",
    "observe",
    "record_hand",
    "requested_stakes",
    "reset_tables",
    "restart_all",
    "split_obs",
    "step",
    "step_state",
    "table_bytes",
    "upgrade_record",
    "write_obs",
]
