"""Learned policies as betting systems: a saved stable-baselines3 model plays inside ``pb-gym evaluate``.

:class:`Sb3Policy` (config ``type: sb3``) loads a model saved by ``pb-gym train`` and plays one seat of
the evaluation's table session (:class:`pb_gym.session.Session`). Before every hand it reads its
observation with the environment's own function, :func:`pb_gym.envs.table.observe` (bankroll, bead
plate, last hand, cards left, hands, unseen cards: what the env would show at that seat), and its
actions become stakes through the environment's own :func:`~pb_gym.envs.table.decode_actions` (same
stake levels, limits and forced-bet rule as the environment the model was trained in).

Files of a trained model (written by :func:`save_policy`, in one folder)::

    model.zip          the SB3 model
    env.json           algorithm, environment keyword arguments, observation transform, normalization
    vecnormalize.pkl   VecNormalize statistics (only when the observations were normalized)

Loading a model unpickles ``model.zip`` (its policy) and ``vecnormalize.pkl``: a crafted file runs
any code it likes. ``env.json`` records the SHA-256 of both when the model is saved, and a model
whose files changed since is refused before anything is unpickled (:func:`verify_model_files`,
naming the file); ``pb-gym train`` also writes ``SHA256SUMS`` for every file of the run. A checksum
catches a changed or swapped file, not someone who rewrites ``env.json`` too: load only models from
sources you trust.

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

Also here: :class:`NeverBet` (``type: never``), the abstaining baseline, and :class:`PerfectInformation`
(``type: perfect``), the flat perfect-information bettor (``base`` units on the best bet whose exact EV
for the unseen cards is positive).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.agents import roads_features as RF
from pb_gym.agents import systems as S
from pb_gym.envs import table as T

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

MODEL_FILE = "model.zip"
ENV_FILE = "env.json"
NORMALIZE_FILE = "vecnormalize.pkl"

ALGORITHMS: tuple[str, ...] = ("PPO", "A2C", "DQN", "MaskablePPO", "RecurrentPPO")
OBS_TRANSFORMS: tuple[str, ...] = ("none", "composition", "counts", "shoe_only", "roads")
"""The observation transforms (:func:`transform_obs`), the ``obs_transform`` of a train config."""
SHOE_ONLY_KEYS: tuple[str, ...] = ("shoe", "cards_left")
"""What ``shoe_only`` keeps: the composition of the unseen cards, and how many there are."""


def sees_hand_counters(obs_transform: str) -> bool:
    """Whether a policy under ``obs_transform`` sees the bankroll and hand counters, which leave their
    training range over sessions longer than its training episodes (``shoe_only`` drops them)."""
    return obs_transform != "shoe_only"


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
    import importlib.util
    import sys

    for name in RL_MODULES:
        try:  # (a module set to None in sys.modules is one that cannot be imported)
            missing = sys.modules[name] is None if name in sys.modules else not importlib.util.find_spec(name)
        except (ImportError, ValueError):
            missing = True
        if missing:
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


# ------------------------------------------------------------------------------ env kwargs <-> files
def env_kwargs_to_json(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Environment keyword arguments as plain JSON values (tuples -> lists)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in kwargs.items()}


LEGACY_ENV_DEFAULTS: dict[str, Any] = T.LEGACY_DEFAULTS
"""The environment defaults before the flat, scaled observation and the discrete actions became the
defaults (:data:`pb_gym.envs.config.LEGACY_DEFAULTS`)."""


def env_kwargs_from_json(data: dict[str, Any]) -> dict[str, Any]:
    """Environment keyword arguments read from ``env.json``: :func:`pb_gym.envs.config.upgrade_record`
    (the record of :meth:`pb_gym.envs.config.EnvConfig.record`, or an older file's keys mapped onto
    it; an unknown key is a ValueError naming it)."""
    return T.upgrade_record(data)


def save_policy(
    model,
    folder: str | Path,
    env_kwargs: dict[str, Any],
    algorithm: str,
    obs_transform: str = "none",
    vecnormalize=None,
    extra: dict | None = None,
) -> Path:
    """Save ``model`` and what is needed to replay it (env kwargs, normalization) in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save(folder / MODEL_FILE)
    # every field spelled out (EnvConfig.record): defaults may change, files stay true
    meta: dict[str, Any] = {
        "algorithm": algorithm,
        "env_kwargs": T.make_config(**env_kwargs).record(),
        "obs_transform": obs_transform,
        "vecnormalize": None,
    }
    if vecnormalize is not None:
        vecnormalize.save(str(folder / NORMALIZE_FILE))
        meta["vecnormalize"] = NORMALIZE_FILE
    meta.update(extra or {})
    # the files evaluate unpickles: a changed one is refused before it is loaded (see model_files)
    meta["sha256"] = {
        name: file_sha256(folder / name) for name in (MODEL_FILE, meta["vecnormalize"]) if name is not None
    }
    (folder / ENV_FILE).write_text(json.dumps(meta, indent=2))
    return folder / MODEL_FILE


