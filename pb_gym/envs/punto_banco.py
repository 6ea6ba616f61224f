"""Punto Banco (casino baccarat) as a Gymnasium environment: one table, one hand per step.

The game
--------
Each step is one hand of Punto Banco dealt from a multi-deck shoe (:class:`pb_gym.Rules`): the agent
places its stakes, two cards go to the Player and two to the Banker, third cards are drawn by the
fixed tableau, and the higher total (0-9) wins; equal totals are a tie, which pushes banker and player
bets. Banker wins pay 19:20 in the standard game (or 1:1 with the no-commission / EZ variants), player
wins 1:1, a tie 8:1 or 9:1; optional side bets are Player Pair, Banker Pair (11:1), Dragon 7 (banker
wins with a three-card 7, 40:1) and Panda 8 (player wins with a three-card 8, 25:1). When the cut card
has come out the shoe is reshuffled (and the burn rule applied) before the next hand.

Units
-----
Money amounts given as arguments (``bankroll``, ``table_min``, ``table_max``, ``win_target``) are in
money; ``unit`` is the betting unit in money. Everything the environment returns (observation, reward,
stakes) is in **betting units** = money / ``unit``.

Action space (``action_mode``)
------------------------------
* ``"discrete"`` (default; PPO, A2C, DQN and every other SB3 / RL Zoo algorithm take it):
  ``Discrete(1 + n_bets * K)``: ``0`` = no bet, ``1 + b * K + k`` = bet ``b`` (0 banker, 1 player,
  2 tie, then the offered side bets in :data:`pb_gym.rules.BETS` order) at stake level ``k``
  (``K = len(stake_levels)``; with the standard 4 side bets and 5 levels, ``Discrete(36)``).
  ``env.action_index(bet, k)`` builds one and ``env.describe_action(index)`` names one.
* ``"multidiscrete"``: ``MultiDiscrete([n_bet_choices, K])`` = ``[bet, size]``. ``bet`` is ``0`` = no
  bet, ``1`` banker, ``2`` player, ``3`` tie, then each offered side bet (``env.bet_choices`` lists
  them); ``size`` picks one of the K ``stake_levels`` (units, or fractions of the current bankroll with
  ``stake_unit="fraction"``).
* ``"box"``: ``Box(0, 1, (n_offered,))``: one entry per offered bet spot (banker, player, tie, side
  bets), several at once as at a real table; entry ``a`` stakes ``a * min(bankroll, table_max)``.

With ``allow_no_bet=False`` (forced to bet each hand) the no-bet choice is removed (bet index ``0`` is
then banker; the discrete space has ``n_bets * K`` actions). Stakes are capped (see
:mod:`pb_gym.envs.actions`): at the table maximum and the bankroll per spot, proportionally scaled down if
several spots add up to more than the bankroll, and a spot below the table minimum is not placed (when
forced to bet, the table minimum is placed instead).

Observation space (``observation``, ``obs_scale``)
--------------------------------------------------
By default (``observation="flat"``, ``obs_scale="scaled"``) one float32 ``Box`` whose fields lie at
these offsets (``env.config.obs_offsets``; the defaults: ``history=20``, ``visible_discards=True``, 47
entries), each divided by the bound in the last column so that it lies in [0, 1], but two. The
bankroll is 1 at the start and 0 at ruin; its bound is the most the episode can win
(:func:`pb_gym.envs.spaces.bankroll_high`) over the starting bankroll. The episode-hands feature is
divided by ``max_hands`` (by 100 without one); its bound is the episode's most hands
(:func:`pb_gym.envs.spaces.episode_hands_high`: ``max_hands``, and with ``one_shoe`` a shoe's
``n_cards / 4``). Both are finite with a hand limit, ``one_shoe`` or (the bankroll) a ``win_target``,
and ``inf`` without: ``gymnasium.make`` passes ``max_hands=None`` and ``TimeLimit``, outside the env,
ends the episode, so nothing inside the env bounds them. No value is clipped.
``obs_scale="raw"`` gives the raw units (column "raw"); ``observation="dict"`` gives the same fields as
a ``Dict`` of Boxes (keys in this order). ``gymnasium.spaces.flatten`` of the dict equals the flat
observation.

=============  ========  ==========  ===========================================  ===================
key            offset    shape       raw                                          divided by
=============  ========  ==========  ===========================================  ===================
``bankroll``   0         (1,)        current bankroll, in units                   starting bankroll
``bead_plate`` 1         (history,)  outcomes of the last ``history`` hands of    3
                                     this shoe, most recent first, as bead codes
                                     (0 = none yet, else outcome + 1: see
                                     below; cleared at each new shoe)
``cards_left`` 21        (1,)        cards left in the shoe (not dealt/burned)    cards of a full shoe
``hands``      22        (2,)        hands dealt in this episode, hands dealt     ``max_hands`` (100
                                     from the current shoe                        when None), and
                                                                                  ``n_cards / 4`` (a
                                                                                  hand takes >= 4 cards)
``last_hand``  24        (10,)       last hand: banker won, player won, tie       1, 1, 1, 9, 9, 3, 3,
                                     (one-hot), player total, banker total,       1, 1, 1
                                     player cards (2/3), banker cards, natural,
                                     player pair, banker pair (0s before the
                                     first hand of the episode)
``shoe``       34        (13,)       only with ``visible_discards=True``: cards   ``4 x decks``
                                     of each rank A, 2, ..., 10, J, Q, K the
                                     players have not seen (the shoe plus the
                                     face-down burned cards)
=============  ========  ==========  ===========================================  ===================

Why this default: measured with PPO on this env (README, "Using pb-gym from stable-baselines3 / RL Zoo
/ Gymnasium"); ``MlpPolicy`` and Gymnasium's ``NormalizeObservation`` / ``FlattenObservation`` take it
as it is.

Reward, episode end
-------------------
Reward: net win of the hand in units (0 for no bet or a push). ``terminated`` on ruin (bankroll below
the table minimum) or when the bankroll reaches ``win_target``; ``truncated`` after ``max_hands`` hands
or, with ``one_shoe=True``, when the cut card has come out. Episode length: ``gymnasium.make`` uses
Gymnasium's own ``TimeLimit`` with the registered ``max_episode_steps=100`` (``env.spec.max_episode_steps``;
``make(..., max_episode_steps=N)`` changes it) and sets the env's own ``max_hands`` to None; building the
class directly, ``max_hands`` (default 100, None = no limit) is the limit. Given both, the first limit
reached truncates. ``reset()`` always starts a fresh shoe (seeded when a seed is given) and the starting
bankroll; ``reset(seed=s)`` deals exactly the hands of table ``i`` of the vector environment reset with
seed ``s - i``. A ``step`` after the env's own episode end (terminated, or truncated by ``max_hands`` or
``one_shoe``) raises ``gymnasium.error.ResetNeeded``: call ``reset()`` first. Gymnasium's ``TimeLimit``
is outside the env, and the env does not see its truncation. ``gymnasium.make`` gives the unwrapped
env a spec without ``max_episode_steps``. ``OrderEnforcing`` refuses only a step before the first
reset, and ``PassiveEnvChecker`` checks only the first reset and step. So a further step deals a hand,
and ``TimeLimit`` answers ``truncated=True`` again. To get the error there, pass the env its own
limit, ``gymnasium.make(id, max_hands=N)`` (``TimeLimit`` at N as well: the first limit reached
truncates).

``info`` (``hand_info=True``, the default): ``player_cards``/``banker_cards`` (card codes 1..13 = A..K,
0 = no third card), ``player_total``, ``banker_total``, ``winner`` (:class:`pb_gym.rules.Outcome`),
``natural``, ``player_pair``, ``banker_pair``, ``shuffled`` (a new shoe was started for this hand),
``stakes`` (units per spot, BETS order), ``bankroll`` (units, after the hand); with ``info_ev=True``
``ev``: exact EV per unit of each of the 7 bet spots on the hand this step dealt, for the cards unseen
before it (the EV its stakes were placed at). The first hand's EV is in the first step's info. The
reset's info is empty, since no hand has been dealt. To price the next hand before acting, use
``env.config.bets.expected_values(engine.next_hand_composition(env.rules, env.tables.shoe))``. The
info's arrays are read-only (the env never changes them after returning them, so a deep copy of the
info, as stable-baselines3's ``DummyVecEnv`` makes at every step, is a new dict sharing them; copy an
array to change it).

Rendering: ``render_mode="ansi"`` returns text (both hands, totals, winner, stakes, and the roads of
the shoe in play as a casino scoreboard: bead plate, Big Road, Big Eye Boy, Small Road, Cockroach Pig
and the ask road, drawn by :func:`pb_gym.roads.scoreboard_text` as ``pb-gym roads`` draws them);
``"human"`` prints that text to stdout at each hand (RL Zoo's ``enjoy`` uses it); ``"rgb_array"`` a
small ``(150, W, 3)`` uint8 picture of the table (``RecordVideo``, RL Zoo's ``record_video``).

Outcome codes: :class:`pb_gym.rules.Outcome` (``info["winner"]``); the bead plate stores
:func:`pb_gym.rules.bead_code` of it; the multidiscrete action's first entry is a bet index
(``docs/env.md``, *Outcome codes*).

Arguments
---------
The keyword-only arguments are the fields of :class:`pb_gym.envs.config.EnvConfig` (each documented
there; ``docs/env.md`` has the table), or one ``config=EnvConfig(...)``. An unknown keyword is a
``TypeError``, a bad value a ``ValueError`` naming the argument and the allowed values.

Version History
---------------
* v0: the first version, in pb-gym 0.1.0, which has had no release yet. Before that release v0
  changed (the flat scaled ``Box`` and discrete actions became the defaults; catalog and user bets;
  ``reward="expected"`` and ``"log_growth"``; one configuration dataclass with keyword-only
  arguments, ``side_bets`` the one way to offer a bet; a step after the episode ended raises; the
  ``ansi`` and ``human`` renders draw the roads; the bankroll's and the episode hands' bounds finite
  where the episode bounds them), each listed in CHANGELOG.md. From the first release on, a change of
  behaviour is a new version id.
"""

