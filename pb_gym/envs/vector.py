"""The native vector form of :class:`~pb_gym.envs.punto_banco.PuntoBancoEnv`: N tables stepped together
with ONE engine call per step (no Python loop over tables).

``gymnasium.make_vec("pb_gym/PuntoBanco-v0", num_envs=N, **kwargs)`` returns this class (add
``autoreset_mode="SameStep"`` or ``AutoresetMode.SAME_STEP`` for the mode below; ``vectorization_mode=
"sync"`` / ``"async"`` gives Gymnasium's Sync/AsyncVectorEnv of single envs instead). Table ``i`` of
``reset(seed=s)`` is seeded with ``s + i`` and deals exactly the hands of a single environment reset with
``seed=s + i`` and given the same actions (the parity test checks it).

Autoreset (``autoreset_mode``, also in ``metadata["autoreset_mode"]``):

* ``NEXT_STEP`` (default, as Gymnasium's own vector envs): the step after a table's episode ended resets
  it (its action is ignored, reward 0, not terminated/truncated) and returns its first observation.
* ``SAME_STEP``: an ending table is reset in the same step; the returned observation is the new
  episode's first, and ``info["final_obs"]`` (object array, one observation per table, None where the
  episode did not end), ``info["final_info"]`` (batched) with masks ``info["_final_obs"]``,
  ``info["_final_info"]`` hold the end of the episode. The stable-baselines3 adapter uses this mode.
* ``DISABLED``: no autoreset; reset tables with ``reset(options={"reset_mask": mask})``.

Observations, rewards, flags and infos are new arrays on every call (nothing returned is reused).
Infos are minimal by default (``hand_info=False``: empty, or ``ev`` with ``info_ev``); with
``hand_info=True`` they hold the per-hand keys of the single env as batched arrays with ``_key`` masks.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from pb_gym import memory
from pb_gym.envs import actions as env_actions
from pb_gym.envs import observation, spaces, stepping
from pb_gym.envs import render as _render
from pb_gym.envs import tables as env_tables
from pb_gym.envs.config import EnvConfig, bad
from pb_gym.envs.keywords import env_config, with_config_keywords

_MODES = {m.value: m for m in AutoresetMode}
_FIXED = frozenset(
    (
        "config",
        "tables",
        "num_envs",
        "observation_space",
        "action_space",
        "single_observation_space",
        "single_action_space",
    )
)


def _same(a: object, b: object) -> bool:
    try:
        return bool(np.all(a == b))
    except Exception:  # values that do not compare
        return False


def _seed_int(value: object) -> bool:
    """``value`` is an int (not a bool, not a float or a string) a table's seed can be: 0 .. 2**63 - 1."""
    return (
        isinstance(value, (int, np.integer))
        and not isinstance(value, (bool, np.bool_))
        and 0 <= int(value) < 2**63
    )


def vector_options(num_envs: object, autoreset_mode: object) -> tuple[int, AutoresetMode]:
    """``num_envs`` (an integer >= 1) and ``autoreset_mode`` (an ``AutoresetMode`` or its value) of a
    native vector env, checked."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise bad("num_envs", num_envs, "an integer >= 1")
    if isinstance(autoreset_mode, str) and autoreset_mode in _MODES:
        autoreset_mode = _MODES[autoreset_mode]
    if not isinstance(autoreset_mode, AutoresetMode):
        raise bad("autoreset_mode", autoreset_mode, ", ".join(_MODES))
    return int(num_envs), autoreset_mode


class PerTableAccess:
    """Gymnasium's vector-env attribute access (``call``, ``get_attr``) of a native vector env of
    ``num_envs`` tables: one entry per table."""

    num_envs: int

    def _per_table(self, value: Any) -> tuple:
        """A value as one entry per table: an array whose first axis is the tables, split; any other
        value (the tables share one configuration) repeated."""
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == self.num_envs:
            return tuple(value)
        return (value,) * self.num_envs

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """As Gymnasium's ``SyncVectorEnv.call``: the attribute ``name`` of the env (called with
        ``args`` / ``kwargs`` if it is a method), one entry per table: ``call("action_masks")`` is
        each table's mask, ``call("bet_choices")`` the same tuple N times."""
        value = getattr(self, name)
        if callable(value):
            value = value(*args, **kwargs)
        return self._per_table(value)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """As Gymnasium's ``SyncVectorEnv.get_attr``: the attribute ``name``, one entry per table
        (``get_attr("bankroll")``: each table's bankroll in units; ``get_attr("config")``: the shared
        configuration N times)."""
        return self._per_table(getattr(self, name))


