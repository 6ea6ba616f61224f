"""The ``pb-gym`` console script's entry point: Ctrl-C is taken from its first line on.

It lives outside the :mod:`pb_gym` package on purpose. Importing any module of the package first
imports the package itself, and with it numpy and Gymnasium (the environments are registered on
import): a Ctrl-C in those first tenths of a second would end the command with Python's traceback of
an import. Here the signals are taken before anything is imported, then
:func:`pb_gym.experiments.cli.main` runs the command with its own handling
(:func:`pb_gym.interrupts.handled`). A signal during the interpreter's own start-up, before this file
runs, is still Python's.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import NoReturn

EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT, as shells report it)."""
EXIT_TERMINATED = 143
"""SIGTERM (128 + 15)."""

_received: list[int] = []


def _early(signum: int, frame: object) -> None:  # noqa: ARG001
    _received.append(signum)
    raise KeyboardInterrupt


def _stopped() -> int:
    terminated = signal.SIGTERM in _received
    try:
        print("pb-gym: terminated (SIGTERM)" if terminated else "pb-gym: interrupted", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED


def console() -> NoReturn:
    """Run ``pb-gym`` with the command line's arguments and exit with its status."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _early)
    try:
        from pb_gym.experiments import cli

        if _received:  # an interrupt dropped during the imports (raised inside a callback from C)
            raise KeyboardInterrupt
        status = cli.main()
        for signum in (signal.SIGINT, signal.SIGTERM):  # (the command has ended: it exits now)
            signal.signal(signum, signal.SIG_IGN)
    except KeyboardInterrupt:
        status = _stopped()
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        # the command has kept its finished work and said so: it ends now, without waiting for the
        # threads still finishing a step (a kernel's first compile takes up to a minute) or for the
        # exit handlers that join them
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    console()
