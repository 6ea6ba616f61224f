"""The session environment's native vector form: N sessions (:mod:`pb_gym.envs.session_env`) stepped by
one call of :class:`~pb_gym.envs.vector.PuntoBancoVectorEnv` per step."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from pb_gym.envs.config import bad
from pb_gym.envs.session_settings import MAIN_BETS, session_settings, step_info, whole_ticks
from pb_gym.envs.vector import PerTableAccess, PuntoBancoVectorEnv, vector_options


class SessionVectorEnv(PerTableAccess, VectorEnv):
    """N sessions stepped together (one call of the native :class:`~pb_gym.envs.vector.PuntoBancoVectorEnv`
    per step); spaces, rewards and illegal actions as :class:`SessionEnv`. Table ``i`` of
    ``reset(seed=s)`` is seeded ``s + i`` and plays as ``SessionEnv`` reset with ``seed=s + i``; a list
    gives one seed per table.

    Autoreset (``autoreset_mode``): ``NEXT_STEP`` (default: the step after a table's episode ended
    resets it, its action ignored, reward 0), ``SAME_STEP`` (an ending table is reset in the same step;
    ``info["final_obs"]`` and ``info["final_info"]`` hold the end) or ``DISABLED`` (an ended table
    ignores its actions, reward 0, until ``reset(options={"reset_mask": mask})``).

    Infos: ``bankroll`` (units), ``hands_left``, ``action_mask`` ``(N, n_actions)``, ``illegal_action``,
    ``illegal_actions``, each with its ``_key`` mask, and ``is_success`` where an episode ended.

    Args:
        num_envs: the tables N.
        autoreset_mode: an ``AutoresetMode`` or its value.
        bankroll, goal, hands, table_max, table_min, bets, decks: as :class:`SessionEnv`.
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        bankroll: int | float | Fraction,
        goal: int | float | Fraction,
        hands: int,
        table_max: int,
        table_min: int = 1,
        bets: Sequence[str] = MAIN_BETS,
        decks: int = 8,
    ) -> None:
        n, autoreset_mode = vector_options(num_envs, autoreset_mode)
        self.settings = s = session_settings(
            bankroll=bankroll,
            goal=goal,
            hands=hands,
            table_max=table_max,
            table_min=table_min,
            bets=bets,
            decks=decks,
        )
        self.num_envs = n
        self.autoreset_mode = autoreset_mode
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        self.single_action_space = spaces.Discrete(s.n_actions)
        self.single_observation_space = spaces.Box(0.0, 1.0, (2,), dtype=np.float32)
        self.action_space = batch_space(self.single_action_space, n)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.tables = PuntoBancoVectorEnv(n, autoreset_mode=AutoresetMode.DISABLED, **s.table_kwargs())
        self._to_table = s.table_actions(self.tables.config)
        self._hands_left = np.full(n, s.hands, dtype=np.int64)
        self._illegal = np.zeros(n, dtype=np.int64)
        self._ended = np.zeros(n, dtype=np.bool_)  # the episode ended and the table was not reset
        self._started = False

    @property
    def bankroll_ticks(self) -> np.ndarray:
        """Each table's bankroll in ticks, exact, ``(N,)`` int64."""
        return whole_ticks(self.tables.tables.bankroll)

    @property
    def hands_left(self) -> np.ndarray:
        """Each table's hands left (a copy)."""
        return self._hands_left.copy()

    def action_masks(self) -> np.ndarray:
        """The legal actions of every table, ``(N, n_actions)`` bool."""
        return self.settings.masks(self.bankroll_ticks)

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """New sessions at every table, or at those of ``options["reset_mask"]``."""
        if seed is not None and isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            super().reset(seed=int(seed))
        self.tables.reset(seed=seed, options=options)
        mask = np.ones(self.num_envs, dtype=np.bool_) if options is None else options.get("reset_mask")
        if mask is None:
            mask = np.ones(self.num_envs, dtype=np.bool_)
        self._restart(np.asarray(mask))
        self._started = True
        ticks = self.bankroll_ticks
        none = np.zeros(self.num_envs, dtype=np.bool_)
        return self.settings.observe(ticks, self._hands_left), self._infos(ticks, none)

    def _restart(self, mask: np.ndarray) -> None:
        self._hands_left[mask] = self.settings.hands
        self._illegal[mask] = 0
        self._ended[mask] = False

    def _infos(
        self,
        ticks: np.ndarray,
        illegal: np.ndarray,
        won: np.ndarray | None = None,
        done: np.ndarray | None = None,
    ) -> dict[str, Any]:
        info = step_info(self.settings, ticks, self._hands_left, illegal, self._illegal)
        for key in list(info):
            info[f"_{key}"] = np.ones(self.num_envs, dtype=np.bool_)
        if won is not None and done is not None and done.any():
            info["is_success"], info["_is_success"] = won.copy(), done.copy()
        return info

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._started:
            raise ResetNeeded("Cannot call env.step() before calling env.reset()")
        s, n = self.settings, self.num_envs
        acts = np.asarray(actions)
        if acts.shape != (n,) or acts.dtype.kind not in "iu" or acts.min() < 0 or acts.max() >= s.n_actions:
            raise bad(
                "actions", actions, f"an integer array of shape ({n},) with values in 0..{s.n_actions - 1}"
            )
        acts = acts.astype(np.int64)
        waiting = self._ended.copy()  # ended before this step: sit out (NEXT_STEP resets them below)
        illegal = (s.stake_ticks[acts] > self.bankroll_ticks) & ~waiting
        self._illegal += illegal
        table_actions = np.where(illegal | waiting, 0, self._to_table[acts])
        _, _, terminated, truncated, _ = self.tables.step(table_actions)
        ticks = self.bankroll_ticks
        self._hands_left -= ~waiting
        done = (terminated | truncated) & ~waiting
        won = done & (ticks >= s.goal_ticks)
        self._ended |= done
        obs = s.observe(ticks, self._hands_left)
        info = self._infos(ticks, illegal, won, done)
        restart = waiting if self.autoreset_mode == AutoresetMode.NEXT_STEP else None
        if self.autoreset_mode == AutoresetMode.SAME_STEP and done.any():
            final = np.full(n, None, dtype=object)
            for i in np.flatnonzero(done):
                final[i] = obs[i].copy()
            final_info = {k: v.copy() for k, v in info.items()}
            info.update(
                final_obs=final, _final_obs=done.copy(), final_info=final_info, _final_info=done.copy()
            )
            restart = done
        if restart is not None and restart.any():
            self.tables.reset(options={"reset_mask": restart})
            self._restart(restart)
            ticks = self.bankroll_ticks
            obs[restart] = s.observe(ticks[restart], self._hands_left[restart])
            fresh = step_info(s, ticks, self._hands_left, illegal & ~restart, self._illegal)
            for key, value in fresh.items():  # the new episodes' first infos
                info[key][restart] = value[restart]
        return obs, won.astype(np.float64), done, np.zeros(n, dtype=np.bool_), info

    def close_extras(self, **kwargs: Any) -> None:
        self.tables.close()


__all__ = ["SessionVectorEnv"]
