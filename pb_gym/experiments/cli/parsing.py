"""What every ``pb-gym`` subcommand's parser shares: the error of a bad command-line value and the one
way a subcommand is added. Standard library only, as the rest of :mod:`pb_gym.experiments.cli` at load."""

from __future__ import annotations

import argparse


class UsageError(ValueError):
    """A bad command-line value; reported as ``pb-gym: error: ...`` with exit status 2."""


def add_command(sub, func, help: str, **options) -> argparse.ArgumentParser:
    """The subcommand of ``sub`` that ``func`` (``cmd_NAME``) runs: named NAME, its description
    ``func``'s docstring unless ``options`` give another."""
    parser = sub.add_parser(
        func.__name__.removeprefix("cmd_"), help=help, **{"description": func.__doc__, **options}
    )
    parser.set_defaults(func=func)
    return parser
