"""Paired significance for per-case metric differences: bootstrap interval and sign-flip randomization test.

Both work on the vector of per-case differences ``d = candidate - baseline`` of one metric at one cutoff, so the
pairing (same case, same labels) is what removes the between-query variance that dwarfs most system changes.
The randomization test follows scipy's ``permutation_test(permutation_type='samples')`` definition exactly: an
exact test over every sign vector when there are at most ``n_resamples`` of them, otherwise a seeded Monte Carlo
test with the +1 correction, and a two-sided p-value of twice the smaller tail, capped at 1. That lets the tests
check our figures against scipy while the package itself needs only numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ragtriage.metrics.distribution import bootstrap_means

FloatArray = npt.NDArray[np.float64]

# Resampled matrices are built in blocks of about this many cells, so memory stays flat for large test sets.
_BLOCK_CELLS = 2_000_000
# Relative tolerance for "equal" statistics in the null distribution, as scipy uses.
_EPS = float(np.finfo(np.float64).eps) * 100


@dataclass(frozen=True)
class PairedTest:
    """Summary of one paired comparison. ``ci_low``/``ci_high`` bound the mean difference (percentile bootstrap)."""

    n: int
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    exact: bool


def _blocks(n_resamples: int, n: int) -> list[int]:
    size = max(1, _BLOCK_CELLS // max(n, 1))
    full, rest = divmod(n_resamples, size)
    return [size] * full + ([rest] if rest else [])


def bootstrap_ci(
    diffs: FloatArray, *, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean paired difference; (nan, nan) for fewer than two cases."""
    d = np.asarray(diffs, dtype=np.float64)
    if d.shape[0] < 2:
        return (float("nan"), float("nan"))
    means = bootstrap_means(d, n_resamples, np.random.default_rng(seed))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(low), float(high))


def _exact_null(nonzero: FloatArray, n: int) -> FloatArray:
    """Mean difference under every sign vector of the non-zero differences (zeros flip to themselves)."""
    m = nonzero.shape[0]
    codes = np.arange(2**m, dtype=np.int64)[:, None]
    signs = 1.0 - 2.0 * ((codes >> np.arange(m, dtype=np.int64)) & 1)
    return (signs @ nonzero) / n


def _sampled_null(d: FloatArray, n_resamples: int, rng: np.random.Generator) -> FloatArray:
    n = d.shape[0]
    out = [(rng.choice(np.array([-1.0, 1.0]), size=(b, n)) * d).mean(axis=1) for b in _blocks(n_resamples, n)]
    return np.concatenate(out)


def sign_flip_test(diffs: FloatArray, *, n_resamples: int = 10_000, seed: int = 0) -> tuple[float, bool]:
    """Two-sided p-value of H0 "the mean paired difference is zero"; returns (p_value, exact).

    Exact when 2**(non-zero differences) <= n_resamples, as scipy decides (zeros do not change the proportions).
    """
    d = np.asarray(diffs, dtype=np.float64)
    n = d.shape[0]
    if n == 0:
        return (float("nan"), True)
    observed = float(d.mean())
    nonzero = d[d != 0.0]
    exact = 2 ** nonzero.shape[0] <= n_resamples
    if exact:
        null = _exact_null(nonzero, n)
        adjustment = 0
    else:
        null = _sampled_null(d, n_resamples, np.random.default_rng(seed))
        adjustment = 1
    gamma = abs(_EPS * observed)
    total = null.shape[0] + adjustment
    p_less = (np.count_nonzero(null <= observed + gamma) + adjustment) / total
    p_greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / total
    return (float(min(1.0, 2.0 * min(p_less, p_greater))), exact)


def paired_test(candidate: FloatArray, baseline: FloatArray, *, n_resamples: int = 10_000, seed: int = 0) -> PairedTest:
    """Bootstrap interval and randomization p-value of ``mean(candidate - baseline)`` over paired cases."""
    d = np.asarray(candidate, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    low, high = bootstrap_ci(d, n_resamples=n_resamples, seed=seed)
    p, exact = sign_flip_test(d, n_resamples=n_resamples, seed=seed)
    mean = float(d.mean()) if d.shape[0] else float("nan")
    return PairedTest(n=int(d.shape[0]), mean_diff=mean, ci_low=low, ci_high=high, p_value=p, exact=exact)
