"""Training checkpoints: an interrupted ``pb-gym train`` continues where its last checkpoint stopped.

While an algorithm learns, :class:`Checkpointer` (an SB3 callback) saves everything the rest of the
training depends on, every ``minutes`` of training, at the start of a rollout (after the previous
update: nothing is half done):

* the model (``model.zip``: weights, optimizer state, step counters, the last observations) and, for
  an off-policy algorithm (DQN), its replay buffer;
* ``state.pkl``: the native vector env with its tables (shoes, random streams, bankrolls, records),
  the episode statistics of ``VecMonitor``, the running statistics of ``VecNormalize``, the random
  number generators (Python's, numpy's global, torch's, the action space's), RecurrentPPO's LSTM
  states and the learning-curve callbacks' rows and windows.

A resumed training loads them and learns the remaining timesteps: the same updates, on the same
hands, with the same random draws as a run that was never stopped, so the trained weights and the
curves are the same bit for bit (``tests/experiments/train/test_train.py`` checks it for PPO and DQN; A2C,
MaskablePPO and RecurrentPPO were checked the same way).

Where: ``OUT/.partial/checkpoint_<timesteps>/``, recorded as the run's ``checkpoint`` step (the files'
SHA-256 in JSON, written after the files, atomically; the older checkpoint is removed only then), so a
kill at any moment leaves one whole checkpoint.

Trust: ``model.zip``, the replay buffer and ``state.pkl`` are pickles (SB3's own format pickles parts
of a model, and ``state.pkl`` holds the native vector env, numba-compiled tables and generator states
that have no code-free format), so loading one could run code. They are loaded only when this run can
vouch for them: the checkpoint's record is a step file sealed with an HMAC whose key is kept outside
the output folder, in the user's cache (:func:`pb_gym.experiments.common.chunk_store.sealing_key`, 0600), and
it
holds each file's SHA-256. A SHA-256 kept in the same folder alone would prove nothing (whoever can
change the file can change its checksum); the keyed seal cannot be forged without the key, so a
file whose SHA-256 matches a sealed record is the very file this user's pb-gym wrote. (The
alternative, rewriting SB3's state as torch state dicts loaded with ``weights_only=True``, would not
cover the env's state, which would still need a pickle or a format of its own.) Every name read from
a record must be a plain name inside ``.partial`` (no ``..``, absolute path or symbolic link), the
folder and its files must be this user's and not writable by others
(:class:`pb_gym.experiments.common.chunk_store.ResumeError` otherwise), and a checkpoint that fails a check is
refused, saying why, and training starts again.
"""

from __future__ import annotations

import pickle
import random
import re
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pb_gym.agents import learned
from pb_gym.experiments.common import chunk_store

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

STEP = "checkpoint"
"""The run's step that records the last checkpoint
(:meth:`pb_gym.experiments.common.chunk_store.ChunkStore.save_step`)."""
STATE_FILE, BUFFER_FILE = "state.pkl", "replay_buffer.pkl"
_FOLDER = re.compile(rf"{STEP}_\d{{12}}")
_FILES = frozenset({learned.MODEL_FILE, STATE_FILE, BUFFER_FILE})


def _checked_record(store: chunk_store.ChunkStore, record: Any) -> tuple[Path, list[tuple[Path, str]]]:
    """The folder and files of a checkpoint record, every one a plain name inside the store's folder
    (:class:`pb_gym.experiments.common.chunk_store.Refused` otherwise)."""
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("folder"), str)
        or not isinstance(record.get("files"), list)
        or not isinstance(record.get("timesteps"), int)
        or not isinstance(record.get("seconds"), float)
    ):
        raise chunk_store.Refused("its record does not have the structure of a checkpoint's")
    if not _FOLDER.fullmatch(record["folder"]):
        raise chunk_store.Refused(f"its folder {record['folder']!r} is not a checkpoint's")
    folder = store.inside(record["folder"])
    files = []
    for entry in record["files"]:
        if not (
            isinstance(entry, list) and len(entry) == 2 and entry[0] in _FILES and isinstance(entry[1], str)
        ):
            raise chunk_store.Refused(f"its file entry {str(entry)[:60]!r} is not a checkpoint file")
        files.append((store.inside(entry[0], under=record["folder"]), entry[1]))
    if {p.name for p, _ in files} < {learned.MODEL_FILE, STATE_FILE}:
        raise chunk_store.Refused("its record lacks the model or the state")
    return folder, files


