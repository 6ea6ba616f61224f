"""mkdocs hooks of the docs site (mkdocs.yml: ``hooks:``).

The docstrings name other objects with Sphinx's roles (``:class:`ShoeState```, ``:func:`deal```), which
mkdocstrings renders as the role's text followed by the name in code; the role's text is dropped here,
so the page reads ``ShoeState``, not ``:class: ShoeState``.

A table cell's confidence intervals (``-1.067% [-1.125, -1.009]``, ``0.4279 [0.4211, 0.4348]``) are
wrapped in ``<span class="pb-ci">``, which docs/stylesheets/extra.css keeps on one line: a narrow
column would otherwise break an estimate and its interval over three lines.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const|py:\w+):\s*(?=<code)")
CELL = re.compile(r"(<td[^>]*>)(.*?)(</td>)", re.DOTALL)
_NUMBER = r"[-+\u2212]?\d[\d,.]*%?"
INTERVAL = re.compile(rf"(?:{_NUMBER}\s)?\[{_NUMBER},\s*{_NUMBER}\]")


def keep_intervals_whole(html: str) -> str:
    """Each interval of a table cell (with the estimate before it, if any) in a ``span.pb-ci``."""

    def cell(match: re.Match) -> str:
        inner = INTERVAL.sub(lambda m: f'<span class="pb-ci">{m.group(0)}</span>', match.group(2))
        return match.group(1) + inner + match.group(3)

    return CELL.sub(cell, html)


def on_page_content(html: str, **kwargs: object) -> str:
    return keep_intervals_whole(ROLE.sub("", html))