# -------------------------------------------------------------------------------------- checksums
MANIFEST_FILE = "SHA256SUMS"
"""The SHA-256 of every file a training run wrote, in ``sha256sum`` format (``sha256sum -c``)."""


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file, in hexadecimal."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(folder: str | Path, files: Sequence[str | Path]) -> Path:
    """Write :data:`MANIFEST_FILE` in ``folder``: the SHA-256 of each of ``files`` (paths under it)."""
    folder = Path(folder)
    lines = [f"{file_sha256(f)}  {Path(f).relative_to(folder).as_posix()}\n" for f in files]
    (folder / MANIFEST_FILE).write_text("".join(lines))
    return folder / MANIFEST_FILE


def verify_model_files(folder: str | Path, meta: dict) -> None:
    """Raise ValueError, naming the file, unless the files of a saved model that are unpickled when it
    is loaded (``model.zip``, ``vecnormalize.pkl``) have the SHA-256 recorded in its ``env.json`` when
    it was trained. (This catches a file changed or swapped since training; it cannot stop someone who
    rewrites env.json as well: load only models from people you trust.)"""
    folder = Path(folder)
    recorded = meta.get("sha256")
    needed = [MODEL_FILE] + ([meta["vecnormalize"]] if meta.get("vecnormalize") else [])
    if not isinstance(recorded, dict):
        raise ValueError(
            f"{folder / ENV_FILE} records no SHA-256 of {', '.join(needed)} (saved before "
            "pb-gym recorded them, or not by pb-gym train); loading a model unpickles "
            "it, which can run any code: retrain it, or, if you trust its source, record "
            f"the checksums with: python -m pb_gym.agents.learned --trust {folder}"
        )
    for name in needed:
        if Path(name).name != name:
            raise ValueError(f"{folder / ENV_FILE}: {name!r} is not a file name in the model's folder")
        expected = recorded.get(name)
        if expected is None:
            raise ValueError(f"{folder / ENV_FILE} records no SHA-256 of {name}; refusing to load it")
        if not (folder / name).is_file():
            raise ValueError(f"{folder / name} is missing (env.json says the model needs it)")
        actual = file_sha256(folder / name)
        if actual != expected:
            raise ValueError(
                f"{folder / name} changed since training (SHA-256 {actual[:16]}..., "
                f"recorded in env.json {str(expected)[:16]}...); refusing to load it: "
                "loading unpickles it, which can run any code"
            )


def record_checksums(folder: str | Path) -> dict:
    """Record in ``env.json`` the SHA-256 of the model's files as they are now (for a model saved
    before pb-gym recorded them, and that you trust)."""
    folder = Path(folder)
    meta = json.loads((folder / ENV_FILE).read_text())
    names = [MODEL_FILE] + ([meta["vecnormalize"]] if meta.get("vecnormalize") else [])
    meta["sha256"] = {name: file_sha256(folder / name) for name in names}
    (folder / ENV_FILE).write_text(json.dumps(meta, indent=2))
    return meta["sha256"]


