"""The compiled walks over the value multisets of six cards: the kernels of :mod:`pb_gym.exact`.

Each kernel walks the 5,005 nondecreasing sequences of six card values in lexicographic order (the
rows of :func:`pb_gym.exact.multiset_weights`), forms a composition's falling-factorial product
``prod_v (c_v)_(m_v)`` one card at a time and adds each multiset's weights times it: in int64, exact
(:func:`_outcome_counts_kernel`, :func:`_class_counts_kernel`), or in float64 over blocks of
compositions whose inner loops run over the block's lanes, so that the compiler vectorizes them
(:func:`_expectation_kernel`, :func:`_class_probabilities_kernel`), or for one composition with
scalar running products (:func:`outcome_walk_one`, :func:`_class_walk_one`: a single env's step).
:mod:`pb_gym.exact` builds the weight tables, lays the compositions out in blocks and runs the kernels
on several threads; it exports :data:`BLOCK`, :data:`STACK_WIDTH` and :func:`block_width` too.
"""

from __future__ import annotations

import numba
import numpy as np

from pb_gym import rules as R
from pb_gym.kernel_arrays import stack_float64

# the keys of the hand-class walk: value class * 9 + pair pattern (pb_gym.exact's notes on hand classes)
N_VALUE_CLASSES = R.N_VALUE_CLASSES  # (pb_gym.exact.N_VALUE_CLASSES)
N_OUTCOMES = R.N_OUTCOMES  # the columns of the multiset weights (pb_gym.exact.multiset_weights)
_RANK_VALUES = R.RANK_VALUES
_SIDE_PATTERNS = 3  # first two cards of one side: 0 = different values, 1 = same nonzero value, 2 = both 0
_PATTERNS = _SIDE_PATTERNS * _SIDE_PATTERNS
_KEYS = N_VALUE_CLASSES * _PATTERNS


BLOCK = 16
"""Compositions evaluated together by the float kernels: their inner loops run over a block, so the
compiler vectorizes them (SIMD). Fewer compositions than a block go in one narrower block
(:func:`block_width`) instead of a padded one: a single env prices one composition per step, and
padding it to 16 would multiply the walk's work."""


@numba.njit(cache=True)
def block_width(n: int) -> int:
    """The block width for ``n`` compositions: :data:`BLOCK`, or for fewer the next power of two (so a
    batch of one composition walks once, not 16 times)."""
    width = 1
    while width < min(n, BLOCK):
        width *= 2
    return width


def _padded(rows: np.ndarray, width: int) -> np.ndarray:
    """``rows`` with copies of the first row (a valid composition) appended up to a multiple of
    ``width``: the last block's unused lanes."""
    missing = -len(rows) % width
    return np.concatenate([rows, np.repeat(rows[:1], missing, axis=0)]) if missing else rows


def _blocks(rows: np.ndarray, width: int) -> np.ndarray:
    """Padded ``rows`` ``(n_blocks * width, k)`` as contiguous blocks ``(n_blocks, k, width)``."""
    return np.ascontiguousarray(rows.reshape(-1, width, rows.shape[1]).transpose(0, 2, 1))


STACK_WIDTH = 8
"""The narrowest block whose walk keeps its scratch arrays in the stack frame
(:func:`_expectation_kernel`)."""


@numba.njit(cache=True, nogil=True)
def _outcome_counts_kernel(start, stop, c, weights, out):
    """out[b, o] = sum_m W[m, o] prod_v (c[b, v])_(m_v), walking nondecreasing 6-sequences."""
    n_out = weights.shape[1]
    for b in range(start, stop):
        acc = np.zeros(n_out, dtype=out.dtype)
        j = 0
        for v1 in range(10):
            p1 = c[b, v1]
            for v2 in range(v1, 10):
                k2 = 1 if v2 == v1 else 0
                p2 = p1 * (c[b, v2] - k2)
                for v3 in range(v2, 10):
                    k3 = k2 + 1 if v3 == v2 else 0
                    p3 = p2 * (c[b, v3] - k3)
                    for v4 in range(v3, 10):
                        k4 = k3 + 1 if v4 == v3 else 0
                        p4 = p3 * (c[b, v4] - k4)
                        for v5 in range(v4, 10):
                            k5 = k4 + 1 if v5 == v4 else 0
                            p5 = p4 * (c[b, v5] - k5)
                            for v6 in range(v5, 10):
                                k6 = k5 + 1 if v6 == v5 else 0
                                p6 = p5 * (c[b, v6] - k6)
                                for o in range(n_out):
                                    acc[o] += weights[j, o] * p6
                                j += 1
        for o in range(n_out):
            out[b, o] = acc[o]


