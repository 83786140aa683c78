"""Paired bootstrap and sign-flip randomization figures, checked against scipy on fixed data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ragtriage.gate.significance import _flip_sums, bootstrap_ci, paired_test, sign_flip_test, sign_flip_tests
from ragtriage.metrics.distribution import bootstrap_means

# Ten fixed per-case nDCG values for two systems (two ties, so two zero differences).
CAND = np.array([0.9, 0.7, 0.5, 1.0, 0.3, 0.8, 0.6, 0.4, 0.2, 0.75])
BASE = np.array([0.6, 0.7, 0.4, 0.8, 0.5, 0.5, 0.6, 0.1, 0.3, 0.55])


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def test_exact_sign_flip_p_value_equals_scipy() -> None:
    ours, exact = sign_flip_test(CAND - BASE, n_resamples=10_000)
    ref = stats.permutation_test(
        (CAND, BASE),
        _mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=10_000,
        alternative="two-sided",
    )
    assert exact is True
    assert ours == pytest.approx(ref.pvalue, abs=1e-12)
    # By hand, in tenths: non-zero diffs 3,1,2,-2,3,3,-1,2 (sum 11 of |sum| 17); a sign vector reaches >= 11 when
    # the magnitudes it flips to negative sum to <= 3: 16 of the 256 vectors per tail, so p = 2 * 16 / 256.
    assert ours == pytest.approx(32 / 256)


def test_monte_carlo_sign_flip_close_to_scipy() -> None:
    rng = np.random.default_rng(7)
    base = rng.uniform(0, 1, 40)
    cand = np.clip(base + rng.normal(0.05, 0.2, 40), 0, 1)
    ours, exact = sign_flip_test(cand - base, n_resamples=20_000, seed=3)
    ref = stats.permutation_test(
        (cand, base),
        _mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=20_000,
        rng=np.random.default_rng(11),
    )
    assert exact is False
    # Monte Carlo error of a p-value near 0.1 with 20k draws is about 0.002 per estimate.
    assert ours == pytest.approx(ref.pvalue, abs=0.015)


def test_bootstrap_interval_close_to_scipy_percentile() -> None:
    low, high = bootstrap_ci(CAND - BASE, n_resamples=40_000, seed=1)
    ref = stats.bootstrap(
        (CAND, BASE),
        _mean_diff,
        paired=True,
        vectorized=True,
        n_resamples=40_000,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(5),
    )
    assert low == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert high == pytest.approx(ref.confidence_interval.high, abs=0.01)
    assert low < 0.11 < high


def test_seed_makes_figures_reproducible_and_differs_between_seeds() -> None:
    d = np.random.default_rng(0).normal(0, 1, 50)
    assert bootstrap_ci(d, seed=4) == bootstrap_ci(d, seed=4)
    assert bootstrap_ci(d, seed=4) != bootstrap_ci(d, seed=5)


def test_paired_test_summary() -> None:
    res = paired_test(CAND, BASE, n_resamples=10_000, seed=0)
    assert res.n == 10
    assert res.mean_diff == pytest.approx(0.11)
    assert res.p_value == pytest.approx(32 / 256)
    assert res.ci_low < res.mean_diff < res.ci_high


def test_all_ties_give_p_one_and_degenerate_interval() -> None:
    p, exact = sign_flip_test(np.zeros(5))
    assert (p, exact) == (1.0, True)
    assert bootstrap_ci(np.zeros(5)) == (0.0, 0.0)


def test_single_case_has_no_interval() -> None:
    low, high = bootstrap_ci(np.array([0.3]))
    assert np.isnan(low) and np.isnan(high)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=30), st.integers(0, 5))
def test_p_value_is_a_probability_and_symmetric_in_the_sign_of_the_differences(diffs: list[float], seed: int) -> None:
    d = np.array(diffs)
    p, _ = sign_flip_test(d, n_resamples=2000, seed=seed)
    q, _ = sign_flip_test(-d, n_resamples=2000, seed=seed)
    assert 0.0 < p <= 1.0
    assert p == pytest.approx(q)
    low, high = bootstrap_ci(d, n_resamples=500, seed=seed)
    assert d.min() - 1e-12 <= low <= high <= d.max() + 1e-12


def _sparse_differences(n: int, seed: int) -> np.ndarray:
    """Two columns of paired differences, 70% ties: a measure with five distinct |differences| (drawn as
    binomial counts per value) and a continuous one (drawn as random bytes over per-8-case tables)."""
    rng = np.random.default_rng(seed)
    changed = rng.random((n, 2)) < 0.3
    few = rng.choice([-0.2, -0.1, 0.1, 0.2, 0.3, 0.5], size=n)
    cont = rng.normal(0.01, 0.2, size=n)
    return np.where(changed, np.column_stack([few, cont]), 0.0)


def test_sparse_sign_flip_nulls_have_the_exact_null_variance() -> None:
    # Under H0 each sum of s_i * d_i has mean 0 and variance sum(d_i^2), whichever way it is drawn.
    d = _sparse_differences(3000, 5)
    for j in range(2):
        null = _flip_sums(d[:, j], 20_000, np.random.default_rng(1))
        scale = float(np.sqrt((d[:, j] ** 2).sum()))
        assert abs(null.mean()) / scale < 0.03
        assert null.var() / scale**2 == pytest.approx(1.0, abs=0.05)


@pytest.mark.slow
def test_sparse_sign_flip_p_values_agree_with_scipy_and_do_not_depend_on_the_table() -> None:
    d = _sparse_differences(3000, 9)
    together, exact = sign_flip_tests(d, n_resamples=20_000, seed=4)
    assert not exact.any()
    for j in range(2):
        alone, _ = sign_flip_test(d[:, j], n_resamples=20_000, seed=4)
        assert together[j] == alone  # each column draws from its own generator seeded with the seed
        ref = stats.permutation_test(
            (d[:, j],),
            np.mean,
            permutation_type="samples",
            vectorized=True,
            n_resamples=20_000,
            rng=np.random.default_rng(2),
        )
        assert together[j] == pytest.approx(ref.pvalue, abs=0.02)


@pytest.mark.slow
def test_bootstrap_of_many_distinct_values_with_ties_skips_zero_rows_and_agrees_with_scipy() -> None:
    # > 4096 distinct values: resampled case by case, only over the non-zero rows (K ~ Binomial(n, r/n) draws)
    d = _sparse_differences(20_000, 3)[:, 1]
    low, high = bootstrap_ci(d, n_resamples=10_000, seed=2)
    ref = stats.bootstrap((d,), np.mean, n_resamples=10_000, method="percentile", rng=np.random.default_rng(0))
    se = float(d.std() / np.sqrt(len(d)))
    assert low == pytest.approx(ref.confidence_interval.low, abs=0.1 * se)
    assert high == pytest.approx(ref.confidence_interval.high, abs=0.1 * se)


@pytest.mark.slow
def test_large_multinomial_bootstrap_is_split_reproducibly_and_keeps_the_standard_error() -> None:
    # 600 distinct values x 10,000 resamples: drawn in two halves on two threads from child generators
    rng = np.random.default_rng(8)
    x = rng.choice(rng.normal(size=600), size=50_000)
    first = bootstrap_means(x, 10_000, np.random.default_rng(3))
    assert np.array_equal(first, bootstrap_means(x, 10_000, np.random.default_rng(3)))
    assert first.mean() == pytest.approx(x.mean(), abs=0.05 * x.std() / np.sqrt(len(x)))
    assert first.std() == pytest.approx(x.std() / np.sqrt(len(x)), rel=0.04)


def test_multinomial_means_drawn_in_blocks_equal_one_matrix() -> None:
    # many distinct values x resamples: drawn a block of rows at a time from the same stream, the one-matrix
    # means (the counts are the same draws; the product's rounding is the BLAS kernel's, so equal to 1e-12)
    from ragtriage.metrics import distribution

    uniq = np.sort(np.random.default_rng(1).random(5000))
    counts = np.random.default_rng(2).integers(1, 50, size=uniq.size)
    n, p = int(counts.sum()), counts / counts.sum()
    for size in (999, 1000):
        whole = np.random.default_rng(0).multinomial(n, p, size=size) @ uniq / n
        blocks = distribution._drawn_means(np.random.default_rng(0), n, p, uniq, size)
        assert size > distribution._BLOCK_DRAWS // uniq.size  # more than one block
        np.testing.assert_allclose(blocks, whole, rtol=1e-12, atol=0)
