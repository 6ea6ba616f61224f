"""Strict JSON for every report pb-gym writes or prints: no ``NaN`` or ``Infinity`` tokens.

Python's :mod:`json` writes ``NaN`` and ``Infinity`` by default, which strict parsers (JavaScript's
``JSON.parse``, ``jq``, Go, Rust's serde) reject. Here a number that is not finite becomes ``null``, and
a dict report gains a ``null_values`` entry saying, per key path, why: ``{"systems.3.average_stake":
"undefined (NaN): no data for this statistic, e.g. a ratio over zero bets"}``. NumPy scalars and arrays
become plain JSON numbers and lists. The encoder itself runs with ``allow_nan=False``, so nothing
non-finite can slip through.
"""

from __future__ import annotations

import json
import math
from typing import IO, Any

import numpy as np

NULLS_KEY = "null_values"
"""Key of the ``{key path: why}`` entry added to a dict report whose non-finite numbers became null."""

WHY = {
    "nan": "undefined (NaN): no data for this statistic, e.g. a ratio over zero bets or sessions",
    "inf": "infinite (+Infinity), e.g. a count threshold that never triggers",
    "-inf": "infinite (-Infinity)",
}


def to_jsonable(value: Any, path: str = "", nulls: dict[str, str] | None = None) -> Any:
    """``value`` as plain JSON types (dict, list, str, int, float, bool, None), every non-finite
    float replaced by None and recorded in ``nulls`` (key path -> why)."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, f"{path}.{k}" if path else str(k), nulls) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else value
        if all(type(v) is float for v in items) and all(map(math.isfinite, items)):
            return list(items)  # (a bankroll path of a million hands: nothing to convert or record)
        return [to_jsonable(v, f"{path}.{i}" if path else str(i), nulls) for i, v in enumerate(items)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        if nulls is not None:
            nulls[path or "(top level)"] = WHY["nan" if math.isnan(value) else "inf" if value > 0 else "-inf"]
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"{path or 'the report'}: {type(value).__name__} is not JSON serializable")


def dumps(value: Any, indent: int | None = None) -> str:
    """Strict JSON text of ``value`` (see the module docstring); a dict gains :data:`NULLS_KEY` when
    a non-finite number became null."""
    nulls: dict[str, str] = {}
    plain = to_jsonable(value, "", nulls)
    if nulls and isinstance(plain, dict):
        plain[NULLS_KEY] = {**plain.get(NULLS_KEY, {}), **nulls}
    return json.dumps(plain, indent=indent, allow_nan=False)


def dump(value: Any, handle: IO[str], indent: int | None = None) -> None:
    """Write :func:`dumps` of ``value`` to an open text file."""
    handle.write(dumps(value, indent=indent))