@numba.njit(cache=True, nogil=True)
def _expectation_kernel(start, stop, blocks, weights, out):
    """Float twin of the kernel above over blocks of compositions: ``blocks`` is (n_blocks, 10, width)
    value counts, ``out`` (n_blocks, k, width) receives sum_m weights[m, :] prod_v (c_v)_(m_v)."""
    width = blocks.shape[2]  # the block width: 16, or fewer for a small batch (block_width)
    if width > BLOCK:
        raise ValueError("a block of compositions is at most BLOCK wide")
    # the scratch arrays made once a call, not once a block; from STACK_WIDTH lanes on, in the stack
    # frame: arrays the compiler knows no other overlaps, so the loops over the lanes keep no overlap
    # checks (the same bits either way; below STACK_WIDTH lanes the heap arrays compile to faster code)
    if width >= STACK_WIDTH:
        _walk_blocks(
            start,
            stop,
            blocks,
            weights,
            out,
            stack_float64(BLOCK),
            stack_float64(BLOCK),
            stack_float64(BLOCK),
            stack_float64(BLOCK),
            stack_float64(BLOCK),
            stack_float64(BLOCK),
            stack_float64(BLOCK),
        )
    else:
        _walk_blocks(
            start,
            stop,
            blocks,
            weights,
            out,
            np.empty(width),
            np.empty(width),
            np.empty(width),
            np.empty(width),
            np.empty(width),
            np.empty(width),
            np.empty(width),
        )


@numba.njit(cache=True, nogil=True)
def outcome_walk_one(c, weights, out):
    """:func:`_expectation_kernel`'s walk for one composition's outcome classes: ``c`` (10,) value
    counts, ``weights`` (n_multisets, :data:`N_OUTCOMES`) the multiset weights; ``out`` (N_OUTCOMES,)
    receives sum_m weights[m, o] prod_v (c_v)_(m_v). Its running products are scalars and its sums a
    fixed number, which the compiler keeps in registers (a single env prices one composition a step:
    a block of one lane spends most of the walk on its loops over the lane). The same operations in
    the same order as a lane of a block, so the same bits: the blocks skip the zero weights, and a
    zero added to a sum of products >= 0 leaves it as it was."""
    acc = np.zeros(N_OUTCOMES)
    j = 0
    for v1 in range(10):
        p1 = c[v1]
        for v2 in range(v1, 10):
            k2 = 1.0 if v2 == v1 else 0.0
            p2 = p1 * (c[v2] - k2)
            for v3 in range(v2, 10):
                k3 = k2 + 1.0 if v3 == v2 else 0.0
                p3 = p2 * (c[v3] - k3)
                for v4 in range(v3, 10):
                    k4 = k3 + 1.0 if v4 == v3 else 0.0
                    p4 = p3 * (c[v4] - k4)
                    for v5 in range(v4, 10):
                        k5 = k4 + 1.0 if v5 == v4 else 0.0
                        p5 = p4 * (c[v5] - k5)
                        for v6 in range(v5, 10):
                            k6 = k5 + 1.0 if v6 == v5 else 0.0
                            p6 = p5 * (c[v6] - k6)
                            for o in range(N_OUTCOMES):
                                acc[o] += weights[j, o] * p6
                            j += 1
    for o in range(N_OUTCOMES):
        out[o] = acc[o]