def _layers(env) -> dict[str, Any]:
    """The wrappers of the training env by role: ``normalizer`` (VecNormalize or None), ``monitor``
    (VecMonitor) and ``adapter`` (the innermost env: :class:`agents.sb3_vec_env.PuntoBancoSB3VecEnv`)."""
    from stable_baselines3.common.vec_env import (
        VecEnvWrapper,
        VecMonitor,
        VecNormalize,
        unwrap_vec_wrapper,
    )

    adapter = env
    while isinstance(adapter, VecEnvWrapper):
        adapter = adapter.venv
    return {
        "normalizer": unwrap_vec_wrapper(env, VecNormalize),
        "monitor": unwrap_vec_wrapper(env, VecMonitor),
        "adapter": adapter,
    }


_NORMALIZER_STATE = ("obs_rms", "ret_rms", "returns", "old_obs", "old_reward")
_MODEL_STATE = ("_last_lstm_states",)
"""What ``Algorithm.load`` rebuilds from scratch although the next rollout continues it: RecurrentPPO's
LSTM states after the last observations (SB3 saves the observations themselves in ``model.zip``)."""
_MONITOR_STATE = ("episode_returns", "episode_lengths", "episode_count")


def capture(model, callbacks: list) -> dict[str, Any]:
    """What the rest of the training depends on besides ``model.zip`` (see the module docstring)."""
    import torch

    layers = _layers(model.get_env())
    state: dict[str, Any] = {
        "timesteps": int(model.num_timesteps),
        "rng": {
            "python": random.getstate(),
            "numpy": np.random.get_state(),
            "torch": torch.get_rng_state(),
            "action_space": model.action_space.np_random.bit_generator.state,
        },
        "venv": layers["adapter"].venv,
        "monitor": {k: getattr(layers["monitor"], k) for k in _MONITOR_STATE},
        "normalizer": (
            None
            if layers["normalizer"] is None
            else {k: getattr(layers["normalizer"], k) for k in _NORMALIZER_STATE}
        ),
        "callbacks": [cb.checkpoint_state() for cb in callbacks],
        "model": {k: getattr(model, k) for k in _MODEL_STATE if hasattr(model, k)},
    }
    return state


def restore(model, state: dict[str, Any], callbacks: list) -> None:
    """Put a loaded model's env, generators and callbacks back as :func:`capture` found them (after
    ``Algorithm.load``, which reseeds the generators)."""
    import torch

    layers = _layers(model.get_env())
    layers["adapter"].venv = state["venv"]
    for key, value in state["model"].items():
        setattr(model, key, value)
    for key, value in state["monitor"].items():
        setattr(layers["monitor"], key, value)
    if state["normalizer"] is not None:
        for key, value in state["normalizer"].items():
            setattr(layers["normalizer"], key, value)
    rng = state["rng"]
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    model.action_space.np_random.bit_generator.state = rng["action_space"]
    for callback, kept in zip(callbacks, state["callbacks"], strict=True):
        callback.resume_from(kept)


def save(store: chunk_store.ChunkStore, model, callbacks: list, seconds: float) -> Path:
    """Write a checkpoint of the training now into ``.partial/checkpoint_<timesteps>``, record it,
    then remove the one before (a kill at any moment leaves one whole checkpoint)."""
    state = capture(model, callbacks)
    name = f"{STEP}_{state['timesteps']:012d}"
    folder = store.folder(name)
    files = [folder / learned.MODEL_FILE]
    try:
        model.save(files[0])
        if hasattr(model, "replay_buffer") and model.replay_buffer is not None:
            files.append(folder / BUFFER_FILE)
            model.save_replay_buffer(files[-1])
        files.append(folder / STATE_FILE)
        with open(files[-1], "wb") as handle:
            pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # (a full disk, Ctrl-C): no half-written checkpoint is left behind
        shutil.rmtree(folder, ignore_errors=True)
        raise
    found, before = store.load_step(STEP)
    store.save_step(
        STEP,
        {
            "folder": name,
            "timesteps": state["timesteps"],
            "seconds": float(seconds),
            "files": [[p.name, learned.file_sha256(p)] for p in files],
        },
    )
    if (
        found
        and isinstance(before, dict)
        and isinstance(before.get("folder"), str)
        and (_FOLDER.fullmatch(before["folder"]) and before["folder"] != name)
    ):
        try:
            shutil.rmtree(store.inside(before["folder"]), ignore_errors=True)
        except chunk_store.Refused:
            pass  # a symbolic link in the record's place: nothing of this run's to remove
    return folder


