"""Mergeable summaries of the sessions' bankrolls, so that a study's memory does not grow with its sessions.

A chunk of ``pb-gym evaluate`` summarizes its sessions' bankrolls, and the summaries of all chunks add
up, exactly and in any order, to the summary of the whole study:

* **Final bankrolls** (:func:`final_summary`): the count, the sum (numpy's, per chunk, added in chunk
  order: the mean is numpy's mean when the study is one chunk), the range, and the distribution: every
  distinct value with its count while the study has at most :data:`FINAL_EXACT_VALUES` of them (the
  median and quantiles are then those of ``numpy.median`` / ``numpy.quantile`` of every session's
  final bankroll, to the last bit), else a histogram of logarithmic buckets
  (:data:`RELATIVE_ERROR`): each bucket holds the values within a factor ``1 + 2 RELATIVE_ERROR`` of
  each other and is read at the value within ``RELATIVE_ERROR`` of all of them, so every quantile is
  within 0.01% (relative) of the exact one. Its size is bounded by the range of the values
  (``ln(max / min) / ln(1 + 2 RELATIVE_ERROR)`` buckets, 58,000 for a range of 1 to 1,000,000), not
  by the number of sessions.
* **The fan** at each checkpoint (:func:`merge_value_counts`, :func:`binned_quantiles`): the distinct
  bankrolls and counts while there are few, and a fixed histogram (see
  ``pb_gym/experiments/evaluate/__init__.py``).
"""

from __future__ import annotations

import math

import numpy as np

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
"""The quantiles of the bankroll fans."""

FINAL_EXACT_VALUES = 65_536
"""The final bankrolls are kept as exact (value, count) pairs up to this many distinct values (1 MiB
per system); beyond, as logarithmic buckets."""
RELATIVE_ERROR = 1e-4
"""The bucketed quantiles of the final bankroll are within this relative error of the exact ones."""
_GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
_LOG_GAMMA = math.log(_GAMMA)
_KEY_OFFSET = 1 << 23
"""Added to a bucket's exponent so that every finite non-zero double has a key >= 1 (the smallest,
5e-324, has exponent -3.7 million at this precision): the key's sign is the value's, and sorted keys
are sorted values."""


def _bucket_keys(values: np.ndarray) -> np.ndarray:
    """The bucket of each value: 0 for 0, else sign x (exponent + offset), the exponent ``k`` such that
    ``gamma**(k-1) < |value| <= gamma**k``."""
    magnitude = np.abs(values)
    keys = np.zeros(values.shape, dtype=np.int64)
    nonzero = magnitude > 0
    exponent = np.ceil(np.log(magnitude[nonzero]) / _LOG_GAMMA).astype(np.int64)
    keys[nonzero] = np.sign(values[nonzero]).astype(np.int64) * (exponent + _KEY_OFFSET)
    return keys


def _bucket_values(keys: np.ndarray) -> np.ndarray:
    """The value a bucket is read at: within :data:`RELATIVE_ERROR` of every value in it."""
    exponent = np.abs(keys) - _KEY_OFFSET
    return np.where(keys == 0, 0.0, np.sign(keys) * 2.0 * _GAMMA ** exponent.astype(float) / (_GAMMA + 1.0))


