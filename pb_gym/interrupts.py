"""Ctrl-C and SIGTERM for a command that must always stop: within a second, with its status.

Python turns SIGINT into a KeyboardInterrupt raised wherever the main thread is, and that is usually
enough. But Python code called back from C cannot pass the exception on: llvmlite's object-cache
callbacks, run while numba compiles or loads a kernel, report it as "Exception ignored" and return, and
numba then goes on (dealing on for hours) or fails later with an unrelated error (``RuntimeError: no
compiled object yet``, its half-built library). So :func:`handled` records every signal as well as
raising it, and three things make a recorded signal stop the command whatever happened to its
exception:

* an interrupt dropped in a callback is raised again in the main thread 10 ms later, once the
  callback has returned (a ``sys.unraisablehook``);
* :func:`check`, called by every :class:`pb_gym.progress.Progress` update and by the loops that wait
  for a study's chunks, raises it again on the main thread;
* :func:`received` tells the command line that whatever error ended the command came after a signal,
  so that it reports the interruption, not the error.

Nothing here is active unless a caller enters :func:`handled` (the ``pb-gym`` command line does): a
library user's process keeps Python's own handling.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["Terminated", "check", "handled", "received", "settle"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised on the main thread where Ctrl-C would be: a command keeps its finished work and
    says so, as for Ctrl-C."""


_received: int | None = None  # the first signal received inside handled(), or None
_raising = True  # False once the command reports its end: a later signal is only recorded


def received() -> int | None:
    """The first signal (``signal.SIGINT`` or ``signal.SIGTERM``) received inside :func:`handled`, or
    None."""
    return _received


def check() -> None:
    """Raise the received signal's exception again, on the main thread, if a signal was received (an
    exception raised inside a callback from C may have been dropped); elsewhere, and without a signal,
    return at once."""
    if _received is not None and _raising and threading.current_thread() is threading.main_thread():
        raise Terminated if _received == signal.SIGTERM else KeyboardInterrupt


def settle() -> None:
    """The command is reporting its end: a signal from now on is recorded but raises nothing, so that
    the one line that says how it ended is written whole."""
    global _raising
    _raising = False


def _handler(main_pid: int):
    def handler(signum: int, frame: object) -> None:  # noqa: ARG001
        global _received
        if os.getpid() != main_pid:  # a forked worker: end as the signal means, its parent reports
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if _received is None:
            _received = signum
        if _raising:
            raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt

    return handler


def _unraisable_interrupts(previous):
    """A ``sys.unraisablehook`` that raises a dropped interrupt again in the main thread 10 ms after the
    hook has returned (``_thread.interrupt_main`` from a timer: raised in the hook itself it would be
    dropped too; one that lands in another callback comes back here); any other unraisable error goes
    to the ``previous`` hook."""
    import _thread

    def interrupt_later() -> None:
        timer = threading.Timer(0.01, _thread.interrupt_main)
        timer.daemon = True
        timer.start()

    def hook(unraisable) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            interrupt_later()
            return
        previous(unraisable)

    return hook


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Inside this block, on the main thread, SIGINT raises KeyboardInterrupt and SIGTERM
    :class:`Terminated`, each recorded (:func:`received`) and raised again where it was dropped
    (:func:`check`, the unraisable hook); the previous handlers come back at its end. Elsewhere (a
    thread other than the main one) the block changes nothing."""
    global _received, _raising
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received, _raising = None, True
    handler = _handler(os.getpid())
    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    unraisable = sys.unraisablehook
    sys.unraisablehook = _unraisable_interrupts(unraisable)
    try:
        yield
    finally:
        sys.unraisablehook = unraisable
        for signum, before in previous.items():
            signal.signal(signum, before)
        _received, _raising = None, True