def latest(store: chunk_store.ChunkStore) -> dict | None:
    """The recorded checkpoint whose files are whole and unchanged (its record, with ``path``), else
    None (saying why on stderr when one was recorded but is not usable)."""
    found, record = store.load_step(STEP)
    if not found:
        return None
    try:
        folder, files = _checked_record(store, record)
    except chunk_store.Refused as error:
        print(
            f"resuming: the training checkpoint in {store.directory} is not used ({error}); "
            "training from the start",
            file=sys.stderr,
            flush=True,
        )
        return None
    for path, digest in files:
        if not path.is_file() or path.is_symlink():
            problem = "missing"
        else:
            chunk_store.check_private(path, "the checkpoint file")  # (ResumeError: others could write it)
            problem = "changed" if learned.file_sha256(path) != digest else ""
        if problem:
            print(
                f"resuming: the training checkpoint in {folder} is not whole ({path.name} is "
                f"{problem}); training from the start",
                file=sys.stderr,
                flush=True,
            )
            return None
    return {**record, "path": folder}


def discard(store: chunk_store.ChunkStore) -> None:
    """Remove the checkpoints (the training finished and its model is kept)."""
    found, record = store.load_step(STEP)
    for folder in store.directory.glob(f"{STEP}_*"):
        shutil.rmtree(folder, ignore_errors=True)
    if found:
        store.drop_step(STEP)


def load(checkpoint: dict, cls: type[BaseAlgorithm], env, callbacks: list):
    """The model of a checkpoint (:func:`latest`) on ``env``, with its env, generators, replay buffer
    and callbacks restored: ready to learn the remaining timesteps."""
    folder = Path(checkpoint["path"])
    # force_reset=False: keep the checkpoint's last observations (the env is restored below as it was)
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    model = cls.load(folder / learned.MODEL_FILE, env=env, device="cpu", force_reset=False)
    if (folder / BUFFER_FILE).is_file() and isinstance(model, OffPolicyAlgorithm):
        model.load_replay_buffer(folder / BUFFER_FILE)
    with open(folder / STATE_FILE, "rb") as handle:
        # vouched for: its SHA-256 is in a record sealed with the user's key (see the module docstring)
        state = pickle.load(handle)  # noqa: S301
    restore(model, state, callbacks)
    return model


def make_callback(store: chunk_store.ChunkStore, minutes: float, callbacks: list, seconds_before: float):
    """An SB3 callback saving a checkpoint every ``minutes`` of training (0: never), at the start of a
    rollout, with the state of ``callbacks`` (the learning curves)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Checkpointer(BaseCallback):
        def _on_training_start(self) -> None:
            self.started = time.perf_counter()
            self.last = self.started

        def _on_rollout_start(self) -> None:
            now = time.perf_counter()
            if minutes > 0 and now - self.last >= 60.0 * minutes and self.num_timesteps > 0:
                try:
                    save(store, self.model, callbacks, seconds_before + now - self.started)
                except OSError as error:  # training goes on: the checkpoint is only insurance
                    print(
                        f"warning: could not keep a training checkpoint in {store.directory} "
                        f"({error}); training goes on, the next attempt in {minutes:g} minutes",
                        file=sys.stderr,
                        flush=True,
                    )
                self.last = time.perf_counter()

        def _on_step(self) -> bool:
            return True

    return Checkpointer()


__all__ = ["STEP", "capture", "restore", "save", "latest", "discard", "load", "make_callback"]
