"""Chunk tasks for tests/test_scale.py (module level, so processes and Dask workers can import them)."""

import os

import numpy as np


def sum_of_draws(chunk):
    """A deterministic chunk result: the sum of 1,000 draws from the chunk's own seed."""
    return float(np.random.default_rng(chunk.seed).random(1000).sum()), chunk.index


def fails_on_chunk_two(chunk):
    """Raises on chunk index 2, every time."""
    if chunk.index == 2:
        raise ValueError("injected failure")
    return chunk.index


def fails_once(chunk):
    """Raises the first time each chunk runs (a marker file per chunk under $PB_GYM_TEST_DIR)."""
    marker = os.path.join(os.environ["PB_GYM_TEST_DIR"], f"chunk-{chunk.index}")
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("transient failure")
    return chunk.index