def _add_counts(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (sorted) and their summed counts."""
    distinct, where = np.unique(keys, return_inverse=True)
    return distinct, np.bincount(where, weights=counts, minlength=len(distinct)).astype(np.int64)


def final_summary(finals: np.ndarray) -> dict:
    """The mergeable summary of one chunk's final bankrolls (see the module docstring)."""
    values, counts = np.unique(finals, return_counts=True)
    summary = {
        "sessions": int(finals.size),
        "sum": float(finals.sum()),
        "min": float(values[0]),
        "max": float(values[-1]),
        "values": values,
        "counts": counts.astype(np.int64),
        "buckets": None,
    }
    return _bucket_if_many(summary)


def _bucket_if_many(summary: dict) -> dict:
    """Turn the exact values into buckets once there are more than :data:`FINAL_EXACT_VALUES`."""
    if summary["values"] is not None and len(summary["values"]) > FINAL_EXACT_VALUES:
        summary = dict(summary)
        summary["buckets"] = _add_counts(_bucket_keys(summary["values"]), summary["counts"])
        summary["values"] = summary["counts"] = None
    return summary


def merge_final(a: dict, b: dict) -> dict:
    """The summary of the sessions of ``a`` and ``b`` (sums added in that order: ``a`` first)."""
    merged = {
        "sessions": a["sessions"] + b["sessions"],
        "sum": a["sum"] + b["sum"],
        "min": min(a["min"], b["min"]),
        "max": max(a["max"], b["max"]),
    }
    if a["values"] is not None and b["values"] is not None:
        values, counts = _add_counts(
            np.concatenate([a["values"], b["values"]]), np.concatenate([a["counts"], b["counts"]])
        )
        return _bucket_if_many({**merged, "values": values, "counts": counts, "buckets": None})
    parts = [
        part["buckets"] if part["buckets"] is not None else (_bucket_keys(part["values"]), part["counts"])
        for part in (a, b)
    ]
    buckets = _add_counts(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    return {**merged, "values": None, "counts": None, "buckets": buckets}


def final_table(summary: dict) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(values, counts, exact)``: the distinct final bankrolls (or the buckets' values, kept inside
    the exact range) with their counts, sorted."""
    if summary["values"] is not None:
        return summary["values"], summary["counts"], True
    keys, counts = summary["buckets"]
    return np.clip(_bucket_values(keys), summary["min"], summary["max"]), counts, False


def final_mean(summary: dict) -> float:
    """The mean final bankroll."""
    return summary["sum"] / summary["sessions"]


def final_median(summary: dict) -> float:
    """The median final bankroll as ``numpy.median`` gives it (the mean of the two middle values for
    an even count); within :data:`RELATIVE_ERROR` when bucketed."""
    values, counts, _ = final_table(summary)
    cumulative = np.cumsum(counts)
    total = int(cumulative[-1])
    lower = values[np.searchsorted(cumulative, (total - 1) // 2, side="right")]
    if total % 2:
        return float(lower)
    upper = values[np.searchsorted(cumulative, total // 2, side="right")]
    return float(np.mean([lower, upper]))


def final_quantiles(summary: dict, quantiles: tuple[float, ...] = QUANTILES) -> list[float]:
    """Quantiles of the final bankroll (``numpy.quantile``'s linear interpolation)."""
    return exact_quantiles(*final_table(summary)[:2], quantiles)


def summary_bytes(summary: dict) -> int:
    """The memory a summary holds (its arrays)."""
    return sum(array.nbytes for array in (summary["values"], summary["counts"]) if array is not None) + (
        sum(a.nbytes for a in summary["buckets"]) if summary["buckets"] is not None else 0
    )


# ------------------------------------------------------------------------------------ the fan
FAN_EXACT_VALUES = 256
"""A chunk keeps every distinct bankroll of a checkpoint, with its count, when there are at most this
many (e.g. a system that seldom bets, or the first hands); the quantiles are then exact."""
FAN_EXACT_VALUES_MERGED = 4096
"""The merged table of a checkpoint stays exact up to this many distinct bankrolls."""


def merge_value_counts(
    parts: list[tuple[np.ndarray, np.ndarray] | None],
) -> tuple[np.ndarray, np.ndarray] | None:
    """Add up the exact (distinct bankrolls, counts) tables of one checkpoint over chunks: None as soon
    as one chunk had too many values, or the union has more than :data:`FAN_EXACT_VALUES_MERGED`.
    The result is sorted by value, so it does not depend on the order of the chunks."""
    known = [part for part in parts if part is not None]
    if len(known) < len(parts):
        return None
    values, counts = _add_counts(
        np.concatenate([part[0] for part in known]), np.concatenate([part[1] for part in known])
    )
    return None if len(values) > FAN_EXACT_VALUES_MERGED else (values, counts)


def exact_quantiles(
    values: np.ndarray, counts: np.ndarray, quantiles: tuple[float, ...] = QUANTILES
) -> list[float]:
    """``quantiles`` of the sessions from their distinct bankrolls and counts, as ``numpy.quantile``
    (linear interpolation between order statistics) of the full array gives them."""
    cumulative = np.cumsum(counts)
    total = int(cumulative[-1])
    out = []
    for q in quantiles:
        position = q * (total - 1)
        below = int(math.floor(position))
        a = values[np.searchsorted(cumulative, below, side="right")]
        b = values[np.searchsorted(cumulative, min(below + 1, total - 1), side="right")]
        out.append(float(a + (position - below) * (b - a)))
    return out


def binned_quantiles(counts: np.ndarray, edges: np.ndarray) -> list[float]:
    """:data:`QUANTILES` of a histogram (``counts`` over ``edges``, plus a top bin for everything above
    the range), interpolated linearly within a bin: exact to one bin's width."""
    cumulative = np.cumsum(counts)
    total = cumulative[-1]
    widths = np.append(np.diff(edges), 0.0)  # the overflow bin is read at the range's top edge
    out = []
    for q in QUANTILES:
        rank = q * total
        b = int(np.searchsorted(cumulative, rank, side="left"))
        before = cumulative[b - 1] if b else 0
        inside = (rank - before) / counts[b] if counts[b] else 0.0
        out.append(float(min(edges[min(b, len(edges) - 1)] + inside * widths[b], edges[-1])))
    return out
