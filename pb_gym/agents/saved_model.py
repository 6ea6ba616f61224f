"""The files of a saved model: written, read back, and checked before anything in them is unpickled.

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

:mod:`pb_gym.agents.learned` exports these names too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pb_gym.agents.obs_transforms import OBS_TRANSFORMS, transformed_space
from pb_gym.envs import config
from pb_gym.envs import spaces as env_spaces

MODEL_FILE = "model.zip"
ENV_FILE = "env.json"
NORMALIZE_FILE = "vecnormalize.pkl"

ALGORITHMS: tuple[str, ...] = ("PPO", "A2C", "DQN", "MaskablePPO", "RecurrentPPO")
"""The algorithms a saved model's ``env.json`` may name (:func:`pb_gym.agents.learned.algorithm_class`)."""


# ------------------------------------------------------------------------------ env kwargs <-> files
def env_kwargs_to_json(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Environment keyword arguments as plain JSON values (tuples -> lists)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in kwargs.items()}


LEGACY_ENV_DEFAULTS: dict[str, Any] = config.LEGACY_DEFAULTS
"""The environment defaults before the flat, scaled observation and the discrete actions became the
defaults (:data:`pb_gym.envs.config.LEGACY_DEFAULTS`)."""


def env_kwargs_from_json(data: dict[str, Any]) -> dict[str, Any]:
    """Environment keyword arguments read from ``env.json``: :func:`pb_gym.envs.config.upgrade_record`
    (the record of :meth:`pb_gym.envs.config.EnvConfig.record`, or an older file's keys mapped onto
    it; an unknown key is a ValueError naming it)."""
    return config.upgrade_record(data)


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
        "env_kwargs": config.make_config(**env_kwargs).record(),
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
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


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
        config.make_config(**env_kwargs_from_json(kwargs))
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

    cfg = config.make_config(**env_kwargs_from_json(meta["env_kwargs"]))
    expected = {
        "observation_space": transformed_space(meta["obs_transform"], env_spaces.observation_space(cfg)),
        "action_space": env_spaces.action_space(cfg),
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


def training_config(model: str | Path) -> config.EnvConfig:
    """The environment settings a saved model was trained with (reads ``env.json``; no torch)."""
    _, meta_path = model_files(model)
    return config.make_config(**env_kwargs_from_json(read_meta(meta_path)["env_kwargs"]))
