"""mkdocs hooks of the docs site (mkdocs.yml: ``hooks:``).

The docstrings name other objects with Sphinx's roles (``:class:`ShoeState```, ``:func:`deal```), which
mkdocstrings renders as the role's text followed by the name in code; the role's text is dropped here,
so the page reads ``ShoeState``, not ``:class: ShoeState``.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const|py:\w+):\s*(?=<code)")


def on_page_content(html: str, **kwargs: object) -> str:
    return ROLE.sub("", html)