class PuntoBancoVectorEnv(PerTableAccess, VectorEnv):
    """N Punto Banco tables (see :mod:`pb_gym.envs.punto_banco` for spaces, rewards and arguments).

    The keyword-only arguments after ``render_mode`` are the table's configuration, as for the single
    environment (``config``, one :class:`pb_gym.envs.config.EnvConfig`, or its fields: the same config
    builds either env); ``hand_info`` defaults to False here.

    Args:
        num_envs: number of tables N.
        autoreset_mode: ``AutoresetMode`` (or its value): NEXT_STEP (default), SAME_STEP or DISABLED.
        max_episode_steps: hands per episode (truncation). ``gymnasium.make_vec`` passes the registered
            100 (or its own ``max_episode_steps=`` argument) and ``max_hands=None``, as ``make`` does for
            the single env; given both, the smaller applies. Directly built, the default None leaves
            ``max_hands`` (default 100) as the limit.
        render_mode: None, ``"human"`` (every table printed to stdout after each reset and step),
            ``"ansi"`` or ``"rgb_array"``; ``render()`` returns one frame per table.
    """

    metadata = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "render_fps": 2,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    @with_config_keywords({"hand_info": False})
    def __init__(
        self,
        num_envs: int = 1,
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        config: EnvConfig | None = None,
        **options: Any,
    ) -> None:
        num_envs, autoreset_mode = vector_options(num_envs, autoreset_mode)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise bad("render_mode", render_mode, "None, " + ", ".join(self.metadata["render_modes"]))
        if max_episode_steps is not None and (
            isinstance(max_episode_steps, bool)
            or not isinstance(max_episode_steps, (int, np.integer))
            or max_episode_steps < 1
        ):
            raise bad("max_episode_steps", max_episode_steps, "None or an integer >= 1")
        self.config = env_config(config, options, {"hand_info": False})
        memory.require(
            int(num_envs) * env_tables.table_bytes(self.config),
            f"PuntoBancoVectorEnv(num_envs={int(num_envs):,})",
            "use fewer num_envs",
        )
        limits = [x for x in (self.config.max_hands, max_episode_steps) if x is not None]
        self.max_hands = min(limits) if limits else None
        self.num_envs = int(num_envs)
        self.autoreset_mode = autoreset_mode
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        self.render_mode = render_mode
        self.single_observation_space = spaces.observation_space(self.config)
        self.single_action_space = spaces.action_space(self.config)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.tables = env_tables.new_tables(self.config, self.num_envs, seed=np.arange(self.num_envs))
        self._autoreset = np.zeros(self.num_envs, dtype=np.bool_)
        self._seeded = False
        # the step's buffers (actions, tables that play) and its compiled arguments (stepping.StepState),
        # rebuilt when an array of the session has been replaced
        n = self.num_envs
        self._ints = np.zeros((n, 2 if self.config.action_mode == "multidiscrete" else 1), dtype=np.int64)
        self._floats = np.zeros((n, len(self.config.bets.offered)), dtype=np.float64)
        self._active = np.ones(n, dtype=np.bool_)
        self._step_state: stepping.StepState | None = None
        self._generation = -1  # self.tables.session.version when it was built

    def __getstate__(self) -> dict[str, Any]:
        """Copies and pickles leave the compiled step state behind (it is rebuilt on the next step)."""
        state = self.__dict__.copy()
        state["_step_state"], state["_generation"] = None, -1
        return state

    def _state(self) -> stepping.StepState:
        state = self._step_state
        if state is None or self._generation != self.tables.session.version:
            state = self._step_state = stepping.step_state(
                self.config, self.tables, self._ints, self._floats, self._active, self.max_hands
            )
            self._generation = self.tables.session.version
        return state

    @property
    def bet_choices(self) -> tuple[str, ...]:
        return self.config.bet_choices

    @property
    def bankroll(self) -> np.ndarray:
        """Current bankroll of each table, in units (a copy)."""
        return self.tables.bankroll.copy()

    # ---- reset ----------------------------------------------------------------------------------
    def _table_seeds(self, seed: int | Sequence[int | None] | None, n: int) -> list | None:
        if seed is None:
            if self._seeded:
                return None
            return [int(s) for s in self.np_random.integers(0, 2**63 - 1, size=n)]
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            if not (_seed_int(seed) and _seed_int(int(seed) + n - 1)):
                raise ValueError(f"seed={seed!r} is not allowed; allowed: an int from 0 to 2**63 - {n}")
            return [int(seed) + i for i in range(n)]
        allowed = (
            f"an int from 0 to 2**63 - {n} (table i is seeded seed + i), None, or a list of {n} ints "
            "from 0 to 2**63 - 1 or None (one per table)"
        )
        if isinstance(seed, (str, bytes, bool)) or not isinstance(seed, Sequence | np.ndarray):
            raise ValueError(f"seed={seed!r} is not allowed; allowed: {allowed}")
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"seed must be an int, None or a list of {self.num_envs} ints (one per "
                f"table); got {len(seeds)} values"
            )
        for i, s in enumerate(seeds):
            if s is not None and not _seed_int(s):
                raise ValueError(f"seed[{i}]={s!r} is not allowed; allowed: {allowed}")
        return [None if s is None else int(s) for s in seeds]

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start new episodes (a fresh shoe and the starting bankroll) at every table, or at the tables
        of ``options["reset_mask"]``. ``seed=s`` seeds table ``i`` with ``s + i``; a list gives one seed
        per table (None: continue that table's random stream)."""
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"options={options!r} is not allowed; allowed: None or a dict (reset_mask)")
        if seed is None:
            super().reset(seed=None)
            seeds = self._table_seeds(None, self.num_envs)
        else:
            seeds = self._table_seeds(seed, self.num_envs)  # checked before anything changes
            if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
                super().reset(seed=int(seed))
        mask = None if options is None else options.get("reset_mask")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(
                    f"options['reset_mask'] must be a bool array of shape "
                    f"({self.num_envs},); got {mask.shape} of {mask.dtype}"
                )
            index = np.flatnonzero(mask)
        else:
            index = np.arange(self.num_envs)
        self._seeded = True
        if seeds is None:
            env_tables.reset_tables(self.config, self.tables, index)
        else:
            picked = [seeds[i] for i in index]
            fixed = np.array([s is not None for s in picked], dtype=bool)
            if fixed.any():
                env_tables.reset_tables(
                    self.config,
                    self.tables,
                    index[fixed],
                    np.array([s for s in picked if s is not None], dtype=np.int64),
                )
            if (~fixed).any():
                env_tables.reset_tables(self.config, self.tables, index[~fixed])
        self._autoreset[index] = False
        if self.render_mode == "human":
            self._print()
        return observation.split_obs(self.config, observation.write_obs(self.config, self.tables)), {}

    # ---- step -----------------------------------------------------------------------------------
    def step(self, actions: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._seeded:  # as the single env (and Gymnasium's OrderEnforcing wrapper) does
            raise ResetNeeded("Cannot call env.step() before calling env.reset()")
        cfg, tables = self.config, self.tables
        mode = self.autoreset_mode
        # tables whose episode ended last step start a new one instead of playing this hand
        resetting = self._autoreset if mode == AutoresetMode.NEXT_STEP and self._autoreset.any() else None
        ints, floats = env_actions.action_array(cfg, actions, self.num_envs)
        if ints.shape[0]:
            self._ints[...] = ints
        else:
            self._floats[...] = floats
        active = self._active
        if resetting is not None:
            np.logical_not(resetting, out=active)
        else:
            active.fill(True)
        flat = np.empty((self.num_envs, cfg.obs_size), dtype=np.float32)  # new every step
        # the tables whose episode ended restart after the actions are checked and before the hand: the
        # hand leaves an inactive table's state as the reset made it (no deal, no records; its stakes,
        # net and flags were zeroed), and each table draws on its own random stream, so the
        # observations after the hand hold the new episodes' first ones (one pass)
        restart = None if resetting is None else functools.partial(self._restart, np.flatnonzero(resetting))
        stepping.step(cfg, self._state(), self._ints, flat, restart)
        reward, terminated, truncated = stepping.hand_outcome(cfg, tables, active)
        return self._finish(flat, reward, terminated, truncated, active)

    def _restart(self, index: np.ndarray) -> stepping.StepState:
        """Autoreset: new episodes at the tables ``index``; the step state to play (rebuilt if the
        reset replaced an array of the session)."""
        env_tables.reset_tables(self.config, self.tables, index)
        return self._state()

    def _finish(
        self,
        flat: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        active: np.ndarray,
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The step's infos and (``SAME_STEP``) the resets of the tables whose episode ended."""
        cfg, tables, mode = self.config, self.tables, self.autoreset_mode
        restarted = None
        info: dict[str, Any] = observation.hand_info(cfg, tables)
        if env_tables.after_hand(cfg, tables, active):  # a continuous shuffler took cards back: observe again
            observation.observe(cfg, tables.session, out=flat, rows=np.flatnonzero(active))
        done = terminated | truncated
        same_step = mode == AutoresetMode.SAME_STEP and done.any()
        if info:
            shown = active & ~done if same_step else active
            for key in list(info):
                info[f"_{key}"] = shown.copy()
        if same_step:
            index = np.flatnonzero(done)
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in index:
                final_obs[i] = observation.split_obs(cfg, flat[i].copy())
            final_info = {k: (v.copy() if not k.startswith("_") else done.copy()) for k, v in info.items()}
            info.update(
                final_obs=final_obs, _final_obs=done.copy(), final_info=final_info, _final_info=done.copy()
            )
            env_tables.reset_tables(cfg, tables, index)
            restarted = index
        if restarted is not None:  # the new episodes' first observations
            observation.observe(cfg, tables.session, out=flat, rows=restarted)
        self._autoreset = done
        if self.render_mode == "human":
            self._print()
        return observation.split_obs(cfg, flat), reward, terminated, truncated, info

    # ---- extras ---------------------------------------------------------------------------------
    def action_masks(self) -> np.ndarray:
        """Valid actions of every table, ``(N, m)`` bool (see :func:`pb_gym.envs.actions.action_masks`)."""
        return env_actions.action_masks(self.config, self.tables.bankroll)

    def _print(self) -> None:
        frames = (_render.render_ansi(self.config, self.tables, t) for t in range(self.num_envs))
        print("\n\n".join(f"table {t}\n{frame}" for t, frame in enumerate(frames)), flush=True)

    # ---- Gymnasium's vector-env attribute access (call, get_attr: PerTableAccess) --------------
    def set_attr(self, name: str, values: Any) -> None:
        """As Gymnasium's ``SyncVectorEnv.set_attr``: ``values`` one per table (a list or tuple of N)
        or one for all. ``bankroll`` sets each table's bankroll (units); any other attribute is shared
        by the tables, so its N values must be equal. The spaces and the configuration cannot be set
        (build a new env)."""
        if isinstance(values, (list, tuple)):
            if len(values) != self.num_envs:
                raise ValueError(
                    f"set_attr({name!r}): values must be one value or a list of {self.num_envs} (one per "
                    f"table); got {len(values)}"
                )
        else:
            values = [values] * self.num_envs
        if name == "bankroll":
            self.tables.bankroll = np.asarray(values, dtype=np.float64)
            return
        if name in _FIXED:
            raise AttributeError(f"set_attr({name!r}): fixed when the env is built; build a new env instead")
        first = values[0]
        if any(v is not first and not _same(v, first) for v in values[1:]):
            raise ValueError(
                f"set_attr({name!r}): the tables share one {name}; give one value "
                f"(or {self.num_envs} equal ones)"
            )
        setattr(self, name, first)

    def render(self) -> tuple | None:
        """One frame per table (text or image, per ``render_mode``; human mode prints them)."""
        if self.render_mode == "human":
            self._print()
            return None
        if self.render_mode == "ansi":
            return tuple(_render.render_ansi(self.config, self.tables, t) for t in range(self.num_envs))
        if self.render_mode == "rgb_array":
            return tuple(_render.render_rgb(self.config, self.tables, t) for t in range(self.num_envs))
        return None
