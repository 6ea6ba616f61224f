"""How much memory a run needs, checked against what this machine has before anything is allocated.

A request too large for the machine (``--tables 100000000``, a study of ``10**12`` sessions) should be
refused at once with what it needs and what to change, not end in a ``MemoryError`` traceback after
minutes of work or in the kernel's out-of-memory killer. The estimates count the large arrays only
(they are lower bounds), so a run that is refused could never have fitted.
"""

from __future__ import annotations

import os


class TooLarge(ValueError):
    """A run that needs more memory than this machine has available; the message says how much it
    needs and what to change. The command line reports it with exit status 2 (bad input)."""


def available_bytes() -> int | None:
    """Memory this machine can give a new allocation now (Linux ``MemAvailable``; otherwise the
    physical memory), or None if unknown."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def describe(n_bytes: float) -> str:
    """``n_bytes`` for a person: ``512 B``, ``3.2 MiB``, ``38.7 GiB``, ``1.2e+18 GiB``."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return (
                f"{value:.0f} {unit}"
                if unit == "B"
                else (f"{value:.1f} {unit}" if value < 1e6 else f"{value:.3g} {unit}")
            )
        value /= 1024
    raise AssertionError("unreachable")


def require(needed: float, what: str, advice: str) -> None:
    """Raise :class:`TooLarge` if ``needed`` bytes exceed the memory available now.

    ``what`` names the run (``"dealing 100,000,000 tables"``), ``advice`` what to change (``"deal
    fewer tables at once"``)."""
    available = available_bytes()
    if available is not None and needed > available:
        raise TooLarge(
            f"{what} needs about {describe(needed)} of memory but this machine has "
            f"{describe(available)} available; {advice}"
        )
