"""The session as an environment: reach a goal from a bankroll within a hand limit, one hand per step.

This is the problem :mod:`pb_gym.session_optimum` solves exactly (Dubins & Savage at a baccarat table),
played hand by hand: :class:`SessionEnv` (one table) and :class:`SessionVectorEnv` (N tables) are thin
shells over :class:`~pb_gym.envs.punto_banco.PuntoBancoEnv` and
:class:`~pb_gym.envs.vector.PuntoBancoVectorEnv`: the same engine deals, the same session settles and
ends the episode (ruin, win target, hand limit); the shell only shows the state, masks the actions and
pays the goal. The benchmark's session tasks (:mod:`pb_gym.envs.session_tasks`) are instances of it.

The game. From ``bankroll`` (units of the table minimum's currency: amounts in *units*) reach ``goal``
within ``hands`` hands. Before each hand the player sits out or stakes a whole number of units
``table_min <= s <= table_max``, ``s <= bankroll``, on one of ``bets``. Every hand is dealt by a
continuous shuffling machine that takes the hand's cards back at once (``shuffle="csm", csm_delay=0``,
no burn): each hand is drawn from the full shoe, so hands are independent with the full shoe's exact
probabilities and the optimum of :func:`pb_gym.session_optimum.solve` is the true optimum of this env.

Action space: ``Discrete(1 + len(bets) * K)``, ``K = table_max - table_min + 1``: ``0`` no bet,
``1 + b * K + k`` stakes ``table_min + k`` units on ``bets[b]`` (bets in catalog order, as
:attr:`pb_gym.session_optimum.Session.bets`: banker, player, tie). :meth:`SessionEnv.action_index`
builds one, :meth:`SessionEnv.describe_action` names one.

Illegal actions. A stake above the bankroll is illegal. :meth:`SessionEnv.action_masks` (what
sb3-contrib's ``MaskablePPO`` reads) and ``info["action_mask"]`` give the legal actions; an illegal
action is **played as no bet**: the hand is dealt and counts against the hand limit, nothing is staked,
and ``info["illegal_action"]`` is True (``info["illegal_actions"]`` counts them in the episode). It is
never cut to the bankroll (that would be another action, all-in, which the agent did not choose) and
never refused with an error (an unmasked algorithm -- PPO, DQN -- samples every action; an error would
make the task unusable for them). Sitting out is itself an action of the game, so a policy that plays
illegal actions is worth exactly what the same policy with no bet in their place is worth: the optimum
is unchanged, any policy's value is exact (:func:`pb_gym.session_benchmark.score`), and a wasted hand
is the whole cost, which an agent learns to avoid without any shaped penalty.

Observation: ``Box(0, 1, (2,), float32)``: ``[min(bankroll, goal) / goal, hands left / hands]``. Hands
are independent, so (bankroll, hands left) is the whole state; the goal reached is one state (the
solver's), so the bankroll feature stops at 1. The exact bankroll is ``info["bankroll"]`` (units).

Reward: 1 on the step that reaches the goal (``bankroll >= goal``), else 0: an episode's return is 1
when the session is won. ``terminated`` when the goal is reached, on ruin (a bankroll below the table
minimum can stake nothing more) and when the hands run out: the hand limit is part of the task (hands
left are observed), so it is a terminal state worth 0, not a truncation to bootstrap from.
``truncated`` is always False. ``info["is_success"]`` (on the last step) is whether the goal was reached
(stable-baselines3's ``EvalCallback`` reports it as the success rate).

Exact amounts. A bet paying ``p/q`` per unit puts bankrolls on multiples of ``1/q`` unit (the banker's
19:20: 1/20 unit). The table inside counts money in these *ticks* (``ticks_per_unit`` of them a unit):
every stake, payout and bankroll is a whole number of ticks, held exactly by float64, so the goal test,
the ruin test and the legality of a stake never meet a rounding error (in units, ``20 + 0.95`` is
``20.949999...``: a bankroll that should reach the goal could fall short of it by 1e-15). The
construction checks that every payout of every stake is exact in floating point.

``reset(seed=s)`` deals the hands of table ``i`` of a :class:`SessionVectorEnv` reset with seed
``s - i`` (the tables' parity, inherited). A ``step`` after the episode ended raises
``gymnasium.error.ResetNeeded``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from pb_gym.envs.config import bad
from pb_gym.envs.session_settings import (
    MAIN_BETS,
    SessionSettings,
    check_action,
    session_settings,
    step_info,
    whole_ticks,
)


class SessionEnv(gym.Env[np.ndarray, np.int64]):
    """One session (see the module docstring for the spaces, the reward and the illegal actions).

    Args:
        render_mode: None, ``"ansi"`` (the bankroll, the hands left and the last hand, as text) or
            ``"rgb_array"`` (a ``(48, 240, 3)`` uint8 picture: the bankroll's bar against the goal in
            green, the hands left in blue; what stable-baselines3's ``make_vec_env`` asks for).
        bankroll: the starting bankroll in units (an int, or a decimal on the lattice), >= ``table_min``.
        goal: the bankroll to reach, above ``bankroll``.
        hands: the hand limit, an integer from 1 to 1,000,000.
        table_max: the largest stake, whole units from ``table_min`` to 1000.
        table_min: the smallest stake, whole units >= 1.
        bets: the bets offered, catalog names (kept in catalog order); default banker, player, tie.
        decks: decks in the shoe, 1 to 8.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 2}

    def __init__(
        self,
        render_mode: str | None = None,
        *,
        bankroll: int | float | Fraction,
        goal: int | float | Fraction,
        hands: int,
        table_max: int,
        table_min: int = 1,
        bets: Sequence[str] = MAIN_BETS,
        decks: int = 8,
    ) -> None:
        from pb_gym.envs.punto_banco import PuntoBancoEnv

        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise bad("render_mode", render_mode, "None, " + ", ".join(self.metadata["render_modes"]))
        self.settings = s = session_settings(
            bankroll=bankroll,
            goal=goal,
            hands=hands,
            table_max=table_max,
            table_min=table_min,
            bets=bets,
            decks=decks,
        )
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(s.n_actions)
        self.observation_space = spaces.Box(0.0, 1.0, (2,), dtype=np.float32)
        self.table = PuntoBancoEnv(**s.table_kwargs())
        self._to_table = s.table_actions(self.table.config)
        self._hands_left = s.hands
        self._illegal = 0
        self._last: tuple[int, float] | None = None  # (action, net in units) of the last hand
        self._needs_reset = True
        self._reset_once = False

    # ---- state ----------------------------------------------------------------------------------
    @property
    def bankroll_ticks(self) -> int:
        """The bankroll in ticks (``settings.ticks_per_unit`` a unit), exact."""
        return int(whole_ticks(np.array([self.table.bankroll]))[0])

    @property
    def bankroll(self) -> Fraction:
        """The bankroll in units, exact."""
        return Fraction(self.bankroll_ticks, self.settings.ticks_per_unit)

    @property
    def hands_left(self) -> int:
        return self._hands_left

    def action_masks(self) -> np.ndarray:
        """The legal actions now, ``(n_actions,)`` bool (sb3-contrib's ``MaskablePPO`` reads it)."""
        return self.settings.masks(np.array([self.bankroll_ticks]))[0]

    def action_index(self, bet: str, stake: int = 0) -> int:
        """:meth:`SessionSettings.action_index`."""
        return self.settings.action_index(bet, stake)

    def describe_action(self, index: int) -> tuple[str, int]:
        """:meth:`SessionSettings.describe_action`."""
        return self.settings.describe_action(index)

    def _observe(self, illegal: bool) -> tuple[np.ndarray, dict[str, Any]]:
        ticks, left = np.array([self.bankroll_ticks]), np.array([self._hands_left])
        info = step_info(self.settings, ticks, left, np.array([illegal]), np.array([self._illegal]))
        return self.settings.observe(ticks, left)[0], {k: v[0] for k, v in info.items()}

    # ---- Gymnasium API --------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None and not self._reset_once:  # fresh entropy, drawn from Gymnasium's np_random
            seed = int(self.np_random.integers(0, 2**63 - 1))
        self.table.reset(seed=seed)
        self._reset_once, self._needs_reset = True, False
        self._hands_left, self._illegal, self._last = self.settings.hands, 0, None
        return self._observe(False)

    def step(self, action: np.int64) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._needs_reset:
            raise ResetNeeded(
                "Cannot call env.step() before reset() or after the episode ended: call env.reset() first"
            )
        s = self.settings
        a = check_action(s, action)
        illegal = bool(s.stake_ticks[a] > self.bankroll_ticks)
        self._illegal += illegal
        _, net, terminated, truncated, _ = self.table.step(int(self._to_table[0 if illegal else a]))
        self._hands_left -= 1
        self._last = (0 if illegal else a, float(net) / s.ticks_per_unit)
        done = bool(terminated or truncated)
        won = done and self.bankroll_ticks >= s.goal_ticks
        obs, info = self._observe(illegal)
        if done:
            self._needs_reset = True
            info["is_success"] = won
        return obs, float(won), done, False, info

    def render(self) -> str | np.ndarray | None:
        if self.render_mode == "rgb_array":
            return self._picture()
        if self.render_mode != "ansi":
            return None
        s = self.settings
        text = f"bankroll {float(self.bankroll):g} / goal {float(s.goal):g}, "
        text += f"{self._hands_left} of {s.hands} hands left"
        if self._last is not None:
            bet, stake = s.describe_action(self._last[0])
            text += f"; last hand: {'no bet' if stake == 0 else f'{stake} on {bet}'}, net {self._last[1]:+g}"
        return text

    def _picture(self) -> np.ndarray:
        s, width = self.settings, 240
        image = np.full((48, width, 3), 255, dtype=np.uint8)
        shown = min(self.bankroll_ticks, s.goal_ticks) * width // s.goal_ticks
        image[6:22, :shown] = (40, 150, 60)
        image[28:42, : self._hands_left * width // s.hands] = (50, 90, 200)
        return image


__all__ = ["SessionEnv", "SessionSettings", "session_settings"]
