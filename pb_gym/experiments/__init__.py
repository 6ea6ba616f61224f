"""Runnable studies built on pb_gym and agents (one file per experiment)."""


def warn_moved(old: str, new: str) -> None:
    """The DeprecationWarning of the module ``old`` that moved to ``new`` (the old name is kept for one
    release), pointed at the code that imported the old name."""
    import warnings

    warnings.warn(
        f"{old} is now {new}; the old name goes in the next release", DeprecationWarning, stacklevel=3
    )