@numba.njit(cache=True, nogil=True)
def expected_values_one(comp, weights, paytable, pair_pays, out):
    """The exact EVs (:func:`pb_gym.exact.expected_values`) of one composition ``comp`` (13,) into
    ``out`` (7,), in one call: the value counts, the walk (:func:`outcome_walk_one`), the product with
    the pay table, and the pair bets' EV (returned), each the same operations in the same order as the
    batched path, so the same bits (a single env prices one composition a step, and the batched path's
    numpy calls around the walk cost more than the walk)."""
    counts = np.zeros(10)
    cards = 0
    for r in range(comp.shape[0]):
        counts[_RANK_VALUES[r]] += comp[r]
        cards += comp[r]
    probabilities = np.empty(N_OUTCOMES)
    outcome_walk_one(counts, weights, probabilities)
    n = float(cards)
    deals = n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5)
    for h in range(N_OUTCOMES):
        probabilities[h] /= deals
    for j in range(out.shape[0]):  # (row_products' sums)
        acc = 0.0
        for h in range(N_OUTCOMES):
            p = probabilities[h]
            if p != 0.0:
                acc += p * paytable[h, j]
        out[j] = acc
    pairs = 0.0
    for r in range(comp.shape[0]):
        x = float(comp[r])
        pairs += x * (x - 1)
    pair = pairs / (n * (n - 1))
    return pair * (pair_pays + 1.0) - 1.0


@numba.njit(nogil=True, inline="always")
def _walk_blocks(start, stop, blocks, weights, out, p1, p2, p3, p4, p5, p6, single):  # noqa: C901 - a compiled kernel: the nested loops over the ranks are the enumeration itself, and a call per level costs speed
    """:func:`_expectation_kernel`'s walk, with its scratch arrays (``p1..p6``: the running products
    of the lanes; ``single``: the one sum where there is one), each at least a block wide."""
    n_out = weights.shape[1]
    width = blocks.shape[2]
    for blk in range(start, stop):
        c = blocks[blk]
        acc = np.zeros((n_out, width))
        for i in range(width):
            single[i] = 0.0
        j = 0
        for v1 in range(10):
            for i in range(width):
                p1[i] = c[v1, i]
            for v2 in range(v1, 10):
                k2 = 1.0 if v2 == v1 else 0.0
                for i in range(width):
                    p2[i] = p1[i] * (c[v2, i] - k2)
                for v3 in range(v2, 10):
                    k3 = k2 + 1.0 if v3 == v2 else 0.0
                    for i in range(width):
                        p3[i] = p2[i] * (c[v3, i] - k3)
                    for v4 in range(v3, 10):
                        k4 = k3 + 1.0 if v4 == v3 else 0.0
                        for i in range(width):
                            p4[i] = p3[i] * (c[v4, i] - k4)
                        for v5 in range(v4, 10):
                            k5 = k4 + 1.0 if v5 == v4 else 0.0
                            for i in range(width):
                                p5[i] = p4[i] * (c[v5, i] - k5)
                            for v6 in range(v5, 10):
                                k6 = k5 + 1.0 if v6 == v5 else 0.0
                                if n_out == 1:
                                    # (one sum, as a Kelly bettor's EV: the leaf's product formed where
                                    # it is added, not stored and read back; the same operations in
                                    # the same order, so the same bits)
                                    w = weights[j, 0]
                                    if w != 0.0:
                                        for i in range(width):
                                            single[i] += w * (p5[i] * (c[v6, i] - k6))
                                    j += 1
                                    continue
                                for i in range(width):
                                    p6[i] = p5[i] * (c[v6, i] - k6)
                                for o in range(n_out):
                                    w = weights[j, o]
                                    if w != 0.0:
                                        for i in range(width):
                                            acc[o, i] += w * p6[i]
                                j += 1
        if n_out == 1:
            for i in range(width):
                out[blk, 0, i] = single[i]
            continue
        for o in range(n_out):
            for i in range(width):
                out[blk, o, i] = acc[o, i]


