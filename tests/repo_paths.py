"""Where the tests find the repository and their data, from any folder of the suite, and how they run
a Python process of their own over it."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root (the clone's folder)."""
DATA = ROOT / "tests" / "data"
"""The tests' data files (published figures, golden digests), each with its source."""


def run_python(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    """``python ARGS`` by this interpreter, its output captured as text (within 300 s unless ``timeout``
    says otherwise): the repository importable, ``env`` over this process's environment, and torch on
    one thread (its OpenMP threads spin and wait on each other when the machine is busy: a minibatch of
    a tiny MLP took 0.4 s instead of a millisecond)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    kwargs.setdefault("timeout", 300)
    return subprocess.run([sys.executable, *args], env=environment, capture_output=True, text=True, **kwargs)
