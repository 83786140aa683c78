"""Paired bootstrap and sign-flip randomization figures, checked against scipy on fixed data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ragtriage.gate.significance import bootstrap_ci, paired_test, sign_flip_test

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