@numba.njit(cache=True, nogil=True)
def _class_counts_kernel(start, stop, c, indptr, keys, orderings, out):
    """out[b, key] = sum over orderings filed under key of prod_v (c[b, v])_(m_v), exact int64."""
    for b in range(start, stop):
        j = 0
        for v1 in range(10):
            p1 = c[b, v1]
            for v2 in range(v1, 10):
                k2 = 1 if v2 == v1 else 0
                p2 = p1 * (c[b, v2] - k2)
                for v3 in range(v2, 10):
                    k3 = k2 + 1 if v3 == v2 else 0
                    p3 = p2 * (c[b, v3] - k3)
                    for v4 in range(v3, 10):
                        k4 = k3 + 1 if v4 == v3 else 0
                        p4 = p3 * (c[b, v4] - k4)
                        for v5 in range(v4, 10):
                            k5 = k4 + 1 if v5 == v4 else 0
                            p5 = p4 * (c[b, v5] - k5)
                            for v6 in range(v5, 10):
                                k6 = k5 + 1 if v6 == v5 else 0
                                p6 = p5 * (c[b, v6] - k6)
                                if p6 != 0:
                                    for e in range(indptr[j], indptr[j + 1]):
                                        out[b, keys[e]] += orderings[e] * p6
                                j += 1


@numba.njit(cache=True, nogil=True)
def _class_probabilities_kernel(start, stop, blocks, scale, q1, q2, indptr, keys, orderings, out):
    """Float twin over blocks of compositions, pair flags mixed in: ``blocks`` (n_blocks, 10, width)
    value counts, ``scale`` 1 / (N)_6 and ``q1``, ``q2`` (n_blocks, width); row ``blk * width + i`` of
    ``out`` (rows, 1600) receives the hand-class probabilities (one block-wide multiply-add per entry
    of the sparse table, then the closed-form split of the pair flags)."""
    width = blocks.shape[2]  # the block width: 16, or fewer for a small batch (block_width)
    for blk in range(start, stop):
        c = blocks[blk]
        acc = np.zeros((_KEYS, width))
        if width == 1:
            _class_walk_one(c, indptr, keys, orderings, acc)
        else:
            _class_walk_block(c, indptr, keys, orderings, acc)
        _split_pair_flags(blk, acc, scale, q1, q2, out)


@numba.njit(cache=True, nogil=True)
def _class_walk_one(c, indptr, keys, orderings, acc):
    """:func:`_class_walk_block` for a block of one composition (``c`` (10, 1), ``acc`` (keys, 1)), its
    running products in scalars: the same operations in the same order as a lane of a block, so the
    same bits (:func:`outcome_walk_one`)."""
    sums = acc.reshape(acc.shape[0])
    j = 0
    for v1 in range(10):
        p1 = c[v1, 0]
        for v2 in range(v1, 10):
            k2 = 1.0 if v2 == v1 else 0.0
            p2 = p1 * (c[v2, 0] - k2)
            for v3 in range(v2, 10):
                k3 = k2 + 1.0 if v3 == v2 else 0.0
                p3 = p2 * (c[v3, 0] - k3)
                for v4 in range(v3, 10):
                    k4 = k3 + 1.0 if v4 == v3 else 0.0
                    p4 = p3 * (c[v4, 0] - k4)
                    for v5 in range(v4, 10):
                        k5 = k4 + 1.0 if v5 == v4 else 0.0
                        p5 = p4 * (c[v5, 0] - k5)
                        for v6 in range(v5, 10):
                            k6 = k5 + 1.0 if v6 == v5 else 0.0
                            p6 = p5 * (c[v6, 0] - k6)
                            for e in range(indptr[j], indptr[j + 1]):
                                sums[keys[e]] += orderings[e] * p6
                            j += 1


@numba.njit(nogil=True, inline="always")
def _class_walk_block(c, indptr, keys, orderings, acc):
    """The walk of :func:`_class_probabilities_kernel` over one block ``c`` (10, width): ``acc`` (keys,
    width) receives the sum over the orderings filed under each key of prod_v (c_v)_(m_v)."""
    width = c.shape[1]
    p1 = np.empty(width)
    p2 = np.empty(width)
    p3 = np.empty(width)
    p4 = np.empty(width)
    p5 = np.empty(width)
    p6 = np.empty(width)
    j = 0
    for v1 in range(10):
        for i in range(width):
            p1[i] = c[v1, i]
        for v2 in range(v1, 10):
            k2 = 1.0 if v2 == v1 else 0.0
            for i in range(width):
                p2[i] = p1[i] * (c[v2, i] - k2)
            for v3 in range(v2, 10):
                k3 = k2 + 1.0 if v3 == v2 else 0.0
                for i in range(width):
                    p3[i] = p2[i] * (c[v3, i] - k3)
                for v4 in range(v3, 10):
                    k4 = k3 + 1.0 if v4 == v3 else 0.0
                    for i in range(width):
                        p4[i] = p3[i] * (c[v4, i] - k4)
                    for v5 in range(v4, 10):
                        k5 = k4 + 1.0 if v5 == v4 else 0.0
                        for i in range(width):
                            p5[i] = p4[i] * (c[v5, i] - k5)
                        for v6 in range(v5, 10):
                            k6 = k5 + 1.0 if v6 == v5 else 0.0
                            for i in range(width):
                                p6[i] = p5[i] * (c[v6, i] - k6)
                            for e in range(indptr[j], indptr[j + 1]):
                                key = keys[e]
                                w = orderings[e]
                                for i in range(width):
                                    acc[key, i] += w * p6[i]
                            j += 1