def model_files(path: str | Path) -> tuple[Path, Path]:
    """``(model.zip, env.json)`` of a model given as the zip or its folder; ValueError if missing."""
    path = Path(path)
    zip_path = path / MODEL_FILE if path.is_dir() else path
    if not zip_path.is_file() and zip_path.with_suffix(".zip").is_file():
        zip_path = zip_path.with_suffix(".zip")
    if not zip_path.is_file():
        raise ValueError(
            f"no saved model at {str(path)!r} (expected a {MODEL_FILE} written by "
            "pb-gym train, or its folder)"
        )
    meta = zip_path.parent / ENV_FILE
    if not meta.is_file():
        raise ValueError(
            f"{str(meta)!r} is missing: the environment settings the model was trained "
            "with are saved there by pb-gym train"
        )
    data = read_meta(meta)
    if zip_path.name != MODEL_FILE:
        raise ValueError(
            f"{zip_path}: a saved model is the {MODEL_FILE} of a folder written by "
            "pb-gym train (give that file or its folder)"
        )
    verify_model_files(zip_path.parent, data)
    check_model_spaces(zip_path, data)
    return zip_path, meta


MAX_META_BYTES = 1 << 20
"""An ``env.json`` is at most this big (1 MiB; pb-gym train writes about 1 KiB)."""


