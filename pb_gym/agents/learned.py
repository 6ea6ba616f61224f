"""Learned policies as betting systems: a saved stable-baselines3 model plays inside ``pb-gym evaluate``.

:class:`Sb3Policy` (config ``type: sb3``) loads a model saved by ``pb-gym train`` and plays one seat of
the evaluation's table session (:class:`pb_gym.session.Session`). Before every hand it reads its
observation with the environment's own function, :func:`pb_gym.envs.observation.observe` (bankroll, bead
plate, last hand, cards left, hands, unseen cards: what the env would show at that seat), and its
actions become stakes through the environment's own :func:`~pb_gym.envs.actions.decode_actions` (same
stake levels, limits and forced-bet rule as the environment the model was trained in).

A trained model is a folder of files (:func:`save_policy`); loading one unpickles some of them, so
they are checked against the SHA-256 recorded when it was saved before anything is unpickled
(:func:`model_files`): :mod:`pb_gym.agents.saved_model`. What the policy sees of the environment's
observation is its train config's ``obs_transform`` (:mod:`pb_gym.agents.obs_transforms`). This
module exports the names of both.

What the policy sees at its seat (evaluate -> env): its bankroll in betting units (the session keeps
money; ``per_unit`` is the study's ``table.unit``), the hands it has played in the session, and its
table's bead plate, last hand, cards left, hands in the shoe and unseen cards, all from the session
the study deals from (its bead plate at least as long as the policy's ``history``).

Session vs episode. An evaluation session starts like an environment episode (fresh shoe, starting
bankroll, hand counter 0, empty bead plate) and ends on the same events: ruin (bankroll below the
table minimum) and the win goal (``win_goal = win_target - bankroll``); the session's hand limit plays
the part of ``max_hands``, and a ``one_shoe`` study ends each session with its shoe, as ``one_shoe``
ends an episode. After a session ends the evaluator stops betting for it (the environment
would reset the table; nothing the policy proposes for it is used). The stop-loss has no environment
counterpart. When the study's bankroll, hand limit or win goal differ from the training environment's,
the policy still runs (a generalization test) but a warning says so; rules and table limits must
agree (an error names the mismatch).

:class:`ModelActor` is the model's predict on its env's observations (transform, normalization,
MaskablePPO's masks, RecurrentPPO's state), the one that train's discovery scoring uses too.

Also here: :class:`NeverBet` (``type: never``), the abstaining baseline, and :class:`PerfectInformation`
(``type: perfect``), the flat perfect-information bettor (``base`` units on the best bet whose exact EV
for the unseen cards is positive).
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.agents import extras, systems
from pb_gym.agents.obs_transforms import COUNTED_BETS as COUNTED_BETS
from pb_gym.agents.obs_transforms import OBS_TRANSFORMS as OBS_TRANSFORMS
from pb_gym.agents.obs_transforms import SHOE_ONLY_KEYS as SHOE_ONLY_KEYS
from pb_gym.agents.obs_transforms import obs_transform_wrapper as obs_transform_wrapper
from pb_gym.agents.obs_transforms import sees_hand_counters as sees_hand_counters
from pb_gym.agents.obs_transforms import transform_obs as transform_obs
from pb_gym.agents.obs_transforms import transformed_space as transformed_space
from pb_gym.agents.saved_model import ALGORITHMS as ALGORITHMS
from pb_gym.agents.saved_model import ENV_FILE as ENV_FILE
from pb_gym.agents.saved_model import LEGACY_ENV_DEFAULTS as LEGACY_ENV_DEFAULTS
from pb_gym.agents.saved_model import MANIFEST_FILE as MANIFEST_FILE
from pb_gym.agents.saved_model import MAX_META_BYTES as MAX_META_BYTES
from pb_gym.agents.saved_model import MODEL_FILE as MODEL_FILE
from pb_gym.agents.saved_model import NORMALIZE_FILE as NORMALIZE_FILE
from pb_gym.agents.saved_model import POLICY_MODULES as POLICY_MODULES
from pb_gym.agents.saved_model import check_model_spaces as check_model_spaces
from pb_gym.agents.saved_model import env_kwargs_from_json as env_kwargs_from_json
from pb_gym.agents.saved_model import env_kwargs_to_json as env_kwargs_to_json
from pb_gym.agents.saved_model import file_sha256 as file_sha256
from pb_gym.agents.saved_model import model_files as model_files
from pb_gym.agents.saved_model import read_meta as read_meta
from pb_gym.agents.saved_model import record_checksums as record_checksums
from pb_gym.agents.saved_model import save_policy as save_policy
from pb_gym.agents.saved_model import training_config as training_config
from pb_gym.agents.saved_model import verify_model_files as verify_model_files
from pb_gym.agents.saved_model import write_manifest as write_manifest
from pb_gym.envs import actions as env_actions
from pb_gym.envs import config, observation

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm


class ModelMismatch(ValueError):
    """The study and the model's training environment disagree (rules, table limits)."""


