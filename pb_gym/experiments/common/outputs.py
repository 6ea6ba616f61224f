"""A run's output folder: checked before computing, filled all at once.

Every study that writes files (``pb-gym evaluate``, ``train``, ``experiment counting|ruin``) goes through
:func:`prepare` before it computes anything, and writes its files through :meth:`Destination.staging`:

1. :func:`prepare` refuses, at once, a destination that cannot take the outputs: an empty path, a path
   that is a file, a folder holding files this command does not write (a reused output folder is
   replaced as a whole, so anything else in it would be lost), or a parent folder where nothing can be
   written (checked by creating and removing a temporary folder there).
2. The run's files are written into a temporary folder beside the destination (same parent, hence the
   same file system), then moved into place with renames: the destination is either absent, the
   previous run's complete outputs, or this run's complete outputs; never a mix, never a report
   without its plots. (On Linux a reused folder is swapped with one atomic ``renameat2`` exchange,
   so it is never even absent.) A run that fails while writing leaves the previous outputs as they
   were.

The finished chunks of an unfinished run (``DIR/.partial``, :mod:`pb_gym.experiments.common.chunk_store`) are
kept
until the outputs are in place, then removed with the previous outputs.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import errno
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pb_gym
from pb_gym.experiments.common.chunk_store import PARTIAL, ChunkStore


class OutputError(ValueError):
    """The output folder cannot take this run's outputs (named, with what to do instead)."""


