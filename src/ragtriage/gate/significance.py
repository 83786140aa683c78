"""Paired significance for per-case metric differences: bootstrap interval and sign-flip randomization test.

Both work on per-case differences ``d = candidate - baseline`` of one metric at one cutoff, so the pairing (same
case, same labels) is what removes the between-query variance that dwarfs most system changes. The randomization
test follows scipy's ``permutation_test(permutation_type='samples')`` definition exactly: an exact test over every
sign vector when there are at most ``n_resamples`` of them, otherwise a seeded Monte Carlo test with the +1
correction, and a two-sided p-value of twice the smaller tail, capped at 1. The tests check our figures against
scipy; we do not call it because it resamples one comparison at a time, too slow for thousands of cases at
10,000 resamples (``bench/`` compares the two). Here a Monte Carlo null is drawn over the non-zero differences only, as
binomial counts per distinct value or as random bytes looked up in per-8-case tables (``_flip_sums``), which
keeps a comparison of many cases at 10,000 resamples to a fraction of a second per metric.

A table of runs x measures tests one hypothesis per cell ("this run's mean equals the baseline's"), so its
p-values are corrected over every comparison of the table (``adjust``): Holm-Bonferroni (the family-wise error
under any dependence, the default) or Benjamini-Hochberg (the false discovery rate; scipy's
``false_discovery_control``). Besides the randomization test a table may use ``t`` (scipy's ``ttest_rel``) or
``wilcoxon`` (scipy's signed-rank ``wilcoxon``, zero differences dropped): ``paired_pvalues``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ragtriage.metrics.distribution import N_RESAMPLES, bootstrap_means

FloatArray = npt.NDArray[np.float64]

# Resampled matrices are built in blocks of about this many cells, so memory stays flat for large test sets.
_BLOCK_CELLS = 2_000_000
# One binomial draw costs about as much as this many sign bits, which decides how a column is drawn.
_BINOMIAL_COST = 16
# Rows whose byte tables are held at once (256 sums of 8 bytes per 8 rows: 1 MiB for 4,096 rows). A table that
# fits in a core's cache makes the random look-ups much faster than one large table for every row.
_TABLE_ROWS = 1 << 12
# cases x resamples of one column above which several drawn columns are tested on two threads
_PARALLEL_CELLS = 50_000_000
# Bit k of every byte value, MSB first: the 8 cases of a group a random byte flips.
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)
# Relative tolerance for "equal" statistics in the null distribution, as scipy uses.
_EPS = float(np.finfo(np.float64).eps) * 100


#: |difference| at or below which a case is a tie
TIE = 1e-12
#: bootstrap resamples of every interval, as ``ragtriage metrics`` draws them for a mean (the interval describes,
#: the test decides)
INTERVAL_RESAMPLES = N_RESAMPLES


@dataclass(frozen=True)
class PairStats:
    """One candidate column against its baseline column over ``n`` paired cases: the two means, the mean
    difference and its percentile bootstrap interval, the randomization p-value, wins/ties/losses."""

    n: int
    candidate: float
    baseline: float
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    exact: bool
    wins: int
    ties: int
    losses: int


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


def p_from_null(null: FloatArray, observed: FloatArray, adjustment: int) -> FloatArray:
    """Two-sided p-values (twice the smaller tail, capped at 1) of ``observed`` against null rows, as scipy's
    permutation_test computes them: ties within a relative 100 eps count as extreme, +``adjustment`` for Monte
    Carlo."""
    gamma = np.abs(_EPS * observed)
    total = null.shape[0] + adjustment
    p_less = (np.count_nonzero(null <= observed + gamma, axis=0) + adjustment) / total
    p_greater = (np.count_nonzero(null >= observed - gamma, axis=0) + adjustment) / total
    return np.asarray(np.minimum(1.0, 2.0 * np.minimum(p_less, p_greater)), dtype=np.float64)


def sign_flip_tests(
    diffs: FloatArray, *, n_resamples: int = 10_000, seed: int = 0
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """Two-sided p-values of H0 "the mean paired difference is zero" for every column of an n x m matrix of
    paired differences; returns (p_values, exact).

    A column is tested exactly (every sign vector) when 2**(its non-zero differences) <= n_resamples, as scipy
    decides (zeros do not change the proportions). The other columns are tested on seeded Monte Carlo sign
    vectors over their non-zero differences only (a zero flips to itself), each column from its own generator
    seeded with ``seed``: a column's p-value is the same alone or in any table. ``_flip_sums`` draws them in a
    fraction of a second per column, where scipy's permutation_test resamples one comparison at a time.
    """
    d = np.asarray(diffs, dtype=np.float64)
    n, m = d.shape
    p = np.full(m, np.nan)
    exact = np.ones(m, dtype=bool)
    if n == 0:
        return p, exact
    observed = d.mean(axis=0)
    nonzero = np.count_nonzero(d, axis=0)
    exact = nonzero <= int(n_resamples).bit_length() - 1  # 2**nonzero <= n_resamples, without overflow
    for e in np.flatnonzero(exact).tolist():
        col = d[:, e]
        p[e] = p_from_null(_exact_null(col[col != 0.0], n)[:, None], observed[e : e + 1], 0)[0]
    drawn: list[int] = np.flatnonzero(~exact).tolist()

    def column_p(j: int) -> float:
        null = _flip_sums(d[:, j], n_resamples, np.random.default_rng(seed)) / n
        return float(p_from_null(null[:, None], observed[j : j + 1], 1)[0])

    if len(drawn) > 1 and n * n_resamples >= _PARALLEL_CELLS:
        # numpy's look-ups and sums run without the GIL: columns side by side (each keeps its own generator)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=2) as pool:
            p[drawn] = list(pool.map(column_p, drawn))
    else:
        for j in drawn:
            p[j] = column_p(j)
    return p, exact


def _flip_sums(col: FloatArray, n_resamples: int, rng: np.random.Generator) -> FloatArray:
    """``sum(s * col)`` for ``n_resamples`` random sign vectors s (each case's sign flipped with probability 1/2,
    independently).

    Only non-zero differences matter, and two ways draw them exactly:
    - few distinct |d| values (P@k, RR, Success: tens of values over thousands of cases): the cases sharing a
      value v are interchangeable, so the sum is ``sum_v v * (c_v - 2 * Binomial(c_v, 1/2))``, one binomial draw
      per distinct value instead of one sign per case;
    - otherwise random bytes, one bit per case: a table of every 8-case group's sum for each of the 256 byte
      values turns a resample into n/8 look-ups (a 0/1 float matrix product costs more, mostly in making the
      matrix).
    """
    nonzero = col[col != 0.0]
    values, counts = np.unique(np.abs(nonzero), return_counts=True)
    if values.size * _BINOMIAL_COST < nonzero.size:
        sums = np.empty(n_resamples, dtype=np.float64)
        for start, b in _starts(n_resamples, values.size):
            sums[start : start + b] = (counts - 2 * rng.binomial(counts, 0.5, size=(b, values.size))) @ values
        return sums
    flipped = np.zeros(n_resamples, dtype=np.float64)
    for lo in range(0, nonzero.size, _TABLE_ROWS):
        chunk = nonzero[lo : lo + _TABLE_ROWS]
        groups = -(-chunk.size // 8)
        padded = np.zeros(groups * 8)
        padded[: chunk.size] = chunk
        table = (padded.reshape(groups, 8) @ _BYTE_BITS.T).ravel()  # [g * 256 + byte] = group g's flipped sum
        offsets = np.arange(groups, dtype=np.intp) * 256
        for start, b in _starts(n_resamples, groups):
            raw = np.frombuffer(rng.bytes(b * groups), dtype=np.uint8).reshape(b, groups)
            flipped[start : start + b] += table[raw + offsets].sum(axis=1)
    return float(nonzero.sum()) - 2.0 * flipped


def _starts(n_resamples: int, width: int) -> list[tuple[int, int]]:
    """(first resample, count) blocks of about ``_BLOCK_CELLS`` cells of ``width`` each."""
    size = max(1, _BLOCK_CELLS // max(width, 1))
    return [(s, min(size, n_resamples - s)) for s in range(0, n_resamples, size)]


def sign_flip_test(diffs: FloatArray, *, n_resamples: int = 10_000, seed: int = 0) -> tuple[float, bool]:
    """Two-sided p-value of one vector of paired differences; returns (p_value, exact)."""
    d = np.asarray(diffs, dtype=np.float64)
    if d.shape[0] == 0:
        return (float("nan"), True)
    p, exact = sign_flip_tests(d[:, None], n_resamples=n_resamples, seed=seed)
    return (float(p[0]), bool(exact[0]))


def paired_tests(
    candidate: FloatArray, baseline: FloatArray, *, n_resamples: int = 10_000, seed: int = 0
) -> list[PairStats]:
    """The statistics of every column of two n x m matrices of paired values: the one paired statistics path of
    ``compare``, ``compare --runs``, ``report``, the gate and the TUI. Each column's test draws its own seeded
    sign vectors (``sign_flip_tests``) and its interval is its own seeded bootstrap (``bootstrap_ci``) of
    ``INTERVAL_RESAMPLES`` resamples, so a figure does not depend on which other columns were asked with it."""
    c, b = np.asarray(candidate, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    d = c - b
    n, m = d.shape
    if n * n_resamples >= _PARALLEL_CELLS:  # the randomization test beside the intervals (own generators each)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=1) as pool:
            flips = pool.submit(sign_flip_tests, d, n_resamples=n_resamples, seed=seed)
            intervals = [bootstrap_ci(d[:, j], n_resamples=INTERVAL_RESAMPLES, seed=seed) for j in range(m)]
            p, exact = flips.result()
    else:
        intervals = [bootstrap_ci(d[:, j], n_resamples=INTERVAL_RESAMPLES, seed=seed) for j in range(m)]
        p, exact = (
            sign_flip_tests(d, n_resamples=n_resamples, seed=seed) if n else (np.full(m, np.nan), np.ones(m, bool))
        )
    mean = d.mean(axis=0) if n else np.full(m, np.nan)
    wins, losses = np.count_nonzero(d > TIE, axis=0), np.count_nonzero(d < -TIE, axis=0)
    ties = np.count_nonzero(np.abs(d) <= TIE, axis=0)
    return [
        PairStats(
            n=n,
            candidate=float(c[:, j].mean()) if n else float("nan"),
            baseline=float(b[:, j].mean()) if n else float("nan"),
            mean_diff=float(mean[j]),
            ci_low=intervals[j][0],
            ci_high=intervals[j][1],
            p_value=float(p[j]),
            exact=bool(exact[j]),
            wins=int(wins[j]),
            ties=int(ties[j]),
            losses=int(losses[j]),
        )
        for j in range(m)
    ]


def paired_test(candidate: FloatArray, baseline: FloatArray, *, n_resamples: int = 10_000, seed: int = 0) -> PairStats:
    """Bootstrap interval and randomization p-value of ``mean(candidate - baseline)`` over paired cases."""
    c, b = np.asarray(candidate, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    return paired_tests(c[:, None], b[:, None], n_resamples=n_resamples, seed=seed)[0]


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