@numba.njit(nogil=True, inline="always")
def _split_pair_flags(blk, acc, scale, q1, q2, out):
    """Rows ``blk * width + i`` of ``out`` from a block's walk ``acc``: each value class's sums split
    over the pair flags in closed form (``q1``, ``q2``), scaled to probabilities."""
    width = acc.shape[1]
    for i in range(width):
        row = blk * width + i
        if row >= out.shape[0]:
            break
        a1 = q1[blk, i]
        a2 = q2[blk, i]
        excess = a2 - a1 * a1  # two zero-valued pairs are not independent
        paired = (0.0, 1.0, a1)
        for cell in range(N_VALUE_CLASSES):
            p00 = 0.0
            p01 = 0.0
            p10 = 0.0
            p11 = 0.0
            for sp in range(_SIDE_PATTERNS):
                for sb in range(_SIDE_PATTERNS):
                    a = acc[cell * _PATTERNS + sp * _SIDE_PATTERNS + sb, i]
                    if a != 0.0:
                        pp = paired[sp]
                        bp = paired[sb]
                        p11 += a * pp * bp
                        p10 += a * pp * (1.0 - bp)
                        p01 += a * (1.0 - pp) * bp
                        p00 += a * (1.0 - pp) * (1.0 - bp)
            a = acc[cell * _PATTERNS + _PATTERNS - 1, i] * excess
            scaled = scale[blk, i]
            out[row, 4 * cell] = (p00 + a) * scaled
            out[row, 4 * cell + 1] = (p01 - a) * scaled
            out[row, 4 * cell + 2] = (p10 - a) * scaled
            out[row, 4 * cell + 3] = (p11 + a) * scaled


@numba.njit(cache=True, nogil=True)
def hand_classes_one(comp, indptr, keys, orderings, out):
    """The hand-class probabilities (:func:`pb_gym.exact.hand_class_probabilities`) of one composition
    ``comp`` (13,) into ``out`` (1, 1600), in one call: the value counts, 1 / (N)_6 and the zero-valued
    pair chances ``q1``, ``q2`` (:func:`pb_gym.exact._zero_pair_probabilities`), the walk
    (:func:`_class_walk_one`) and the split of the pair flags, each the same operations in the same
    order as the batched path, so the same bits."""
    counts = np.zeros((10, 1))
    cards = 0
    z = s2 = squares = s4 = 0.0
    for r in range(comp.shape[0]):
        counts[_RANK_VALUES[r], 0] += comp[r]
        cards += comp[r]
        if _RANK_VALUES[r] == 0:  # (the exact pair sums of _pair_sums over the ten-valued ranks)
            x = float(comp[r])
            two = x * (x - 1)
            z += x
            s2 += two
            squares += two * two
            s4 += two * (x - 2) * (x - 3)
    s4 = s2 * s2 - squares + s4
    q1 = np.zeros((1, 1))
    q2 = np.zeros((1, 1))
    if z >= 2:
        q1[0, 0] = s2 / max(z * (z - 1), 1.0)
    if z >= 4:
        q2[0, 0] = s4 / max(z * (z - 1) * (z - 2) * (z - 3), 1.0)
    n = float(cards)
    scale = np.full((1, 1), 1.0 / (n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5)))
    acc = np.zeros((_KEYS, 1))
    _class_walk_one(counts, indptr, keys, orderings, acc)
    _split_pair_flags(0, acc, scale, q1, q2, out)