RL_MODULES: tuple[str, ...] = ("stable_baselines3", "sb3_contrib", "torch")
"""The modules of the ``rl`` extra that the learned agents import."""
RL_INSTALL = "pip install -e '.[rl]' -c constraints.txt"
"""How to install the ``rl`` extra (pb-gym is not on PyPI: in the clone)."""


class MissingExtra(ImportError):
    """A learned agent needs the ``rl`` extra, which is not installed; the message says, in one line,
    what needs it and how to install it (``pb-gym`` reports it as bad input, status 2)."""


def _missing_extra(what: str, error: object) -> MissingExtra:
    return MissingExtra(
        f"{what} needs the rl extra (stable-baselines3, sb3-contrib, torch), not installed here "
        f"({error}); install it in the clone: {RL_INSTALL}"
    )


def require_rl(what: str) -> None:
    """Raise :class:`MissingExtra` naming ``what`` unless the modules of the ``rl`` extra are installed
    (found, not imported: torch loads only where a policy runs)."""
    name = extras.missing_module(RL_MODULES)
    if name is not None:
        raise _missing_extra(what, f"no module named {name!r}")


def algorithm_class(name: str) -> type[BaseAlgorithm]:
    """The SB3 / sb3-contrib class of an algorithm name (imports torch); :class:`MissingExtra` without
    the ``rl`` extra."""
    if name not in ALGORITHMS:
        raise ValueError(f"algorithm {name!r} is not allowed; allowed: {', '.join(ALGORITHMS)}")
    try:
        if name in ("PPO", "A2C", "DQN"):
            import stable_baselines3

            return getattr(stable_baselines3, name)
        import sb3_contrib

        return getattr(sb3_contrib, name)
    except ImportError as error:
        raise _missing_extra(f"the {name} algorithm", error) from error


def training_mismatch(
    cfg: config.EnvConfig, rules: R.Rules, min_units: float, max_units: float
) -> str | None:
    """What differs between a study (rules, table limits in units) and a model's training environment
    ``cfg``, naming each field; None when they agree."""
    if rules != cfg.rules:
        diffs = [
            f"rules.{f.name}: study {getattr(rules, f.name)!r}, model {getattr(cfg.rules, f.name)!r}"
            for f in dataclasses.fields(R.Rules)
            if getattr(rules, f.name) != getattr(cfg.rules, f.name)
        ]
        return "the study's rules differ from the training environment's: " + "; ".join(diffs)
    for label, study, model in (
        ("table minimum", min_units, cfg.min_units),
        ("table maximum", max_units, cfg.max_units),
    ):
        if abs(study - model) > 1e-9 * max(1.0, abs(model)):
            return (
                f"the {label} differs from the training environment's: study {study:g} unit(s), "
                f"model {model:g} unit(s) (table.minimum / table.unit vs table_min / unit = "
                f"{cfg.table_min:g} / {cfg.unit:g}, table_max = {cfg.table_max:g})"
            )
    return None


