"""Finished chunks kept on disk, so that an interrupted study resumes where it stopped.

A study run with ``--out DIR`` keeps every finished chunk under ``DIR/.partial/``, one file per chunk
(``chunk-000003.json.gz``, gzip-compressed JSON), written atomically (a temporary file renamed into
place: a chunk file is whole or absent, even after ``kill -9``). ``DIR/.partial/run.json`` records
the *identity* of the run the chunks belong to (the study, its validated config with its seed and
chunk size, the pb-gym version) and its SHA-256. A later run with the same identity loads the finished
chunks and computes only the missing ones; because a chunk's result depends only on the config and its
index (see :mod:`pb_gym.experiments.common.scale`) and is stored exactly (arrays as raw bytes, floats in
hexadecimal), the merged result is bit-identical to an uninterrupted run. A run with another identity
refuses to mix them (:class:`ResumeError`, naming what differs). The folder is removed with the rest
of the old outputs when the run's outputs are moved into place.

A run may keep finished work that is not a chunk the same way: a *step* (``step-NAME.json.gz``, its
result stored exactly, written last) and the files it made in ``DIR/.partial/NAME/`` (``pb-gym
train`` keeps its trained model there, so that an interrupted held-out evaluation does not train again).

Chunk files are JSON, never pickles: loading one cannot run code.

Trust: nothing in ``.partial`` is believed because it is there. Every file this module writes
(``run.json``, chunks, steps) is sealed with an HMAC-SHA256 whose key lives outside every output
folder, in the user's cache (``$XDG_CACHE_HOME/pb-gym/resume.key``, else ``~/.cache/pb-gym/``; made
0600 in a 0700 folder on first use). A SHA-256 kept in the same folder proves nothing (whoever edits a
file can edit its checksum); the keyed seal proves that this user's pb-gym wrote the bytes. Before a
file is used: the ``.partial`` folder and the file must be owned by this user and not writable by
group or others, not symlinks (else :class:`ResumeError`, saying so, as ssh refuses a key file others
can write); the seal must match; the decompressed size is bounded (:data:`MAX_DECOMPRESSED`); the JSON
must have the expected structure, the run's identity and the chunk's index and seed; every encoded
array and scalar must have a numeric dtype and exactly its bytes. A chunk or step that fails any check
is refused with the reason on stderr and computed again. A ``.partial`` folder that holds chunks or
steps but no ``run.json`` is refused (never silently emptied). The files of a step (a trained model, a
training checkpoint) are recorded in its sealed step record with their SHA-256, so a kept model is used
only if it is the bytes this run wrote. The key file is what makes this work: anyone who can read it
can forge resume state; it is made private and is never written into an output folder.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

PARTIAL = ".partial"
"""The folder, inside a run's output folder, that holds its finished chunks."""
RUN_FILE = "run.json"
FORMAT = 2
"""2: every file sealed with the user's HMAC key (1: unsealed; refused, as another run's)."""
SEAL = b"pb-gym-sealed-1\n"
"""The first bytes of a sealed file, then the 32-byte HMAC-SHA256 of the rest, then the payload."""
MAX_DECOMPRESSED = 1 << 30
"""The most bytes a kept file may decompress to (1 GiB; an evaluate chunk of 1,000 sessions of
classic.yaml is 7.5 MB): a compressed bomb is refused before it takes the memory."""
MAX_DEPTH = 64
"""The deepest nesting of encoded values a kept file may hold (results nest a few levels)."""
KEY_FILE = "resume.key"
_DTYPE = re.compile(r"[<>|=]?[biufc]\d{1,2}")


class ResumeError(ValueError):
    """The finished chunks on disk belong to another run (another config, seed or chunk plan), or
    cannot be trusted (another user could have written them)."""


class Refused(ValueError):
    """A kept file that is not used (the reason is the message)."""


# ------------------------------------------------------------------------------- the sealing key
_KEYS: dict[str, bytes] = {}