from __future__ import annotations

import copy
from typing import Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from pb_gym import engine
from pb_gym import rules as R
from pb_gym.envs import actions, observation, stepping, tables
from pb_gym.envs import render as _render
from pb_gym.envs import spaces as env_spaces
from pb_gym.envs.config import ACTION_MODES, EnvConfig, bad
from pb_gym.envs.keywords import env_config, with_config_keywords
from pb_gym.roads import read_roads
from pb_gym.session import MAX_CARDS

ObsType = np.ndarray | dict[str, np.ndarray]
"""The flat float32 observation, or its Dict of fields (``observation="dict"``)."""
ActType = int | np.integer | np.ndarray
"""A discrete action (an int), a ``[bet, size]`` pair or a box action (arrays)."""


_IMMUTABLE = frozenset((int, float, bool, str, type(None)))


class HandInfo(dict):
    """The single env's per-hand ``info``: a plain ``dict`` (module docstring) whose arrays
    (``player_cards``, ``banker_cards``, ``stakes``, ``ev``) are read-only views of read-only arrays
    that the env never touches again, so its deep copy is a new dict that shares them: only a value
    that can change (a writeable array, a list, anything a wrapper or the user put in) is
    deep-copied. stable-baselines3's ``DummyVecEnv`` deep-copies every info at every step; copying
    the arrays there would cost a third of the env's step."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict) -> HandInfo:
        out = HandInfo(self)
        for key, value in self.items():
            if type(value) in _IMMUTABLE:
                continue
            # shared: a read-only view of a read-only array (the env's own arrays; a read-only view
            # of writeable memory changes with it, and whoever holds a read-only array that owns
            # its memory may make it writeable again)
            if type(value) is np.ndarray and not value.flags.writeable:
                base = value.base
                if type(base) is np.ndarray and not base.flags.writeable:
                    continue
            out[key] = copy.deepcopy(value, memo)
        return out

    def __reduce__(self) -> tuple:
        return HandInfo, (dict(self),)


_INTS = (int, np.int64, np.int32, np.intp)
_ONE_TABLE = np.ones(1, dtype=np.bool_)  # the single env's table, as an active mask and as rows
_FIRST_TABLE = np.zeros(1, dtype=np.int64)


def _frozen(rows: np.ndarray) -> np.ndarray:
    """A read-only copy of ``rows``: its views are what :class:`HandInfo` shares rather than copies."""
    copy = rows.copy()
    copy.setflags(write=False)
    return copy


class PuntoBancoEnv(gym.Env[ObsType, ActType]):
    """One Punto Banco table (see the module docstring for the spaces, rewards and arguments): a thin
    shell around a one-table, one-seat :class:`pb_gym.session.Session` (``env.session``).

    The keyword-only arguments after ``render_mode`` are ``config`` (one
    :class:`pb_gym.envs.config.EnvConfig`) or the fields of :class:`~pb_gym.envs.config.EnvConfig` (the
    rules, the money and limits, the episode ends, the action and observation options; each documented
    there; the signature is made from it by :mod:`pb_gym.envs.keywords`), kept as ``env.config``. An
    unknown keyword is a ``TypeError``; a bad value a ``ValueError`` naming it and the allowed values.

    Args:
        render_mode: None, ``"human"`` (each hand printed to stdout as it is dealt, as ``"ansi"``
            renders it; ``render()`` prints it only if ``step`` has not yet), ``"ansi"`` or ``"rgb_array"``.
    """

    metadata = {"render_modes": ["human", "ansi", "rgb_array"], "render_fps": 2}

    @with_config_keywords()
    def __init__(
        self, render_mode: str | None = None, *, config: EnvConfig | None = None, **options: Any
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise bad("render_mode", render_mode, "None, " + ", ".join(self.metadata["render_modes"]))
        self.config = cfg = env_config(config, options, {})
        self.render_mode = render_mode
        self._shown = False  # human mode: the current hand has been printed
        # the hands of this shoe (result, banker pair, player pair), for the roads that "ansi" and
        # "human" draw; kept only when rendering, so that a plain step costs nothing more
        self._shoe_hands: list[tuple[str, bool, bool]] = []
        # a Box or a Dict (cfg.observation); gymnasium's Space is invariant in its sample type, so
        # neither is a Space[ObsType] to mypy
        self.observation_space = cast("spaces.Space[ObsType]", env_spaces.observation_space(cfg))
        self.action_space = env_spaces.action_space(cfg)
        self.tables = tables.new_tables(cfg, 1, seed=[0])
        self.session = self.tables.session
        self._active = np.ones(1, dtype=np.bool_)
        self._seeded = False
        self._needs_reset = True  # before the first reset, and after an episode ended
        # the step's compiled call, its constant arguments and buffers made once
        self._mode = ACTION_MODES.index(cfg.action_mode)
        self._ints = np.zeros((1, 2 if cfg.action_mode == "multidiscrete" else 1), dtype=np.int64)
        self._floats = np.zeros((1, len(cfg.bets.offered)), dtype=np.float64)
        self._step_state: Any = None  # the step's arguments, compiled (a stepping.StepState)
        self._generation = -1  # self.session.version when it was built
        # what each step asks of the (frozen) config, read once: a single env's step is a few
        # microseconds, and each attribute or property read on the way costs some of them
        self._discrete = self._mode == actions.DISCRETE
        self._obs_shape = (1, cfg.obs_size)
        self._hand_info, self._info_ev, self._flat = cfg.hand_info, cfg.info_ev, cfg.flat
        self._suited = cfg.bets.suited
        self._exact_reward = cfg.reward != "realized"  # "expected" or "log_growth"

    def __getstate__(self) -> dict[str, Any]:
        """Copies and pickles leave the compiled step state behind (it is rebuilt on the next step)."""
        state = self.__dict__.copy()
        state["_step_state"], state["_generation"] = None, -1
        return state

    # ---- convenience views ----------------------------------------------------------------------
    @property
    def rules(self) -> R.Rules:
        return self.config.rules

    @property
    def bet_choices(self) -> tuple[str, ...]:
        """Names of the values of the bet choice (multidiscrete/discrete modes)."""
        return self.config.bet_choices

    @property
    def bankroll(self) -> float:
        """Current bankroll in units."""
        return float(self.session.seats.bankroll[0, 0])

    # ---- Gymnasium API --------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            seeds = [int(seed)]
        elif not self._seeded:  # never seeded: take a seed from Gymnasium's np_random (fresh entropy)
            seeds = [int(self.np_random.integers(0, 2**63 - 1))]
        else:
            seeds = None  # continue this table's random stream
        self._seeded = True
        self._needs_reset = False
        cfg = self.config
        if seeds is not None:  # as engine.shuffle(..., seed=seeds) reseeds the table
            self.session.shoe.rng[0] = engine.table_seeds(seeds, 1)[0]
        obs = np.empty((1, cfg.obs_size), dtype=np.float32)
        if not stepping.restart_all(self._state(), cfg.bankroll_units, obs):  # an unusable shoe: say why
            tables.reset_tables(cfg, self.tables, np.zeros(1, dtype=np.int64))
        elif self.tables.csm is not None:  # (reset_tables restarts it; restart_all does not)
            self.tables.csm.restart(self.session.shoe)
        if self.render_mode is not None:
            self._keep_shoe_hands()
            self._show()
        return (obs[0] if cfg.flat else observation.split_obs(cfg, obs[0])), {}

    def _state(self) -> stepping.StepState:
        """The compiled step state, rebuilt when an array of the session has been replaced."""
        state = self._step_state
        if state is None or self._generation != self.session.version:
            state = self._step_state = stepping.step_state(
                self.config, self.tables, self._ints, self._floats, self._active
            )
            self._generation = self.session.version
        return state

    def _obs(self) -> ObsType:
        """The observation of the table as it is now (:func:`pb_gym.envs.observation.observe`)."""
        return observation.split_obs(self.config, observation.write_obs(self.config, self.tables)[0])

    def _action_arrays(self, action: ActType) -> tuple[np.ndarray, np.ndarray]:
        """The action in the step kernel's layout: the common forms are copied into the env's buffers;
        anything else goes through :func:`pb_gym.envs.actions.action_array`'s checks."""
        mode = self._mode
        if mode == actions.DISCRETE:
            if (
                isinstance(action, (int, np.integer))
                and not isinstance(action, bool)
                and (-(2**63) <= action < 2**63)
            ):
                self._ints[0, 0] = action
                return self._ints, self._floats
        elif type(action) is np.ndarray and action.ndim == 1:
            if mode == actions.MULTIDISCRETE and action.shape[0] == 2 and action.dtype.kind == "i":
                self._ints[0] = action
                return self._ints, self._floats
            if mode == actions.BOX and action.shape[0] == self._floats.shape[1] and action.dtype.kind == "f":
                self._floats[0] = action
                return self._ints, self._floats
        ints, floats = actions.action_array(self.config, np.asarray(action)[None], 1)
        if mode == actions.BOX:
            self._floats[...] = floats
        else:
            self._ints[...] = ints
        return self._ints, self._floats

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._needs_reset:  # as Gymnasium's OrderEnforcing wrapper (gymnasium.make) does
            self._refuse_step()
        if self._discrete and type(action) in _INTS:  # the common case: range checked by the
            try:  # compiled step
                self._ints[0, 0] = action
            except OverflowError:  # beyond int64: refused by the general path with its message
                self._action_arrays(action)
        else:
            self._action_arrays(action)
        # new arrays every step: nothing returned is reused
        obs = np.empty(self._obs_shape, dtype=np.float32)
        state = self._step_state if self._generation == self.session.version else self._state()
        # the env step of every batch size, here of one table: decode, stake rules, deal, settle,
        # records, ends and the observation
        stepping.step(self.config, state, self._ints, obs)
        seats, hand = self.session.seats, self.session.hand
        reward = seats.net.item(0)
        terminated, truncated = seats.terminated.item(0), seats.truncated.item(0)
        if self._exact_reward:
            reward = 0.0
            if seats.placed.item(0):
                reward = float(
                    observation.exact_reward(self.config, self.tables, np.zeros(1, dtype=np.intp))[0]
                )
        info: dict[str, Any] = {}
        if self._hand_info:  # the info's arrays are read-only copies: HandInfo's copies share them
            stakes = _frozen(seats.stakes[0])
            cards = np.empty((2, MAX_CARDS), dtype=np.uint8)
            cards[0], cards[1] = hand.player_cards[0], hand.banker_cards[0]
            cards.setflags(write=False)
            info = observation.info_dict(
                HandInfo,
                cards[0],
                cards[1],
                hand.player_total.item(0),
                hand.banker_total.item(0),
                hand.winner.item(0),
                hand.natural.item(0),
                hand.player_pair.item(0),
                hand.banker_pair.item(0),
                hand.shuffled.item(0),
                stakes[0],
                seats.bankroll.item(0),
            )
            if self._suited:  # the cards' suits settle the suited bets
                info["player_suits"] = hand.player_suits[0].copy()
                info["banker_suits"] = hand.banker_suits[0].copy()
        if self._info_ev:
            ev = observation.ev_before_hand(self.config, self.tables)
            ev.setflags(write=False)
            info["ev"] = ev[0]
        if self.tables.csm is not None:  # a continuous shuffler takes cards back: observe again
            tables.after_hand(self.config, self.tables, _ONE_TABLE)
            observation.observe(self.config, self.session, out=obs, rows=_FIRST_TABLE)
        if self.render_mode is not None:
            self._shoe_hands.append(
                (
                    _render.OUTCOME_LETTERS[hand.winner.item(0)],
                    hand.banker_pair.item(0),
                    hand.player_pair.item(0),
                )
            )
            self._keep_shoe_hands()
            self._show()
        if terminated or truncated:
            self._needs_reset = True
        return (
            obs[0] if self._flat else observation.split_obs(self.config, obs[0]),
            reward,
            terminated,
            truncated,
            info,
        )

    def _refuse_step(self) -> None:
        if not self._seeded:
            raise ResetNeeded("Cannot call env.step() before calling env.reset()")
        raise ResetNeeded(
            "Cannot call env.step() after the episode ended (terminated or truncated): call env.reset() first"
        )

    def action_index(self, bet: str, stake_level: int = 0) -> int:
        """The ``discrete`` action that stakes level ``stake_level`` on ``bet`` (a name of
        :attr:`bet_choices`): :meth:`pb_gym.envs.config.EnvConfig.action_index`."""
        return self.config.action_index(bet, stake_level)

    def describe_action(self, index: int) -> tuple[str, float]:
        """``(bet, stake level)`` of the ``discrete`` action ``index``:
        :meth:`pb_gym.envs.config.EnvConfig.describe_action`."""
        return self.config.describe_action(index)

    def action_masks(self) -> np.ndarray:
        """Valid actions now (for sb3-contrib's MaskablePPO; see :func:`pb_gym.envs.actions.action_masks`)."""
        return actions.action_masks(self.config, self.tables.bankroll)[0]

    def _keep_shoe_hands(self) -> None:
        """Keep the hands of the shoe now in play only (a new shoe starts the roads afresh)."""
        in_shoe = int(self.tables.shoe.hands_in_shoe[0])
        if len(self._shoe_hands) > in_shoe:
            del self._shoe_hands[: len(self._shoe_hands) - in_shoe]

    def _text(self) -> str:
        """The ``ansi`` picture: the table, then the roads of this shoe (:mod:`pb_gym.roads`)."""
        results, banker_pairs, player_pairs = (
            zip(*self._shoe_hands, strict=True) if self._shoe_hands else ((), (), ())
        )
        roads = read_roads(results, banker_pairs, player_pairs)
        return _render.render_ansi(self.config, self.tables, 0, roads)

    def _show(self) -> None:
        """Human mode: print the table as it is now (Gymnasium renders human mode inside step/reset)."""
        self._shown = False
        if self.render_mode == "human":
            print(self._text(), flush=True)
            self._shown = True

    def render(self) -> str | np.ndarray | None:
        if self.render_mode == "human":
            if not self._shown:  # (SB3 / RL Zoo also call render() after each step: print once)
                print(self._text(), flush=True)
                self._shown = True
            return None
        if self.render_mode == "ansi":
            return self._text()
        if self.render_mode == "rgb_array":
            return _render.render_rgb(self.config, self.tables, 0)
        return None