def read_meta(meta: str | Path) -> dict[str, Any]:
    """The content of a model's ``env.json``, checked: a JSON mapping whose ``algorithm``,
    ``env_kwargs`` (keyword arguments the environment accepts), ``obs_transform`` and
    ``vecnormalize`` are what :func:`save_policy` writes; ValueError naming the file and the key."""
    meta = Path(meta)
    try:
        with open(meta, "rb") as handle:
            raw = handle.read(MAX_META_BYTES + 1)
        if len(raw) > MAX_META_BYTES:
            raise ValueError(f"larger than {MAX_META_BYTES // 1024} KiB")
        data = json.loads(raw)
    except RecursionError:
        raise ValueError(f"{meta}: nested too deeply; not an env.json written by pb-gym train") from None
    except (OSError, ValueError) as error:
        raise ValueError(f"{meta}: not a readable env.json ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{meta}: not an env.json written by pb-gym train")
    where = f"{meta} (not as pb-gym train writes it)"
    if data.get("algorithm") not in ALGORITHMS:
        raise ValueError(
            f"{where}: algorithm {_shown(data.get('algorithm'))} is not allowed; allowed: "
            f"{', '.join(ALGORITHMS)}"
        )
    if data.setdefault("obs_transform", "none") not in OBS_TRANSFORMS:
        raise ValueError(
            f"{where}: obs_transform {_shown(data['obs_transform'])} is not allowed; allowed: "
            f"{', '.join(OBS_TRANSFORMS)}"
        )
    if data.get("vecnormalize") not in (None, NORMALIZE_FILE):
        raise ValueError(
            f"{where}: vecnormalize {_shown(data.get('vecnormalize'))} is not allowed; allowed: null "
            f"or {NORMALIZE_FILE!r}"
        )
    kwargs = data.get("env_kwargs")
    if not isinstance(kwargs, dict):
        raise ValueError(
            f"{where}: env_kwargs is {'missing' if kwargs is None else _shown(kwargs)}; allowed: the "
            "mapping of environment settings the model was trained with"
        )
    try:
        T.make_config(**env_kwargs_from_json(kwargs))
    except (TypeError, ValueError) as error:
        raise ValueError(f"{meta}: env_kwargs: {error}") from None
    return data


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _space_form(space) -> Any:
    """What a policy network is built for in a space: its kind and shapes (bounds left out: a changed
    bound, e.g. ``max_hands``, leaves the model usable, and the evaluation warns of it)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        return {key: _space_form(space.spaces[key]) for key in sorted(space.spaces)}
    if isinstance(space, spaces.MultiDiscrete):
        return f"MultiDiscrete{[int(n) for n in np.ravel(space.nvec)]}"
    if isinstance(space, spaces.Discrete):
        return f"Discrete({int(space.n)})"
    if isinstance(space, spaces.Box):
        return f"Box{tuple(space.shape)}"
    return type(space).__name__


def _form_differences(model: Any, env: Any, path: str = "") -> list[str]:
    if isinstance(model, dict) and isinstance(env, dict):
        out = [f"{path}{key}: model only" for key in model if key not in env]
        out += [f"{path}{key}: env.json only" for key in env if key not in model]
        for key in model:
            if key in env:
                out += _form_differences(model[key], env[key], f"{path}{key}.")
        return out
    return [] if model == env else [f"{path.rstrip('.') or 'space'}: model {model}, env.json {env}"]


POLICY_MODULES: dict[str, str] = {
    "PPO": "stable_baselines3.common.policies",
    "A2C": "stable_baselines3.common.policies",
    "DQN": "stable_baselines3.dqn.policies",
    "MaskablePPO": "sb3_contrib.common.maskable.policies",
    "RecurrentPPO": "sb3_contrib.common.recurrent.policies",
}
"""The module of each algorithm's policies (SB3 stores the policy class's module in the zip): a model
whose ``env.json`` names another algorithm than the one that trained it is refused before a run."""


def check_model_spaces(zip_path: Path, meta: dict) -> None:
    """Raise ValueError unless the model in ``zip_path`` was trained for the observation and action
    spaces its ``env.json`` describes (the kind, the keys and the shapes): a model of another
    environment, or an ``env.json`` whose ``history``, ``stake_levels``, bets or observation changed,
    is refused here, before a run, instead of failing in the policy. Reads the spaces SB3 stored in
    the zip's ``data``; call it after :func:`verify_model_files` (they are pickles, as the rest of the
    model: what the recorded checksum vouches for)."""
    import base64
    import pickle
    import zipfile

    cfg = T.make_config(**env_kwargs_from_json(meta["env_kwargs"]))
    expected = {
        "observation_space": transformed_space(meta["obs_transform"], T.observation_space(cfg)),
        "action_space": T.action_space(cfg),
    }
    try:
        with zipfile.ZipFile(zip_path) as archive:
            data = json.loads(archive.read("data"))
        stored = {key: data[key][":serialized:"] for key in expected}
        spaces_in = {key: pickle.loads(base64.b64decode(value)) for key, value in stored.items()}  # noqa: S301
    except Exception as error:  # noqa: BLE001 (a zip that is not an SB3 model: any of many errors)
        raise ValueError(
            f"{zip_path}: its spaces cannot be read ({type(error).__name__}: {str(error)[:100]}); "
            "not a model saved by pb-gym train"
        ) from None
    module = data.get("policy_class", {}).get("__module__") if isinstance(data, dict) else None
    if isinstance(module, str) and module != POLICY_MODULES[meta["algorithm"]]:
        trained = [name for name, m in POLICY_MODULES.items() if m == module]
        raise ValueError(
            f"{zip_path}: its {ENV_FILE} says algorithm {meta['algorithm']!r}, but the model's policy is "
            f"one of {' or '.join(trained) or module} (a changed {ENV_FILE}); use the model's own folder "
            "as pb-gym train wrote it"
        )
    for key, space in expected.items():
        differ = _form_differences(_space_form(spaces_in[key]), _space_form(space))
        if differ:
            raise ValueError(
                f"{zip_path}: the model was trained for another {key.replace('_', ' ')} than its "
                f"{ENV_FILE} describes ({'; '.join(differ[:4])}): a model of another environment, or "
                f"a changed {ENV_FILE} (history, stake_levels, bets, observation); use the "
                "model's own folder as pb-gym train wrote it"
            )


# ----------------------------------------------------------------------------- observation transform
_FULL_FRACTION: dict[int, np.ndarray] = {}


_LINEAR_EV: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
COUNTED_BETS: tuple[str, ...] = ("dragon7", "panda8", "tie")
"""The bets whose linear (effect-of-removal) EV estimate the ``counts`` transform adds (the pairs have
none: every effect of removal of a pair bet is zero)."""


def _linear_ev_model(rules: R.Rules) -> tuple[np.ndarray, np.ndarray]:
    """Full-shoe EV ``(k,)`` and effects of removal ``(13, k)`` of :data:`COUNTED_BETS`, from the exact
    calculator: the linear estimate EV(c) ~ EV(full) + sum_r EoR_r x removed_r x N_full / N_unseen."""
    key = (rules,)
    if key not in _LINEAR_EV:
        full = R.full_shoe(rules.decks)
        columns = [R.BETS.index(b) for b in COUNTED_BETS]
        ev_full = exact.expected_values(full, rules)[columns]
        removed = full[None, :] - np.eye(R.N_RANKS, dtype=np.int64)
        eor = exact.expected_values(removed, rules)[:, columns] - ev_full[None, :]
        _LINEAR_EV[key] = (ev_full, eor)
    return _LINEAR_EV[key]


def transform_obs(kind: str, obs: dict[str, np.ndarray], cfg: T.EnvConfig) -> dict[str, np.ndarray]:
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
        out["roads"] = RF.roads_features(obs["bead_plate"], cfg.obs_scale == "scaled")
        return out
    if kind == "none" or "shoe" not in obs:
        return obs
    full = _FULL_FRACTION.get(cfg.rules.decks)
    if full is None:
        f = R.full_shoe(cfg.rules.decks).astype(np.float32)
        full = _FULL_FRACTION[cfg.rules.decks] = f / f.sum()
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
        return spaces.Dict({**boxes, "roads": spaces.Box(-1.0, 1.0, shape=(RF.SIZE,), dtype=np.float32)})
    if kind == "none" or not isinstance(space, spaces.Dict) or "shoe" not in space.spaces:
        return space
    boxes = dict(space.spaces)
    boxes["shoe"] = spaces.Box(-100.0, 100.0, shape=boxes["shoe"].shape, dtype=np.float32)
    if kind == "counts":
        boxes["count"] = spaces.Box(-1000.0, 1000.0, shape=(len(COUNTED_BETS),), dtype=np.float32)
    if kind == "shoe_only":
        boxes = {key: boxes[key] for key in SHOE_ONLY_KEYS}
    return spaces.Dict(boxes)


def obs_transform_wrapper(venv, kind: str, cfg: T.EnvConfig):
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


# ------------------------------------------------------------------------------------ the systems
def training_config(model: str | Path) -> T.EnvConfig:
    """The environment settings a saved model was trained with (reads ``env.json``; no torch)."""
    _, meta_path = model_files(model)
    return T.make_config(**env_kwargs_from_json(read_meta(meta_path)["env_kwargs"]))


def training_mismatch(cfg: T.EnvConfig, rules: R.Rules, min_units: float, max_units: float) -> str | None:
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


class Sb3Policy(S.BettingSystem):
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
        self.cfg = T.make_config(**self.env_kwargs)
        if self.cfg.action_mode == "box":
            raise ValueError(
                f"{zip_path}: action_mode 'box' places several bets per hand; the "
                "evaluation replays one bet per hand (multidiscrete or discrete)"
            )
        self.deterministic = bool(deterministic)
        self.model = algorithm_class(self.algorithm).load(zip_path, device="cpu")
        self.normalizer = None
        if meta.get("vecnormalize"):
            self.normalizer = _load_normalizer(
                zip_path.parent / meta["vecnormalize"], self.env_kwargs, self.obs_transform, self.cfg
            )
        self.bead_plate = self.cfg.history  # the session keeps at least this much bead plate
        self._checked = False
        self._lstm_state: tuple[np.ndarray, ...] | None = None

    def reset(self, n_tables: int, rng: np.random.Generator | None = None) -> None:
        super().reset(n_tables, rng)
        self._lstm_state = None
        self._checked = False
        if not self.deterministic:
            import torch

            torch.manual_seed(int(self.rng.integers(0, 2**31 - 1)))

    # -- consistency with the training environment --------------------------------------------
    def check_view(self, view: S.TableView) -> None:
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
    def observe(self, view: S.TableView):
        """The environment's observation of this seat at every table (before any transform or
        normalization), by the environment's own :func:`pb_gym.envs.table.observe`."""
        if view.session is None:
            raise ValueError(
                "the TableView carries no table session (view.session): a learned "
                "policy reads its observations from the session it plays in"
            )
        return T.split_obs(self.cfg, T.observe(self.cfg, view.session, seat=view.seat, per_unit=view.unit))

    def stakes(self, actions: np.ndarray, view: S.TableView) -> S.Proposal:
        """The proposal of ``actions`` per table: the environment's stakes (one column; NO_BET where
        nothing is placed; the env's stake rules, its forced bet included) and where the table maximum
        cut the requested stake."""
        cfg = self.cfg
        bankroll = np.asarray(view.bankroll_units, dtype=np.float64)
        n = bankroll.shape[0]
        stakes = T.decode_actions(cfg, actions, bankroll, np.zeros((n, cfg.n_columns)))
        placed = stakes > 0
        # the policy's own columns (its env's), then the study table's
        own = np.where(placed.any(axis=1), placed.argmax(axis=1), S.NO_BET).astype(np.int8)
        units = stakes[np.arange(n), np.maximum(own, 0)] * (own >= 0)
        requested, _ = T.requested_stakes(cfg, actions, bankroll)
        capped = (own >= 0) & (requested.max(axis=1) > cfg.max_units + 1e-9)
        column = own
        if self._to_table is not None:
            column = np.where(own >= 0, self._to_table[np.maximum(own, 0)], S.NO_BET).astype(np.int8)
        return S.Proposal(column, units, capped)

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

    def _act(self, obs, view: S.TableView) -> np.ndarray:
        """The model's actions for the observations (transform, normalization, masks, LSTM state)."""
        obs = transform_obs(self.obs_transform, obs, self.cfg) if isinstance(obs, dict) else obs
        if self.normalizer is not None:
            obs = self.normalizer.normalize_obs(obs)
        kwargs: dict[str, Any] = {"deterministic": self.deterministic}
        if self.algorithm == "MaskablePPO":
            kwargs["action_masks"] = T.action_masks(self.cfg, np.asarray(view.bankroll_units))
        if self.algorithm == "RecurrentPPO":
            n = len(view.bankroll_units)
            starts = np.full(n, view.hands_played == 0)
            actions, self._lstm_state = self.model.predict(
                obs, state=self._lstm_state, episode_start=starts, **kwargs
            )
            return actions
        actions, _ = self.model.predict(obs, **kwargs)
        return actions

    def bet_columns(self) -> tuple[int, ...]:
        own = [int(spot) for spot in self.cfg.choice_spot if spot >= 0]
        return tuple(int(self._to_table[c]) for c in own) if self._to_table is not None else tuple(own)

    def propose(self, view: S.TableView) -> S.Proposal:
        if not self._checked:
            self.check_view(view)
        obs = self.observe(view)
        actions = self._act(obs, view)
        return self.stakes(actions, view)