def key_path() -> Path:
    """Where the user's sealing key lives (outside every output folder)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "pb-gym" / KEY_FILE


def check_private(path: Path, what: str, folder: bool = False) -> os.stat_result:
    """``path``'s lstat after checking that only this user can change it, else :class:`ResumeError`."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise ResumeError(
            f"{what} {path} is a symbolic link; resume state is only read from a real "
            "folder of this user's (remove it, or pass --no-resume or another --out)"
        )
    if folder and not stat.S_ISDIR(info.st_mode) or not folder and not stat.S_ISREG(info.st_mode):
        raise ResumeError(f"{what} {path} is not a {'folder' if folder else 'regular file'}")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise ResumeError(
            f"{what} {path} belongs to another user (uid {info.st_uid}); a resume only "
            "trusts state this user wrote (remove it, or pass --no-resume or another --out)"
        )
    if info.st_mode & 0o022:
        raise ResumeError(
            f"{what} {path} can be written by other users (mode "
            f"{stat.S_IMODE(info.st_mode):o}); a resume refuses state others could have "
            f"changed (chmod go-w it if you trust it, or pass --no-resume or another --out)"
        )
    return info


def sealing_key() -> bytes:
    """The user's key (32 random bytes), created on first use (0600, in a 0700 folder). Where it
    cannot be made (a read-only home), a key for this process only, with a warning: this run's chunks
    are then not resumable by a later run."""
    path = key_path()
    cached = _KEYS.get(str(path))
    if cached is not None:
        return cached
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(handle, "wb") as file:
                file.write(secrets.token_bytes(32))
                file.flush()
                os.fsync(file.fileno())
        info = check_private(path, "the resume key")
        if info.st_mode & 0o044:
            raise ResumeError(
                f"the resume key {path} can be read by other users (mode "
                f"{stat.S_IMODE(info.st_mode):o}); chmod 600 it or remove it"
            )
        key = path.read_bytes()
        if len(key) < 16:
            raise ResumeError(f"the resume key {path} is damaged ({len(key)} bytes); remove it")
    except OSError as error:
        print(
            f"warning: cannot keep the resume key {path} ({error}); this run's finished chunks "
            "will not be resumable by a later run",
            file=sys.stderr,
            flush=True,
        )
        key = secrets.token_bytes(32)
    _KEYS[str(path)] = key
    return key


def seal(payload: bytes) -> bytes:
    """``payload`` with this user's seal (:data:`SEAL`, its HMAC-SHA256, the payload)."""
    return SEAL + hmac.digest(sealing_key(), payload, "sha256") + payload


def unseal(path: Path, limit: int = MAX_DECOMPRESSED) -> bytes:
    """The payload of a file sealed by :func:`seal`, after the ownership and seal checks; raises
    :class:`Refused` (a wrong or missing seal) or :class:`ResumeError` (state others could write)."""
    check_private(path, "the kept file")
    with open(path, "rb") as file:
        data = file.read(limit + len(SEAL) + 33)
    if len(data) > limit + len(SEAL) + 32:
        raise Refused(f"larger than {limit:,} bytes")
    head, mac, payload = data[: len(SEAL)], data[len(SEAL) : len(SEAL) + 32], data[len(SEAL) + 32 :]
    if head != SEAL or not hmac.compare_digest(mac, hmac.digest(sealing_key(), payload, "sha256")):
        raise Refused("not sealed by this user's pb-gym (written elsewhere, by another version, or changed)")
    return payload


def _inflate(data: bytes, limit: int = MAX_DECOMPRESSED) -> bytes:
    """gzip ``data`` decompressed, refusing more than ``limit`` bytes (a bomb stops at the limit)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, limit + 1)
    if len(out) > limit or inflater.unconsumed_tail:
        raise Refused(f"decompresses to more than {limit:,} bytes")
    if not inflater.eof:
        raise Refused("cut short (not a whole gzip stream)")
    return out


def _read_json(path: Path, compressed: bool = True) -> Any:
    """A sealed JSON file's value (:class:`Refused` with the reason when it cannot be used)."""
    payload = unseal(path)
    try:
        text = _inflate(payload) if compressed else payload
        return json.loads(text)
    except RecursionError:
        raise Refused("nested too deep") from None
    except (zlib.error, ValueError) as error:
        raise Refused(f"not valid {'gzip-compressed ' if compressed else ''}JSON ({error})") from None