class ModelActor:
    """A stable-baselines3 model's actions on the observations of the env it was trained on, as
    ``pb-gym train`` trained it: its observation transform, its ``VecNormalize`` statistics,
    MaskablePPO's action masks (from the bankrolls) and RecurrentPPO's LSTM state. The one predict of
    :class:`Sb3Policy` and of train's discovery scoring
    (:class:`pb_gym.experiments.benchmark.discovery.Policy`, which adds the policy's probabilities).

    Args:
        model: the SB3 model.
        algorithm: its algorithm's name (one of :data:`ALGORITHMS`).
        cfg: the env it was trained on.
        obs_transform: its observation transform (:func:`transform_obs`).
        normalizer: its ``VecNormalize`` (observations), or None.
        deterministic: greedy actions; False samples from the policy.
    """

    def __init__(
        self,
        model,
        algorithm: str,
        cfg: config.EnvConfig,
        obs_transform: str = "none",
        normalizer=None,
        deterministic: bool = True,
    ) -> None:
        self.model, self.algorithm, self.cfg = model, algorithm, cfg
        self.obs_transform, self.normalizer, self.deterministic = obs_transform, normalizer, deterministic
        self.lstm_state: tuple[np.ndarray, ...] | None = None
        self.masks: np.ndarray | None = None  # MaskablePPO's, of the last predict

    def reset(self) -> None:
        """Forget RecurrentPPO's state."""
        self.lstm_state = None

    def prepare(self, obs):
        """The model's input: the env's observation (a dict: split) transformed and normalized."""
        if isinstance(obs, dict):
            obs = transform_obs(self.obs_transform, obs, self.cfg)
        if self.normalizer is not None:
            obs = self.normalizer.normalize_obs(obs)
        return obs

    def predict(self, obs, bankroll: np.ndarray, episode_start: np.ndarray) -> np.ndarray:
        """The model's actions for the prepared observations ``obs`` (:meth:`prepare`); ``bankroll``
        (units) gives MaskablePPO's masks, ``episode_start`` restarts RecurrentPPO's state."""
        kwargs: dict[str, Any] = {"deterministic": self.deterministic}
        self.masks = None
        if self.algorithm == "MaskablePPO":
            self.masks = env_actions.action_masks(self.cfg, bankroll)
            kwargs["action_masks"] = self.masks
        if self.algorithm == "RecurrentPPO":
            actions, self.lstm_state = self.model.predict(
                obs, state=self.lstm_state, episode_start=episode_start, **kwargs
            )
            return actions
        actions, _ = self.model.predict(obs, **kwargs)
        return actions