def _load_normalizer(path: Path, env_kwargs: dict, obs_transform: str, cfg: T.EnvConfig):
    from stable_baselines3.common.vec_env import VecNormalize

    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    venv = obs_transform_wrapper(PuntoBancoSB3VecEnv(num_envs=1, **env_kwargs), obs_transform, cfg)
    normalizer = VecNormalize.load(str(path), venv)
    normalizer.training = False
    normalizer.norm_reward = False
    return normalizer


class NeverBet(S.BettingSystem):
    """Never bets (the abstaining baseline: its report line shows 0 hands)."""

    key = "never"

    def bet_columns(self) -> tuple[int, ...]:
        return ()

    def propose(self, view: S.TableView) -> S.Proposal:
        return S.Proposal(
            np.full(self.n, S.NO_BET, dtype=np.int64), np.zeros(self.n), np.zeros(self.n, dtype=bool)
        )


class PerfectInformation(S.BettingSystem):
    """Flat perfect-information bettor: ``base`` units on the bet of ``bets`` with the highest exact EV
    for the cards not yet seen, whenever that EV is positive (no bet otherwise).

    Args:
        bets: the bets whose exact EV is priced before each hand.
    """

    key = "perfect"
    needs_composition = True
    not_configurable = ("bet",)

    def __init__(self, bets: S.BetNames = ("dragon7", "panda8"), **kwargs) -> None:
        self.bets = S.check_bets(bets)
        super().__init__(bet=self.bets[0], **kwargs)
        self.columns = S.bet_columns(self.bets, None)

    def bind(self, table) -> None:
        super().bind(table)
        self.columns = S.bet_columns(self.bets, table)

    def bet_columns(self) -> tuple[int, ...]:
        return tuple(int(column) for column in self.columns)

    def propose(self, view: S.TableView) -> S.Proposal:
        table = view.bets or self.table_bets
        assert view.composition is not None  # needs_composition: the session supplies it
        if table is None:  # the seven spots of the rules
            ev = exact.expected_values(view.composition, view.rules)[:, self.columns]
        else:  # the table's columns: the seven spots (the same bits), then its catalog or user bets
            ev = table.expected_values(view.composition)[:, self.columns]
        best, positive = exact.best_positive(ev)
        column = np.where(positive, self.columns[best], S.NO_BET)
        return S.capped_proposal(column, np.where(positive, self.base, 0.0), view.max_units)


__all__ = [
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
