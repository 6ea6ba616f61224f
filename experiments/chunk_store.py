"""Finished chunks kept on disk, so that an interrupted study resumes where it stopped.

A study run with ``--out DIR`` keeps every finished chunk under ``DIR/.partial/``, one file per chunk
(``chunk-000003.json.gz``, gzip-compressed JSON), written atomically (a temporary file renamed into
place: a chunk file is whole or absent, even after ``kill -9``). ``DIR/.partial/run.json`` records
the *identity* of the run the chunks belong to (the study, its validated config with its seed and
chunk size, the pb-gym version) and its SHA-256. A later run with the same identity loads the finished
chunks and computes only the missing ones; because a chunk's result depends only on the config and its
index (see :mod:`experiments.scale`) and is stored exactly (arrays as raw bytes, floats in
hexadecimal), the merged result is bit-identical to an uninterrupted run. A run with another identity
refuses to mix them (:class:`ResumeError`, naming what differs). The folder is removed with the rest
of the old outputs when the run's outputs are moved into place.

A run may keep finished work that is not a chunk the same way: a *step* (``step-NAME.json.gz``, its
result stored exactly, written last) and the files it made in ``DIR/.partial/NAME/`` (``pb-gym
train`` keeps its trained model there, so that an interrupted held-out evaluation does not train again).

Chunk files are JSON, never pickles: loading one cannot run code.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import shutil
import tempfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

PARTIAL = ".partial"
"""The folder, inside a run's output folder, that holds its finished chunks."""
RUN_FILE = "run.json"
FORMAT = 1


class ResumeError(ValueError):
    """The finished chunks on disk belong to another run (another config, seed or chunk plan)."""


# ------------------------------------------------------------------------------- exact JSON codec
def encode(value: Any) -> Any:
    """``value`` (nested dicts, lists, tuples, numpy arrays and scalars, floats, ints, strings) as JSON
    values that :func:`decode` turns back into an equal object, bit for bit and type for type."""
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("a chunk result holds an object array; only numeric arrays can be stored")
        return {"$array": value.dtype.str, "shape": list(value.shape),
                "data": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii")}
    if isinstance(value, np.generic):  # before float: np.float64 is a float
        return {"$scalar": value.dtype.str,
                "data": base64.b64encode(value.tobytes()).decode("ascii")}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"$float": value.hex()}
    if isinstance(value, dict):
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    raise TypeError(f"a chunk result holds a {type(value).__name__}, which cannot be stored")