class Sb3Policy(systems.BettingSystem):
    """A saved stable-baselines3 model as a betting system (``type: sb3``, ``model: path``).

    Args:
        model: the ``model.zip`` written by ``pb-gym train`` or its folder (``env.json`` beside it).
        deterministic: greedy actions (default); False samples from the policy (with the evaluation's
            per-system seed).
    """

    key = "sb3"

    def __init__(self, model: str | Path, deterministic: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        zip_path, meta_path = model_files(model)
        meta = read_meta(meta_path)
        self.path = zip_path
        self.algorithm = meta["algorithm"]
        self.env_kwargs = env_kwargs_from_json(meta["env_kwargs"])
        self.obs_transform = meta.get("obs_transform", "none")
        self.cfg = config.make_config(**self.env_kwargs)
        if self.cfg.action_mode == "box":
            raise ValueError(
                f"{zip_path}: action_mode 'box' places several bets per hand; the "
                "evaluation replays one bet per hand (multidiscrete or discrete)"
            )
        self.deterministic = bool(deterministic)
        loaded = algorithm_class(self.algorithm).load(zip_path, device="cpu")
        normalizer = None
        if meta.get("vecnormalize"):
            normalizer = _load_normalizer(
                zip_path.parent / meta["vecnormalize"], self.env_kwargs, self.obs_transform, self.cfg
            )
        self.actor = ModelActor(
            loaded, self.algorithm, self.cfg, self.obs_transform, normalizer, self.deterministic
        )
        self.bead_plate = self.cfg.history  # the session keeps at least this much bead plate
        self._checked = False

    def reset(self, n_tables: int, rng: np.random.Generator | None = None) -> None:
        super().reset(n_tables, rng)
        self.actor.reset()
        self._checked = False
        if not self.deterministic:
            import torch

            torch.manual_seed(int(self.rng.integers(0, 2**31 - 1)))

    # -- consistency with the training environment --------------------------------------------
    def check_view(self, view: systems.TableView) -> None:
        """Raise :class:`ModelMismatch` if the study's rules or table limits differ from the model's
        training environment; warn if the starting bankroll differs."""
        cfg = self.cfg
        where = f"system {self.name!r} (model {self.path})"
        problem = training_mismatch(cfg, view.rules, view.min_units, view.max_units)
        if problem:
            raise ModelMismatch(f"{where}: {problem}")
        start = np.asarray(view.bankroll_units)
        if (
            view.hands_played == 0
            and start.size
            and np.any(np.abs(start - cfg.bankroll_units) > 1e-9 * cfg.bankroll_units)
        ):
            warnings.warn(
                f"{where}: the starting bankroll ({float(start[0]):g} units) differs from the "
                f"training environment's ({cfg.bankroll_units:g} units): the bankroll "
                "observations are outside what the model was trained on",
                stacklevel=2,
            )
        if (
            cfg.one_shoe
            and sees_hand_counters(self.obs_transform)
            and view.session is not None
            and not view.session.limits.one_shoe
        ):
            warnings.warn(
                f"{where}: the model was trained on one-shoe episodes (one_shoe) but the "
                "study's sessions run across shoes (set one_shoe: true in the study): its "
                "hand counters there take values it never saw",
                stacklevel=2,
            )
        self._checked = True

    # -- deciding -------------------------------------------------------------------------------
    def observe(self, view: systems.TableView):
        """The environment's observation of this seat at every table (before any transform or
        normalization), by the environment's own :func:`pb_gym.envs.observation.observe`."""
        if view.session is None:
            raise ValueError(
                "the TableView carries no table session (view.session): a learned "
                "policy reads its observations from the session it plays in"
            )
        return observation.split_obs(
            self.cfg, observation.observe(self.cfg, view.session, seat=view.seat, per_unit=view.unit)
        )

    def stakes(self, actions: np.ndarray, view: systems.TableView) -> systems.Proposal:
        """The proposal of ``actions`` per table: the environment's stakes (one column; NO_BET where
        nothing is placed; the env's stake rules, its forced bet included) and where the table maximum
        cut the requested stake."""
        cfg = self.cfg
        bankroll = np.asarray(view.bankroll_units, dtype=np.float64)
        n = bankroll.shape[0]
        stakes = env_actions.decode_actions(cfg, actions, bankroll, np.zeros((n, cfg.n_columns)))
        placed = stakes > 0
        # the policy's own columns (its env's), then the study table's
        own = np.where(placed.any(axis=1), placed.argmax(axis=1), systems.NO_BET).astype(np.int8)
        units = stakes[np.arange(n), np.maximum(own, 0)] * (own >= 0)
        requested, _ = env_actions.requested_stakes(cfg, actions, bankroll)
        capped = (own >= 0) & (requested.max(axis=1) > cfg.max_units + 1e-9)
        column = own
        if self._to_table is not None:
            column = np.where(own >= 0, self._to_table[np.maximum(own, 0)], systems.NO_BET).astype(np.int8)
        return systems.Proposal(column, units, capped)

    _to_table: np.ndarray | None = None

    def bind(self, table) -> None:
        """The study's table must offer every bet the policy was trained to stake (its catalog or user
        bets included): each of the policy's columns maps to the table's column of the same bet."""
        super().bind(table)
        names = self.cfg.bets.columns
        offered = set(self.cfg.bets.offered)
        missing = [b for b in self.cfg.bets.offered if b not in table.offered]
        if missing:
            raise ModelMismatch(
                f"system {self.name!r} (model {self.path}): the study's table does not "
                f"offer {', '.join(missing)}, which the model was trained to bet; "
                f"offered: {', '.join(table.offered)}"
            )
        extra = [b.name for b in self.cfg.bets.extra]  # a user bet of the same name must pay the same
        differ = [
            b for b in extra if not np.array_equal(table.bet(b).column(), self.cfg.bets.bet(b).column())
        ]
        if differ:
            raise ModelMismatch(
                f"system {self.name!r} (model {self.path}): the study's bet "
                f"{', '.join(map(repr, differ))} pays otherwise than the one the model was "
                "trained on (its env.json, env_kwargs.side_bets); give the same "
                "custom_bets rows, or another name"
            )
        self._to_table = np.array([table.column(b) if b in offered else -1 for b in names], dtype=np.int64)

    def _act(self, obs, view: systems.TableView) -> np.ndarray:
        """The model's actions for the observations (:class:`ModelActor`: transform, normalization,
        masks, LSTM state restarted where the session starts)."""
        bankroll = np.asarray(view.bankroll_units)
        starts = np.full(len(bankroll), view.hands_played == 0)
        return self.actor.predict(self.actor.prepare(obs), bankroll, starts)

    def bet_columns(self) -> tuple[int, ...]:
        own = [int(spot) for spot in self.cfg.choice_spot if spot >= 0]
        return tuple(int(self._to_table[c]) for c in own) if self._to_table is not None else tuple(own)

    def propose(self, view: systems.TableView) -> systems.Proposal:
        if not self._checked:
            self.check_view(view)
        obs = self.observe(view)
        actions = self._act(obs, view)
        return self.stakes(actions, view)


def _load_normalizer(path: Path, env_kwargs: dict, obs_transform: str, cfg: config.EnvConfig):
    from stable_baselines3.common.vec_env import VecNormalize

    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    venv = obs_transform_wrapper(PuntoBancoSB3VecEnv(num_envs=1, **env_kwargs), obs_transform, cfg)
    normalizer = VecNormalize.load(str(path), venv)
    normalizer.training = False
    normalizer.norm_reward = False
    return normalizer


class NeverBet(systems.BettingSystem):
    """Never bets (the abstaining baseline: its report line shows 0 hands)."""

    key = "never"

    def bet_columns(self) -> tuple[int, ...]:
        return ()

    def propose(self, view: systems.TableView) -> systems.Proposal:
        return systems.Proposal(
            np.full(self.n, systems.NO_BET, dtype=np.int64), np.zeros(self.n), np.zeros(self.n, dtype=bool)
        )


class PerfectInformation(systems.BettingSystem):
    """Flat perfect-information bettor: ``base`` units on the bet of ``bets`` with the highest exact EV
    for the cards not yet seen, whenever that EV is positive (no bet otherwise).

    Args:
        bets: the bets whose exact EV is priced before each hand.
    """

    key = "perfect"
    needs_composition = True
    not_configurable = ("bet",)

    def __init__(self, bets: systems.BetNames = ("dragon7", "panda8"), **kwargs) -> None:
        self.bets = systems.check_bets(bets)
        super().__init__(bet=self.bets[0], **kwargs)
        self.columns = systems.bet_columns(self.bets, None)

    def bind(self, table) -> None:
        super().bind(table)
        self.columns = systems.bet_columns(self.bets, table)

    def bet_columns(self) -> tuple[int, ...]:
        return tuple(int(column) for column in self.columns)

    def propose(self, view: systems.TableView) -> systems.Proposal:
        table = view.bets or self.table_bets
        assert view.composition is not None  # needs_composition: the session supplies it
        if table is None:  # the seven spots of the rules
            ev = exact.expected_values(view.composition, view.rules)[:, self.columns]
        else:  # the table's columns: the seven spots (the same bits), then its catalog or user bets
            ev = table.expected_values(view.composition)[:, self.columns]
        best, positive = exact.best_positive(ev)
        column = np.where(positive, self.columns[best], systems.NO_BET)
        return systems.capped_proposal(column, np.where(positive, self.base, 0.0), view.max_units)


__all__ = [
    "ModelActor",
    "Sb3Policy",
    "NeverBet",
    "PerfectInformation",
    "save_policy",
    "model_files",
    "algorithm_class",
    "MissingExtra",
    "require_rl",
    "transform_obs",
    "obs_transform_wrapper",
    "ALGORITHMS",
    "OBS_TRANSFORMS",
    "sees_hand_counters",
    "ModelMismatch",
    "file_sha256",
    "write_manifest",
    "verify_model_files",
    "record_checksums",
    "read_meta",
    "check_model_spaces",
]

if __name__ == "__main__":  # python -m pb_gym.agents.learned --trust FOLDER
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "--trust":
        sys.exit(
            "usage: python -m pb_gym.agents.learned --trust FOLDER  (record the SHA-256 of a saved "
            "model's files in its env.json: only for a model whose source you trust)"
        )
    for name, digest in record_checksums(sys.argv[2]).items():
        print(f"{digest}  {name}")
