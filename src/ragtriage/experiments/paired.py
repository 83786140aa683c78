"""The paired tests a comparison table may use, and the correction of their p-values across the whole table.

Every cell of a table of runs x measures is one hypothesis ("this run's mean equals the baseline's"), so a table
of 3 candidates x 3 measures tests nine; reporting each at 0.05 would flag about one in three tables by chance
alone. The p-values are therefore corrected over every comparison in the table: Holm-Bonferroni (controls the
family-wise error under any dependence, the default) or Benjamini-Hochberg (controls the false discovery rate;
scipy's ``false_discovery_control``).

Tests: ``randomization`` (paired sign-flip, ``ragtriage.gate.significance``; numpy, exact for small tables),
``t`` (scipy's ``ttest_rel``) and ``wilcoxon`` (scipy's signed-rank ``wilcoxon``, zero differences dropped).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragtriage.gate.significance import sign_flip_tests

FloatArray = npt.NDArray[np.float64]

TESTS = {
    "randomization": "paired randomization (sign-flip) test",
    "t": "paired t-test (scipy.stats.ttest_rel)",
    "wilcoxon": "Wilcoxon signed-rank test (scipy.stats.wilcoxon, zeros dropped)",
}
CORRECTIONS = {
    "holm": "Holm-Bonferroni",
    "bh": "Benjamini-Hochberg",
}


def paired_pvalues(
    candidate: FloatArray, baseline: FloatArray, test: str, *, n_resamples: int = 10_000, seed: int = 0
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """Two-sided p-value of each column of two n x m matrices of paired per-case values; (p, exact).

    A column whose differences are all zero has p = 1 (nothing to test); fewer than two cases give NaN.
    """
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; use one of {', '.join(TESTS)}")
    cand, base = np.asarray(candidate, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    d = cand - base
    n, m = d.shape
    if n < 2:
        return np.full(m, np.nan), np.zeros(m, dtype=bool)
    if test == "randomization":
        return sign_flip_tests(d, n_resamples=n_resamples, seed=seed)
    from scipy import stats

    varies = np.any(d != 0.0, axis=0)
    p = np.ones(m)
    if varies.any():
        if test == "t":
            res = stats.ttest_rel(cand[:, varies], base[:, varies], axis=0)
        else:
            res = stats.wilcoxon(d[:, varies], axis=0, zero_method="wilcox")
        p[varies] = np.asarray(res.pvalue, dtype=np.float64)
    # scipy's t-test gives NaN when every difference is the same non-zero value: no spread, no doubt of the sign
    p[np.isnan(p) & varies] = 0.0
    return p, np.zeros(m, dtype=bool)


def holm(p: FloatArray) -> FloatArray:
    """Holm-Bonferroni adjusted p-values: the i-th smallest of m is multiplied by (m - i + 1), made monotone by a
    running maximum, capped at 1. NaNs stay NaN and are not counted in m."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    finite = np.flatnonzero(~np.isnan(p))
    m = finite.size
    if m == 0:
        return out
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def adjust(p: FloatArray, correction: str) -> FloatArray:
    """p-values adjusted over every finite entry of ``p`` (the whole table) by ``correction``."""
    if correction == "holm":
        return holm(p)
    if correction == "bh":
        from scipy.stats import false_discovery_control

        p = np.asarray(p, dtype=np.float64)
        out = np.full(p.shape, np.nan)
        finite = ~np.isnan(p)
        if finite.any():
            out[finite] = false_discovery_control(p[finite], method="bh")
        return out
    raise ValueError(f"unknown correction {correction!r}; use one of {', '.join(CORRECTIONS)}")