def decode(value: Any) -> Any:
    """The inverse of :func:`encode`."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$array" in value or "$scalar" in value:
        dtype = np.dtype(value.get("$array", value.get("$scalar")))
        if dtype.hasobject:
            raise ValueError("object dtype")
        data = np.frombuffer(base64.b64decode(value["data"]), dtype=dtype)
        return data.reshape(value["shape"]).copy() if "$array" in value else data[0]
    if "$float" in value:
        return float.fromhex(value["$float"])
    if "$dict" in value:
        return {decode(k): decode(v) for k, v in value["$dict"]}
    if "$tuple" in value:
        return tuple(decode(v) for v in value["$tuple"])
    raise ValueError(f"unknown encoded value with keys {sorted(value)}")


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, flush it to disk, rename it into place."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _differences(stored: Any, current: Any, path: str = "") -> list[str]:
    """The key paths where two identities differ (``config.seed``, ``chunk_size``, ...)."""
    if isinstance(stored, dict) and isinstance(current, dict):
        return [d for key in sorted(set(stored) | set(current), key=str)
                for d in _differences(stored.get(key), current.get(key), f"{path}{key}.")]
    return [] if stored == current else [path.rstrip(".") or "(everything)"]


# ------------------------------------------------------------------------------------ the store
class ChunkStore:
    """The finished chunks of one run under ``directory`` (``OUT/.partial``).

    Args:
        directory: where the chunk files live; created when the first chunk is saved.
        identity: what the chunks' results depend on (study, config, seed, chunk plan), JSON values.
        resume: None (default): resume when ``directory`` holds chunks of the same run; True: the
            same (the caller asked for it explicitly); False: discard whatever ``directory`` holds.

    Raises:
        ResumeError: ``directory`` holds chunks of a run with another identity (unless resume=False).
    """

    def __init__(self, directory: str | Path, identity: dict, resume: bool | None = None) -> None:
        self.directory = Path(directory)
        self.identity = json.loads(json.dumps({"format": FORMAT, **identity}, sort_keys=True))
        self.key = hashlib.sha256(json.dumps(self.identity, sort_keys=True,
                                             separators=(",", ":")).encode()).hexdigest()
        if resume is False and self.directory.exists():
            shutil.rmtree(self.directory)
        meta = self.directory / RUN_FILE
        if self.directory.exists() and meta.is_file():
            try:
                stored = json.loads(meta.read_text())
            except (OSError, ValueError):
                stored = {}
            if stored.get("key") != self.key:
                differ = _differences(stored.get("identity"), self.identity)
                held = f"{len(self.finished())} finished chunk(s)"
                steps = self.finished_steps()
                if steps:
                    held += f" and the finished step(s) {', '.join(steps)}"
                raise ResumeError(
                    f"{self.directory} holds {held} of another run (it differs in "
                    f"{', '.join(differ[:6]) or 'an unreadable run.json'}; run key "
                    f"{str(stored.get('key'))[:12]}, this run {self.key[:12]}): they will not be mixed "
                    "with this run's. Rerun with the config they belong to to finish it, or pass "
                    "--no-resume to discard them, or choose another --out")
        elif self.directory.exists():  # no run.json: stopped before its first chunk was saved
            shutil.rmtree(self.directory)

    def _path(self, index: int) -> Path:
        return self.directory / f"chunk-{index:06d}.json.gz"

    def _claim(self) -> None:
        """Create the folder and record the run's identity in it (once), before anything is kept."""
        if not self.directory.is_dir():
            self.directory.mkdir(parents=True, exist_ok=True)
        meta = self.directory / RUN_FILE
        if not meta.is_file():
            _write_atomically(meta, json.dumps({"key": self.key, "identity": self.identity},
                                               indent=1).encode())

    def folder(self, name: str) -> Path:
        """``DIR/.partial/NAME``: a folder for finished work that is not a chunk (the files of a trained
        model), kept, like the chunks, until the run's outputs are in place. Whatever a step writes
        there counts as finished only once :meth:`save_step` has recorded the step (a folder of a run
        that recorded nothing is removed by the next run, as a run stopped before its first chunk)."""
        if not name.isidentifier():
            raise ValueError(f"{name!r} is not a step name")
        path = self.directory / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _step_path(self, name: str) -> Path:
        if not name.isidentifier():
            raise ValueError(f"{name!r} is not a step name")
        return self.directory / f"step-{name}.json.gz"

    def load_step(self, name: str) -> tuple[bool, Any]:
        """``(True, result)`` for a step of this run recorded by :meth:`save_step`, ``(False, None)``
        otherwise (also for a file that cannot be read: the step is done again)."""
        path = self._step_path(name)
        if not path.is_file():
            return False, None
        try:
            data = json.loads(gzip.decompress(path.read_bytes()))
            if data["key"] != self.key or data["step"] != name:
                return False, None
            return True, decode(data["result"])
        except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError):
            return False, None

    def save_step(self, name: str, result: Any) -> None:
        """Record a finished step of the run that is not a chunk (training a model, scoring it), with
        its result (stored exactly, as a chunk's), atomically."""
        self._claim()
        _write_atomically(self._step_path(name), gzip.compress(json.dumps(
            {"key": self.key, "step": name, "result": encode(result)}).encode(), compresslevel=1,
            mtime=0))

    def drop_step(self, name: str) -> None:
        """Forget a recorded step (its record only; its files are the caller's)."""
        self._step_path(name).unlink(missing_ok=True)

    def finished(self) -> list[int]:
        """Indexes of the chunks whose files are on disk."""
        if not self.directory.is_dir():
            return []
        return sorted(int(p.name.split("-")[1].split(".")[0])
                      for p in self.directory.glob("chunk-*.json.gz"))

    def finished_steps(self) -> list[str]:
        """Names of the steps recorded by :meth:`save_step`."""
        if not self.directory.is_dir():
            return []
        return sorted(p.name[len("step-"):-len(".json.gz")]
                      for p in self.directory.glob("step-*.json.gz"))

    def load(self, chunk) -> tuple[bool, Any]:
        """``(True, result)`` for a finished chunk of this run, ``(False, None)`` otherwise (also for a
        file that cannot be read: the chunk is computed again)."""
        path = self._path(chunk.index)
        if not path.is_file():
            return False, None
        try:
            data = json.loads(gzip.decompress(path.read_bytes()))
            if (data["key"] != self.key or data["chunk"] != chunk.index
                    or data["spawn_key"] != list(chunk.seed.spawn_key)):
                return False, None
            return True, decode(data["result"])
        except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError):
            return False, None

    def save(self, chunk, result: Any) -> None:
        """Store a finished chunk (atomically: its file is whole or absent)."""
        self._claim()
        # level 1: the histograms of a chunk are mostly zeros (an evaluate chunk of 1,000 sessions of
        # classic.yaml: 7.5 MB of JSON, 0.46 MB compressed in 40 ms)
        _write_atomically(self._path(chunk.index), gzip.compress(json.dumps(
            {"key": self.key, "chunk": chunk.index, "spawn_key": list(chunk.seed.spawn_key),
             "result": encode(result)}).encode(), compresslevel=1, mtime=0))

    def discard(self) -> None:
        """Remove the stored chunks (the run's outputs are in place)."""
        shutil.rmtree(self.directory, ignore_errors=True)


__all__ = ["ChunkStore", "ResumeError", "PARTIAL", "encode", "decode"]
