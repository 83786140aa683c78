"""The many-runs table's statistics on small hand-built tables: exact randomization p-values worked out by hand,
Holm and Benjamini-Hochberg corrections computed by hand, and agreement with scipy and the one-pair code."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ragtriage.experiments.runs_table import BOOTSTRAP_RESAMPLES, table_from_values
from ragtriage.gate.significance import adjust, holm, paired_pvalues, sign_flip_test, sign_flip_tests
from ragtriage.metrics.distribution import bootstrap_means

# Four cases, baseline + runs A and B, measures m1 and m2. Baseline 0.5 everywhere; the runs add:
#   A m1: +0.1 +0.2 +0.3 +0.4   A m2: +0.5 on every case
#   B m1: +0.1 -0.1 +0.2  0.0   B m2: no change
BASE = np.full((4, 2), 0.5)
A = BASE + np.array([[0.1, 0.5], [0.2, 0.5], [0.3, 0.5], [0.4, 0.5]])
B = BASE + np.array([[0.1, 0.0], [-0.1, 0.0], [0.2, 0.0], [0.0, 0.0]])
VALUES = np.stack([BASE, A, B], axis=1)  # cases x runs x measures


def test_exact_randomization_and_holm_on_a_hand_worked_table() -> None:
    table, n_comparisons = table_from_values(["base", "A", "B"], ["m1", "m2"], VALUES, correction="holm")
    rows = {(r["run_id"], r["measure"]): r for r in table.to_pylist()}
    # A m1: all four differences positive; of the 16 sign vectors only the identity reaches the observed sum,
    # so each tail is 1/16 and the two-sided p is 2/16. A m2 likewise (all +0.5).
    # B m1: non-zero differences +0.1, -0.1, +0.2 (8 sign vectors); their sums are 0.2, 0.4, 0, 0.2 (flipping
    # only the first two) and -0.2, 0, -0.4, -0.2: three reach >= 0.2, seven <= 0.2, so p = 2 * 3/8.
    # B m2: no difference at all: p = 1.
    raw = {k: rows[k]["p_value"] for k in [("A", "m1"), ("A", "m2"), ("B", "m1"), ("B", "m2")]}
    assert raw == pytest.approx({("A", "m1"): 0.125, ("A", "m2"): 0.125, ("B", "m1"): 0.75, ("B", "m2"): 1.0})
    # Holm over the 4 comparisons: sorted 0.125, 0.125, 0.75, 1 times 4, 3, 2, 1 = 0.5, 0.375, 1.5, 1,
    # running maximum capped at 1: 0.5, 0.5, 1, 1.
    adjusted = {k: rows[k]["p_adjusted"] for k in raw}
    assert adjusted == pytest.approx({("A", "m1"): 0.5, ("A", "m2"): 0.5, ("B", "m1"): 1.0, ("B", "m2"): 1.0})
    assert n_comparisons == 4
    assert all(rows[k]["exact"] for k in raw) and not any(rows[k]["significant"] for k in raw)
    assert [rows[("A", "m1")][x] for x in ("wins", "ties", "losses")] == [4, 0, 0]
    assert [rows[("B", "m1")][x] for x in ("wins", "ties", "losses")] == [2, 1, 1]
    assert [rows[("B", "m2")][x] for x in ("wins", "ties", "losses")] == [0, 4, 0]
    assert rows[("A", "m1")]["delta"] == pytest.approx(0.25)
    assert rows[("B", "m1")]["mean"] == pytest.approx(0.55)
    assert rows[("base", "m1")]["p_value"] is None and rows[("base", "m1")]["mean"] == pytest.approx(0.5)


def test_holm_by_hand_keeps_nans_out_of_the_family() -> None:
    p = np.array([0.01, 0.04, np.nan, 0.03, 0.005])
    # m = 4: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.06 for 0.04
    out = holm(p)
    assert out[[0, 1, 3, 4]] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert np.isnan(out[2])


def test_benjamini_hochberg_by_hand() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted p * m / rank: 0.005*4/1 = 0.02, 0.01*4/2 = 0.02, 0.03*4/3 = 0.04, 0.04*4/4 = 0.04; min from the top.
    assert adjust(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    with pytest.raises(ValueError, match="holm, bh"):
        adjust(p, "bonferroni")


def test_t_and_wilcoxon_columns_equal_scipy_one_comparison_at_a_time() -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0, 1, (30, 3))
    cand = np.clip(base + rng.normal(0.05, 0.2, (30, 3)), 0, 1)
    cand[:, 2] = base[:, 2]  # no change: p = 1 rather than scipy's NaN
    p_t, _ = paired_pvalues(cand, base, "t")
    p_w, _ = paired_pvalues(cand, base, "wilcoxon")
    for j in range(2):
        assert p_t[j] == pytest.approx(stats.ttest_rel(cand[:, j], base[:, j]).pvalue, rel=1e-12)
        assert p_w[j] == pytest.approx(stats.wilcoxon(cand[:, j] - base[:, j]).pvalue, rel=1e-12)
    assert p_t[2] == 1.0 and p_w[2] == 1.0


def test_shared_sign_vectors_give_each_column_the_one_pair_p_value() -> None:
    rng = np.random.default_rng(5)
    d = rng.normal(0.02, 0.3, (60, 4))
    p, exact = sign_flip_tests(d, n_resamples=5000, seed=9)
    assert not exact.any()
    for j in range(4):
        assert p[j] == sign_flip_test(d[:, j], n_resamples=5000, seed=9)[0]


def test_delta_interval_is_the_paired_bootstrap_of_the_differences() -> None:
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 1, (50, 1))
    cand = np.clip(base + rng.normal(0.03, 0.2, (50, 1)), 0, 1)
    table, _ = table_from_values(["b", "c"], ["m"], np.stack([base, cand], axis=1), seed=4)
    row = table.to_pylist()[1]
    # the delta interval is the one paired interval (what compare --run and the gate print): the percentile
    # interval of the seeded bootstrap of the differences alone
    diffs = bootstrap_means((cand - base)[:, 0], BOOTSTRAP_RESAMPLES, np.random.default_rng(4))
    low, high = np.quantile(diffs, [0.025, 0.975])
    assert (row["delta_ci_low"], row["delta_ci_high"]) == pytest.approx((low, high), abs=1e-12)
    assert row["ci_low"] < row["mean"] < row["ci_high"]


def test_unknown_test_is_refused() -> None:
    with pytest.raises(ValueError, match="randomization, t, wilcoxon"):
        paired_pvalues(A, BASE, "sign")
