"""Where the tests find the repository and their data, from any folder of the suite."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root (the clone's folder)."""
DATA = ROOT / "tests" / "data"
"""The tests' data files (published figures, golden digests), each with its source."""