# ------------------------------------------------------------------------------- exact JSON codec
def encode(value: Any) -> Any:
    """``value`` (nested dicts, lists, tuples, numpy arrays and scalars, floats, ints, strings) as JSON
    values that :func:`decode` turns back into an equal object, bit for bit and type for type."""
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("a chunk result holds an object array; only numeric arrays can be stored")
        return {
            "$array": value.dtype.str,
            "shape": list(value.shape),
            "data": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii"),
        }
    if isinstance(value, np.generic):  # before float: np.float64 is a float
        return {"$scalar": value.dtype.str, "data": base64.b64encode(value.tobytes()).decode("ascii")}
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


def decode(value: Any, depth: int = 0) -> Any:
    """The inverse of :func:`encode`; raises ValueError for anything :func:`encode` does not write
    (a wrong structure, a non-numeric dtype, data of the wrong length, nesting past :data:`MAX_DEPTH`)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, list):
        return [decode(v, depth + 1) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"a bare {type(value).__name__} (floats are stored as $float)")
    if "$array" in value or "$scalar" in value:
        return _decode_numbers(value)
    if set(value) == {"$float"} and isinstance(value["$float"], str):
        return float.fromhex(value["$float"])
    if set(value) == {"$dict"} and isinstance(value["$dict"], list):
        return _decode_dict(value["$dict"], depth)
    if set(value) == {"$tuple"} and isinstance(value["$tuple"], list):
        return tuple(decode(v, depth + 1) for v in value["$tuple"])
    raise ValueError(f"unknown encoded value with keys {sorted(value)}")


def _decode_numbers(value: dict) -> Any:
    """An encoded numpy array (``$array``, ``shape``, ``data``) or scalar (``$scalar``, ``data``)."""
    array = "$array" in value
    if set(value) != ({"$array", "shape", "data"} if array else {"$scalar", "data"}):
        raise ValueError(f"an encoded {'array' if array else 'scalar'} with keys {sorted(value)}")
    code, data = value["$array" if array else "$scalar"], value["data"]
    if not isinstance(code, str) or not _DTYPE.fullmatch(code) or not isinstance(data, str):
        raise ValueError(f"an encoded value of dtype {code!r} (allowed: numeric dtypes)")
    dtype = np.dtype(code)
    shape = value["shape"] if array else []
    if not isinstance(shape, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and 0 <= n for n in shape
    ):
        raise ValueError(f"an array of shape {shape!r}")
    raw = base64.b64decode(data, validate=True)
    count = int(np.prod(shape, dtype=object)) if array else 1
    if len(raw) != count * dtype.itemsize:
        raise ValueError(f"{len(raw)} bytes of data for {count} value(s) of dtype {code}")
    values = np.frombuffer(raw, dtype=dtype)
    return values.reshape(shape).copy() if array else values[0]


def _decode_dict(pairs: list, depth: int) -> dict:
    """An encoded dict: ``[key, value]`` pairs whose keys are hashable scalars."""
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise ValueError("a $dict entry that is not a [key, value] pair")
    result = {}
    for k, v in pairs:
        key = decode(k, depth + 1)
        if isinstance(key, (list, dict, np.ndarray)):
            raise ValueError(f"a $dict key of type {type(key).__name__}")
        result[key] = decode(v, depth + 1)
    return result


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
        return [
            d
            for key in sorted(set(stored) | set(current), key=str)
            for d in _differences(stored.get(key), current.get(key), f"{path}{key}.")
        ]
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
        self.key = hashlib.sha256(
            json.dumps(self.identity, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        present = os.path.lexists(self.directory)
        if resume is False and present:
            if self.directory.is_symlink() or not self.directory.is_dir():
                self.directory.unlink()
            else:
                shutil.rmtree(self.directory)
            present = False
        if not present:
            return
        check_private(self.directory, "the resume folder", folder=True)
        meta = self.directory / RUN_FILE
        if os.path.lexists(meta):
            try:
                stored = _read_json(meta, compressed=False)
                if not isinstance(stored, dict):
                    raise Refused(f"it holds a {type(stored).__name__}, not the run's identity")
            except Refused as error:
                stored = {"problem": str(error)}
            if stored.get("key") != self.key:
                differ = (
                    _differences(stored.get("identity"), self.identity)
                    if isinstance(stored.get("identity"), dict)
                    else []
                )
                problem = f"an unusable run.json: {stored['problem']}" if "problem" in stored else ""
                raise ResumeError(
                    f"{self.directory} holds {self._held()} of another run (it differs in "
                    f"{', '.join(differ[:6]) or problem or 'an unreadable run.json'}; run key "
                    f"{str(stored.get('key'))[:12]}, this run {self.key[:12]}): they will not be mixed "
                    "with this run's. Rerun with the config they belong to to finish it, or pass "
                    "--no-resume to discard them, or choose another --out"
                )
        elif self.finished() or self.finished_steps():
            raise ResumeError(
                f"{self.directory} holds {self._held()} but no {RUN_FILE} saying which run they belong "
                "to; they are kept, not used. Pass --no-resume to discard them, or choose another --out"
            )
        else:  # no run.json and nothing recorded: stopped before its first chunk was saved
            shutil.rmtree(self.directory)

    def _held(self) -> str:
        held = f"{len(self.finished())} finished chunk(s)"
        steps = self.finished_steps()
        if steps:
            held += f" and the finished step(s) {', '.join(steps)}"
        return held

    def _path(self, index: int) -> Path:
        return self.directory / f"chunk-{index:06d}.json.gz"

    def _make_directory(self) -> None:
        """The store's folder, private to this user (0700)."""
        if not self.directory.is_dir():
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.directory.chmod(0o700)  # (mkdir's mode is masked by the umask)

    def _claim(self) -> None:
        """Create the folder and record the run's identity in it (once), before anything is kept."""
        self._make_directory()
        meta = self.directory / RUN_FILE
        if not meta.is_file():
            _write_atomically(
                meta, seal(json.dumps({"key": self.key, "identity": self.identity}, indent=1).encode())
            )

    def folder(self, name: str) -> Path:
        """``DIR/.partial/NAME``: a folder for finished work that is not a chunk (the files of a trained
        model), kept, like the chunks, until the run's outputs are in place. Whatever a step writes
        there counts as finished only once :meth:`save_step` has recorded the step (a folder of a run
        that recorded nothing is removed by the next run, as a run stopped before its first chunk)."""
        if not name.isidentifier():
            raise ValueError(f"{name!r} is not a step name")
        self._make_directory()
        path = self.directory / name
        if path.is_symlink():
            path.unlink()
        path.mkdir(mode=0o700, exist_ok=True)
        return path

    def inside(self, relative: Any, under: str = "") -> Path:
        """The path ``under/relative`` inside the store's folder, for a name read from kept state:
        a relative path of plain names (no ``..``, not absolute, no symbolic link on the way), else
        :class:`Refused`."""
        if not isinstance(relative, str) or not relative or "\x00" in relative or "\\" in relative:
            raise Refused(f"the kept path {relative!r} is not a relative file name")
        parts = relative.split("/")
        if relative.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise Refused(f"the kept path {relative!r} leaves the run's folder")
        path = self.directory
        for part in ([under] if under else []) + parts:
            path = path / part
            if path.is_symlink():
                raise Refused(f"the kept path {relative!r} goes through a symbolic link")
        return path

    def _step_path(self, name: str) -> Path:
        if not name.isidentifier():
            raise ValueError(f"{name!r} is not a step name")
        return self.directory / f"step-{name}.json.gz"

    def load_step(self, name: str) -> tuple[bool, Any]:
        """``(True, result)`` for a step of this run recorded by :meth:`save_step`, ``(False, None)``
        otherwise (also for a file that cannot be read: the step is done again)."""
        path = self._step_path(name)
        if not os.path.lexists(path):
            return False, None
        return self._checked(path, {"key": self.key, "step": name})

    def save_step(self, name: str, result: Any) -> None:
        """Record a finished step of the run that is not a chunk (training a model, scoring it), with
        its result (stored exactly, as a chunk's), atomically."""
        self._save(self._step_path(name), {"key": self.key, "step": name, "result": encode(result)})

    def drop_step(self, name: str) -> None:
        """Forget a recorded step (its record only; its files are the caller's)."""
        self._step_path(name).unlink(missing_ok=True)

    def _kept(self, kind: str) -> list[str]:
        """The names between ``KIND-`` and ``.json.gz`` of the files of that kind in the folder."""
        if not self.directory.is_dir():
            return []
        return [p.name[len(kind) + 1 : -len(".json.gz")] for p in self.directory.glob(f"{kind}-*.json.gz")]

    def finished(self) -> list[int]:
        """Indexes of the chunks whose files are on disk."""
        return sorted(int(name) for name in self._kept("chunk") if re.fullmatch(r"\d{6,}", name))

    def finished_steps(self) -> list[str]:
        """Names of the steps recorded by :meth:`save_step`."""
        return sorted(name for name in self._kept("step") if name.isidentifier())

    def load(self, chunk) -> tuple[bool, Any]:
        """``(True, result)`` for a finished chunk of this run, ``(False, None)`` otherwise (also for a
        file that cannot be read: the chunk is computed again)."""
        path = self._path(chunk.index)
        if not os.path.lexists(path):
            return False, None
        return self._checked(
            path, {"key": self.key, "chunk": chunk.index, "spawn_key": [int(k) for k in chunk.seed.spawn_key]}
        )

    def _checked(self, path: Path, expected: dict) -> tuple[bool, Any]:
        """``(True, result)`` for a kept file whose seal, structure and identity (``expected``) are
        this run's; else ``(False, None)`` after saying on stderr why it is not used (it is done
        again). State others could write raises :class:`ResumeError`."""
        try:
            data = _read_json(path)
            if not isinstance(data, dict) or set(data) != {*expected, "result"}:
                raise Refused(
                    "not the structure of a kept result (keys "
                    f"{sorted(data) if isinstance(data, dict) else type(data).__name__})"
                )
            for key, value in expected.items():
                if data[key] != value:
                    raise Refused(f"its {key} is {str(data[key])[:40]!r}, not this run's")
            try:
                return True, decode(data["result"])
            except (ValueError, TypeError, OverflowError, RecursionError) as error:
                raise Refused(f"its result is not a stored value ({error})") from None
        except Refused as error:
            print(f"resuming: not using {path}: {error}; computing it again", file=sys.stderr, flush=True)
            return False, None
        except OSError as error:
            print(f"resuming: cannot read {path} ({error}); computing it again", file=sys.stderr, flush=True)
            return False, None

    def save(self, chunk, result: Any) -> None:
        """Store a finished chunk (atomically: its file is whole or absent)."""
        record = {
            "key": self.key,
            "chunk": chunk.index,
            "spawn_key": [int(k) for k in chunk.seed.spawn_key],
            "result": encode(result),
        }
        self._save(self._path(chunk.index), record)

    def _save(self, path: Path, record: dict) -> None:
        """``record`` as sealed, compressed JSON at ``path``, atomically (the run claimed first)."""
        self._claim()
        # level 1: the histograms of a chunk are mostly zeros (an evaluate chunk of 1,000 sessions of
        # classic.yaml: 7.5 MB of JSON, 0.46 MB compressed in 40 ms)
        text = json.dumps(record).encode()
        if len(text) > MAX_DECOMPRESSED:  # could not be read back: done again if interrupted
            return
        _write_atomically(path, seal(gzip.compress(text, compresslevel=1, mtime=0)))

    def discard(self) -> None:
        """Remove the stored chunks (the run's outputs are in place)."""
        shutil.rmtree(self.directory, ignore_errors=True)


__all__ = [
    "ChunkStore",
    "ResumeError",
    "Refused",
    "PARTIAL",
    "encode",
    "decode",
    "seal",
    "unseal",
    "sealing_key",
    "key_path",
    "check_private",
]
