"""Distribution of a per-case measure: mean, median, p10, min and a seeded bootstrap interval of the mean.

The bootstrap resamples cases with replacement. A resample's mean depends only on how many times each distinct
value was drawn, and those counts are multinomial over the distinct values with their observed frequencies, so
for measures with few distinct values (P@k, RR@k, Success@k, ...) drawing the counts is exact and cheap. Measures
with many distinct values (nDCG@k over 100k cases) resample case indices in batches instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

N_RESAMPLES = 1000
CONFIDENCE = 0.95
_MAX_DISTINCT = 4096
_BATCH = 64


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
    few distinct values draws multinomial counts; otherwise case indices are drawn in batches of at most
    ``_BATCH`` resamples (memory bounded at any n).
    """
    n = values.shape[0]
    if values.ndim == 1 and n:
        uniq, counts = np.unique(values, return_counts=True)
        if len(uniq) <= _MAX_DISTINCT:
            draws = rng.multinomial(n, counts / n, size=n_resamples)
            return np.asarray(draws @ uniq / n, dtype=np.float64)
    matrix = values.reshape(n, -1)
    means = np.empty((n_resamples, matrix.shape[1]), dtype=np.float64)
    for start in range(0, n_resamples, _BATCH):
        b = min(start + _BATCH, n_resamples) - start
        idx = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
        counts = np.bincount(idx.ravel(), minlength=b * n).reshape(b, n)
        means[start : start + b] = counts @ matrix / n
    return means if values.ndim > 1 else means[:, 0]


def describe(values: npt.NDArray[np.float64], seed: int = 0, resamples: int = N_RESAMPLES) -> Distribution:
    """Distribution of the non-null values of one measure (percentiles interpolate linearly, numpy's default)."""
    if len(values) == 0:
        return Distribution(0, None, None, None, None, None, None)
    rng = np.random.default_rng(seed)
    means = bootstrap_means(values, resamples, rng)
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return Distribution(
        n=len(values),
        mean=float(values.mean()),
        median=float(np.median(values)),
        p10=float(np.percentile(values, 10)),
        min=float(values.min()),
        ci_low=float(low),
        ci_high=float(high),
    )
