"""The project's words: the code, its docstrings, the tests, the configs and the docs speak of pb-gym,
not of its tracker (history goes to CHANGELOG.md, one line a change)."""

from __future__ import annotations

import re
from pathlib import Path

from repo_paths import ROOT  # noqa: E402

# the files a user or a contributor reads: the code, its docstrings, the tests, the configs and the docs
SPOKEN = ("pb_gym", "tests", "examples", "configs", "docs")
TRACKER = re.compile(
    r"\bissue\s*#?\d+|\(#\d+\)|(?<![\w&/])#\d{1,3}\b(?!['\w-])|\btoday(?:'s)?\b", re.IGNORECASE
)


def test_the_code_and_docs_speak_of_the_project_not_of_its_tracker():
    # history goes to CHANGELOG.md; "issue 10", "(#14)" or "measured today" mean nothing to a reader
    found = []
    for top in SPOKEN:
        for path in sorted((ROOT / top).rglob("*")):
            if (
                path.suffix not in (".py", ".md", ".yaml", ".yml")
                or path.is_symlink()
                or "site" in path.relative_to(ROOT).parts  # (the built docs; not a folder above the clone)
                or path == Path(__file__).resolve()  # (this file names what it looks for)
            ):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if TRACKER.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "tracker numbers or 'today' in:\n" + "\n".join(found)


# a measurement or a story of past changes in the code: they go to docs/performance.md (and its
# history) and CHANGELOG.md, where a reader looks for them and where they can be rerun or dated
HISTORY = re.compile(
    r"\b\d+(?:\.\d+)?x (?:faster|slower)\b|\b\d+(?:\.\d+)? ?(?:us|µs|ns) (?:a|per)\b|\(measured[:,]"
    r"|\b202\d-\d\d-\d\d\b|\bcommit [0-9a-f]{7}|\b(?:used to|was replaced|previously)\b",
    re.IGNORECASE,
)


def test_the_code_holds_no_measurements_or_history():
    found = []
    for path in sorted([*(ROOT / "pb_gym").rglob("*.py"), ROOT / "pb_gym_cli.py"]):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "measurements or history in the code:\n" + "\n".join(found)
