"""Distribution of a per-case measure: mean, median, p10, min and a seeded bootstrap interval of the mean.

The bootstrap resamples cases with replacement. A resample's mean depends only on how many times each distinct
value was drawn, and those counts are multinomial over the distinct values with their observed frequencies, so
for measures with few distinct values (P@k, RR@k, Success@k, ...) drawing the counts is exact and cheap. Measures
with many distinct values (nDCG@k over many cases) resample case indices in batches instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

N_RESAMPLES = 1000
CONFIDENCE = 0.95
_MAX_DISTINCT = 4096
# One multinomial cell costs about as much as drawing this many case indices (beyond _MAX_DISTINCT, the cheaper wins).
_MULTINOMIAL_COST = 8
_BATCH = 64
_PARALLEL_DRAWS = 4_000_000  # multinomial cells above which the draw is split over two threads
_BLOCK_DRAWS = 4_000_000  # row draws held at once by the sparse resampler (memory bounded at any n)
# Multinomial resamples are drawn this many rows at a time or a multiple of it: BLAS takes a matrix's rows in groups
# that divide it, so each block's means are the whole matrix's bit for bit (and the draws are the same stream).
_MULTINOMIAL_ROWS = 256


@dataclass(frozen=True)
class Distribution:
    n: int
    mean: float | None
    median: float | None
    p10: float | None
    min: float | None
    ci_low: float | None
    ci_high: float | None


def bootstrap_means(
    values: npt.NDArray[np.float64], n_resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Means of ``n_resamples`` resamples of ``values`` (cases drawn with replacement, n of them): the one
    bootstrap of the package (metrics' intervals, compare's paired intervals).

    A vector gives shape (B,); an n x m matrix gives (B, m) whose columns share every resample, so the
    difference of two columns' resampled means is the resampled mean of their paired difference. A vector with
    few distinct values (at most ``_MAX_DISTINCT``, or far fewer than its non-zero values) draws multinomial
    counts; otherwise case indices are drawn in batches of at most
    ``_BATCH`` resamples (memory bounded at any n), and only over the rows that are not all zero when there are
    such rows (``_sparse_means``).
    """
    n = values.shape[0]
    if values.ndim == 1 and n:
        uniq, counts = np.unique(values, return_counts=True)
        nonzero = n - int(counts[uniq == 0.0].sum())
        if len(uniq) <= _MAX_DISTINCT or len(uniq) * _MULTINOMIAL_COST < nonzero:
            return _multinomial_means(uniq, counts, n_resamples, rng)
    matrix = values.reshape(n, -1)
    nonzero = np.flatnonzero(np.any(matrix != 0.0, axis=1)) if n else np.empty(0, dtype=np.int64)
    if 0 < nonzero.size < n:
        means = _sparse_means(matrix[nonzero], n, n_resamples, rng)
    else:
        means = np.empty((n_resamples, matrix.shape[1]), dtype=np.float64)
        for start in range(0, n_resamples, _BATCH):
            b = min(start + _BATCH, n_resamples) - start
            idx = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
            counts = np.bincount(idx.ravel(), minlength=b * n).reshape(b, n)
            means[start : start + b] = counts @ matrix / n
    return means if values.ndim > 1 else means[:, 0]


def _multinomial_means(
    uniq: npt.NDArray[np.float64], counts: npt.NDArray[np.int64], n_resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Resampled means from multinomial counts over the distinct values. numpy draws a multinomial without the
    GIL, so a large draw (many distinct values x many resamples) is split
    in two halves drawn side by side from two child generators of ``rng`` (reproducible for a seed, whatever the
    machine)."""
    n = int(counts.sum())
    p = counts / n
    if len(uniq) * n_resamples < _PARALLEL_DRAWS:
        return _drawn_means(rng, n, p, uniq, n_resamples)
    from concurrent.futures import ThreadPoolExecutor

    half = n_resamples // 2
    sizes = (half, n_resamples - half)
    with ThreadPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(lambda g, size: _drawn_means(g, n, p, uniq, size), rng.spawn(2), sizes))
    return np.asarray(np.concatenate(parts), dtype=np.float64)


def _drawn_means(
    rng: np.random.Generator, n: int, p: npt.NDArray[np.float64], uniq: npt.NDArray[np.float64], size: int
) -> npt.NDArray[np.float64]:
    """``size`` resampled means, drawn in blocks of rows so that memory stays flat for many distinct values x
    many resamples (one matrix of counts would hold them all, and its floating-point copy again)."""
    rows = max(1, _BLOCK_DRAWS // (len(uniq) * _MULTINOMIAL_ROWS)) * _MULTINOMIAL_ROWS
    means = np.empty(size, dtype=np.float64)
    for start in range(0, size, rows):
        b = min(rows, size - start)
        means[start : start + b] = rng.multinomial(n, p, size=b) @ uniq / n
    return means


def _sparse_means(
    rows: npt.NDArray[np.float64], n: int, n_resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Resampled means of an n-row matrix whose all-zero rows are left out (``rows`` are the others).

    Of n draws with replacement, the number K that land on a non-zero row is Binomial(n, r/n), and those K are
    uniform over the r rows; the zero rows add nothing to a sum. So each resample draws K and then K row indices,
    not n: the same distribution as resampling every case, at r/n of the cost (paired differences of two runs are
    zero on most cases: 78% of 100,000 for nDCG@10 on the scale bench).
    """
    r, m = rows.shape
    means = np.empty((n_resamples, m), dtype=np.float64)
    per_block = max(1, _BLOCK_DRAWS // r)
    for start in range(0, n_resamples, per_block):
        b = min(start + per_block, n_resamples) - start
        k = rng.binomial(n, r / n, size=b)
        idx = rng.integers(0, r, size=int(k.sum()))
        seg = np.repeat(np.arange(b), k)
        for j in range(m):
            means[start : start + b, j] = np.bincount(seg, weights=rows[idx, j], minlength=b) / n
    return means


def describe(values: npt.NDArray[np.float64], seed: int = 0, resamples: int = N_RESAMPLES) -> Distribution:
    """Distribution of the non-null values of one measure (percentiles interpolate linearly, numpy's default).
    ``resamples=0``: no interval (``ci_low``/``ci_high`` None), for a first look that cannot wait for the
    bootstrap, which is most of the cost."""
    if len(values) == 0:
        return Distribution(0, None, None, None, None, None, None)
    low = high = None
    if resamples > 0:
        means = bootstrap_means(values, resamples, np.random.default_rng(seed))
        tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
        low, high = (float(v) for v in np.percentile(means, [tail, 100.0 - tail]))
    return Distribution(
        n=len(values),
        mean=float(values.mean()),
        median=float(np.median(values)),
        p10=float(np.percentile(values, 10)),
        min=float(values.min()),
        ci_low=low,
        ci_high=high,
    )