@dataclasses.dataclass(frozen=True)
class Destination:
    """A checked output folder (``final``) and the names a run of this command writes in it."""

    final: Path
    owned: frozenset[str]
    option: str = "--out"

    @property
    def partial(self) -> Path:
        """Where the finished chunks of an unfinished run are kept."""
        return self.final / PARTIAL

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A temporary folder beside ``final`` to write the run's files into; moved into place as
        ``final`` when the block ends normally, removed when it raises."""
        self.final.parent.mkdir(parents=True, exist_ok=True)
        staged = Path(tempfile.mkdtemp(prefix=_owned_prefix(self.final, "staging"), dir=self.final.parent))
        try:
            staged.chmod(0o777 & ~_umask())  # mkdtemp's folder is private; outputs are not
            yield staged
            self._commit(staged)
        except BaseException:
            shutil.rmtree(staged, ignore_errors=True)
            raise

    def _commit(self, staged: Path) -> None:
        try:
            self._move_into_place(staged)
        finally:
            release(self.final)

    def _move_into_place(self, staged: Path) -> None:
        if not self.final.exists():
            os.rename(staged, self.final)
            return
        foreign = _foreign(self.final, self.owned)
        if foreign:  # something appeared while the run computed: keep both, say where
            kept = self.final.parent / f"{self.final.name}.new"
            if kept.exists():
                kept = Path(tempfile.mkdtemp(prefix=f"{self.final.name}.new-", dir=self.final.parent))
                kept.rmdir()
            os.rename(staged, kept)
            raise OutputError(
                f"{self.option} {self.final}: while the run computed, files this command "
                f"does not write appeared there ({', '.join(foreign[:5])}); nothing was "
                f"replaced, and this run's outputs are in {kept}"
            )
        if _exchange(staged, self.final):  # one atomic swap (Linux): never absent, never mixed
            shutil.rmtree(staged, ignore_errors=True)  # now the previous outputs (and chunks)
            return
        old = Path(tempfile.mkdtemp(prefix=_owned_prefix(self.final, "old"), dir=self.final.parent))
        old.rmdir()
        os.rename(self.final, old)  # the previous outputs (and the finished chunks) step aside,
        os.rename(staged, self.final)  # the new ones take their place,
        shutil.rmtree(old, ignore_errors=True)  # and the previous ones go

    def final_path(self, path: str | Path, staged: Path) -> Path:
        """Where a file written under ``staged`` lies once the outputs are in place."""
        return self.final / Path(path).relative_to(staged)


def _owned_prefix(final: Path, kind: str) -> str:
    """``.NAME.staging-HOST-PID-``: whose temporary folder it is, so a later run can remove the ones
    left by a process that was killed while writing (on this host, and no longer running)."""
    return f".{final.name}.{kind}-{socket.gethostname()}-{os.getpid()}-"


def _remove_abandoned(final: Path) -> None:
    """Remove the temporary folders beside ``final`` left by killed runs of this host."""
    if not final.parent.is_dir():
        return
    pattern = re.compile(
        rf"\.{re.escape(final.name)}\.(staging|old)-{re.escape(socket.gethostname())}"
        r"-(\d+)-"
    )
    for entry in final.parent.iterdir():
        match = pattern.match(entry.name)
        if match is None or not entry.is_dir():
            continue
        try:
            os.kill(int(match.group(2)), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except (PermissionError, OverflowError):  # alive (another user's), or not a pid
            pass


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    return False  # e.g. a file system without it (EINVAL): the two renames instead


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _foreign(folder: Path, owned: frozenset[str]) -> list[str]:
    """Entries of ``folder`` that a run of this command does not write (nor its finished chunks)."""
    return sorted(p.name for p in folder.iterdir() if p.name not in owned and p.name != PARTIAL)


_LOCKS: dict[Path, socket.socket] = {}


@atexit.register
def release_all() -> None:
    """Let go of every folder this process holds: when a command ends however it ended (a run that
    failed after taking its folder must not keep it held for the rest of a long-lived process), and
    at exit (the kernel would free the sockets anyway, but an unclosed socket is a ResourceWarning)."""
    for final in list(_LOCKS):
        release(final)


def lock(final: Path, option: str = "--out") -> None:
    """Hold the output folder ``final`` for this run's life (until its outputs are in place, or the
    process ends), so that a second run into it (a second ``--out`` of the same folder, or
    ``--no-resume`` against a running run) is refused instead of silently replacing the first's work.
    Linux: a socket bound to a name in the abstract namespace derived from the folder's path and the
    user; the kernel frees it when the process dies, even by ``kill -9``, so a dead run's lock is
    taken over at once, and no lock file is left anywhere. Re-entrant within one process."""
    if final in _LOCKS or not sys.platform.startswith("linux"):
        return
    import hashlib

    name = hashlib.sha256(f"{os.getuid()}:{_identity(final)}".encode()).hexdigest()[:40]
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        holder.bind(f"\0pb-gym-out-{name}")
    except OSError:
        holder.close()
        raise OutputError(
            f"{option} {final}: another pb-gym run is writing to this folder now; wait "
            "for it to finish, or choose another folder"
        ) from None
    _LOCKS[final] = holder


def _identity(final: Path) -> str:
    """The folder ``final`` however it is spelled: its parent's device and inode, and its name. Two
    spellings of one folder (a symlinked parent, ``//tmp/x`` and ``/tmp/x``, a bind mount) are one
    lock, where the path text would be two, and two runs would write into one folder at once. The
    folder itself may not exist yet, and is replaced as a whole when a run ends (a new inode), so
    its parent names it; :func:`prepare` creates the parent before it takes the lock. A parent
    that cannot be read falls back to the path with every symlink resolved."""
    try:
        parent = os.stat(final.parent)
    except OSError:
        return os.path.realpath(final)
    return f"{parent.st_dev}:{parent.st_ino}/{final.name}"


def release(final: Path) -> None:
    """Let go of the folder held by :func:`lock` (the run's outputs are in place)."""
    holder = _LOCKS.pop(final, None)
    if holder is not None:
        holder.close()


def prepare(out: str | os.PathLike | None, owned: Iterable[str], option: str = "--out") -> Destination | None:
    """Check that ``out`` can take the outputs of a run writing the names ``owned``; None for no
    ``out``. Raises :class:`OutputError` (naming ``option``) before anything is computed."""
    if out is None:
        return None
    text = os.fspath(out)
    if not text.strip():
        raise OutputError(
            f"{option} {text!r} is not allowed; allowed: a folder path (a new folder, "
            "or the output folder of an earlier run of this command)"
        )
    final = _checked_path(Path(os.path.abspath(os.path.expanduser(text))), text, option)
    owned = frozenset(owned)
    held = final in _LOCKS
    try:
        return _prepare(final, text, owned, option)
    except BaseException:
        if not held:  # a refused folder is not kept held for the rest of the process
            release(final)
        raise


def _checked_path(final: Path, text: str, option: str) -> Path:
    """``final`` with a symlink to a folder elsewhere followed (scratch space: the folder is the
    output), or an :class:`OutputError` for a path the file system cannot follow: a symlink loop, a
    name too long for it, a file where a folder should be."""
    try:
        os.stat(final)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OutputError(
                f"{option} {text}: a symbolic link in it points back to itself (a symlink "
                "loop); allowed: a folder path, or a link to a folder"
            ) from None
        if error.errno == errno.ENAMETOOLONG:
            raise OutputError(
                f"{option} {text}: the name is too long for this file system; allowed: "
                f"a folder name of at most {_longest_name(final.parent)} characters here"
            ) from None
        if error.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise OutputError(f"{option} {text}: cannot be used ({error.strerror or error})") from None
    return final.resolve() if final.is_symlink() else final


def _longest_name(parent: Path) -> int:
    """The longest output folder name whose temporary folders (:func:`_owned_prefix`) still fit
    the file system's limit on a name in ``parent``."""
    try:
        limit = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    return max(limit - len(_owned_prefix(Path("x"), "staging")) - 8 + 1, 1)


def _prepare(final: Path, text: str, owned: frozenset[str], option: str) -> Destination:
    here = Path(os.path.abspath(os.getcwd()))
    if final == here or final in here.parents:
        raise OutputError(
            f"{option} {text}: is the current folder or one above it, which a run "
            "replaces as a whole; allowed: a folder inside it, e.g. out/NAME"
        )
    if final.exists():
        if not final.is_dir():
            raise OutputError(
                f"{option} {text}: exists and is not a folder; allowed: a new folder, or "
                "the output folder of an earlier run of this command"
            )
        lock(final, option)
        foreign = _foreign(final, owned)
        if foreign:
            raise OutputError(
                f"{option} {text}: the folder holds files this command does not write "
                f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}); a new "
                "run replaces its output folder as a whole, so choose a new or empty "
                "folder, or an earlier output folder of this command"
            )
        if not os.access(final, os.W_OK | os.X_OK):
            raise OutputError(f"{option} {text}: the folder is not writable")
    ancestor = final.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(f"{option} {text}: {ancestor} is not a folder")
    try:  # the one test that tells: create (and remove) a folder where the staging folder will go,
        final.parent.mkdir(parents=True, exist_ok=True)  # with a name as long as the staging one
        lock(final, option)  # (keyed by the parent, which exists now)
        _remove_abandoned(final)
        probe = tempfile.mkdtemp(prefix=_owned_prefix(final, "staging"), dir=final.parent)
        os.rmdir(probe)
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            raise OutputError(
                f"{option} {text}: the name is too long for this file system with the "
                f"temporary folders a run writes beside it; allowed: a folder name of at most "
                f"{_longest_name(final.parent)} characters here"
            ) from None
        raise OutputError(
            f"{option} {text}: cannot write in {final.parent} ({error.strerror or error})"
        ) from None
    return Destination(final, owned, option)


def chunk_store(
    destination: Destination | None, identity: dict, resume: bool | None = None
) -> ChunkStore | None:
    """The store of finished chunks of a run writing to ``destination`` (``DIR/.partial``); its
    identity is ``identity`` (study and validated config) plus the pb-gym version. None without a
    destination (``resume=True`` then is an error: there is nowhere to keep chunks)."""
    if destination is None:
        if resume:
            raise OutputError(
                f"--resume needs --out DIR: an unfinished run keeps its finished chunks in DIR/{PARTIAL}"
            )
        return None
    return ChunkStore(destination.partial, {**identity, "pb_gym": pb_gym.__version__}, resume)


__all__ = ["Destination", "OutputError", "prepare", "chunk_store", "lock", "release", "release_all"]


def wrote_line(paths: Iterable[str | os.PathLike]) -> str:
    """The one line a study prints for the files it wrote: the folder once, then the file names
    (``wrote out/classic/: report.json, systems.csv, ...``), instead of every full path."""
    written = [Path(p) for p in paths]
    if not written:
        return "wrote nothing"
    folder = Path(os.path.commonpath([p.parent for p in written]))
    names = [str(p.relative_to(folder)) for p in written]
    return f"wrote {folder}{os.sep}: {', '.join(names)}"
